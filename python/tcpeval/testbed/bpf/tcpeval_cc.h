/* Shared ground of the BPF congestion controls (issue 32): the kernel's
 * struct_ops shape, and the helpers of include/net/tcp.h and
 * net/ipv4/tcp_cong.c the algorithms use, written out so that the same C builds
 * as BPF (clang -target bpf, vmlinux.h from this kernel's BTF) and in user space
 * (shim.h, for the agreement test against the simulator's cc harness).
 *
 * BPF on 6.18 allows 64-bit unsigned division by variables and bounded loops;
 * it has no floats, so the algorithms keep Linux's integer fixed point. Writes
 * to tcp_sock are limited to snd_cwnd, snd_cwnd_cnt, snd_ssthresh (and a few
 * more) by net/ipv4/bpf_tcp_ca.c bpf_tcp_ca_btf_struct_access; the private
 * state lives in icsk_ca_priv (ICSK_CA_PRIV_SIZE, 104 bytes).
 */
#ifndef TCPEVAL_CC_H
#define TCPEVAL_CC_H

#ifdef __bpf__
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
/* A struct_ops program: BPF_PROG unpacks the context into the arguments. */
#define TCPEVAL_OP(ret, name, args...) SEC("struct_ops") ret BPF_PROG(name, args)
#define TCPEVAL_OPS(alg) SEC(".struct_ops") struct tcp_congestion_ops tcpe_##alg
char _license[] SEC("license") = "GPL";
#else
#include "shim.h"
#define TCPEVAL_OP(ret, name, args...) ret name(args)
#define TCPEVAL_OPS(alg) struct tcp_congestion_ops tcpe_user_ops
#endif

#include "params.h"

/* Linux include/net/tcp.h */
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define TCP_CA_Open 0
#define TCP_CA_Disorder 1
#define TCP_CA_CWR 2
#define TCP_CA_Recovery 3
#define TCP_CA_Loss 4
#define USEC_PER_SEC 1000000ULL
#define NSEC_PER_USEC 1000ULL

#define min_t(a, b) ((a) < (b) ? (a) : (b))
#define max_t(a, b) ((a) > (b) ? (a) : (b))

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

/* The time the kernel stamped on this ACK, in ns (tp->tcp_mstamp is in us);
 * the shim keeps the harness's clock in ns, so the test compares like with like. */
static __always_inline __u64 now_ns(const struct tcp_sock *tp)
{
#ifdef __bpf__
	return tp->tcp_mstamp * NSEC_PER_USEC;
#else
	return tp->shim_now_ns;
#endif
}

/* tcp.h tcp_in_slow_start: strictly below ssthresh (Linux 4.3 on). */
static __always_inline int in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* tcp_cong.c tcp_slow_start: grow by the packets acked up to ssthresh; return
 * what is left for congestion avoidance. */
static __always_inline __u32 slow_start(struct tcp_sock *tp, __u32 acked)
{
	__u32 cwnd = min_t(tp->snd_cwnd + acked, tp->snd_ssthresh);

	acked -= cwnd - tp->snd_cwnd;
	tp->snd_cwnd = min_t(cwnd, tp->snd_cwnd_clamp);
	return acked;
}

/* tcp_cong.c tcp_cong_avoid_ai: +1 packet per w packets acked (Linux 4.2 on). */
static __always_inline void cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked)
{
	w = max_t(w, 1);
	if (tp->snd_cwnd_cnt >= w) {
		tp->snd_cwnd_cnt = 0;
		tp->snd_cwnd++;
	}
	tp->snd_cwnd_cnt += acked;
	if (tp->snd_cwnd_cnt >= w) {
		__u32 delta = tp->snd_cwnd_cnt / w;

		tp->snd_cwnd_cnt -= delta * w;
		tp->snd_cwnd += delta;
	}
	tp->snd_cwnd = min_t(tp->snd_cwnd, tp->snd_cwnd_clamp);
}

/* tcp_cong.c tcp_reno_undo_cwnd: back to the window before the reduction. */
static __always_inline __u32 undo_to_prior(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return max_t(tp->snd_cwnd, tp->prior_cwnd);
}

/* tcp_cong.c tcp_reno_cong_avoid without the cwnd-limited test (callers make it). */
static __always_inline void reno_increase(struct tcp_sock *tp, __u32 acked)
{
	if (in_slow_start(tp)) {
		acked = slow_start(tp, acked);
		if (!acked)
			return;
	}
	cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* tcp.h before(): sequence order modulo 2^32. */
static __always_inline int seq_after(__u32 a, __u32 b)
{
	return (__s32)(b - a) < 0;
}

/* tcp.h tcp_is_cwnd_limited (the field form; the kernel's function also looks
 * at max_packets_out in slow start). */
static __always_inline int cwnd_limited(const struct tcp_sock *tp)
{
	if (in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return tp->is_cwnd_limited;
}

/* The per-round RTT sampling Vegas does (tcp_vegas.c tcp_vegas_pkts_acked)
 * and YeAH reuses (tcp_yeah.c calls tcp_vegas_pkts_acked): the round's
 * minimum and the minimum ever, in us + 1 (Linux's guard against a zero
 * sample), and how many samples the round had. */
struct tcpe_round_rtt {
	__u32 beg_snd_nxt; /* right edge of the round */
	__u32 cnt_rtt; /* RTT samples this round */
	__u32 min_rtt; /* us, this round */
	__u32 base_rtt; /* us, ever */
};

static __always_inline void round_rtt_sample(struct tcpe_round_rtt *r,
					     const struct ack_sample *sample)
{
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;
	vrtt = sample->rtt_us + 1;
	r->base_rtt = min_t(r->base_rtt, vrtt);
	r->min_rtt = min_t(r->min_rtt, vrtt);
	r->cnt_rtt++;
}

/* A new round starts at the next segment sent (tcp_vegas.c vegas_enable,
 * tcp_yeah.c's end of round). */
static __always_inline void round_rtt_next(const struct tcp_sock *tp, struct tcpe_round_rtt *r)
{
	r->beg_snd_nxt = tp->snd_nxt;
	r->cnt_rtt = 0;
	r->min_rtt = 0x7fffffff;
}

#endif
