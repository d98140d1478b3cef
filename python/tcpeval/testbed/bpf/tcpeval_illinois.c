/* TCP Illinois (Liu, Basar, Srikant, VALUETOOLS 2006) as the simulator runs it
 * (crates/tcpeval-sim/src/cc/illinois.rs, after Linux net/ipv4/tcp_illinois.c):
 * Reno's shape with the increase alpha (alpha_max .. alpha_min) and decrease
 * beta (beta_min .. beta_max) set once per RTT from the average queueing delay
 * da relative to the largest seen dm. alpha << 7, beta << 6, RTTs in us. */
#include "tcpeval_cc.h"

#define ALPHA_SHIFT 7
#define ALPHA_BASE (1U << ALPHA_SHIFT) /* 1.0: Reno's increase */
#define BETA_SHIFT 6
#define RTT_MAX_US (0xffffffffU / ILLINOIS_ALPHA_MAX) /* keeps alpha x rtt in 32 bits */

struct tcpe_illinois {
	__u64 sum_rtt; /* us, this round */
	__u32 cnt_rtt;
	__u32 base_rtt;
	__u32 max_rtt;
	__u32 end_seq; /* right edge of the round */
	__u32 alpha;
	__u32 beta;
	__u32 acked; /* packets of the last ACK */
	__u32 rtt_above;
	__u32 rtt_low; /* rounds with da below dm / 100 since it was above */
};

/* Built with -DTCPE_TRACE (make bpf-trace): each round's delays and the
 * alpha they give, and every new largest RTT, to the kernel's trace buffer. */
#ifdef TCPE_TRACE
#define illinois_trace_round(tp, ca, avg)                                                  \
	bpf_printk("tcpe_illinois t %llu cwnd %u avg %llu base %u max %u alpha %u",        \
		   now_ns(tp) / 1000, (tp)->snd_cwnd, (avg), (ca)->base_rtt, (ca)->max_rtt, \
		   (ca)->alpha)
#define illinois_trace_max(tp, rtt)                                                        \
	bpf_printk("tcpe_illinois t %llu new max %u", now_ns(tp) / 1000, (rtt))
#else
#define illinois_trace_round(tp, ca, avg) do { } while (0)
#define illinois_trace_max(tp, rtt) do { } while (0)
#endif

static __always_inline void rtt_reset(struct sock *sk, struct tcpe_illinois *ca)
{
	ca->end_seq = tcp_sk(sk)->snd_nxt;
	ca->cnt_rtt = 0;
	ca->sum_rtt = 0;
}

static __always_inline __u32 alpha_for(struct tcpe_illinois *ca, __u64 da, __u64 dm)
{
	__u64 d1 = dm / 100; /* below 1% of dm the delay counts as none */

	if (da <= d1) {
		if (!ca->rtt_above)
			return ILLINOIS_ALPHA_MAX;
		/* Wait theta rounds before going back to alpha_max. */
		if (++ca->rtt_low < ILLINOIS_THETA)
			return ca->alpha;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		return ILLINOIS_ALPHA_MAX;
	}
	ca->rtt_above = 1;
	dm -= d1;
	da -= d1;
	return (__u32)((dm * ILLINOIS_ALPHA_MAX) /
		       (dm + da * (ILLINOIS_ALPHA_MAX - ILLINOIS_ALPHA_MIN) / ILLINOIS_ALPHA_MIN));
}

static __always_inline __u32 beta_for(__u64 da, __u64 dm)
{
	__u64 d2 = dm / 10, d3 = 8 * dm / 10;

	if (da <= d2)
		return ILLINOIS_BETA_MIN;
	if (da >= d3 || d3 <= d2)
		return ILLINOIS_BETA_MAX;
	return (__u32)((ILLINOIS_BETA_MIN * d3 + (ILLINOIS_BETA_MAX - ILLINOIS_BETA_MIN) * da
			- ILLINOIS_BETA_MAX * d2) / (d3 - d2));
}

