//! Turn a validated config into a topology, TCP endpoints and UDP sources.

use crate::cc::{Cc, CongestionOps};
use crate::config::{endpoints, FlowConfig, FqCodelConfig, HopConfig, PieConfig, RedConfig, ValidConfig};
use crate::rng::Rng;
use crate::stack::Stack;
use crate::net::topology::{chain, HopSpec, HostSpec, NodeKind, Topology};
use crate::net::codel::{self, CodelParams, CodelVars};
use crate::net::fq_codel::{self, FqCodel, FqCodelParams};
use crate::net::pie::{Pie, PieParams};
use crate::net::step::Step;
use crate::net::{Codel, Discipline, Limit, Queue, Red};
use crate::tcp::ecn::EcnMode;
use crate::tcp::rack::LossDetection;
use crate::tcp::{Receiver, ReceiverConfig, Sender, SenderConfig};
use crate::time::{Time, SEC};
use crate::traffic::UdpSource;

/// Packet size used to convert byte buffers to RED's packet thresholds.
const RED_PKT_BYTES: f64 = crate::consts::MTU_BYTES as f64;
/// Floyd, "RED: Discussions of Setting Parameters" (1997): max_p = 0.1.
const RED_MAX_P: f64 = 0.1;
/// An interface queue that never fills.
pub const UNLIMITED: Limit = Limit::Packets(1 << 40);

pub struct Built {
    pub topo: Topology,
    pub senders: Vec<Sender>,
    pub receivers: Vec<Receiver>,
    /// Per flow: (sender node, receiver node).
    pub flow_hosts: Vec<(u32, u32)>,
    pub udp: Vec<UdpSource>,
    /// Per UDP stream: (source node, sink node).
    pub udp_hosts: Vec<(u32, u32)>,
}

fn limit(pkts: Option<u64>, bytes: Option<u64>) -> Limit {
    match (pkts, bytes) {
        (Some(p), _) => Limit::Packets(p),
        (None, Some(b)) => Limit::Bytes(b),
        (None, None) => unreachable!("validated: one of packets or bytes"),
    }
}

/// RED with defaults derived from the buffer B (packets): max_th = B/2 and
/// min_th = max_th/3 (Floyd 1997: max_th at least twice, ideally three times,
/// min_th), so the gentle ramp reaches certain drop at 2 max_th = B.
fn red(cfg: &RedConfig, lim: Limit, rate_bps: f64) -> Red {
    let buffer = match lim {
        Limit::Packets(p) => p as f64,
        Limit::Bytes(b) => b as f64 / RED_PKT_BYTES,
    };
    let max_th = cfg.max_th.unwrap_or((buffer / 2.0).max(3.0));
    let min_th = cfg.min_th.unwrap_or(max_th / 3.0);
    let pkt_time = (RED_PKT_BYTES * 8.0 / rate_bps * SEC as f64) as Time;
    // Floyd, Gummadi & Shenker, "Adaptive RED" (2001), section 4: w_q = 1 -
    // exp(-1/C) with C the link rate in packets per second, an averaging time
    // constant of one second whatever the rate (a fixed 0.002 is far too fast on
    // fast links and makes the average oscillate with the flows' sawtooth).
    let pkts_per_s = rate_bps / 8.0 / RED_PKT_BYTES;
    let w_q = 1.0 - (-1.0 / pkts_per_s).exp();
    let mut red = Red::new(min_th, max_th, cfg.w_q.unwrap_or(w_q), cfg.max_p.unwrap_or(RED_MAX_P), cfg.gentle.unwrap_or(true), pkt_time);
    (red.ecn, red.harddrop) = (cfg.ecn.unwrap_or(false), cfg.harddrop.unwrap_or(false));
    red.ns2 = cfg.variant == Some(crate::config::RedVariant::Ns2);
    red
}

