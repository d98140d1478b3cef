//! Congestion control: one small trait shaped like Linux `struct tcp_congestion_ops`
//! (include/net/tcp.h), one file per algorithm, enum dispatch (no heap, no vtable).
//!
//! The sender owns loss detection and recovery (RFC 5681/6582/6675, PRR) and calls
//! the algorithm at the same points Linux does:
//! * `pkts_acked` for every ACK that delivers data, with the RTT sample;
//! * `cong_avoid` when the window may grow (open state, cwnd-limited);
//! * `ssthresh` once on entering recovery or loss; it returns the new value, as
//!   ns-3's `GetSsThresh` does, instead of setting it;
//! * `set_state` on every state change, `cwnd_event` for other events.
//!
//! Windows are in packets (segments), as in Linux.

use crate::time::Time;
use params::NoParams;
use schemars::schema::RootSchema;
use serde_json::{Map, Value};

pub mod ack_aggregation;
pub mod bbr;
pub mod bbr3;
pub mod bic;
pub mod compound;
pub mod cubic;
pub mod dctcp;
pub mod fast;
pub mod harness;
pub mod highspeed;
pub mod hstcp_lp;
pub mod htcp;
pub mod illinois;
pub mod lp;
pub mod minmax;
pub mod params;
pub mod reno;
pub mod scalable;
pub mod vegas;
pub mod westwood;
pub mod yeah;

pub use bbr::Bbr;
pub use bbr3::Bbr3;
pub use bic::Bic;
pub use compound::Compound;
pub use cubic::Cubic;
pub use dctcp::Dctcp;
pub use fast::Fast;
pub use highspeed::HighSpeed;
pub use hstcp_lp::HstcpLp;
pub use htcp::Htcp;
pub use illinois::Illinois;
pub use lp::Lp;
pub use reno::Reno;
pub use scalable::Scalable;
pub use vegas::Vegas;
pub use westwood::Westwood;
pub use yeah::Yeah;

/// Linux TCP_INFINITE_SSTHRESH: ssthresh before the first loss.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The sender state a congestion-control module may read and write: the subset of
/// Linux `struct tcp_sock` that the modules touch.
#[derive(Clone, Debug)]
pub struct CcState {
    pub now: Time,
    pub cwnd: u32,
    pub ssthresh: u32,
    /// Linux `snd_cwnd_cnt`: fractional window growth, in acknowledged packets.
    pub cwnd_cnt: u32,
    /// Upper bound on cwnd (Linux `snd_cwnd_clamp`).
    pub cwnd_clamp: u32,
    pub mss: u32,
    /// Smoothed RTT and the lowest RTT seen (0 until the first sample).
    pub srtt: Time,
    pub min_rtt: Time,
    /// The handshake's RTT: a Linux client's srtt once the SYN-ACK is in,
    /// before any data is acknowledged (0: unknown). The simulator has no
    /// handshake; build.rs sets the path's base RTT, the SYN's RTT on an idle
    /// path. Read only through `srtt_or_handshake`.
    pub handshake_rtt: Time,
    /// Packets in flight as Linux counts them.
    pub in_flight: u32,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Total packets delivered (cumulatively acked or SACKed) so far.
    pub delivered: u64,
    /// Of those, packets the receiver reported as CE-marked (Linux
    /// `tp->delivered_ce`, counted from ECE; read by DCTCP and BBRv3).
    pub delivered_ce: u64,
    /// When the last of them was delivered (Linux `tp->delivered_mstamp`).
    pub delivered_time: Time,
    /// Total packets marked lost so far (Linux `tp->lost`; BBR's long-term
    /// sampler reads it).
    pub lost: u64,
    /// Whether the flow has been using its window (Linux `tcp_is_cwnd_limited`).
    pub cwnd_limited: bool,
    /// Pacing rate requested by the algorithm, bytes per second (0 = no pacing).
    pub pacing_rate: f64,
    /// Current congestion state (Linux `icsk_ca_state`).
    pub ca_state: CaState,
    /// When the sender last transmitted (Linux `lsndtime`).
    pub last_send_time: Time,
    /// Set by the algorithm to mark the connection application-limited from
    /// here on (Linux: BBR writes `tp->app_limited` in PROBE_RTT so its low
    /// rate samples cannot lower the bandwidth filter); the sender marks its
    /// rate sampler and clears this after the hook.
    pub mark_app_limited: bool,
    /// How window growth is counted: per packet (today) or per ACK (the
    /// stack's era, crate::stack).
    pub growth: Growth,
}

