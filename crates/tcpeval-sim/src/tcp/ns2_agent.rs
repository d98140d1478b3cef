//! ns-2's own senders that own their window (`Profile::ns2_agent`): the
//! sender hands them its ACKs and timeouts and sends what they allow.

use super::ns2_sack1::{Ns2Sack1, WindowOption};
use super::ns2_tahoe::Ns2Tahoe;
use super::ns2_vegas::Ns2Vegas;
use super::scoreboard::Scoreboard;
use crate::time::Time;

/// A segment as an agent needs it: when it last left and whether it had
/// left before (`v_transmits_ > 1`).
#[derive(Clone, Copy, Debug)]
pub struct SentSeg {
    pub tx_time: Time,
    pub resent: bool,
}

/// What the sender does after an agent saw an ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Action {
    /// Resend this segment now, whatever the window (`output(seqno)`).
    pub resend: Option<u64>,
    /// Then send what the window allows (`send_much`).
    pub send: bool,
    /// The coarse timer backs off and restarts (`reset_rtx_timer(1)`).
    pub backoff: bool,
    /// The coarse timer restarts without backing off (`reset_rtx_timer(0, 0)`).
    pub restart: bool,
    /// One segment past the window leaves now (`send_one` on an early
    /// duplicate), not through a delayed send (`overhead_` delays only
    /// `send_much`).
    pub send_one: bool,
}

/// What ns-2's `TcpAgent` keeps of the window and the sequence space, which
/// its Vegas, Tahoe and Sack1 share (tcp/tcp.cc). Sequence numbers are the engine's;
/// ns-2's ACK number is the engine's cumulative ACK minus one.
#[derive(Clone, Debug)]
pub struct AgentWindow {
    /// `cwnd_` (a double) and `ssthresh_` (an int).
    pub cwnd: f64,
    pub ssthresh: i64,
    /// The receive window `wnd_` in packets.
    pub wnd: f64,
    pub dupacks: u32,
    /// The next segment to send (`t_seqno_`); below snd_nxt after a go-back.
    pub t_seqno: u64,
    /// `last_ack_` (= `highest_ack_`): the highest in-order segment, -1 first.
    pub last_ack: i64,
    /// `recover_`: the highest segment sent at the last cut.
    pub recover: i64,
    /// `windowInit_`, which the window takes once the first segment is ACKed.
    pub initial: f64,
}

impl AgentWindow {
    /// `windowInit_` and `window_` in packets; ssthresh starts at the receive
    /// window (`TcpAgent::reset`). The window starts at 1: ns-2's one-way
    /// agents stand the first segment in for the SYN exchange (`syn_` and
    /// `delay_growth_` true, tcl/lib/ns-default.tcl; `set_initial_window`),
    /// and take `windowInit_` once it is ACKed (`delay_growth`).
    pub fn new(initial_cwnd: u32, wnd: u64) -> Self {
        let wnd = wnd.min(i32::MAX as u64) as f64;
        AgentWindow { cwnd: 1.0, ssthresh: wnd as i64, wnd, dupacks: 0, t_seqno: 0, last_ack: -1, recover: 0, initial: initial_cwnd as f64 }
    }

    /// `if (last_ack_ == 0 && delay_growth_) cwnd_ = initial_window()`: the
    /// first segment, the SYN's stand-in, is ACKed; Tahoe and Sack1 test it
    /// after the new ACK, Vegas before it (a new ACK then).
    pub fn delay_growth(&mut self) {
        if self.last_ack == 0 {
            self.cwnd = self.initial;
        }
    }

    /// `window()`: min(cwnd, wnd) in whole packets.
    pub fn window(&self) -> i64 {
        self.cwnd.min(self.wnd) as i64
    }

    /// `send_much`'s test: segment `t_seqno` is within the window above the
    /// highest in-order segment.
    pub fn may_send(&self) -> bool {
        (self.t_seqno as i64) <= self.last_ack + self.window()
    }

    /// `t_seqno_ - last_ack_`: the packets out plus one.
    pub fn outstanding(&self) -> f64 {
        (self.t_seqno as i64 - self.last_ack) as f64
    }

    /// `newack` of the engine's cumulative ACK `ack`.
    pub fn newack(&mut self, ack: u64) {
        self.dupacks = 0;
        self.last_ack = ack as i64 - 1;
        self.t_seqno = self.t_seqno.max(ack);
    }

    /// ssthresh half the window, at least 2 (`slowdown(CLOSE_SSTHRESH_HALF)`),
    /// cwnd `cwnd`, and back to the head (`reset_rtx_timer(0, _)`).
    pub fn cut_to(&mut self, cwnd: f64) {
        self.ssthresh = (self.window() / 2).max(2);
        self.cwnd = cwnd;
        self.t_seqno = (self.last_ack + 1) as u64;
    }
}

