//! BBRv3 as its authors publish it: Google's `net/ipv4/tcp_bbr.c` on the v3
//! branch of github.com/google/bbr (BBR_VERSION 3), described by
//! draft-ietf-ccwg-bbr (-00..-02) and Cardwell et al., "BBRv3: Algorithm Bug
//! Fixes and Public Internet Deployment", IETF 117 (2023). BBR v1 stays in
//! cc/bbr.rs; this is a separate algorithm, `bbr3`.
//!
//! The model: a max filter of delivery rate over the last two ProbeBW cycles
//! (`bw_hi`), the min RTT, and bounds that loss and ECN move:
//! - `inflight_hi`, `bw_hi`: long-term upper bounds, cut to 0.7 of the target
//!   when a bandwidth probe sees more than 2% loss or 50% CE marks;
//! - `bw_lo`, `inflight_lo`: short-term lower bounds, cut by 0.7 (loss) or
//!   1 - alpha/3 (ECN) once per round while not probing.
//!
//! States: STARTUP (pacing gain 2.77, cwnd gain 2) until three rounds without
//! 25% growth, or high loss / ECN; DRAIN (pacing 0.35) until inflight is one
//! BDP; PROBE_BW cycling DOWN (0.9) -> CRUISE (1.0) -> REFILL (1.0, one round)
//! -> UP (1.25, cwnd gain 2.25) -> DOWN, with a probe every 2-3 s of wall clock
//! (random) or after min(63, BDP) rounds, whichever is first; PROBE_RTT every
//! 5 s for 200 ms and a round at cwnd = BDP / 2.
//!
//! ACK aggregation: the most data an ACK stream delivered beyond bw x the
//! time since its epoch began (`extra_acked`, a max over 5-10 rounds, 1-2 in
//! STARTUP), at most bw x 100 ms, is added to the cwnd target in every state.
//!
//! Not modelled (docs/algorithms/bbr3.md): the app-limited fast path, idle
//! restart (except its reset of the ACK epoch), PLB, the loss-round part of
//! `bbr_undo_cwnd` and the per-lost-packet `skb_marked_lost` check (the same loss-rate test runs
//! on the ACK's rate sample); the sender's pacing leaves no departure-time
//! backlog, so `bbr_packets_in_net_at_edt` is the packets in flight.

use super::ack_aggregation::{AckAggregation, EXTRA_ACKED_GAIN, EXTRA_ACKED_WIN_RTTS};
use super::params::{self, AlgorithmConfig};
use super::{CaEvent, CaState, CcError, CcState, CongestionOps, RateSample, INFINITE_SSTHRESH};
use crate::consts::HEADER_BYTES;
use crate::rng::Rng;
use crate::time::{Time, MS, SEC, US};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// Gains are Linux's fixed point in units of 1/256 (BBR_SCALE 8), integer
// division truncating; each line gives its tcp_bbr.c (google/bbr v3) definition.

/// `bbr_startup_pacing_gain = BBR_UNIT * 277 / 100 + 1` (4 ln 2, draft-ietf-
/// ccwg-bbr-02 section 5.3.1.1 "BBRStartupPacingGain").
pub const STARTUP_PACING_GAIN: f64 = 710.0 / 256.0;
/// `bbr_startup_cwnd_gain = BBR_UNIT * 2`.
pub const STARTUP_CWND_GAIN: f64 = 2.0;
/// `bbr_drain_gain = BBR_UNIT * 1000 / 2885`.
pub const DRAIN_GAIN: f64 = 88.0 / 256.0;
/// `bbr_cwnd_gain = BBR_UNIT * 2`.
pub const CWND_GAIN: f64 = 2.0;
/// `bbr_bw_probe_cwnd_gain = 1` in units of BBR_UNIT / 4: PROBE_UP's cwnd gain
/// is 2 + 0.25 (`bbr_update_gains`).
pub const PROBE_UP_CWND_GAIN: f64 = CWND_GAIN + 64.0 / 256.0;
/// `bbr_pacing_gain[]`: UP `BBR_UNIT * 5 / 4`, DOWN `BBR_UNIT * 91 / 100`,
/// CRUISE and REFILL `BBR_UNIT`.
const PACING_GAIN_UP: f64 = 320.0 / 256.0;
const PACING_GAIN_DOWN: f64 = 232.0 / 256.0;
/// `bbr_probe_rtt_cwnd_gain = BBR_UNIT * 1 / 2`.
const PROBE_RTT_CWND_GAIN: f64 = 128.0 / 256.0;
/// `bbr_cwnd_min_target = 4`.
pub const CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh = BBR_UNIT * 5 / 4`, `bbr_full_bw_cnt = 3`.
const FULL_BW_THRESH: f64 = 320.0 / 256.0;
const FULL_BW_CNT: u32 = 3;
/// `bbr_min_rtt_win_sec = 10`, `bbr_probe_rtt_win_ms = 5000`,
/// `bbr_probe_rtt_mode_ms = 200`.
const MIN_RTT_WINDOW: Time = 10 * SEC;
pub const PROBE_RTT_INTERVAL: Time = 5 * SEC;
pub const PROBE_RTT_TIME: Time = 200 * MS;
/// `bbr_pacing_margin_percent = 1`.
const PACING_MARGIN: f64 = 0.99;
/// `bbr_beta = BBR_UNIT * 30 / 100`: loss cuts to 1 - 76/256 = 0.703.
pub const BETA: f64 = 76.0 / 256.0;
/// `bbr_loss_thresh = BBR_UNIT * 2 / 100` (2%, 5/256).
pub const LOSS_THRESH: f64 = 5.0 / 256.0;
/// `bbr_full_loss_cnt = 6`: loss-marking ACKs in a STARTUP recovery round.
const FULL_LOSS_CNT: u32 = 6;
/// `bbr_ecn_alpha_gain = BBR_UNIT * 1 / 16`, `bbr_ecn_alpha_init = BBR_UNIT`.
pub const ECN_ALPHA_GAIN: f64 = 16.0 / 256.0;
const ECN_ALPHA_INIT: f64 = 1.0;
/// `bbr_ecn_factor = BBR_UNIT * 1 / 3`: ECN cuts inflight_lo to 1 - alpha x 85/256.
pub const ECN_FACTOR: f64 = 85.0 / 256.0;
/// `bbr_ecn_thresh = BBR_UNIT * 1 / 2`: a probe went too far above 50% CE.
pub const ECN_THRESH: f64 = 128.0 / 256.0;
/// `bbr_full_ecn_cnt = 2`: STARTUP ends after two rounds above ecn_thresh.
const FULL_ECN_CNT: u32 = 2;
/// `bbr_ecn_reprobe_gain = BBR_UNIT * 1 / 2`.
const ECN_REPROBE_GAIN: f64 = 128.0 / 256.0;
/// `bbr_ecn_max_rtt_us = 5000`: ECN logic only at min RTTs up to 5 ms.
const ECN_MAX_RTT: Time = 5000 * US;
/// `bbr_inflight_headroom = BBR_UNIT * 15 / 100` (38/256).
const INFLIGHT_HEADROOM: f64 = 38.0 / 256.0;
/// `bbr_bw_probe_max_rounds = 63`, `bbr_bw_probe_rand_rounds = 2`.
const BW_PROBE_MAX_ROUNDS: u32 = 63;
const BW_PROBE_RAND_ROUNDS: u64 = 2;
/// `bbr_bw_probe_base_us = 2 s`, `bbr_bw_probe_rand_us = 1 s`.
pub const BW_PROBE_BASE: Time = 2 * SEC;
const BW_PROBE_RAND_US: u64 = 1_000_000;
/// Segments per "TSO" burst in the quantization budget: no TSO here, Linux's
/// floor `sysctl_tcp_min_tso_segs` = 2 (as cc/bbr.rs).
const TSO_SEGS: u32 = 2;
/// An unset inflight bound (Linux ~0U).
const UNSET: u32 = u32::MAX;

/// BBRv3's parameters (`params`), defaults from tcp_bbr.c (google/bbr v3).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Bbr3Config {
    /// Multiplicative cut on loss (`bbr_beta` = 256 * 30 / 100 = 76 in units
    /// of 1/256): inflight_hi and the lower bounds go to 1 - beta.
    #[schemars(range(min = 0, max = 1))]
    pub beta: f64,
    /// Loss rate above which a bandwidth probe went too far (`bbr_loss_thresh`
    /// = 256 * 2 / 100 = 5 in units of 1/256, about 2%).
    #[schemars(range(min = 0, max = 1))]
    pub loss_thresh: f64,
    /// The path's CE marks are shallow-threshold (Linux's route feature
    /// `ecn_low`, TCP_ECN_LOW): only then does BBRv3 use ECN, and only at a
    /// min RTT up to 5 ms (`bbr_can_use_ecn`, `bbr_ecn_max_rtt_us`). Off as
    /// in Linux without the route feature.
    pub ecn_low: bool,
    /// CE fraction above which a bandwidth probe went too far
    /// (`bbr_ecn_thresh` = 1/2).
    #[schemars(range(min = 0, max = 1))]
    pub ecn_thresh: f64,
    /// Share of the ACK-aggregation estimate (`extra_acked`, at most bw x
    /// 100 ms) added to the cwnd target (`bbr_extra_acked_gain` = BBR_UNIT,
    /// 1); 0 turns the estimate off.
    #[schemars(range(min = 0, max = 4))]
    pub extra_acked_gain: f64,
    /// ECN cut of inflight_lo: to 1 - ecn_factor x alpha per round
    /// (`bbr_ecn_factor` = 256 / 3 = 85 in units of 1/256).
    #[schemars(range(min = 0, max = 1))]
    pub ecn_factor: f64,
    /// PROBE_RTT when no lower RTT was seen for this long, seconds
    /// (`bbr_probe_rtt_win_ms` = 5000).
    #[schemars(range(min = 0.1, max = 10))]
    pub probe_rtt_interval_s: f64,
    /// Mixed into the flow's own random stream (from the run's seed and the
    /// flow), which draws the probe waits as Linux's `get_random_u32_below`
    /// does per socket; reproducible for a run seed.
    pub seed: u32,
}

impl Default for Bbr3Config {
    fn default() -> Self {
        Bbr3Config {
            beta: BETA,
            loss_thresh: LOSS_THRESH,
            ecn_low: false,
            ecn_thresh: ECN_THRESH,
            extra_acked_gain: EXTRA_ACKED_GAIN,
            ecn_factor: ECN_FACTOR,
            probe_rtt_interval_s: PROBE_RTT_INTERVAL as f64 / SEC as f64,
            seed: 0,
        }
    }
}

impl AlgorithmConfig for Bbr3Config {
    fn check(&self, alg: &str) -> Result<(), CcError> {
        if self.beta >= 1.0 {
            return Err(params::error("beta", format!("must be below 1 for {alg} (a cut to 1 - beta)")));
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// PROBE_BW's phases (Linux `enum bbr_pacing_gain_phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Up,
    Down,
    Cruise,
    Refill,
}