/// How the kernel counts window growth: the switch between eras that most
/// changes throughput with delayed ACKs (issue 28). With one ACK per two
/// packets, per-ACK counting grows half as fast in packets acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Growth {
    /// Linux 4.0 on: `tcp_slow_start` and `tcp_cong_avoid_ai(tp, w, acked)`
    /// count the packets an ACK delivers (the "stretch ACK" series of 4.0,
    /// "tcp: fix the timid additive increase on stretch ACKs"); slow start
    /// while cwnd < ssthresh (`tcp_in_slow_start`, 4.3).
    #[default]
    PerPacket,
    /// Linux 2.4 and 2.6 without ABC (`sysctl_tcp_abc` = 0, the default in
    /// 2.6.22's net/ipv4/tcp_input.c): `cong_avoid` runs once per ACK; slow start
    /// adds one packet per ACK (2.4.21 `tcp_cong_avoid`, 2.6.22 `tcp_slow_start`
    /// in net/ipv4/tcp_cong.c); congestion avoidance adds one to snd_cwnd_cnt per
    /// ACK and one packet when it was already >= w, i.e. after w + 1 ACKs; slow
    /// start while cwnd <= ssthresh.
    PerAck,
    /// Linux 3.12 to 3.19: slow start counts packets (`tcp_slow_start(tp,
    /// acked)`, "tcp: properly handle stretch acks in slow start", 3.12, cwnd
    /// capped at ssthresh + 1), congestion avoidance still counts ACKs
    /// (`tcp_cong_avoid_ai(tp, w)`); slow start while cwnd <= ssthresh.
    PerAckAvoidance,
}

impl Growth {
    /// The credit one ACK delivering `acked` packets gives a growth counter an
    /// algorithm keeps itself (CUBIC's Reno-friendly ack_cnt): the packets, or
    /// one per ACK in the eras that called `cong_avoid` per ACK.
    pub fn credit(self, acked: u32) -> u32 {
        match self {
            Growth::PerPacket => acked,
            Growth::PerAck | Growth::PerAckAvoidance => 1,
        }
    }
}

impl CcState {
    pub fn new(initial_cwnd: u32, mss: u32) -> Self {
        CcState {
            now: 0,
            cwnd: initial_cwnd,
            ssthresh: INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            cwnd_clamp: u32::MAX,
            mss,
            srtt: 0,
            min_rtt: 0,
            handshake_rtt: 0,
            in_flight: 0,
            snd_una: 0,
            snd_nxt: 0,
            delivered: 0,
            delivered_ce: 0,
            delivered_time: 0,
            lost: 0,
            cwnd_limited: true,
            pacing_rate: 0.0,
            ca_state: CaState::Open,
            last_send_time: 0,
            mark_app_limited: false,
            growth: Growth::PerPacket,
        }
    }

    /// srtt, or before the first data RTT sample the handshake's: what Linux's
    /// `tp->srtt_us` holds at that time (BBR's first pacing rate, the pacing
    /// term of TCP Small Queues). 0 if neither is known.
    pub fn srtt_or_handshake(&self) -> Time {
        if self.srtt > 0 {
            self.srtt
        } else {
            self.handshake_rtt
        }
    }

    /// Linux `tcp_in_slow_start`: strictly below ssthresh (4.3 on); before,
    /// the modules tested `snd_cwnd <= snd_ssthresh`.
    pub fn in_slow_start(&self) -> bool {
        match self.growth {
            Growth::PerPacket => self.cwnd < self.ssthresh,
            Growth::PerAck | Growth::PerAckAvoidance => self.cwnd <= self.ssthresh,
        }
    }
}