/// Which of ns-2's agents a flow runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ns2AgentKind {
    /// `Agent/TCP/Vegas` (tcp::ns2_vegas).
    Vegas,
    /// `Agent/TCP`, Tahoe (tcp::ns2_tahoe).
    Tahoe,
    /// `Agent/TCP/Sack1` (tcp::ns2_sack1): Reno, or HighSpeed (`windowOption_` 8).
    Sack1 { highspeed: bool },
}

#[derive(Clone, Debug)]
pub enum Ns2Agent {
    Vegas(Ns2Vegas),
    Tahoe(Ns2Tahoe),
    Sack1(Ns2Sack1),
}

impl Ns2Agent {
    /// The agent of `kind` with initial window `iw` and receive window `wnd`;
    /// Vegas's (alpha, beta, gamma) come with it. None where it cannot run:
    /// Vegas without them, Sack1 on a flow without SACK (ns-2 then runs
    /// Newreno, which the engine's own sender stands in for).
    pub fn new(kind: Ns2AgentKind, vegas: Option<(u32, u32, u32)>, sack: bool, iw: u32, wnd: u64) -> Option<Self> {
        Some(match kind {
            Ns2AgentKind::Vegas => {
                let (alpha, beta, gamma) = vegas?;
                Ns2Agent::Vegas(Ns2Vegas::new(alpha, beta, gamma, iw, wnd))
            }
            Ns2AgentKind::Tahoe => Ns2Agent::Tahoe(Ns2Tahoe::new(iw, wnd)),
            Ns2AgentKind::Sack1 { .. } if !sack => return None,
            Ns2AgentKind::Sack1 { highspeed } => {
                let option = if highspeed { WindowOption::HighSpeed } else { WindowOption::Standard };
                Ns2Agent::Sack1(Ns2Sack1::new(option, iw, wnd))
            }
        })
    }

    /// Whether the agent reads the SACK blocks (the others ignore them).
    pub fn uses_sack(&self) -> bool {
        matches!(self, Ns2Agent::Sack1(_))
    }

    fn w(&self) -> &AgentWindow {
        match self {
            Ns2Agent::Vegas(v) => &v.w,
            Ns2Agent::Tahoe(t) => &t.w,
            Ns2Agent::Sack1(s) => &s.w,
        }
    }

    /// The segment that may leave now, and whether it resends a hole: the
    /// window's `t_seqno` (or Tahoe's one segment per early duplicate), or
    /// Sack1's choice from the scoreboard.
    pub fn next_send(&self, board: &Scoreboard) -> Option<(u64, bool)> {
        let t = self.w().t_seqno;
        match self {
            Ns2Agent::Vegas(v) => v.w.may_send().then_some((t, false)),
            Ns2Agent::Tahoe(a) => (a.w.may_send() || a.may_send_one()).then_some((t, false)),
            Ns2Agent::Sack1(s) => s.next_send(board),
        }
    }

    /// Segment `seq` left at `now` (`hole`: as next_send said).
    pub fn sent(&mut self, seq: u64, hole: bool, now: Time) {
        match self {
            Ns2Agent::Vegas(v) => {
                v.on_output(now);
                v.w.t_seqno += 1;
            }
            Ns2Agent::Tahoe(t) => t.w.t_seqno += 1,
            Ns2Agent::Sack1(s) => s.sent(seq, hole),
        }
    }

    /// The window and ssthresh in whole packets.
    pub fn window(&self) -> (u32, u32) {
        let w = self.w();
        ((w.cwnd as u32).max(1), w.ssthresh.clamp(0, u32::MAX as i64) as u32)
    }

    /// An ACK: `acked` and `head` as Vegas needs them, `sack_news` (it SACKed
    /// something new) as Sack1 does; `highest_sent` is ns-2's `maxseq_`.
    pub fn on_ack(&mut self, ack: u64, acked: Option<SentSeg>, head: Option<SentSeg>, sack_news: bool, highest_sent: u64, now: Time) -> Action {
        match self {
            Ns2Agent::Vegas(v) => v.on_ack(ack, acked, head, highest_sent, now),
            Ns2Agent::Tahoe(t) => t.on_ack(ack, highest_sent),
            Ns2Agent::Sack1(s) => s.on_ack(ack, sack_news, highest_sent as i64),
        }
    }

    pub fn on_timeout(&mut self, highest_sent: u64, now: Time) {
        match self {
            Ns2Agent::Vegas(v) => v.on_timeout(highest_sent, now),
            Ns2Agent::Tahoe(t) => t.on_timeout(highest_sent),
            Ns2Agent::Sack1(s) => s.on_timeout(highest_sent as i64),
        }
    }
}
