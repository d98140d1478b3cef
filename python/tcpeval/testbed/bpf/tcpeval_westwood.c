/* TCP Westwood+ (Mascolo et al., MobiCom 2001; Grieco & Mascolo, CCR 2004) as
 * the simulator runs it (crates/tcpeval-sim/src/cc/westwood.rs, after Linux
 * net/ipv4/tcp_westwood.c): Reno's growth and ssthresh; a bandwidth estimate,
 * bytes acked per jiffy over windows of max(RTT, 50 ms), low-pass filtered
 * twice with gain 1/8; when recovery ends, cwnd = ssthresh =
 * max(BWE x RTTmin / MSS, 2); at a timeout ssthresh the same and RTTmin is
 * taken afresh. Linux's u32 arithmetic and units (jiffies, bytes per jiffy),
 * with a jiffy of 1 ms, the simulator's HZ = 1000 (this kernel's HZ is 250).
 *
 * Linux does the window and the byte count in in_ack_event, before
 * pkts_acked stores the ACK's RTT (6.6; later kernels swapped the two); here
 * all of it is in pkts_acked, in 6.6's order, as the simulator does. The bytes
 * are the packets the ACK delivered (tp->delivered, acked or SACKed) x
 * mss_cache, which is what Linux's snd_una and duplicate-ACK accounting
 * (westwood_acked_count) converges to. */
#include "tcpeval_cc.h"

/* tcp_westwood.c TCP_WESTWOOD_INIT_RTT (20 s) in 1 ms jiffies. */
#define WESTWOOD_INIT_RTT (20 * 1000)

struct tcpe_westwood {
	__u32 bw_ns_est; /* bytes per jiffy, first filter stage */
	__u32 bw_est; /* bytes per jiffy, the estimate */
	__u32 rtt_win_sx; /* jiffies: the sampling window's start */
	__u32 bk; /* bytes acked in this window */
	__u32 rtt; /* jiffies: the last RTT sample */
	__u32 rtt_min; /* jiffies */
	__u32 delivered; /* tp->delivered at the last ACK */
	__u32 reset_rtt_min;
};

/* The ACK's time in 1 ms jiffies (tcp_jiffies32 at the simulator's HZ). */
static __always_inline __u32 jiffies_now(const struct tcp_sock *tp)
{
	return (__u32)(now_ns(tp) / 1000000ULL);
}

/* tcp_westwood.c westwood_do_filter. */
static __always_inline __u32 do_filter(__u32 a, __u32 b)
{
	return (7 * a + b) >> 3;
}

/* tcp_westwood.c westwood_update_window and westwood_filter. */
static __always_inline void update_window(struct tcpe_westwood *w, __u32 now)
{
	__u32 delta = now - w->rtt_win_sx;
	__u32 sample;

	if (!w->rtt || delta <= max_t(w->rtt, (__u32)WESTWOOD_RTT_WINDOW_MIN))
		return;
	sample = w->bk / delta;
	if (w->bw_ns_est == 0 && w->bw_est == 0) {
		w->bw_ns_est = sample;
		w->bw_est = sample;
	} else {
		w->bw_ns_est = do_filter(w->bw_ns_est, sample);
		w->bw_est = do_filter(w->bw_est, w->bw_ns_est);
	}
	w->bk = 0;
	w->rtt_win_sx = now;
}

/* tcp_westwood.c tcp_westwood_bw_rttmin. */
static __always_inline __u32 bw_rttmin(const struct tcp_sock *tp, const struct tcpe_westwood *w)
{
	return max_t(w->bw_est * w->rtt_min / max_t(tp->mss_cache, 1U), 2U);
}

TCPEVAL_OP(void, westwood_init, struct sock *sk)
{
	struct tcpe_westwood *w = inet_csk_ca(sk);
	const struct tcp_sock *tp = tcp_sk(sk);

	w->bw_ns_est = 0;
	w->bw_est = 0;
	w->bk = 0;
	w->rtt = WESTWOOD_INIT_RTT;
	w->rtt_min = WESTWOOD_INIT_RTT;
	w->reset_rtt_min = 1;
	w->rtt_win_sx = jiffies_now(tp);
	w->delivered = tp->delivered;
}

TCPEVAL_OP(void, westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcpe_westwood *w = inet_csk_ca(sk);
	const struct tcp_sock *tp = tcp_sk(sk);

	/* tcp_westwood_ack: window, bytes and RTTmin with the previous RTT. */
	update_window(w, jiffies_now(tp));
	w->bk += (tp->delivered - w->delivered) * tp->mss_cache;
	w->delivered = tp->delivered;
	w->rtt_min = w->reset_rtt_min ? w->rtt : min_t(w->rtt_min, w->rtt);
	w->reset_rtt_min = 0;
	/* tcp_westwood_pkts_acked: usecs_to_jiffies rounds up. */
	if (sample->rtt_us > 0)
		w->rtt = ((__u32)sample->rtt_us + 999) / 1000;
}

TCPEVAL_OP(void, westwood_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcpe_westwood *w = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (event == CA_EVENT_COMPLETE_CWR) {
		tp->snd_ssthresh = bw_rttmin(tp, w);
		tp->snd_cwnd = tp->snd_ssthresh;
	} else if (event == CA_EVENT_LOSS) {
		tp->snd_ssthresh = bw_rttmin(tp, w);
		w->reset_rtt_min = 1;
	}
}

/* tcp_cong.c tcp_reno_cong_avoid. */
TCPEVAL_OP(void, westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (cwnd_limited(tp))
		reno_increase(tp, acked);
}

/* tcp_cong.c tcp_reno_ssthresh. */
TCPEVAL_OP(__u32, westwood_ssthresh, struct sock *sk)
{
	return max_t(tcp_sk(sk)->snd_cwnd >> 1, 2U);
}

TCPEVAL_OP(__u32, westwood_undo_cwnd, struct sock *sk)
{
	return undo_to_prior(sk);
}

TCPEVAL_OPS(westwood) = {
	.init = (void *)westwood_init,
	.cong_avoid = (void *)westwood_cong_avoid,
	.ssthresh = (void *)westwood_ssthresh,
	.cwnd_event = (void *)westwood_cwnd_event,
	.pkts_acked = (void *)westwood_pkts_acked,
	.undo_cwnd = (void *)westwood_undo_cwnd,
	.name = "westwood",
};
