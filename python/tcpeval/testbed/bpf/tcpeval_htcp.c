/* H-TCP (Leith & Shorten, PFLDnet 2004) as the simulator runs it
 * (crates/tcpeval-sim/src/cc/htcp.rs, after Linux net/ipv4/tcp_htcp.c): the
 * increase alpha grows with the time since the last congestion event, scaled by
 * minRTT / 100 ms; the decrease beta = minRTT / maxRTT in [0.5, 0.8], 0.5 when
 * the throughput moved by more than 20%. Times are counted in 1 ms "jiffies",
 * the simulator's HZ = 1000 (this kernel's HZ is 250: the simulator's choice is
 * kept so both sides compute the same integers). */
#include "tcpeval_cc.h"

#define ALPHA_BASE (1U << 7) /* 1.0 with shift << 7 */
#define BETA_MIN (1U << 6) /* 0.5 with shift << 7 */
#define BETA_MAX 102U /* 0.8 with shift << 7 */
#define HZ_MS 1000ULL
#define MAX_RTT_STEP 20U /* jiffies: maxRTT grows by at most this per sample */
#define MIN_RTT_FOR_BETA 10U /* jiffies: below, beta stays 0.5 */

struct tcpe_htcp {
	__u32 alpha; /* << 7 */
	__u32 beta; /* << 7 */
	__u32 modeswitch;
	__u32 pkts_acked;
	__u32 packetcount;
	__u32 min_rtt; /* jiffies */
	__u32 max_rtt;
	__u32 last_cong;
	__u32 reset_pending;
	__u32 min_b;
	__u32 max_b;
	__u32 old_max_b;
	__u32 bi;
	__u32 lasttime;
};

static __always_inline __u32 jiffies_of(__u64 ns)
{
	return (__u32)(ns / 1000000ULL);
}

static __always_inline __u64 htcp_factor(const struct tcpe_htcp *ca, __u32 delta)
{
	__u64 factor = 1;

	if (delta > HZ_MS) {
		__u64 d = delta - HZ_MS;

		factor = 1 + (10 * d + (d / 2) * (d / 2) / HZ_MS) / HZ_MS;
	}
	if (HTCP_USE_RTT_SCALING && ca->min_rtt) {
		__u64 scale = (HZ_MS << 3) / (10ULL * ca->min_rtt);

		scale = min_t(max_t(scale, 1ULL << 2), 10ULL << 3);
		factor = max_t((factor << 3) / scale, 1ULL);
	}
	return factor;
}

static __always_inline void htcp_alpha_update(struct tcpe_htcp *ca, __u32 now)
{
	__u32 delta = now > ca->last_cong ? now - ca->last_cong : 0;

	ca->alpha = (__u32)(2 * htcp_factor(ca, delta) * (ALPHA_BASE - ca->beta));
	if (!ca->alpha)
		ca->alpha = ALPHA_BASE;
}

static __always_inline void htcp_beta_update(struct tcpe_htcp *ca)
{
	if (HTCP_USE_BANDWIDTH_SWITCH) {
		__u64 max_b = ca->max_b, old = ca->old_max_b;

		ca->old_max_b = ca->max_b;
		if (5 * max_b < 4 * old || 5 * max_b > 6 * old) {
			ca->beta = BETA_MIN;
			ca->modeswitch = 0;
			return;
		}
	}
	if (ca->modeswitch && ca->min_rtt > MIN_RTT_FOR_BETA && ca->max_rtt) {
		__u32 beta = (ca->min_rtt << 7) / ca->max_rtt;

		ca->beta = min_t(max_t(beta, BETA_MIN), BETA_MAX);
	} else {
		ca->beta = BETA_MIN;
		ca->modeswitch = 1;
	}
}

static __always_inline void htcp_measure_rtt(struct tcpe_htcp *ca, __u32 rtt, int open)
{
	if (!ca->min_rtt || ca->min_rtt > rtt)
		ca->min_rtt = rtt;
	if (open) {
		ca->max_rtt = max_t(ca->max_rtt, ca->min_rtt);
		if (ca->max_rtt < rtt && rtt <= ca->max_rtt + MAX_RTT_STEP)
			ca->max_rtt = rtt;
	}
}