/// One ACK's delivery information (Linux `struct ack_sample`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    /// Packets newly delivered by this ACK (cumulatively acked plus newly SACKed).
    pub acked: u32,
    /// RTT sample from this ACK, if any.
    pub rtt: Option<Time>,
    /// Packets in flight before this ACK was processed.
    pub in_flight: u32,
    /// The ACK's timestamps (RFC 7323): the receiver's clock when it sent the
    /// ACK and the sender's clock it echoes. Clocks are synchronised in the
    /// simulator, so `rcv_tsval - rcv_tsecr` is the forward one-way delay of the
    /// echoed segment plus the receiver's ACK delay (what TCP-LP measures).
    pub rcv_tsval: Time,
    pub rcv_tsecr: Option<Time>,
    /// When the newest segment this ACK cumulatively acknowledged was sent
    /// (None when none was, or retransmitted data was acknowledged): Linux's
    /// `ca_rtt_us` reaches back to it on such an ACK (TCP-LP's one-way delay).
    pub newest_acked_tx: Option<Time>,
}

/// A delivery-rate sample (Linux `struct rate_sample`, net/ipv4/tcp_rate.c; the
/// algorithm of draft-cheng-iccrg-delivery-rate-estimation): packets delivered
/// over the longer of the send and ACK intervals of the flight they belong to.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// Packets delivered in the sampling interval (0 if no valid sample).
    pub delivered: u64,
    /// Sampling interval; 0 if the sample is invalid (shorter than min RTT).
    pub interval: Time,
    /// Whether the flight was limited by the application rather than the network.
    pub is_app_limited: bool,
    /// Packets newly delivered (acked or SACKed) by this ACK.
    pub acked_sacked: u32,
    /// Packets newly marked lost on this ACK.
    pub losses: u32,
    /// Packets delivered in the sampling interval that were CE-marked (BBRv3's
    /// `rs->delivered_ce`; 0 without ECN).
    pub delivered_ce: u64,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u32,
    /// Packets in flight when the sampled packet was sent, itself included
    /// (BBRv3's `rs->tx_in_flight`, from `tcp_set_tx_in_flight`).
    pub tx_in_flight: u32,
    /// Packets marked lost since the sampled packet was sent (BBRv3's
    /// `rs->lost = tp->lost - scb->tx.lost`).
    pub lost: u64,
    /// Total delivered when the sampled packet was sent (Linux `prior_delivered`).
    pub prior_delivered: u64,
    /// RTT sample from this ACK, if any.
    pub rtt: Option<Time>,
}

impl RateSample {
    /// Delivery rate in packets per second, if the sample is valid.
    pub fn rate_pps(&self) -> Option<f64> {
        (self.interval > 0 && self.delivered > 0).then(|| self.delivered as f64 * 1e9 / self.interval as f64)
    }
}

/// Linux `enum tcp_ca_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    Open,
    Disorder,
    Cwr,
    Recovery,
    Loss,
}

/// Linux `enum tcp_ca_event` (the ones the simulator raises).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// Reduction finished (end of recovery), cwnd set to ssthresh.
    CompleteCwr,
    /// Retransmission timeout.
    Loss,
    /// First transmission when nothing was in flight.
    TxStart,
    /// A data packet arrived at the receiver with CE set / without CE after
    /// one with it (Linux CA_EVENT_ECN_IS_CE / CA_EVENT_ECN_NO_CE, raised on
    /// the receiving side; DCTCP's ACK state machine uses them).
    EcnIsCe,
    EcnNoCe,
}

