//! Topologies: a chain of routers joined by bottleneck hops, with hosts attached
//! to routers by access links. One hop is the dumbbell; several hops are a parking
//! lot, where flows enter and leave at any router. Routing is computed, not
//! tabulated: a packet for a host attached at router `a` leaves router `r` on the
//! host's access link if a == r, on the forward hop if a > r, else on the reverse
//! hop.

use super::link::Link;
use super::queue::{Limit, Queue};
use crate::rng::Rng;
use crate::time::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Router(u32),
    Sender(u32),
    Receiver(u32),
    UdpSource(u32),
    UdpSink(u32),
}

pub struct Node {
    pub kind: NodeKind,
    /// Hosts: their interface (uplink) and the router they attach to.
    pub out: u32,
    pub attach: u32,
    /// Hosts: the router's link down to this host.
    pub down: u32,
}

/// One bottleneck hop, both directions.
pub struct HopSpec {
    pub rate_bps: f64,
    pub delay: Time,
    pub forward: Queue,
    pub reverse: Queue,
    /// Random drop probability of data entering the forward direction.
    pub loss: f64,
}

/// A host: which router it attaches to, its access delay (each direction), the
/// limit of its interface queue and its random per-packet send overhead.
pub struct HostSpec {
    pub kind: NodeKind,
    pub router: u32,
    pub access_delay: Time,
    pub nic_limit: Limit,
    pub send_overhead: Time,
}

pub struct Topology {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// Host node ids, in the order of the `HostSpec`s given to the builder.
    pub hosts: Vec<u32>,
    /// Links reported in the results (every hop, both directions), in order.
    pub monitored: Vec<u32>,
}

/// Router-side access queues never drop (only hosts' own interfaces may).
const ROUTER_ACCESS_PKTS: u64 = 1 << 40;

impl Topology {
    /// The link a packet for `dst` leaves `node` on.
    pub fn next_link(&self, node: u32, dst: u32) -> u32 {
        let n = &self.nodes[node as usize];
        match n.kind {
            NodeKind::Router(r) => {
                let d = &self.nodes[dst as usize];
                match d.attach.cmp(&r) {
                    std::cmp::Ordering::Equal => d.down,
                    std::cmp::Ordering::Greater => 2 * r,
                    std::cmp::Ordering::Less => 2 * (r - 1) + 1,
                }
            }
            _ => n.out,
        }
    }

    /// Sum of one-way hop delays between routers `a` and `b`.
    pub fn path_delay(hops: &[HopSpec], a: u32, b: u32) -> Time {
        let (lo, hi) = (a.min(b) as usize, a.max(b) as usize);
        hops[lo..hi].iter().map(|h| h.delay).sum()
    }
}

fn hop_names(j: usize, n_hops: usize) -> (String, String) {
    if n_hops == 1 {
        ("bottleneck".into(), "reverse".into())
    } else {
        (format!("hop{j}"), format!("hop{j}-rev"))
    }
}

/// Build a chain of `hops.len() + 1` routers with the given hosts attached.
/// Link ids: hop j forward = 2j, reverse = 2j + 1; then per host its uplink and
/// the router's downlink to it. Random streams are keyed by link id.
pub fn chain(hops: Vec<HopSpec>, hosts: &[HostSpec], access_rate_bps: f64, seed: u64) -> Topology {
    let n_routers = hops.len() + 1;
    let mut links = Vec::with_capacity(2 * hops.len() + 2 * hosts.len());
    let n_hops = hops.len();
    for (j, h) in hops.into_iter().enumerate() {
        let (fwd_name, rev_name) = hop_names(j, n_hops);
        let id = links.len() as u64;
        let mut fwd = Link::new(&fwd_name, h.rate_bps, h.delay, j as u32 + 1, h.forward, Rng::new(seed, id));
        fwd.loss = h.loss;
        links.push(fwd);
        links.push(Link::new(&rev_name, h.rate_bps, h.delay, j as u32, h.reverse, Rng::new(seed, id + 1)));
    }
    let monitored = (0..links.len() as u32).collect();
    let nodes: Vec<Node> = (0..n_routers)
        .map(|r| Node { kind: NodeKind::Router(r as u32), out: 0, attach: r as u32, down: 0 })
        .collect();
    let mut topo = Topology { nodes, links, hosts: Vec::with_capacity(hosts.len()), monitored };
    for h in hosts {
        let node = topo.add_host(h, access_rate_bps, seed);
        topo.hosts.push(node);
    }
    topo
}

