//! ns-2's own senders that own their window (`Profile::ns2_agent`): the
//! sender hands them its ACKs and timeouts and sends what they allow.

use super::ns2_tahoe::Ns2Tahoe;
use super::ns2_vegas::{Action, Ns2Vegas, SentSeg};
use crate::time::Time;

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
    /// Whether segment `t_seqno` may leave now (the window, or Tahoe's
    /// one segment per early duplicate).
    pub fn may_send(&self) -> bool {
        match self {
            Ns2Agent::Vegas(v) => v.may_send(),
            Ns2Agent::Tahoe(t) => t.may_send() || t.may_send_one(),
        }
    }

    pub fn t_seqno(&self) -> u64 {
        match self {
            Ns2Agent::Vegas(v) => v.t_seqno,
            Ns2Agent::Tahoe(t) => t.t_seqno,
        }
    }

    /// Segment `t_seqno` left at `now`.
    pub fn sent(&mut self, now: Time) {
        match self {
            Ns2Agent::Vegas(v) => {
                v.on_output(now);
                v.t_seqno += 1;
            }
            Ns2Agent::Tahoe(t) => t.t_seqno += 1,
        }
    }

    /// The window and ssthresh in whole packets.
    pub fn window(&self) -> (u32, u32) {
        let (cwnd, ssthresh) = match self {
            Ns2Agent::Vegas(v) => (v.cwnd, v.ssthresh),
            Ns2Agent::Tahoe(t) => (t.cwnd, t.ssthresh),
        };
        ((cwnd as u32).max(1), ssthresh.clamp(0, u32::MAX as i64) as u32)
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