/// The congestion-control hooks. Only `ssthresh` and `cong_avoid` are required.
pub trait CongestionOps {
    /// Called once when the connection starts.
    fn init(&mut self, _s: &mut CcState) {}
    /// The flow's own random stream, before `init`: Linux draws from
    /// `get_random_u32_below` per socket, so no two flows draw alike. The
    /// engine derives `seed` from the run's seed and the flow; algorithms that
    /// draw nothing ignore it.
    fn seed_random(&mut self, _seed: u64) {}
    /// New ssthresh after a loss (called once per loss episode).
    fn ssthresh(&mut self, s: &CcState) -> u32;
    /// Grow the window: `acked` packets were newly delivered.
    fn cong_avoid(&mut self, s: &mut CcState, acked: u32);
    /// Whether `cong_avoid` waits until the window is in use (the stack's
    /// `tcp::sender::CwndTest`, recorded in `s.cwnd_limited` before this is
    /// asked). Linux's modules test `tcp_is_cwnd_limited` first, and so does
    /// every algorithm here, except those whose round update must run each
    /// round: Vegas in its own branch (tcp_vegas.c at 2.6.22 and today tests
    /// only on its Reno paths; 2.6.11's `tcp_ack` skipped the test for Vegas),
    /// Illinois (its alpha/beta update comes before the test) and FAST. Those
    /// read `s.cwnd_limited` themselves where their growth waits.
    fn waits_for_window_use(&self, _s: &CcState) -> bool {
        true
    }
    fn pkts_acked(&mut self, _s: &mut CcState, _sample: &AckSample) {}
    fn set_state(&mut self, _s: &mut CcState, _state: CaState) {}
    fn cwnd_event(&mut self, _s: &mut CcState, _event: CaEvent) {}
    /// Every ACK of an ECN flow, after snd_una moved and before the packets
    /// it acknowledges cumulatively are counted delivered (Linux
    /// `in_ack_event`, called from `tcp_in_ack_event` in `tcp_ack`); `ece`:
    /// the ACK carried ECE. Used by DCTCP.
    fn in_ack_event(&mut self, _s: &mut CcState, _ece: bool) {}
    /// Full control of cwnd and pacing on every ACK (Linux `cong_control`, used by
    /// BBR). Return true to replace the sender's own PRR / `cong_avoid` step.
    fn cong_control(&mut self, _s: &mut CcState, _rs: &RateSample) -> bool {
        false
    }
    /// The algorithm sets cwnd itself through `cong_control`, so the sender must
    /// not set cwnd = ssthresh when recovery ends (Linux `tcp_end_cwnd_reduction`).
    fn owns_window(&self) -> bool {
        false
    }
    /// The floor of Linux 2.6's rate-halving (`tcp_cwnd_min` in
    /// net/ipv4/tcp_input.c at 2.6.22: the module's `min_cwnd` if it has one,
    /// else ssthresh), asked once ssthresh is set; only the rate-halving stacks
    /// use it (tcp::recovery).
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        s.ssthresh
    }
    /// The window to put back when a reduction is undone (Linux `undo_cwnd`,
    /// tcp::undo); None: the stack's default (max(cwnd, 2 ssthresh) to 3.16,
    /// Reno's max(cwnd, cwnd before the reduction) today, which tcp::undo keeps).
    fn undo_cwnd(&mut self, _s: &CcState) -> Option<u32> {
        None
    }
}

/// How BIC and CUBIC put the window back on an undo (`bictcp_undo_cwnd`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BicUndo {
    /// max(cwnd, last_max_cwnd): 2.6.22's tcp_bic.c and tcp_cubic.c.
    LastMax,
    /// max(cwnd, loss_cwnd), the window at the last loss: 3.16.0's.
    LossCwnd,
    /// None of its own, the stack's: Reno's (`tcp_reno_undo_cwnd`) in
    /// today's tcp_bic.c and tcp_cubic.c; max(cwnd, 2 ssthresh) for the BIC
    /// built into 2.6.11's tcp_input.c (`tcp_undo_cwr`), which linux-2.4 runs.
    #[default]
    Stack,
}

impl BicUndo {
    pub fn window(self, cwnd: u32, last_max_cwnd: u32, loss_cwnd: u32) -> Option<u32> {
        match self {
            BicUndo::LastMax => Some(cwnd.max(last_max_cwnd)),
            BicUndo::LossCwnd => Some(cwnd.max(loss_cwnd)),
            BicUndo::Stack => None,
        }
    }
}

/// Linux's `tcp_update_pacing_rate` (net/ipv4/tcp_input.c, 4.13 to today), in
/// bytes per ns: max(cwnd, `packets`) x mss / srtt, times
/// `tcp_pacing_ss_ratio` (200%) while cwnd < ssthresh / 2 and
/// `tcp_pacing_ca_ratio` (120%) after. Linux takes `packets_out`; 0 before the
/// first RTT sample.
pub fn linux_pacing_bytes_per_ns(s: &CcState, packets: u32) -> f64 {
    pacing_bytes_per_ns_at(s, packets, s.srtt)
}

/// The same rate with `srtt` in place of the flow's (tcp::tsq: the handshake's
/// RTT before the first data sample).
pub fn pacing_bytes_per_ns_at(s: &CcState, packets: u32, srtt: Time) -> f64 {
    if srtt == 0 {
        return 0.0;
    }
    let ratio = if s.cwnd < s.ssthresh / 2 { 2.0 } else { 1.2 };
    ratio * f64::from(s.cwnd.max(packets)) * f64::from(s.mss) / srtt as f64
}

