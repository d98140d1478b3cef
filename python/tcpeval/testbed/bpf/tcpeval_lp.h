/* TCP-LP's early congestion indication (Kuzmanovic & Knightly, INFOCOM 2003)
 * as the simulator's LowPriority layer (crates/tcpeval-sim/src/cc/lp.rs, with
 * its default parameters, after Linux net/ipv4/tcp_lp.c), shared by TCP-LP
 * (tcpeval_lp.c, over Reno) and HSTCP-LP (tcpeval_hstcplp.c, over HighSpeed).
 *
 * The OWD is the ACK's TSval minus the send time of the newest segment it
 * acknowledges: tcp_mstamp - rtt_us (Linux takes the RTT passed to pkts_acked
 * from that segment). Delays in ns, as the simulator keeps them. On the kernel
 * TSval ticks in ms (TCP_TS_HZ) and carries the receiver's timestamp offset
 * unless its namespace has net.ipv4.tcp_timestamps = 2 (the testbed sets it;
 * docs/testbed.md). */
#ifndef TCPEVAL_LP_H
#define TCPEVAL_LP_H
#include "tcpeval_cc.h"

/* Only the simulator's default mode is written (lp.rs LpConfig::default). */
#if !LP_OWD_FILTER || !LP_RECENTER || LP_SLOW_START_AFTER_ECI
#error "tcpeval_lp.h follows lp.rs's defaults: owd_filter, recenter, no slow start after an ECI"
#endif

#define LP_SOWD_SHIFT 3 /* tcp_lp.c keeps sowd << 3 */

struct tcpe_lp {
	__u64 sowd; /* ns << LP_SOWD_SHIFT, 0 before the first sample */
	__u64 owd_min; /* ns, ~0 before the first sample */
	__u64 owd_max;
	__u64 owd_max_rsv; /* a new maximum waits here first (tcp_lp.c) */
	__u64 last_drop; /* ns: the last ECI */
	__u64 inference; /* ns: 3 RTTs */
	__u32 last_delivered; /* tp->delivered at the last ACK */
	__u8 has_drop;
	__u8 within_inference;
	__u8 no_slow_start; /* an ECI since the last timeout */
	__u8 peer_delays_acks; /* an ACK covered two segments */
#ifdef TCPE_TRACE
	__u32 traced; /* samples printed so far */
#endif
};

/* Built with -DTCPE_TRACE (make bpf-trace), the layer prints its first
 * TCPE_TRACE samples and every ECI to the kernel's trace buffer
 * (/sys/kernel/tracing/trace), in us: the evidence for where the kernel's
 * run and the simulator's part (docs/testbed.md). */
#ifdef TCPE_TRACE
#define lp_trace(tp, lp, owd, rtt, acked, eci)                                             \
	do {                                                                               \
		if ((eci) || (lp)->traced < TCPE_TRACE) {                                  \
			(lp)->traced++;                                                    \
			bpf_printk("tcpe_lp t %llu owd %llu min %llu max %llu sowd %llu",  \
				   now_ns(tp) / 1000, (owd) / 1000, (lp)->owd_min / 1000,  \
				   (lp)->owd_max / 1000, ((lp)->sowd >> LP_SOWD_SHIFT) / 1000); \
			bpf_printk("tcpe_lp rtt %llu acked %u cwnd %u eci %d", (rtt) / 1000, \
				   (acked), (tp)->snd_cwnd, (eci));                        \
		}                                                                          \
	} while (0)
#define lp_trace_timeout(tp)                                                               \
	bpf_printk("tcpe_lp t %llu timeout cwnd %u", now_ns(tp) / 1000, (tp)->snd_cwnd)
#else
#define lp_trace(tp, lp, owd, rtt, acked, eci) do { } while (0)
#define lp_trace_timeout(tp) do { } while (0)
#endif

/* The ACK's TSval in ns: the kernel's is in whole ms of the receiver's clock,
 * and the harness's is cut to whole ms the same way (time.rs ts_clock). */
static __always_inline __u64 tsval_ns(const struct tcp_sock *tp)
{
#ifdef __bpf__
	return (__u64)tp->rx_opt.rcv_tsval * 1000000ULL;
#else
	return tp->shim_tsval_ns / 1000000ULL * 1000000ULL;
#endif
}

static __always_inline int has_tsecr(const struct tcp_sock *tp)
{
#ifdef __bpf__
	return tp->rx_opt.rcv_tsecr != 0;
#else
	return tp->shim_has_tsecr;
#endif
}

