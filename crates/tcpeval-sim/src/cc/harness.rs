//! A network-free driver for congestion-control unit tests (after quiche's
//! `TestSender`): send a window, acknowledge n packets, lose one, advance time.
//! Every algorithm's tests use it to check exact window trajectories.

use super::{CaEvent, CaState, CcState, CongestionOps, AckSample};
use crate::time::{Time, MS};

pub struct Harness<C: CongestionOps> {
    pub cc: C,
    pub s: CcState,
    /// RTT used for samples and for advancing time by a round.
    pub rtt: Time,
}

impl<C: CongestionOps> Harness<C> {
    pub fn new(mut cc: C, cwnd: u32) -> Self {
        let mut s = CcState::new(cwnd, 1448);
        s.srtt = 100 * MS;
        s.min_rtt = 100 * MS;
        cc.init(&mut s);
        Harness { cc, s, rtt: 100 * MS }
    }

    pub fn advance(&mut self, dt: Time) {
        self.s.now += dt;
    }

    /// Deliver `n` packets in one ACK, as the sender does: pkts_acked, then
    /// cong_avoid if cwnd-limited.
    pub fn ack(&mut self, n: u32) {
        let sample = AckSample { acked: n, rtt: Some(self.rtt), in_flight: self.s.cwnd, ..Default::default() };
        self.s.snd_una += n as u64;
        self.s.delivered += n as u64;
        self.cc.pkts_acked(&mut self.s, &sample);
        if self.s.cwnd_limited {
            self.cc.cong_avoid(&mut self.s, n);
        }
    }

    /// One RTT: a full window acknowledged one packet per ACK, spread over the RTT.
    pub fn ack_round(&mut self) {
        let w = self.s.cwnd;
        self.s.snd_nxt = self.s.snd_una + w as u64;
        for _ in 0..w {
            self.advance(self.rtt / w as u64);
            self.ack(1);
        }
    }

    /// One RTT with delayed ACKs: two packets per ACK.
    pub fn ack_round_in_pairs(&mut self) {
        let w = self.s.cwnd;
        self.s.snd_nxt = self.s.snd_una + w as u64;
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
