/* User-space stand-ins for the kernel structures the BPF congestion controls
 * touch, with the kernel's field names (include/linux/tcp.h,
 * include/net/inet_connection_sock.h, include/net/tcp.h at 6.18), so the same C
 * runs in the agreement test's driver (driver.c). Only the fields used exist. */
#ifndef TCPEVAL_SHIM_H
#define TCPEVAL_SHIM_H
#include <stdint.h>

typedef uint8_t __u8;
typedef uint32_t __u32;
typedef int32_t __s32;
typedef uint64_t __u64;
typedef int64_t __s64;
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

struct sock {
	__u8 sk_unused;
};

struct inet_connection_sock {
	struct sock sk;
	__u8 icsk_ca_state;
	__u64 icsk_ca_priv[13]; /* ICSK_CA_PRIV_SIZE: 104 bytes */
};

struct tcp_sock {
	struct inet_connection_sock inet_conn;
	__u32 snd_cwnd;
	__u32 snd_cwnd_cnt;
	__u32 snd_cwnd_clamp;
	__u32 snd_ssthresh;
	__u32 prior_cwnd;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 mss_cache;
	__u32 delivered; /* packets acked or SACKed, ever */
	__u32 srtt_us; /* << 3, as the kernel keeps it */
	__u32 max_packets_out;
	__u8 is_cwnd_limited;
	__u64 tcp_mstamp; /* us */
	__u64 shim_now_ns; /* the harness's clock (no kernel field) */
	__u64 shim_tsval_ns; /* the ACK's TSval in the harness's ns (rx_opt.rcv_tsval) */
	__u8 shim_has_tsecr; /* the ACK echoed a timestamp */
};

struct ack_sample {
	__u32 pkts_acked;
	__s32 rtt_us;
	__u32 in_flight;
};

enum tcp_ca_event {
	CA_EVENT_TX_START,
	CA_EVENT_CWND_RESTART,
	CA_EVENT_COMPLETE_CWR,
	CA_EVENT_LOSS,
	CA_EVENT_ECN_NO_CE,
	CA_EVENT_ECN_IS_CE,
};

struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, enum tcp_ca_event ev);
	__u32 (*undo_cwnd)(struct sock *sk);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	void (*init)(struct sock *sk);
	char name[16];
};
#endif
