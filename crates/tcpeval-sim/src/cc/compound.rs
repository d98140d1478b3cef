//! Compound TCP (Tan, Song, Zhang & Sridharan, INFOCOM 2006;
//! draft-sridharan-tcpm-ctcp-02). The send window is the sum of a loss-based
//! window (Reno: +1 per RTT, halved on loss) and a delay-based window dwnd that
//! grows like a high-speed protocol while the path is not queueing and shrinks
//! once it is. Once per RTT, with diff = win (RTT - baseRTT) / RTT the packets
//! queued (RTT the minimum of the round):
//!     diff < gamma:  dwnd += max(alpha win^k - 1, 0)
//!     diff >= gamma: dwnd = max(dwnd - zeta diff, 0)
//! On a loss: win' = win (1 - beta), the loss window halves and
//! dwnd = max(win (1 - beta) - cwnd / 2, 0). A timeout clears dwnd.
//!
//! The draft's constants: alpha 1/8, beta 1/2, k 0.75, zeta 1, gamma 30 packets
//! (auto-tuned between 5 and 30 in Windows; fixed here, a parameter). The delay
//! window is used only above a low window of 41 packets (the reference digest
//! marks it UNVERIFIED: from the Windows implementation notes; a parameter).
//!
//! Integer arithmetic, as a Linux module would write it, so that the testbed's
//! BPF program (python/tcpeval/testbed/bpf/tcpeval_compound.c) computes the
//! same windows (BPF has no floating point):
//! * the loss window in whole packets, its 1/win per packet counted in
//!   snd_cwnd_cnt as `tcp_cong_avoid_ai` counts (exact while win holds);
//! * dwnd and the queue estimate diff in 1/1024 packet (`FP_SHIFT`);
//! * (RTT - baseRTT) / RTT in 1/2^30 (`RATIO_SHIFT`), RTTs in us as the kernel
//!   gives them;
//! * alpha, 1 - beta and zeta in 1/2^20 (`PARAM_SHIFT`), gamma in 1/1024;
//! * win^(3/4) (k = 3/4 only) as the integer fourth root of win^3 (`qroot`, the
//!   2.6.22 module's), taken of win^3 x 2^16 where that fits in 64 bits, so in
//!   1/16 packet up to win = 65535 (`ROOT_SHIFT`) and coarser above;
//! * windows above 2^21 - 1 packets count as 2^21 - 1 in the delay-window step
//!   (win^3 must fit in 64 bits);
//! * the send window is the loss window, its counted fraction and dwnd added
//!   in 1/1024 packet, truncated to whole packets (as the real sum would be).
//!
//! Each dwnd step is within 1/4 packet of the real-valued rule (1/64 below
//! 65536 packets), except that the branch diff < gamma may differ when diff is
//! within 3/1024 packet above gamma; the split at a loss is exact at beta 1/2;
//! the window in whole packets is within one of the real rule's (tested).
//!
//! `CompoundVersion::Linux2622` is the Linux module of the 2.6.2x era, the one
//! ns-2.35 TCP-Linux ships (tcp/linux/src/tcp_compound.c: "Modified Linux module
//! source code from /home/weixl/linux-2.6.22.6", MODULE_AUTHOR Angelo P.
//! Castellani / Stephen Hemminger; the May 2006 release posted for 2.6.18, never
//! merged). It differs from the draft in its integer arithmetic and in how the
//! two windows share snd_cwnd (`Module`, below, cites each function).

use super::params::{self, AlgorithmConfig};
use super::{slow_start, AckSample, CaEvent, CaState, CcError, CcState, CongestionOps};
use crate::time::{Time, US};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const ALPHA: f64 = 0.125;
pub const BETA: f64 = 0.5;
pub const K: f64 = 0.75;
pub const ZETA: f64 = 1.0;
pub const GAMMA: f64 = 30.0;
pub const LOW_WINDOW: f64 = 41.0;

/// dwnd and the queue estimate diff in fixed point: packets x 2^FP_SHIFT.
const FP_SHIFT: u32 = 10;
/// alpha, 1 - beta and zeta in fixed point: x 2^PARAM_SHIFT (in 1/1024 a
/// parameter such as alpha = 0.1 would be off by 2^-11, times win^(3/4): two
/// packets a round at win 10^5).
const PARAM_SHIFT: u32 = 20;
/// (RTT - baseRTT) / RTT in fixed point: x 2^RATIO_SHIFT (times a window of
/// 2^21, its truncation stays below 1/512 packet).
const RATIO_SHIFT: u32 = 30;
/// win^(3/4) in 1/2^ROOT_SHIFT packet: the fourth root of win^3 x 2^16.
const ROOT_SHIFT: u32 = 4;
/// The largest window the delay-window step takes (win^3 < 2^63).
const MAX_STEP_WINDOW: u32 = (1 << 21) - 1;

/// Compound TCP's parameters (`params`), defaults from
/// draft-sridharan-tcpm-ctcp-02 section 3 unless noted.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CompoundConfig {
    /// The delay window's increase alpha win^k per RTT (draft: 1/8).
    #[schemars(range(min = 0, max = 10))]
    pub alpha: f64,
    /// The multiplicative decrease on loss (draft: 1/2).
    #[schemars(range(min = 0.01, max = 0.99))]
    pub beta: f64,
    /// The exponent of the delay window's increase (draft: 0.75, HighSpeed-like).
    /// 0.75 only: the integer rule takes win^(3/4) as the fourth root of win^3.
    #[schemars(range(min = 0.75, max = 0.75))]
    pub k: f64,
    /// The delay window's decrease per packet queued (draft: 1).
    #[schemars(range(min = 0, max = 100))]
    pub zeta: f64,
    /// Packets queued above which the delay window shrinks (draft: 30; Windows
    /// auto-tunes it between 5 and 30, not modelled).
    #[schemars(range(min = 0, max = 1e6))]
    pub gamma: f64,
    /// The delay window is used only above this window (41 packets; the
    /// reference digest marks it UNVERIFIED, from Windows implementation notes).
    #[schemars(range(min = 0, max = 1e9))]
    pub low_window: f64,
}

