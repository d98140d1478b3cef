//! Packet capture (issue 31 item 4): a tap that records the TCP packets of
//! chosen flows at chosen points into columns, for the front end to write as
//! pcap files (python/tcpeval/pcap.py). A capture point is a node's interface:
//! packets leaving it are recorded as they are offered to the link (before its
//! queue, so packets the queue drops are in the capture, as on a mirror port in
//! front of it) and packets reaching it as they come off the link. Memory grows
//! with the captured packets only, at most `max_packets` per point; with no
//! capture configured the simulation holds none of this.

use crate::config::{Config, ConfigError};
use crate::net::packet::Ecn;
use crate::net::{Kind, Packet};
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most packets one point may keep: about 90 bytes of columns each, so the
/// largest capture stays under a gigabyte.
pub const MAX_PACKETS: u64 = 10_000_000;

/// What to capture: the packets of `flows` at each of `points`.
#[derive(Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct CaptureConfig {
    /// Flow ids (indices into `flows`) whose data and ACKs are captured.
    pub flows: Vec<u32>,
    /// The first this many packets of each point are kept; later ones are
    /// only counted (`seen`).
    pub max_packets: u64,
    /// "bottleneck" (the slowest hop, the first of equals), a hop by name
    /// ("hop1"; "bottleneck" is a dumbbell's one hop), "sender" or "receiver"
    /// (the captured flows' hosts). One pcap file each.
    pub points: Vec<String>,
}

/// A capture point, resolved against the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// Router j's interface towards hop j: data offered to the forward link,
    /// ACKs coming off the reverse link.
    Hop(u32),
    /// Each captured flow's sender host.
    Sender,
    /// Each captured flow's receiver host.
    Receiver,
}

impl CaptureConfig {
    /// Check the capture against the configuration; returns the points.
    pub fn resolve(&self, cfg: &Config) -> Result<Vec<Point>, ConfigError> {
        let bad = |path: String, message: String| ConfigError { path, message };
        if self.flows.is_empty() {
            return Err(bad("capture.flows".into(), "name at least one flow".into()));
        }
        if let Some((i, f)) = self.flows.iter().enumerate().find(|(_, &f)| f as usize >= cfg.flows.len()) {
            let msg = format!("no flow {f}; the run has flows 0 to {}", cfg.flows.len().saturating_sub(1));
            return Err(bad(format!("capture.flows[{i}]"), msg));
        }
        if !(1..=MAX_PACKETS).contains(&self.max_packets) {
            return Err(bad("capture.max_packets".into(), format!("must be from 1 to {MAX_PACKETS}, got {}", self.max_packets)));
        }
        if self.points.is_empty() {
            return Err(bad("capture.points".into(), "name at least one capture point".into()));
        }
        let mut points = Vec::with_capacity(self.points.len());
        for (i, name) in self.points.iter().enumerate() {
            let p = point(name, cfg).ok_or_else(|| bad(format!("capture.points[{i}]"), unknown_point(name, cfg)))?;
            if points.contains(&p) {
                return Err(bad(format!("capture.points[{i}]"), format!("'{name}' is captured twice")));
            }
            points.push(p);
        }
        Ok(points)
    }
}

fn point(name: &str, cfg: &Config) -> Option<Point> {
    let hops = &cfg.network.hops;
    match name {
        "sender" => Some(Point::Sender),
        "receiver" => Some(Point::Receiver),
        "bottleneck" => {
            let slowest = (0..hops.len()).min_by(|&a, &b| hops[a].rate_bps.total_cmp(&hops[b].rate_bps))?;
            Some(Point::Hop(slowest as u32))
        }
        _ => {
            let j: usize = name.strip_prefix("hop")?.parse().ok()?;
            (j < hops.len()).then_some(Point::Hop(j as u32))
        }
    }
}

fn unknown_point(name: &str, cfg: &Config) -> String {
    let n = cfg.network.hops.len();
    let hops = if n == 1 { "hop0".to_string() } else { format!("hop0 to hop{}", n - 1) };
    format!("unknown capture point '{name}'; allowed: bottleneck, sender, receiver, {hops}")
}

/// The captured packets, one row each, in the order they were seen.
#[derive(Serialize, Default, Debug)]
pub struct CaptureTable {
    /// The configured points' names, in order (`point` indexes them).
    pub points: Vec<String>,
    /// Per point: packets of the captured flows that passed, kept or not.
    pub seen: Vec<u64>,
    pub t_ns: Vec<u64>,
    pub point: Vec<u8>,
    pub flow: Vec<u32>,
    /// True for a data segment, false for a pure ACK.
    pub data: Vec<bool>,
    /// Segment number (data) or next segment expected (ACK).
    pub seq: Vec<u64>,
    pub payload: Vec<u32>,
    /// SACK blocks of the row: 2 x nsack segment numbers follow in `sack`.
    pub nsack: Vec<u8>,
    pub sack: Vec<u64>,
    pub ts_val_ns: Vec<u64>,
    pub ts_ecr_ns: Vec<u64>,
    /// The IP header's ECN field as on the wire (RFC 3168 section 5: 0
    /// Not-ECT, 2 ECT(0), 3 CE).
    pub ecn: Vec<u8>,
    pub ece: Vec<bool>,
    pub cwr: Vec<bool>,
}

