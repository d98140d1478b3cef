//! Network model: packets, queues, links and topologies.
pub mod link;
pub mod packet;
pub mod queue;
pub mod topology;

pub use link::{Link, LinkWake};
pub use packet::{Kind, Packet, SegRange, MAX_SACK_BLOCKS};
pub use queue::{Discipline, Limit, Queue, Red};
