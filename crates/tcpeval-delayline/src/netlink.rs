//! nfnetlink_queue messages, encoded and decoded by hand (no libnetfilter_queue).
//! Pure byte handling; the socket lives in `nfq.rs`.
//!
//! Wire format (all from the Linux UAPI headers):
//! - `struct nlmsghdr` (linux/netlink.h): u32 len, u16 type, u16 flags, u32 seq,
//!   u32 pid, in host byte order; messages are padded to 4 bytes (NLMSG_ALIGN).
//! - `struct nfgenmsg` (linux/netfilter/nfnetlink.h): u8 family, u8 version,
//!   be16 res_id (= queue number).
//! - attributes `struct nlattr` (linux/netlink.h): u16 len, u16 type, payload,
//!   padded to 4 (NLA_ALIGN). nfqueue payloads are big-endian.

/// linux/netlink.h
const NLMSG_HDRLEN: usize = 16;
const NLA_HDRLEN: usize = 4;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLMSG_ERROR: u16 = 0x2;
/// linux/netfilter/nfnetlink.h
const NFGENMSG_LEN: usize = 4;
const NFNETLINK_V0: u8 = 0;
const NFNL_SUBSYS_QUEUE: u16 = 3;
/// linux/netfilter/nfnetlink_queue.h, enum nfqnl_msg_types
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;
const NFQNL_MSG_VERDICT_BATCH: u16 = 3;
/// enum nfqnl_attr_type
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_TIMESTAMP: u16 = 4;
/// enum nfqnl_attr_config
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
/// enum nfqnl_msg_config_cmds
const NFQNL_CFG_CMD_BIND: u8 = 1;
/// enum nfqnl_config_mode: metadata only, the packet stays in the kernel.
const NFQNL_COPY_META: u8 = 1;
/// NFQA_CFG_F_GSO: queue GSO skbs whole instead of segmenting them first.
pub const NFQA_CFG_F_GSO: u32 = 1 << 2;
/// linux/netfilter.h
const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;
/// A nested-attribute flag bit in nla_type (linux/netlink.h NLA_TYPE_MASK).
const NLA_TYPE_MASK: u16 = !((1 << 15) | (1 << 14));

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn nfq_type(msg: u16) -> u16 {
    (NFNL_SUBSYS_QUEUE << 8) | msg
}

/// Builds one nfnetlink message for `queue` into `buf` (cleared first).
struct MsgBuilder<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> MsgBuilder<'a> {
    fn start(buf: &'a mut Vec<u8>, msg: u16, flags: u16, seq: u32, queue: u16) -> MsgBuilder<'a> {
        buf.clear();
        buf.extend_from_slice(&0u32.to_ne_bytes()); // length, patched in finish()
        buf.extend_from_slice(&nfq_type(msg).to_ne_bytes());
        buf.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
        buf.extend_from_slice(&seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes()); // pid 0: to the kernel
                                                    // AF_UNSPEC: the queue itself is family-independent since Linux 3.8.
        buf.extend_from_slice(&[0, NFNETLINK_V0]);
        buf.extend_from_slice(&queue.to_be_bytes());
        MsgBuilder { buf }
    }

    fn attr(self, kind: u16, payload: &[u8]) -> Self {
        let len = (NLA_HDRLEN + payload.len()) as u16;
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(payload);
        self.buf.resize(align4(self.buf.len()), 0);
        self
    }

    fn finish(self) {
        let len = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&len.to_ne_bytes());
    }
}

/// NFQNL_MSG_CONFIG with NFQNL_CFG_CMD_BIND (struct nfqnl_msg_config_cmd:
/// u8 command, u8 pad, be16 pf), acknowledged.
pub fn encode_bind(buf: &mut Vec<u8>, seq: u32, queue: u16) {
    MsgBuilder::start(buf, NFQNL_MSG_CONFIG, NLM_F_ACK, seq, queue)
        .attr(NFQA_CFG_CMD, &[NFQNL_CFG_CMD_BIND, 0, 0, 0])
        .finish();
}

/// NFQNL_MSG_CONFIG setting copy mode META (struct nfqnl_msg_config_params:
/// be32 copy_range, u8 copy_mode, packed), the queue length, and `flags`
/// (NFQA_CFG_MASK = NFQA_CFG_FLAGS = flags, so other flags stay off; in
/// particular never NFQA_CFG_F_FAIL_OPEN), acknowledged.
pub fn encode_params(buf: &mut Vec<u8>, seq: u32, queue: u16, maxlen: u32, flags: u32) {
    let mut params = [0u8; 5];
    params[4] = NFQNL_COPY_META;
    MsgBuilder::start(buf, NFQNL_MSG_CONFIG, NLM_F_ACK, seq, queue)
        .attr(NFQA_CFG_PARAMS, &params)
        .attr(NFQA_CFG_QUEUE_MAXLEN, &maxlen.to_be_bytes())
        .attr(NFQA_CFG_MASK, &flags.to_be_bytes())
        .attr(NFQA_CFG_FLAGS, &flags.to_be_bytes())
        .finish();
}