impl Default for CompoundConfig {
    fn default() -> Self {
        CompoundConfig { alpha: ALPHA, beta: BETA, k: K, zeta: ZETA, gamma: GAMMA, low_window: LOW_WINDOW }
    }
}

impl AlgorithmConfig for CompoundConfig {}

/// `x` in fixed point: x 2^shift, rounded (as gen_params.py writes the BPF
/// program's constants).
fn fixed(x: f64, shift: u32) -> u64 {
    (x * (1u64 << shift) as f64).round() as u64
}

/// The Compound code of a stack's era (crate::stack).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompoundVersion {
    /// draft-sridharan-tcpm-ctcp-02, as described above.
    #[default]
    Draft,
    /// The 2006 Linux module ns-2.35 ships (`Module`), for Linux 2.6.22.
    Linux2622,
}

#[derive(Clone, Debug)]
pub struct Compound {
    /// alpha, 1 - beta and zeta x 2^20; gamma x 2^10 (packets, as diff).
    alpha_fp: u64,
    keep_fp: u64,
    zeta_fp: u64,
    gamma_fp: u64,
    /// The low window rounded up: win < low_window for a whole win.
    low_window: u32,
    /// The loss window, whole packets (its fraction is s.cwnd_cnt / win).
    lwnd: u32,
    /// The delay window, packets x 2^10.
    dwnd_fp: u64,
    base_rtt: Time,
    round_min_rtt: Time,
    round_end: u64,
    version: CompoundVersion,
    module: Module,
}

impl Compound {
    pub fn new(cfg: &CompoundConfig) -> Self {
        Compound {
            alpha_fp: fixed(cfg.alpha, PARAM_SHIFT),
            keep_fp: (1 << PARAM_SHIFT) - fixed(cfg.beta, PARAM_SHIFT),
            zeta_fp: fixed(cfg.zeta, PARAM_SHIFT),
            gamma_fp: fixed(cfg.gamma, FP_SHIFT),
            low_window: cfg.low_window.ceil() as u32,
            lwnd: 0,
            dwnd_fp: 0,
            base_rtt: Time::MAX,
            round_min_rtt: Time::MAX,
            round_end: 0,
            version: CompoundVersion::Draft,
            module: Module::new(cfg.gamma as u32),
        }
    }

    /// Run the code of an earlier version (crate::stack).
    pub fn set_version(&mut self, version: CompoundVersion) {
        self.version = version;
    }

    pub fn loss_window(&self) -> f64 {
        match self.version {
            CompoundVersion::Draft => self.lwnd as f64,
            CompoundVersion::Linux2622 => self.module.cwnd as f64,
        }
    }

    pub fn delay_window(&self) -> f64 {
        match self.version {
            CompoundVersion::Draft => self.dwnd_fp as f64 / (1u64 << FP_SHIFT) as f64,
            CompoundVersion::Linux2622 => self.module.dwnd as f64,
        }
    }

    /// The delay window in whole packets.
    fn dwnd(&self) -> u32 {
        u32::try_from(self.dwnd_fp >> FP_SHIFT).unwrap_or(u32::MAX)
    }

    /// Draft section 3: the send window is win = cwnd + dwnd, in whole
    /// packets: the loss window, its counted fraction (snd_cwnd_cnt / win, in
    /// 1/1024) and dwnd added, then truncated, as the real-valued sum would be.
    fn apply(&self, s: &mut CcState, win: u32) {
        let frac_fp = ((s.cwnd_cnt as u64) << FP_SHIFT) / win.max(1) as u64;
        let dwnd = u32::try_from((self.dwnd_fp + frac_fp) >> FP_SHIFT).unwrap_or(u32::MAX);
        s.cwnd = self.lwnd.saturating_add(dwnd).clamp(1, s.cwnd_clamp);
    }

    /// The once-per-RTT delay-window update (draft section 3), from the
    /// window and the round's minimum RTT.
    pub fn update_dwnd(&mut self, win: u32, rtt: Time) {
        // The low window (not the draft's: the reference digest's, see above).
        if win < self.low_window || self.base_rtt == Time::MAX {
            self.dwnd_fp = 0;
            return;
        }
        self.dwnd_fp = self.next_dwnd_fp(win, self.base_rtt / US, rtt / US);
    }

    /// Draft section 3, dwnd's recursion, in fixed point (packets x 2^10),
    /// RTTs in us:
    ///   diff = (Expected - Actual) baseRTT = win (RTT - baseRTT) / RTT;
    ///   diff < gamma:  dwnd + max(alpha win^k - 1, 0), k = 3/4;
    ///   diff >= gamma: max(dwnd - zeta diff, 0).
    fn next_dwnd_fp(&self, win: u32, base_us: u64, rtt_us: u64) -> u64 {
        let w = win.min(MAX_STEP_WINDOW) as u64;
        let ratio = (rtt_us.saturating_sub(base_us) << RATIO_SHIFT) / rtt_us.max(1);
        let diff_fp = (w * ratio) >> (RATIO_SHIFT - FP_SHIFT);
        if diff_fp < self.gamma_fp {
            let grow = (self.alpha_fp * pow_three_quarters(w)) >> (PARAM_SHIFT + ROOT_SHIFT - FP_SHIFT);
            self.dwnd_fp.saturating_add(grow.saturating_sub(1 << FP_SHIFT))
        } else {
            self.dwnd_fp.saturating_sub((self.zeta_fp * diff_fp) >> PARAM_SHIFT)
        }
    }