impl Topology {
    /// Attach a host (its uplink and the router's downlink to it); returns its
    /// node id. Each link's random stream is keyed by its id.
    pub fn add_host(&mut self, h: &HostSpec, access_rate_bps: f64, seed: u64) -> u32 {
        let node = self.nodes.len() as u32;
        let up = self.links.len() as u32;
        let rng = |k: u32| Rng::new(seed, (up + k) as u64);
        let nic = Queue::drop_tail(h.nic_limit);
        let mut up_link = Link::new("access-up", access_rate_bps, h.access_delay, h.router, nic, rng(0));
        up_link.send_overhead = h.send_overhead;
        self.links.push(up_link);
        let down_q = Queue::drop_tail(Limit::Packets(ROUTER_ACCESS_PKTS));
        self.links.push(Link::new("access-down", access_rate_bps, h.access_delay, node, down_q, rng(1)));
        self.nodes.push(Node { kind: h.kind, out: up, attach: h.router, down: up + 1 });
        node
    }

    /// Give an idle host a new access delay (a reused web slot's new RTT).
    pub fn set_access_delay(&mut self, host: u32, delay: Time) {
        let n = &self.nodes[host as usize];
        let (up, down) = (n.out as usize, n.down as usize);
        self.links[up].delay = delay;
        self.links[down].delay = delay;
    }

    /// Neither of the host's access links holds or sends a packet.
    pub fn host_idle(&self, host: u32) -> bool {
        let n = &self.nodes[host as usize];
        self.links[n.out as usize].is_idle() && self.links[n.down as usize].is_idle()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(delay: Time) -> HopSpec {
        let q = || Queue::drop_tail(Limit::Packets(10));
        HopSpec { rate_bps: 1e8, delay, forward: q(), reverse: q(), loss: 0.0 }
    }

    fn host(kind: NodeKind, router: u32, d: Time) -> HostSpec {
        HostSpec { kind, router, access_delay: d, nic_limit: Limit::Packets(1000), send_overhead: 0 }
    }

    /// Follow next_link from `src` until `dst`; returns the link ids crossed.
    fn walk(t: &Topology, src: u32, dst: u32) -> Vec<u32> {
        let mut path = vec![];
        let mut node = src;
        while node != dst {
            let l = t.next_link(node, dst);
            path.push(l);
            node = t.links[l as usize].to;
            assert!(path.len() < 20, "routing loop");
        }
        path
    }

    #[test]
    fn dumbbell_routes_data_forward_and_acks_back() {
        let hosts = [host(NodeKind::Sender(0), 0, 5), host(NodeKind::Receiver(0), 1, 0)];
        let t = chain(vec![hop(7)], &hosts, 1e9, 1);
        let (s, r) = (t.hosts[0], t.hosts[1]);
        assert_eq!(walk(&t, s, r), vec![2, 0, 5]);
        assert_eq!(walk(&t, r, s), vec![4, 1, 3]);
        assert_eq!(t.links[0].name, "bottleneck");
        assert_eq!(t.links[3].delay, 5);
    }

    #[test]
    fn parking_lot_flows_cross_exactly_their_hops() {
        // Routers 0-1-2-3. A long flow 0->3 and a cross flow 1->2.
        let hosts = [
            host(NodeKind::Sender(0), 0, 0),
            host(NodeKind::Receiver(0), 3, 0),
            host(NodeKind::Sender(1), 1, 0),
            host(NodeKind::Receiver(1), 2, 0),
        ];
        let t = chain(vec![hop(1), hop(2), hop(3)], &hosts, 1e9, 1);
        let long = walk(&t, t.hosts[0], t.hosts[1]);
        assert_eq!(&long[1..4], &[0, 2, 4]);
        let back = walk(&t, t.hosts[1], t.hosts[0]);
        assert_eq!(&back[1..4], &[5, 3, 1]);
        let cross = walk(&t, t.hosts[2], t.hosts[3]);
        assert_eq!(&cross[1..2], &[2]);
        assert_eq!(Topology::path_delay(&[hop(1), hop(2), hop(3)], 3, 1), 5);
        assert_eq!(t.links[2].name, "hop1");
    }
}
