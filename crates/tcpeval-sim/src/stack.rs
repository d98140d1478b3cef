//! Era-faithful TCP stacks (issue 28): the kernel (or simulator) a flow's
//! sender ran, as a typed profile of the behaviour switches that moved
//! throughput between versions, and the algorithms that stack offered, each
//! built in its era's variant. docs/stacks.md lists every switch per stack with
//! the version that changed it and its source.
//!
//! Wiring a flow is one call: `Stack::from_name(name)?.build(cc, params)` gives
//! the algorithm and the `Profile` the sender and receiver take
//! (`Sender::with_stack`, `Receiver::with_stack`).

use crate::cc::{self, Cc, CcError, Growth};
use crate::tcp::rack::{FackRule, LossDetection};
use crate::tcp::ns2_agent::Ns2AgentKind;
use crate::tcp::recovery::Reduction;
use crate::tcp::rtt::RttSampling;
use crate::tcp::receiver::SackCompression;
use crate::tcp::tso::{AckWait, TsoDefer};
use crate::tcp::tsq::Tsq;
use crate::tcp::sender::CwndTest;
use crate::tcp::undo::UndoRule;
use crate::time::{Time, MS, SEC};
use serde_json::{Map, Value};

/// A stack a flow can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// Linux 2.4.19-2.4.22 with the algorithm patches of the time (Scalable,
    /// HighSpeed, FAST, BIC, H-TCP for 2.4), as seed 000's senders.
    Linux24,
    /// Linux 2.6.13 as modified by seed 003's testbed (CUBIC and HSTCP-LP
    /// added as modules).
    Linux2613,
    /// Linux 2.6.22, "out of the box" (seed 001).
    Linux2622,
    /// Linux 3.16 (Ubuntu 14.04.1, seed 002).
    Linux316,
    /// Today's Linux, as the engine has always modelled it (PRR, per-packet
    /// growth, CUBIC 2.3 with HyStart as in 6.x); the default.
    Linux66,
    /// ns-2's own agents: Agent/TCP/Sack1 with a TCPSink/Sack1/DelAck sink
    /// (ns-2.35's tcl/lib/ns-default.tcl defaults), as seed 004.
    Ns2,
    /// ns-2.35 TCP-Linux (`Agent/TCP/Linux`): Linux 2.6.22's
    /// congestion-control modules (as `Linux2622` builds them) inside ns-2's
    /// own sender, tcp/tcp-linux.cc (its recovery: Reduction::Ns2Linux), with
    /// ns-2's sink (no quick ACKs, no D-SACK).
    Ns2Linux,
}

/// Every stack, oldest first.
pub const STACKS: [Stack; 7] = [Stack::Linux24, Stack::Linux2613, Stack::Linux2622, Stack::Linux316, Stack::Linux66, Stack::Ns2, Stack::Ns2Linux];

/// The stack of a flow that names none: today's behaviour, unchanged.
pub const DEFAULT_STACK: Stack = Stack::Linux66;

/// Where a stack raises CA_EVENT_TX_START (cc::CaEvent::TxStart), which
/// Vegas, YeAH and 2.6.22's Compound answer by starting afresh (baseRTT too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxStart {
    /// Before any data segment leaves while nothing is in flight
    /// (`tcp_packets_in_flight` == 0), retransmissions included: the first
    /// one after a timeout, which marked everything lost. Linux 2.6.11's
    /// built-in Vegas hook and 2.6.22's and 3.16's `tcp_transmit_skb` test
    /// this for every segment; today's `tcp_event_data_sent` (called from
    /// `__tcp_transmit_skb` for each segment with data, retransmissions
    /// included: `tcp_retransmit_skb` adds to `retrans_out` only after
    /// sending) for data only. A pure sender sends only data: same rule.
    AnyData,
    /// Never: ns-2.35's TCP-Linux raises only CA_EVENT_FAST_ACK, SLOW_ACK
    /// and LOSS (tcp/tcp-linux.cc); ns-2's own agents have no such event.
    Never,
}

