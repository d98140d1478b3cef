/* HighSpeed TCP (RFC 3649) as the simulator runs it
 * (crates/tcpeval-sim/src/cc/highspeed.rs, after Linux net/ipv4/tcp_highspeed.c):
 * Reno up to 38 packets; above, +a(w) per window's worth of ACKs (Linux adds
 * a(w) once per ACK, not per packet) and a decrease by b(w), both from the
 * table of RFC 3649 appendix B. */
#include "tcpeval_cc.h"

#define HSTCP_ROWS 72

/* Linux hstcp_aimd_vals: each row's window upper bound and b(w) x 256; a(w)
 * is the row index + 1 (RFC 3649 appendix B). */
static const __u32 hstcp_cwnd[HSTCP_ROWS] = {
	38, 118, 221, 347, 495, 663, 851, 1058, 1284, 1529, 1793, 2076, 2378, 2699, 3039, 3399,
	3778, 4177, 4596, 5036, 5497, 5979, 6483, 7009, 7558, 8130, 8726, 9346, 9991, 10661, 11358,
	12082, 12834, 13614, 14424, 15265, 16137, 17042, 17981, 18955, 19965, 21013, 22101, 23230,
	24402, 25618, 26881, 28193, 29557, 30975, 32450, 33986, 35586, 37253, 38992, 40808, 42707,
	44694, 46776, 48961, 51258, 53677, 56230, 58932, 61799, 64851, 68113, 71617, 75401, 79517,
	84035, 89053,
};
static const __u32 hstcp_md[HSTCP_ROWS] = {
	128, 112, 104, 98, 93, 89, 86, 83, 81, 78, 76, 74, 72, 71, 69, 68, 66, 65, 64, 62, 61, 60, 59,
	58, 57, 56, 55, 54, 53, 52, 52, 51, 50, 49, 48, 48, 47, 46, 45, 45, 44, 43, 43, 42, 41, 41,
	40, 39, 39, 38, 38, 37, 36, 36, 35, 35, 34, 33, 33, 32, 32, 31, 30, 30, 29, 28, 28, 27, 26,
	26, 25, 24,
};

struct tcpe_hstcp {
	__u32 ai; /* row: hstcp_cwnd[ai - 1] < cwnd <= hstcp_cwnd[ai] */
};

/* The row of the window (Linux moves ai up or down step by step; the row is
 * the same). A fixed bound keeps the verifier's loop check simple. */
static __always_inline __u32 hstcp_row(__u32 cwnd)
{
	__u32 i;

	for (i = 0; i < HSTCP_ROWS - 1; i++)
		if (cwnd <= hstcp_cwnd[i])
			break;
	return i;
}

TCPEVAL_OP(void, hstcp_init, struct sock *sk)
{
	struct tcpe_hstcp *ca = inet_csk_ca(sk);

	ca->ai = 0;
}

TCPEVAL_OP(void, hstcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_hstcp *ca = inet_csk_ca(sk);

	if (!cwnd_limited(tp))
		return;
	if (in_slow_start(tp)) {
		slow_start(tp, acked);
		return;
	}
	ca->ai = hstcp_row(tp->snd_cwnd);
	if (tp->snd_cwnd < tp->snd_cwnd_clamp) {
		tp->snd_cwnd_cnt += ca->ai + 1;
		if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
			tp->snd_cwnd_cnt -= tp->snd_cwnd;
			tp->snd_cwnd++;
		}
	}
}

TCPEVAL_OP(__u32, hstcp_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_hstcp *ca = inet_csk_ca(sk);
	__u32 ai = ca->ai;

	if (ai >= HSTCP_ROWS) /* for the verifier: ai is a row index */
		ai = HSTCP_ROWS - 1;
	/* The row of the last increase, as Linux: b(w) at the window it grew to. */
	return max_t(tp->snd_cwnd - (__u32)(((__u64)tp->snd_cwnd * hstcp_md[ai]) >> 8), 2U);
}

TCPEVAL_OP(__u32, hstcp_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

TCPEVAL_OPS(highspeed) = {
	.init = (void *)hstcp_init,
	.cong_avoid = (void *)hstcp_cong_avoid,
	.ssthresh = (void *)hstcp_ssthresh,
	.undo_cwnd = (void *)hstcp_undo_cwnd,
	.name = "highspeed",
};