    fn draft_cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        if s.in_slow_start() {
            slow_start(s, acked);
            self.lwnd = s.cwnd.saturating_sub(self.dwnd());
            return;
        }
        // Draft section 3: the loss window grows by 1/win per packet
        // acknowledged, counted in snd_cwnd_cnt as tcp_cong_avoid_ai counts.
        let win = s.cwnd.max(1);
        s.cwnd_cnt = s.cwnd_cnt.saturating_add(acked);
        if s.cwnd_cnt >= win {
            let delta = s.cwnd_cnt / win;
            s.cwnd_cnt -= delta * win;
            self.lwnd = self.lwnd.saturating_add(delta);
        }
        if s.snd_una > self.round_end && self.round_min_rtt != Time::MAX {
            self.update_dwnd(s.cwnd, self.round_min_rtt);
            self.round_min_rtt = Time::MAX;
            self.round_end = s.snd_nxt;
        }
        self.apply(s, win);
    }

    /// Draft section 3, on a loss: win (1 - beta) in all, the loss window
    /// halved (at least 1), dwnd = max(win (1 - beta) - cwnd / 2, 0). Returns
    /// the new ssthresh, win (1 - beta) in whole packets (at least 2).
    fn draft_ssthresh(&mut self, win: u32) -> u32 {
        let target_fp = (win as u64 * self.keep_fp) >> (PARAM_SHIFT - FP_SHIFT);
        self.lwnd = (self.lwnd / 2).max(1);
        self.dwnd_fp = target_fp.saturating_sub((self.lwnd as u64) << FP_SHIFT);
        u32::try_from(target_fp >> FP_SHIFT).unwrap_or(u32::MAX).max(2)
    }
}

/// win^(3/4) x 2^ROOT_SHIFT for win < 2^21: the fourth root of win^3 (the
/// module's `qroot`) taken of win^3 x 2^16 while that fits in 64 bits (win <=
/// 65535), else of win^3 x 2^(4 s) with the largest s that fits.
pub fn pow_three_quarters(w: u64) -> u64 {
    let cube = w * w * w;
    let s = ((64 - fls64(cube)) / 4).min(ROOT_SHIFT);
    (qroot(cube << (4 * s)) as u64) << (ROOT_SHIFT - s)
}

/// A flow's `params` for the 2.6.22 module: it reads only gamma (its
/// `TCP_COMPOUND_GAMMA`, whole packets); alpha, beta, k and zeta are constants of
/// its code and it has no low window, so setting them is an error naming them.
pub fn check_module_params(params: &Map<String, Value>) -> Result<(), CcError> {
    if let Some(name) = params.keys().find(|k| k.as_str() != "gamma") {
        let message = "the 2.6.22 Compound module (stacks linux-2.6.22, ns2-linux) has it fixed in its code; it reads only params.gamma";
        return Err(params::error(name, message.into()));
    }
    match params.get("gamma").and_then(Value::as_f64) {
        Some(g) if g.fract() != 0.0 => Err(params::error("gamma", format!("{g}: the 2.6.22 Compound module keeps gamma in whole packets"))),
        _ => Ok(()),
    }
}

/// The 2006 Linux module's state (ns-2.35 tcp/linux/src/tcp_compound.c, `struct
/// compound`), in its units: windows in whole packets, RTTs in microseconds
/// plus one, a round from `beg_snd_una` to `beg_snd_nxt` as Vegas keeps it.
/// Its differences from the draft, each in the function named:
/// * `tcp_compound_cong_avoid`: the loss window counts ACKs (snd_cwnd_cnt + 1
///   per ACK, +1 packet once it reaches snd_cwnd, the total window), and
///   slow-starts (+1 per ACK) while the loss window alone is <= ssthresh;
///   no low window: dwnd grows whenever the integer increase below is > 0;
/// * `tcp_compound_cong_avoid`, its first lines: the sender's window reductions
///   reach the split only there: if the two windows add up to more than
///   snd_cwnd, the loss window takes snd_cwnd - dwnd (dwnd is kept), or, if
///   either alone exceeds snd_cwnd, the loss window is snd_cwnd and dwnd 0
///   (after a halving nearly always the latter: both halves must fit);
/// * `.ssthresh = tcp_reno_ssthresh`: half the total window, at least 2;
/// * the once-per-RTT step: the window is `old_wnd`, the packets sent in the
///   previous round; diff is kept in half packets (`V_PARAM_SHIFT` 1) in u32
///   (old_wnd * baseRTT wraps above 2^32); the increase is
///   `qroot(old_wnd^3) >> TCP_COMPOUND_ALPHA` - 1 (alpha 1/8, k 3/4 by an
///   integer fourth root); the decrease `diff * TCP_COMPOUND_BETA` (1) half
///   packets; no step with 2 or fewer RTT samples in the round;
/// * `tcp_compound_state`: entering Open starts a new round;
///   `tcp_compound_cwnd_event`: TX_START re-initialises (baseRTT included).
#[derive(Clone, Debug)]
struct Module {
    /// TCP_COMPOUND_GAMMA (30), from the flow's `params.gamma`.
    gamma: u32,
    cwnd: u32,
    dwnd: u32,
    beg_snd_una: u64,
    beg_snd_nxt: u64,
    cnt_rtt: u32,
    min_rtt_us: u32,
    base_rtt_us: u32,
}