/// How the ACKs relate to bandwidth probing (Linux `enum bbr_ack_phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

#[derive(Clone, Debug)]
pub struct Bbr3 {
    cfg: Bbr3Config,
    rng: Rng,
    pub mode: Mode,
    pub phase: Phase,
    ack_phase: AckPhase,
    // Round counting.
    next_rtt_delivered: u64,
    round_start: bool,
    rounds_since_probe: u32,
    // Bandwidth model, packets per second (bw_lo: INFINITY when unset).
    bw_hi: [f64; 2],
    bw_lo: f64,
    bw_latest: f64,
    sample_bw: f64,
    // Inflight model, packets (UNSET when unset).
    pub inflight_hi: u32,
    pub inflight_lo: u32,
    inflight_latest: u32,
    // Congestion signals.
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    ecn_in_round: bool,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_events_in_round: u32,
    startup_ecn_rounds: u32,
    ecn_eligible: bool,
    pub ecn_alpha: f64,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,
    last_delivered_ce: u64,
    // STARTUP's full-pipe estimate.
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_now: bool,
    pub full_bw_reached: bool,
    // PROBE_BW cycle.
    cycle_stamp: Time,
    probe_wait: Time,
    bw_probe_up_rounds: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    // RTT model and PROBE_RTT.
    min_rtt: Time,
    min_rtt_stamp: Time,
    probe_rtt_min: Time,
    probe_rtt_min_stamp: Time,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    /// ACK aggregation (cc::ack_aggregation).
    aggregation: AckAggregation,
    // Window bookkeeping.
    init_cwnd: u32,
    prior_cwnd: u32,
    prev_ca_state: CaState,
    has_seen_rtt: bool,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// Number of PROBE_RTT episodes (for tests and traces).
    pub probe_rtts: u64,
}

impl Bbr3 {
    pub fn new(cfg: &Bbr3Config) -> Self {
        Bbr3 {
            cfg: cfg.clone(),
            rng: Rng::new(cfg.seed as u64, 0xBB3),
            mode: Mode::Startup,
            phase: Phase::Up,
            ack_phase: AckPhase::Init,
            next_rtt_delivered: 0,
            round_start: false,
            rounds_since_probe: 0,
            bw_hi: [0.0; 2],
            bw_lo: f64::INFINITY,
            bw_latest: 0.0,
            sample_bw: 0.0,
            inflight_hi: UNSET,
            inflight_lo: UNSET,
            inflight_latest: 0,
            loss_round_delivered: 0,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_events_in_round: 0,
            startup_ecn_rounds: 0,
            ecn_eligible: false,
            ecn_alpha: ECN_ALPHA_INIT,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            last_delivered_ce: 0,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_now: false,
            full_bw_reached: false,
            cycle_stamp: 0,
            probe_wait: 0,
            bw_probe_up_rounds: 0,
            bw_probe_up_cnt: UNSET,
            bw_probe_up_acks: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            min_rtt: Time::MAX,
            min_rtt_stamp: 0,
            probe_rtt_min: Time::MAX,
            probe_rtt_min_stamp: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            aggregation: AckAggregation::new(cfg.extra_acked_gain),
            init_cwnd: 0,
            prior_cwnd: 0,
            prev_ca_state: CaState::Open,
            has_seen_rtt: false,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: STARTUP_CWND_GAIN,
            probe_rtts: 0,
        }
    }

    // ----- the model -------------------------------------------------------------

    /// Linux `bbr_max_bw`: the max filter over the last two cycles, packets/s.
    pub fn max_bw(&self) -> f64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// Linux `bbr_bw`: the max filter, capped by the short-term lower bound.
    pub fn bw(&self) -> f64 {
        self.max_bw().min(self.bw_lo)
    }

    pub fn min_rtt(&self) -> Time {
        self.min_rtt
    }

    /// Linux `bbr_bdp`: ceil(bw x min RTT x gain) packets; the initial window
    /// before any RTT sample.
    fn bdp(&self, bw: f64, gain: f64) -> u32 {
        if self.min_rtt == Time::MAX {
            return self.init_cwnd;
        }
        (bw * self.min_rtt as f64 / SEC as f64 * gain).ceil() as u32
    }

    /// Linux `bbr_quantization_budget` (v3): at least three bursts and the
    /// minimum target, plus two packets in PROBE_UP so small BDPs are probed.
    fn budget(&self, cwnd: u32) -> u32 {
        let cwnd = cwnd.max(3 * TSO_SEGS).max(CWND_MIN_TARGET);
        if self.in_phase(Phase::Up) {
            cwnd + 2
        } else {
            cwnd
        }
    }

    fn inflight(&self, bw: f64, gain: f64) -> u32 {
        self.budget(self.bdp(bw, gain))
    }

    fn in_phase(&self, phase: Phase) -> bool {
        self.mode == Mode::ProbeBw && self.phase == phase
    }

    /// Linux `bbr_target_inflight`: the BDP unless congestion cut cwnd.
    fn target_inflight(&self, s: &CcState) -> u32 {
        self.inflight(self.bw(), 1.0).min(s.cwnd)
    }

