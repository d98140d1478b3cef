//! Columnar recording. Every column grows by one value per sample (per interval and
//! flow or link), never per packet, so trace memory is O(samples).

use serde::Serialize;

/// Per report interval and flow: payload delivered in order, segments
/// retransmitted and retransmission timeouts in that interval.
#[derive(Serialize, Default)]
pub struct FlowIntervals {
    pub t_ns: Vec<u64>,
    pub flow: Vec<u32>,
    pub delivered_bytes: Vec<u64>,
    pub retransmits: Vec<u64>,
    pub timeouts: Vec<u64>,
}

/// Per trace interval and started flow: window and RTT state.
#[derive(Serialize, Default)]
pub struct FlowTrace {
    pub t_ns: Vec<u64>,
    pub flow: Vec<u32>,
    pub cwnd_pkts: Vec<u32>,
    pub ssthresh_pkts: Vec<u32>,
    pub srtt_ns: Vec<u64>,
    pub inflight_pkts: Vec<u64>,
}

/// Per report interval and monitored link.
#[derive(Serialize, Default)]
pub struct LinkIntervals {
    pub t_ns: Vec<u64>,
    pub link: Vec<String>,
    pub tx_bytes: Vec<u64>,
    pub tx_packets: Vec<u64>,
    pub arrivals: Vec<u64>,
    pub drops: Vec<u64>,
    pub queue_pkts_mean: Vec<f64>,
}

/// Per trace interval and monitored link: instantaneous occupancy.
#[derive(Serialize, Default)]
pub struct QueueTrace {
    pub t_ns: Vec<u64>,
    pub link: Vec<String>,
    pub queue_pkts: Vec<u64>,
    pub queue_bytes: Vec<u64>,
    /// RED's average queue (packets); null for other disciplines.
    pub red_avg_pkts: Vec<Option<f64>>,
}

/// Per report interval and UDP stream: bytes sent by the source and delivered
/// to the sink (wire bytes).
#[derive(Serialize, Default)]
pub struct UdpIntervals {
    pub t_ns: Vec<u64>,
    pub stream: Vec<u32>,
    pub sent_bytes: Vec<u64>,
    pub delivered_bytes: Vec<u64>,
}

/// The values of a flow's counters at the previous report, to compute deltas.
#[derive(Clone, Copy, Default)]
pub struct FlowMark {
    pub delivered_bytes: u64,
    pub retransmits: u64,
    pub timeouts: u64,
}

/// The values of a link's counters at the previous report, to compute deltas.
#[derive(Clone, Copy, Default)]
pub struct LinkMark {
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub arrivals: u64,
    pub drops: u64,
    pub area_pkts: f64,
}
