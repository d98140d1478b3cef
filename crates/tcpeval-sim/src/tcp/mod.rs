//! TCP endpoints: the sender (windows, loss recovery, RTO) and the receiver
//! (cumulative ACK, SACK, delayed ACKs, timestamps). The sender is split by
//! concern: `sender` coordinates `scoreboard`, `recovery`, `rate`, `rtt`, and
//! calls congestion control through `hooks`.
pub mod ecn;
pub mod hooks;
pub mod ns2_agent;
pub mod ns2_tahoe;
pub mod ns2_sack1;
pub mod ns2_vegas;
pub mod rate;
pub mod receiver;
pub mod recovery;
pub mod rack;
pub mod rtt;
pub mod scoreboard;
pub mod sender;
pub mod tso;
pub mod tsq;
pub mod undo;

pub use receiver::{Receiver, ReceiverConfig};
pub use sender::{Sender, SenderConfig};
