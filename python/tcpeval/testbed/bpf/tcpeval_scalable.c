/* Scalable TCP (Kelly, CCR 2003) as the simulator runs it
 * (crates/tcpeval-sim/src/cc/scalable.rs, after Linux net/ipv4/tcp_scalable.c):
 * +1 packet per min(cwnd, ai_cnt) packets acknowledged, decrease by
 * cwnd >> md_scale on loss. */
#include "tcpeval_cc.h"

TCPEVAL_OP(void, scalable_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cwnd_limited(tp))
		return;
	if (in_slow_start(tp)) {
		acked = slow_start(tp, acked);
		if (!acked)
			return;
	}
	cong_avoid_ai(tp, min_t(tp->snd_cwnd, (__u32)max_t(SCALABLE_AI_CNT, 1)), acked);
}

TCPEVAL_OP(__u32, scalable_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return max_t(tp->snd_cwnd - (tp->snd_cwnd >> SCALABLE_MD_SCALE), 2U);
}

TCPEVAL_OP(__u32, scalable_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

TCPEVAL_OPS(scalable) = {
	.cong_avoid = (void *)scalable_cong_avoid,
	.ssthresh = (void *)scalable_ssthresh,
	.undo_cwnd = (void *)scalable_undo_cwnd,
	.name = "scalable",
};
