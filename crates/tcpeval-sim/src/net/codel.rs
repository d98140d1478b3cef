//! CoDel, Controlled Delay (RFC 8289; Nichols and Jacobson, "Controlling Queue
//! Delay", ACM Queue 2012), as Linux runs it: the control law and state machine
//! of include/net/codel_impl.h (codel_should_drop, codel_dequeue,
//! codel_Newton_step) and the defaults of codel_params_init there and of
//! net/sched/sch_codel.c (Linux v6.6; the files read at torvalds/linux
//! 02d8f11d, unchanged in substance since 4.x). Times are nanoseconds where
//! Linux counts codel_time_t units of 1024 ns.
//!
//! The same state machine serves the `codel` queue (one FIFO, `Queue`) and each
//! flow queue of `fq_codel` (net/fq_codel.rs): a `CodelSource` gives it packets.

use super::packet::Packet;
use crate::time::Time;

/// Linux codel_params_init: target 5 ms, interval 100 ms (RFC 8289 section 4.2
/// and 4.3).
pub const TARGET_NS: Time = 5_000_000;
pub const INTERVAL_NS: Time = 100_000_000;
/// sch_codel.c DEFAULT_CODEL_LIMIT: 1000 packets (the hop's buffer in tcpeval).
pub const DEFAULT_LIMIT_PKTS: u64 = 1000;

/// Linux keeps 1/sqrt(count) in 16 bits (codel.h REC_INV_SQRT_BITS), used as a
/// Q0.32 number shifted by this much.
const REC_INV_SQRT_SHIFT: u32 = 16;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodelParams {
    pub target: Time,
    pub interval: Time,
    /// The queue does not drop below one MTU of backlog (codel_should_drop:
    /// `*backlog <= params->mtu`; Linux psched_mtu, the device MTU).
    pub mtu: u64,
    /// Mark ECN-capable packets instead of dropping them (off for codel, on for
    /// fq_codel in Linux).
    pub ecn: bool,
}

/// Per-queue CoDel state (Linux struct codel_vars; zeroed by codel_vars_init).
#[derive(Clone, Copy, Debug, Default)]
pub struct CodelVars {
    /// Drops (or marks) since entering the dropping state.
    pub count: u32,
    lastcount: u32,
    pub dropping: bool,
    rec_inv_sqrt: u16,
    /// When the sojourn time will have stayed above target for an interval;
    /// None: it is below target.
    first_above_time: Option<Time>,
    pub drop_next: Time,
    /// The sojourn time of the last packet dequeued.
    pub ldelay: Time,
}

/// The queue CoDel controls: head removal, backlog after it, and what happens to
/// a packet CoDel drops or marks.
pub trait CodelSource {
    /// Remove the head packet with its enqueue time.
    fn pop(&mut self) -> Option<(Time, Packet)>;
    /// Bytes queued (after the last pop): the whole qdisc's, also in fq_codel.
    fn backlog(&self) -> u64;
    fn dropped(&mut self, p: &Packet);
    fn marked(&mut self);
}