static __always_inline void htcp_measure_throughput(struct tcpe_htcp *ca, const struct tcp_sock *tp,
						    __u8 state, __u32 acked, __u32 now)
{
	__u32 alpha_pkts, elapsed;

	if (state != TCP_CA_Open && state != TCP_CA_Disorder) {
		ca->packetcount = 0;
		ca->lasttime = now;
		return;
	}
	ca->packetcount += acked;
	alpha_pkts = max_t(ca->alpha >> 7, 1U);
	elapsed = now > ca->lasttime ? now - ca->lasttime : 0;
	if (ca->packetcount >= (tp->snd_cwnd > alpha_pkts ? tp->snd_cwnd - alpha_pkts : 0) &&
	    elapsed >= ca->min_rtt && ca->min_rtt && elapsed) {
		__u32 cur = (__u32)((__u64)ca->packetcount * HZ_MS / elapsed);
		__u32 since = (now > ca->last_cong ? now - ca->last_cong : 0) / ca->min_rtt;

		if (since <= 3) {
			ca->min_b = ca->max_b = ca->bi = cur;
		} else {
			ca->bi = (__u32)((3ULL * ca->bi + cur) / 4);
			ca->max_b = max_t(ca->max_b, ca->bi);
			ca->min_b = min_t(ca->min_b, ca->max_b);
		}
		ca->packetcount = 0;
		ca->lasttime = now;
	}
}

TCPEVAL_OP(void, htcp_init, struct sock *sk)
{
	struct tcpe_htcp *ca = inet_csk_ca(sk);

	__builtin_memset(ca, 0, sizeof(*ca));
	ca->alpha = ALPHA_BASE;
	ca->beta = BETA_MIN;
	ca->pkts_acked = 1;
	ca->last_cong = jiffies_of(now_ns(tcp_sk(sk)));
}

TCPEVAL_OP(__u32, htcp_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_htcp *ca = inet_csk_ca(sk);

	/* Linux htcp_param_update: beta, then alpha, then fade maxRTT. */
	htcp_beta_update(ca);
	htcp_alpha_update(ca, jiffies_of(now_ns(tp)));
	if (ca->min_rtt && ca->max_rtt > ca->min_rtt)
		ca->max_rtt = ca->min_rtt + (ca->max_rtt - ca->min_rtt) * 95 / 100;
	return max_t((__u32)(((__u64)tp->snd_cwnd * ca->beta) >> 7), 2U);
}

TCPEVAL_OP(void, htcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_htcp *ca = inet_csk_ca(sk);

	if (!cwnd_limited(tp))
		return;
	if (in_slow_start(tp)) {
		slow_start(tp, acked);
		return;
	}
	/* cwnd += alpha / cwnd per packet, counted as Linux does. */
	if ((((__u64)tp->snd_cwnd_cnt * ca->alpha) >> 7) >= tp->snd_cwnd) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd++;
		tp->snd_cwnd_cnt = 0;
		htcp_alpha_update(ca, jiffies_of(now_ns(tp)));
	} else {
		tp->snd_cwnd_cnt += ca->pkts_acked;
	}
	ca->pkts_acked = 1;
}

TCPEVAL_OP(void, htcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_htcp *ca = inet_csk_ca(sk);
	__u8 state = inet_csk(sk)->icsk_ca_state;
	__u32 now = jiffies_of(now_ns(tp));

	if (state == TCP_CA_Open)
		ca->pkts_acked = sample->pkts_acked;
	if (sample->rtt_us > 0)
		htcp_measure_rtt(ca, max_t(jiffies_of((__u64)sample->rtt_us * 1000), 1U),
				 state == TCP_CA_Open);
	if (HTCP_USE_BANDWIDTH_SWITCH)
		htcp_measure_throughput(ca, tp, state, sample->pkts_acked, now);
}

TCPEVAL_OP(void, htcp_state, struct sock *sk, __u8 new_state)
{
	struct tcpe_htcp *ca = inet_csk_ca(sk);
	__u32 now = jiffies_of(now_ns(tcp_sk(sk)));

	/* Delta counts from the end of the congestion event. */
	if (new_state == TCP_CA_Open && ca->reset_pending) {
		ca->last_cong = now;
		ca->reset_pending = 0;
	} else if (new_state == TCP_CA_CWR || new_state == TCP_CA_Recovery ||
		   new_state == TCP_CA_Loss) {
		ca->last_cong = now;
		ca->reset_pending = 1;
	}
}

TCPEVAL_OP(__u32, htcp_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

TCPEVAL_OPS(htcp) = {
	.init = (void *)htcp_init,
	.cong_avoid = (void *)htcp_cong_avoid,
	.ssthresh = (void *)htcp_recalc_ssthresh,
	.set_state = (void *)htcp_state,
	.pkts_acked = (void *)htcp_pkts_acked,
	.undo_cwnd = (void *)htcp_undo_cwnd,
	.name = "htcp",
};