/// Linux 2.6 `tcp_reno_min_cwnd` (net/ipv4/tcp_cong.c at 2.6.22): half of
/// ssthresh, the `min_cwnd` of Reno and of the modules that took Reno's
/// (HighSpeed, Scalable, Vegas, Illinois, YeAH, LP at 2.6.22).
pub fn reno_min_cwnd(s: &CcState) -> u32 {
    s.ssthresh / 2
}

/// Linux `tcp_slow_start`: grow by one packet per packet acked, stopping at
/// ssthresh; returns the acked packets left over for congestion avoidance.
/// Earlier eras (see `Growth`) leave nothing over.
pub fn slow_start(s: &mut CcState, acked: u32) -> u32 {
    match s.growth {
        Growth::PerPacket => {
            let cwnd = s.cwnd.saturating_add(acked).min(s.ssthresh);
            let left = acked - (cwnd - s.cwnd).min(acked);
            s.cwnd = cwnd.min(s.cwnd_clamp);
            left
        }
        Growth::PerAck => {
            slow_start_per_ack(s);
            0
        }
        Growth::PerAckAvoidance => {
            let cwnd = s.cwnd.saturating_add(acked).min(s.ssthresh.saturating_add(1));
            s.cwnd = cwnd.min(s.cwnd_clamp);
            0
        }
    }
}

/// Linux 2.6.22 `tcp_slow_start` without ABC (net/ipv4/tcp_cong.c): add cwnd
/// to snd_cwnd_cnt and one packet per cwnd in it, i.e. one packet per ACK
/// (more only if a reduction left snd_cwnd_cnt high).
fn slow_start_per_ack(s: &mut CcState) {
    s.cwnd_cnt = s.cwnd_cnt.saturating_add(s.cwnd);
    while s.cwnd_cnt >= s.cwnd {
        s.cwnd_cnt -= s.cwnd;
        if s.cwnd < s.cwnd_clamp {
            s.cwnd += 1;
        }
    }
}

/// The acknowledged packets left for congestion avoidance: all of them outside
/// slow start, what slow start did not use inside it (Linux's pattern of calling
/// `tcp_slow_start` and continuing with its return value).
pub fn after_slow_start(s: &mut CcState, acked: u32) -> u32 {
    if s.in_slow_start() {
        slow_start(s, acked)
    } else {
        acked
    }
}

/// Linux `tcp_cong_avoid_ai`: one packet per `w` packets acked, counting whole
/// packets (not ACKs), so delayed ACKs do not slow growth. In the per-ACK eras
/// (`Growth`) it is the older `tcp_cong_avoid_ai(tp, w)`, one packet per w + 1 ACKs.
pub fn cong_avoid_ai(s: &mut CcState, w: u32, acked: u32) {
    if s.growth != Growth::PerPacket {
        cong_avoid_ai_per_ack(s, w);
        return;
    }
    let w = w.max(1);
    if s.cwnd_cnt >= w {
        s.cwnd_cnt = 0;
        s.cwnd += 1;
    }
    s.cwnd_cnt += acked;
    if s.cwnd_cnt >= w {
        let delta = s.cwnd_cnt / w;
        s.cwnd_cnt -= delta * w;
        s.cwnd += delta;
    }
    s.cwnd = s.cwnd.min(s.cwnd_clamp);
}

/// Linux before 4.0 (`tcp_cong_avoid_ai(tp, w)` in net/ipv4/tcp_cong.c, and
/// the same test inlined in 2.4.21's `tcp_cong_avoid` and 2.6.22's
/// `tcp_reno_cong_avoid` and `bictcp_cong_avoid`): per ACK, +1 once snd_cwnd_cnt
/// has reached w, else snd_cwnd_cnt + 1.
fn cong_avoid_ai_per_ack(s: &mut CcState, w: u32) {
    if s.cwnd_cnt >= w {
        if s.cwnd < s.cwnd_clamp {
            s.cwnd += 1;
        }
        s.cwnd_cnt = 0;
    } else {
        s.cwnd_cnt += 1;
    }
}