impl CodelVars {
    /// One Newton iteration of 1/sqrt(count) in fixed point, exactly as
    /// codel_Newton_step: new = (old / 2) * (3 - count * old^2).
    fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
        let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
        let mut val = (3u64 << 32).wrapping_sub(self.count as u64 * invsqrt2 as u64);
        val >>= 2;
        val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
    }

    /// codel_control_law: t + interval / sqrt(count).
    fn control_law(&self, t: Time, interval: Time) -> Time {
        let scale = (self.rec_inv_sqrt as u64) << REC_INV_SQRT_SHIFT;
        t + ((interval as u128 * scale as u128) >> 32) as u64
    }

    /// codel_should_drop: has the sojourn time been above target for an interval?
    fn should_drop(&mut self, head_enqueued: Option<Time>, backlog: u64, p: &CodelParams, now: Time) -> bool {
        let Some(enqueued) = head_enqueued else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now.saturating_sub(enqueued);
        if self.ldelay < p.target || backlog <= p.mtu {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + p.interval);
                false
            }
            Some(t) => now > t,
        }
    }

    /// Drop or mark `pkt` per the ECN switch: true if it was marked and stays.
    fn signal<S: CodelSource>(&self, pkt: &mut Packet, p: &CodelParams, src: &mut S) -> bool {
        if p.ecn && pkt.mark_ce() {
            src.marked();
            return true;
        }
        src.dropped(pkt);
        false
    }

    /// codel_dequeue: the next packet to send, after the drops the control law
    /// asks for at this time.
    pub fn dequeue<S: CodelSource>(&mut self, p: &CodelParams, src: &mut S, now: Time) -> Option<Packet> {
        let Some((t, pkt)) = src.pop() else {
            self.dropping = false;
            return None;
        };
        let drop = self.should_drop(Some(t), src.backlog(), p, now);
        if self.dropping {
            if !drop {
                self.dropping = false;
            } else if now >= self.drop_next {
                return self.drop_while_due(p, src, now, (t, pkt));
            }
            return Some(pkt);
        }
        if !drop {
            return Some(pkt);
        }
        let mut head = Some((t, pkt));
        if let Some((_, hp)) = head.as_mut() {
            if !self.signal(hp, p, src) {
                head = src.pop();
                self.should_drop(head.map(|h| h.0), src.backlog(), p, now);
            }
        }
        self.enter_dropping(p, now);
        head.map(|h| h.1)
    }

    /// In the dropping state with a drop due: drop (or mark) at the control
    /// law's pace until the sojourn time falls below target or the next drop
    /// is in the future.
    fn drop_while_due<S: CodelSource>(&mut self, p: &CodelParams, src: &mut S, now: Time, head: (Time, Packet)) -> Option<Packet> {
        let mut head = Some(head);
        while self.dropping && now >= self.drop_next {
            self.count = self.count.wrapping_add(1);
            self.newton_step();
            let (_, pkt) = head.as_mut().expect("a packet is at hand while dropping");
            if self.signal(pkt, p, src) {
                self.drop_next = self.control_law(self.drop_next, p.interval);
                break;
            }
            head = src.pop();
            let b = src.backlog();
            if !self.should_drop(head.map(|h| h.0), b, p, now) {
                self.dropping = false;
            } else {
                self.drop_next = self.control_law(self.drop_next, p.interval);
            }
        }
        head.map(|(_, q)| q)
    }

    /// Enter the dropping state; if it was left recently, resume near the
    /// drop rate that controlled the queue then (RFC 8289 section 5.4).
    fn enter_dropping(&mut self, p: &CodelParams, now: Time) {
        self.dropping = true;
        let delta = self.count.wrapping_sub(self.lastcount);
        let since = now as i64 - self.drop_next as i64;
        if delta > 1 && since < 16 * p.interval as i64 {
            self.count = delta;
            self.newton_step();
        } else {
            self.count = 1;
            self.rec_inv_sqrt = u16::MAX;
        }
        self.lastcount = self.count;
        self.drop_next = self.control_law(now, p.interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    const MS: Time = 1_000_000;

    struct Fifo {
        q: VecDeque<(Time, Packet)>,
        bytes: u64,
        drops: Vec<u64>,
        marks: u32,
    }

    impl CodelSource for Fifo {
        fn pop(&mut self) -> Option<(Time, Packet)> {
            let x = self.q.pop_front()?;
            self.bytes -= x.1.wire_bytes as u64;
            Some(x)
        }
        fn backlog(&self) -> u64 {
            self.bytes
        }
        fn dropped(&mut self, p: &Packet) {
            self.drops.push(p.seq);
        }
        fn marked(&mut self) {
            self.marks += 1;
        }
    }

    fn params(ecn: bool) -> CodelParams {
        CodelParams { target: TARGET_NS, interval: INTERVAL_NS, mtu: 1500, ecn }
    }

    /// A queue that always holds packets enqueued `sojourn` ago: every dequeue
    /// sees that sojourn time and a large backlog.
    fn standing(n: u64, sojourn: Time, now: Time) -> Fifo {
        let q = (0..n).map(|s| (now.saturating_sub(sojourn), Packet::data(0, 1, s, 1448, 1500, 0))).collect();
        Fifo { q, bytes: n * 1500, drops: vec![], marks: 0 }
    }

    /// Linux's 1/sqrt(count): one Newton step per increment of count, from 1.0
    /// (so 0.5 at count 2, not 0.707: RFC 8289 section 5.3 allows the
    /// approximation); it converges to within 1% of the true value.
    fn newton_float(upto: u32) -> f64 {
        (2..=upto).fold(1.0, |x, n| x / 2.0 * (3.0 - n as f64 * x * x))
    }

    #[test]
    fn newton_steps_match_the_float_recurrence_and_converge() {
        let mut v = CodelVars { rec_inv_sqrt: u16::MAX, count: 1, ..CodelVars::default() };
        for count in 2..3000u32 {
            v.count = count;
            v.newton_step();
            let got = v.rec_inv_sqrt as f64 / 65536.0;
            assert!((got - newton_float(count)).abs() < 2e-3, "count {count}: {got}");
            if count >= 16 {
                let want = 1.0 / (count as f64).sqrt();
                assert!((got - want).abs() / want < 0.01, "count {count}: {got} vs {want}");
            }
        }
    }

    /// Sojourn time stuck above target: nothing for an interval, then the first
    /// drop, then drops interval * rec_inv_sqrt(count) apart (RFC 8289 section
    /// 5.3), each scheduled from the previous drop_next.
    #[test]
    fn drops_follow_the_control_law_when_the_sojourn_stays_above_target() {
        let mut v = CodelVars::default();
        let p = params(false);
        let mut drop_times = vec![];
        let step = MS / 10;
        let mut t = 0;
        while t <= 600 * MS {
            let mut q = standing(100, 20 * MS, t);
            assert!(v.dequeue(&p, &mut q, t).is_some());
            if !q.drops.is_empty() {
                drop_times.push(t as f64 / MS as f64);
            }
            t += step;
        }
        // Packets enqueued at 0 reach the 5 ms target at 5 ms: the first drop is
        // at the first dequeue strictly after 5 + 100 ms, then next = last +
        // 100 ms * newton(count), dropped at the first 0.1 ms tick at or after it.
        let mut want = vec![105.1];
        let mut next = 105.1 + 100.0;
        let mut count = 1;
        while next <= 600.0 {
            want.push(next);
            count += 1;
            next += 100.0 * newton_float(count);
        }
        assert_eq!(drop_times.len(), want.len(), "{drop_times:?} vs {want:?}");
        for (got, want) in drop_times.iter().zip(&want) {
            assert!(*got >= want - 0.01 && *got < want + 0.11, "{drop_times:?} vs {want:?}");
        }
    }

    #[test]
    fn below_target_or_one_mtu_of_backlog_never_drops() {
        let mut v = CodelVars::default();
        let p = params(false);
        for k in 0..5000 {
            let t = k * MS;
            let mut low = standing(100, 4 * MS, t);
            v.dequeue(&p, &mut low, t);
            let mut small = standing(2, 50 * MS, t); // one packet left: 1500 B <= mtu
            v.dequeue(&p, &mut small, t);
            assert!(low.drops.is_empty() && small.drops.is_empty());
        }
    }

    #[test]
    fn with_ecn_ect_packets_are_marked_and_sent_instead() {
        let mut v = CodelVars::default();
        let p = params(true);
        let (mut marks, mut sent) = (0, 0);
        for k in 0..3000 {
            let t = k * MS / 10;
            let mut q = standing(100, 20 * MS, t);
            for (_, pkt) in q.q.iter_mut() {
                pkt.ecn = crate::net::packet::Ecn::Ect0;
            }
            let got = v.dequeue(&p, &mut q, t).expect("a marked packet is sent");
            sent += 1;
            assert!(q.drops.is_empty());
            if got.ecn == crate::net::packet::Ecn::Ce {
                marks += 1;
            }
            assert_eq!(q.marks, (got.ecn == crate::net::packet::Ecn::Ce) as u32);
        }
        // 300 ms: marks at 105.1, 205.1 and 255.1 ms (as the drops of the test above).
        assert_eq!((marks, sent), (3, 3000));
    }

    #[test]
    fn a_sojourn_back_below_target_leaves_the_dropping_state() {
        let mut v = CodelVars::default();
        let p = params(false);
        let mut t = 0;
        while !v.dropping {
            v.dequeue(&p, &mut standing(100, 20 * MS, t), t);
            t += MS;
        }
        v.dequeue(&p, &mut standing(100, MS, t), t);
        assert!(!v.dropping);
    }
}
