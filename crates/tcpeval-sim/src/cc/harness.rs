//! A network-free driver for congestion-control unit tests (after quiche's
//! `TestSender`): send a window, acknowledge n packets, lose one, advance time.
//! Every algorithm's tests use it to check exact window trajectories.

use super::{CaEvent, CaState, CcState, CongestionOps, AckSample};
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
    /// Send times of the segments from snd_una on (timestamped mode only).
    sent: VecDeque<Time>,
}

impl<C: CongestionOps> Harness<C> {
    pub fn new(mut cc: C, cwnd: u32) -> Self {
        let mut s = CcState::new(cwnd, 1448);
        s.srtt = 100 * MS;
        s.min_rtt = 100 * MS;
        cc.init(&mut s);
        Harness { cc, s, rtt: 100 * MS, owd: None, sent: VecDeque::new() }
    }

    /// A harness whose ACKs carry timestamps (for one-way-delay algorithms): the
    /// initial window leaves at t = 1 s, and each ACK refills the window at once,
    /// as the sender does.
    pub fn with_owd(cc: C, cwnd: u32, owd: Time) -> Self {
        let mut h = Harness::new(cc, cwnd);
        h.owd = Some(owd);
        h.s.now = SEC;
        h.refill();
        h
    }

    fn refill(&mut self) {
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
    /// cong_avoid if cwnd-limited.
    pub fn ack(&mut self, n: u32) {
        let mut sample = AckSample { acked: n, rtt: Some(self.rtt), in_flight: self.s.cwnd, ..Default::default() };
        if let Some(owd) = self.owd {
            let n = (n as usize).max(1);
            let sent_at = |k: usize| self.sent.get(k).copied().unwrap_or(self.s.now.saturating_sub(self.rtt));
            let (first, newest) = (sent_at(0), sent_at(n - 1));
            // The ACK cannot come back sooner than one RTT after the newest segment.
            self.s.now = self.s.now.max(newest + self.rtt);
            sample.rcv_tsecr = Some(first);
            sample.rcv_tsval = newest + owd;
            self.sent.drain(..n.min(self.sent.len()));
        }
        self.s.snd_una += n as u64;
        self.s.delivered += n as u64;
        self.cc.pkts_acked(&mut self.s, &sample);
        if self.s.cwnd_limited {
            self.cc.cong_avoid(&mut self.s, n);
        }
        if self.owd.is_some() {
            self.refill();
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
        let ssthresh = self.cc.ssthresh(&self.s);
        self.s.ssthresh = ssthresh;
        self.cc.set_state(&mut self.s, CaState::Recovery);
        self.s.cwnd = ssthresh;
        self.s.cwnd_cnt = 0;
        self.cc.set_state(&mut self.s, CaState::Open);
        self.cc.cwnd_event(&mut self.s, CaEvent::CompleteCwr);
        ssthresh
    }

    /// A retransmission timeout: ssthresh recomputed, cwnd = 1.
    pub fn timeout(&mut self) -> u32 {
        let ssthresh = self.cc.ssthresh(&self.s);
        self.s.ssthresh = ssthresh;
        self.s.cwnd = 1;
        self.s.cwnd_cnt = 0;
        self.cc.set_state(&mut self.s, CaState::Loss);
        self.cc.cwnd_event(&mut self.s, CaEvent::Loss);
        ssthresh
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
