//! The simulation: builds the topology and endpoints from a `Config`, runs the
//! event loop, and records the columnar results. This is the only module that
//! knows both the scheduler and the network.

use crate::build::{build, endpoint_pair, host_pair};
use crate::capture::{Capture, CaptureTable};
use crate::config::{endpoints, Config, FlowConfig, ValidConfig, WebConfig};
use crate::event::Scheduler;
use crate::net::topology::{NodeKind, Topology};
use crate::net::{Kind, LinkWake, Packet};
use crate::stack::Stack;
use crate::tcp::{Receiver, Sender};
use crate::time::Time;
use crate::trace::{FlowIntervals, FlowMark, FlowTrace, LinkIntervals, LinkMark, QueueTrace, UdpIntervals};
use crate::traffic::UdpSource;
use crate::web::{Transfer, TransferTable, WebSource};
use serde::Serialize;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
enum Ev {
    TxDone(u32),
    Arrive(u32),
    Rto(u32),
    Pace(u32),
    DelAck(u32),
    Start(u32),
    Stop(u32),
    Udp(u32),
    Web(u32),
    Report,
    Sample,
}

#[derive(Serialize)]
pub struct FlowSummary {
    pub id: u32,
    pub cc: String,
    pub group: Option<String>,
    pub rtt_ns: u64,
    pub start_ns: u64,
    /// The transfer's configured size; None for a bulk flow.
    pub size_bytes: Option<u64>,
    pub bytes_delivered: u64,
    pub bytes_sent: u64,
    pub segments_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub recoveries: u64,
    pub local_congestion: u64,
    /// Window reductions (CWR) on an ECE from the receiver (ECN flows);
    /// left out when none, so runs without ECN read as before.
    #[serde(skip_serializing_if = "no_marks")]
    pub ecn_reductions: u64,
    pub acks: u64,
    /// Coefficient of variation of ACK inter-arrival times at the sender.
    pub ack_gap_cov: f64,
    pub completed_ns: Option<u64>,
}

#[derive(Serialize)]
pub struct LinkSummary {
    pub name: String,
    pub capacity_bps: f64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_data_packets: u64,
    pub arrivals: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
    pub drops_early: u64,
    /// Packets the queue marked CE (ECN) instead of dropping, or step marking.
    /// Left out when none, so runs without marking read as before.
    #[serde(skip_serializing_if = "no_marks")]
    pub marks: u64,
    pub mean_queue_pkts: f64,
    pub mean_queue_bytes: f64,
    pub max_queue_pkts: u64,
}

fn no_marks(marks: &u64) -> bool {
    *marks == 0
}

#[derive(Serialize)]
pub struct SimInfo {
    pub events: u64,
    pub packets: u64,
    pub end_ns: u64,
}

#[derive(Serialize)]
pub struct SimResult {
    pub flows: Vec<FlowSummary>,
    pub intervals: FlowIntervals,
    pub trace: FlowTrace,
    pub link_intervals: LinkIntervals,
    pub queue: QueueTrace,
    pub udp_intervals: UdpIntervals,
    pub links: Vec<LinkSummary>,
    pub sim: SimInfo,
    /// The web sources' transfers (config `web`), by id; ids follow `flows`'.
    /// Left out when there are none, so other runs' results read as before.
    #[serde(skip_serializing_if = "TransferTable::is_empty")]
    pub web: TransferTable,
    /// The captured packets (config `capture`); left out when none was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureTable>,
}

pub struct Simulation {
    cfg: ValidConfig,
    sched: Scheduler<Ev>,
    topo: Topology,
    senders: Vec<Sender>,
    receivers: Vec<Receiver>,
    flow_hosts: Vec<(u32, u32)>,
    /// Per link: the flow whose limited interface queue it is, if any.
    nic_owner: Vec<Option<u32>>,
    udp: Vec<UdpSource>,
    udp_hosts: Vec<(u32, u32)>,
    /// Per UDP stream: (sent, delivered) bytes at the previous report.
    udp_marks: Vec<(u64, u64)>,
    udp_intervals: UdpIntervals,
    rto_event: Vec<Option<Time>>,
    pace_event: Vec<Option<Time>>,
    delack_event: Vec<Option<Time>>,
    out: Vec<Packet>,
    intervals: FlowIntervals,
    trace: FlowTrace,
    link_intervals: LinkIntervals,
    queue_trace: QueueTrace,
    flow_marks: Vec<FlowMark>,
    link_marks: Vec<LinkMark>,
    last_report: Time,
    /// Flows in the order they start (time, then index). Only the next start is
    /// in the scheduler: a run with 10^5 web transfers would otherwise carry all
    /// their start events in the scheduler from time 0 and pay for its depth on every
    /// event.
    start_order: Vec<u32>,
    next_start: usize,
    web: WebState,
    /// The packet tap (config `capture`); None costs one branch per packet.
    capture: Option<Box<Capture>>,
}