/// The tap: which links are captured in which direction, and the rows.
pub struct Capture {
    /// Per link id: 1 + the point that records packets offered to it, or 0.
    on_offer: Vec<u8>,
    /// Per link id: 1 + the point that records packets coming off it, or 0.
    on_arrive: Vec<u8>,
    /// Per flow id: whether it is captured.
    flows: Vec<bool>,
    max_packets: u64,
    table: CaptureTable,
}

impl Capture {
    /// Tap the links of `points`: `hosts[f]` is flow f's (sender, receiver)
    /// interfaces, each (uplink, downlink); hop j's links are 2j and 2j + 1.
    pub fn new(cfg: &CaptureConfig, points: &[Point], hosts: &[[(u32, u32); 2]], n_links: usize) -> Capture {
        let mut cap = Capture {
            on_offer: vec![0; n_links],
            on_arrive: vec![0; n_links],
            flows: vec![false; hosts.len()],
            max_packets: cfg.max_packets,
            table: CaptureTable { points: cfg.points.clone(), seen: vec![0; points.len()], ..CaptureTable::default() },
        };
        for &f in &cfg.flows {
            cap.flows[f as usize] = true;
        }
        for (k, p) in points.iter().enumerate() {
            let tag = k as u8 + 1;
            let taps: Vec<(u32, u32)> = match *p {
                Point::Hop(j) => vec![(2 * j, 2 * j + 1)],
                Point::Sender => cfg.flows.iter().map(|&f| hosts[f as usize][0]).collect(),
                Point::Receiver => cfg.flows.iter().map(|&f| hosts[f as usize][1]).collect(),
            };
            for (out, inward) in taps {
                cap.on_offer[out as usize] = tag;
                cap.on_arrive[inward as usize] = tag;
            }
        }
        cap
    }

    /// A packet offered to link `l`.
    pub fn offered(&mut self, l: u32, p: &Packet, now: Time) {
        self.record(self.on_offer.get(l as usize).copied().unwrap_or(0), p, now);
    }

    /// A packet came off link `l`.
    pub fn arrived(&mut self, l: u32, p: &Packet, now: Time) {
        self.record(self.on_arrive.get(l as usize).copied().unwrap_or(0), p, now);
    }

    fn record(&mut self, tag: u8, p: &Packet, now: Time) {
        // Links added for web transfers are never tapped (tag 0); their flow
        // ids run past the configured flows.
        if tag == 0 || p.kind == Kind::Udp || !self.flows.get(p.flow as usize).copied().unwrap_or(false) {
            return;
        }
        let k = tag as usize - 1;
        let t = &mut self.table;
        t.seen[k] += 1;
        if t.seen[k] > self.max_packets {
            return;
        }
        let data = p.kind == Kind::Data;
        t.t_ns.push(now);
        t.point.push(k as u8);
        t.flow.push(p.flow);
        t.data.push(data);
        t.seq.push(if data { p.seq } else { p.ack });
        t.payload.push(p.payload);
        t.nsack.push(p.nsack);
        t.sack.extend(p.sack_blocks().iter().flat_map(|&(a, b)| [a, b]));
        t.ts_val_ns.push(p.ts_val);
        t.ts_ecr_ns.push(p.ts_ecr);
        t.ecn.push(match p.ecn {
            Ecn::NotEct => 0,
            Ecn::Ect0 => 2,
            Ecn::Ce => 3,
        });
        t.ece.push(p.ece);
        t.cwr.push(p.cwr);
    }