/// The behaviour switches of a stack that the sender and receiver consume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Whether growth counts packets or ACKs (cc::Growth).
    pub growth: Growth,
    /// The window during a loss recovery (tcp::recovery::Reduction).
    pub reduction: Reduction,
    /// The retransmission timeout before the first RTT sample: 3 s
    /// (`TCP_TIMEOUT_INIT` = 3*HZ, include/net/tcp.h at 2.6.22; RFC 1122) until
    /// Linux 3.1 made it 1 s (RFC 6298); ns-2 `rtxcur_init_` 3.0.
    pub initial_rto: Time,
    /// ACKs sent at once at connection start (quick-ACK mode, Linux
    /// `TCP_MAX_QUICKACKS` = 16 in every version here); ns-2's sink ACKs only
    /// the first segment at once (`SYN_immediate_ack_`: it stands in for the
    /// SYN).
    pub quickacks: u32,
    /// The stack's out-of-the-box initial window and delayed-ACK timer (ns-2's
    /// `Agent/TCPSink/Sack1/DelAck set interval_ 100ms`; None: Linux's, the
    /// engine's default). The engine config's flow carries its own
    /// `initial_cwnd` and `delack_timeout_ns`; the front end fills them from
    /// these (binding `stack_defaults`) for a flow that sets neither.
    pub initial_window: u32,
    pub delack_timeout: Option<Time>,
    /// How the sender detects losses (tcp::rack::LossDetection; a flow's
    /// `loss_detection` overrides it).
    pub loss_detection: LossDetection,
    /// FACK's details in this stack, for LossDetection::Fack.
    pub fack: FackRule,
    /// Whether the receiver reports duplicates by D-SACK (RFC 2883) when the
    /// flow has SACK: Linux `sysctl_tcp_dsack` = 1 (net/ipv4/tcp_input.c, 2.4
    /// to today); ns-2's `Agent/TCPSink set generateDSacks_ false`
    /// (tcl/lib/ns-default.tcl at 2.35).
    pub dsack: bool,
    /// Where CA_EVENT_TX_START is raised.
    pub tx_start: TxStart,
    /// How a reduction found unneeded is undone (tcp::undo).
    pub undo: UndoRule,
    /// When an ACK may grow the window (tcp::sender::CwndTest).
    pub cwnd_test: CwndTest,
    /// Which segments give an ACK's RTT samples (tcp::rtt::RttSampling).
    pub rtt_sampling: RttSampling,
    /// Whether the sender sets a paced flow's rate by Linux's
    /// `tcp_update_pacing_rate` after each ACK's window step (TCP's internal
    /// pacing, 4.13 on: a module that asks for pacing without `cong_control`,
    /// FAST here, gets that rate, not its own). Earlier stacks keep the
    /// module's rate.
    pub tcp_pacing: bool,
    /// TCP Small Queues (tcp::tsq; Linux 3.6 on), with the stack's
    /// `tcp_limit_output_bytes`; None before 3.6 and in ns-2.
    pub tsq: Option<Tsq>,
    /// The receiver's SACK compression (tcp::receiver::SackCompression;
    /// Linux 4.20 on), None before and in ns-2.
    pub sack_compression: Option<SackCompression>,
    /// TSO autosizing and deferral (tcp::tso): the sender hands down bursts
    /// of one skb, GSO or not. Modelled at 6.6 (None before and in ns-2).
    pub tso: Option<TsoDefer>,
    /// The sender is one of ns-2's own agents (tcp::ns2_agent), set by
    /// `build` for the algorithms ns-2 has as agents of their own (Vegas,
    /// Tahoe) at the ns2 stack.
    pub ns2_agent: Option<Ns2AgentKind>,
}

/// Linux TCP_MAX_QUICKACKS (include/net/tcp.h, 2.6.22 and today).
const LINUX_QUICKACKS: u32 = 16;
/// ns-2's sinks ACK segment 0 at once (`Agent/TCPSink set SYN_immediate_ack_
/// true`, tcl/lib/ns-default.tcl at 2.35; tcp/tcp-sink.cc `DelAckSink::recv`).
const NS2_SYN_ACK: u32 = 1;
/// Linux TCP_TIMEOUT_INIT before 3.1 (3*HZ) and after (1*HZ).
const RTO_INIT_OLD: Time = 3 * SEC;
/// `sysctl_tcp_limit_output_bytes`: 131072 from TSQ's start (3.6, "tcp: TCP
/// Small Queues") to 4.1; 1 MB from 5.0 (6.6 reads `16 * 65536`,
/// net/ipv4/tcp_ipv4.c `tcp_sk_init`). This machine's 6.18 reads 4 MB.
const TSQ_LIMIT_316: u64 = 131_072;
const TSQ_LIMIT_66: u64 = 1 << 20;
const RTO_INIT_RFC6298: Time = SEC;

