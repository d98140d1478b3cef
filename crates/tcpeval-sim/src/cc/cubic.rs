//! CUBIC (RFC 9438; Ha, Rhee & Xu 2008) as Linux ships it (`net/ipv4/tcp_cubic.c`,
//! v2.3 as in Linux 5.x/6.x), including HyStart (ack-train and delay detection).
//!
//! After a loss the window follows W(t) = C (t - K)^3 + W_max, with
//! K = cbrt(W_max (1 - beta) / C): concave below W_max, convex above. Linux
//! evaluates the curve one minimum RTT ahead (t + delay_min), turns the distance
//! to the target into `cnt` (packets acknowledged per +1) for
//! `tcp_cong_avoid_ai`, and never grows faster than 1.5x per RTT (cnt >= 2).
//! The Reno-friendly ("TCP-friendly") estimate grows by one packet per
//! cwnd * 15/8 packets acknowledged, Linux's integer form of
//! 3 (1 + beta) / (1 - beta) / 8 (alpha = 0.53); when it is ahead, CUBIC keeps up.
//!
//! Differences from RFC 9438, as in Linux: no switch of the Reno-friendly alpha to
//! 1 once it passes cwnd_prior (RFC 9438 section 4.3); W_max is forgotten at an
//! RTO (RFC 9438 section 4.8 keeps it). K is computed in floating point (Linux
//! uses a table-driven integer cube root accurate to ~0.2%).

use super::params::{self, AlgorithmConfig};
use super::{after_slow_start, cong_avoid_ai, AckSample, BicUndo, CaEvent, CaState, CcError, CcState, CongestionOps};
use crate::time::{Time, MS, SEC, US};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux BICTCP_BETA_SCALE and the default beta (717/1024 = 0.7).
const BETA_SCALE: u32 = 1024;
const BETA: u32 = 717;
/// Linux bic_scale: C = bic_scale * 10 / 1024 = 0.4 (RFC 9438 section 5.1).
const BIC_SCALE: u32 = 41;
/// Time is measured in 1/1024 s (Linux BICTCP_HZ = 10).
const BICTCP_HZ: u32 = 10;
/// Before the first loss, grow at least 5% per RTT (Linux caps cnt at 20).
const NO_LOSS_CNT_CAP: u32 = 20;
/// Linux recomputes cnt at most every HZ/32 if cwnd did not change.
const UPDATE_GAP: Time = SEC / 32;
/// HyStart (Linux defaults): active from cwnd 16; ACKs within 2 ms form a train;
/// the delay test takes the minimum of 8 samples per round and fires above
/// delay_min + clamp(delay_min / 8, 4 ms, 16 ms).
const HYSTART_LOW_WINDOW: u32 = 16;
const HYSTART_ACK_DELTA: Time = 2 * MS;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN: Time = 4 * MS;
const HYSTART_DELAY_MAX: Time = 16 * MS;
/// Linux 5.7 on (`hystart_ack_delay`, "tcp_cubic: tweak Hystart detection for
/// short RTT flows"): the ACK train may run on by the time four 64 KB GSO
/// packets take at the socket's pacing rate, at most 1 ms, for TSO/GRO delays.
const GSO_MAX_BYTES: f64 = 65536.0;
const HYSTART_ACK_DELAY_MAX: Time = MS;
/// Delay samples within one second after an epoch starts are ignored.
const EPOCH_SAMPLE_HOLDOFF: Time = SEC;
/// Packets per ACK are kept << 4 (ACK_RATIO_SHIFT), starting at 2, and in 3.x
/// clamped to 32 (ACK_RATIO_LIMIT); versions before 4.0 divide cnt by them.
const ACK_RATIO_SHIFT: u32 = 4;
const ACK_RATIO_LIMIT: u32 = 32 << ACK_RATIO_SHIFT;
/// CUBIC 2.1: cnt before the first loss (`if (ca->loss_cwnd == 0) ca->cnt = 50`)
/// and the module parameter `max_increment` = 16 bounding growth in the convex
/// region to 16 packets per 100 ms of delay_min (net/ipv4/tcp_cubic.c at 2.6.22).
const V2_1_NO_LOSS_CNT: u32 = 50;
const V2_1_MAX_INCREMENT: u64 = 16;