/// The module's constants (tcp_compound.c): alpha = 1 >> 3, the decrease per
/// half packet queued, and diff's fixed point.
const MODULE_ALPHA_SHIFT: u32 = 3;
const MODULE_BETA: u32 = 1;
const V_PARAM_SHIFT: u32 = 1;
/// The module's "no sample yet" RTT (0x7fffffff).
const NO_RTT: u32 = 0x7fff_ffff;

impl Module {
    fn new(gamma: u32) -> Self {
        Module { gamma, cwnd: 0, dwnd: 0, beg_snd_una: 0, beg_snd_nxt: 0, cnt_rtt: 0, min_rtt_us: NO_RTT, base_rtt_us: NO_RTT }
    }

    /// `tcp_compound_init`: the loss window is the whole window.
    fn init(&mut self, s: &CcState) {
        self.base_rtt_us = NO_RTT;
        self.enable(s);
        self.dwnd = 0;
        self.cwnd = s.cwnd;
    }

    /// `cvegas_enable`: a new round starts at snd_nxt.
    fn enable(&mut self, s: &CcState) {
        self.beg_snd_nxt = s.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt_us = NO_RTT;
    }

    /// `tcp_compound_rtt_calc`.
    fn rtt_sample(&mut self, rtt: Time) {
        let vrtt = u32::try_from(rtt / US).unwrap_or(u32::MAX - 1) + 1;
        self.base_rtt_us = self.base_rtt_us.min(vrtt);
        self.min_rtt_us = self.min_rtt_us.min(vrtt);
        self.cnt_rtt += 1;
    }

    /// `tcp_compound_cong_avoid` (the sender calls it only when cwnd-limited).
    fn cong_avoid(&mut self, s: &mut CcState) {
        if self.cwnd.saturating_add(self.dwnd) > s.cwnd {
            if self.cwnd > s.cwnd || self.dwnd > s.cwnd {
                (self.cwnd, self.dwnd) = (s.cwnd, 0);
            } else {
                self.cwnd = s.cwnd - self.dwnd;
            }
        }
        let mut inc = self.cwnd <= s.ssthresh;
        if !inc && s.cwnd_cnt < s.cwnd {
            s.cwnd_cnt += 1;
        }
        if s.cwnd_cnt >= s.cwnd {
            inc = true;
            s.cwnd_cnt = 0;
        }
        if inc && s.cwnd < s.cwnd_clamp {
            self.cwnd += 1;
        }
        if s.snd_una > self.beg_snd_nxt {
            self.end_round(s);
        }
        // The module sets the sum; the floor of 1 is ours (a resync that left
        // the loss window 0 and a dwnd cut to 0 would stall the flow).
        s.cwnd = self.cwnd.saturating_add(self.dwnd).max(1);
    }

    /// The once-per-RTT step at the ACK past `beg_snd_nxt`.
    fn end_round(&mut self, s: &CcState) {
        let old_wnd = u32::try_from(self.beg_snd_nxt.wrapping_sub(self.beg_snd_una)).unwrap_or(u32::MAX);
        (self.beg_snd_una, self.beg_snd_nxt) = (self.beg_snd_nxt, s.snd_nxt);
        if self.cnt_rtt > 2 {
            self.dwnd = self.next_dwnd(old_wnd);
        }
        self.cnt_rtt = 0;
        self.min_rtt_us = NO_RTT;
    }

    /// dwnd after a round that sent `old_wnd` packets, in the module's u32
    /// arithmetic (its products wrap as C's do).
    fn next_dwnd(&self, old_wnd: u32) -> u32 {
        let target = (old_wnd.wrapping_mul(self.base_rtt_us) << V_PARAM_SHIFT) / self.min_rtt_us;
        let diff = (old_wnd << V_PARAM_SHIFT).wrapping_sub(target);
        let dwnd2 = self.dwnd << V_PARAM_SHIFT;
        if diff < self.gamma << V_PARAM_SHIFT {
            let w = old_wnd as u64;
            let x = qroot(w.wrapping_mul(w).wrapping_mul(w)) >> MODULE_ALPHA_SHIFT;
            self.dwnd.saturating_add(x.saturating_sub(1))
        } else if dwnd2 < diff.wrapping_mul(MODULE_BETA) {
            0
        } else {
            (dwnd2 - diff * MODULE_BETA) >> V_PARAM_SHIFT
        }
    }
}

/// Linux `fls64`: the position of the highest set bit, 1-based; 0 for 0.
fn fls64(a: u64) -> u32 {
    64 - a.leading_zeros()
}

/// The module's `cdiv64_64`: a / b with b cut to 32 bits ("dynamic
/// precision": both shifted right until b fits).
fn div64_dynamic(a: u64, b: u64) -> u64 {
    if b > u32::MAX as u64 {
        let shift = fls64(b >> 32);
        (a >> shift) / (b >> shift)
    } else {
        a / b
    }
}

/// The module's `qroot`: the fourth root of `a` by integer Newton-Raphson from
/// 2^(fls64(a) / 4), x' = (3x + a / x^3) / 4, until x moves by at most 1.
pub fn qroot(a: u64) -> u32 {
    let mut x: u32 = 1 << (fls64(a) >> 2);
    // Never more than a handful of steps from that start; the cap only guards
    // against a cycle the module would spin in.
    for _ in 0..64 {
        let x1 = x;
        let x3 = (x as u64).wrapping_pow(3);
        x = 3u32.wrapping_mul(x).wrapping_add(div64_dynamic(a, x3) as u32) / 4;
        if x1.abs_diff(x) <= 1 {
            break;
        }
    }
    x
}