/// The transfers of the `web` sources (crate::web). Flow slots past the
/// configured flows belong to them: a slot is reused once its transfer finished
/// and its hosts' links are idle; packets of an earlier transfer still in the
/// network are told apart by their flow id and discarded on arrival.
#[derive(Default)]
struct WebState {
    sources: Vec<WebSource>,
    /// Per source: the flow its transfers are made from.
    flows: Vec<FlowConfig>,
    /// Per source: its stack's initial window, packets.
    initial_windows: Vec<u32>,
    /// Per source: finished slots, oldest first.
    draining: Vec<VecDeque<u32>>,
    /// Per slot past the configured flows: its current transfer.
    slots: Vec<WebSlot>,
    /// Per flow slot: the id its packets carry (a configured flow's is its index).
    slot_id: Vec<u32>,
    next_id: u32,
    /// Finished transfers, in order of completion.
    done: TransferTable,
    /// Payload bytes sent and received by earlier transfers of reused slots,
    /// stale arrivals included (for the conservation check).
    retired_sent: u64,
    retired_received: u64,
}

#[derive(Clone, Copy)]
struct WebSlot {
    source: u32,
    id: u32,
    start_ns: Time,
    transfer: Transfer,
    live: bool,
}

/// Flow indices sorted by start time (ties by index, so the order is fixed).
fn start_order(cfg: &Config) -> Vec<u32> {
    let mut order: Vec<u32> = (0..cfg.flows.len() as u32).collect();
    order.sort_by_key(|&f| (cfg.flows[f as usize].start_ns, f));
    order
}

/// Timers are lazy: at most one live event per timer. Schedule `ev` for
/// `deadline` unless an event at or before it is already pending; a deadline
/// moved later is picked up when the pending event fires.
fn arm(sched: &mut Scheduler<Ev>, pending: &mut Option<Time>, deadline: Option<Time>, ev: Ev) {
    if let Some(d) = deadline {
        if pending.is_none_or(|t| t > d) {
            *pending = Some(d);
            sched.at(d, ev);
        }
    }
}

/// A timer event fired: true if it is the live one (older ones are stale).
fn fired(pending: &mut Option<Time>, now: Time) -> bool {
    if *pending != Some(now) {
        return false;
    }
    *pending = None;
    true
}

impl Simulation {
    /// Validate a configuration and set its simulation up.
    pub fn new(cfg: Config) -> Result<Simulation, String> {
        Ok(Simulation::from_valid(cfg.validated()?))
    }

    /// Set up the simulation of a configuration validated before
    /// (`Config::from_json`, `Config::validated`): nothing is checked again.
    pub fn from_valid(cfg: ValidConfig) -> Simulation {
        let built = build(&cfg);
        let n = cfg.flows.len();
        let n_links = built.topo.monitored.len();
        let n_udp = built.udp.len();
        let mut nic_owner = vec![None; built.topo.links.len()];
        for (f, fc) in cfg.flows.iter().enumerate() {
            if fc.nic_queue_pkts.is_some() || built.senders[f].small_queues() {
                nic_owner[built.topo.nodes[built.flow_hosts[f].0 as usize].out as usize] = Some(f as u32);
            }
        }
        let capture = new_capture(&cfg, &built.topo, &built.flow_hosts);
        let mut sim = Simulation {
            sched: Scheduler::new(),
            topo: built.topo,
            senders: built.senders,
            receivers: built.receivers,
            flow_hosts: built.flow_hosts,
            nic_owner,
            udp: built.udp,
            udp_hosts: built.udp_hosts,
            udp_marks: vec![(0, 0); n_udp],
            udp_intervals: UdpIntervals::default(),
            rto_event: vec![None; n],
            pace_event: vec![None; n],
            delack_event: vec![None; n],
            out: Vec::with_capacity(64),
            intervals: FlowIntervals::default(),
            trace: FlowTrace::default(),
            link_intervals: LinkIntervals::default(),
            queue_trace: QueueTrace::default(),
            flow_marks: vec![FlowMark::default(); n],
            link_marks: vec![LinkMark::default(); n_links],
            last_report: 0,
            start_order: start_order(&cfg),
            next_start: 0,
            web: WebState::new(&cfg),
            capture,
            cfg,
        };
        sim.schedule_next_start();
        for (k, w) in sim.web.sources.iter().enumerate() {
            if let Some(t) = w.next_arrival() {
                sim.sched.at(t, Ev::Web(k as u32));
            }
        }
        for (i, f) in sim.cfg.flows.iter().enumerate() {
            if let Some(t) = f.stop_ns {
                sim.sched.at(t, Ev::Stop(i as u32));
            }
        }
        for (k, u) in sim.udp.iter().enumerate() {
            sim.sched.at(u.start(), Ev::Udp(k as u32));
        }
        sim.sched.at(sim.cfg.interval_ns, Ev::Report);
        sim.sched.at(0, Ev::Sample);
        sim
    }

    /// Run to the configured duration and return the results.
    pub fn run(mut self) -> SimResult {
        let end = self.cfg.duration_ns;
        while let Some(ev) = self.sched.pop_until(end) {
            self.handle(ev);
        }
        self.finish()
    }

    /// Finish a run driven by `run_until` and return its results.
    pub fn run_result(mut self) -> SimResult {
        let end = self.cfg.duration_ns;
        self.run_until(end);
        self.finish()
    }

    /// Run until `until` (for tests that inspect the state mid-run).
    pub fn run_until(&mut self, until: Time) {
        while let Some(ev) = self.sched.pop_until(until) {
            self.handle(ev);
        }
    }

