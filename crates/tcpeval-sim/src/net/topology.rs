//! Topologies: nodes, the links between them and static routes. A builder returns
//! a `Topology`; the simulation only needs to know, for a packet at a node, which
//! link it leaves on.

use super::link::Link;
use super::queue::Limit;
use crate::rng::Rng;
use crate::time::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Router,
    Sender(u32),
    Receiver(u32),
}

pub struct Node {
    pub kind: NodeKind,
    /// Hosts: their single interface. Routers: unused.
    pub out: u32,
    /// Routers: outgoing link per destination node. Hosts: empty.
    pub routes: Vec<u32>,
}

pub struct Topology {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// Per flow: (sender node, receiver node).
    pub endpoints: Vec<(u32, u32)>,
    /// Links reported in the results, in order.
    pub monitored: Vec<u32>,
}

impl Topology {
    /// The link a packet for `dst` leaves `node` on.
    pub fn next_link(&self, node: u32, dst: u32) -> u32 {
        let n = &self.nodes[node as usize];
        match n.kind {
            NodeKind::Router => n.routes[dst as usize],
            _ => n.out,
        }
    }
}

/// Bottleneck and access parameters of a dumbbell.
pub struct DumbbellSpec {
    pub bottleneck_rate_bps: f64,
    pub bottleneck_delay: Time,
    pub forward_limit: Limit,
    pub reverse_limit: Limit,
    pub loss: f64,
    pub access_rate_bps: f64,
    /// Per flow: one-way access delay on the sender side (each direction).
    pub access_delays: Vec<Time>,
}

/// Access queues are the hosts' and routers' interface queues; they are made large
/// enough never to drop (sender NIC queue limits are a separate host parameter).
const ACCESS_QUEUE_PKTS: u64 = 1 << 32;

/// Link ids of a dumbbell: 0 forward bottleneck, 1 reverse bottleneck, then four
/// access links per flow (sender->A, A->sender, B->receiver, receiver->B).
/// Nodes: 0 router A (senders' side), 1 router B, then sender/receiver per flow.
pub fn dumbbell(spec: &DumbbellSpec, seed: u64) -> Topology {
    let n = spec.access_delays.len();
    let (a, b) = (0u32, 1u32);
    let sender = |i: usize| 2 + 2 * i as u32;
    let receiver = |i: usize| 3 + 2 * i as u32;
    let n_nodes = 2 + 2 * n;
    let mut links = Vec::with_capacity(2 + 4 * n);
    let mut fwd = Link::new("bottleneck", spec.bottleneck_rate_bps, spec.bottleneck_delay, b, spec.forward_limit, Rng::new(seed, 0));
    fwd.loss = spec.loss;
    links.push(fwd);
    links.push(Link::new("reverse", spec.bottleneck_rate_bps, spec.bottleneck_delay, a, spec.reverse_limit, Rng::new(seed, 1)));
    let access = Limit::Packets(ACCESS_QUEUE_PKTS);
    let mut routes_a = vec![0u32; n_nodes];
    let mut routes_b = vec![1u32; n_nodes];
    let mut nodes = vec![];
    let mut endpoints = vec![];
    for (i, &d) in spec.access_delays.iter().enumerate() {
        let base = links.len() as u32;
        let rng = || Rng::new(seed, 2 + base as u64);
        links.push(Link::new(&format!("s{i}->A"), spec.access_rate_bps, d, a, access, rng()));
        links.push(Link::new(&format!("A->s{i}"), spec.access_rate_bps, d, sender(i), access, rng()));
        links.push(Link::new(&format!("B->r{i}"), spec.access_rate_bps, 0, receiver(i), access, rng()));
        links.push(Link::new(&format!("r{i}->B"), spec.access_rate_bps, 0, b, access, rng()));
        routes_a[sender(i) as usize] = base + 1;
        routes_b[receiver(i) as usize] = base + 2;
        endpoints.push((sender(i), receiver(i)));
        nodes.push(Node { kind: NodeKind::Sender(i as u32), out: base, routes: vec![] });
        nodes.push(Node { kind: NodeKind::Receiver(i as u32), out: base + 3, routes: vec![] });
    }
    let mut all = vec![
        Node { kind: NodeKind::Router, out: 0, routes: routes_a },
        Node { kind: NodeKind::Router, out: 1, routes: routes_b },
    ];
    all.extend(nodes);
    Topology { nodes: all, links, endpoints, monitored: vec![0, 1] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumbbell_routes_data_over_the_bottleneck_and_acks_back() {
        let spec = DumbbellSpec {
            bottleneck_rate_bps: 1e8,
            bottleneck_delay: 0,
            forward_limit: Limit::Packets(10),
            reverse_limit: Limit::Packets(10),
            loss: 0.0,
            access_rate_bps: 1e9,
            access_delays: vec![5, 7],
        };
        let t = dumbbell(&spec, 1);
        for (i, &(s, r)) in t.endpoints.iter().enumerate() {
            // sender -> A -> bottleneck -> B -> receiver
            let l0 = t.next_link(s, r);
            assert_eq!(t.links[l0 as usize].to, 0);
            assert_eq!(t.next_link(0, r), 0);
            let l2 = t.next_link(1, r);
            assert_eq!(t.links[l2 as usize].to, r);
            // receiver -> B -> reverse -> A -> sender
            assert_eq!(t.next_link(1, s), 1);
            let l3 = t.next_link(0, s);
            assert_eq!(t.links[l3 as usize].to, s);
            assert_eq!(t.links[l3 as usize].delay, spec.access_delays[i]);
        }
    }
}
