/* Compound TCP (draft-sridharan-tcpm-ctcp-02; Tan, Song, Zhang & Sridharan,
 * INFOCOM 2006) as the simulator runs it on the default stack
 * (crates/tcpeval-sim/src/cc/compound.rs, CompoundVersion::Draft, its integer
 * form; each rule is the draft's section 3): the send window is the loss window
 * (Reno: 1/win per packet acknowledged, halved on loss) plus a delay window
 * dwnd, stepped once per RTT from diff = win (RTT - baseRTT) / RTT, the
 * packets queued:
 *     diff < gamma:  dwnd += max(alpha win^(3/4) - 1, 0)
 *     diff >= gamma: dwnd = max(dwnd - zeta diff, 0)
 * and on a loss win (1 - beta) in all: the loss window halves, dwnd takes the
 * rest; a timeout clears dwnd; below the low window (41) dwnd is 0.
 * Fixed point as compound.rs: dwnd and diff in 1/1024 packet, (RTT -
 * baseRTT) / RTT in 1/2^30 from RTTs in us, alpha, beta and zeta in 1/2^20,
 * gamma in 1/1024, win^(3/4) as the 2.6.22 module's integer fourth root of win^3
 * (x 2^16 where it fits: 1/16 packet). */
#include "tcpeval_cc.h"

#define CTCP_FP_SHIFT 10
#define CTCP_PARAM_SHIFT 20
#define CTCP_RATIO_SHIFT 30
#define CTCP_ROOT_SHIFT 4
#define CTCP_MAX_STEP_WINDOW ((1U << 21) - 1) /* win^3 < 2^63 */
#define CTCP_NO_RTT (~0ULL)
/* 1 - beta, x 2^20. */
#define CTCP_KEEP_FP ((1ULL << CTCP_PARAM_SHIFT) - COMPOUND_BETA_FP)

struct tcpe_compound {
	__u64 dwnd_fp; /* the delay window, packets x 2^10 */
	__u64 base_rtt; /* us, the minimum ever; CTCP_NO_RTT before a sample */
	__u64 round_min_rtt; /* us, this round's minimum */
	__u32 lwnd; /* the loss window, whole packets (its fraction: snd_cwnd_cnt / win) */
	__u32 round_end; /* the round ends once snd_una passes it */
};

/* Linux fls64: the highest set bit, 1-based; 0 for 0. Without branches (the
 * bits below the highest set, then counted), so that the verifier follows one
 * path through qroot's loop. */
static __always_inline __u32 ctcp_fls64(__u64 x)
{
	x |= x >> 1;
	x |= x >> 2;
	x |= x >> 4;
	x |= x >> 8;
	x |= x >> 16;
	x |= x >> 32;
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (__u32)((x * 0x0101010101010101ULL) >> 56);
}

/* The 2.6.22 module's cdiv64_64 (compound.rs div64_dynamic): a / b with b cut
 * to 32 bits, both shifted right until it fits (by fls64(b >> 32), 0 when b
 * fits already). */
static __always_inline __u64 ctcp_div64(__u64 a, __u64 b)
{
	__u32 shift = ctcp_fls64(b >> 32);

	return (a >> shift) / (b >> shift);
}

/* The module's qroot (compound.rs qroot): the fourth root by integer Newton
 * steps x' = (3x + a / x^3) / 4 from 2^(fls64(a) / 4), until x moves by at
 * most 1 (a handful of steps; 64 bounds the loop as the Rust does). */
static __always_inline __u32 ctcp_qroot(__u64 a)
{
	__u32 x = 1U << (ctcp_fls64(a) >> 2), x1, i;

	for (i = 0; i < 64; i++) {
		__u64 x3 = (__u64)x * x * x;

		x1 = x;
		x = (3 * x + (__u32)ctcp_div64(a, x3)) / 4;
		if (x1 - x + 1 <= 2) /* |x1 - x| <= 1, in u32 */
			break;
	}
	return x;
}

/* compound.rs pow_three_quarters: win^(3/4) x 16 for win < 2^21, the fourth
 * root of win^3 x 2^(4 s) with the largest s <= 4 that fits in 64 bits. */