    fn handle(&mut self, ev: Ev) {
        let now = self.sched.now();
        match ev {
            Ev::TxDone(l) => {
                let wake = self.topo.links[l as usize].on_tx_done(now);
                self.wake_link(l, wake);
                if let Some(f) = self.nic_owner[l as usize] {
                    if self.senders[f as usize].nic_blocked {
                        self.with_sender(f as usize, |s, now, out| s.on_nic_drained(now, out));
                    }
                }
            }
            Ev::Arrive(l) => {
                let link = &mut self.topo.links[l as usize];
                let (to, p) = (link.to, *link.arriving());
                if let Some(t) = link.on_arrive() {
                    self.sched.at(t, Ev::Arrive(l));
                }
                if let Some(cap) = self.capture.as_mut() {
                    cap.arrived(l, &p, now);
                }
                self.deliver(to, &p);
            }
            Ev::Rto(f) => self.on_rto_event(f as usize, now),
            Ev::Pace(f) => self.on_pace_event(f as usize, now),
            Ev::DelAck(f) => self.on_delack_event(f as usize, now),
            Ev::Start(f) => {
                self.schedule_next_start();
                self.with_sender(f as usize, |s, now, out| s.start(now, out));
            }
            Ev::Stop(f) => self.senders[f as usize].stop(now),
            Ev::Udp(k) => self.on_udp_event(k as usize, now),
            Ev::Web(k) => self.on_web_arrival(k as usize, now),
            Ev::Report => self.report(now),
            Ev::Sample => self.sample(now),
        }
    }

    fn wake_link(&mut self, l: u32, wake: LinkWake) {
        if let Some(t) = wake.tx_done_at {
            self.sched.at(t, Ev::TxDone(l));
        }
        if let Some(t) = wake.arrive_at {
            self.sched.at(t, Ev::Arrive(l));
        }
    }

    /// Offer `p` to link `l`. Packets go by reference from where they are
    /// made or arrive to the link's queue or pipe: each move by value is a
    /// copy, and one out of an Option stalls on store forwarding (issue 29).
    /// Always inlined, as `Link::transmit`: a call per hop for a few lines.
    #[inline(always)]
    fn send_on(&mut self, l: u32, p: &Packet) {
        let now = self.sched.now();
        if let Some(cap) = self.capture.as_mut() {
            cap.offered(l, p, now);
        }
        let wake = self.topo.links[l as usize].offer(p, now);
        self.wake_link(l, wake);
    }

    fn deliver(&mut self, node: u32, p: &Packet) {
        let now = self.sched.now();
        match self.topo.nodes[node as usize].kind {
            NodeKind::Router(_) => {
                let l = self.topo.next_link(node, p.dst);
                self.send_on(l, p);
            }
            NodeKind::UdpSink(k) => self.udp[k as usize].on_delivered(p),
            NodeKind::UdpSource(_) => {}
            NodeKind::Receiver(f) if self.web.slot_id[f as usize] != p.flow => self.web.retired_received += p.payload as u64,
            NodeKind::Sender(f) if self.web.slot_id[f as usize] != p.flow => {}
            NodeKind::Receiver(f) => {
                debug_assert_eq!(p.kind, Kind::Data);
                let ack = self.receivers[f as usize].on_data(p, now);
                let l = self.topo.nodes[node as usize].out;
                if let Some(held) = self.receivers[f as usize].echo_ack.take() {
                    self.send_on(l, &held); // DCTCP's echo: the held ACK first
                }
                if let Some(ack) = ack {
                    self.send_on(l, &ack);
                }
                self.sync_delack(f as usize);
            }
            NodeKind::Sender(f) => self.with_sender(f as usize, |s, now, out| s.on_ack(p, now, out)),
        }
    }

    /// Call into a sender with its interface-queue room, then put what it sent on
    /// the wire and keep its timers scheduled.
    fn with_sender(&mut self, f: usize, call: impl FnOnce(&mut Sender, Time, &mut Vec<Packet>)) {
        let now = self.sched.now();
        let nic = self.topo.nodes[self.flow_hosts[f].0 as usize].out as usize;
        if self.nic_owner[nic].is_some() {
            let link = &self.topo.links[nic];
            self.senders[f].nic_room = Some(link.room(now));
            self.senders[f].nic_queued = link.occupancy(now);
        }
        let mut out = std::mem::take(&mut self.out);
        call(&mut self.senders[f], now, &mut out);
        self.flush(f, out);
    }

    /// Put a sender's packets on its interface and keep its timer scheduled.
    fn flush(&mut self, f: usize, mut out: Vec<Packet>) {
        let nic = self.topo.nodes[self.flow_hosts[f].0 as usize].out;
        for p in &out {
            self.send_on(nic, p);
        }
        out.clear();
        self.out = out;
        self.sync_rto(f);
        self.sync_pace(f);
        if self.senders[f].completed == Some(self.sched.now()) {
            self.release_access_links(f);
            self.retire(f);
        }
    }

    /// A transfer finished: its hosts' access links are idle unless a duplicate is
    /// still on its way, so web-like traffic's finished flows hold no buffers.
    fn release_access_links(&mut self, f: usize) {
        let (s, r) = self.flow_hosts[f];
        for host in [s, r] {
            let node = &self.topo.nodes[host as usize];
            for l in [node.out, node.down] {
                self.topo.links[l as usize].release_if_idle();
            }
        }
    }

    fn sync_pace(&mut self, f: usize) {
        let d = self.senders[f].send_timer();
        arm(&mut self.sched, &mut self.pace_event[f], d, Ev::Pace(f as u32));
    }