/// One algorithm of the registry: its scenario names (its own first, then the
/// aliases), its typed config struct (`params` parses into it) and constructor.
pub struct Algorithm {
    pub names: &'static [&'static str],
    /// Each parameter with its default, from the config struct.
    pub params: fn() -> Map<String, Value>,
    /// The JSON Schema of its `params` table, from the config struct.
    pub schema: fn() -> RootSchema,
    /// Parse `params` (the scenario's name of the algorithm for messages) and build.
    build: fn(&str, &Map<String, Value>) -> Result<Cc, CcError>,
}

/// A registry entry from the names, the config struct and a constructor
/// taking it: the params are parsed once, into that struct.
macro_rules! algorithm {
    ($names:expr, $config:ty, $build:expr) => {
        Algorithm {
            names: $names,
            params: params::defaults::<$config>,
            schema: params::schema::<$config>,
            build: |name, p| Ok(($build)(params::parse::<$config>(name, $names[0], p)?)),
        }
    };
}

/// Every algorithm, once: the list of names, the parameters and the
/// constructors all come from here.
pub const REGISTRY: &[Algorithm] = &[
    algorithm!(&["reno", "newreno"], NoParams, |_| Cc::Reno(Reno)),
    // ns-2's `Agent/TCP` (the ns2 stack only): Reno's window rule; its loss
    // response is the sender's (tcp::ns2_tahoe).
    algorithm!(&["tahoe"], NoParams, |_| Cc::Reno(Reno)),
    algorithm!(&["scalable"], scalable::ScalableConfig, |c| Cc::Scalable(Scalable::new(&c))),
    algorithm!(&["highspeed"], NoParams, |_| Cc::HighSpeed(HighSpeed::default())),
    algorithm!(&["htcp"], htcp::HtcpConfig, |c| Cc::Htcp(Htcp::new(&c))),
    algorithm!(&["bic"], bic::BicConfig, |c| Cc::Bic(Bic::new(&c))),
    algorithm!(&["cubic"], cubic::CubicConfig, |c| Cc::Cubic(Cubic::new(c))),
    algorithm!(&["vegas"], vegas::VegasConfig, |c| Cc::Vegas(Vegas::new(&c))),
    algorithm!(&["fast"], fast::FastConfig, |c| Cc::Fast(Fast::new(&c))),
    algorithm!(&["compound", "ctcp"], compound::CompoundConfig, |c| Cc::Compound(Compound::new(&c))),
    algorithm!(&["lp", "tcplp"], lp::LpConfig, |c| Cc::Lp(Lp::new(c))),
    algorithm!(&["hstcplp", "hstcp-lp"], hstcp_lp::HstcpLpConfig, |c| Cc::HstcpLp(HstcpLp::new(c))),
    algorithm!(&["westwood", "westwoodplus"], westwood::WestwoodConfig, |c| Cc::Westwood(Westwood::new(&c))),
    algorithm!(&["illinois"], illinois::IllinoisConfig, |c| Cc::Illinois(Illinois::new(&c))),
    algorithm!(&["yeah"], yeah::YeahConfig, |c| Cc::Yeah(Yeah::new(c))),
    algorithm!(&["bbr"], bbr::BbrConfig, |c| Cc::Bbr(Bbr::new(&c))),
    algorithm!(&["dctcp"], dctcp::DctcpConfig, |c| Cc::Dctcp(Dctcp::new(&c))),
    algorithm!(&["bbr3"], bbr3::Bbr3Config, |c| Cc::Bbr3(Bbr3::new(&c))),
];

/// Names accepted in scenarios, aliases included, in registry order.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().flat_map(|a| a.names.iter().copied()).collect()
}

/// The registry entry of a scenario name.
pub fn algorithm(name: &str) -> Option<&'static Algorithm> {
    REGISTRY.iter().find(|a| a.names.contains(&name))
}

/// An algorithm that cannot be built: the field at fault, relative to the flow
/// (`cc`, or `params.NAME`), and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for CcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// An algorithm instance; enum dispatch keeps per-flow state inline.
#[derive(Clone, Debug)]
pub enum Cc {
    Reno(Reno),
    Cubic(Cubic),
    Scalable(Scalable),
    HighSpeed(HighSpeed),
    Htcp(Htcp),
    Bic(Bic),
    Vegas(Vegas),
    Fast(Fast),
    Lp(Lp),
    HstcpLp(HstcpLp),
    Westwood(Westwood),
    Compound(Compound),
    Illinois(Illinois),
    Bbr(Bbr),
    Bbr3(Bbr3),
    Yeah(Yeah),
    Dctcp(Dctcp),
}

