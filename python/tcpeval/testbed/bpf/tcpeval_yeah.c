/* YeAH-TCP (Baiocchi, Castellani, Vacirca, PFLDnet 2007) as the simulator runs
 * it (crates/tcpeval-sim/src/cc/yeah.rs, after Linux net/ipv4/tcp_yeah.c): fast
 * mode grows like Scalable; once per RTT the queue Q = cwnd (RTT - baseRTT) /
 * RTT is estimated as in Vegas, and with Q > alpha or a queueing delay above
 * baseRTT / phy it goes slow (Reno), removing Q at once when Q > alpha. A loss
 * removes the last Q (between cwnd >> delta and cwnd / 2), or half after rho
 * slow rounds. RTTs in us + 1, as Vegas.
 *
 * Linux also lowers snd_cwnd_clamp to 2^32 / 128 at init, a field BPF may not
 * write (net/ipv4/bpf_tcp_ca.c); windows of 33 million packets are far beyond
 * the testbed, so nothing else changes. */
#include "tcpeval_cc.h"

struct tcpe_yeah {
	struct tcpe_round_rtt r;
	__u32 last_q;
	__u32 doing_reno_now; /* slow rounds in a row */
	__u32 reno_count;
	__u32 fast_count;
};

/* The once-per-RTT decision (Linux tcp_yeah_cong_avoid's Vegas part). */
static __always_inline void yeah_per_rtt(struct tcp_sock *tp, struct tcpe_yeah *ca)
{
	__u64 rtt = ca->r.min_rtt, base = ca->r.base_rtt;
	__u64 delay = rtt > base ? rtt - base : 0;
	__u32 queue = (__u32)((__u64)tp->snd_cwnd * delay / max_t(rtt, 1ULL));

	if (queue > YEAH_ALPHA || delay > base / YEAH_PHY) {
		if (queue > YEAH_ALPHA && tp->snd_cwnd > ca->reno_count) {
			/* Precautionary decongestion. */
			__u32 reduction = min_t(queue / YEAH_GAMMA, tp->snd_cwnd >> YEAH_EPSILON);

			tp->snd_cwnd = max_t(tp->snd_cwnd - reduction, ca->reno_count);
			tp->snd_ssthresh = tp->snd_cwnd;
		}
		ca->reno_count = ca->reno_count <= 2 ? max_t(tp->snd_cwnd >> 1, 2U)
						     : ca->reno_count + 1;
		ca->doing_reno_now = min_t(ca->doing_reno_now + 1, 0xffffffU);
	} else {
		if (++ca->fast_count > YEAH_ZETA) {
			ca->reno_count = 2;
			ca->fast_count = 0;
		}
		ca->doing_reno_now = 0;
	}
	ca->last_q = queue;
}

TCPEVAL_OP(void, yeah_init, struct sock *sk)
{
	struct tcpe_yeah *ca = inet_csk_ca(sk);

	__builtin_memset(ca, 0, sizeof(*ca));
	ca->r.base_rtt = 0x7fffffff;
	ca->reno_count = 2;
	round_rtt_next(tcp_sk(sk), &ca->r);
}

TCPEVAL_OP(void, yeah_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	round_rtt_sample(&((struct tcpe_yeah *)inet_csk_ca(sk))->r, sample);
}

TCPEVAL_OP(void, yeah_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Open)
		round_rtt_next(tcp_sk(sk), &((struct tcpe_yeah *)inet_csk_ca(sk))->r);
}

TCPEVAL_OP(void, yeah_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcpe_yeah *ca = inet_csk_ca(sk);

	if (event == CA_EVENT_TX_START) {
		ca->r.base_rtt = 0x7fffffff;
		round_rtt_next(tcp_sk(sk), &ca->r);
	}
}

TCPEVAL_OP(void, yeah_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_yeah *ca = inet_csk_ca(sk);

	if (!cwnd_limited(tp))
		return;
	if (in_slow_start(tp))
		acked = slow_start(tp, acked);
	if (acked) {
		__u32 w = tp->snd_cwnd;

		if (!ca->doing_reno_now)
			w = min_t(w, (__u32)YEAH_SCALABLE_AI_CNT);
		cong_avoid_ai(tp, w, acked);
	}
	/* Linux runs this in every state in which the window grows. */
	if (seq_after(ack, ca->r.beg_snd_nxt)) {
		if (ca->r.cnt_rtt > 2)
			yeah_per_rtt(tp, ca);
		round_rtt_next(tp, &ca->r);
	}
}

TCPEVAL_OP(__u32, yeah_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tcpe_yeah *ca = inet_csk_ca(sk);
	__u32 half = max_t(tp->snd_cwnd >> 1, 2U);
	__u32 reduction = half;

	if (ca->doing_reno_now < YEAH_RHO)
		reduction = max_t(min_t(ca->last_q, half), tp->snd_cwnd >> YEAH_DELTA);
	ca->fast_count = 0;
	ca->reno_count = max_t(ca->reno_count >> 1, 2U);
	return max_t(tp->snd_cwnd > reduction ? tp->snd_cwnd - reduction : 0, 2U);
}

TCPEVAL_OP(__u32, yeah_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

TCPEVAL_OPS(yeah) = {
	.init = (void *)yeah_init,
	.cong_avoid = (void *)yeah_cong_avoid,
	.ssthresh = (void *)yeah_ssthresh,
	.set_state = (void *)yeah_state,
	.cwnd_event = (void *)yeah_cwnd_event,
	.pkts_acked = (void *)yeah_pkts_acked,
	.undo_cwnd = (void *)yeah_undo_cwnd,
	.name = "yeah",
};