    pub fn into_table(self) -> CaptureTable {
        self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::dumbbell;
    use crate::sim::Simulation;

    fn capture(points: &[&str], flows: &[u32], max_packets: u64) -> CaptureConfig {
        CaptureConfig { flows: flows.to_vec(), max_packets, points: points.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn bad_captures_are_named() {
        let cfg = dumbbell(10e6, 20, 1.0, 0.0, 2, 1.0);
        let e = |c: CaptureConfig| c.resolve(&cfg).unwrap_err();
        let err = e(capture(&["bottleneck"], &[0, 2], 10));
        assert_eq!((err.path.as_str(), err.message.as_str()), ("capture.flows[1]", "no flow 2; the run has flows 0 to 1"));
        let err = e(capture(&["hop1"], &[0], 10));
        assert_eq!(err.path, "capture.points[0]");
        assert_eq!(err.message, "unknown capture point 'hop1'; allowed: bottleneck, sender, receiver, hop0");
        assert_eq!(e(capture(&["sender", "sender"], &[0], 10)).path, "capture.points[1]");
        assert_eq!(e(capture(&["hop0", "bottleneck"], &[0], 10)).message, "'bottleneck' is captured twice");
        assert_eq!(e(capture(&["sender"], &[0], 0)).path, "capture.max_packets");
        assert_eq!(e(capture(&[], &[0], 10)).path, "capture.points");
        assert_eq!(e(capture(&["sender"], &[], 10)).path, "capture.flows");
    }

    #[test]
    fn the_bottleneck_of_a_chain_is_its_slowest_hop() {
        let mut cfg = dumbbell(10e6, 20, 1.0, 0.0, 1, 1.0);
        let mut slow = cfg.network.hops[0].clone();
        slow.rate_bps = 5e6;
        cfg.network.hops.push(slow.clone());
        cfg.network.hops.push(slow);
        let c = capture(&["bottleneck", "hop0", "hop2"], &[0], 10);
        assert_eq!(c.resolve(&cfg).unwrap(), vec![Point::Hop(1), Point::Hop(0), Point::Hop(2)]);
    }

    fn run(mut cfg: Config, c: CaptureConfig) -> crate::SimResult {
        cfg.capture = Some(c);
        Simulation::new(cfg).unwrap().run()
    }

    /// At the sender every data segment it sent and every ACK it received is
    /// captured once, in time order; at the bottleneck (before its queue) the
    /// data segments are the same ones; only the named flow is captured.
    #[test]
    fn the_sender_s_capture_holds_every_segment_it_sent() {
        let cfg = dumbbell(10e6, 20, 0.3, 0.0, 2, 2.0);
        let res = run(cfg, capture(&["sender", "bottleneck"], &[1], 1_000_000));
        let cap = res.capture.as_ref().unwrap();
        let f = &res.flows[1];
        let rows = |point: u8, data: bool| (0..cap.t_ns.len()).filter(move |&i| cap.point[i] == point && cap.data[i] == data);
        assert!(cap.flow.iter().all(|&g| g == 1));
        assert_eq!(rows(0, true).count() as u64, f.segments_sent);
        assert_eq!(rows(0, false).count() as u64, f.acks);
        // No loss before the bottleneck: all but the segments sent in the last
        // RTT (maybe still on the sender's link at the end) reach it.
        let at_bottleneck = rows(1, true).count();
        let early = rows(0, true).filter(|&i| cap.t_ns[i] + 20 * crate::time::MS < res.sim.end_ns).count();
        assert!(early <= at_bottleneck && at_bottleneck as u64 <= f.segments_sent, "{early} {at_bottleneck}");
        assert!(f.retransmits > 0, "a small buffer drops: the test checks retransmissions too");
        let payload: u64 = rows(0, true).map(|i| cap.payload[i] as u64).sum();
        assert_eq!(payload, f.bytes_sent);
        assert!(cap.t_ns.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(cap.seen, vec![f.segments_sent + f.acks, (at_bottleneck + rows(1, false).count()) as u64]);
        let sacks: usize = cap.nsack.iter().map(|&n| n as usize).sum();
        assert!(sacks > 0, "losses bring SACK blocks");
        assert_eq!(cap.sack.len(), 2 * sacks);
    }

    /// The tap only watches: a captured run's results are the same run's
    /// without capture, but for the capture itself.
    #[test]
    fn capturing_changes_nothing_else() {
        let cfg = || dumbbell(20e6, 20, 0.3, 1e-3, 2, 2.0);
        let plain = Simulation::new(cfg()).unwrap().run();
        let mut captured = run(cfg(), capture(&["bottleneck", "sender", "receiver"], &[0, 1], 500));
        assert!(captured.capture.take().is_some_and(|c| c.t_ns.len() == 1500));
        assert_eq!(serde_json::to_string(&plain).unwrap(), serde_json::to_string(&captured).unwrap());
    }

    #[test]
    fn max_packets_keeps_the_first_packets_and_counts_the_rest() {
        let cfg = || dumbbell(10e6, 20, 1.0, 0.0, 1, 1.0);
        let all = run(cfg(), capture(&["receiver"], &[0], MAX_PACKETS)).capture.unwrap();
        let cut = run(cfg(), capture(&["receiver"], &[0], 50)).capture.unwrap();
        assert_eq!(cut.t_ns.len(), 50);
        assert!(all.t_ns.len() > 500);
        assert_eq!(cut.seen, vec![all.t_ns.len() as u64]);
        assert_eq!(cut.t_ns[..], all.t_ns[..50]);
        assert_eq!(cut.seq[..], all.seq[..50]);
    }
}
