/* TCP-LP (Kuzmanovic & Knightly, INFOCOM 2003) as the simulator runs it
 * (crates/tcpeval-sim/src/cc/lp.rs with its default parameters, after Linux
 * net/ipv4/tcp_lp.c): Reno underneath; the one-way delay of clean ACKs,
 * smoothed with gain 1/8, above owd_min + delta (owd_max - owd_min) is an
 * early congestion indication (ECI): the first halves cwnd and opens an
 * inference window of 3 RTTs without growth, another inside it sets cwnd to 1;
 * after each ECI owd_min and owd_max are re-centred on the smoothed delay, and
 * the window grows by congestion avoidance only until a timeout. The layer is
 * in tcpeval_lp.h. */
#include "tcpeval_lp.h"

TCPEVAL_OP(void, lp_init, struct sock *sk)
{
	lp_layer_init(sk, inet_csk_ca(sk));
}

TCPEVAL_OP(void, lp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	lp_apply(tcp_sk(sk), lp_on_ack(sk, inet_csk_ca(sk), sample));
}

TCPEVAL_OP(void, lp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcpe_lp *lp = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (lp->within_inference || !cwnd_limited(tp))
		return;
	if (lp->no_slow_start)
		cong_avoid_ai(tp, tp->snd_cwnd, acked); /* the paper's additive increase */
	else
		reno_increase(tp, acked);
}

/* A timeout restores slow start (lp.rs LowPriority::on_timeout). */
TCPEVAL_OP(void, lp_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_LOSS) {
		lp_trace_timeout(tcp_sk(sk));
		((struct tcpe_lp *)inet_csk_ca(sk))->no_slow_start = 0;
	}
}

TCPEVAL_OP(__u32, lp_ssthresh, struct sock *sk)
{
	return max_t(tcp_sk(sk)->snd_cwnd >> 1, 2U);
}

TCPEVAL_OP(__u32, lp_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

TCPEVAL_OPS(lp) = {
	.init = (void *)lp_init,
	.cong_avoid = (void *)lp_cong_avoid,
	.ssthresh = (void *)lp_ssthresh,
	.cwnd_event = (void *)lp_cwnd_event,
	.pkts_acked = (void *)lp_pkts_acked,
	.undo_cwnd = (void *)lp_undo_cwnd,
	.name = "lp",
};
