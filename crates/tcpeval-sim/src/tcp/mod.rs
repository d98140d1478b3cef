//! TCP endpoints: the sender (windows, loss recovery, RTO) and the receiver
//! (cumulative ACK, SACK, delayed ACKs, timestamps).
pub mod receiver;
pub mod rtt;
pub mod sender;

pub use receiver::{Receiver, ReceiverConfig};
pub use sender::{Sender, SenderConfig};