/// The CUBIC code of a stack's era (crate::stack); the parameter defaults of
/// the era (beta 819 and no HyStart for 2.1) come from the stack too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CubicVersion {
    /// 2.3 as in Linux 5.7-6.x, described above (4.x had the same code but
    /// for HyStart's `hystart_ack_delay`, which came in 5.7).
    #[default]
    Current,
    /// 2.1 (Linux 2.6.19-2.6.24; net/ipv4/tcp_cubic.c read at 2.6.22): cnt = 50
    /// before the first loss, growth above W_max bounded by max_increment,
    /// cnt divided by the delayed-ACK ratio, the curve re-evaluated on every
    /// update, no 1.5x-per-RTT bound (cnt >= 1) and no shift after idle.
    V2_1,
    /// 2.3 before Linux 4.0's stretch-ACK fixes (3.x; read at 3.16.0,
    /// sndrzt/linux-3.16 e8dbc28b, net/ipv4/tcp_cubic.c): cnt divided by the
    /// delayed-ACK ratio (clamped to 1..32), no 1.5x bound (cnt >= 2 came in
    /// 4.x), no epoch shift after idle (4.3); HyStart's delay test on the
    /// round's first 8 RTT samples with a margin of delay_min / 16.
    V2_3PerAck,
}

/// CUBIC's parameters (`params`): the module parameters of Linux
/// net/ipv4/tcp_cubic.c, beta and C given as numbers and kept in Linux's
/// integer units (beta in 1/1024, C as bic_scale = C * 1024 / 10, rounded).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CubicConfig {
    /// The window after a loss as a fraction of W_max (module parameter `beta`
    /// = 717/1024 = 0.7002; RFC 9438 section 4.6: 0.7; 2.6-era kernels: 0.8).
    #[schemars(range(min = 0.05, max = 0.95))]
    pub beta: f64,
    /// C of W(t) = C (t - K)^3 + W_max (module parameter `bic_scale` = 41,
    /// C = 41 * 10 / 1024 = 0.4004; RFC 9438 section 5: 0.4).
    #[schemars(range(min = 0.01, max = 10))]
    pub c: f64,
    /// Lower W_max when a loss comes below the previous one (`fast_convergence`
    /// = 1; RFC 9438 section 4.7).
    pub fast_convergence: bool,
    /// Keep up with the Reno-friendly estimate (`tcp_friendliness` = 1; RFC 9438
    /// section 4.3).
    pub tcp_friendliness: bool,
    /// HyStart in slow start (`hystart` = 1).
    pub hystart: bool,
    /// HyStart acts from this window (`hystart_low_window` = 16).
    pub hystart_low_window: u32,
    /// HyStart's detectors: 1 ack train, 2 delay, 3 both (`hystart_detect` = 3).
    pub hystart_detect: u32,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            beta: BETA as f64 / BETA_SCALE as f64,
            c: BIC_SCALE as f64 * 10.0 / 1024.0,
            fast_convergence: true,
            tcp_friendliness: true,
            hystart: true,
            hystart_low_window: HYSTART_LOW_WINDOW,
            hystart_detect: 3,
        }
    }
}

impl AlgorithmConfig for CubicConfig {
    fn check(&self, _alg: &str) -> Result<(), CcError> {
        if self.hystart_detect > 3 {
            return Err(params::error("hystart_detect", "1 (ack train), 2 (delay) or 3 (both)".into()));
        }
        Ok(())
    }
}

impl CubicConfig {
    /// beta in Linux's 1/1024 units (717 by default).
    pub fn beta_scaled(&self) -> u32 {
        (self.beta * BETA_SCALE as f64).round() as u32
    }

    /// Linux bic_scale (41 by default).
    fn bic_scale(&self) -> u32 {
        ((self.c * 1024.0 / 10.0).round() as u32).max(1)
    }

    fn ack_train(&self) -> bool {
        self.hystart_detect & 1 != 0
    }

    fn delay_detect(&self) -> bool {
        self.hystart_detect & 2 != 0
    }

    /// Linux cube_rtt_scale = bic_scale * 10.
    fn cube_rtt_scale(&self) -> u128 {
        self.bic_scale() as u128 * 10
    }

