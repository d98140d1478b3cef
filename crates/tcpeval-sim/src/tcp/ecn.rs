//! ECN at the endpoints (RFC 3168 section 6.1) as Linux 6.6 does it
//! (net/ipv4/tcp_input.c `tcp_ecn_accept_cwr`, `__tcp_ecn_check_ce`,
//! `tcp_enter_cwr`; net/ipv4/tcp_output.c `tcp_ecn_send`).
//!
//! The simulator has no handshake: a flow with `ecn = true` starts as a
//! connection that negotiated ECN (RFC 3168 section 6.1.1: the sender's
//! ECN-setup SYN, Linux `tcp_ecn` = 1; the receiver answers with an ECN-setup
//! SYN-ACK, as Linux does by default with `tcp_ecn` = 2). A DCTCP flow always
//! does (Linux `tcp_ca_needs_ecn`).
//!
//! * Sender: new data leaves ECT(0); the first new segment after a window
//!   reduction carries CWR. Retransmissions leave Not-ECT (RFC 3168 section
//!   6.1.5), except when the algorithm needs ECN (`tcp_ecn_send`: DCTCP keeps
//!   ECT on every segment, its ACKs included). An ACK with ECE in Open or
//!   Disorder enters CWR (tcp::recovery::Recovery::enter_cwr: the algorithm's
//!   ssthresh, PRR or rate halving, nothing retransmitted); CWR holds until
//!   snd_una passes the reduction's high mark, so one reduction per RTT.
//! * Receiver (`EcnReceiver`): from a CE data packet it sets ECE on its ACKs
//!   until a segment with CWR arrives (`TCP_ECN_DEMAND_CWR`), and ACKs the next
//!   two segments at once (`tcp_enter_quickack_mode(sk, 2)`); DCTCP's
//!   receiver echoes each packet's CE state instead (cc::dctcp::DctcpEcho).

use crate::cc::dctcp::DctcpEcho;
use crate::cc::CaEvent;
use crate::net::packet::Ecn;
use crate::net::Packet;

/// Whether and how a connection uses ECN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EcnMode {
    /// Not negotiated: every packet Not-ECT, ECE and CWR never set.
    #[default]
    Off,
    /// RFC 3168 ECN (the flow's `ecn = true`).
    Rfc3168,
    /// The algorithm needs ECN (Linux TCP_CONG_NEEDS_ECN, DCTCP): ECT on
    /// every segment and ACK, and DCTCP's exact echo at the receiver.
    CaNeedsEcn,
}

impl EcnMode {
    /// The mode of a flow: its switch, or forced on by its algorithm.
    pub fn of(ecn: bool, needs_ecn: bool) -> EcnMode {
        match (ecn, needs_ecn) {
            (_, true) => EcnMode::CaNeedsEcn,
            (true, false) => EcnMode::Rfc3168,
            (false, false) => EcnMode::Off,
        }
    }
}

/// The sender's ECN state (Linux `TCP_ECN_QUEUE_CWR`).
#[derive(Clone, Copy, Debug, Default)]
pub struct EcnSender {
    pub mode: EcnMode,
    /// A reduction started: the next new segment carries CWR.
    queue_cwr: bool,
}

impl EcnSender {
    pub fn new(mode: EcnMode) -> Self {
        EcnSender { mode, queue_cwr: false }
    }

    pub fn on(&self) -> bool {
        self.mode != EcnMode::Off
    }

    /// Whether an arriving ACK echoes congestion (Linux `tcp_ecn_rcv_ecn_echo`).
    pub fn ece(&self, ack: &Packet) -> bool {
        ack.ece && self.on()
    }

    /// A window reduction started (Linux `tcp_ecn_queue_cwr`, from
    /// `tcp_init_cwnd_reduction` and `tcp_enter_loss`).
    pub fn queue_cwr(&mut self) {
        self.queue_cwr = self.on();
    }