static __always_inline __u64 ctcp_pow_three_quarters(__u64 w)
{
	__u64 cube = w * w * w;
	__u32 s = (64 - ctcp_fls64(cube)) / 4;

	if (s > CTCP_ROOT_SHIFT)
		s = CTCP_ROOT_SHIFT;
	return (__u64)ctcp_qroot(cube << (4 * s)) << (CTCP_ROOT_SHIFT - s);
}

static __always_inline __u32 ctcp_dwnd(const struct tcpe_compound *ca)
{
	__u64 d = ca->dwnd_fp >> CTCP_FP_SHIFT;

	return d > 0xffffffffULL ? 0xffffffffU : (__u32)d;
}

/* compound.rs Compound::next_dwnd_fp: the draft's dwnd recursion, with
 * diff = (Expected - Actual) baseRTT = win (RTT - baseRTT) / RTT. */
static __always_inline __u64 ctcp_next_dwnd(const struct tcpe_compound *ca, __u32 win,
					    __u64 base_us, __u64 rtt_us)
{
	__u64 w = min_t(win, CTCP_MAX_STEP_WINDOW), ratio, diff_fp, grow, dec;

	ratio = ((rtt_us > base_us ? rtt_us - base_us : 0) << CTCP_RATIO_SHIFT) / max_t(rtt_us, 1ULL);
	diff_fp = (w * ratio) >> (CTCP_RATIO_SHIFT - CTCP_FP_SHIFT);
	if (diff_fp < COMPOUND_GAMMA_FP) {
		grow = (COMPOUND_ALPHA_FP * ctcp_pow_three_quarters(w)) >>
		       (CTCP_PARAM_SHIFT + CTCP_ROOT_SHIFT - CTCP_FP_SHIFT);
		grow = grow > (1ULL << CTCP_FP_SHIFT) ? grow - (1ULL << CTCP_FP_SHIFT) : 0;
		return ca->dwnd_fp + grow < ca->dwnd_fp ? ~0ULL : ca->dwnd_fp + grow;
	}
	dec = (COMPOUND_ZETA_FP * diff_fp) >> CTCP_PARAM_SHIFT;
	return ca->dwnd_fp > dec ? ca->dwnd_fp - dec : 0;
}

/* compound.rs Compound::apply: win = cwnd + dwnd in whole packets, the loss
 * window's counted fraction and dwnd added in 1/1024 and truncated. */
static __always_inline void ctcp_apply(struct tcp_sock *tp, const struct tcpe_compound *ca, __u32 win)
{
	__u64 frac = ((__u64)tp->snd_cwnd_cnt << CTCP_FP_SHIFT) / max_t(win, 1U);
	__u64 d = (ca->dwnd_fp + frac) >> CTCP_FP_SHIFT;
	__u64 cwnd = (__u64)ca->lwnd + min_t(d, 0xffffffffULL);

	cwnd = min_t(cwnd, 0xffffffffULL);
	tp->snd_cwnd = min_t(max_t((__u32)cwnd, 1U), tp->snd_cwnd_clamp);
}

TCPEVAL_OP(void, compound_init, struct sock *sk)
{
	struct tcpe_compound *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->lwnd = tp->snd_cwnd;
	ca->dwnd_fp = 0;
	ca->base_rtt = CTCP_NO_RTT;
	ca->round_min_rtt = CTCP_NO_RTT;
	ca->round_end = tp->snd_una;
}

TCPEVAL_OP(void, compound_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcpe_compound *ca = inet_csk_ca(sk);

	if (sample->rtt_us >= 0) {
		__u64 rtt = sample->rtt_us;

		ca->base_rtt = min_t(ca->base_rtt, rtt);
		ca->round_min_rtt = min_t(ca->round_min_rtt, rtt);
	}
}