fn queue(h: &HopConfig, lim: Limit, hash_key: u64) -> Queue {
    let mtu = crate::consts::MTU_BYTES as u64;
    let discipline = match h.queue.as_str() {
        "red" => Discipline::Red(red(&h.red, lim, h.rate_bps)),
        "codel" => {
            let c = &h.codel;
            let params = CodelParams { target: c.target_ns.unwrap_or(codel::TARGET_NS), interval: c.interval_ns.unwrap_or(codel::INTERVAL_NS), mtu, ecn: c.ecn.unwrap_or(false) };
            Discipline::Codel(Codel { params, vars: CodelVars::default() })
        }
        "fq_codel" => Discipline::FqCodel(Box::new(FqCodel::new(fq_codel_params(&h.fq_codel, hash_key)))),
        "pie" => Discipline::Pie(Box::new(Pie::new(pie_params(&h.pie)))),
        "step" => Discipline::Step(Step { threshold: limit(h.step.threshold_pkts, h.step.threshold_bytes) }),
        _ => Discipline::DropTail,
    };
    Queue::new(lim, discipline)
}

/// FQ-CoDel's parameters, Linux's where absent (fq_codel_init; the quantum is
/// one MTU, Linux's psched_mtu).
fn fq_codel_params(c: &FqCodelConfig, hash_key: u64) -> FqCodelParams {
    let mtu = crate::consts::MTU_BYTES;
    let codel = CodelParams {
        target: c.target_ns.unwrap_or(codel::TARGET_NS),
        interval: c.interval_ns.unwrap_or(codel::INTERVAL_NS),
        mtu: mtu as u64,
        ecn: c.ecn.unwrap_or(true),
    };
    FqCodelParams {
        codel,
        flows: c.flows.unwrap_or(fq_codel::FLOWS),
        quantum: c.quantum_bytes.unwrap_or(mtu),
        memory_limit: c.memory_limit_bytes.unwrap_or(fq_codel::MEMORY_LIMIT_BYTES),
        drop_batch: c.drop_batch.unwrap_or(fq_codel::DROP_BATCH),
        hash_key,
    }
}

/// PIE's parameters, Linux's where absent (pie_params_init).
fn pie_params(c: &PieConfig) -> PieParams {
    let d = PieParams::linux(crate::consts::MTU_BYTES as u64);
    PieParams {
        target: c.target_ns.unwrap_or(d.target),
        tupdate: c.tupdate_ns.unwrap_or(d.tupdate),
        alpha: c.alpha.unwrap_or(d.alpha),
        beta: c.beta.unwrap_or(d.beta),
        max_burst: c.max_burst_ns.unwrap_or(d.max_burst),
        ecn: c.ecn.unwrap_or(d.ecn),
        mtu: d.mtu,
    }
}

/// Hop `j` of a run seeded `seed`: its queues' FQ-CoDel hash keys differ by
/// hop and direction, as two routers' random keys do.
fn hop(h: &HopConfig, seed: u64, j: usize) -> HopSpec {
    let key = seed ^ (j as u64) << 33;
    HopSpec {
        rate_bps: h.rate_bps,
        delay: h.delay_ns,
        forward: queue(h, limit(h.buffer_pkts, h.buffer_bytes), key),
        reverse: queue(h, limit(h.reverse_buffer_pkts, h.reverse_buffer_bytes), key ^ 1 << 32),
        loss: h.loss,
    }
}

/// Source and sink hosts of a stream entering at router a and leaving at b: the
/// source's access delay makes up the rest of the round-trip time.
/// Only the source has a send overhead (the sink's ACKs leave undisturbed, as in
/// ns-2, where the overhead belongs to the sending agent).
pub fn host_pair(src: NodeKind, dst: NodeKind, [a, b]: [u32; 2], rtt_ns: u64, delays: &[u64], nic: Limit, overhead: u64) -> [HostSpec; 2] {
    let (lo, hi) = (a.min(b) as usize, a.max(b) as usize);
    let one_way: u64 = delays[lo..hi].iter().sum();
    [
        // Saturating: a web transfer's drawn RTT below its path's gets the path's
        // (config::WebConfig::validate); a configured flow's is checked there.
        HostSpec { kind: src, router: a, access_delay: (rtt_ns / 2).saturating_sub(one_way), nic_limit: nic, send_overhead: overhead },
        HostSpec { kind: dst, router: b, access_delay: 0, nic_limit: UNLIMITED, send_overhead: 0 },
    ]
}

/// Key of the senders' delayed-send streams, apart from every link's (Rng::new).
const SEND_JITTER_KEY: u64 = 0x5e4d_0000_0000_0000;
/// The random stream of a flow's algorithm (CongestionOps::seed_random).
const CC_RANDOM_KEY: u64 = 0xcc4a_0000_0000_0000;