    fn on_pace_event(&mut self, f: usize, now: Time) {
        if !fired(&mut self.pace_event[f], now) {
            return;
        }
        match self.senders[f].send_timer() {
            Some(d) if d <= now => self.with_sender(f, |s, now, out| s.on_pace_timer(now, out)),
            _ => self.sync_pace(f),
        }
    }

    fn sync_rto(&mut self, f: usize) {
        let d = self.senders[f].rto_deadline;
        arm(&mut self.sched, &mut self.rto_event[f], d, Ev::Rto(f as u32));
    }

    fn on_rto_event(&mut self, f: usize, now: Time) {
        if !fired(&mut self.rto_event[f], now) {
            return;
        }
        match self.senders[f].rto_deadline {
            Some(d) if d <= now => self.with_sender(f, |s, now, out| s.on_rto(now, out)),
            _ => self.sync_rto(f),
        }
    }

    fn sync_delack(&mut self, f: usize) {
        let d = self.receivers[f].delack_deadline;
        arm(&mut self.sched, &mut self.delack_event[f], d, Ev::DelAck(f as u32));
    }

    fn on_delack_event(&mut self, f: usize, now: Time) {
        if !fired(&mut self.delack_event[f], now) {
            return;
        }
        if let Some(ack) = self.receivers[f].on_delack_timer(now) {
            let node = self.flow_hosts[f].1;
            let l = self.topo.nodes[node as usize].out;
            self.send_on(l, &ack);
        }
        self.sync_delack(f);
    }

    fn on_udp_event(&mut self, k: usize, now: Time) {
        let (p, next) = self.udp[k].emit(now);
        if let Some(p) = p {
            let nic = self.topo.nodes[self.udp_hosts[k].0 as usize].out;
            self.send_on(nic, &p);
        }
        if let Some(t) = next {
            self.sched.at(t, Ev::Udp(k as u32));
        }
    }

    fn schedule_next_start(&mut self) {
        if let Some(&f) = self.start_order.get(self.next_start) {
            self.next_start += 1;
            self.sched.at(self.cfg.flows[f as usize].start_ns, Ev::Start(f));
        }
    }

    // ----- recording --------------------------------------------------------------

    fn report(&mut self, now: Time) {
        let configured = self.cfg.flows.len();
        for (f, (r, s)) in self.receivers.iter().zip(&self.senders).take(configured).enumerate() {
            if !self.cfg.flows[f].trace {
                continue;
            }
            let mark = FlowMark {
                delivered_bytes: r.delivered_bytes,
                retransmits: s.counters.retransmits,
                timeouts: s.counters.timeouts,
            };
            let prev = std::mem::replace(&mut self.flow_marks[f], mark);
            let iv = &mut self.intervals;
            iv.t_ns.push(now);
            iv.flow.push(f as u32);
            iv.delivered_bytes.push(mark.delivered_bytes - prev.delivered_bytes);
            iv.retransmits.push(mark.retransmits - prev.retransmits);
            iv.timeouts.push(mark.timeouts - prev.timeouts);
        }
        let span = (now - self.last_report) as f64;
        for (k, &l) in self.topo.monitored.iter().enumerate() {
            let link = &mut self.topo.links[l as usize];
            link.queue.advance(now);
            let mark = LinkMark {
                tx_bytes: link.counters.tx_bytes,
                tx_packets: link.counters.tx_packets,
                arrivals: link.queue.stats.arrivals,
                drops: link.drops(),
                area_pkts: link.queue.stats.area_pkts,
            };
            let prev = std::mem::replace(&mut self.link_marks[k], mark);
            let li = &mut self.link_intervals;
            li.t_ns.push(now);
            li.link.push(link.name.clone());
            li.tx_bytes.push(mark.tx_bytes - prev.tx_bytes);
            li.tx_packets.push(mark.tx_packets - prev.tx_packets);
            li.arrivals.push(mark.arrivals - prev.arrivals);
            li.drops.push(mark.drops - prev.drops);
            li.queue_pkts_mean.push((mark.area_pkts - prev.area_pkts) / span.max(1.0));
        }
        for (k, u) in self.udp.iter().enumerate() {
            let (sent, delivered) = self.udp_marks[k];
            let ui = &mut self.udp_intervals;
            ui.t_ns.push(now);
            ui.stream.push(k as u32);
            ui.sent_bytes.push(u.sent_bytes - sent);
            ui.delivered_bytes.push(u.delivered_bytes - delivered);
            self.udp_marks[k] = (u.sent_bytes, u.delivered_bytes);
        }
        self.last_report = now;
        if now + self.cfg.interval_ns <= self.cfg.duration_ns {
            self.sched.at(now + self.cfg.interval_ns, Ev::Report);
        }
    }