impl CongestionOps for Compound {
    /// `.min_cwnd = tcp_reno_min_cwnd` in the 2.6 Compound module (ns-2.35's
    /// tcp/linux/src/tcp_compound.c): rate-halving may go down to half of ssthresh.
    fn min_cwnd(&mut self, s: &CcState) -> u32 {
        super::reno_min_cwnd(s)
    }

    fn init(&mut self, s: &mut CcState) {
        self.lwnd = s.cwnd;
        self.dwnd_fp = 0;
        self.module.init(s);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        if self.version == CompoundVersion::Linux2622 {
            return super::reno::Reno.ssthresh(s);
        }
        self.draft_ssthresh(s.cwnd)
    }

    fn cong_avoid(&mut self, s: &mut CcState, acked: u32) {
        match self.version {
            CompoundVersion::Draft => self.draft_cong_avoid(s, acked),
            CompoundVersion::Linux2622 => self.module.cong_avoid(s),
        }
    }

    fn pkts_acked(&mut self, _s: &mut CcState, sample: &AckSample) {
        if let Some(rtt) = sample.rtt {
            self.base_rtt = self.base_rtt.min(rtt);
            self.round_min_rtt = self.round_min_rtt.min(rtt);
            self.module.rtt_sample(rtt);
        }
    }

    fn set_state(&mut self, s: &mut CcState, state: CaState) {
        match self.version {
            CompoundVersion::Linux2622 if state == CaState::Open => self.module.enable(s),
            CompoundVersion::Linux2622 => {}
            // A timeout: the loss window restarts from 1, dwnd is cleared.
            CompoundVersion::Draft if state == CaState::Loss => {
                self.lwnd = 1;
                self.dwnd_fp = 0;
                s.cwnd_cnt = 0;
            }
            CompoundVersion::Draft => {}
        }
    }