    /// Linux `bbr_is_probing_bandwidth`.
    fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup || self.in_phase(Phase::Refill) || self.in_phase(Phase::Up)
    }

    /// Linux `bbr_inflight_with_headroom`: inflight_hi less 15%, at least 4.
    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom = ((self.inflight_hi as f64 * INFLIGHT_HEADROOM) as u32).max(1);
        self.inflight_hi.saturating_sub(headroom).max(CWND_MIN_TARGET)
    }

    fn probe_rtt_cwnd(&self) -> u32 {
        self.bdp(self.bw(), PROBE_RTT_CWND_GAIN).max(CWND_MIN_TARGET)
    }

    /// Linux `bbr_is_inflight_too_high`: the sample's loss rate above
    /// loss_thresh of what was in flight, or its CE rate above ecn_thresh.
    fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if rs.lost > 0 && rs.tx_in_flight > 0 {
            let thresh = (rs.tx_in_flight as f64 * self.cfg.loss_thresh) as u64;
            if rs.lost > thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0 && rs.delivered > 0 && self.ecn_eligible {
            let thresh = (rs.delivered as f64 * self.cfg.ecn_thresh) as u64;
            if rs.delivered_ce > thresh {
                return true;
            }
        }
        false
    }

    // ----- rounds and congestion signals -----------------------------------------

    /// Linux `bbr_update_round_start`.
    fn update_round_start(&mut self, s: &CcState, rs: &RateSample) {
        self.round_start = false;
        if rs.interval > 0 && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = s.delivered;
            self.round_start = true;
        }
    }

    /// Linux `bbr_note_loss` (from `bbr_skb_marked_lost`, which runs before
    /// `cong_control` on the same ACK): the first loss opens a loss round.
    fn note_loss(&mut self, s: &CcState) {
        if !self.loss_in_round {
            self.loss_round_delivered = s.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// Linux `bbr_update_ecn_alpha`, once per round: EWMA of the CE fraction
    /// delivered since the last update. Returns the fraction, if computed.
    fn update_ecn_alpha(&mut self, s: &CcState) -> Option<f64> {
        let rtt_ok = self.min_rtt <= ECN_MAX_RTT;
        if !self.ecn_eligible && self.cfg.ecn_low && self.cfg.ecn_factor > 0.0 && rtt_ok {
            self.ecn_eligible = true;
        }
        let delivered = s.delivered - self.alpha_last_delivered;
        if !self.ecn_eligible || delivered == 0 {
            return None;
        }
        let ce_ratio = (s.delivered_ce - self.alpha_last_delivered_ce) as f64 / delivered as f64;
        self.ecn_alpha = ((1.0 - ECN_ALPHA_GAIN) * self.ecn_alpha + ECN_ALPHA_GAIN * ce_ratio).min(1.0);
        self.alpha_last_delivered = s.delivered;
        self.alpha_last_delivered_ce = s.delivered_ce;
        self.check_ecn_too_high_in_startup(ce_ratio);
        Some(ce_ratio)
    }

    /// Linux `bbr_check_ecn_too_high_in_startup`.
    fn check_ecn_too_high_in_startup(&mut self, ce_ratio: f64) {
        if self.full_bw_reached || !self.ecn_eligible || self.cfg.ecn_thresh == 0.0 {
            return;
        }
        self.startup_ecn_rounds = if ce_ratio >= self.cfg.ecn_thresh { (self.startup_ecn_rounds + 1).min(3) } else { 0 };
        if self.startup_ecn_rounds >= FULL_ECN_CNT {
            self.handle_queue_too_high_in_startup();
        }
    }

    /// Linux `bbr_handle_queue_too_high_in_startup`.
    fn handle_queue_too_high_in_startup(&mut self) {
        self.full_bw_reached = true;
        self.inflight_hi = self.inflight(self.max_bw(), 1.0).max(self.inflight_latest);
    }

    /// Linux `bbr_update_latest_delivery_signals`.
    fn update_latest_delivery_signals(&mut self, s: &CcState, rs: &RateSample) {
        self.loss_round_start = false;
        if rs.interval == 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(self.sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered as u32);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = s.delivered;
            self.loss_round_start = true;
        }
    }

    /// Linux `bbr_advance_latest_delivery_signals`: a new loss round restarts
    /// the latest-delivery filters.
    fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = self.sample_bw;
            self.inflight_latest = rs.delivered as u32;
        }
    }

    /// Linux `bbr_update_congestion_signals`.
    fn update_congestion_signals(&mut self, s: &CcState, rs: &RateSample) {
        if rs.interval == 0 || rs.acked_sacked == 0 {
            return;
        }
        if !rs.is_app_limited || self.sample_bw >= self.max_bw() {
            self.bw_hi[1] = self.bw_hi[1].max(self.sample_bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(s);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// Linux `bbr_adapt_lower_bounds`: once per round while not probing, cut
    /// inflight_lo on ECN (1 - alpha x ecn_factor) and bw_lo and inflight_lo
    /// on loss (1 - beta), not below what the last round delivered.
    fn adapt_lower_bounds(&mut self, s: &CcState) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = UNSET;
        if self.ecn_in_round && self.cfg.ecn_factor > 0.0 {
            self.init_lower_bounds(s, false);
            ecn_inflight_lo = (self.inflight_lo as f64 * self.ecn_cut()) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(s, true);
            let cut = 1.0 - self.cfg.beta;
            self.bw_lo = self.bw_latest.max(self.bw_lo * cut);
            self.inflight_lo = self.inflight_latest.max((self.inflight_lo as f64 * cut) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
    }

    /// Linux `bbr_ecn_cut`.
    fn ecn_cut(&self) -> f64 {
        1.0 - self.ecn_alpha * self.cfg.ecn_factor
    }

    /// Linux `bbr_init_lower_bounds`.
    fn init_lower_bounds(&mut self, s: &CcState, init_bw: bool) {
        if init_bw && self.bw_lo == f64::INFINITY {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == UNSET {
            self.inflight_lo = s.cwnd;
        }
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = UNSET;
    }

    /// Linux `bbr_reset_congestion_signals`.
    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    // ----- STARTUP and DRAIN -----------------------------------------------------

    /// Linux `bbr_check_loss_too_high_in_startup`: at the end of a recovery
    /// round with at least 6 loss-marking ACKs and a loss rate above
    /// loss_thresh, the pipe is full.
    fn check_loss_too_high_in_startup(&mut self, s: &CcState, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 {
            self.loss_events_in_round = (self.loss_events_in_round + 1).min(0xf);
        }
        let recovery_round = self.loss_round_start && s.ca_state == CaState::Recovery;
        if recovery_round && self.loss_events_in_round >= FULL_LOSS_CNT && self.is_inflight_too_high(rs) {
            self.handle_queue_too_high_in_startup();
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// Linux `bbr_check_full_bw_reached` (v3 compares each sample, not the max
    /// filter): three rounds without a sample 25% above full_bw.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        if self.sample_bw >= self.full_bw * FULL_BW_THRESH {
            self.reset_full_bw();
            self.full_bw = self.sample_bw;
            return;
        }
        if !self.round_start {
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_now = self.full_bw_cnt >= FULL_BW_CNT;
        self.full_bw_reached |= self.full_bw_now;
    }

    /// Linux `bbr_check_drain`.
    fn check_drain(&mut self, s: &mut CcState) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            // For monitoring only, as Linux: ssthresh leaves "infinite".
            s.ssthresh = self.inflight(self.max_bw(), 1.0);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain && s.in_flight <= self.inflight(self.max_bw(), 1.0) {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(s);
        }
    }

    // ----- PROBE_BW ---------------------------------------------------------------

    /// Linux `bbr_pick_probe_wait`: 0 or 1 extra round, 2 s + up to 1 s.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = (self.rng.next_u64() % BW_PROBE_RAND_ROUNDS) as u32;
        self.probe_wait = BW_PROBE_BASE + (self.rng.next_u64() % BW_PROBE_RAND_US) * US;
    }

    /// Linux `bbr_start_bw_probe_refill`.
    fn start_bw_probe_refill(&mut self, s: &CcState, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = s.delivered;
        self.phase = Phase::Refill;
    }

    /// Linux `bbr_start_bw_probe_up`.
    fn start_bw_probe_up(&mut self, s: &CcState) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = s.delivered;
        self.cycle_stamp = s.now;
        self.reset_full_bw();
        self.full_bw = self.sample_bw;
        self.phase = Phase::Up;
        self.raise_inflight_hi_slope(s);
    }

    /// Linux `bbr_start_bw_probe_down`: a new cycle; the wall clock starts.
    fn start_bw_probe_down(&mut self, s: &CcState) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET;
        self.pick_probe_wait();
        self.cycle_stamp = s.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = s.delivered;
        self.phase = Phase::Down;
    }

    /// Linux `bbr_start_bw_probe_cruise`.
    fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.phase = Phase::Cruise;
    }

    /// Linux `bbr_raise_inflight_hi_slope`: each PROBE_UP round doubles the
    /// growth of inflight_hi (1, 2, 4, ... packets per round).
    fn raise_inflight_hi_slope(&mut self, s: &CcState) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (s.cwnd / growth_this_round).max(1);
    }

    /// Linux `bbr_probe_inflight_hi_upward`.
    fn probe_inflight_hi_upward(&mut self, s: &CcState, rs: &RateSample) {
        if !s.cwnd_limited || s.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi += delta;
        }
        if self.round_start {
            self.raise_inflight_hi_slope(s);
        }
    }

    /// Linux `bbr_handle_inflight_too_high`: once per probe, inflight_hi to
    /// max(what was in flight, (1 - beta) x target), and back to DOWN.
    fn handle_inflight_too_high(&mut self, s: &CcState, rs: &RateSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !rs.is_app_limited {
            let cut = (self.target_inflight(s) as f64 * (1.0 - self.cfg.beta)) as u32;
            self.inflight_hi = rs.tx_in_flight.max(cut);
        }
        if self.in_phase(Phase::Up) {
            self.start_bw_probe_down(s);
        }
    }

    /// Linux `bbr_adapt_upper_bounds`; true if it decided a phase change.
    fn adapt_upper_bounds(&mut self, s: &CcState, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            // The end of a probe's feedback: forget the older cycle's bw.
            if self.mode == Mode::ProbeBw && !rs.is_app_limited && self.bw_hi[1] > 0.0 {
                self.bw_hi = [self.bw_hi[1], 0.0];
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(s, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(s, rs);
            }
            return false;
        }
        if self.inflight_hi == UNSET {
            return false;
        }
        // Resilience to random loss: a higher level seen safe raises the bound.
        self.inflight_hi = self.inflight_hi.max(rs.tx_in_flight);
        if self.in_phase(Phase::Up) {
            self.probe_inflight_hi_upward(s, rs);
        }
        false
    }

    /// Linux `bbr_check_time_to_probe_bw`: reprobe quickly when ECN marks
    /// (without loss) stop; else after the random wall-clock wait, or after
    /// min(63, target inflight) rounds (Reno coexistence).
    fn check_time_to_probe_bw(&mut self, s: &CcState) -> bool {
        if self.ecn_eligible && self.ecn_in_cycle && !self.loss_in_cycle && s.ca_state == CaState::Open {
            let volume = (self.inflight_hi as f64 * ECN_REPROBE_GAIN) as u32;
            self.start_bw_probe_refill(s, volume.max(1).ilog2().min(30));
            return true;
        }
        let waited = s.now > self.cycle_stamp + self.probe_wait;
        let reno_rounds = BW_PROBE_MAX_ROUNDS.min(self.target_inflight(s));
        if waited || self.rounds_since_probe >= reno_rounds {
            self.start_bw_probe_refill(s, 0);
            return true;
        }
        false
    }

    /// Linux `bbr_check_time_to_cruise`: inflight below the headroom and the BDP.
    fn check_time_to_cruise(&self, inflight: u32, bw: f64) -> bool {
        inflight <= self.inflight_with_headroom() && inflight <= self.inflight(bw, 1.0)
    }

    /// Linux `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, s: &CcState, rs: &RateSample) {
        if !self.full_bw_reached || self.adapt_upper_bounds(s, rs) || self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = rs.prior_in_flight;
        match self.phase {
            Phase::Cruise => {
                self.check_time_to_probe_bw(s);
            }
            Phase::Refill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(s);
                }
            }
            Phase::Up => self.check_probe_up_done(s, inflight),
            Phase::Down => {
                if !self.check_time_to_probe_bw(s) && self.check_time_to_cruise(inflight, self.max_bw()) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }

    /// PROBE_UP ends when inflight reaches an inflight_hi that was too high
    /// last time, or the bandwidth plateaus while inflight_hi is not limiting.
    fn check_probe_up_done(&mut self, s: &CcState, inflight: u32) {
        let done = if self.prev_probe_too_high && inflight >= self.inflight_hi {
            self.stopped_risky_probe = true;
            true
        } else if s.cwnd_limited && s.cwnd >= self.inflight_hi {
            self.reset_full_bw();
            self.full_bw = self.sample_bw;
            false
        } else {
            self.full_bw_now
        };
        if done {
            self.prev_probe_too_high = false;
            self.start_bw_probe_down(s);
        }
    }

    // ----- PROBE_RTT ----------------------------------------------------------------

    /// Linux `bbr_update_min_rtt`: a 5 s filter schedules PROBE_RTT, the 10 s
    /// min_rtt takes its value when lower or when expired.
    fn update_min_rtt(&mut self, s: &mut CcState, rs: &RateSample) {
        let probe_rtt_expired = s.now > self.probe_rtt_min_stamp.saturating_add(self.probe_rtt_interval());
        if let Some(rtt) = rs.rtt {
            if rtt < self.probe_rtt_min || probe_rtt_expired {
                self.probe_rtt_min = rtt;
                self.probe_rtt_min_stamp = s.now;
            }
        }
        let min_rtt_expired = s.now > self.min_rtt_stamp.saturating_add(MIN_RTT_WINDOW);
        if self.probe_rtt_min <= self.min_rtt || min_rtt_expired {
            self.min_rtt = self.probe_rtt_min;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if probe_rtt_expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.probe_rtts += 1;
            self.save_cwnd(s);
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = s.delivered;
        }
        if self.mode == Mode::ProbeRtt {
            s.mark_app_limited = true; // Linux: ignore its low rate samples
            self.hold_probe_rtt(s);
        }
    }

    fn probe_rtt_interval(&self) -> Time {
        (self.cfg.probe_rtt_interval_s * SEC as f64) as Time
    }

    /// Keep inflight at the PROBE_RTT window for max(200 ms, one round).
    fn hold_probe_rtt(&mut self, s: &mut CcState) {
        match self.probe_rtt_done_stamp {
            None if s.in_flight <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(s.now + PROBE_RTT_TIME);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = s.delivered;
            }
            Some(done) => {
                self.probe_rtt_round_done |= self.round_start;
                if self.probe_rtt_round_done && s.now > done {
                    self.probe_rtt_min_stamp = s.now;
                    s.cwnd = s.cwnd.max(self.prior_cwnd);
                    self.exit_probe_rtt(s);
                }
            }
            None => {}
        }
    }

    /// Linux `bbr_exit_probe_rtt`: to CRUISE with a new probe wait, or STARTUP.
    fn exit_probe_rtt(&mut self, s: &CcState) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(s);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    // ----- control: gains, pacing, cwnd -----------------------------------------------

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match (self.mode, self.phase) {
            (Mode::Startup, _) => (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN),
            (Mode::Drain, _) => (DRAIN_GAIN, STARTUP_CWND_GAIN),
            (Mode::ProbeBw, Phase::Up) => (PACING_GAIN_UP, PROBE_UP_CWND_GAIN),
            (Mode::ProbeBw, Phase::Down) => (PACING_GAIN_DOWN, CWND_GAIN),
            (Mode::ProbeBw, _) => (1.0, CWND_GAIN),
            (Mode::ProbeRtt, _) => (1.0, 1.0),
        };
    }

    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    /// Linux `bbr_init_pacing_rate_from_rtt`: startup gain x cwnd / srtt
    /// (`bbr::first_pacing_rtt`: the handshake's RTT before a data sample).
    fn init_pacing_rate(&mut self, s: &mut CcState) {
        self.has_seen_rtt = s.srtt_or_handshake() > 0;
        let bw = s.cwnd as f64 * SEC as f64 / super::bbr::first_pacing_rtt(s) as f64;
        s.pacing_rate = self.pacing_rate(s, bw, STARTUP_PACING_GAIN);
    }

    /// Bytes per second on the wire for a rate in packets per second.
    fn pacing_rate(&self, s: &CcState, bw: f64, gain: f64) -> f64 {
        bw * (s.mss + HEADER_BYTES) as f64 * gain * PACING_MARGIN
    }

    /// Linux `bbr_set_pacing_rate`: only upward until the pipe is full.
    fn set_pacing_rate(&mut self, s: &mut CcState, bw: f64) {
        if !self.has_seen_rtt && s.srtt > 0 {
            self.init_pacing_rate(s);
        }
        let rate = self.pacing_rate(s, bw, self.pacing_gain);
        if self.full_bw_reached || rate > s.pacing_rate {
            s.pacing_rate = rate;
        }
    }

    /// Linux `bbr_update_ack_aggregation` (cc::ack_aggregation), one round per
    /// filter slot before the pipe is full (`extra_acked_in_startup`).
    fn update_ack_aggregation(&mut self, s: &CcState, rs: &RateSample) {
        let window = if self.full_bw_reached { EXTRA_ACKED_WIN_RTTS } else { 1 };
        self.aggregation.on_ack(s, rs, self.bw(), self.round_start, window);
    }

    /// Linux `bbr_ack_aggregation_cwnd` (v3 in every state).
    fn ack_aggregation_cwnd(&self) -> u32 {
        self.aggregation.cwnd(self.bw())
    }

    /// Linux `bbr_set_cwnd` (v3: no packet conservation in recovery): grow by
    /// what was acked toward gain x BDP plus the ACK-aggregation allowance,
    /// snap down to it once the pipe is full.
    fn set_cwnd(&mut self, s: &mut CcState, rs: &RateSample, bw: f64) {
        let acked = rs.acked_sacked;
        if acked > 0 {
            let target = self.budget(self.bdp(bw, self.cwnd_gain) + self.ack_aggregation_cwnd());
            let mut cwnd = s.cwnd;
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            }
            s.cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        s.cwnd = s.cwnd.min(s.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            s.cwnd = s.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// Linux `bbr_bound_cwnd_for_inflight_model`: inflight_hi while probing,
    /// inflight_hi less headroom in CRUISE and PROBE_RTT, inflight_lo always.
    fn bound_cwnd_for_inflight_model(&self, s: &mut CcState) {
        let cap = if self.mode == Mode::ProbeBw && self.phase != Phase::Cruise {
            self.inflight_hi
        } else if self.mode == Mode::ProbeRtt || self.mode == Mode::ProbeBw {
            self.inflight_with_headroom()
        } else {
            UNSET
        };
        let cap = cap.min(self.inflight_lo).max(CWND_MIN_TARGET);
        s.cwnd = s.cwnd.min(cap);
    }

    /// Linux `bbr_save_cwnd`.
    fn save_cwnd(&mut self, s: &CcState) {
        let cut = matches!(self.prev_ca_state, CaState::Recovery | CaState::Loss) || self.mode == Mode::ProbeRtt;
        self.prior_cwnd = if cut { self.prior_cwnd.max(s.cwnd) } else { s.cwnd };
    }
}

impl CongestionOps for Bbr3 {
    fn seed_random(&mut self, seed: u64) {
        self.rng = Rng::new(seed ^ u64::from(self.cfg.seed), 0xBB3);
    }

    /// Linux `bbr_init`.
    fn init(&mut self, s: &mut CcState) {
        self.init_cwnd = s.cwnd.min(0x7f);
        s.ssthresh = INFINITE_SSTHRESH;
        self.next_rtt_delivered = s.delivered;
        let rtt = if s.min_rtt > 0 { s.min_rtt } else { Time::MAX };
        (self.min_rtt, self.probe_rtt_min) = (rtt, rtt);
        (self.min_rtt_stamp, self.probe_rtt_min_stamp) = (s.now, s.now);
        // Start sampling loss and ECN after the first full flight is acked.
        self.loss_round_delivered = s.delivered + 1;
        self.last_delivered_ce = s.delivered_ce;
        self.aggregation.restart(s.now);
        self.init_pacing_rate(s);
    }

    /// BBR does not reduce ssthresh (Linux `bbr_ssthresh`): it notes cwnd.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.save_cwnd(s);
        s.ssthresh
    }

    fn cong_avoid(&mut self, _s: &mut CcState, _acked: u32) {}

    /// Linux `bbr_cwnd_event`, CA_EVENT_TX_START from an app-limited flow:
    /// the ACK epoch restarts, so the idle time does not count as ACKs that
    /// fell behind. The sender raises it only with nothing in flight, at the
    /// start (Linux `tcp_init_sock` starts `app_limited` at ~0U) or after the
    /// application left the flow idle (then marked app-limited).
    fn cwnd_event(&mut self, s: &mut CcState, event: CaEvent) {
        if event == CaEvent::TxStart {
            self.aggregation.start_epoch(s.now);
        }
    }

    /// Linux `bbr_set_state`: an RTO restarts the full-pipe estimate and, when
    /// not probing, starts inflight_lo from the window before it; leaving
    /// Loss restores that window.
    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        if state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == UNSET {
                self.inflight_lo = s.cwnd.max(self.prior_cwnd);
            }
        } else if self.prev_ca_state == CaState::Loss {
            s.cwnd = s.cwnd.max(self.prior_cwnd);
        }
    }

    /// cwnd is BBR's own: recovery's end does not set it to ssthresh.
    fn owns_window(&self) -> bool {
        true
    }

    /// An undo (tcp::undo) leaves BBR's window; the plateau test starts over
    /// (v3's `bbr_undo_cwnd` also clears its loss round's state, not modelled).
    fn undo_cwnd(&mut self, s: &CcState) -> Option<u32> {
        self.reset_full_bw();
        Some(s.cwnd)
    }

    /// Linux `bbr_main` (v3).
    fn cong_control(&mut self, s: &mut CcState, rs: &RateSample) -> bool {
        if rs.losses > 0 {
            self.note_loss(s);
        }
        self.update_round_start(s, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xff);
            self.update_ecn_alpha(s);
        }
        // An ACK that reports new CE deliveries is an ECE ACK (precise ACKs).
        self.ecn_in_round |= self.ecn_eligible && s.delivered_ce > self.last_delivered_ce;
        self.last_delivered_ce = s.delivered_ce;
        self.sample_bw = rs.rate_pps().unwrap_or(0.0);
        self.update_latest_delivery_signals(s, rs);
        self.update_model(s, rs);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(s, bw);
        self.set_cwnd(s, rs, bw);
        self.bound_cwnd_for_inflight_model(s);
        self.advance_latest_delivery_signals(rs);
        self.prev_ca_state = s.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
        true
    }
}

