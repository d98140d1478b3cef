//! PIE, Proportional Integral controller Enhanced (RFC 8033), as Linux runs it:
//! net/sched/sch_pie.c (pie_drop_early, pie_process_dequeue,
//! pie_calculate_probability, pie_timer) and include/net/pie.h
//! (pie_params_init, pie_vars_init), Linux v6.6 (the files read at
//! torvalds/linux 00ac0dc3 and 105e808c). Linux's default: the queue delay
//! from each packet's enqueue timestamp (dq_rate_estimator off), not from a
//! departure-rate estimate; probability in fixed point, MAX_PROB = 2^56 - 1.
//!
//! The probability update is Linux's periodic timer (first after HZ/2, then
//! every tupdate); the queue's state only changes at enqueue and dequeue, so
//! `catch_up` runs the updates due before each of them, which is exact.

use super::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;

/// pie_params_init: target 15 ms, tupdate 15 ms (15 jiffies at HZ = 1000),
/// alpha 2/16, beta 20/16 (RFC 8033 section 4.2: 0.125 and 1.25), limit 1000
/// packets (the hop's buffer in tcpeval), ECN off.
pub const TARGET_NS: Time = 15_000_000;
pub const TUPDATE_NS: Time = 15_000_000;
pub const ALPHA: f64 = 0.125;
pub const BETA: f64 = 1.25;
/// pie_vars_init: burst allowance 150 ms (RFC 8033 section 4.2, MAX_BURST).
pub const MAX_BURST_NS: Time = 150_000_000;
/// pie_init: the first update HZ/2 after the queue is set up.
const FIRST_UPDATE_NS: Time = 500_000_000;

/// pie.h: probabilities are u64 fractions of 2^56 - 1.
pub const MAX_PROB: u64 = u64::MAX >> 8;
/// psched time: nanoseconds >> 6 (PSCHED_SHIFT), 15,625,000 ticks per second.
const PSCHED_SHIFT: u32 = 6;
const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
/// pie_calculate_probability: add 2% per update above 250 ms of delay.
const HIGH_DELAY_NS: Time = 250_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieParams {
    pub target: Time,
    pub tupdate: Time,
    pub alpha: f64,
    pub beta: f64,
    pub max_burst: Time,
    pub ecn: bool,
    /// Backlog below which nothing is dropped early: two MTUs (pie_drop_early).
    pub mtu: u64,
}

impl PieParams {
    pub fn linux(mtu: u64) -> Self {
        PieParams { target: TARGET_NS, tupdate: TUPDATE_NS, alpha: ALPHA, beta: BETA, max_burst: MAX_BURST_NS, ecn: false, mtu }
    }
}

/// What PIE decides for an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Enqueue,
    /// Enqueued with CE set instead of an early drop.
    Marked,
    Drop,
}

#[derive(Clone, Debug)]
pub struct Pie {
    pub params: PieParams,
    /// Drop probability, in units of 1 / MAX_PROB.
    pub prob: u64,
    pub qdelay: Time,
    qdelay_old: Time,
    burst_time: Time,
    /// Time of the last dequeue (None: DTIME_INVALID).
    dq_tstamp: Option<Time>,
    accu_prob: u64,
    next_update: Time,
}

impl Pie {
    pub fn new(params: PieParams) -> Self {
        let mut pie = Pie { params, prob: 0, qdelay: 0, qdelay_old: 0, burst_time: 0, dq_tstamp: None, accu_prob: 0, next_update: FIRST_UPDATE_NS };
        pie.vars_init();
        pie
    }

    /// pie_vars_init (prob and the delays are kept).
    fn vars_init(&mut self) {
        self.burst_time = self.params.max_burst;
        self.dq_tstamp = None;
        self.accu_prob = 0;
    }

    /// The drop probability as a fraction.
    pub fn probability(&self) -> f64 {
        self.prob as f64 / MAX_PROB as f64
    }

    /// Run the periodic probability updates due at or before `now`, with the
    /// backlog (bytes) the queue has held since the last event.
    pub fn catch_up(&mut self, now: Time, backlog: u64) {
        while self.next_update <= now {
            if self.prob == 0 && self.qdelay == 0 && self.qdelay_old == 0 && backlog == 0 && self.burst_time == self.params.max_burst {
                // Idle fixed point: every further update changes nothing.
                let skipped = (now - self.next_update) / self.params.tupdate;
                self.next_update += skipped * self.params.tupdate;
            }
            self.calculate_probability(backlog);
            self.next_update += self.params.tupdate;
        }
    }