    /// Linux `tcp_ecn_send` on a data segment; `fresh`: first transmission.
    pub fn mark(&mut self, p: &mut Packet, fresh: bool) {
        if fresh {
            p.ecn = Ecn::Ect0;
            p.cwr = std::mem::take(&mut self.queue_cwr);
        } else if self.mode == EcnMode::CaNeedsEcn {
            p.ecn = Ecn::Ect0;
        }
    }
}

/// What the receiver must do after a data packet's ECN check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CeStep {
    /// ACK this packet at once (`ICSK_ACK_NOW`).
    pub ack_now: bool,
    /// Acknowledge the next `quickacks` segments at once.
    pub quickacks: u32,
    /// Send the held delayed ACK first, with this ECE (DCTCP).
    pub flush: Option<bool>,
}

/// The receiver's ECN state (Linux `ecn_flags`: `TCP_ECN_DEMAND_CWR`,
/// `TCP_ECN_SEEN`; DCTCP's `ce_state`).
#[derive(Clone, Copy, Debug, Default)]
pub struct EcnReceiver {
    pub mode: EcnMode,
    demand_cwr: bool,
    seen: bool,
    dctcp: DctcpEcho,
}

/// Linux `tcp_enter_quickack_mode(sk, 2)` on a CE mark or a retransmission.
const ECN_QUICKACKS: u32 = 2;

impl EcnReceiver {
    pub fn new(mode: EcnMode) -> Self {
        EcnReceiver { mode, ..EcnReceiver::default() }
    }

    pub fn on(&self) -> bool {
        self.mode != EcnMode::Off
    }

    /// The ECE flag of the next ACK.
    pub fn ece(&self) -> bool {
        self.demand_cwr
    }

    /// The IP ECN field of an ACK: ECT(0) when the algorithm needs ECN
    /// (`tcp_ecn_send` leaves the socket's ECT on), else Not-ECT.
    pub fn ack_ecn(&self) -> Ecn {
        if self.mode == EcnMode::CaNeedsEcn {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        }
    }

    /// Linux `tcp_ecn_accept_cwr`, for every data segment: CWR ends the echo
    /// and asks for an immediate ACK (the sender's window may be tiny).
    pub fn accept_cwr(&mut self, p: &Packet) -> bool {
        if p.cwr && self.on() {
            self.demand_cwr = false;
        }
        p.cwr && self.on()
    }

    /// Linux `__tcp_ecn_check_ce`, for new data (in order or not), before the
    /// ACK decision; `delack_pending`: an ACK is being held.
    pub fn check_ce(&mut self, ecn: Ecn, delack_pending: bool) -> CeStep {
        let mut step = CeStep::default();
        if ecn == Ecn::NotEct {
            // Not-ECT after ECT: probably a retransmission.
            if self.seen {
                step.quickacks = ECN_QUICKACKS;
            }
            return step;
        }
        if self.mode == EcnMode::CaNeedsEcn {
            // CA_EVENT_ECN_IS_CE / _NO_CE first: DCTCP sets the echo itself.
            let event = if ecn == Ecn::Ce { CaEvent::EcnIsCe } else { CaEvent::EcnNoCe };
            let echo = self.dctcp.on_data(event, delack_pending);
            (step.flush, step.ack_now) = (echo.flush, echo.ack_now);
            self.demand_cwr = self.dctcp.ce_state;
        }
        if ecn == Ecn::Ce && !self.demand_cwr {
            // "Better not delay acks, sender can have a very low cwnd."
            step.quickacks = ECN_QUICKACKS;
            self.demand_cwr = true;
        }
        self.seen = true;
        step
    }