    fn sample(&mut self, now: Time) {
        for (f, s) in self.senders.iter().take(self.cfg.flows.len()).enumerate() {
            if self.cfg.flows[f].start_ns > now || !self.cfg.flows[f].trace {
                continue;
            }
            let t = &mut self.trace;
            t.t_ns.push(now);
            t.flow.push(f as u32);
            t.cwnd_pkts.push(s.s.cwnd);
            t.ssthresh_pkts.push(s.s.ssthresh);
            t.srtt_ns.push(s.rtt.srtt);
            t.inflight_pkts.push(s.in_flight());
        }
        for &l in &self.topo.monitored {
            let link = &self.topo.links[l as usize];
            self.queue_trace.t_ns.push(now);
            self.queue_trace.link.push(link.name.clone());
            self.queue_trace.queue_pkts.push(link.queue.len() as u64);
            self.queue_trace.queue_bytes.push(link.queue.bytes());
            self.queue_trace.red_avg_pkts.push(link.queue.red_avg());
        }
        if now + self.cfg.trace_interval_ns <= self.cfg.duration_ns {
            self.sched.at(now + self.cfg.trace_interval_ns, Ev::Sample);
        }
    }

    /// Conservation: every payload byte a sender transmitted has arrived at its
    /// receiver, been dropped, or is still in a queue or on a wire; and each
    /// receiver has delivered exactly the bytes below its cumulative point.
    pub fn check_conservation(&self) -> Result<(), String> {
        let sent: u64 = self.senders.iter().map(|s| s.counters.bytes_sent).sum::<u64>() + self.web.retired_sent;
        let received: u64 = self.receivers.iter().map(|r| r.received_bytes).sum::<u64>() + self.web.retired_received;
        let dropped: u64 = self.topo.links.iter().map(|l| l.data_drop_bytes()).sum();
        let in_transit: u64 = self.topo.links.iter().map(|l| l.data_in_transit().1).sum();
        if sent != received + dropped + in_transit {
            return Err(format!("bytes sent {sent} != received {received} + dropped {dropped} + in transit {in_transit}"));
        }
        for (f, (s, r)) in self.senders.iter().zip(&self.receivers).enumerate() {
            s.check_invariants().map_err(|e| format!("flow {f}: {e}"))?;
            if s.snd_una() > r.rcv_nxt {
                return Err(format!("flow {f}: snd_una {} beyond rcv_nxt {}", s.snd_una(), r.rcv_nxt));
            }
            let (bytes, mss) = match self.cfg.flows.get(f) {
                Some(fc) => (fc.bytes, fc.mss),
                None => (Some(self.web.slots[f - self.cfg.flows.len()].transfer.bytes), crate::consts::MSS_BYTES),
            };
            let expect = bytes.map_or(r.rcv_nxt * mss as u64, |b| b.min(r.rcv_nxt * mss as u64));
            if r.delivered_bytes != expect {
                return Err(format!("flow {f}: delivered {} bytes, expected {expect}", r.delivered_bytes));
            }
        }
        Ok(())
    }

    pub fn sender(&self, f: usize) -> &Sender {
        &self.senders[f]
    }

    pub fn receiver(&self, f: usize) -> &Receiver {
        &self.receivers[f]
    }

    pub fn events(&self) -> u64 {
        self.sched.processed()
    }

    fn finish(mut self) -> SimResult {
        let end = self.sched.now().max(self.cfg.duration_ns);
        let flows: Vec<FlowSummary> = (0..self.cfg.flows.len()).map(|i| self.summary(i)).collect();
        let live: Vec<usize> = (0..self.web.slots.len()).filter(|&j| self.web.slots[j].live).collect();
        for j in live {
            self.record_transfer(self.cfg.flows.len() + j);
        }
        let web = std::mem::take(&mut self.web.done).sorted_by_id();
        let links = self
            .topo
            .monitored
            .iter()
            .map(|&l| {
                let link = &mut self.topo.links[l as usize];
                link.queue.advance(end);
                let st = link.queue.stats;
                LinkSummary {
                    name: link.name.clone(),
                    capacity_bps: link.rate_bps,
                    tx_bytes: link.counters.tx_bytes,
                    tx_packets: link.counters.tx_packets,
                    tx_data_packets: link.counters.tx_data_packets,
                    arrivals: st.arrivals,
                    drops_overflow: st.drops - st.early_drops,
                    drops_early: st.early_drops,
                    marks: st.marks,
                    drops_random: link.counters.drops_random,
                    mean_queue_pkts: st.area_pkts / end.max(1) as f64,
                    mean_queue_bytes: st.area_bytes / end.max(1) as f64,
                    max_queue_pkts: st.max_pkts,
                }
            })
            .collect();
        let packets = self.topo.links[self.topo.monitored[0] as usize].counters.tx_data_packets;
        SimResult {
            flows,
            intervals: self.intervals,
            trace: self.trace,
            link_intervals: self.link_intervals,
            queue: self.queue_trace,
            udp_intervals: self.udp_intervals,
            links,
            sim: SimInfo { events: self.sched.processed(), packets, end_ns: end },
            web,
            capture: self.capture.map(|c| c.into_table()),
        }
    }
}

/// The tap of the config's capture, if any: each flow's sender and receiver
/// interfaces are its hosts' (uplink, downlink).
fn new_capture(cfg: &ValidConfig, topo: &Topology, flow_hosts: &[(u32, u32)]) -> Option<Box<Capture>> {
    let c = cfg.capture.as_ref()?;
    let points = c.resolve(cfg).expect("validated");
    let iface = |h: u32| (topo.nodes[h as usize].out, topo.nodes[h as usize].down);
    let hosts: Vec<[(u32, u32); 2]> = flow_hosts.iter().map(|&(s, r)| [iface(s), iface(r)]).collect();
    Some(Box::new(Capture::new(c, &points, &hosts, topo.links.len())))
}