    /// The arrival's fate (pie_qdisc_enqueue after the limit check, which the
    /// caller does; `full` says it failed).
    pub fn on_arrival(&mut self, p: &mut Packet, backlog: u64, full: bool, rng: &mut Rng) -> Verdict {
        if full {
            self.accu_prob = 0;
            return Verdict::Drop;
        }
        if !self.drop_early(backlog, rng) {
            return Verdict::Enqueue;
        }
        if self.params.ecn && self.prob <= MAX_PROB / 10 && p.mark_ce() {
            return Verdict::Marked;
        }
        self.accu_prob = 0;
        Verdict::Drop
    }

    /// pie_drop_early: the burst allowance, the low-delay and small-backlog
    /// exemptions, then a draw de-randomised by the accumulated probability
    /// (RFC 8033 section 5.1): no drop below 0.85 accumulated, always one at 8.5.
    fn drop_early(&mut self, backlog: u64, rng: &mut Rng) -> bool {
        if self.burst_time > 0 {
            return false;
        }
        if self.qdelay < self.params.target / 2 && self.prob < MAX_PROB / 5 {
            return false;
        }
        if backlog < 2 * self.params.mtu {
            return false;
        }
        if self.prob == 0 {
            self.accu_prob = 0;
        } else {
            self.accu_prob = self.accu_prob.saturating_add(self.prob);
        }
        if self.accu_prob < (MAX_PROB / 100) * 85 {
            return false;
        }
        if self.accu_prob >= (MAX_PROB / 2) * 17 {
            return true;
        }
        if rng.next_u64() >> 8 < self.prob {
            self.accu_prob = 0;
            return true;
        }
        false
    }

    /// pie_process_dequeue (timestamp mode): the departing packet's sojourn
    /// time is the queue delay (0 if the queue is now empty); time between
    /// departures uses up the burst allowance.
    pub fn on_departure(&mut self, enqueued: Time, backlog_after: u64, now: Time) {
        self.qdelay = if backlog_after == 0 { 0 } else { now - enqueued };
        let dtime = self.dq_tstamp.map_or(0, |t| now - t);
        self.dq_tstamp = Some(now);
        self.burst_time = self.burst_time.saturating_sub(dtime);
    }