    /// Before sending the held ACK of a DCTCP state change: its ECE.
    pub fn set_ece(&mut self, ece: bool) {
        self.demand_cwr = ece;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(ecn: Ecn, cwr: bool) -> Packet {
        let mut p = Packet::data(0, 1, 0, 1448, 1500, 0);
        (p.ecn, p.cwr) = (ecn, cwr);
        p
    }

    #[test]
    fn dctcp_forces_ecn_on_and_the_switch_turns_on_rfc3168() {
        assert_eq!(EcnMode::of(false, true), EcnMode::CaNeedsEcn);
        assert_eq!(EcnMode::of(true, true), EcnMode::CaNeedsEcn);
        assert_eq!(EcnMode::of(true, false), EcnMode::Rfc3168);
        assert_eq!(EcnMode::of(false, false), EcnMode::Off);
    }

    /// RFC 3168 6.1.5 and Linux `tcp_ecn_send`: new data ECT(0) with CWR once
    /// after a reduction, retransmissions Not-ECT unless DCTCP; nothing when off.
    #[test]
    fn sender_marks_new_data_ect_and_puts_cwr_on_one_segment() {
        let mut tx = EcnSender::new(EcnMode::Rfc3168);
        let mut p = data(Ecn::NotEct, false);
        tx.queue_cwr();
        tx.mark(&mut p, true);
        assert_eq!((p.ecn, p.cwr), (Ecn::Ect0, true));
        let mut q = data(Ecn::NotEct, false);
        tx.mark(&mut q, true);
        assert_eq!((q.ecn, q.cwr), (Ecn::Ect0, false), "CWR on one segment only");
        tx.queue_cwr();
        let mut r = data(Ecn::NotEct, false);
        tx.mark(&mut r, false);
        assert_eq!((r.ecn, r.cwr), (Ecn::NotEct, false), "a retransmission carries neither");
        let mut dctcp = EcnSender::new(EcnMode::CaNeedsEcn);
        dctcp.mark(&mut r, false);
        assert_eq!(r.ecn, Ecn::Ect0);
        let mut off = EcnSender::new(EcnMode::Off);
        off.queue_cwr();
        let mut s = data(Ecn::NotEct, false);
        off.mark(&mut s, true);
        assert!(!s.cwr);
        let mut ack = Packet::ack(0, 1, 0, 52, 0, 0);
        ack.ece = true;
        assert!(!off.ece(&ack) && tx.ece(&ack));
    }

    /// RFC 3168 6.1.3: ECE from the first CE until a CWR segment arrives; a CE
    /// asks for two quick ACKs only when it starts the echo; CWR asks for an
    /// immediate ACK; a CE on the CWR segment itself starts a new echo.
    #[test]
    fn classic_receiver_echoes_from_ce_until_cwr() {
        let mut rx = EcnReceiver::new(EcnMode::Rfc3168);
        assert_eq!(rx.check_ce(Ecn::Ect0, false), CeStep::default());
        assert!(!rx.ece());
        assert_eq!(rx.check_ce(Ecn::Ce, false).quickacks, 2);
        assert!(rx.ece());
        assert_eq!(rx.check_ce(Ecn::Ce, false).quickacks, 0, "already echoing");
        assert_eq!(rx.check_ce(Ecn::Ect0, false), CeStep::default());
        assert!(rx.ece(), "ECE holds until CWR");
        let cwr = data(Ecn::Ect0, true);
        assert!(rx.accept_cwr(&cwr));
        assert!(!rx.ece());
        let cwr_ce = data(Ecn::Ce, true);
        rx.accept_cwr(&cwr_ce);
        rx.check_ce(cwr_ce.ecn, false);
        assert!(rx.ece(), "CE on the CWR segment itself starts a new echo");
        assert_eq!(rx.check_ce(Ecn::NotEct, false).quickacks, 2, "a retransmission after ECT");
        let mut off = EcnReceiver::new(EcnMode::Off);
        assert!(!off.accept_cwr(&cwr));
        assert_eq!(off.ack_ecn(), Ecn::NotEct);
        assert_eq!(EcnReceiver::new(EcnMode::CaNeedsEcn).ack_ecn(), Ecn::Ect0);
    }

    /// DCTCP's receiver: ECE is each packet's CE state; a change flushes the
    /// held ACK with the old state and ACKs at once.
    #[test]
    fn dctcp_receiver_echoes_each_state_and_flushes_on_a_change() {
        let mut rx = EcnReceiver::new(EcnMode::CaNeedsEcn);
        assert_eq!(rx.check_ce(Ecn::Ect0, true), CeStep::default());
        let step = rx.check_ce(Ecn::Ce, true);
        assert_eq!(step, CeStep { ack_now: true, quickacks: 0, flush: Some(false) }, "no quick-ACK mode: the echo is set");
        assert!(rx.ece());
        let step = rx.check_ce(Ecn::Ect0, false);
        assert_eq!((step.flush, step.ack_now, rx.ece()), (None, true, false), "no ACK held: nothing to flush");
    }

    use crate::cc::{CaState, Cc, Reno};
    use crate::stack::Stack;
    use crate::tcp::{Receiver, ReceiverConfig, Sender, SenderConfig};
    use crate::time::MS;

    fn sender(mode: EcnMode) -> Sender {
        let cfg = SenderConfig { flow: 0, dst: 1, mss: 1448, header_bytes: 52, total_bytes: None, max_window: u64::MAX, sack: true, initial_cwnd: 10 };
        Sender::new(cfg, Cc::Reno(Reno)).with_ecn(mode)
    }

    fn ack(cum: u64, ece: bool) -> Packet {
        let mut p = Packet::ack(0, 0, cum, 52, 0, 0);
        p.ece = ece;
        p
    }

    /// RFC 3168 6.1.2 with Linux's CWR state: the first ECE halves (Reno's
    /// ssthresh, PRR down to it), ECEs of the same window do nothing, CWR rides
    /// on the first new segment; the reduction ends only once snd_una passes
    /// its high mark (10), so the ECE of the ACK reaching it exactly does not
    /// reduce again; an ECE after that is a new reduction. The packets of ECE
    /// ACKs count as CE-delivered, in the state and in the rate sample.
    #[test]
    fn the_sender_reduces_once_per_window_however_many_eces_arrive() {
        let (mut s, mut out) = (sender(EcnMode::Rfc3168), vec![]);
        s.start(0, &mut out);
        assert!(out.iter().all(|p| p.ecn == Ecn::Ect0 && !p.cwr));
        out.clear();
        s.on_ack(&ack(2, true), 10 * MS, &mut out);
        assert_eq!((s.state(), s.s.ssthresh, s.counters.ecn_reductions), (CaState::Cwr, 5, 1));
        // PRR: CEIL(2 * 5 / 10) - 0 = 1 packet for 2 delivered: cwnd 8 + 1.
        assert_eq!((s.s.cwnd, out.len(), out[0].seq, out[0].cwr), (9, 1, 10, true));
        out.clear();
        s.on_ack(&ack(4, true), 11 * MS, &mut out);
        assert_eq!((s.counters.ecn_reductions, s.s.ssthresh), (1, 5), "same window: no second reduction");
        assert_eq!((s.s.cwnd, out.len(), out[0].cwr), (8, 1, false)); // CEIL(4 * 5 / 10) - 1 = 1
        assert_eq!((s.s.delivered, s.s.delivered_ce), (4, 4));
        assert_eq!((s.last_rate_sample.delivered, s.last_rate_sample.delivered_ce), (4, 4));
        s.on_ack(&ack(10, true), 20 * MS, &mut out);
        assert_eq!((s.state(), s.counters.ecn_reductions), (CaState::Cwr, 1), "snd_una at the high mark: CWR holds");
        s.on_ack(&ack(11, false), 21 * MS, &mut out);
        assert_eq!((s.state(), s.s.delivered_ce), (CaState::Open, 10), "an ACK without ECE adds nothing");
        s.on_ack(&ack(12, true), 22 * MS, &mut out);
        assert_eq!((s.state(), s.counters.ecn_reductions), (CaState::Cwr, 2));
        s.check_invariants().unwrap();
    }

    /// At a rate-halving stack (linux-2.6.22) the CWR window comes down by
    /// Linux 2.6 `tcp_cwnd_down`: one packet every second ACK, never above
    /// in_flight + 1: 10 -> min(10, 8 + 1) = 9, then 9 - 1 = 8 (7 in flight).
    #[test]
    fn an_old_stack_reduces_by_rate_halving() {
        let cfg = SenderConfig { flow: 0, dst: 1, mss: 1448, header_bytes: 52, total_bytes: None, max_window: u64::MAX, sack: true, initial_cwnd: 10 };
        let (cc, profile) = Stack::Linux2622.build("reno", &serde_json::Map::new()).unwrap();
        let (mut s, mut out) = (Sender::new(cfg, cc).with_stack(&profile).with_ecn(EcnMode::Rfc3168), vec![]);
        s.start(0, &mut out);
        s.on_ack(&ack(2, true), 10 * MS, &mut out);
        assert_eq!((s.state(), s.s.ssthresh, s.s.cwnd), (CaState::Cwr, 5, 9));
        s.on_ack(&ack(4, true), 11 * MS, &mut out);
        assert_eq!((s.s.cwnd, s.counters.ecn_reductions), (8, 1));
    }

    #[test]
    fn without_ecn_an_ece_is_ignored_and_data_is_not_ect() {
        let (mut s, mut out) = (sender(EcnMode::Off), vec![]);
        s.start(0, &mut out);
        assert!(out.iter().all(|p| p.ecn == Ecn::NotEct));
        s.on_ack(&ack(2, true), 10 * MS, &mut out);
        assert_eq!((s.state(), s.counters.ecn_reductions, s.s.delivered_ce), (CaState::Open, 0, 0));
    }

    /// A receiver with delayed ACKs (every second segment, no quick-ACKs at
    /// start: the ns2 stack's sink without its immediate ACK of segment 0);
    /// the (ack, ECE) of every ACK sent, held ones first, for data with these
    /// ECN fields (CWR on `cwr_at`).
    fn echoes(mode: EcnMode, marks: &[Ecn], cwr_at: Option<u64>) -> Vec<(u64, bool)> {
        let cfg = ReceiverConfig { flow: 0, dst: 9, mss: 1448, total_bytes: None, delayed_ack: true, delack_timeout: 40 * MS, ack_bytes: 52 };
        let profile = crate::stack::Profile { quickacks: 0, ..Stack::Ns2.profile() };
        let mut r = Receiver::new(cfg).with_stack(&profile).with_ecn(mode);
        let mut sent = vec![];
        for (seq, &ecn) in marks.iter().enumerate() {
            let mut p = data(ecn, cwr_at == Some(seq as u64));
            p.seq = seq as u64;
            let a = r.on_data(&p, seq as u64 * MS);
            sent.extend(r.echo_ack.take().into_iter().chain(a).map(|a| (a.ack, a.ece)));
        }
        sent
    }

    /// RFC 3168 6.1.3 (Linux `__tcp_ecn_check_ce`): the CE segment and the
    /// next one are ACKed at once (quick-ACK mode, 2), ECE on every ACK until
    /// the CWR segment, which is ACKed at once without it.
    #[test]
    fn classic_echo_with_delayed_acks() {
        let (e, c) = (Ecn::Ect0, Ecn::Ce);
        let got = echoes(EcnMode::Rfc3168, &[e, c, e, e, e, e], Some(5));
        assert_eq!(got, [(2, true), (3, true), (5, true), (6, false)]);
        assert_eq!(echoes(EcnMode::Off, &[e, c, e, e], None), [(2, false), (4, false)], "no ECN: plain delayed ACKs");
    }

    /// RFC 8257 section 3.2 (figure 1): each ACK's ECE is the CE state of the
    /// data it covers; on a change the held ACK leaves first with the old
    /// state, then this segment's ACK at once.
    #[test]
    fn dctcp_exact_echo_with_delayed_acks() {
        let (e, c) = (Ecn::Ect0, Ecn::Ce);
        let got = echoes(EcnMode::CaNeedsEcn, &[e, c, c, c, e, e, c], None);
        assert_eq!(got, [(1, false), (2, true), (4, true), (5, false), (6, false), (7, true)]);
    }
}
