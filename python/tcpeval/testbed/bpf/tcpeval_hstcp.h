/* HighSpeed TCP's table and rules (RFC 3649; Linux net/ipv4/tcp_highspeed.c)
 * as the simulator's HighSpeed (crates/tcpeval-sim/src/cc/highspeed.rs),
 * shared by HighSpeed (tcpeval_highspeed.c) and HSTCP-LP (tcpeval_hstcplp.c). */
#ifndef TCPEVAL_HSTCP_H
#define TCPEVAL_HSTCP_H
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

/* highspeed.rs HighSpeed::increase (tcp_highspeed.c hstcp_cong_avoid's
 * avoidance): +a(w) = row + 1 to the counter per ACK, +1 packet per cwnd of it.
 * Remembers the row for the decrease. */
static __always_inline void hstcp_increase(struct tcp_sock *tp, __u32 *ai)
{
	*ai = hstcp_row(tp->snd_cwnd);
	if (tp->snd_cwnd < tp->snd_cwnd_clamp) {
		tp->snd_cwnd_cnt += *ai + 1;
		if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
			tp->snd_cwnd_cnt -= tp->snd_cwnd;
			tp->snd_cwnd++;
		}
	}
}

/* tcp_highspeed.c hstcp_ssthresh: b(w) of the row of the last increase, as
 * Linux: the window it grew to. */
static __always_inline __u32 hstcp_ssthresh_at(const struct tcp_sock *tp, __u32 ai)
{
	if (ai >= HSTCP_ROWS) /* for the verifier: ai is a row index */
		ai = HSTCP_ROWS - 1;
	return max_t(tp->snd_cwnd - (__u32)(((__u64)tp->snd_cwnd * hstcp_md[ai]) >> 8), 2U);
}
#endif