impl Cc {
    /// Build an algorithm by scenario name with its parameters; unknown names or
    /// parameters are errors that name the field and say what is allowed.
    pub fn from_config(name: &str, params: &Map<String, Value>) -> Result<Cc, CcError> {
        let Some(alg) = algorithm(name) else {
            let message = format!("unknown algorithm '{name}'; allowed: {}", names().join(", "));
            return Err(CcError { field: "cc".into(), message });
        };
        (alg.build)(name, params)
    }

    /// The algorithm needs ECN (Linux `tcp_ca_needs_ecn`, the
    /// TCP_CONG_NEEDS_ECN flag): the connection negotiates ECN whatever the
    /// flow's `ecn` switch says, and marks every segment ECT (tcp::ecn).
    pub fn needs_ecn(&self) -> bool {
        matches!(self, Cc::Dctcp(_))
    }

    fn ops(&mut self) -> &mut dyn CongestionOps {
        match self {
            Cc::Reno(c) => c,
            Cc::Cubic(c) => c,
            Cc::Scalable(c) => c,
            Cc::HighSpeed(c) => c,
            Cc::Htcp(c) => c,
            Cc::Bic(c) => c,
            Cc::Vegas(c) => c,
            Cc::Fast(c) => c,
            Cc::Lp(c) => c,
            Cc::HstcpLp(c) => c,
            Cc::Westwood(c) => c,
            Cc::Compound(c) => c,
            Cc::Illinois(c) => c,
            Cc::Bbr(c) => c,
            Cc::Bbr3(c) => c,
            Cc::Yeah(c) => c,
            Cc::Dctcp(c) => c,
        }
    }
}