    /// pie_calculate_probability (timestamp mode), in Linux's fixed point.
    pub fn calculate_probability(&mut self, backlog: u64) {
        let ticks = |ns: Time| (ns >> PSCHED_SHIFT) as i64;
        let (qdelay, qdelay_old) = (self.qdelay, self.qdelay_old);
        let mut update_prob = !(qdelay == 0 && backlog != 0);
        let unit = (MAX_PROB / PSCHED_TICKS_PER_SEC) as f64;
        let (mut alpha, mut beta) = ((self.params.alpha * unit) as u64, (self.params.beta * unit) as u64);
        // RFC 8033 section 4.2's auto-tuning: smaller steps at low probability.
        if self.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power = 100u64;
            while self.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }
        let mut delta = (alpha as i64).wrapping_mul(ticks(qdelay) - ticks(self.params.target));
        delta = delta.wrapping_add((beta as i64).wrapping_mul(ticks(qdelay) - ticks(qdelay_old)));
        let oldprob = self.prob;
        if delta > (MAX_PROB / 50) as i64 && self.prob >= MAX_PROB / 10 {
            delta = (MAX_PROB / 100 * 2) as i64;
        }
        if qdelay > HIGH_DELAY_NS {
            delta += (MAX_PROB / 50) as i64;
        }
        self.prob = self.prob.wrapping_add(delta as u64);
        if delta > 0 {
            if self.prob < oldprob {
                self.prob = MAX_PROB;
                update_prob = false;
            }
        } else if self.prob > oldprob {
            self.prob = 0;
        }
        // Two updates without delay: decay quickly (to 98.4%).
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            self.prob -= self.prob / 64;
        }
        if qdelay < self.params.target / 2 && qdelay_old < self.params.target / 2 && self.prob == 0 {
            self.vars_init();
        }
        self.qdelay_old = qdelay;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Time = 1_000_000;

    fn pie() -> Pie {
        Pie::new(PieParams::linux(1500))
    }

    /// One update at a fixed delay: prob += a (qdelay - target) + b (qdelay -
    /// qdelay_old), a and b in units of MAX_PROB per second and scaled down by
    /// the probability's decade (RFC 8033 section 4.2).
    fn update(p: &mut Pie, qdelay: Time) -> f64 {
        p.qdelay = qdelay;
        p.calculate_probability(100_000);
        p.probability()
    }

    #[test]
    fn probability_follows_the_scaled_pi_update_from_a_fixed_delay_sequence() {
        let mut p = pie();
        // prob 0 < 1e-6: alpha and beta / 2 / 4^5 (power 100 .. 1e6 is five steps).
        let s0 = 0.5 / 1024.0;
        let want1 = s0 * (0.125 * 0.010 + 1.25 * 0.025); // 25 ms from 0
        let got1 = update(&mut p, 25 * MS);
        assert!((got1 - want1).abs() < 1e-9, "{got1} vs {want1}");
        // Now prob is 3.2e-5: in [1e-5, 1e-4), so three quarterings (power 100, 1e3, 1e4).
        assert!(got1 > 1e-5 && got1 < 1e-4);
        let s1 = 0.5 / 64.0;
        let want2 = got1 + s1 * (0.125 * 0.010 + 1.25 * 0.0);
        let got2 = update(&mut p, 25 * MS);
        assert!((got2 - want2).abs() < 1e-9, "{got2} vs {want2}");
        // At or above 10%: full alpha and beta, steps capped at 2%.
        p.prob = MAX_PROB / 5;
        p.qdelay_old = 15 * MS;
        let want3 = 0.2 + 0.125 * 0.005 + 1.25 * 0.005;
        let got3 = update(&mut p, 20 * MS);
        assert!((got3 - want3).abs() < 1e-6, "{got3} vs {want3}");
        let capped = update(&mut p, 200 * MS);
        assert!((capped - (got3 + 0.02)).abs() < 1e-6, "{capped}");
    }

    #[test]
    fn delay_at_target_holds_the_probability_and_zero_delay_decays_it() {
        let mut p = pie();
        p.prob = MAX_PROB / 4;
        p.qdelay_old = 15 * MS;
        assert!((update(&mut p, 15 * MS) - 0.25).abs() < 1e-6);
        p.qdelay = 0;
        p.qdelay_old = 0;
        p.calculate_probability(0);
        // Below target: minus alpha * 15 ms, then the 1/64 decay.
        let want = (0.25 - 0.125 * 0.015) * 63.0 / 64.0;
        assert!((p.probability() - want).abs() < 1e-6, "{}", p.probability());
    }

    #[test]
    fn no_early_drops_during_the_burst_allowance_or_below_two_mtus() {
        let mut p = pie();
        let mut rng = Rng::new(1, 1);
        p.prob = MAX_PROB / 2;
        p.qdelay = 50 * MS;
        let mut pkt = Packet::data(0, 1, 0, 1448, 1500, 0);
        assert_eq!(p.on_arrival(&mut pkt, 100_000, false, &mut rng), Verdict::Enqueue, "burst allowance");
        p.on_departure(0, 10_000, 100 * MS);
        p.on_departure(0, 10_000, 250 * MS); // 150 ms between departures use it up
        assert_eq!(p.burst_time, 0);
        assert_eq!(p.on_arrival(&mut pkt, 2999, false, &mut rng), Verdict::Enqueue, "under two MTUs");
        // De-randomised: the arrival after a drop accumulates only 0.5 < 0.85 and
        // is safe, then each draws 0.5; one drop per 1 + 2 arrivals on average.
        let drops = (0..30_000).filter(|_| p.on_arrival(&mut pkt, 100_000, false, &mut rng) == Verdict::Drop).count();
        assert!((drops as f64 / 30_000.0 - 1.0 / 3.0).abs() < 0.01, "{drops}");
    }

    #[test]
    fn ecn_marks_only_below_ten_percent() {
        let mut p = Pie::new(PieParams { ecn: true, ..PieParams::linux(1500) });
        let mut rng = Rng::new(1, 1);
        p.burst_time = 0;
        p.qdelay = 50 * MS;
        let mut ect = Packet::data(0, 1, 0, 1448, 1500, 0);
        ect.ecn = crate::net::packet::Ecn::Ect0;
        p.prob = MAX_PROB / 20;
        let v: Vec<Verdict> = (0..200).map(|_| p.on_arrival(&mut ect.clone(), 100_000, false, &mut rng)).collect();
        assert!(v.contains(&Verdict::Marked) && !v.contains(&Verdict::Drop));
        p.prob = MAX_PROB / 5;
        let v: Vec<Verdict> = (0..200).map(|_| p.on_arrival(&mut ect.clone(), 100_000, false, &mut rng)).collect();
        assert!(v.contains(&Verdict::Drop) && !v.contains(&Verdict::Marked));
    }

    #[test]
    fn updates_run_on_linux_s_timer_grid_and_skip_idle_time() {
        let mut p = pie();
        p.qdelay = 30 * MS;
        p.catch_up(499 * MS, 100_000);
        assert_eq!(p.prob, 0, "the first update is HZ/2 after set-up");
        p.catch_up(500 * MS + 2 * TUPDATE_NS, 100_000);
        assert_eq!(p.next_update, 500 * MS + 3 * TUPDATE_NS);
        assert!(p.prob > 0);
        let mut idle = pie();
        idle.catch_up(3_600_000 * MS, 0);
        assert!(idle.next_update > 3_600_000 * MS && idle.next_update <= 3_600_000 * MS + TUPDATE_NS);
    }
}
