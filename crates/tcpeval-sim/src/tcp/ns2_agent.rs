//! ns-2's own senders that own their window (`Profile::ns2_agent`): the
//! sender hands them its ACKs and timeouts and sends what they allow.

use super::ns2_tahoe::Ns2Tahoe;
use super::ns2_vegas::Ns2Vegas;
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
}

/// What ns-2's `TcpAgent` keeps of the window and the sequence space, which
/// its Vegas and Tahoe share (tcp/tcp.cc). Sequence numbers are the engine's;
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
}

impl AgentWindow {
    /// `windowInit_` and `window_` in packets; ssthresh starts at the receive
    /// window (`TcpAgent::reset`).
    pub fn new(initial_cwnd: u32, wnd: u64) -> Self {
        let wnd = wnd.min(i32::MAX as u64) as f64;
        AgentWindow { cwnd: initial_cwnd as f64, ssthresh: wnd as i64, wnd, dupacks: 0, t_seqno: 0, last_ack: -1, recover: 0 }
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
}

#[derive(Clone, Debug)]
pub enum Ns2Agent {
    Vegas(Ns2Vegas),
    Tahoe(Ns2Tahoe),
}

impl Ns2Agent {
    fn w(&self) -> &AgentWindow {
        match self {
            Ns2Agent::Vegas(v) => &v.w,
            Ns2Agent::Tahoe(t) => &t.w,
        }
    }

    /// Whether segment `t_seqno` may leave now (the window, or Tahoe's
    /// one segment per early duplicate).
    pub fn may_send(&self) -> bool {
        match self {
            Ns2Agent::Vegas(v) => v.w.may_send(),
            Ns2Agent::Tahoe(t) => t.w.may_send() || t.may_send_one(),
        }
    }

    pub fn t_seqno(&self) -> u64 {
        self.w().t_seqno
    }

    /// Segment `t_seqno` left at `now`.
    pub fn sent(&mut self, now: Time) {
        let w = match self {
            Ns2Agent::Vegas(v) => {
                v.on_output(now);
                &mut v.w
            }
            Ns2Agent::Tahoe(t) => &mut t.w,
        };
        w.t_seqno += 1;
    }

    /// The window and ssthresh in whole packets.
    pub fn window(&self) -> (u32, u32) {
        let w = self.w();
        ((w.cwnd as u32).max(1), w.ssthresh.clamp(0, u32::MAX as i64) as u32)
    }

    pub fn on_ack(&mut self, ack: u64, acked: Option<SentSeg>, head: Option<SentSeg>, highest_sent: u64, now: Time) -> Action {
        match self {
            Ns2Agent::Vegas(v) => v.on_ack(ack, acked, head, highest_sent, now),
            Ns2Agent::Tahoe(t) => t.on_ack(ack, highest_sent),
        }
    }

    pub fn on_timeout(&mut self, highest_sent: u64, now: Time) {
        match self {
            Ns2Agent::Vegas(v) => v.on_timeout(highest_sent, now),
            Ns2Agent::Tahoe(t) => t.on_timeout(highest_sent),
        }
    }
}