/* tcp_lp.c tcp_lp_rtt_sample: extremes with the reserve maximum, and EWMA. */
static __always_inline void owd_sample(struct tcpe_lp *lp, __u64 owd)
{
	lp->owd_min = min_t(lp->owd_min, owd);
	if (owd > lp->owd_max) {
		if (owd > lp->owd_max_rsv) {
			lp->owd_max = lp->owd_max_rsv == 0 ? owd : lp->owd_max_rsv;
			lp->owd_max_rsv = owd;
		} else {
			lp->owd_max = owd;
		}
	}
	if (lp->sowd == 0)
		lp->sowd = owd << LP_SOWD_SHIFT;
	else
		lp->sowd = lp->sowd - (lp->sowd >> LP_SOWD_SHIFT) + owd;
}

/* lp.rs LowPriority::measure: a clean ACK (Open, cumulative, not a lone
 * segment's once the peer is seen to delay ACKs) gives the OWD and the RTT
 * of the newest segment it acknowledges; returns 0 when it gives none. */
static __always_inline int measure(struct sock *sk, struct tcpe_lp *lp,
				   const struct ack_sample *sample, __u64 *owd, __u64 *rtt)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u32 newly = tp->delivered - lp->last_delivered;
	__u64 now = now_ns(tp), tx, ts;

	if (!has_tsecr(tp) || sample->rtt_us < 0)
		return 0;
	if (inet_csk(sk)->icsk_ca_state != TCP_CA_Open || sample->pkts_acked == 0 ||
	    newly != sample->pkts_acked)
		return 0;
	if (sample->pkts_acked >= 2)
		lp->peer_delays_acks = 1;
	else if (lp->peer_delays_acks)
		return 0;
	tx = now - (__u64)sample->rtt_us * NSEC_PER_USEC;
	ts = tsval_ns(tp);
	if ((__u64)sample->rtt_us * NSEC_PER_USEC > now || ts < tx)
		return 0;
	*owd = ts - tx;
	*rtt = now - tx;
	return 1;
}

/* What an ACK told the layer (lp.rs Eci). */
enum lp_eci { LP_ECI_NONE, LP_ECI_REDUCE, LP_ECI_COLLAPSE };

static __always_inline void lp_layer_init(struct sock *sk, struct tcpe_lp *lp)
{
	__builtin_memset(lp, 0, sizeof(*lp));
	lp->owd_min = ~0ULL;
	lp->last_delivered = tcp_sk(sk)->delivered;
}

/* tcp_lp.c tcp_lp_pkts_acked, as lp.rs LowPriority::on_ack: update the delay
 * estimates, the inference window, and detect an ECI (the caller sets cwnd). */
static __always_inline enum lp_eci lp_on_ack(struct sock *sk, struct tcpe_lp *lp,
					     const struct ack_sample *sample)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u64 now = now_ns(tp), owd = 0, rtt = 0, threshold;
	int measured = measure(sk, lp, sample, &owd, &rtt);

	lp->last_delivered = tp->delivered;
	if (measured) {
		owd_sample(lp, owd);
		if (rtt > 0)
			lp->inference = LP_INFERENCE_RTTS * rtt;
	}
	lp->within_inference = lp->has_drop && now - lp->last_drop < lp->inference;
	if (lp->owd_min == ~0ULL)
		return LP_ECI_NONE;
	threshold = lp->owd_min;
	if (lp->owd_max > lp->owd_min)
		threshold += (lp->owd_max - lp->owd_min) * LP_DELTA_PPM / 1000000;
	if (lp->sowd >> LP_SOWD_SHIFT <= threshold) {
		if (measured)
			lp_trace(tp, lp, owd, rtt, sample->pkts_acked, 0);
		return LP_ECI_NONE;
	}
	lp_trace(tp, lp, owd, rtt, sample->pkts_acked, 1);
	lp->owd_min = lp->sowd >> LP_SOWD_SHIFT;
	lp->owd_max = lp->sowd >> (LP_SOWD_SHIFT - 1);
	lp->owd_max_rsv = lp->owd_max;
	lp->last_drop = now;
	lp->has_drop = 1;
	lp->no_slow_start = 1;
	return lp->within_inference ? LP_ECI_COLLAPSE : LP_ECI_REDUCE;
}

/* The window an ECI leaves: TCP-LP's half (at least 1), or 1 inside the
 * inference window. */
static __always_inline void lp_apply(struct tcp_sock *tp, enum lp_eci eci)
{
	if (eci == LP_ECI_COLLAPSE)
		tp->snd_cwnd = 1;
	else if (eci == LP_ECI_REDUCE)
		tp->snd_cwnd = max_t(tp->snd_cwnd >> 1, 1U);
}
#endif
