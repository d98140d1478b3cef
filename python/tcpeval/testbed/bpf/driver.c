/* The agreement test's user-space driver: one algorithm (linked in from its
 * BPF source built against shim.h) driven by commands on stdin, the same
 * primitive steps as the simulator's cc harness (crates/tcpeval-sim/src/cc/
 * harness.rs): after each command it prints "cwnd ssthresh". Commands:
 *   init CWND | ssthresh N | advance NS | rtt NS | snd_nxt N | tsval NS | tsecr NS |
 *   limited 0|1 | ack N | lose | timeout
 * (tsval: the next ACKs' TSval, in the harness's ns; tsecr: they echo one;
 * limited: whether the sender is using its window, tcp_is_cwnd_limited.)
 * The kernel's order (net/ipv4/tcp_input.c): pkts_acked from tcp_clean_rtx_queue,
 * then tcp_cong_control's cong_avoid; a loss is tcp_init_cwnd_reduction, the
 * Recovery state, tcp_end_cwnd_reduction; a timeout is tcp_enter_loss. */
#include <stdio.h>
#include <string.h>
#include "tcpeval_cc.h"

extern struct tcp_congestion_ops tcpe_user_ops;

static struct tcp_sock tp;
static struct sock *sk = &tp.inet_conn.sk;
static __u64 now, rtt = 100000000ULL, high_seq;

static void set_state(__u8 state)
{
	if (tp.inet_conn.icsk_ca_state == state)
		return;
	if (tcpe_user_ops.set_state)
		tcpe_user_ops.set_state(sk, state);
	tp.inet_conn.icsk_ca_state = state;
}

static void event(enum tcp_ca_event ev)
{
	if (tcpe_user_ops.cwnd_event)
		tcpe_user_ops.cwnd_event(sk, ev);
}

/* Both signals tcp_is_cwnd_limited reads: the flag in congestion avoidance,
 * max_packets_out against cwnd / 2 in slow start. */
static void set_limited(int limited)
{
	tp.is_cwnd_limited = limited;
	tp.max_packets_out = limited ? ~0U >> 1 : 0;
}

static void init(__u32 cwnd)
{
	memset(&tp, 0, sizeof(tp));
	tp.snd_cwnd = cwnd;
	tp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
	tp.snd_cwnd_clamp = ~0U;
	tp.mss_cache = 1448; /* the cc harness's MSS */
	tp.srtt_us = (__u32)(rtt / 1000) << 3;
	set_limited(1);
	if (tcpe_user_ops.init)
		tcpe_user_ops.init(sk);
}

static void ack(__u32 n)
{
	struct ack_sample sample = { n, (__s32)(rtt / 1000), tp.snd_cwnd };

	tp.tcp_mstamp = now / 1000;
	tp.shim_now_ns = now;
	tp.snd_una += n;
	tp.delivered += n;
	if (n && tcpe_user_ops.pkts_acked)
		tcpe_user_ops.pkts_acked(sk, &sample);
	if (tp.inet_conn.icsk_ca_state == TCP_CA_Loss && (__s32)(tp.snd_una - high_seq) >= 0)
		set_state(TCP_CA_Open);
	if (n)
		tcpe_user_ops.cong_avoid(sk, tp.snd_una, n);
}

static void lose(void)
{
	tp.prior_cwnd = tp.snd_cwnd;
	tp.snd_ssthresh = tcpe_user_ops.ssthresh(sk);
	tp.snd_cwnd_cnt = 0;
	set_state(TCP_CA_Recovery);
	if (tp.snd_ssthresh < TCP_INFINITE_SSTHRESH)
		tp.snd_cwnd = tp.snd_ssthresh;
	set_state(TCP_CA_Open);
	event(CA_EVENT_COMPLETE_CWR);
}

static void timeout(void)
{
	high_seq = tp.snd_nxt;
	if (tp.inet_conn.icsk_ca_state == TCP_CA_Open)
		tp.snd_ssthresh = tcpe_user_ops.ssthresh(sk);
	tp.snd_cwnd = 1;
	tp.snd_cwnd_cnt = 0;
	set_state(TCP_CA_Loss);
	event(CA_EVENT_LOSS);
}

int main(void)
{
	char cmd[32];
	unsigned long long v;

	init(10);
	while (scanf("%31s", cmd) == 1) {
		if (!strcmp(cmd, "lose"))
			lose();
		else if (!strcmp(cmd, "timeout"))
			timeout();
		else if (scanf("%llu", &v) != 1)
			return 2;
		else if (!strcmp(cmd, "init"))
			init((__u32)v);
		else if (!strcmp(cmd, "ssthresh"))
			tp.snd_ssthresh = (__u32)v;
		else if (!strcmp(cmd, "advance"))
			now += v;
		else if (!strcmp(cmd, "rtt"))
			rtt = v;
		else if (!strcmp(cmd, "snd_nxt"))
			tp.snd_nxt = (__u32)v;
		else if (!strcmp(cmd, "tsval"))
			tp.shim_tsval_ns = v;
		else if (!strcmp(cmd, "tsecr"))
			tp.shim_has_tsecr = 1;
		else if (!strcmp(cmd, "limited"))
			set_limited(v != 0);
		else if (!strcmp(cmd, "ack"))
			ack((__u32)v);
		else
			return 2;
		printf("%u %u\n", tp.snd_cwnd, tp.snd_ssthresh);
	}
	return 0;
}