/// NFQNL_MSG_VERDICT_BATCH accepting every queued packet with id <= `id`
/// (ids are per-queue sequence numbers, nfnetlink_queue.c). Not acknowledged:
/// the kernel still reports a failure as NLMSG_ERROR.
pub fn encode_accept_upto(buf: &mut Vec<u8>, seq: u32, queue: u16, id: u32) {
    MsgBuilder::start(buf, NFQNL_MSG_VERDICT_BATCH, 0, seq, queue)
        .attr(NFQA_VERDICT_HDR, &verdict_hdr(NF_ACCEPT, id))
        .finish();
}

/// NFQNL_MSG_VERDICT dropping the single packet `id`.
pub fn encode_drop(buf: &mut Vec<u8>, seq: u32, queue: u16, id: u32) {
    MsgBuilder::start(buf, NFQNL_MSG_VERDICT, 0, seq, queue)
        .attr(NFQA_VERDICT_HDR, &verdict_hdr(NF_DROP, id))
        .finish();
}

/// struct nfqnl_msg_verdict_hdr: be32 verdict, be32 id.
fn verdict_hdr(verdict: u32, id: u32) -> [u8; 8] {
    let mut hdr = [0u8; 8];
    hdr[..4].copy_from_slice(&verdict.to_be_bytes());
    hdr[4..].copy_from_slice(&id.to_be_bytes());
    hdr
}

/// What one received netlink message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A queued packet: its id and NFQA_TIMESTAMP (wall clock, ns) if present.
    Packet {
        queue: u16,
        id: u32,
        kernel_ts_ns: Option<u64>,
    },
    /// An ack (errno 0) or error (positive errno) for request `seq`.
    Ack { seq: u32, errno: i32 },
    /// Anything else (NLMSG_NOOP, NLMSG_DONE, other subsystems).
    Other,
}

fn u16_ne(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_ne(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_be(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

/// Splits a recv() buffer into netlink messages and decodes each.
/// Stops at the first malformed header (the rest cannot be framed).
pub fn parse_messages(buf: &[u8]) -> impl Iterator<Item = Event> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = &buf[at..];
        if rest.len() < NLMSG_HDRLEN {
            return None;
        }
        let len = u32_ne(rest, 0) as usize;
        if len < NLMSG_HDRLEN || len > rest.len() {
            return None;
        }
        at += align4(len).min(rest.len());
        Some(decode(&rest[..len]))
    })
}

fn decode(msg: &[u8]) -> Event {
    let kind = u16_ne(msg, 4);
    let body = &msg[NLMSG_HDRLEN..];
    if kind == NLMSG_ERROR && body.len() >= 4 {
        // struct nlmsgerr: int error (negative errno, 0 = ack), then the
        // request's nlmsghdr, whose seq is at offset 8.
        let error = i32::from_ne_bytes(body[..4].try_into().unwrap());
        let seq = if body.len() >= 4 + NLMSG_HDRLEN {
            u32_ne(body, 12)
        } else {
            0
        };
        return Event::Ack { seq, errno: -error };
    }
    if kind == nfq_type(NFQNL_MSG_PACKET) && body.len() >= NFGENMSG_LEN {
        let queue = u16::from_be_bytes([body[2], body[3]]);
        return decode_packet(queue, &body[NFGENMSG_LEN..]);
    }
    Event::Other
}