TCPEVAL_OP(void, compound_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcpe_compound *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 win, dwnd;

	if (!cwnd_limited(tp))
		return;
	if (in_slow_start(tp)) {
		slow_start(tp, acked);
		dwnd = ctcp_dwnd(ca);
		ca->lwnd = tp->snd_cwnd > dwnd ? tp->snd_cwnd - dwnd : 0;
		return;
	}
	/* The loss window: 1/win per packet acknowledged, counted as
	 * tcp_cong_avoid_ai counts. */
	win = max_t(tp->snd_cwnd, 1U);
	tp->snd_cwnd_cnt = tp->snd_cwnd_cnt + acked < tp->snd_cwnd_cnt ? ~0U : tp->snd_cwnd_cnt + acked;
	if (tp->snd_cwnd_cnt >= win) {
		__u32 delta = tp->snd_cwnd_cnt / win;

		tp->snd_cwnd_cnt -= delta * win;
		ca->lwnd = ca->lwnd + delta < ca->lwnd ? ~0U : ca->lwnd + delta;
	}
	/* Once per RTT (compound.rs Compound::update_dwnd). */
	if (seq_after(ack, ca->round_end) && ca->round_min_rtt != CTCP_NO_RTT) {
		if (tp->snd_cwnd < COMPOUND_LOW_WINDOW || ca->base_rtt == CTCP_NO_RTT)
			ca->dwnd_fp = 0;
		else
			ca->dwnd_fp = ctcp_next_dwnd(ca, tp->snd_cwnd, ca->base_rtt, ca->round_min_rtt);
		ca->round_min_rtt = CTCP_NO_RTT;
		ca->round_end = tp->snd_nxt;
	}
	ctcp_apply(tp, ca, win);
}

/* On a loss: win (1 - beta) in all, the loss window halved (at least 1),
 * dwnd = max(win (1 - beta) - cwnd / 2, 0); ssthresh win (1 - beta), at least 2. */
TCPEVAL_OP(__u32, compound_ssthresh, struct sock *sk)
{
	struct tcpe_compound *ca = inet_csk_ca(sk);
	__u64 target_fp = ((__u64)tcp_sk(sk)->snd_cwnd * CTCP_KEEP_FP) >> (CTCP_PARAM_SHIFT - CTCP_FP_SHIFT);
	__u64 lwnd_fp;

	ca->lwnd = max_t(ca->lwnd / 2, 1U);
	lwnd_fp = (__u64)ca->lwnd << CTCP_FP_SHIFT;
	ca->dwnd_fp = target_fp > lwnd_fp ? target_fp - lwnd_fp : 0;
	return max_t((__u32)min_t(target_fp >> CTCP_FP_SHIFT, 0xffffffffULL), 2U);
}

/* A timeout: the loss window restarts from 1, dwnd is cleared. */
TCPEVAL_OP(void, compound_state, struct sock *sk, __u8 new_state)
{
	struct tcpe_compound *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		ca->lwnd = 1;
		ca->dwnd_fp = 0;
		tcp_sk(sk)->snd_cwnd_cnt = 0;
	}
}

/* Recovery set cwnd = ssthresh = win (1 - beta): keep the split in whole
 * packets, dwnd = cwnd - the loss window (at least 0). */
TCPEVAL_OP(void, compound_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcpe_compound *ca = inet_csk_ca(sk);
	__u32 cwnd = tcp_sk(sk)->snd_cwnd, dwnd;

	if (event == CA_EVENT_COMPLETE_CWR) {
		dwnd = cwnd > ca->lwnd ? cwnd - ca->lwnd : 0;
		ca->dwnd_fp = (__u64)dwnd << CTCP_FP_SHIFT;
		ca->lwnd = cwnd - dwnd;
	}
}

/* Back to the window before the reduction; the undone part goes to the loss
 * window, dwnd kept (the kernel only: the simulator models no undo, and
 * without this the next ACK would set the reduced split again). */
TCPEVAL_OP(__u32, compound_undo_cwnd, struct sock *sk)
{
	struct tcpe_compound *ca = inet_csk_ca(sk);
	__u32 w = undo_to_prior(sk), dwnd = ctcp_dwnd(ca);

	ca->lwnd = w > dwnd ? w - dwnd : 0;
	return w;
}

TCPEVAL_OPS(compound) = {
	.init = (void *)compound_init,
	.cong_avoid = (void *)compound_cong_avoid,
	.ssthresh = (void *)compound_ssthresh,
	.set_state = (void *)compound_state,
	.cwnd_event = (void *)compound_cwnd_event,
	.pkts_acked = (void *)compound_pkts_acked,
	.undo_cwnd = (void *)compound_undo_cwnd,
	.name = "compound",
};