static __always_inline void update_params(struct sock *sk, struct tcpe_illinois *ca)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (tp->snd_cwnd < ILLINOIS_WIN_THRESH) {
		ca->alpha = ALPHA_BASE;
		ca->beta = ILLINOIS_BETA_MAX;
	} else if (ca->cnt_rtt > 0) {
		__u64 avg = ca->sum_rtt / ca->cnt_rtt;
		__u64 dm = ca->max_rtt > ca->base_rtt ? ca->max_rtt - ca->base_rtt : 0;
		__u64 da = avg > ca->base_rtt ? avg - ca->base_rtt : 0;

		ca->alpha = alpha_for(ca, da, dm);
		ca->beta = beta_for(da, dm);
		illinois_trace_round(tp, ca, avg);
	}
	rtt_reset(sk, ca);
}

TCPEVAL_OP(void, illinois_init, struct sock *sk)
{
	struct tcpe_illinois *ca = inet_csk_ca(sk);

	__builtin_memset(ca, 0, sizeof(*ca));
	ca->alpha = ILLINOIS_ALPHA_MAX;
	ca->beta = ILLINOIS_BETA_MAX;
	ca->base_rtt = 0xffffffffU;
	rtt_reset(sk, ca);
}

TCPEVAL_OP(void, illinois_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcpe_illinois *ca = inet_csk_ca(sk);
	__u32 rtt;

	ca->acked = sample->pkts_acked;
	if (sample->rtt_us < 0)
		return;
	rtt = min_t((__u32)sample->rtt_us, RTT_MAX_US);
	ca->base_rtt = min_t(ca->base_rtt, rtt);
	if (rtt > ca->max_rtt)
		illinois_trace_max(tcp_sk(sk), rtt);
	ca->max_rtt = max_t(ca->max_rtt, rtt);
	ca->cnt_rtt++;
	ca->sum_rtt += rtt;
}

TCPEVAL_OP(void, illinois_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_illinois *ca = inet_csk_ca(sk);
	__u32 delta;

	if (seq_after(ack, ca->end_seq))
		update_params(sk, ca);
	if (!cwnd_limited(tp))
		return;
	if (in_slow_start(tp)) {
		slow_start(tp, acked);
		return;
	}
	/* cwnd += alpha / cwnd per packet acked. */
	tp->snd_cwnd_cnt += ca->acked;
	ca->acked = 1;
	delta = (__u32)(((__u64)tp->snd_cwnd_cnt * ca->alpha) >> ALPHA_SHIFT);
	if (delta >= tp->snd_cwnd) {
		tp->snd_cwnd = min_t(tp->snd_cwnd + delta / tp->snd_cwnd, tp->snd_cwnd_clamp);
		tp->snd_cwnd_cnt = 0;
	}
}

TCPEVAL_OP(__u32, illinois_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_illinois *ca = inet_csk_ca(sk);

	/* Multiplicative decrease by beta. */
	return max_t(tp->snd_cwnd - (__u32)(((__u64)tp->snd_cwnd * ca->beta) >> BETA_SHIFT), 2U);
}

TCPEVAL_OP(void, illinois_state, struct sock *sk, __u8 new_state)
{
	struct tcpe_illinois *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		ca->alpha = ALPHA_BASE;
		ca->beta = ILLINOIS_BETA_MAX;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		rtt_reset(sk, ca);
	}
}

TCPEVAL_OP(__u32, illinois_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

TCPEVAL_OPS(illinois) = {
	.init = (void *)illinois_init,
	.cong_avoid = (void *)illinois_cong_avoid,
	.ssthresh = (void *)illinois_ssthresh,
	.set_state = (void *)illinois_state,
	.pkts_acked = (void *)illinois_pkts_acked,
	.undo_cwnd = (void *)illinois_undo_cwnd,
	.name = "illinois",
};
