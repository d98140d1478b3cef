//! A network-free driver for congestion-control unit tests (after quiche's
//! `TestSender`): send a window, acknowledge n packets, lose one, advance time.
//! Every algorithm's tests use it to check exact window trajectories. It calls
//! the hooks through tcp::hooks, the functions the sender itself uses, so an
//! algorithm sees the same hook sequence here as in a simulation, `cong_control`
//! included. What it leaves out is loss detection: a loss is a recovery entered
//! and left at once (no PRR), a timeout's Loss state lasts until everything sent
//! before it is acknowledged.

use super::{AckSample, CaState, Cc, CcState, CongestionOps, RateSample};
use crate::stack::Stack;
use crate::tcp::hooks;
use crate::time::{Time, MS, SEC};
use std::collections::VecDeque;

pub struct Harness<C: CongestionOps> {
    pub cc: C,
    pub s: CcState,
    /// RTT used for samples and for advancing time by a round.
    pub rtt: Time,
    /// With `with_owd`: the forward one-way delay stamped into the ACKs'
    /// timestamps (TSval = send time of the newest segment acked + owd, TSecr =
    /// send time of the oldest); the window is refilled after every ACK and an
    /// ACK arrives no sooner than `rtt` after the newest segment it acknowledges.
    pub owd: Option<Time>,
    /// Timestamped mode: how long the receiver holds each ACK (a delayed ACK's
    /// wait), added to TSval and to the ACK's arrival.
    pub ack_delay: Time,
    /// Send times of the segments from snd_una on (timestamped mode only).
    sent: VecDeque<Time>,
    /// snd_nxt at the last timeout: the Loss state ends when it is acknowledged.
    high_seq: u64,
}

impl Harness<Cc> {
    /// An algorithm as a stack ran it (crate::stack): the era's variant and
    /// parameters, and its growth counting.
    pub fn for_stack(stack: Stack, cc: &str, cwnd: u32) -> Self {
        let (algorithm, profile) = stack.build(cc, &serde_json::Map::new()).expect("the stack offers it");
        let mut h = Harness::new(algorithm, cwnd);
        h.s.growth = profile.growth;
        h
    }
}

impl<C: CongestionOps> Harness<C> {
    pub fn new(mut cc: C, cwnd: u32) -> Self {
        let mut s = CcState::new(cwnd, 1448);
        s.srtt = 100 * MS;
        s.min_rtt = 100 * MS;
        cc.init(&mut s);
        Harness { cc, s, rtt: 100 * MS, owd: None, ack_delay: 0, sent: VecDeque::new(), high_seq: 0 }
    }

    /// A harness whose ACKs carry timestamps (for one-way-delay algorithms): the
    /// initial window leaves at t = 1 s, and each ACK refills the window at once,
    /// as the sender does.
    pub fn with_owd(cc: C, cwnd: u32, owd: Time) -> Self {
        let mut h = Harness::new(cc, cwnd);
        h.owd = Some(owd);
        h.s.now = SEC;
        h.fill();
        h
    }

    /// Timestamped mode: send now what the window allows (the harness does so
    /// after every ACK; a test calls it after changing cwnd by hand).
    pub fn fill(&mut self) {
        let target = self.s.cwnd as usize;
        if self.sent.len() < target {
            self.sent.resize(target, self.s.now);
            self.s.last_send_time = self.s.now;
        }
        self.s.snd_nxt = self.s.snd_una + self.sent.len() as u64;
    }

    pub fn advance(&mut self, dt: Time) {
        self.s.now += dt;
    }

    /// Deliver `n` packets in one ACK, as the sender does: pkts_acked, then
    /// cong_control, else cong_avoid if cwnd-limited (`s.cwnd_limited`).
    pub fn ack(&mut self, n: u32) {
        let mut sample = AckSample { acked: n, rtt: Some(self.rtt), in_flight: self.s.cwnd, ..Default::default() };
        if let Some(owd) = self.owd {
            let n = (n as usize).max(1);
            assert!(n <= self.sent.len(), "acknowledging {n} segments, {} in flight", self.sent.len());
            let (first, newest) = (self.sent[0], self.sent[n - 1]);
            // The ACK cannot come back sooner than one RTT (plus the receiver's
            // wait) after the newest segment.
            self.s.now = self.s.now.max(newest + self.rtt + self.ack_delay);
            sample.rcv_tsecr = Some(first);
            sample.rcv_tsval = newest + owd + self.ack_delay;
            sample.newest_acked_tx = Some(newest);
            self.sent.drain(..n.min(self.sent.len()));
        }
        let rs = RateSample { acked_sacked: n, prior_in_flight: sample.in_flight, rtt: sample.rtt, ..Default::default() };
        self.deliver(&sample, &rs);
    }