impl CongestionOps for Cc {
    fn init(&mut self, s: &mut CcState) {
        self.ops().init(s)
    }
    fn seed_random(&mut self, seed: u64) {
        self.ops().seed_random(seed)
    }
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.ops().ssthresh(s)
    }
    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        self.ops().cong_avoid(s, acked)
    }
    fn waits_for_window_use(&self, s: &CcState) -> bool {
        match self {
            Cc::Vegas(v) => v.waits_for_window_use(s),
            Cc::Fast(f) => f.waits_for_window_use(s),
            Cc::Illinois(i) => i.waits_for_window_use(s),
            _ => true,
        }
    }
    fn pkts_acked(&mut self, s: &mut CcState, sample: &AckSample) {
        self.ops().pkts_acked(s, sample)
    }
    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        self.ops().set_state(s, state)
    }
    fn cwnd_event(&mut self, s: &mut CcState, event: CaEvent) {
        self.ops().cwnd_event(s, event)
    }
    fn in_ack_event(&mut self, s: &mut CcState, ece: bool) {
        self.ops().in_ack_event(s, ece)
    }
    fn cong_control(&mut self, s: &mut CcState, rs: &RateSample) -> bool {
        self.ops().cong_control(s, rs)
    }
    /// The algorithms whose `cong_control` owns the window.
    fn owns_window(&self) -> bool {
        matches!(self, Cc::Bbr(_) | Cc::Bbr3(_))
    }
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        self.ops().min_cwnd(s)
    }
    fn undo_cwnd(&mut self, s: &CcState) -> Option<u32> {
        self.ops().undo_cwnd(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_the_rest() {
        let mut s = CcState::new(10, 1448);
        s.ssthresh = 12;
        assert_eq!(slow_start(&mut s, 5), 3);
        assert_eq!(s.cwnd, 12);
    }

    #[test]
    fn cong_avoid_ai_adds_one_per_window_of_packets() {
        let mut s = CcState::new(10, 1448);
        for _ in 0..5 {
            cong_avoid_ai(&mut s, 10, 2); // five delayed ACKs of 2 packets
        }
        assert_eq!((s.cwnd, s.cwnd_cnt), (11, 0));
        cong_avoid_ai(&mut s, 11, 25); // a stretch ACK: 2 packets worth of growth
        assert_eq!((s.cwnd, s.cwnd_cnt), (13, 3));
    }

    /// Linux 2.6.22 without ABC: +1 per ACK in slow start (while cwnd <=
    /// ssthresh), then one packet per cwnd + 1 ACKs whatever each ACK covers.
    #[test]
    fn per_ack_growth_counts_acks_and_slow_starts_through_ssthresh() {
        let mut s = CcState::new(10, 1448);
        (s.growth, s.ssthresh) = (Growth::PerAck, 12);
        for want in [11, 12, 13] {
            assert!(s.in_slow_start(), "cwnd {} <= ssthresh 12", s.cwnd);
            assert_eq!(slow_start(&mut s, 2), 0, "nothing is left for avoidance");
            assert_eq!(s.cwnd, want);
        }
        assert!(!s.in_slow_start());
        for _ in 0..13 {
            cong_avoid_ai(&mut s, 13, 2);
        }
        assert_eq!((s.cwnd, s.cwnd_cnt), (13, 13), "13 ACKs of 2 packets: no growth yet");
        cong_avoid_ai(&mut s, 13, 2); // the 14th ACK finds cwnd_cnt at 13
        assert_eq!((s.cwnd, s.cwnd_cnt), (14, 0));
    }

    /// Linux 3.12-3.19: slow start counts packets up to ssthresh + 1,
    /// avoidance counts ACKs.
    #[test]
    fn per_ack_avoidance_slow_starts_by_packets_up_to_ssthresh_plus_one() {
        let mut s = CcState::new(10, 1448);
        (s.growth, s.ssthresh) = (Growth::PerAckAvoidance, 15);
        slow_start(&mut s, 4);
        assert_eq!(s.cwnd, 14);
        slow_start(&mut s, 4);
        assert_eq!(s.cwnd, 16);
        assert!(!s.in_slow_start());
        cong_avoid_ai(&mut s, 16, 8);
        assert_eq!(s.cwnd_cnt, 1, "one per ACK, not eight");
        assert_eq!((Growth::PerAck.credit(8), Growth::PerAckAvoidance.credit(8), Growth::PerPacket.credit(8)), (1, 1, 8));
    }

    #[test]
    fn unknown_algorithm_is_an_error_of_cc_listing_the_valid_ones() {
        let err = Cc::from_config("foo", &Map::new()).unwrap_err();
        assert_eq!(err.field, "cc");
        assert!(err.message.contains("reno, newreno, tahoe, scalable"), "{err}");
    }

    #[test]
    fn every_algorithm_names_an_unknown_parameter_and_lists_what_it_accepts() {
        let mut p = Map::new();
        p.insert("bogus".into(), Value::from(0.8));
        for alg in REGISTRY {
            for name in alg.names {
                let err = Cc::from_config(name, &p).unwrap_err();
                assert_eq!(err.field, "params.bogus", "{name}: {err}");
                for accepted in (alg.params)().keys() {
                    assert!(err.message.contains(accepted.as_str()), "{name}: {err}");
                }
            }
        }
    }

    #[test]
    fn every_parameter_has_a_default_a_documented_source_and_refuses_a_wrong_type() {
        for alg in REGISTRY {
            let root = (alg.schema)();
            let object = root.schema.object.as_ref().unwrap();
            assert_eq!(object.additional_properties.as_deref(), Some(&schemars::schema::Schema::Bool(false)), "{}", alg.names[0]);
            for (name, prop) in &object.properties {
                let meta = prop.clone().into_object().metadata.unwrap_or_default();
                assert!(meta.default.is_some() && meta.description.is_some(), "{}.{name}", alg.names[0]);
                let p = Map::from_iter([(name.clone(), Value::from("not a value"))]);
                let err = Cc::from_config(alg.names[0], &p).unwrap_err();
                assert_eq!(err.field, format!("params.{name}"), "{err}");
                assert!(err.message.starts_with("must be "), "{err}");
            }
        }
    }

    #[test]
    fn a_bad_value_is_an_error_of_its_parameter() {
        let mut p = Map::new();
        p.insert("beta".into(), Value::from(2.0));
        let err = Cc::from_config("cubic", &p).unwrap_err();
        assert_eq!(err.field, "params.beta", "{err}");
        assert!(err.message.contains("outside"), "{err}");
    }

    #[test]
    fn every_name_builds_with_its_defaults_and_names_are_unique() {
        let all = names();
        for name in &all {
            assert!(Cc::from_config(name, &Map::new()).is_ok(), "{name}");
        }
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len());
    }
}