    fn cwnd_event(&mut self, s: &mut CcState, event: CaEvent) {
        match (self.version, event) {
            (CompoundVersion::Linux2622, CaEvent::TxStart) => self.module.init(s),
            // Recovery set cwnd = ssthresh = win (1 - beta): keep the split
            // (whole packets: dwnd = cwnd - the loss window, at least 0).
            (CompoundVersion::Draft, CaEvent::CompleteCwr) => {
                let dwnd = s.cwnd.saturating_sub(self.lwnd);
                self.dwnd_fp = (dwnd as u64) << FP_SHIFT;
                self.lwnd = s.cwnd - dwnd;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};
    use crate::cc::harness::Harness;
    use crate::cc::Cc;
    use crate::stack::Stack;
    use crate::time::MS;

    fn ctcp() -> Compound {
        crate::cc::params::parse_map(&Map::new()).map(|c| Compound::new(&c)).unwrap()
    }

    /// In fixed point, by hand. win 1000, no queueing: win^(3/4) x 16 =
    /// qroot(10^9 x 2^16) = 2845 (177.81 packets; the real root 177.83), alpha
    /// 2^17 / 2^20 times that >> 14 = 8 x 2845 = 22760 (22.23 packets), less 1024:
    /// dwnd = 21736 / 1024 = 21.227 (the real rule 0.125 x 1000^0.75 - 1 = 21.228).
    #[test]
    fn delay_window_grows_without_queueing_and_shrinks_beyond_gamma() {
        let mut c = ctcp();
        c.base_rtt = 100 * MS;
        assert_eq!(pow_three_quarters(1000), 2845);
        c.update_dwnd(1000, 100 * MS);
        assert_eq!(c.dwnd_fp, 21736);
        assert!((c.delay_window() - (0.125 * 1000f64.powf(0.75) - 1.0)).abs() < 1.0 / 512.0);
        // RTT 110 ms: (10000 << 30) / 110000 = 97612893, x 1000 >> 20 = diff
        // 93090 / 1024 = 90.908 packets (real 90.909) >= gamma: dwnd 200 x 1024
        // - 93090 = 111710, 109.092 packets (real 109.091); floored at 0.
        c.dwnd_fp = 200 << FP_SHIFT;
        c.update_dwnd(1000, 110 * MS);
        assert_eq!(c.dwnd_fp, 111_710);
        assert!((c.delay_window() - (200.0 - 1000.0 * 10.0 / 110.0)).abs() < 1.0 / 512.0);
        c.update_dwnd(1000, 110 * MS);
        c.update_dwnd(1000, 110 * MS);
        assert_eq!(c.delay_window(), 0.0);
    }

    #[test]
    fn below_the_low_window_it_is_reno() {
        let mut c = ctcp();
        c.base_rtt = 100 * MS;
        c.dwnd_fp = 5 << FP_SHIFT;
        c.update_dwnd(40, 100 * MS);
        assert_eq!(c.delay_window(), 0.0);
        // From 41 on: qroot(41^3 x 2^16) = 259, 8 x 259 - 1024 = 1048 (1.023
        // packets; real 0.125 x 41^0.75 - 1 = 1.026).
        c.update_dwnd(41, 100 * MS);
        assert_eq!(c.dwnd_fp, 1048);
        let mut h = Harness::new(ctcp(), 30);
        h.s.ssthresh = 10;
        h.ack_round();
        assert_eq!(h.s.cwnd, 31);
    }

    #[test]
    fn loss_halves_the_total_window_and_splits_it() {
        let mut h = Harness::new(ctcp(), 100);
        h.cc.lwnd = 60;
        h.cc.dwnd_fp = 40 << FP_SHIFT;
        // win 100: ssthresh = 50; loss window 60 -> 30; dwnd = 50 - 30 = 20.
        assert_eq!(h.lose(), 50);
        assert_eq!((h.cc.loss_window(), h.cc.delay_window()), (30.0, 20.0));
        assert_eq!(h.s.cwnd, 50);
        // An odd window: 101 x (1 - 1/2) = 50.5 in all, ssthresh 50, loss
        // window 61 -> 30, dwnd 20.5 (the window after recovery, 50, resplits
        // it: dwnd 20).
        let mut h = Harness::new(ctcp(), 101);
        (h.cc.lwnd, h.cc.dwnd_fp) = (61, 40 << FP_SHIFT);
        assert_eq!(h.cc.draft_ssthresh(101), 50);
        assert_eq!((h.cc.lwnd, h.cc.dwnd_fp), (30, 20 * 1024 + 512));
    }

    /// The loss window's 1/win per packet, counted: at win 100, 49 ACKs of 2
    /// packets count 98 (the window 100 + 98/100, still 100 in whole packets);
    /// an ACK of 3 makes 101: +1, and 1 is kept (the real rule: 101/100).
    #[test]
    fn the_loss_window_counts_packets_against_the_whole_window() {
        let mut h = Harness::new(ctcp(), 100);
        h.s.ssthresh = 50;
        h.s.snd_nxt = 1000;
        h.cc.round_end = 1000;
        for _ in 0..49 {
            h.ack(2);
        }
        assert_eq!((h.s.cwnd, h.s.cwnd_cnt), (100, 98));
        h.ack(3);
        assert_eq!((h.s.cwnd, h.s.cwnd_cnt, h.cc.lwnd), (101, 1, 101));
    }

    #[test]
    fn the_module_takes_only_a_whole_gamma() {
        let p = |k: &str, v: f64| Map::from_iter([(k.to_string(), Value::from(v))]);
        let (cc, _) = Stack::Linux2622.build("compound", &p("gamma", 20.0)).unwrap();
        let Cc::Compound(c) = cc else { panic!("compound") };
        assert_eq!(c.module.gamma, 20);
        for (k, v) in [("alpha", 0.2), ("low_window", 10.0), ("gamma", 20.5)] {
            let Err(err) = Stack::Linux2622.build("compound", &p(k, v)) else { panic!("{k} refused") };
            assert_eq!(err.field, format!("params.{k}"));
        }
        assert!(Stack::Linux66.build("compound", &p("alpha", 0.2)).is_ok(), "the draft takes them all");
    }

    /// The 2.6.22 module in a harness counting per ACK, as the stack runs it.
    fn module(cwnd: u32) -> Harness<Compound> {
        let mut c = ctcp();
        c.set_version(CompoundVersion::Linux2622);
        let mut h = Harness::new(c, cwnd);
        h.s.growth = crate::cc::Growth::PerAck;
        h
    }

    /// Split the window by hand, with no round ending (the RTT step is
    /// tested on its own).
    fn split(h: &mut Harness<Compound>, lwnd: u32, dwnd: u32) {
        (h.cc.module.cwnd, h.cc.module.dwnd) = (lwnd, dwnd);
        h.s.cwnd = lwnd + dwnd;
        h.cc.module.beg_snd_nxt = u64::MAX / 2;
    }

    #[test]
    fn the_stacks_pick_the_module_at_2622_and_the_draft_today() {
        for (stack, want) in [(Stack::Linux2622, CompoundVersion::Linux2622), (Stack::Ns2Linux, CompoundVersion::Linux2622), (Stack::Linux66, CompoundVersion::Draft)] {
            let h = Harness::for_stack(stack, "compound", 10);
            let Cc::Compound(c) = &h.cc else { panic!("compound") };
            assert_eq!(c.version, want, "{stack:?}");
        }
    }

    /// tcp_compound_cong_avoid: snd_cwnd_cnt + 1 per ACK, the loss window + 1
    /// when it reaches snd_cwnd (20): with delayed ACKs (2 packets each) that
    /// is the 20th ACK, 40 packets. The draft counts packets: +1 after 10 or 11.
    #[test]
    fn the_module_grows_the_loss_window_per_ack() {
        let mut h = module(20);
        split(&mut h, 20, 0);
        h.s.ssthresh = 10;
        for _ in 0..19 {
            h.ack(2);
        }
        assert_eq!((h.s.cwnd, h.s.cwnd_cnt), (20, 19));
        h.ack(2);
        assert_eq!((h.s.cwnd, h.s.cwnd_cnt, h.cc.loss_window()), (21, 0, 21.0));
        // The draft: 20 + 10 x 2/20 + 2/21 after 11 ACKs.
        let mut draft = Harness::new(ctcp(), 20);
        draft.s.ssthresh = 10;
        for _ in 0..11 {
            draft.ack(2);
        }
        assert_eq!(draft.s.cwnd, 21);
    }

    /// The loss window slow-starts while it alone is <= ssthresh, though the
    /// total window (50) is above it: +1 per ACK from 10 to 26 (16 ACKs), then
    /// congestion avoidance.
    #[test]
    fn the_module_slow_starts_the_loss_window_below_ssthresh() {
        let mut h = module(50);
        split(&mut h, 10, 40);
        h.s.ssthresh = 25;
        for _ in 0..16 {
            h.ack(1);
        }
        assert_eq!((h.cc.loss_window(), h.cc.delay_window(), h.s.cwnd), (26.0, 40.0, 66));
        h.ack(1);
        assert_eq!((h.s.cwnd, h.s.cwnd_cnt), (66, 1));
    }

    /// `.ssthresh = tcp_reno_ssthresh`: half the total window. The split
    /// follows at the next ACK: a loss window or a dwnd alone above the new
    /// window (50) makes it all loss window (60 + 40: 50 and 0); dwnd stays
    /// only if neither is (50 + 50: 0 and 50), and then the loss window
    /// slow-starts from 0. Either way that ACK adds 1 (loss window <= ssthresh).
    #[test]
    fn the_module_halves_the_total_and_splits_it_at_the_next_ack() {
        for ((lwnd, dwnd), want) in [((60, 40), (51.0, 0.0)), ((50, 50), (1.0, 50.0)), ((30, 70), (51.0, 0.0))] {
            let mut h = module(100);
            split(&mut h, lwnd, dwnd);
            assert_eq!(h.lose(), 50);
            assert_eq!(h.s.cwnd, 50);
            h.ack(1);
            assert_eq!((h.cc.loss_window(), h.cc.delay_window(), h.s.cwnd), (want.0, want.1, 51), "{lwnd} + {dwnd}");
        }
        // The draft: win 100 -> 50, loss window 60 -> 30, dwnd 20.
        let mut draft = Harness::new(ctcp(), 100);
        (draft.cc.lwnd, draft.cc.dwnd_fp) = (60, 40 << FP_SHIFT);
        draft.lose();
        assert_eq!((draft.cc.loss_window(), draft.cc.delay_window()), (30.0, 20.0));
    }

    /// A timeout sets snd_cwnd = 1; the next ACK's resync makes that the loss
    /// window and clears dwnd (40 > 1), then slow start adds 1: 2.
    #[test]
    fn the_module_loses_dwnd_at_a_timeout() {
        let mut h = module(100);
        split(&mut h, 60, 40);
        assert_eq!(h.timeout(), 50);
        h.ack(1);
        assert_eq!((h.cc.loss_window(), h.cc.delay_window(), h.s.cwnd), (2.0, 0.0, 2));
    }

    /// The once-per-RTT step reads the packets sent in the previous round
    /// (beg_snd_nxt - beg_snd_una = 100, not the window of 150 now):
    /// qroot(100^3) = 31, 31 >> 3 = 3, dwnd += 3 - 1 = 2 (the draft at win
    /// 150 adds 0.125 150^0.75 - 1 = 4.36). Queueing: baseRTT 100001 us, round
    /// minimum 130001 us, 150 packets: target = (150 * 100001 << 1) / 130001 =
    /// 230 half packets, diff = 300 - 230 = 70 >= 60: dwnd = (2 * 100 - 70)
    /// >> 1 = 65 (the draft: 100 - 150 * 30000 / 130001 = 65.4).
    #[test]
    fn the_module_steps_dwnd_from_the_previous_round_in_half_packets() {
        let mut m = Module::new(30);
        let mut s = CcState::new(150, 1448);
        (m.beg_snd_una, m.beg_snd_nxt, s.snd_nxt, m.cnt_rtt) = (0, 100, 250, 3);
        (m.base_rtt_us, m.min_rtt_us, m.dwnd) = (100_001, 100_001, 5);
        m.end_round(&s);
        assert_eq!((m.dwnd, m.beg_snd_una, m.beg_snd_nxt, m.cnt_rtt), (7, 100, 250, 0));
        (m.min_rtt_us, m.cnt_rtt, m.dwnd) = (130_001, 3, 100);
        m.end_round(&s);
        assert_eq!(m.dwnd, 65);
        // Two RTT samples (likely all delayed ACKs): no step.
        (m.beg_snd_nxt, m.cnt_rtt) = (400, 2);
        m.end_round(&s);
        assert_eq!(m.dwnd, 65);
    }

    /// Through the hooks: a loss-free round of 100 one-packet ACKs at the base
    /// RTT, then the first ACK past it takes dwnd from 0 to 2 (old_wnd 100).
    #[test]
    fn the_module_steps_dwnd_at_the_first_ack_past_the_round() {
        let mut h = module(100);
        h.s.ssthresh = 10;
        h.ack_round();
        assert_eq!(h.cc.delay_window(), 0.0);
        h.s.snd_nxt = h.s.snd_una + h.s.cwnd as u64;
        h.ack(1);
        assert_eq!(h.cc.delay_window(), 2.0);
        assert_eq!(h.s.cwnd as f64, h.cc.loss_window() + 2.0);
    }

    /// qroot by hand: 10^6 from x = 2^(20 >> 2) = 32: (96 + 30) / 4 = 31,
    /// moved by 1: 31. 27000 from 8: 19, 15, 13, 12. The integer increase
    /// qroot(w^3) >> 3 - 1 is 0 up to w = 40 (qroot 15) and 1 at 41 (16):
    /// the module's own low window, the draft's 41.
    #[test]
    fn the_module_s_fourth_root_by_hand() {
        assert_eq!((qroot(0), qroot(1), qroot(1_000_000), qroot(27_000)), (0, 1, 31, 12));
        assert_eq!((qroot(40u64.pow(3)), qroot(41u64.pow(3))), (15, 16));
        let mut m = Module::new(30);
        (m.base_rtt_us, m.min_rtt_us) = (1000, 1000);
        assert_eq!((m.next_dwnd(40), m.next_dwnd(41)), (0, 1));
    }

    proptest::proptest! {
        /// Whatever the ACKs, losses and timeouts: after an ACK the sender's
        /// window is the module's two windows added (at least 1), and the first
        /// ACK after a recovery keeps its cut (the resync gives the cut to the
        /// split and Open restarted the round, so only slow start's 1 is added).
        /// Not so after a timeout: the module runs on in Loss, where a round
        /// can end and step dwnd (2.6.22's tcp_may_raise_cwnd allows Loss).
        #[test]
        fn the_module_s_windows_add_up_and_keep_a_cut(ops in proptest::collection::vec(0u8..24, 1..300)) {
            // Stretch ACKs (16-46 packets) so rounds end every few ACKs and
            // dwnd grows between the reductions.
            let mut h = module(200);
            h.rtt = 50 * MS;
            let mut cut = None;
            for op in ops {
                match op {
                    0 => { h.lose(); cut = Some(h.s.cwnd); }
                    1 => { h.timeout(); }
                    n => {
                        h.s.snd_nxt = h.s.snd_una + h.s.cwnd as u64;
                        h.ack(2 * u32::from(n));
                        let sum = (h.cc.module.cwnd + h.cc.module.dwnd).max(1);
                        proptest::prop_assert_eq!(h.s.cwnd, sum);
                        if let Some(w) = cut.take() {
                            proptest::prop_assert!(h.s.cwnd <= w + 1, "cut to {} then {}", w, h.s.cwnd);
                        }
                    }
                }
            }
        }


        /// win^(3/4) x 16 within 1 (1/16 packet) of the real value up to win
        /// 65535 (win^3 x 2^16 fits), within 16 (one packet) up to 2^21 - 1
        /// (checked for every window once: the largest misses are 0.99999 and
        /// 15.99997).
        #[test]
        fn three_quarters_is_within_a_sixteenth_below_65536(w in 1u64..(1 << 21)) {
            let real = (w as f64).powf(0.75) * 16.0;
            let bound = if w < 65536 { 1.0 } else { 16.0 };
            proptest::prop_assert!((pow_three_quarters(w) as f64 - real).abs() < bound, "w {} got {} real {}", w, pow_three_quarters(w), real);
        }

        /// Draft section 3's dwnd step in integers against the real-valued rule
        /// on the same inputs (RTTs in us): within 1/64 packet below win 65536
        /// (1/128 from the root, 3/1024 from diff) and 1/4 above (1/8 from the
        /// root), so the window in whole packets is within one. The branch may
        /// differ only where the real diff is within 3/1024 packet above gamma
        /// (diff is truncated). An off-by-one change of the rule (the increase's
        /// "- 1" as "- 2", the decrease's zeta diff plus one) misses the bound
        /// by 3/4 packet and fails here.
        #[test]
        fn the_integer_dwnd_step_is_the_real_rule_within_a_packet(
            win in 1u32..(1 << 21),
            base_us in 100u64..2_000_000,
            extra_us in proptest::prop_oneof![proptest::strategy::Just(0u64), 0u64..2_000, 0u64..8_000_000],
            dwnd in 0u64..(1 << 30),
        ) {
            let mut c = ctcp();
            c.dwnd_fp = dwnd;
            let rtt_us = base_us + extra_us;
            let got = c.next_dwnd_fp(win, base_us, rtt_us) as f64 / 1024.0;
            let (w, d0) = (win as f64, dwnd as f64 / 1024.0);
            let diff = w * extra_us as f64 / rtt_us as f64;
            let grow = d0 + (ALPHA * w.powf(K) - 1.0).max(0.0);
            let shrink = (d0 - ZETA * diff).max(0.0);
            let real = if diff < GAMMA { grow } else { shrink };
            let bound = if win < 65536 { 1.0 / 64.0 } else { 0.25 };
            let near = |x: f64| (got - x).abs() < bound;
            let branch_edge = (GAMMA..GAMMA + 3.0 / 1024.0).contains(&diff);
            proptest::prop_assert!(near(real) || (branch_edge && near(grow)), "win {} diff {} dwnd {}: {} real {}", win, diff, d0, got, real);
            proptest::prop_assert!((got.floor() - real.floor()).abs() <= 1.0);
        }

        /// The split at a loss (draft section 3) against the real rule: the
        /// same ssthresh (exactly at beta 1/2), the loss window halved, the
        /// window in all within one packet.
        #[test]
        fn the_integer_split_at_a_loss_is_the_real_rule(
            win in 2u32..(1 << 20),
            share in 0u32..=1000,
            beta in proptest::prop_oneof![proptest::strategy::Just(0.5), proptest::strategy::Just(0.3), proptest::strategy::Just(0.125)],
        ) {
            let mut c = Compound::new(&CompoundConfig { beta, ..CompoundConfig::default() });
            let lwnd = (win as u64 * share as u64 / 1000) as u32;
            (c.lwnd, c.dwnd_fp) = (lwnd, ((win - lwnd) as u64) << FP_SHIFT);
            let ssthresh = c.draft_ssthresh(win);
            let target = win as f64 * (1.0 - beta);
            let (lwnd_real, real_ssthresh) = ((lwnd as f64 / 2.0).max(1.0), (target as u32).max(2));
            let total_real = lwnd_real + (target - lwnd_real).max(0.0);
            let total = c.lwnd as f64 + c.delay_window();
            if beta == 0.5 {
                proptest::prop_assert_eq!(ssthresh, real_ssthresh);
            }
            proptest::prop_assert!(ssthresh.abs_diff(real_ssthresh) <= 1, "win {} beta {}: {} real {}", win, beta, ssthresh, real_ssthresh);
            proptest::prop_assert_eq!(c.lwnd, lwnd_real.floor() as u32);
            proptest::prop_assert!((total - total_real).abs() < 1.0, "win {} lwnd {} beta {}: {} real {}", win, lwnd, beta, total, total_real);
        }

        /// Within one of the real fourth root for every window up to 2^20
        /// packets (old_wnd^3 up to 2^60, where the dynamic-precision division
        /// shifts).
        #[test]
        fn qroot_is_within_one_of_the_fourth_root(w in 1u64..(1 << 20)) {
            let a = w * w * w;
            let r = (a as f64).powf(0.25);
            proptest::prop_assert!((qroot(a) as f64 - r).abs() < 1.0, "w {} qroot {} root {}", w, qroot(a), r);
        }
    }
}
