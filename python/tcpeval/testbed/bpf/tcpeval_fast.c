/* FAST TCP (Jin, Wei & Low, INFOCOM 2004) as the simulator runs it
 * (crates/tcpeval-sim/src/cc/fast.rs, its integer form): once per RTT
 *     w <- min(2w, (1 - gamma) w + gamma (baseRTT / avgRTT w + alpha)),
 * baseRTT the minimum RTT, avgRTT the mean of the last round's samples taken in
 * the Open state; slow start until the flow queues alpha/2 packets; Reno's
 * halving on loss; pacing at 1.2 cwnd / srtt. alpha in 1/1024 packet, gamma and
 * baseRTT/avgRTT in 1/2^20, RTTs in ns (the kernel's us x 1000), as fast.rs. */
#include "tcpeval_cc.h"

/* Built with -DTCPE_TRACE (make bpf-trace): by the socket's local port, each
 * round's window, state, reordering degree, RTT samples, average and base RTT
 * (us), and the same at each reduction and each undo, to the kernel's trace
 * buffer. */
#ifdef TCPE_TRACE
#define fast_trace(tp, ca, avg, what)                                                      \
	bpf_printk("tcpe_fast " what " port %u t %llu cwnd %u ssthresh %u state %u reord %u " \
		   "cnt %u avg %llu base %llu", ((struct sock *)(tp))->__sk_common.skc_num,       \
		   now_ns(tp) / 1000, (tp)->snd_cwnd, (tp)->snd_ssthresh,                        \
		   inet_csk((struct sock *)(tp))->icsk_ca_state, (tp)->reordering,           \
		   (ca)->rtt_cnt, (avg) / 1000, (ca)->base_rtt / 1000)
#else
#define fast_trace(tp, ca, avg, what) do { } while (0)
#endif

#define FAST_FP_SHIFT 10
#define FAST_RATIO_SHIFT 20

struct tcpe_fast {
	__u64 base_rtt; /* ns, ~0 before the first sample */
	__u64 rtt_sum; /* ns, this round */
	__u32 rtt_cnt;
	__u32 round_end; /* the round ends once snd_una passes it */
};

/* fast.rs Fast::target. */
static __always_inline __u32 fast_target(__u32 cwnd, __u64 base, __u64 avg)
{
	__u64 w = cwnd, ratio, fixed_point, blend, next;

	ratio = (min_t(base, avg) << FAST_RATIO_SHIFT) / max_t(avg, 1ULL);
	fixed_point = ((ratio * w) >> (FAST_RATIO_SHIFT - FAST_FP_SHIFT)) + FAST_ALPHA_FP;
	blend = (((1ULL << FAST_RATIO_SHIFT) - FAST_GAMMA_FP) * (w << FAST_FP_SHIFT) +
		 FAST_GAMMA_FP * fixed_point) >> FAST_RATIO_SHIFT;
	next = min_t(2 * w, (blend + (1ULL << (FAST_FP_SHIFT - 1))) >> FAST_FP_SHIFT);
	return (__u32)min_t(next, 0xffffffffULL);
}

/* fast.rs Fast::end_of_round. */
static __always_inline void end_of_round(struct tcp_sock *tp, struct tcpe_fast *ca, __u32 acked)
{
	__u64 avg = ca->rtt_sum / max_t(ca->rtt_cnt, 1U), base = ca->base_rtt;
	__u32 w;

	fast_trace(tp, ca, avg, "round");
	ca->rtt_sum = 0;
	ca->rtt_cnt = 0;
	ca->round_end = tp->snd_nxt;
	if (avg == 0 || base == ~0ULL)
		return;
	if (in_slow_start(tp)) {
		/* vegas.rs queued_packets: cwnd (avg - base) / base, against alpha / 2. */
		__u64 queued = (__u64)tp->snd_cwnd * (avg > base ? avg - base : 0) / max_t(base, 1ULL);

		if ((queued << (FAST_FP_SHIFT + 1)) <= FAST_ALPHA_FP) {
			slow_start(tp, acked);
			return;
		}
		tp->snd_ssthresh = tp->snd_cwnd;
	}
	w = fast_target(tp->snd_cwnd, base, avg);
	tp->snd_cwnd = min_t(max_t(w, 2U), tp->snd_cwnd_clamp);
	tp->snd_ssthresh = min_t(tp->snd_ssthresh, tp->snd_cwnd);
}

/* fast.rs: pace at 1.2 cwnd x (MSS + 52 B of headers) / srtt, bytes per
 * second (on the kernel only: the agreement test compares windows). */
static __always_inline void fast_pace(struct sock *sk)
{
#ifdef __bpf__
	const struct tcp_sock *tp = tcp_sk(sk);

	if (FAST_PACING && tp->srtt_us)
		sk->sk_pacing_rate = 12ULL * tp->snd_cwnd * (tp->mss_cache + 52) * USEC_PER_SEC /
				     (10ULL * (tp->srtt_us >> 3) + 1);
#endif
}

TCPEVAL_OP(void, fast_init, struct sock *sk)
{
	struct tcpe_fast *ca = inet_csk_ca(sk);

	ca->base_rtt = ~0ULL;
	ca->rtt_sum = 0;
	ca->rtt_cnt = 0;
	ca->round_end = tcp_sk(sk)->snd_una;
#ifdef __bpf__
	if (FAST_PACING)
		sk->sk_pacing_status = SK_PACING_NEEDED; /* TCP's own pacing, no fq needed */
#endif
}

TCPEVAL_OP(void, fast_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcpe_fast *ca = inet_csk_ca(sk);

	if (sample->rtt_us >= 0) {
		__u64 rtt = (__u64)sample->rtt_us * NSEC_PER_USEC;

		ca->base_rtt = min_t(ca->base_rtt, rtt);
		if (inet_csk(sk)->icsk_ca_state == TCP_CA_Open) {
			ca->rtt_sum += rtt;
			ca->rtt_cnt++;
		}
	}
	fast_pace(sk);
}

TCPEVAL_OP(void, fast_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcpe_fast *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	/* No tcp_is_cwnd_limited test: FAST paces, so in flight trails a window
	 * it has just raised, and its round update runs whether or not the window
	 * is in use (fast.rs waits_for_window_use, after Vegas's own branch). */
	if (seq_after(ack, ca->round_end))
		end_of_round(tp, ca, acked);
	else if (in_slow_start(tp))
		slow_start(tp, acked);
}

TCPEVAL_OP(__u32, fast_ssthresh, struct sock *sk)
{
	fast_trace(tcp_sk(sk), (struct tcpe_fast *)inet_csk_ca(sk), 0ULL, "loss");
	return max_t(tcp_sk(sk)->snd_cwnd >> 1, 2U);
}

TCPEVAL_OP(__u32, fast_undo_cwnd, struct sock *sk)
{
	fast_trace(tcp_sk(sk), (struct tcpe_fast *)inet_csk_ca(sk), 0ULL, "undo");
	return undo_to_prior(sk);
}

TCPEVAL_OPS(fast) = {
	.init = (void *)fast_init,
	.cong_avoid = (void *)fast_cong_avoid,
	.ssthresh = (void *)fast_ssthresh,
	.pkts_acked = (void *)fast_pkts_acked,
	.undo_cwnd = (void *)fast_undo_cwnd,
	.name = "fast",
};