/// A web source's stack (validated with the config).
fn stack_of(w: &WebConfig) -> Stack {
    Stack::from_name(&w.stack).expect("validated")
}

impl WebState {
    fn new(cfg: &ValidConfig) -> WebState {
        let n = cfg.flows.len() as u32;
        let flows = cfg
            .web
            .iter()
            .map(|w| {
                let mut f = FlowConfig::bulk(&w.cc, 0);
                f.params = w.params.clone();
                f.stack = w.stack.clone();
                f.delack_timeout_ns = stack_of(w).profile().delack_timeout.unwrap_or(f.delack_timeout_ns);
                f.max_window_bytes = w.max_window_bytes;
                f.direction = w.direction.clone();
                f.trace = false;
                f.group = Some("web".into());
                f
            })
            .collect();
        WebState {
            sources: cfg.web.iter().enumerate().map(|(k, w)| WebSource::new(w.clone(), cfg.seed, k)).collect(),
            flows,
            initial_windows: cfg.web.iter().map(|w| stack_of(w).profile().initial_window).collect(),
            draining: vec![VecDeque::new(); cfg.web.len()],
            slot_id: (0..n).collect(),
            next_id: n,
            ..WebState::default()
        }
    }
}

impl Simulation {
    /// A transfer of web source k arrives: it takes an idle slot (or a new one)
    /// and starts at once; the source's next arrival is scheduled.
    fn on_web_arrival(&mut self, k: usize, now: Time) {
        let transfer = self.web.sources[k].arrive();
        if let Some(t) = self.web.sources[k].next_arrival() {
            self.sched.at(t, Ev::Web(k as u32));
        }
        let id = self.web.next_id;
        self.web.next_id += 1;
        let f = self.idle_slot(k).unwrap_or(self.senders.len());
        let [src, dst] = self.web_hosts(k, f, transfer.rtt_ns);
        let hosts = if f < self.senders.len() {
            self.topo.set_access_delay(self.flow_hosts[f].0, src.access_delay);
            self.flow_hosts[f]
        } else {
            let seed = self.cfg.seed;
            let rate = self.cfg.network.access_rate_bps;
            (self.topo.add_host(&src, rate, seed), self.topo.add_host(&dst, rate, seed))
        };
        let cc = self.cfg.web_algorithms()[k].clone();
        let flow = &mut self.web.flows[k];
        flow.initial_cwnd = self.web.initial_windows[k];
        let (sender, receiver) = endpoint_pair(&self.web.flows[k], cc, id as usize, Some(transfer.bytes), hosts, self.cfg.seed);
        let slot = WebSlot { source: k as u32, id, start_ns: now, transfer, live: true };
        let tracked = sender.small_queues();
        self.fill_slot(f, hosts, sender, receiver, slot);
        if tracked {
            self.nic_owner[self.topo.nodes[hosts.0 as usize].out as usize] = Some(f as u32);
        }
        self.with_sender(f, |s, now, out| s.start(now, out));
    }

    /// The sender and receiver host of a transfer of source k in slot f.
    fn web_hosts(&self, k: usize, f: usize, rtt_ns: u64) -> [crate::net::topology::HostSpec; 2] {
        let n_hops = self.cfg.network.hops.len();
        let ends = endpoints(&self.web.flows[k].direction, None, n_hops);
        let kinds = (NodeKind::Sender(f as u32), NodeKind::Receiver(f as u32));
        host_pair(kinds.0, kinds.1, ends, rtt_ns, &self.cfg.network.hop_delays(), crate::build::UNLIMITED, 0)
    }

    /// A finished slot of source k whose hosts' links are idle. Only the few
    /// oldest are looked at: they finished first, so they are the likeliest idle,
    /// and an arrival never scans a long list.
    fn idle_slot(&mut self, k: usize) -> Option<usize> {
        const LOOK: usize = 8;
        let (topo, hosts) = (&self.topo, &self.flow_hosts);
        let queue = &mut self.web.draining[k];
        let i = queue.iter().take(LOOK).position(|&f| {
            let (s, r) = hosts[f as usize];
            topo.host_idle(s) && topo.host_idle(r)
        })?;
        queue.remove(i).map(|f| f as usize)
    }

    /// Put a new transfer in slot f (past the end: a new slot), keeping the
    /// counts of the one it replaces for the conservation check.
    fn fill_slot(&mut self, f: usize, hosts: (u32, u32), sender: Sender, receiver: Receiver, slot: WebSlot) {
        let j = f - self.cfg.flows.len();
        if f < self.senders.len() {
            self.web.retired_sent += self.senders[f].counters.bytes_sent;
            self.web.retired_received += self.receivers[f].received_bytes;
            self.senders[f] = sender;
            self.receivers[f] = receiver;
            // Events of the old transfer's timers find nothing pending and pass.
            (self.rto_event[f], self.pace_event[f], self.delack_event[f]) = (None, None, None);
            self.web.slots[j] = slot;
            self.web.slot_id[f] = slot.id;
            return;
        }
        self.senders.push(sender);
        self.receivers.push(receiver);
        self.flow_hosts.push(hosts);
        self.rto_event.push(None);
        self.pace_event.push(None);
        self.delack_event.push(None);
        self.nic_owner.resize(self.topo.links.len(), None);
        self.web.slots.push(slot);
        self.web.slot_id.push(slot.id);
    }