impl Bbr3 {
    /// Linux `bbr_update_model`.
    fn update_model(&mut self, s: &mut CcState, rs: &RateSample) {
        self.update_congestion_signals(s, rs);
        self.update_ack_aggregation(s, rs);
        self.check_loss_too_high_in_startup(s, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(s);
        self.update_cycle_phase(s, rs);
        self.update_min_rtt(s, rs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;
    use serde_json::Map;

    const PER_ACK: u32 = 10;
    /// 1000 packets/s at 100 ms: a BDP of 100 packets, a round of 10 ACKs.
    const RATE: f64 = 1000.0;
    const BDP: u32 = 100;

    fn bbr3(p: serde_json::Value) -> Bbr3 {
        crate::cc::params::parse_map(p.as_object().unwrap()).map(|c| Bbr3::new(&c)).unwrap()
    }

    fn harness() -> Harness<Bbr3> {
        Harness::new(bbr3(serde_json::json!({})), 10)
    }

    /// A rate sample for one ACK of PER_ACK packets at RATE, with `in_flight`
    /// packets out before it; the sampled packet left one RTT (a BDP) ago, so
    /// a round is BDP / PER_ACK ACKs.
    fn sample(h: &Harness<Bbr3>, in_flight: u32) -> RateSample {
        let bdp = (RATE * h.rtt as f64 / 1e9) as u64;
        RateSample {
            delivered: bdp,
            interval: h.rtt,
            acked_sacked: PER_ACK,
            prior_in_flight: in_flight,
            tx_in_flight: in_flight,
            prior_delivered: (h.s.delivered + PER_ACK as u64).saturating_sub(bdp),
            rtt: Some(h.rtt),
            ..Default::default()
        }
    }

    /// One ACK, `h.rtt * PER_ACK / BDP` after the last, `edit` adjusting its sample.
    fn ack_with(h: &mut Harness<Bbr3>, in_flight: u32, edit: impl FnOnce(&mut RateSample)) {
        let acks_per_round = (RATE * h.rtt as f64 / 1e9) as u64 / PER_ACK as u64;
        h.advance(h.rtt / acks_per_round);
        h.s.in_flight = in_flight;
        let mut rs = sample(h, in_flight);
        edit(&mut rs);
        h.ack_rate(&rs);
    }

    fn ack(h: &mut Harness<Bbr3>, in_flight: u32) {
        ack_with(h, in_flight, |_| {});
    }

    /// Startup, Drain and the first ProbeBW ACK, inflight one BDP after.
    fn to_probe_bw(h: &mut Harness<Bbr3>) {
        for _ in 0..31 {
            ack(h, BDP);
        }
        assert_eq!(h.cc.mode, Mode::ProbeBw);
    }

    #[test]
    fn gains_are_the_v3_sources_fixed_point_values() {
        // tcp_bbr.c (google/bbr v3): BBR_UNIT = 256, integer division.
        let unit = 256_u32;
        let fixed = |x: u32| x as f64 / unit as f64;
        assert_eq!(STARTUP_PACING_GAIN, fixed(unit * 277 / 100 + 1));
        assert_eq!(DRAIN_GAIN, fixed(unit * 1000 / 2885));
        assert_eq!(PACING_GAIN_DOWN, fixed(unit * 91 / 100));
        assert_eq!(PACING_GAIN_UP, fixed(unit * 5 / 4));
        assert_eq!(BETA, fixed(unit * 30 / 100));
        assert_eq!(LOSS_THRESH, fixed(unit * 2 / 100));
        assert_eq!(ECN_FACTOR, fixed(unit / 3));
        assert_eq!(INFLIGHT_HEADROOM, fixed(unit * 15 / 100));
        assert_eq!((STARTUP_PACING_GAIN * 256.0, 1.0 - BETA), (710.0, 180.0 / 256.0));
    }

    /// Each sample at RATE: the first sets full_bw; rounds start at ACKs 11,
    /// 21 and 31, each without a sample 25% higher, so the third (ACK 31) ends
    /// STARTUP. DRAIN holds while inflight is above the BDP.
    #[test]
    fn startup_then_drain_then_probe_bw_down_on_a_fixed_delivery_rate() {
        let mut h = harness();
        assert_eq!((h.cc.mode, h.cc.pacing_gain), (Mode::Startup, STARTUP_PACING_GAIN));
        for _ in 0..30 {
            ack(&mut h, BDP);
        }
        assert_eq!(h.cc.mode, Mode::Startup, "two flat rounds are not enough");
        ack(&mut h, 150);
        assert_eq!(h.cc.mode, Mode::Drain);
        assert_eq!(h.s.ssthresh, BDP, "ssthresh shows the BDP for monitoring");
        assert_eq!(h.s.pacing_rate, RATE * 1500.0 * DRAIN_GAIN * 0.99);
        ack(&mut h, 101);
        assert_eq!(h.cc.mode, Mode::Drain, "101 packets are above the BDP");
        // DRAIN ends on inflight after the ACK (100); DOWN holds on inflight
        // before it (110 > the BDP).
        ack_with(&mut h, 100, |rs| rs.prior_in_flight = 110);
        assert_eq!((h.cc.mode, h.cc.phase), (Mode::ProbeBw, Phase::Down));
        assert_eq!(h.cc.pacing_gain, PACING_GAIN_DOWN);
    }

    /// DOWN until inflight is at most the BDP, CRUISE until the random 2-3 s
    /// wall-clock wait since DOWN began is over, REFILL one round (10 ACKs),
    /// UP until three rounds (30 ACKs) without 25% growth, then DOWN again.
    #[test]
    fn probe_bw_phases_cycle_in_order_with_a_two_to_three_second_wait() {
        for seed in 0..6 {
            let mut h = Harness::new(bbr3(serde_json::json!({"seed": seed})), 10);
            for _ in 0..30 {
                ack(&mut h, BDP);
            }
            ack_with(&mut h, 100, |rs| rs.prior_in_flight = 120);
            let down_at = h.s.now;
            assert_eq!((h.cc.mode, h.cc.phase), (Mode::ProbeBw, Phase::Down));
            ack(&mut h, 110);
            assert_eq!(h.cc.phase, Phase::Down, "110 packets are above the BDP");
            ack(&mut h, BDP);
            assert_eq!(h.cc.phase, Phase::Cruise);
            let mut acks = 0;
            while h.cc.phase == Phase::Cruise && acks < 1000 {
                ack(&mut h, BDP);
                acks += 1;
            }
            let waited = (h.s.now - down_at) as f64 / SEC as f64;
            assert!((2.0..=3.01).contains(&waited), "seed {seed}: refill {waited} s after down");
            assert_eq!((h.cc.phase, h.cc.pacing_gain), (Phase::Refill, 1.0));
            let phases: Vec<_> = (0..41).map(|_| {
                ack(&mut h, BDP);
                h.cc.phase
            }).collect();
            assert!(phases[..9].iter().all(|p| *p == Phase::Refill), "seed {seed}: {phases:?}");
            assert!(phases[9..39].iter().all(|p| *p == Phase::Up), "seed {seed}: {phases:?}");
            assert_eq!(phases[39], Phase::Down, "seed {seed}: {phases:?}");
        }
    }

    #[test]
    fn up_paces_at_five_quarters_with_cwnd_gain_two_and_a_quarter() {
        let mut h = harness();
        to_probe_bw(&mut h);
        while h.cc.phase != Phase::Up {
            ack(&mut h, BDP);
        }
        assert_eq!((h.cc.pacing_gain, h.cc.cwnd_gain), (1.25, 2.25));
        // From 210 (gain 2 x 100 + the 10 packets of ACK aggregation: each
        // ACK's 10 packets arrive when bw x 10 ms = 10 were expected, so every
        // ACK restarts the epoch with extra_acked = 10) by 10 per ACK to
        // 2.25 x 100 + 10 + the 2 packets of PROBE_UP's budget.
        assert_eq!(h.s.cwnd, 220);
        ack(&mut h, BDP);
        ack(&mut h, BDP);
        assert_eq!(h.s.cwnd, 237);
    }

    /// Into PROBE_UP with its samples counting as probe feedback.
    fn to_probe_up(h: &mut Harness<Bbr3>) {
        to_probe_bw(h);
        while h.cc.phase != Phase::Up {
            ack(h, BDP);
        }
        assert!(h.cc.bw_probe_samples);
    }

    #[test]
    fn a_probe_with_more_than_two_percent_loss_cuts_inflight_hi_to_0_7_of_the_target() {
        let mut h = harness();
        to_probe_up(&mut h);
        // 1 of 60 lost: 1.7%, within floor(60 x 5/256) = 1.
        ack_with(&mut h, 60, |rs| rs.lost = 1);
        assert_eq!((h.cc.inflight_hi, h.cc.phase), (UNSET, Phase::Up));
        // 2 of 60: too high. Target inflight min(BDP 100 + PROBE_UP's 2, cwnd)
        // = 102; inflight_hi = max(60 in flight, floor(102 x 180/256) = 71).
        // (Inflight before the ACK stays above the cruise level, 71 - 10.)
        ack_with(&mut h, 60, |rs| (rs.lost, rs.prior_in_flight) = (2, 100));
        assert_eq!(h.cc.inflight_hi, 71);
        assert_eq!(h.cc.phase, Phase::Down, "the probe stops");
        // Once per probe: a second high-loss sample changes nothing.
        ack_with(&mut h, 60, |rs| (rs.lost, rs.prior_in_flight) = (10, 100));
        assert_eq!(h.cc.inflight_hi, 71);
        // With more in flight than that when the lost packet left, it stays.
        let mut h = harness();
        to_probe_up(&mut h);
        ack_with(&mut h, 90, |rs| rs.lost = 5);
        assert_eq!(h.cc.inflight_hi, 90);
    }

    #[test]
    fn loss_outside_a_probe_cuts_inflight_lo_by_beta_once_per_round() {
        let mut h = harness();
        to_probe_bw(&mut h);
        assert_eq!(h.cc.phase, Phase::Cruise);
        // 2 x BDP + the 10-packet aggregation allowance of the even ACK stream.
        assert_eq!(h.s.cwnd, 210);
        ack_with(&mut h, BDP, |rs| rs.losses = 1);
        for _ in 0..9 {
            ack(&mut h, BDP);
        }
        assert_eq!(h.cc.inflight_lo, UNSET, "the round has not ended");
        // The loss round ends: inflight_lo = max(inflight_latest 100,
        // floor(cwnd 210 x 180/256 = 147.66)).
        ack(&mut h, BDP);
        let want = 147;
        assert_eq!(h.cc.inflight_lo, want);
        assert!(h.s.cwnd <= want);
        for _ in 0..20 {
            ack(&mut h, BDP);
        }
        assert_eq!(h.cc.inflight_lo, want, "no loss, no further cut");
    }

    /// A loss round with one loss: a lossy ACK, then ACKs until one starts
    /// the next loss round (and so ends this one).
    fn lossy_round(h: &mut Harness<Bbr3>) {
        ack_with(h, BDP, |rs| rs.losses = 1);
        for _ in 0..20 {
            ack(h, BDP);
            if h.cc.loss_round_start {
                return;
            }
        }
        panic!("no loss round start in 20 ACKs");
    }

    /// Under random loss nearly every round has one (1% of some 280 packets:
    /// 1 - 0.99^280 = 94%), and outside a probe it is inflight_lo that holds
    /// cwnd: each lossy round takes it to max(the round's delivery, 0.7 x
    /// itself), here 210 -> 147 -> 103 -> 100 (floor(x x 180/256), not below
    /// the 100 delivered). The ACK-aggregation allowance raises only the
    /// target above it: after a burst the target is 2 x BDP + 46 and cwnd
    /// stays at inflight_lo (docs/algorithms/bbr3.md, random loss).
    #[test]
    fn lossy_rounds_hold_cwnd_at_inflight_lo_whatever_the_aggregation_allowance() {
        let mut h = harness();
        to_probe_bw(&mut h);
        assert_eq!((h.cc.phase, h.s.cwnd), (Phase::Cruise, 210));
        for want in [147, 103, 100] {
            lossy_round(&mut h);
            assert_eq!((h.cc.inflight_lo, h.s.cwnd), (want, want));
        }
        burst(&mut h, 5);
        let target = h.cc.budget(h.cc.bdp(h.cc.bw(), h.cc.cwnd_gain) + h.cc.ack_aggregation_cwnd());
        assert_eq!((h.cc.ack_aggregation_cwnd(), target), (46, 246));
        assert_eq!((h.cc.phase, h.s.cwnd), (Phase::Cruise, 100));
    }

    /// ECN with `ecn_low` at a 2 ms path (BBRv3 uses ECN only up to 5 ms).
    /// The first ACK opens the first round and ECN's first update (10
    /// packets, no CE); each `ecn_round` then ends on a round start.
    fn ecn_harness(ecn_low: bool) -> Harness<Bbr3> {
        let mut h = Harness::new(bbr3(serde_json::json!({"ecn_low": ecn_low})), 10);
        (h.rtt, h.s.srtt, h.s.min_rtt) = (2 * MS, 2 * MS, 2 * MS);
        h.cc.init(&mut h.s);
        ecn_ack(&mut h, 0, BDP);
        h
    }

    /// One ACK of 10 packets at the harness RTT and 50000 packets/s (a BDP of
    /// 100), `ce` of them CE-marked.
    fn ecn_ack(h: &mut Harness<Bbr3>, ce: u64, in_flight: u32) {
        h.s.delivered_ce += ce;
        let bdp = BDP as u64;
        h.advance(h.rtt / 10);
        h.s.in_flight = in_flight;
        let rs = RateSample {
            delivered: bdp,
            delivered_ce: ce * 10,
            interval: h.rtt,
            acked_sacked: PER_ACK,
            prior_in_flight: in_flight,
            tx_in_flight: in_flight,
            prior_delivered: (h.s.delivered + PER_ACK as u64).saturating_sub(bdp),
            rtt: Some(h.rtt),
            ..Default::default()
        };
        h.ack_rate(&rs);
    }

    /// One round (10 ACKs) with `ce` of each ACK's 10 packets CE-marked.
    fn ecn_round(h: &mut Harness<Bbr3>, ce: u64) {
        ecn_round_at(h, ce, BDP);
    }

    fn ecn_round_at(h: &mut Harness<Bbr3>, ce: u64, in_flight: u32) {
        for _ in 0..10 {
            ecn_ack(h, ce, in_flight);
        }
    }

    #[test]
    fn ecn_alpha_is_an_ewma_of_the_ce_fraction_with_gain_one_sixteenth() {
        let mut h = ecn_harness(true);
        // The first update (10 packets, none CE): alpha from 1 to 15/16.
        assert_eq!(h.cc.ecn_alpha, 15.0 / 16.0);
        ecn_round(&mut h, 5);
        // 100 packets, 50 CE: 15/16 x 15/16 + 1/16 x 1/2.
        assert_eq!(h.cc.ecn_alpha, 0.91015625);
        ecn_round(&mut h, 10);
        assert_eq!(h.cc.ecn_alpha, 0.91015625 * 15.0 / 16.0 + 1.0 / 16.0);
        // Without ecn_low the signal is ignored (Linux bbr_can_use_ecn).
        let mut h = ecn_harness(false);
        ecn_round(&mut h, 10);
        assert_eq!(h.cc.ecn_alpha, 1.0);
        assert_eq!(h.cc.mode, Mode::Startup);
    }

    #[test]
    fn a_ce_rate_above_half_for_two_rounds_ends_startup() {
        let mut h = ecn_harness(true);
        ecn_round(&mut h, 6);
        assert_eq!(h.cc.mode, Mode::Startup, "one round above ecn_thresh");
        ecn_round(&mut h, 6);
        assert!(h.cc.full_bw_reached, "two rounds above ecn_thresh");
        assert_ne!(h.cc.mode, Mode::Startup);
    }

    #[test]
    fn ecn_cuts_inflight_lo_by_alpha_over_three_outside_a_probe() {
        let mut h = ecn_harness(true);
        ecn_round(&mut h, 0);
        ecn_round(&mut h, 0);
        // The third flat round ends STARTUP; 150 in flight keeps DRAIN.
        ecn_round_at(&mut h, 0, 150);
        assert_eq!(h.cc.mode, Mode::Drain);
        let (cwnd, alpha_before) = (h.s.cwnd, h.cc.ecn_alpha);
        // 2 x BDP + 10: ACKs of 10 packets every 0.2 ms at 50000 packets/s.
        assert_eq!(cwnd, 210);
        // A round with 10% CE: alpha takes it, then inflight_lo is cwnd x
        // (1 - alpha x 85/256).
        ecn_round_at(&mut h, 1, 150);
        let alpha = alpha_before * 15.0 / 16.0 + 0.1 / 16.0;
        assert_eq!(h.cc.ecn_alpha, alpha);
        assert_eq!(h.cc.inflight_lo, (210.0 * (1.0 - alpha * 85.0 / 256.0)) as u32);
        assert_eq!(h.s.cwnd, h.cc.inflight_lo);
    }

    #[test]
    fn a_probe_above_half_ce_cuts_inflight_hi_to_0_7_of_the_target() {
        let mut h = ecn_harness(true);
        for _ in 0..3 {
            ecn_round(&mut h, 0);
        }
        assert_eq!((h.cc.mode, h.cc.phase), (Mode::ProbeBw, Phase::Cruise));
        let mut acks = 0;
        while h.cc.phase != Phase::Up && acks < 100_000 {
            ecn_ack(&mut h, 0, BDP);
            acks += 1;
        }
        assert!(h.cc.bw_probe_samples);
        // 6 of 10 delivered CE: above ecn_thresh. Target min(BDP 100 + 2 of
        // PROBE_UP's budget, cwnd) = 102; inflight_hi = max(10, floor(102 x 180/256)).
        let rs = RateSample { delivered: 10, delivered_ce: 6, interval: h.rtt, acked_sacked: 1, tx_in_flight: 10, prior_in_flight: BDP, rtt: Some(h.rtt), ..Default::default() };
        h.ack_rate(&rs);
        assert_eq!(h.cc.inflight_hi, 71);
        assert_eq!(h.cc.phase, Phase::Down);
    }

    #[test]
    fn probe_rtt_after_five_seconds_without_a_lower_rtt_at_half_the_bdp() {
        let mut h = harness();
        // 10 ms per ACK: 499 ACKs reach 4.99 s.
        for _ in 0..499 {
            ack(&mut h, BDP);
        }
        assert_eq!(h.cc.probe_rtts, 0);
        for _ in 0..2 {
            ack(&mut h, BDP);
        }
        assert_eq!((h.cc.probe_rtts, h.cc.mode), (1, Mode::ProbeRtt));
        // cwnd = max(4, ceil(1000/s x 100 ms x 1/2)) = 50; the window before,
        // 2 x BDP + 10 of ACK aggregation, is saved.
        assert_eq!((h.s.cwnd, h.cc.prior_cwnd), (50, 210));
        // The first ACK at 50 in flight starts 200 ms; the exit is on the
        // first ACK after them (a round has passed by then): ACK 22.
        let mut acks = 0;
        while h.cc.mode == Mode::ProbeRtt && acks < 100 {
            ack(&mut h, 50);
            acks += 1;
        }
        assert_eq!(acks, 22, "ACKs of 10 ms in PROBE_RTT");
        assert_eq!((h.cc.mode, h.cc.phase), (Mode::ProbeBw, Phase::Cruise));
        assert_eq!(h.s.cwnd, 210, "cwnd restored");
        // A lower RTT postpones the next one.
        let mut h = harness();
        for i in 0..499 {
            h.rtt = if i == 300 { 99 * MS } else { 100 * MS };
            ack(&mut h, BDP);
        }
        h.rtt = 100 * MS;
        for _ in 0..100 {
            ack(&mut h, BDP);
        }
        assert_eq!(h.cc.probe_rtts, 0, "5 s after the 99 ms sample at 3 s");
    }

    #[test]
    fn startup_ends_on_loss_above_two_percent_in_six_loss_events_of_a_recovery_round() {
        let mut h = harness();
        for _ in 0..12 {
            ack(&mut h, BDP);
        }
        assert_eq!(h.cc.mode, Mode::Startup);
        // Losses on ACKs 13 to 22 (the loss round opened by ACK 13 ends at
        // ACK 23, whose sample left after ACK 13).
        h.s.ca_state = CaState::Recovery;
        for _ in 0..10 {
            ack_with(&mut h, BDP, |rs| {
                rs.losses = 1;
                rs.lost = 3;
            });
        }
        assert_eq!(h.cc.mode, Mode::Startup, "waits for the end of the round");
        ack_with(&mut h, BDP, |rs| rs.lost = 3);
        assert!(h.cc.full_bw_reached);
        assert_ne!(h.cc.mode, Mode::Startup);
        assert_eq!(h.cc.inflight_hi, BDP, "max(BDP, delivered in the last round)");
    }

    #[test]
    fn a_loss_leaves_the_window_to_bbr3_and_an_rto_restores_it_after() {
        let mut h = harness();
        to_probe_bw(&mut h);
        let cwnd = h.s.cwnd;
        let ssthresh = h.s.ssthresh;
        assert_eq!(h.lose(), ssthresh);
        assert_eq!(h.s.cwnd, cwnd);
        h.timeout();
        assert_eq!(h.s.cwnd, 1);
        assert_eq!((cwnd, h.cc.inflight_lo), (210, 210), "inflight_lo from the window before the RTO");
        // Leaving Loss restores the window (capped by the target, 2 x BDP +
        // the 10 of ACK aggregation).
        ack(&mut h, 1);
        assert_eq!(h.s.ca_state, CaState::Open);
        assert_eq!(h.s.cwnd, 210);
    }

    /// One ACK of `acked` packets `dt` after the last (the sample still at RATE).
    fn ack_after(h: &mut Harness<Bbr3>, dt: Time, acked: u32) {
        h.advance(dt);
        h.s.in_flight = BDP;
        let mut rs = sample(h, BDP);
        rs.acked_sacked = acked;
        h.ack_rate(&rs);
    }

    /// 40 ms without ACKs, then `n` ACKs of 10 packets 1 ms apart: the first
    /// is behind bw x 40 ms = 40 and starts an epoch; the k-th then finds
    /// 10k acked where bw x (k - 1) ms = k - 1 were expected: extra 9k + 1.
    fn burst(h: &mut Harness<Bbr3>, n: u32) {
        ack_after(h, 40 * MS, PER_ACK);
        for _ in 1..n {
            ack_after(h, MS, PER_ACK);
        }
    }

    #[test]
    fn an_ack_burst_raises_the_cwnd_target_by_the_excess_over_bw_for_five_to_ten_rounds() {
        let mut h = harness();
        to_probe_bw(&mut h);
        // An even stream: each ACK's 10 packets arrive when 10 were expected.
        assert_eq!((h.cc.phase, h.cc.ack_aggregation_cwnd(), h.s.cwnd), (Phase::Cruise, 10, 210));
        // Extra 10, 19, 28, 37, 46: cwnd min(cwnd + 10, 200 + extra) each ACK.
        burst(&mut h, 5);
        assert_eq!(h.cc.aggregation.extra_acked.iter().max(), Some(&46));
        assert_eq!((h.cc.ack_aggregation_cwnd(), h.s.cwnd), (46, 246));
        // 50 ms of silence: 54 expected, 50 acked, a new epoch (extra 10).
        ack_after(&mut h, 50 * MS, PER_ACK);
        let counted = h.cc.aggregation.win_rtts;
        // The 46 leaves when the window restarts twice: the current slot's
        // counter reaches 5 after 5 - counted round starts, the other's 5 later.
        let mut rounds = 0;
        while h.cc.ack_aggregation_cwnd() == 46 && rounds < 20 {
            ack(&mut h, BDP);
            rounds += h.cc.round_start as u32;
            assert!(h.s.cwnd == 246 || h.cc.ack_aggregation_cwnd() == 10);
        }
        assert_eq!(rounds, 10 - counted);
        assert!((6..=10).contains(&rounds));
        assert_eq!((h.cc.ack_aggregation_cwnd(), h.s.cwnd), (10, 210));
        // extra_acked_gain 0: no allowance, cwnd at 2 x BDP.
        let mut h = Harness::new(bbr3(serde_json::json!({"extra_acked_gain": 0.0})), 10);
        to_probe_bw(&mut h);
        burst(&mut h, 5);
        assert_eq!((h.cc.ack_aggregation_cwnd(), h.s.cwnd), (0, 200));
    }

    #[test]
    fn the_allowance_is_capped_at_bw_x_100_ms_extra_acked_at_cwnd_and_startup_keeps_two_rounds() {
        let mut h = harness();
        to_probe_bw(&mut h);
        // Extra 9k + 1 for k = 1..15: cwnd follows 201 + 9k to 300 at k = 11
        // (extra 100), where bw x 100 ms = 100 caps it; the filter keeps 136.
        burst(&mut h, 15);
        assert_eq!(h.cc.aggregation.extra_acked.iter().max(), Some(&136));
        assert_eq!((h.cc.ack_aggregation_cwnd(), h.s.cwnd), (100, 300));
        // In STARTUP at cwnd 20 an ACK of 30 packets 1 ms after one of 10
        // finds 40 acked where 1 was expected: extra 39, held to cwnd 20.
        let mut h = harness();
        ack(&mut h, BDP);
        assert_eq!(h.s.cwnd, 20);
        ack_after(&mut h, MS, 30);
        assert_eq!(h.cc.aggregation.extra_acked.iter().max(), Some(&20));
        // After 50 ms more (51 expected, 40 acked: a new epoch) even ACKs add
        // 10 each; before the pipe is full each round start restarts a slot,
        // so the 20 is gone at the second (delivered 110 and 210).
        ack_after(&mut h, 50 * MS, PER_ACK);
        let mut rounds = 0;
        while h.cc.ack_aggregation_cwnd() == 20 && rounds < 10 {
            ack(&mut h, BDP);
            rounds += h.cc.round_start as u32;
        }
        assert_eq!((rounds, h.cc.ack_aggregation_cwnd(), h.cc.mode), (2, 10, Mode::Startup));
    }

    #[test]
    fn beta_of_one_is_refused() {
        let p = Map::from_iter([("beta".to_string(), serde_json::Value::from(1.0))]);
        let err = crate::cc::Cc::from_config("bbr3", &p).unwrap_err();
        assert_eq!(err.field, "params.beta");
    }
}
