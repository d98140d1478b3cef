/* HighSpeed TCP (RFC 3649) as the simulator runs it
 * (crates/tcpeval-sim/src/cc/highspeed.rs, after Linux net/ipv4/tcp_highspeed.c):
 * Reno up to 38 packets; above, +a(w) per window's worth of ACKs (Linux adds
 * a(w) once per ACK, not per packet) and a decrease by b(w), both from the
 * table of RFC 3649 appendix B (tcpeval_hstcp.h). */
#include "tcpeval_hstcp.h"

struct tcpe_hstcp {
	__u32 ai; /* row: hstcp_cwnd[ai - 1] < cwnd <= hstcp_cwnd[ai] */
};

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
	if (in_slow_start(tp))
		slow_start(tp, acked);
	else
		hstcp_increase(tp, &ca->ai);
}

TCPEVAL_OP(__u32, hstcp_ssthresh, struct sock *sk)
{
	return hstcp_ssthresh_at(tcp_sk(sk), ((struct tcpe_hstcp *)inet_csk_ca(sk))->ai);
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