impl Stack {
    /// The name scenarios use.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Linux24 => "linux-2.4",
            Stack::Linux2613 => "linux-2.6.13",
            Stack::Linux2622 => "linux-2.6.22",
            Stack::Linux316 => "linux-3.16",
            Stack::Linux66 => "linux-6.6",
            Stack::Ns2 => "ns2",
            Stack::Ns2Linux => "ns2-linux",
        }
    }

    /// The stack of a scenario name; an unknown name is an error listing them.
    pub fn from_name(name: &str) -> Result<Stack, String> {
        STACKS.into_iter().find(|s| s.name() == name).ok_or_else(|| {
            let names: Vec<_> = STACKS.iter().map(|s| s.name()).collect();
            format!("unknown stack '{name}'; allowed: {}", names.join(", "))
        })
    }

    /// The algorithms this stack offers, by their registry names.
    pub fn algorithms(self) -> Vec<&'static str> {
        let names: &[&str] = match self {
            Stack::Linux24 => &["reno", "scalable", "highspeed", "htcp", "bic", "fast", "vegas", "westwood", "hstcplp", "lp"],
            Stack::Linux2613 => &["reno", "bic", "cubic", "highspeed", "htcp", "scalable", "vegas", "westwood", "hstcplp"],
            // ns-2.35's tcp/linux/src holds these and naive_reno, hybla, veno
            // (not in tcpeval); its compound is its own module (tcp_compound.c).
            Stack::Linux2622 | Stack::Ns2Linux => &["reno", "bic", "cubic", "highspeed", "htcp", "scalable", "vegas", "westwood", "lp", "illinois", "yeah", "compound"],
            Stack::Linux316 => &["reno", "bic", "cubic", "highspeed", "htcp", "scalable", "vegas", "westwood", "lp", "illinois", "yeah"],
            // Tahoe is ns-2's `Agent/TCP`; Linux has none.
            Stack::Linux66 => return cc::REGISTRY.iter().map(|a| a.names[0]).filter(|&n| n != "tahoe").collect(),
            Stack::Ns2 => &["reno", "tahoe", "highspeed", "scalable", "vegas", "fast", "westwood"],
        };
        names.to_vec()
    }

    /// Whether this stack offers the algorithm (by any of its names); the
    /// error names what it offers.
    pub fn offers(self, cc_name: &str) -> Result<(), String> {
        let offered = self.algorithms();
        match cc::algorithm(cc_name) {
            Some(alg) if offered.contains(&alg.names[0]) => Ok(()),
            _ => Err(format!("stack {} offers {}, not '{cc_name}'", self.name(), offered.join(", "))),
        }
    }

    /// The behaviour switches of this stack (docs/stacks.md).
    pub fn profile(self) -> Profile {
        let linux_old = |growth| Profile {
            growth,
            reduction: Reduction::RateHalving,
            initial_rto: RTO_INIT_OLD,
            // A first connection on its route keeps tcp_v4_init_sock's
            // snd_cwnd = 2 (net/ipv4/tcp_ipv4.c, 2.4.22 and 2.6.22):
            // tcp_init_metrics takes its `reset` path when the route has no
            // cached RTT and returns before tcp_init_cwnd (RFC 3390's 3 for
            // MSS 1448), which only a later connection on the route gets.
            initial_window: 2,
            quickacks: LINUX_QUICKACKS,
            delack_timeout: None,
            loss_detection: LossDetection::Fack,
            fack: FackRule::LINUX_OLD,
            dsack: true,
            tx_start: TxStart::AnyData,
            undo: UndoRule::Linux26,
            cwnd_test: CwndTest::PriorInFlight,
            rtt_sampling: RttSampling::Linux26,
            tcp_pacing: false,
            tsq: None,
            sack_compression: None,
            tso: None,
            ns2_agent: None,
        };
        let linux_new = |growth| Profile {
            growth,
            reduction: Reduction::Prr,
            initial_rto: RTO_INIT_RFC6298,
            // 2.6.39: "tcp: Increase the initial congestion window to 10"
            // (RFC 6928); by 3.16 tcp_init_metrics' reset path ends in
            // tcp_init_cwnd too (net/ipv4/tcp_metrics.c read at 3.16.0), so a
            // first connection gets it.
            initial_window: 10,
            quickacks: LINUX_QUICKACKS,
            delack_timeout: None,
            // FACK on (`tcp_fack` = 1) until 4.15 removed it, with early
            // retransmit and the tail loss probe (`tcp_early_retrans` = 3,
            // 3.10 to 4.10).
            loss_detection: LossDetection::FackTlp,
            fack: FackRule::LINUX_316,
            dsack: true,
            tx_start: TxStart::AnyData,
            undo: UndoRule::Linux316,
            cwnd_test: CwndTest::Validated,
            rtt_sampling: RttSampling::Current,
            tcp_pacing: false,
            tsq: Some(Tsq { limit_output_bytes: TSQ_LIMIT_316, skb_overhead: 1280 }),
            sack_compression: None,
            tso: None,
            ns2_agent: None,
        };
        match self {
            // 2.4.22 (hooao/linux-2.4.22 aa17aeb): tcp_cwnd_down's floor is ssthresh / 2 for every algorithm.
            // 2.4.22 raises no events; TX_START stays for the one algorithm
            // that answers it here, Vegas, borrowed from 2.6.11, whose
            // tcp_transmit_skb re-enabled it with nothing in flight.
            Stack::Linux24 => Profile {
                reduction: Reduction::RateHalving24,
                ..linux_old(Growth::PerAck)
            },
            Stack::Linux2613 | Stack::Linux2622 => linux_old(Growth::PerAck),
            // PRR-SSRB on every ACK below ssthresh (tcp_cwnd_reduction, 3.16.0).
            Stack::Linux316 => Profile { reduction: Reduction::PrrSsrb, ..linux_new(Growth::PerAckAvoidance) },
            // RACK-TLP: Linux's only loss detection from 4.18 (tcp::rack);
            // SACK compression from 4.20.
            Stack::Linux66 => Profile {
                loss_detection: LossDetection::Rack,
                undo: UndoRule::Linux66,
                tcp_pacing: true,
                tsq: Some(Tsq { limit_output_bytes: TSQ_LIMIT_66, skb_overhead: 896 }),
                sack_compression: Some(SackCompression::LINUX),
                tso: Some(TsoDefer { ack_wait: AckWait::HalfSrttOrOneMs }),
                ..linux_new(Growth::PerPacket)
            },
            Stack::Ns2 => Profile {
                growth: Growth::PerAck,
                reduction: Reduction::Halve,
                initial_rto: RTO_INIT_OLD,
                // ns-2.35 `Agent/TCP set windowInit_ 2`.
                initial_window: 2,
                quickacks: NS2_SYN_ACK,
                delack_timeout: Some(100 * MS),
                loss_detection: LossDetection::DupThresh,
                fack: FackRule::NS2,
                dsack: false,
                tx_start: TxStart::Never,
                undo: UndoRule::Off,
                cwnd_test: CwndTest::Always,
                rtt_sampling: RttSampling::Current,
                tcp_pacing: false,
                tsq: None,
                sack_compression: None,
                tso: None,
                ns2_agent: None,
            },
            // The sink is ns-2's TCPSink/Sack1/DelAck: no quick-ACK start, no
            // D-SACK (`generateDSacks_ false`). Initial window and delayed-ACK
            // timer stay the flow's, which the translation passes to ns-2.
            Stack::Ns2Linux => Profile {
                reduction: Reduction::Ns2Linux { delayed_send: false },
                fack: FackRule::NS2,
                quickacks: NS2_SYN_ACK,
                dsack: false,
                tx_start: TxStart::Never,
                // "We don't have undo yet" (tcp/tcp-linux.cc).
                undo: UndoRule::Off,
                // `pkts_acked` sees the newest cumulatively ACKed segment
                // (tcp/tcp-linux.cc `tss[]`), not 2.6.22's oldest.
                rtt_sampling: RttSampling::Ns2Linux,
                ..linux_old(Growth::PerAck)
            },
        }
    }

    /// The stack whose congestion-control modules this one runs: ns-2.35
    /// TCP-Linux copied Linux 2.6.22.6's (docs/crosscheck.md).
    fn modules(self) -> Stack {
        match self {
            Stack::Ns2Linux => Stack::Linux2622,
            other => other,
        }
    }

    /// The parameter defaults of an algorithm in this stack where they differ
    /// from today's (the flow's own `params` override them):
    /// * CUBIC 2.0/2.1 (2.6.16-2.6.24; net/ipv4/tcp_cubic.c at 2.6.22): beta
    ///   819/1024; HyStart only came with 2.3 (2.6.29);
    /// * Scalable: Kelly's a = 0.01 per ACK (CCR 2003, the 2.4 patch; ns-2);
    ///   Linux 2.6.13-3.19 `TCP_SCALABLE_AI_CNT` = 50 per ACK
    ///   (net/ipv4/tcp_scalable.c at 2.6.22), 100 per packet from 4.0;
    /// * ns-2.35 Agent/TCP/Vegas: `v_alpha_` 1, `v_beta_` 3 (ns-default.tcl);
    /// * BIC at 2.4: the built-in BIC of 2.6.11 (tcp_input.c, include/net/tcp.h
    ///   `BICTCP_MAX_INCREMENT` 32, `BICTCP_FUNC_OF_MIN_INCR` 11 in smooth_part's
    ///   place) for NCSU's 2.4 patch, which is not public;
    /// * BIC at 2.6.13: the module's `max_increment` 32 (2.6.13-2.6.14; the
    ///   -stable patch "BIC TCP: max increment too large" for 2.6.14.2 set it
    ///   to 16, since 2.6.13's code already divides by the ACK ratio).
    fn era_params(self, alg: &str) -> Map<String, Value> {
        let pairs: Vec<(&str, Value)> = match (self.modules(), alg) {
            (Stack::Linux2613 | Stack::Linux2622, "cubic") => vec![("beta", (819.0 / 1024.0).into()), ("hystart", false.into())],
            (Stack::Linux24 | Stack::Ns2, "scalable") => vec![("ai_cnt", 100.into())],
            (Stack::Linux2613 | Stack::Linux2622 | Stack::Linux316, "scalable") => vec![("ai_cnt", 50.into())],
            (Stack::Ns2, "vegas") => vec![("alpha", 1.into()), ("beta", 3.into())],
            (Stack::Linux24, "bic") => vec![("max_increment", 32.into()), ("smooth_part", 11.into())],
            (Stack::Linux2613, "bic") => vec![("max_increment", 32.into())],
            _ => vec![],
        };
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// The flow's algorithm as this stack ran it: the era's parameter defaults
    /// under the flow's `params`, the era's variant of the code, and the
    /// profile for the sender. Errors name the field (`cc` or `params.NAME`).
    pub fn build(self, cc_name: &str, params: &Map<String, Value>) -> Result<(Cc, Profile), CcError> {
        // An unknown name is left to Cc::from_config, whose error lists them all.
        let mut merged = Map::new();
        if let Some(alg) = cc::algorithm(cc_name) {
            self.offers(cc_name).map_err(|message| CcError { field: "cc".into(), message })?;
            merged = self.era_params(alg.names[0]);
        }
        merged.extend(params.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut algorithm = Cc::from_config(cc_name, &merged)?;
        if matches!(algorithm, Cc::Compound(_)) && self.modules() == Stack::Linux2622 {
            cc::compound::check_module_params(params)?;
        }
        self.era_variant(&mut algorithm);
        Ok((algorithm, self.profile_for(cc_name)))
    }

    /// The switches for one algorithm: the stack's, with ns-2's own agent
    /// where the stack runs that algorithm as one.
    pub fn profile_for(self, cc_name: &str) -> Profile {
        Profile { ns2_agent: self.ns2_agent(cc_name), ..self.profile() }
    }

    /// ns-2's own Vegas, Tahoe and Sack1 (Reno, HighSpeed) are senders of
    /// their own (tcp::ns2_agent).
    fn ns2_agent(self, cc_name: &str) -> Option<Ns2AgentKind> {
        match (self, cc::algorithm(cc_name).map(|a| a.names[0])) {
            (Stack::Ns2, Some("vegas")) => Some(Ns2AgentKind::Vegas),
            (Stack::Ns2, Some("tahoe")) => Some(Ns2AgentKind::Tahoe),
            (Stack::Ns2, Some("reno")) => Some(Ns2AgentKind::Sack1 { highspeed: false }),
            (Stack::Ns2, Some("highspeed")) => Some(Ns2AgentKind::Sack1 { highspeed: true }),
            _ => None,
        }
    }

    /// The era's variant of an algorithm's code where parameters cannot say it.
    fn era_variant(self, algorithm: &mut Cc) {
        use cc::{cubic::CubicVersion, illinois::IllinoisVersion, vegas::VegasVersion, westwood::WestwoodVersion, yeah::YeahVersion};
        let era = self.modules();
        match algorithm {
            Cc::Cubic(c) => c.set_version(match era {
                Stack::Linux2613 | Stack::Linux2622 => CubicVersion::V2_1,
                Stack::Linux316 => CubicVersion::V2_3PerAck,
                _ => CubicVersion::Current,
            }),
            // The step read at 2.6.22; 2.6.11's built-in Vegas has it too, so
            // 2.6.13 between them (2.4 is given it unread); the step from
            // cwnd came later in 2.6 and is the one 3.x runs.
            Cc::Vegas(v) if matches!(era, Stack::Linux24 | Stack::Linux2613 | Stack::Linux2622) => v.set_version(VegasVersion::Linux26),
            // 2.4: the BIC built into 2.6.11's tcp_input.c (cc::bic::BicVersion).
            // Its undo is the stack's (2.6.11's and 2.4.22's tcp_undo_cwr).
            Cc::Bic(b) if era == Stack::Linux24 => b.set_version(cc::bic::BicVersion::Builtin2611),
            // bictcp_undo_cwnd: last_max_cwnd at 2.6.22, loss_cwnd at 3.16.0.
            Cc::Bic(b) if matches!(era, Stack::Linux2613 | Stack::Linux2622) => b.set_undo(cc::BicUndo::LastMax),
            Cc::Bic(b) if era == Stack::Linux316 => b.set_undo(cc::BicUndo::LossCwnd),
            // 2.6.22's ssthresh kept beta of the window (tcp_illinois_ssthresh).
            Cc::Illinois(i) if era == Stack::Linux2622 => i.set_version(IllinoisVersion::Linux2622),
            // 2.6.22's RTT was the smoothed RTT (tcp_westwood_pkts_acked).
            Cc::Westwood(w) if era == Stack::Linux2622 => w.set_version(WestwoodVersion::Linux2622),
            // 2.6.22's fast mode counted packets itself (tcp_yeah_cong_avoid),
            // and 3.16.0's still does (net/ipv4/tcp_yeah.c read at 3.16.0).
            Cc::Yeah(y) if matches!(era, Stack::Linux2622 | Stack::Linux316) => y.set_version(YeahVersion::Linux2622),
            // ns-2's own HighSpeed computes RFC 3649's formulas (tcp/tcp.cc).
            Cc::HighSpeed(h) if era == Stack::Ns2 => h.set_version(cc::highspeed::HighSpeedVersion::Ns2),
            // 2.6.22: the 2006 Linux module ns-2.35 ships (tcp/linux/src/tcp_compound.c).
            Cc::Compound(c) if era == Stack::Linux2622 => c.set_version(cc::compound::CompoundVersion::Linux2622),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Packet;
    use crate::tcp::receiver::{Receiver, ReceiverConfig};
    use crate::tcp::sender::{Sender, SenderConfig};

    #[test]
    fn names_round_trip_and_an_unknown_one_lists_them() {
        for stack in STACKS {
            assert_eq!(Stack::from_name(stack.name()), Ok(stack));
        }
        let e = Stack::from_name("linux-2.6").unwrap_err();
        assert_eq!(e, "unknown stack 'linux-2.6'; allowed: linux-2.4, linux-2.6.13, linux-2.6.22, linux-3.16, linux-6.6, ns2, ns2-linux");
    }

    #[test]
    fn a_stack_refuses_an_algorithm_it_did_not_have_and_says_what_it_offers() {
        let e = Stack::Linux24.build("cubic", &Map::new()).unwrap_err();
        assert_eq!(e.field, "cc");
        assert_eq!(e.message, "stack linux-2.4 offers reno, scalable, highspeed, htcp, bic, fast, vegas, westwood, hstcplp, lp, not 'cubic'");
        assert!(Stack::Linux316.offers("bbr").is_err());
        // BBRv3 is today's stack's only (google/bbr v3 is based on Linux 6.x).
        for stack in STACKS.into_iter().filter(|s| *s != Stack::Linux66) {
            let e = stack.build("bbr3", &Map::new()).unwrap_err();
            assert!(e.message.ends_with(", not 'bbr3'") && e.message.contains("offers reno"), "{e}");
        }
        assert!(Stack::Linux66.offers("bbr3").is_ok());
        assert!(Stack::Linux24.offers("newreno").is_ok(), "aliases resolve");
        let e = Stack::Linux2622.build("foo", &Map::new()).unwrap_err();
        assert!(e.message.starts_with("unknown algorithm 'foo'"), "{e}");
    }

    #[test]
    fn every_offered_algorithm_is_in_the_registry_and_builds() {
        for stack in STACKS {
            for name in stack.algorithms() {
                assert!(stack.build(name, &Map::new()).is_ok(), "{}: {name}", stack.name());
            }
        }
    }

    /// The default stack is today's engine: every algorithm is built exactly
    /// as without a stack, with today's switches.
    #[test]
    fn the_default_stack_changes_nothing() {
        for alg in cc::REGISTRY.iter().filter(|a| DEFAULT_STACK.offers(a.names[0]).is_ok()) {
            let (built, profile) = DEFAULT_STACK.build(alg.names[0], &Map::new()).unwrap();
            let plain = Cc::from_config(alg.names[0], &Map::new()).unwrap();
            assert_eq!(format!("{built:?}"), format!("{plain:?}"));
            assert_eq!((profile.growth, profile.reduction), (Growth::PerPacket, Reduction::Prr));
        }
        let p = DEFAULT_STACK.profile();
        assert_eq!((p.initial_rto, p.initial_window, p.quickacks, p.delack_timeout), (SEC, 10, 16, None));
    }

    /// RACK-TLP from Linux 4.18 (linux-6.6); FACK in the older Linux stacks
    /// (`tcp_fack` = 1 to 4.14) and ns-2's TCP-Linux scoreboard; DupThresh in
    /// ns-2's Sack1 agent (docs/stacks.md).
    #[test]
    fn loss_detection_by_stack() {
        for stack in STACKS {
            let (want, rule) = match stack {
                Stack::Linux66 => (LossDetection::Rack, FackRule::LINUX_316),
                Stack::Ns2 => (LossDetection::DupThresh, FackRule::NS2),
                Stack::Ns2Linux => (LossDetection::Fack, FackRule::NS2),
                Stack::Linux316 => (LossDetection::FackTlp, FackRule::LINUX_316),
                _ => (LossDetection::Fack, FackRule::LINUX_OLD),
            };
            let p = stack.profile();
            assert_eq!((p.loss_detection, p.fack), (want, rule), "{}", stack.name());
        }
    }

    /// D-SACK from every Linux stack (tcp_dsack = 1 since 2.4), not ns-2's
    /// sink (both ns-2 stacks).
    #[test]
    fn every_linux_stack_and_not_ns2_sends_dsacks() {
        for stack in STACKS {
            let ns2 = matches!(stack, Stack::Ns2 | Stack::Ns2Linux);
            assert_eq!(stack.profile().dsack, !ns2, "{}", stack.name());
        }
    }

    /// ns2-linux is linux-2.6.22's modules and switches but for ns-2's
    /// recovery and sink: the same algorithms, each built the same.
    #[test]
    fn ns2_linux_runs_the_2622_modules_in_ns2_s_sender() {
        assert_eq!(Stack::Ns2Linux.algorithms(), Stack::Linux2622.algorithms());
        for alg in Stack::Linux2622.algorithms() {
            let (ns2, _) = Stack::Ns2Linux.build(alg, &Map::new()).unwrap();
            let (linux, _) = Stack::Linux2622.build(alg, &Map::new()).unwrap();
            assert_eq!(format!("{ns2:?}"), format!("{linux:?}"), "{alg}");
        }
        let (ns2, linux) = (Stack::Ns2Linux.profile(), Stack::Linux2622.profile());
        assert_eq!(ns2.reduction, Reduction::Ns2Linux { delayed_send: false });
        assert_eq!((ns2.quickacks, ns2.dsack), (1, false));
        let same = |p: Profile| (p.growth, p.initial_rto, p.initial_window, p.delack_timeout, p.loss_detection);
        assert_eq!(same(ns2), same(linux));
        assert_eq!(ns2.reduction.with_send_jitter(1), Reduction::Ns2Linux { delayed_send: true });
        assert_eq!(linux.reduction.with_send_jitter(1), Reduction::RateHalving);
    }

    #[test]
    fn illinois_at_2622_keeps_beta_of_the_window() {
        // Fresh Illinois: beta 1/2 at cwnd 100: both halve. Only 2.6.22 takes
        // the 2.6.22 decrease (tested at beta 1/8 in cc::illinois).
        let s = cc::CcState::new(100, 1448);
        for stack in [Stack::Linux2622, DEFAULT_STACK] {
            let (mut cc, _) = stack.build("illinois", &Map::new()).unwrap();
            assert_eq!(cc::CongestionOps::ssthresh(&mut cc, &s), 50);
            let Cc::Illinois(i) = &cc else { panic!("not illinois") };
            assert_eq!(format!("{i:?}").contains("Linux2622"), stack == Stack::Linux2622);
        }
    }

    /// Rate-halving's floor at 2.6.22 (`tcp_cwnd_min`): `.min_cwnd =
    /// tcp_reno_min_cwnd` (ssthresh / 2) in tcp_cong.c's Reno and in
    /// tcp_highspeed.c, tcp_illinois.c, tcp_lp.c, tcp_scalable.c, tcp_vegas.c,
    /// tcp_yeah.c (and ns-2.35's tcp_compound.c); none in tcp_bic.c,
    /// tcp_cubic.c, tcp_htcp.c (ssthresh); tcp_westwood.c's is BWE x RTTmin
    /// (2 packets before an estimate).
    #[test]
    fn the_2622_modules_with_reno_s_min_cwnd_halve_below_ssthresh() {
        let mut s = cc::CcState::new(100, 1448);
        s.ssthresh = 80;
        for alg in Stack::Linux2622.algorithms() {
            let (mut cc, _) = Stack::Linux2622.build(alg, &Map::new()).unwrap();
            let half = ["reno", "highspeed", "illinois", "lp", "scalable", "vegas", "yeah", "compound"].contains(&alg);
            let want = if alg == "westwood" { 2 } else if half { 40 } else { 80 };
            assert_eq!(cc::CongestionOps::min_cwnd(&mut cc, &s), want, "{alg}");
        }
    }

    /// ns-2's own HighSpeed at the ns2 stack, Linux's table elsewhere: after a
    /// first decrease, cwnd 1000 gives 670 (ns-2's b(1000) = 0.330) and 676
    /// (the table's 83/256).
    #[test]
    fn highspeed_at_ns2_is_ns2_s_own() {
        for (stack, want) in [(Stack::Ns2, 670), (Stack::Linux2622, 676), (DEFAULT_STACK, 676)] {
            let (mut cc, _) = stack.build("highspeed", &Map::new()).unwrap();
            let mut s = cc::CcState::new(1000, 1448);
            cc::CongestionOps::ssthresh(&mut cc, &s);
            s.ssthresh = 10;
            cc::CongestionOps::cong_avoid(&mut cc, &mut s, 1); // finds the table row
            assert_eq!(cc::CongestionOps::ssthresh(&mut cc, &s), want, "{}", stack.name());
        }
    }

    /// BIC's and CUBIC's `undo_cwnd` by era after a loss at cwnd 100 (now
    /// 10): last_max_cwnd at 2.6.22 (100, no fast convergence yet), loss_cwnd
    /// at 3.16 (100), none of their own at 2.4 (2.6.11's built-in BIC) and
    /// today (Reno's, the stack's default).
    #[test]
    fn bic_and_cubic_undo_by_era() {
        for alg in ["bic", "cubic"] {
            for (stack, want) in [(Stack::Linux2622, Some(100)), (Stack::Linux316, Some(100)), (DEFAULT_STACK, None)] {
                let (mut cc, _) = stack.build(alg, &Map::new()).unwrap();
                let mut s = cc::CcState::new(100, 1448);
                cc::CongestionOps::ssthresh(&mut cc, &s);
                s.cwnd = 10;
                assert_eq!(cc::CongestionOps::undo_cwnd(&mut cc, &s), want, "{alg} {}", stack.name());
            }
        }
        let (mut bic24, _) = Stack::Linux24.build("bic", &Map::new()).unwrap();
        assert_eq!(cc::CongestionOps::undo_cwnd(&mut bic24, &cc::CcState::new(10, 1448)), None);
    }

    #[test]
    fn the_flow_s_params_override_the_era_s() {
        let mut p = Map::new();
        p.insert("beta".into(), Value::from(0.7));
        let (mut cc, _) = Stack::Linux2622.build("cubic", &p).unwrap();
        let mut s = cc::CcState::new(1000, 1448);
        assert_eq!(cc::CongestionOps::ssthresh(&mut cc, &s), 700);
        let (mut era, _) = Stack::Linux2622.build("cubic", &Map::new()).unwrap();
        s.cwnd = 1000;
        assert_eq!(cc::CongestionOps::ssthresh(&mut era, &s), 799);
    }

    /// A first connection's window: 2 up to 2.6.22 (no cached route
    /// metrics, so no RFC 3390 window), 10 from 2.6.39, ns-2's windowInit_ 2.
    #[test]
    fn initial_windows_by_era() {
        let iw: Vec<u32> = STACKS.iter().map(|s| s.profile().initial_window).collect();
        assert_eq!(iw, [2, 2, 2, 10, 10, 2, 2]);
    }

    fn sender(stack: Stack) -> Sender {
        let cfg = SenderConfig { flow: 0, dst: 1, mss: 1448, header_bytes: 52, total_bytes: None, max_window: 1 << 20, sack: true, initial_cwnd: 10 };
        let (cc, profile) = stack.build("reno", &Map::new()).unwrap();
        Sender::new(cfg, cc).with_stack(&profile)
    }

    /// TCP Small Queues from 3.6 with that kernel's `tcp_limit_output_bytes`
    /// (128 KB at 3.16, 1 MB at 6.6), none before and none in ns-2; a
    /// linux-6.6 sender hands its initial window down as skbs of two
    /// segments (tcp::tso), three of them (the third fits under twice an
    /// skb's truesize), and another skb each time the interface has
    /// finished one.
    #[test]
    fn small_queues_by_stack() {
        let caps: Vec<Option<u64>> = STACKS.iter().map(|s| s.profile().tsq.map(|t| t.limit_output_bytes)).collect();
        assert_eq!(caps, [None, None, None, Some(131_072), Some(1 << 20), None, None]);
        let mut new = sender(Stack::Linux66).with_small_queues(Stack::Linux66.profile().tsq).with_handshake_rtt(100 * MS);
        let mut out = Vec::new();
        new.start(0, &mut out);
        assert_eq!((out.len(), new.nic_blocked), (6, true));
        new.nic_queued = 5; // one segment of the first skb left
        new.on_nic_drained(12_000, &mut out);
        assert_eq!(out.len(), 6);
        new.nic_queued = 4; // the first skb left
        new.on_nic_drained(24_000, &mut out);
        assert_eq!((out.len(), out[6].ts_val, out[7].ts_val), (8, 24_000, 24_000));
        let mut old = sender(Stack::Linux2622).with_small_queues(Stack::Linux2622.profile().tsq);
        old.start(0, &mut out);
        assert!(!old.nic_blocked && !old.small_queues());
    }

    #[test]
    fn the_sender_takes_the_stack_s_initial_rto_and_counting() {
        let (old, new) = (sender(Stack::Linux2622), sender(Stack::Linux66));
        assert_eq!((old.rtt.rto(), new.rtt.rto()), (3 * SEC, SEC));
        assert_eq!((old.s.growth, new.s.growth), (Growth::PerAck, Growth::PerPacket));
    }

    /// Linux ACKs the first segments at once (quick-ACK mode); ns-2's
    /// DelAck sink ACKs the first at once (the SYN's stand-in) and delays the
    /// second like any other.
    #[test]
    fn the_receiver_takes_the_stack_s_quick_acks_and_timer() {
        let receiver = |stack: Stack| {
            let cfg = ReceiverConfig { flow: 0, dst: 9, mss: 1000, total_bytes: None, delayed_ack: true, delack_timeout: 40 * MS, ack_bytes: 52 };
            Receiver::new(cfg).with_stack(&stack.profile())
        };
        let segs = [Packet::data(0, 1, 0, 1000, 1052, 0), Packet::data(0, 1, 1, 1000, 1052, 0)];
        for stack in [Stack::Ns2, Stack::Ns2Linux] {
            let mut ns2 = receiver(stack);
            assert!(ns2.on_data(&segs[0], 0).is_some(), "{stack:?}: segment 0 at once");
            assert!(ns2.on_data(&segs[1], MS).is_none());
            assert_eq!(ns2.delack_deadline, Some(41 * MS), "the flow's timer");
        }
        let mut linux = receiver(Stack::Linux2622);
        assert!(linux.on_data(&segs[0], 0).is_some());
        assert!(linux.on_data(&segs[1], MS).is_some(), "quick-ACK mode");
    }
}