/// Reads NFQA_PACKET_HDR (struct nfqnl_msg_packet_hdr: be32 packet_id, ...)
/// and NFQA_TIMESTAMP (struct nfqnl_msg_packet_timestamp: be64 sec, be64 usec).
fn decode_packet(queue: u16, mut attrs: &[u8]) -> Event {
    let mut id = None;
    let mut kernel_ts_ns = None;
    while attrs.len() >= NLA_HDRLEN {
        let len = u16_ne(attrs, 0) as usize;
        if len < NLA_HDRLEN || len > attrs.len() {
            break;
        }
        let payload = &attrs[NLA_HDRLEN..len];
        match u16_ne(attrs, 2) & NLA_TYPE_MASK {
            NFQA_PACKET_HDR if payload.len() >= 4 => {
                id = Some(u32::from_be_bytes(payload[..4].try_into().unwrap()));
            }
            NFQA_TIMESTAMP if payload.len() >= 16 => {
                let (sec, usec) = (u64_be(payload), u64_be(&payload[8..]));
                kernel_ts_ns = Some(sec * 1_000_000_000 + usec * 1000);
            }
            _ => {}
        }
        attrs = &attrs[align4(len).min(attrs.len())..];
    }
    match id {
        Some(id) => Event::Packet {
            queue,
            id,
            kernel_ts_ns,
        },
        None => Event::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected bytes are written out from the header layouts, not from the
    // encoder, so an encoder mistake cannot agree with itself.
    fn hdr(len: u32, kind: u16, flags: u16, seq: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&len.to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&flags.to_ne_bytes());
        v.extend_from_slice(&seq.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v
    }

    fn nla(len: u16, kind: u16) -> Vec<u8> {
        [len.to_ne_bytes(), kind.to_ne_bytes()].concat()
    }

    #[test]
    fn bind_message_bytes() {
        let mut buf = Vec::new();
        encode_bind(&mut buf, 7, 0x0102);
        // type 0x0302 = (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_CONFIG; flags REQUEST|ACK.
        let mut want = hdr(28, 0x0302, 0x5, 7);
        want.extend_from_slice(&[0, 0, 0x01, 0x02]); // nfgenmsg, res_id big-endian
        want.extend(nla(8, 1));
        want.extend_from_slice(&[1, 0, 0, 0]); // BIND, pad, pf 0
        assert_eq!(buf, want);
    }

    #[test]
    fn params_message_bytes() {
        let mut buf = Vec::new();
        encode_params(&mut buf, 8, 1, 0x0001_0000, NFQA_CFG_F_GSO);
        let mut want = hdr(56, 0x0302, 0x5, 8);
        want.extend_from_slice(&[0, 0, 0, 1]);
        want.extend(nla(9, 2)); // copy_range 0, copy_mode META, padded to 12
        want.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        want.extend(nla(8, 3));
        want.extend_from_slice(&[0, 1, 0, 0]); // maxlen 65536 big-endian
        want.extend(nla(8, 4));
        want.extend_from_slice(&[0, 0, 0, 4]); // mask = GSO
        want.extend(nla(8, 5));
        want.extend_from_slice(&[0, 0, 0, 4]); // flags = GSO
        assert_eq!(buf, want);
    }

    #[test]
    fn verdict_batch_bytes() {
        let mut buf = Vec::new();
        encode_accept_upto(&mut buf, 9, 11, 0xdead_beef);
        let mut want = hdr(32, 0x0303, 0x1, 9);
        want.extend_from_slice(&[0, 0, 0, 11]);
        want.extend(nla(12, 2));
        want.extend_from_slice(&[0, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(buf, want);
    }

    #[test]
    fn drop_verdict_bytes() {
        let mut buf = Vec::new();
        encode_drop(&mut buf, 10, 2, 5);
        let mut want = hdr(32, 0x0301, 0x1, 10);
        want.extend_from_slice(&[0, 0, 0, 2]);
        want.extend(nla(12, 2));
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 5]);
        assert_eq!(buf, want);
    }

    fn packet_msg(queue: u16, id: u32, ts: Option<(u64, u64)>) -> Vec<u8> {
        let mut body = vec![2, 0];
        body.extend_from_slice(&queue.to_be_bytes());
        body.extend(nla(11, 1)); // packet_hdr: id, hw_protocol 0x0800, hook 2; padded
        body.extend_from_slice(&id.to_be_bytes());
        body.extend_from_slice(&[0x08, 0x00, 2, 0]);
        body.extend(nla(8, 5)); // NFQA_IFINDEX_INDEV, ignored
        body.extend_from_slice(&3u32.to_be_bytes());
        if let Some((sec, usec)) = ts {
            body.extend(nla(20, 4));
            body.extend_from_slice(&sec.to_be_bytes());
            body.extend_from_slice(&usec.to_be_bytes());
        }
        let mut msg = hdr(16 + body.len() as u32, 0x0300, 0, 0);
        msg.extend(body);
        msg
    }

    #[test]
    fn decodes_packets_with_and_without_timestamp() {
        let mut buf = packet_msg(1, 42, Some((1_700_000_000, 123_456)));
        buf.extend(packet_msg(11, 43, None));
        let events: Vec<Event> = parse_messages(&buf).collect();
        assert_eq!(
            events,
            vec![
                Event::Packet {
                    queue: 1,
                    id: 42,
                    kernel_ts_ns: Some(1_700_000_000_123_456_000)
                },
                Event::Packet {
                    queue: 11,
                    id: 43,
                    kernel_ts_ns: None
                },
            ]
        );
    }

    #[test]
    fn decodes_acks_and_errors() {
        let mut ack = hdr(36, 2, 0, 0);
        ack.extend_from_slice(&0i32.to_ne_bytes());
        ack.extend(hdr(28, 0x0302, 5, 77));
        let mut err = hdr(36, 2, 0, 0);
        err.extend_from_slice(&(-16i32).to_ne_bytes()); // -EBUSY
        err.extend(hdr(28, 0x0302, 5, 78));
        let events: Vec<Event> = parse_messages(&[ack, err].concat()).collect();
        assert_eq!(
            events,
            vec![
                Event::Ack { seq: 77, errno: 0 },
                Event::Ack { seq: 78, errno: 16 }
            ]
        );
    }

    #[test]
    fn stops_at_truncated_or_bogus_headers() {
        let good = packet_msg(1, 5, None);
        let mut buf = good.clone();
        buf.extend_from_slice(&good[..20]); // truncated second message
        assert_eq!(parse_messages(&buf).count(), 1);
        let zero_len = [0u8; 16];
        assert_eq!(parse_messages(&zero_len).count(), 0);
        let mut no_id = hdr(20, 0x0300, 0, 0);
        no_id.extend_from_slice(&[2, 0, 0, 1]);
        assert_eq!(
            parse_messages(&no_id).collect::<Vec<_>>(),
            vec![Event::Other]
        );
    }
}
