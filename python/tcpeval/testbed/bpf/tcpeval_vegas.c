/* TCP Vegas (Brakmo & Peterson, JSAC 1995) as the simulator runs it
 * (crates/tcpeval-sim/src/cc/vegas.rs, its current version, after Linux
 * net/ipv4/tcp_vegas.c): once per RTT, diff = cwnd (rtt - baseRTT) / baseRTT
 * packets queued, with rtt the round's minimum and baseRTT the minimum ever;
 * +1 below alpha, -1 above beta; slow start ends when diff exceeds gamma. With
 * two RTT samples or fewer in a round it is Reno. RTTs in us + 1 (Linux's
 * guard against a zero sample); the simulator's ns give the same ratios. */
#include "tcpeval_cc.h"

/* Built with -DTCPE_TRACE (make bpf-trace): each round's samples, minimum
 * and base RTT (us) with the window they act on, to the kernel's trace buffer. */
#ifdef TCPE_TRACE
#define vegas_trace_round(tp, ca)                                                          \
	bpf_printk("tcpe_vegas t %llu cwnd %u ssthresh %u cnt %u min %u base %u",          \
		   now_ns(tp) / 1000, (tp)->snd_cwnd, (tp)->snd_ssthresh, (ca)->r.cnt_rtt,  \
		   (ca)->r.min_rtt, (ca)->r.base_rtt)
#else
#define vegas_trace_round(tp, ca) do { } while (0)
#endif

struct tcpe_vegas {
	struct tcpe_round_rtt r;
	__u32 doing_vegas_now;
};

static __always_inline void vegas_enable(struct sock *sk)
{
	struct tcpe_vegas *ca = inet_csk_ca(sk);

	ca->doing_vegas_now = 1;
	round_rtt_next(tcp_sk(sk), &ca->r);
}

/* tcp.h tcp_current_ssthresh, in the Open state. */
static __always_inline __u32 current_ssthresh(const struct tcp_sock *tp)
{
	return max_t(tp->snd_ssthresh, (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2));
}

static __always_inline void vegas_adjust(struct tcp_sock *tp, struct tcpe_vegas *ca, __u32 acked)
{
	__u64 rtt = ca->r.min_rtt, base = ca->r.base_rtt;
	__u64 diff = (__u64)tp->snd_cwnd * (rtt - base) / max_t(base, 1ULL);

	if (diff > VEGAS_GAMMA && in_slow_start(tp)) {
		/* Leave slow start at the window the measured rate needs. */
		__u32 target = (__u32)((__u64)tp->snd_cwnd * base / max_t(rtt, 1ULL));

		tp->snd_cwnd = min_t(tp->snd_cwnd, target + 1);
		tp->snd_ssthresh = min_t(tp->snd_ssthresh, tp->snd_cwnd - 1);
	} else if (in_slow_start(tp)) {
		slow_start(tp, acked);
	} else if (diff > VEGAS_BETA) {
		tp->snd_cwnd--;
		tp->snd_ssthresh = min_t(tp->snd_ssthresh, tp->snd_cwnd - 1);
	} else if (diff < VEGAS_ALPHA) {
		tp->snd_cwnd++;
	}
	tp->snd_cwnd = min_t(max_t(tp->snd_cwnd, 2U), tp->snd_cwnd_clamp);
	tp->snd_ssthresh = current_ssthresh(tp);
}

TCPEVAL_OP(void, vegas_init, struct sock *sk)
{
	struct tcpe_vegas *ca = inet_csk_ca(sk);

	ca->r.base_rtt = 0x7fffffff;
	vegas_enable(sk);
}

TCPEVAL_OP(void, vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	round_rtt_sample(&((struct tcpe_vegas *)inet_csk_ca(sk))->r, sample);
}

TCPEVAL_OP(void, vegas_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Open)
		vegas_enable(sk);
	else
		((struct tcpe_vegas *)inet_csk_ca(sk))->doing_vegas_now = 0;
}

TCPEVAL_OP(void, vegas_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_TX_START) {
		((struct tcpe_vegas *)inet_csk_ca(sk))->r.base_rtt = 0x7fffffff;
		vegas_enable(sk);
	}
}

TCPEVAL_OP(void, vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_vegas *ca = inet_csk_ca(sk);

	if (!ca->doing_vegas_now) {
		if (cwnd_limited(tp))
			reno_increase(tp, acked);
		return;
	}
	if (seq_after(ack, ca->r.beg_snd_nxt)) {
		vegas_trace_round(tp, ca);
		ca->r.beg_snd_nxt = tp->snd_nxt;
		if (ca->r.cnt_rtt <= 2) {
			if (cwnd_limited(tp))
				reno_increase(tp, acked);
		} else {
			vegas_adjust(tp, ca, acked);
		}
		round_rtt_next(tp, &ca->r);
	} else if (in_slow_start(tp)) {
		slow_start(tp, acked);
	}
}

TCPEVAL_OP(__u32, vegas_ssthresh, struct sock *sk)
{
	return max_t(tcp_sk(sk)->snd_cwnd >> 1, 2U);
}

TCPEVAL_OP(__u32, vegas_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

TCPEVAL_OPS(vegas) = {
	.init = (void *)vegas_init,
	.cong_avoid = (void *)vegas_cong_avoid,
	.ssthresh = (void *)vegas_ssthresh,
	.set_state = (void *)vegas_state,
	.cwnd_event = (void *)vegas_cwnd_event,
	.pkts_acked = (void *)vegas_pkts_acked,
	.undo_cwnd = (void *)vegas_undo_cwnd,
	.name = "vegas",
};