/// A flow's endpoints; `cc` is its algorithm as validation built it, `i` the id
/// its packets carry, `bytes` its size (None: bulk), `seed` the run's.
pub fn endpoint_pair(f: &FlowConfig, mut cc: Cc, i: usize, bytes: Option<u64>, (s, r): (u32, u32), seed: u64) -> (Sender, Receiver) {
    let ecn = EcnMode::of(f.ecn, cc.needs_ecn());
    cc.seed_random(Rng::new(seed ^ CC_RANDOM_KEY, i as u64).next_u64());
    let sender = Sender::new(
        SenderConfig {
            flow: i as u32,
            dst: r,
            mss: f.mss,
            header_bytes: f.mtu - f.mss,
            total_bytes: bytes,
            max_window: f.max_window_bytes.map_or(u64::MAX, |w| w / f.mss as u64),
            sack: f.sack,
            initial_cwnd: f.initial_cwnd,
        },
        cc,
    );
    let mut profile = Stack::from_name(&f.stack).expect("validated").profile_for(&f.cc);
    profile.reduction = profile.reduction.with_send_jitter(f.send_jitter_ns);
    if let Some(rule) = &f.loss_detection {
        profile.loss_detection = LossDetection::from_name(rule).expect("validated");
    }
    profile.quickacks = f.quickacks.unwrap_or(profile.quickacks);
    let jitter = Rng::new(seed ^ SEND_JITTER_KEY, i as u64);
    let sender = sender.with_stack(&profile).with_ecn(ecn).with_send_jitter(f.send_jitter_ns, jitter);
    let sender = sender.with_small_queues(profile.tsq).with_handshake_rtt(f.rtt_ns);
    let receiver = Receiver::new(ReceiverConfig {
        flow: i as u32,
        dst: s,
        mss: f.mss,
        total_bytes: bytes,
        delayed_ack: f.delayed_ack,
        delack_timeout: f.delack_timeout_ns,
        ack_bytes: f.mtu - f.mss,
    })
    .with_stack(&profile)
    .with_dsack(f.sack && profile.dsack)
    .with_sack_compression(profile.sack_compression.filter(|_| f.sack), f.rtt_ns)
    .with_ecn(ecn);
    (sender, receiver)
}

pub fn build(cfg: &ValidConfig) -> Built {
    let delays = cfg.network.hop_delays();
    let n_hops = delays.len();
    let mut hosts = Vec::new();
    for (i, f) in cfg.flows.iter().enumerate() {
        let nic = f.nic_queue_pkts.map_or(UNLIMITED, Limit::Packets);
        let ends = endpoints(&f.direction, f.path, n_hops);
        hosts.extend(host_pair(NodeKind::Sender(i as u32), NodeKind::Receiver(i as u32), ends, f.rtt_ns, &delays, nic, f.send_overhead_ns));
    }
    for (k, u) in cfg.udp.iter().enumerate() {
        let ends = endpoints(&u.direction, u.path, n_hops);
        hosts.extend(host_pair(NodeKind::UdpSource(k as u32), NodeKind::UdpSink(k as u32), ends, u.rtt_ns, &delays, UNLIMITED, 0));
    }
    let hops = cfg.network.hops.iter().enumerate().map(|(j, h)| hop(h, cfg.seed, j)).collect();
    let topo = chain(hops, &hosts, cfg.network.access_rate_bps, cfg.seed);
    let pair = |k: usize| (topo.hosts[2 * k], topo.hosts[2 * k + 1]);
    let n = cfg.flows.len();
    let flow_hosts: Vec<(u32, u32)> = (0..n).map(pair).collect();
    let udp_hosts: Vec<(u32, u32)> = (0..cfg.udp.len()).map(|k| pair(n + k)).collect();
    let mut senders = Vec::with_capacity(n);
    let mut receivers = Vec::with_capacity(n);
    for (i, (f, cc)) in cfg.flows.iter().zip(cfg.algorithms()).enumerate() {
        let (s, r) = endpoint_pair(f, cc.clone(), i, f.bytes, flow_hosts[i], cfg.seed);
        senders.push(s);
        receivers.push(r);
    }
    let udp = cfg.udp.iter().enumerate().map(|(k, u)| UdpSource::new(k as u32, udp_hosts[k].1, u.clone())).collect();
    Built { topo, senders, receivers, flow_hosts, udp, udp_hosts }
}