    /// A transfer finished: record it and queue its slot for reuse.
    fn retire(&mut self, f: usize) {
        let Some(j) = f.checked_sub(self.cfg.flows.len()) else { return };
        if !self.web.slots[j].live {
            return;
        }
        self.web.slots[j].live = false;
        self.record_transfer(f);
        self.web.draining[self.web.slots[j].source as usize].push_back(f as u32);
    }

    /// The transfer in slot f as a row of the results.
    fn record_transfer(&mut self, f: usize) {
        let slot = self.web.slots[f - self.cfg.flows.len()];
        let (s, r) = (&self.senders[f], &self.receivers[f]);
        let t = &mut self.web.done;
        t.id.push(slot.id);
        t.source.push(slot.source);
        t.start_ns.push(slot.start_ns);
        t.rtt_ns.push(slot.transfer.rtt_ns);
        t.size_bytes.push(slot.transfer.bytes);
        t.bytes_delivered.push(r.delivered_bytes);
        t.retransmits.push(s.counters.retransmits);
        t.timeouts.push(s.counters.timeouts);
        t.completed_ns.push(s.completed);
    }

    /// The summary of configured flow f.
    fn summary(&self, f: usize) -> FlowSummary {
        let (s, c) = (&self.senders[f], &self.cfg.flows[f]);
        FlowSummary {
            id: f as u32,
            cc: c.cc.clone(),
            group: c.group.clone(),
            rtt_ns: c.rtt_ns,
            start_ns: c.start_ns,
            size_bytes: c.bytes,
            bytes_delivered: self.receivers[f].delivered_bytes,
            bytes_sent: s.counters.bytes_sent,
            segments_sent: s.counters.segments_sent,
            retransmits: s.counters.retransmits,
            timeouts: s.counters.timeouts,
            recoveries: s.counters.recoveries,
            local_congestion: s.counters.local_congestion,
            ecn_reductions: s.counters.ecn_reductions,
            acks: s.counters.acks,
            ack_gap_cov: s.counters.ack_gap_cov(),
            completed_ns: s.completed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::{dumbbell, with_transfers};

    fn access_reserved(sim: &Simulation, f: usize) -> usize {
        let (s, r) = sim.flow_hosts[f];
        [s, r].iter()
            .flat_map(|&h| {
                let n = &sim.topo.nodes[h as usize];
                [n.out, n.down]
            })
            .map(|l| sim.topo.links[l as usize].reserved_packets())
            .sum()
    }

    #[test]
    fn finished_transfers_give_their_buffers_back() {
        let cfg = with_transfers(dumbbell(100e6, 20, 1.0, 0.0, 1, 2.0), 50, 30_000);
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run_until(1_900 * crate::time::MS);
        let done: Vec<usize> = (1..51).filter(|&f| sim.senders[f].completed.is_some()).collect();
        assert!(done.len() > 40, "only {} transfers finished", done.len());
        for &f in &done {
            assert_eq!(access_reserved(&sim, f), 0, "flow {f} still holds buffers");
        }
        assert!(access_reserved(&sim, 0) > 0, "the bulk flow's links were released");
    }
}

#[cfg(test)]
mod interval_tests {
    use super::*;
    use crate::scenarios::{dumbbell, with_transfers};

    /// A transfer reports its configured size beside the bytes it delivered, so
    /// an unfinished one is told apart from a small one.
    #[test]
    fn transfers_report_their_size() {
        let cfg = with_transfers(dumbbell(10e6, 20, 1.0, 0.0, 1, 1.0), 5, 400_000);
        let res = Simulation::new(cfg).unwrap().run();
        assert_eq!(res.flows[0].size_bytes, None);
        assert!(res.flows[1..].iter().all(|f| f.size_bytes == Some(400_000)));
        assert!(res.flows[1..].iter().any(|f| f.completed_ns.is_none() && f.bytes_delivered < 400_000));
    }

    /// Per-interval retransmits and timeouts add up to the flow's whole-run
    /// counters (the run ends on a report boundary), so a window of intervals
    /// holds exactly the events of that window.
    #[test]
    fn interval_retransmits_and_timeouts_add_up_to_the_run_totals() {
        let res = Simulation::new(dumbbell(100e6, 20, 0.05, 0.1, 4, 10.0)).unwrap().run();
        let iv = &res.intervals;
        assert_eq!(iv.retransmits.len(), iv.t_ns.len());
        assert_eq!(iv.timeouts.len(), iv.t_ns.len());
        let total = |col: &[u64], f: u32| -> u64 {
            iv.flow.iter().zip(col).filter(|(&g, _)| g == f).map(|(_, &v)| v).sum()
        };
        for f in &res.flows {
            assert_eq!(total(&iv.retransmits, f.id), f.retransmits, "flow {}", f.id);
            assert_eq!(total(&iv.timeouts, f.id), f.timeouts, "flow {}", f.id);
        }
        assert!(res.flows.iter().all(|f| f.retransmits > 0));
        assert!(res.flows.iter().any(|f| f.timeouts > 0), "no timeouts: the test checks nothing");
        // Spread over the run, not lumped into one interval.
        let busy = iv.retransmits.iter().filter(|&&r| r > 0).count();
        assert!(busy > iv.t_ns.len() / 2, "retransmits in only {busy} intervals");
    }
}

#[cfg(test)]
mod web_tests {
    use super::*;
    use crate::time::{MS, SEC};
    use crate::scenarios::dumbbell;

    /// One bulk flow on 100 Mbit/s plus web transfers offering `load`, SURGE
    /// sizes with a 2 MB cap (a short run's transfers finish).
    fn with_web(load: f64, seed: u64, duration_s: f64) -> Config {
        let mut cfg = dumbbell(100e6, 20, 1.0, 0.0, 1, duration_s);
        cfg.seed = seed;
        let web: WebConfig = serde_json::from_value(serde_json::json!({
            "load": load, "rate_bps": 100e6, "stop_ns": cfg.duration_ns, "cc": "reno",
            "sizes": {"cap": 2e6}, "rtt": {"kind": "uniform", "low_ms": 10.0, "high_ms": 100.0},
            "max_window_bytes": 65536,
        }))
        .unwrap();
        cfg.web.push(web);
        cfg
    }

    /// Issue 28: a web source's transfers run its stack: the era's algorithm
    /// variant, initial window (2 packets to 2.6.22, 10 from 3.16),
    /// initial RTO and delayed-ACK timer; today's stack keeps today's.
    #[test]
    fn web_transfers_run_their_source_s_stack() {
        let first_transfer = |stack: &str, rtt_ms: f64| {
            let mut cfg = with_web(0.3, 1, 3.0);
            cfg.web[0].stack = stack.into();
            cfg.web[0].rtt = serde_json::from_value(serde_json::json!({"kind": "fixed", "value_ms": rtt_ms})).unwrap();
            let mut sim = Simulation::new(cfg).unwrap();
            sim.on_web_arrival(0, 0);
            let sender = &sim.senders[1];
            (sender.s.cwnd, sender.s.growth, sender.rtt.rto(), sim.web.flows[0].delack_timeout_ns)
        };
        assert_eq!(first_transfer("linux-2.4", 50.0), (2, crate::cc::Growth::PerAck, 3 * SEC, 40 * MS));
        assert_eq!((first_transfer("linux-2.6.22", 15.0).0, first_transfer("linux-3.16", 15.0).0), (2, 10));
        // ns-2's agent sends one segment first, the SYN's stand-in
        // (tcp::ns2_agent); its ACK sets the window to windowInit_ 2.
        assert_eq!(first_transfer("ns2", 50.0), (1, crate::cc::Growth::PerAck, 3 * SEC, 100 * MS));
        assert_eq!(first_transfer("linux-6.6", 50.0), (10, crate::cc::Growth::PerPacket, SEC, 40 * MS));
        let mut cfg = with_web(0.3, 1, 3.0);
        cfg.web[0].stack = "linux-2.4".into();
        cfg.web[0].cc = "cubic".into();
        let e = cfg.validated().unwrap_err();
        assert_eq!(e.path, "web[0].cc");
        assert!(e.message.starts_with("stack linux-2.4 offers reno, "), "{e}");
    }

    fn flows_json(res: &SimResult) -> String {
        serde_json::to_string(&(&res.flows, &res.web)).unwrap()
    }

    #[test]
    fn same_seed_same_transfers_and_another_seed_others() {
        let a = Simulation::new(with_web(0.3, 1, 3.0)).unwrap().run();
        let b = Simulation::new(with_web(0.3, 1, 3.0)).unwrap().run();
        let c = Simulation::new(with_web(0.3, 2, 3.0)).unwrap().run();
        assert_eq!(flows_json(&a), flows_json(&b));
        assert_eq!(a.sim.events, b.sim.events);
        assert_ne!(flows_json(&a), flows_json(&c));
    }

    #[test]
    fn slots_are_reused_and_every_transfer_is_reported_once() {
        let mut sim = Simulation::new(with_web(0.5, 3, 5.0)).unwrap();
        sim.run_until(5 * crate::time::SEC);
        sim.check_conservation().unwrap();
        let slots = sim.senders.len() - 1;
        let res = sim.run_result();
        let web = &res.web;
        assert_eq!(res.flows.len(), 1);
        assert_eq!(web.id, (1..=web.len() as u32).collect::<Vec<_>>());
        assert!(web.len() > 200, "only {} transfers", web.len());
        assert!(slots * 4 < web.len(), "{slots} slots for {} transfers", web.len());
        let done: Vec<usize> = (0..web.len()).filter(|&i| web.completed_ns[i].is_some()).collect();
        assert!(done.len() * 10 > web.len() * 9, "{} of {} finished", done.len(), web.len());
        for i in done {
            assert_eq!(web.bytes_delivered[i], web.size_bytes[i], "transfer {}", web.id[i]);
            assert!(web.start_ns[i] < web.completed_ns[i].unwrap());
        }
    }

    #[test]
    fn a_bad_web_entry_is_named() {
        let mut cfg = with_web(0.5, 1, 1.0);
        cfg.web[0].load = -1.0;
        let e = cfg.validated().unwrap_err();
        assert_eq!(e.path, "web[0].load");
        let mut cfg = with_web(0.5, 1, 1.0);
        cfg.web[0].rtt.kind = "pareto".into();
        let e = cfg.validated().unwrap_err();
        assert_eq!((e.path.as_str(), e.message.as_str()), ("web[0].rtt.kind", "unknown RTT distribution 'pareto'; allowed: fixed, uniform, lognormal, empirical"));
    }
}
