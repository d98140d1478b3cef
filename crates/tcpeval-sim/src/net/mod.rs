//! Network model: packets, queues, links and topologies.
pub mod codel;
pub mod fq_codel;
pub mod link;
pub mod packet;
pub mod pie;
pub mod queue;
pub mod step;
pub mod topology;

pub use link::{Link, LinkWake};
pub use packet::{Kind, Packet, SegRange, MAX_SACK_BLOCKS};
pub use queue::{Codel, Discipline, Limit, Queue, Red};