    /// One ACK given whole (its RTT and timestamps), for tests that time the
    /// ACKs themselves (the BPF agreement test's one-way-delay lives).
    pub fn ack_sample(&mut self, sample: &AckSample) {
        let rs = RateSample { acked_sacked: sample.acked, prior_in_flight: sample.in_flight, rtt: sample.rtt, ..Default::default() };
        self.deliver(sample, &rs);
    }

    /// One ACK described by its rate sample (for algorithms with `cong_control`,
    /// which read it): `rs.acked_sacked` packets delivered, RTT `rs.rtt`.
    pub fn ack_rate(&mut self, rs: &RateSample) {
        let sample = AckSample { acked: rs.acked_sacked, rtt: rs.rtt, in_flight: rs.prior_in_flight, ..Default::default() };
        self.deliver(&sample, rs);
    }

    /// The sender's ACK step (tcp::hooks), with the state machine reduced to
    /// leaving Loss.
    fn deliver(&mut self, sample: &AckSample, rs: &RateSample) {
        self.s.snd_una += sample.acked as u64;
        self.s.delivered += sample.acked as u64;
        hooks::pkts_acked(&mut self.cc, &mut self.s, sample);
        if self.s.ca_state == CaState::Loss && self.s.snd_una >= self.high_seq {
            hooks::set_state(&mut self.cc, &mut self.s, CaState::Open);
        }
        let no_reduction = |_: &mut CcState| unreachable!("the harness leaves recovery at once");
        hooks::cong_control(&mut self.cc, &mut self.s, rs, sample.acked > 0, no_reduction, |s| s.cwnd_limited, None);
        if self.owd.is_some() {
            self.fill();
        }
    }

    /// One RTT: a full window acknowledged one packet per ACK, spread over the RTT.
    pub fn ack_round(&mut self) {
        let w = self.s.cwnd;
        if self.owd.is_none() {
            self.s.snd_nxt = self.s.snd_una + w as u64;
        }
        for _ in 0..w {
            self.advance(self.rtt / w as u64);
            self.ack(1);
        }
    }

    /// One RTT with delayed ACKs: two packets per ACK.
    pub fn ack_round_in_pairs(&mut self) {
        let w = self.s.cwnd;
        if self.owd.is_none() {
            self.s.snd_nxt = self.s.snd_una + w as u64;
        }
        let acks = w.div_ceil(2);
        for i in 0..acks {
            self.advance(self.rtt / acks as u64);
            self.ack(if i == acks - 1 && w % 2 == 1 { 1 } else { 2 });
        }
    }

    /// A loss detected by duplicate ACKs: ssthresh is recomputed, recovery entered
    /// and left (cwnd = ssthresh), as the sender does. Returns the new ssthresh.
    pub fn lose(&mut self) -> u32 {
        hooks::init_cwnd_reduction(&mut self.cc, &mut self.s);
        hooks::set_state(&mut self.cc, &mut self.s, CaState::Recovery);
        hooks::end_cwnd_reduction(&mut self.cc, &mut self.s);
        self.s.ssthresh
    }

    /// A retransmission timeout: ssthresh recomputed (unless already in Loss),
    /// cwnd = 1. Returns the ssthresh.
    pub fn timeout(&mut self) -> u32 {
        self.high_seq = self.s.snd_nxt;
        hooks::enter_loss(&mut self.cc, &mut self.s);
        self.s.ssthresh
    }

    /// Run rounds until `done` holds (at most 1e6 rounds); returns how many.
    pub fn rounds_until(&mut self, done: impl Fn(&CcState) -> bool) -> u32 {
        let mut n = 0;
        while !done(&self.s) && n < 1_000_000 {
            self.ack_round();
            n += 1;
        }
        n
    }
}
