/* HSTCP-LP (Kuzmanovic, Knightly & Cottrell, PFLDnet 2004) as the simulator
 * runs it (crates/tcpeval-sim/src/cc/hstcp_lp.rs with its default parameters):
 * TCP-LP's early congestion indication and inference window (tcpeval_lp.h)
 * over HighSpeed TCP (tcpeval_hstcp.h): HighSpeed's growth and loss response,
 * TCP-LP's halving on a first ECI (eci_decrease = "half", the default; the
 * other value is not written) and cwnd 1 on another inside the inference
 * window. */
#include "tcpeval_lp.h"
#include "tcpeval_hstcp.h"

struct tcpe_hstcp_lp {
	struct tcpe_lp lp;
	__u32 ai; /* HighSpeed's row of the last increase */
};

TCPEVAL_OP(void, hstcp_lp_init, struct sock *sk)
{
	struct tcpe_hstcp_lp *ca = inet_csk_ca(sk);

	lp_layer_init(sk, &ca->lp);
	ca->ai = 0;
}

TCPEVAL_OP(void, hstcp_lp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcpe_hstcp_lp *ca = inet_csk_ca(sk);

	lp_apply(tcp_sk(sk), lp_on_ack(sk, &ca->lp, sample));
}

/* lp.rs LowPriorityCc::cong_avoid over hstcp_lp.rs HsBase: no growth inside
 * the inference window; after an ECI HighSpeed's increase alone (no slow start). */
TCPEVAL_OP(void, hstcp_lp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcpe_hstcp_lp *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (ca->lp.within_inference || !cwnd_limited(tp))
		return;
	if (!ca->lp.no_slow_start && in_slow_start(tp))
		slow_start(tp, acked);
	else
		hstcp_increase(tp, &ca->ai);
}

TCPEVAL_OP(void, hstcp_lp_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_LOSS) {
		lp_trace_timeout(tcp_sk(sk));
		((struct tcpe_hstcp_lp *)inet_csk_ca(sk))->lp.no_slow_start = 0;
	}
}

TCPEVAL_OP(__u32, hstcp_lp_ssthresh, struct sock *sk)
{
	return hstcp_ssthresh_at(tcp_sk(sk), ((struct tcpe_hstcp_lp *)inet_csk_ca(sk))->ai);
}

TCPEVAL_OP(__u32, hstcp_lp_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

/* Registered as hstcplp, the simulator's alias: a kernel congestion control's
 * name may hold letters, digits, '_' and '.' only (kernel/bpf/syscall.c
 * bpf_obj_name_cpy, which net/ipv4/bpf_tcp_ca.c applies to it). */
TCPEVAL_OPS(hstcplp) = {
	.init = (void *)hstcp_lp_init,
	.cong_avoid = (void *)hstcp_lp_cong_avoid,
	.ssthresh = (void *)hstcp_lp_ssthresh,
	.cwnd_event = (void *)hstcp_lp_cwnd_event,
	.pkts_acked = (void *)hstcp_lp_pkts_acked,
	.undo_cwnd = (void *)hstcp_lp_undo_cwnd,
	.name = "hstcplp",
};
