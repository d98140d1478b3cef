/* BIC (Xu, Harfoush, Rhee, INFOCOM 2004) as the simulator runs it
 * (crates/tcpeval-sim/src/cc/bic.rs, after Linux net/ipv4/tcp_bic.c): a binary
 * search towards the window of the last loss (W_max), max probing above it,
 * Reno at or below low_window; the step is corrected by the measured packets
 * per ACK (delayed_ack, x16). */
#include "tcpeval_cc.h"

#define BICTCP_BETA_SCALE 1024
#define BICTCP_B 4 /* binary search to (max + min) / BICTCP_B */
#define ACK_RATIO_SHIFT 4
#define NO_LOSS_CNT_CAP 20 /* before any loss grow at least 5% per RTT */
#define UPDATE_GAP_NS (1000000000ULL / 32) /* Linux HZ / 32 */

struct tcpe_bic {
	__u32 cnt; /* packets acked per +1 of cwnd */
	__u32 last_max_cwnd; /* W_max */
	__u32 last_cwnd;
	__u32 delayed_ack; /* packets per ACK, << ACK_RATIO_SHIFT */
	__u64 last_time; /* ns */
};

static __always_inline void bictcp_reset(struct tcpe_bic *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->delayed_ack = 2 << ACK_RATIO_SHIFT;
}

/* Packets per +1 before the ACK-ratio correction (Linux bictcp_update). */
static __always_inline __u32 search_cnt(__u32 cwnd, __u32 w_max)
{
	__u32 inc = max_t(BIC_MAX_INCREMENT, 1), smooth = max_t(BIC_SMOOTH_PART, 1);
	__u32 cnt;

	if (cwnd < w_max) {
		__u32 dist = (w_max - cwnd) / BICTCP_B;

		if (dist > inc)
			cnt = cwnd / inc; /* linear increase */
		else if (dist <= 1U)
			cnt = cwnd * smooth / BICTCP_B; /* binary search, near W_max */
		else
			cnt = cwnd / dist; /* binary search */
	} else if (cwnd < w_max + BICTCP_B) {
		cnt = cwnd * smooth / BICTCP_B; /* slow start around W_max */
	} else if (cwnd < w_max + inc * (BICTCP_B - 1)) {
		cnt = cwnd * (BICTCP_B - 1) / (cwnd - w_max); /* slow max probing */
	} else {
		cnt = cwnd / inc; /* linear max probing */
	}
	if (w_max == 0 && cnt > NO_LOSS_CNT_CAP)
		cnt = NO_LOSS_CNT_CAP;
	return cnt;
}

static __always_inline void bictcp_update(struct tcpe_bic *ca, __u32 cwnd, __u64 now)
{
	if (ca->last_cwnd == cwnd && now - ca->last_time <= UPDATE_GAP_NS)
		return;
	ca->last_cwnd = cwnd;
	ca->last_time = now;
	if (cwnd <= BIC_LOW_WINDOW) {
		ca->cnt = cwnd;
		return;
	}
	ca->cnt = (search_cnt(cwnd, ca->last_max_cwnd) << ACK_RATIO_SHIFT) / max_t(ca->delayed_ack, 1U);
	if (ca->cnt == 0)
		ca->cnt = 1;
}

TCPEVAL_OP(void, bictcp_init, struct sock *sk)
{
	bictcp_reset(inet_csk_ca(sk));
}

TCPEVAL_OP(void, bictcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_bic *ca = inet_csk_ca(sk);

	if (!cwnd_limited(tp))
		return;
	if (in_slow_start(tp)) {
		slow_start(tp, acked);
		return;
	}
	bictcp_update(ca, tp->snd_cwnd, now_ns(tp));
	cong_avoid_ai(tp, ca->cnt, acked);
}

TCPEVAL_OP(__u32, bictcp_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_bic *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd;

	/* Fast convergence: a loss below W_max lowers W_max further. */
	if (cwnd < ca->last_max_cwnd && BIC_FAST_CONVERGENCE)
		ca->last_max_cwnd = (__u32)((__u64)cwnd * (BICTCP_BETA_SCALE + BIC_BETA)
					    / (2 * BICTCP_BETA_SCALE));
	else
		ca->last_max_cwnd = cwnd;
	if (cwnd <= BIC_LOW_WINDOW)
		return max_t(cwnd >> 1, 2U);
	return max_t((__u32)((__u64)cwnd * BIC_BETA / BICTCP_BETA_SCALE), 2U);
}

TCPEVAL_OP(void, bictcp_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		bictcp_reset(inet_csk_ca(sk));
}

/* The EWMA of packets per ACK (gain 1/16), in the Open state only. */
TCPEVAL_OP(void, bictcp_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcpe_bic *ca = inet_csk_ca(sk);
	__u32 d = ca->delayed_ack + sample->pkts_acked;

	if (inet_csk(sk)->icsk_ca_state == TCP_CA_Open)
		ca->delayed_ack = d - min_t(ca->delayed_ack >> ACK_RATIO_SHIFT, d);
}

TCPEVAL_OP(__u32, bictcp_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

TCPEVAL_OPS(bic) = {
	.init = (void *)bictcp_init,
	.cong_avoid = (void *)bictcp_cong_avoid,
	.ssthresh = (void *)bictcp_recalc_ssthresh,
	.set_state = (void *)bictcp_state,
	.pkts_acked = (void *)bictcp_acked,
	.undo_cwnd = (void *)bictcp_undo_cwnd,
	.name = "bic",
};