    /// Linux beta_scale: 8 (1024 + beta) / 3 / (1024 - beta), in integers.
    fn beta_scale(&self) -> u32 {
        let beta = self.beta_scaled();
        8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Cubic {
    cfg: CubicConfig,
    version: CubicVersion,
    cnt: u32,
    last_max_cwnd: u32,
    /// cwnd at the last loss (3.16's `loss_cwnd`, for an undo).
    loss_cwnd: u32,
    last_cwnd: u32,
    last_time: Time,
    origin_point: u32,
    /// Time from the epoch start to the origin point, in 1/1024 s.
    k: u64,
    delay_min: Time,
    epoch_start: Option<Time>,
    ack_cnt: u32,
    tcp_cwnd: u32,
    // HyStart
    found: bool,
    round_start: Time,
    end_seq: u64,
    last_ack: Time,
    curr_rtt: Time,
    sample_cnt: u32,
    /// Packets per ACK << 4 (versions before 4.0 only).
    delayed_ack: u32,
}

impl Cubic {
    pub fn new(cfg: CubicConfig) -> Self {
        Cubic { cfg, delayed_ack: 2 << ACK_RATIO_SHIFT, ..Default::default() }
    }

    /// Run the code of an earlier version (crate::stack).
    pub fn set_version(&mut self, version: CubicVersion) {
        self.version = version;
    }

    fn reset(&mut self) {
        let (version, loss_cwnd) = (self.version, self.loss_cwnd);
        *self = Cubic::new(self.cfg.clone());
        self.version = version;
        // 2.6.22's bictcp_reset zeroes loss_cwnd, 3.16.0's leaves it.
        if version != CubicVersion::V2_1 {
            self.loss_cwnd = loss_cwnd;
        }
    }

    /// The undo rule of this version (`bictcp_undo_cwnd`).
    fn undo_rule(&self) -> BicUndo {
        match self.version {
            CubicVersion::V2_1 => BicUndo::LastMax,
            CubicVersion::V2_3PerAck => BicUndo::LossCwnd,
            CubicVersion::Current => BicUndo::Stack,
        }
    }

    fn hystart_reset(&mut self, s: &CcState) {
        self.round_start = s.now;
        self.last_ack = s.now;
        self.end_seq = s.snd_nxt;
        self.curr_rtt = Time::MAX;
        self.sample_cnt = 0;
    }

    /// Linux `bictcp_update`: set `cnt` from the cubic curve and the
    /// Reno-friendly estimate.
    /// `acked` is the ACK's credit (one per ACK in the per-ACK eras).
    fn update(&mut self, s: &CcState, acked: u32) {
        let cwnd = s.cwnd;
        self.ack_cnt = self.ack_cnt.saturating_add(acked);
        if self.last_cwnd == cwnd && s.now.saturating_sub(self.last_time) <= UPDATE_GAP {
            return;
        }
        // The curve is re-evaluated at most once per millisecond (Linux: per
        // jiffy, from 4.0's "tcp: fix timing issue in CUBIC slope
        // calculation"); before 4.0 (2.1, and 2.3 in 3.x) on every update, so
        // cnt is divided by the ACK ratio once per evaluation, never twice.
        let v2_1 = self.version == CubicVersion::V2_1;
        let every_update = self.version != CubicVersion::Current;
        if self.epoch_start.is_none() || s.now / MS != self.last_time / MS || every_update {
            self.last_cwnd = cwnd;
            self.last_time = s.now;
            let t = self.cubic_cnt(s, acked);
            if v2_1 {
                self.v2_1_bounds(s.cwnd, t);
            }
        }
        if self.cfg.tcp_friendliness {
            self.reno_friendly(cwnd);
        }
        self.cnt = match self.version {
            CubicVersion::Current => self.cnt.max(2),
            CubicVersion::V2_1 | CubicVersion::V2_3PerAck => ((self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack.max(1)).max(1),
        };
    }

    /// CUBIC 2.1's cnt rules after the curve (2.6.22 `bictcp_update`): above
    /// the origin no faster than max_increment packets per 100 ms of
    /// delay_min, and cnt = 50 until the first loss (replacing 2.3's cap of 20).
    /// `t` is the curve's time (1/1024 s) as `cubic_cnt` evaluated it.
    fn v2_1_bounds(&mut self, cwnd: u32, t: u64) {
        if self.delay_min > 0 && t >= self.k {
            // cwnd * HZ * 8 / (10 * max_increment * delay_min), delay_min in jiffies << 3.
            let min_cnt = (cwnd as u64 * SEC) / (10 * V2_1_MAX_INCREMENT * self.delay_min);
            self.cnt = self.cnt.max(min_cnt.min(u32::MAX as u64) as u32);
        }
        if self.last_max_cwnd == 0 {
            self.cnt = V2_1_NO_LOSS_CNT;
        }
    }

    /// Returns the time on the curve, t, in 1/1024 s.
    fn cubic_cnt(&mut self, s: &CcState, acked: u32) -> u64 {
        let cwnd = s.cwnd;
        let epoch = *self.epoch_start.get_or_insert_with(|| {
            self.ack_cnt = acked;
            self.tcp_cwnd = cwnd;
            s.now
        });
        if epoch == s.now && self.ack_cnt == acked {
            if self.last_max_cwnd <= cwnd {
                self.k = 0;
                self.origin_point = cwnd;
            } else {
                // K = cbrt((W_max - cwnd) / C) seconds = cbrt(2^40 / (bic_scale*10) * dW) in 1/1024 s.
                let cube_factor = (1u128 << (10 + 3 * BICTCP_HZ)) as f64 / self.cfg.cube_rtt_scale() as f64;
                self.k = (cube_factor * (self.last_max_cwnd - cwnd) as f64).cbrt() as u64;
                self.origin_point = self.last_max_cwnd;
            }
        }
        let elapsed = s.now - epoch + self.delay_min;
        let t = (elapsed as u128 * (1 << BICTCP_HZ) / SEC as u128) as u64;
        let offs = t.abs_diff(self.k) as u128;
        let delta = ((self.cfg.cube_rtt_scale() * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)) as u64;
        let target = if t < self.k {
            (self.origin_point as u64).saturating_sub(delta)
        } else {
            self.origin_point as u64 + delta
        };
        self.cnt = if target > cwnd as u64 { (cwnd as u64 / (target - cwnd as u64)).max(1) as u32 } else { 100 * cwnd };
        if self.last_max_cwnd == 0 && self.version != CubicVersion::V2_1 {
            self.cnt = self.cnt.min(NO_LOSS_CNT_CAP);
        }
        t
    }

    fn reno_friendly(&mut self, cwnd: u32) {
        let per_packet = ((cwnd as u64 * self.cfg.beta_scale() as u64) >> 3).max(1) as u32;
        while self.ack_cnt > per_packet {
            self.ack_cnt -= per_packet;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
    }

    fn hystart_update(&mut self, s: &mut CcState, delay: Time) {
        if s.snd_una > self.end_seq {
            self.hystart_reset(s);
        }
        if self.cfg.ack_train() && s.now.saturating_sub(self.last_ack) <= HYSTART_ACK_DELTA {
            self.last_ack = s.now;
            // Not paced: the train ends after half the minimum delay.
            let threshold = (self.delay_min + self.ack_delay(s)) / 2;
            if s.now - self.round_start > threshold {
                self.found = true;
                s.ssthresh = s.cwnd;
            }
        }
        if self.cfg.delay_detect() {
            // 3.x took the round's RTT from its first 8 samples only.
            if self.sample_cnt < HYSTART_MIN_SAMPLES || self.version != CubicVersion::V2_3PerAck {
                self.curr_rtt = self.curr_rtt.min(delay);
            }
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else if self.curr_rtt > self.delay_min + self.hystart_delay_margin() {
                self.found = true;
                s.ssthresh = s.cwnd;
            }
        }
    }

    /// `hystart_ack_delay` (5.7 on; none before): 4 GSO packets at Linux's
    /// `sk_pacing_rate`, which `tcp_update_pacing_rate` sets for every flow
    /// (paced or not; `super::linux_pacing_bytes_per_ns`, here with the packets
    /// in flight, which in a slow start before any loss are `packets_out`);
    /// capped at 1 ms. Below about 2 Gbit/s of pacing rate the cap decides.
    fn ack_delay(&self, s: &CcState) -> Time {
        if self.version != CubicVersion::Current || s.srtt == 0 {
            return 0;
        }
        let bytes_per_ns = super::linux_pacing_bytes_per_ns(s, s.in_flight);
        let delay = (4.0 * GSO_MAX_BYTES / bytes_per_ns) as Time;
        delay.min(HYSTART_ACK_DELAY_MAX)
    }

    /// How far above delay_min the round's RTT must be for HyStart's delay
    /// test: clamp(delay_min / 8, 4 ms, 16 ms) today; clamp(delay_min / 16,
    /// 4 ms, 16 ms) in 3.x (tcp_cubic.c read at 3.16.0:
    /// `HYSTART_DELAY_THRESH(ca->delay_min >> 4)` with delay_min in ms << 3).
    fn hystart_delay_margin(&self) -> Time {
        let divisor = if self.version == CubicVersion::V2_3PerAck { 16 } else { 8 };
        (self.delay_min / divisor).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)
    }

    /// Before 4.0: the EWMA of packets per ACK, ratio += sample - ratio / 16,
    /// in the Open state (`bictcp_acked`); 3.x clamps it to 1..32.
    fn track_ack_ratio(&mut self, acked: u32) {
        let ratio = (self.delayed_ack - (self.delayed_ack >> ACK_RATIO_SHIFT)).saturating_add(acked);
        self.delayed_ack = match self.version {
            CubicVersion::V2_3PerAck => ratio.clamp(1, ACK_RATIO_LIMIT),
            _ => ratio.max(1),
        };
    }

    /// Current W_max (packets), for tests and traces.
    pub fn w_max(&self) -> u32 {
        self.last_max_cwnd
    }

    /// Current K in seconds.
    pub fn k_seconds(&self) -> f64 {
        self.k as f64 / 1024.0
    }
}

impl CongestionOps for Cubic {
    fn init(&mut self, s: &mut CcState) {
        self.reset();
        if self.cfg.hystart {
            self.hystart_reset(s);
        }
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.epoch_start = None;
        let cwnd = s.cwnd;
        self.loss_cwnd = cwnd;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.cfg.fast_convergence {
            (cwnd as u64 * (BETA_SCALE + self.cfg.beta_scaled()) as u64 / (2 * BETA_SCALE) as u64) as u32
        } else {
            cwnd
        };
        ((cwnd as u64 * self.cfg.beta_scaled() as u64 / BETA_SCALE as u64) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        let acked = after_slow_start(s, acked);
        if acked == 0 {
            return;
        }
        self.update(s, s.growth.credit(acked));
        let cnt = self.cnt;
        cong_avoid_ai(s, cnt, acked);
    }

    fn pkts_acked(&mut self, s: &mut CcState, sample: &AckSample) {
        if self.version != CubicVersion::Current && s.ca_state == CaState::Open {
            self.track_ack_ratio(sample.acked);
        }
        let Some(rtt) = sample.rtt else { return };
        if self.epoch_start.is_some_and(|e| s.now.saturating_sub(e) < EPOCH_SAMPLE_HOLDOFF) {
            return;
        }
        let delay = rtt.max(US);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && self.cfg.hystart && s.in_slow_start() && s.cwnd >= self.cfg.hystart_low_window {
            self.hystart_update(s, delay);
        }
    }

    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        if state == CaState::Loss {
            self.reset();
            self.hystart_reset(s);
        }
    }

    fn undo_cwnd(&mut self, s: &CcState) -> Option<u32> {
        self.undo_rule().window(s.cwnd, self.last_max_cwnd, self.loss_cwnd)
    }

    fn cwnd_event(&mut self, s: &mut CcState, event: CaEvent) {
        // After idle, shift the epoch so the curve does not jump (Linux 4.3 on).
        if event == CaEvent::TxStart && self.version == CubicVersion::Current {
            if let Some(e) = self.epoch_start {
                let idle = s.now.saturating_sub(s.last_send_time);
                self.epoch_start = Some((e + idle).min(s.now));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::harness::Harness;
    use crate::cc::Cc;
    use crate::stack::Stack;

    fn cubic(hystart: bool) -> Cubic {
        Cubic::new(CubicConfig { hystart, ..CubicConfig::default() })
    }

    /// Drive CA after a loss at `w_max` for `secs`, one window per RTT.
    fn after_loss(w_max: u32, rtt: Time) -> Harness<Cubic> {
        let mut h = Harness::new(cubic(false), w_max);
        h.rtt = rtt;
        h.s.ssthresh = 1; // in CA
        h.cc.delay_min = rtt;
        h.lose();
        h
    }

    #[test]
    fn decrease_is_beta_and_k_is_the_cube_root() {
        let mut h = after_loss(1000, 100 * MS);
        assert_eq!(h.s.cwnd, 700); // 1000 * 717 / 1024 = 700.2
        h.ack(1); // the first ACK in CA starts the epoch
        // K = cbrt((1000 - 700) / 0.4) = 9.086 s (C = 410/1024)
        let k: f64 = ((1000.0 - 700.0) / (410.0 / 1024.0_f64)).cbrt();
        assert!((h.cc.k_seconds() - k).abs() < 0.002, "K {} vs {k}", h.cc.k_seconds());
    }

    #[test]
    fn window_follows_the_cubic_curve() {
        // W(t) = C (t - K)^3 + W_max with W_max = 1000; the curve is evaluated
        // one RTT ahead, and growth is per ACK, so compare within a few packets.
        let rtt = 50 * MS;
        let mut h = after_loss(1000, rtt);
        let c: f64 = 410.0 / 1024.0;
        let k: f64 = (300.0 / c).cbrt();
        let curve = |t: f64| c * (t - k).powi(3) + 1000.0;
        let mut t = 0.0;
        for check in [k / 2.0, k, 1.5 * k] {
            while t < check {
                h.ack_round();
                t += rtt as f64 / 1e9;
            }
            let want = curve(t + rtt as f64 / 1e9);
            let got = h.s.cwnd as f64;
            assert!((got - want).abs() <= 0.01 * want + 3.0, "t={t:.2}: cwnd {got}, curve {want:.1}");
        }
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_losing_below_it() {
        let mut h = after_loss(1000, 100 * MS);
        assert_eq!(h.cc.w_max(), 1000);
        h.s.cwnd = 800;
        h.lose();
        assert_eq!(h.cc.w_max(), 800 * (1024 + 717) / 2048); // 680
        let mut slow = Harness::new(Cubic::new(CubicConfig { fast_convergence: false, ..Default::default() }), 1000);
        slow.lose();
        slow.s.cwnd = 800;
        slow.lose();
        assert_eq!(slow.cc.w_max(), 800);
    }

    /// Window after `rounds` RTTs of CA following a loss at `w_max`.
    fn grow(cfg: CubicConfig, w_max: u32, rtt: Time, rounds: u32) -> (u32, u32) {
        let mut h = Harness::new(Cubic::new(cfg), w_max);
        h.rtt = rtt;
        h.s.ssthresh = 1;
        h.lose();
        let start = h.s.cwnd;
        for _ in 0..rounds {
            h.ack_round_in_pairs();
        }
        (start, h.s.cwnd)
    }

    #[test]
    fn reno_friendly_region_dominates_at_small_windows_and_short_rtts() {
        // W_max = 20 at a 5 ms RTT: in 100 RTTs (0.5 s, K = 2.5 s) the cubic curve
        // adds under 3 packets, while the Reno-friendly estimate adds one packet per
        // cwnd * 15/8 acknowledged, about 0.53 per RTT: ~53. Linux re-evaluates
        // cnt at most every 1/32 s while cwnd is unchanged, which costs a little.
        let base = CubicConfig { hystart: false, ..CubicConfig::default() };
        let (start, friendly) = grow(base.clone(), 20, 5 * MS, 100);
        let (_, cubic_only) = grow(CubicConfig { tcp_friendliness: false, ..base }, 20, 5 * MS, 100);
        assert!(friendly - start >= 42, "Reno-friendly growth {start} -> {friendly}");
        assert!(cubic_only - start <= 4, "cubic-only growth {start} -> {cubic_only}");
    }

    #[test]
    fn hystart_delay_detection_ends_slow_start_on_an_rtt_rise() {
        let mut h = Harness::new(Cubic::new(CubicConfig { hystart_detect: 2, ..Default::default() }), 10);
        h.cc.init(&mut h.s);
        h.rtt = 100 * MS;
        h.ack_round();
        h.ack_round(); // cwnd 40, delay_min 100 ms
        assert!(h.s.in_slow_start());
        h.rtt = 100 * MS + 20 * MS; // above delay_min + clamp(12.5 ms, 4, 16) = 112.5 ms
        h.ack_round();
        assert!(!h.s.in_slow_start(), "slow start ended at cwnd {}", h.s.cwnd);
        assert_eq!(h.s.ssthresh, h.s.cwnd.min(h.s.ssthresh));
    }

    /// Two rounds at 100 ms from cwnd 10 (cwnd 40, delay_min 100 ms), then a
    /// round whose RTT samples are `rtts` (the last one repeated): whether
    /// HyStart's delay test ended slow start, on linux-3.16 and on linux-6.6.
    fn delay_test_fires(rtts: &[Time]) -> [bool; 2] {
        let params = serde_json::json!({"hystart_detect": 2}).as_object().unwrap().clone();
        [Stack::Linux316, Stack::Linux66].map(|stack| {
            let (cc, profile) = stack.build("cubic", &params).unwrap();
            let mut h = Harness::new(cc, 10);
            h.s.growth = profile.growth;
            h.ack_round();
            h.ack_round();
            let w = h.s.cwnd;
            h.s.snd_nxt = h.s.snd_una + w as u64;
            for i in 0..w as usize {
                h.rtt = rtts[i.min(rtts.len() - 1)];
                h.advance(h.rtt / w as u64);
                h.ack(1);
            }
            !h.s.in_slow_start()
        })
    }

    #[test]
    fn linux_3_16_hystart_fires_at_delay_min_over_16() {
        // A 10 ms rise over delay_min 100 ms: 3.16's margin is clamp(100 / 16
        // = 6.25 ms, 4, 16) (fires), today's clamp(100 / 8 = 12.5 ms, 4, 16)
        // (does not).
        assert_eq!(delay_test_fires(&[110 * MS]), [true, false]);
        assert_eq!(delay_test_fires(&[105 * MS]), [false, false]);
    }

    #[test]
    fn linux_3_16_hystart_takes_the_round_s_rtt_from_its_first_8_samples() {
        // 8 samples at 120 ms, then 100 ms: 3.16 keeps curr_rtt = 120 ms and
        // fires on the 9th (120 > 106.25); today's takes the 9th into the
        // minimum (100 ms) and does not.
        let mut rtts = vec![120 * MS; 8];
        rtts.push(100 * MS);
        assert_eq!(delay_test_fires(&rtts), [true, false]);
    }

    /// An ACK train on a 2 ms path at linux-6.6: cwnd 20, one ACK per 100 us
    /// for `train`; whether HyStart's train test ended slow start.
    fn train_fires(train: Time) -> bool {
        let params = serde_json::json!({"hystart_detect": 1}).as_object().unwrap().clone();
        let (cc, profile) = Stack::Linux66.build("cubic", &params).unwrap();
        let mut h = Harness::new(cc, 20);
        h.s.growth = profile.growth;
        (h.rtt, h.s.srtt) = (2 * MS, 2 * MS);
        h.s.snd_nxt = h.s.snd_una + 1000; // one round throughout
        h.ack(1); // starts the round; delay_min 2 ms
        for _ in 0..train / (100 * US) {
            h.advance(100 * US);
            h.ack(1);
        }
        !h.s.in_slow_start()
    }

    #[test]
    fn hystart_s_ack_train_runs_on_by_the_gso_allowance() {
        // Pacing rate 2 x 20 x 1448 B / 2 ms = 29 MB/s: four 64 KB packets take
        // 9 ms, capped at 1 ms, so the train ends past (2 + 1) / 2 = 1.5 ms, not
        // at delay_min / 2 = 1 ms as before Linux 5.7.
        assert!(!train_fires(1200 * US));
        assert!(train_fires(1600 * US));
    }

    #[test]
    fn hystart_ignores_a_steady_rtt() {
        let mut h = Harness::new(Cubic::new(CubicConfig { hystart_detect: 2, ..Default::default() }), 10);
        h.cc.init(&mut h.s);
        for _ in 0..8 {
            h.ack_round();
        }
        assert!(h.s.in_slow_start());
        assert_eq!(h.s.cwnd, 2560);
    }

    #[test]
    fn a_timeout_forgets_w_max() {
        let mut h = after_loss(1000, 100 * MS);
        h.timeout();
        assert_eq!(h.cc.w_max(), 0);
    }

    /// Linux 2.6.22 (CUBIC 2.1, per-ACK counting): after a loss at 1000 the
    /// window is 1000 * 819 / 1024 = 799 (today 700).
    #[test]
    fn linux_2_6_22_backs_off_to_beta_819() {
        let mut old = Harness::for_stack(Stack::Linux2622, "cubic", 1000);
        let mut new = Harness::for_stack(Stack::Linux66, "cubic", 1000);
        assert_eq!((old.lose(), new.lose()), (799, 700));
    }

    /// Before the first loss CUBIC 2.1 sets cnt = 50, divided by the
    /// delayed-ACK ratio (2 packets per ACK: 50 * 16 / 32 = 25), counted per
    /// ACK: +1 per 26 ACKs, so one round of 50 ACKs from 100 gives 101. Today
    /// cnt is min(curve, 20) counted per packet: 100 packets / 20 = +5.
    /// Linux 3.16 (2.3 per ACK): cnt 20 * 16 / 32 = 10, +1 per 11 ACKs: 104.
    #[test]
    fn before_the_first_loss_each_era_grows_at_its_own_cnt() {
        for (stack, want) in [(Stack::Linux2622, 101), (Stack::Linux316, 104), (Stack::Linux66, 105)] {
            let mut h = Harness::for_stack(stack, "cubic", 100);
            h.s.ssthresh = 10;
            h.ack_round_in_pairs();
            assert_eq!(h.s.cwnd, want, "{}", stack.name());
        }
    }

    /// Before 4.0 every update that passes the HZ/32 gate re-evaluates the
    /// curve (no once-per-jiffy rule), so cnt is divided by the ACK ratio once.
    /// 50 ACKs of 2 arriving at one instant from 100, before the first loss:
    /// 3.16 has cnt 20 * 16 / 32 = 10 after every increase, +1 per 11 ACKs:
    /// 104 (dividing the divided cnt again as cwnd moves within the
    /// millisecond would give 10, 5, 2, 1: about 120). 2.6.22: cnt 50 / 2 =
    /// 25, +1 per 26 ACKs: 101; today: once per millisecond, cnt 20 per
    /// packet: 105.
    #[test]
    fn acks_within_one_millisecond_divide_cnt_once() {
        for (stack, want) in [(Stack::Linux2622, 101), (Stack::Linux316, 104), (Stack::Linux66, 105)] {
            let mut h = Harness::for_stack(stack, "cubic", 100);
            h.s.ssthresh = 10;
            for _ in 0..50 {
                h.ack(2);
            }
            assert_eq!(h.s.cwnd, want, "{}", stack.name());
        }
    }

    /// Versions before 4.0 learn packets per ACK in the Open state: ACKs of
    /// one packet take the ratio (x16) from 32 to 31, where the integer EWMA
    /// stops (31 - 31/16 + 1 = 31), and 3.x clamps it to 32 packets per ACK.
    #[test]
    fn older_versions_track_the_delayed_ack_ratio() {
        let mut h = Harness::for_stack(Stack::Linux316, "cubic", 100);
        h.ack(1);
        h.ack(1);
        assert_eq!(ratio(&h), 31);
        h.ack(1000);
        assert_eq!(ratio(&h), ACK_RATIO_LIMIT);
        let mut today = Harness::for_stack(Stack::Linux66, "cubic", 100);
        today.ack(1);
        assert_eq!(ratio(&today), 2 << ACK_RATIO_SHIFT, "not used today");
    }

    fn ratio(h: &Harness<Cc>) -> u32 {
        let Cc::Cubic(c) = &h.cc else { unreachable!("built as cubic") };
        c.delayed_ack
    }

    #[test]
    fn params_are_checked() {
        let parse = |v: serde_json::Value| params::parse::<CubicConfig>("cubic", "cubic", v.as_object().unwrap());
        assert_eq!(parse(serde_json::json!({"beta": 0.8})).unwrap().beta_scaled(), 819);
        assert_eq!(CubicConfig::default().beta_scaled(), BETA);
        assert_eq!(CubicConfig::default().bic_scale(), BIC_SCALE);
        assert_eq!(parse(serde_json::json!({"beta": 0.8, "gamma": 1})).unwrap_err().field, "params.gamma");
        assert_eq!(parse(serde_json::json!({"hystart_detect": 4})).unwrap_err().field, "params.hystart_detect");
    }
}
