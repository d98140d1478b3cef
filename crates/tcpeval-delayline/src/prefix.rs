//! IPv4 prefixes and longest-prefix match for the TUN mode's routes.

use std::fmt;
use std::net::Ipv4Addr;

/// An IPv4 prefix `addr/len` with no host bits set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    addr: u32,
    len: u8,
}

impl Prefix {
    /// Parses `A.B.C.D/LEN`; rejects host bits so `10.2.1.5/24` is not
    /// silently read as `10.2.1.0/24`.
    pub fn parse(text: &str) -> Result<Prefix, String> {
        let Some((addr, len)) = text.split_once('/') else {
            return Err(format!("prefix `{text}`: expected A.B.C.D/LEN"));
        };
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("prefix `{text}`: `{addr}` is not an IPv4 address"))?;
        let len: u8 = match len.parse() {
            Ok(l) if l <= 32 => l,
            _ => {
                return Err(format!(
                    "prefix `{text}`: LEN must be an integer from 0 to 32"
                ))
            }
        };
        let addr = u32::from(addr);
        let p = Prefix {
            addr: addr & mask(len),
            len,
        };
        if p.addr != addr {
            return Err(format!(
                "prefix `{text}`: host bits are set; did you mean {p}?"
            ));
        }
        Ok(p)
    }

    pub fn contains(&self, addr: u32) -> bool {
        addr & mask(self.len) == self.addr
    }
}

fn mask(len: u8) -> u32 {
    // checked_shl: a shift by 32 (len 0) would overflow.
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.addr), self.len)
    }
}

/// Index of the longest prefix in `prefixes` containing `addr`, if any.
pub fn longest_match(prefixes: &[Prefix], addr: u32) -> Option<usize> {
    prefixes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.contains(addr))
        .max_by_key(|(_, p)| p.len)
        .map(|(i, _)| i)
}

/// Destination address of an IPv4 packet (RFC 791 section 3.1: version in the
/// top nibble of byte 0, destination at bytes 16..20); None for anything else.
pub fn ipv4_destination(packet: &[u8]) -> Option<u32> {
    const MIN_HEADER: usize = 20;
    if packet.len() < MIN_HEADER || packet[0] >> 4 != 4 {
        return None;
    }
    Some(u32::from_be_bytes([
        packet[16], packet[17], packet[18], packet[19],
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> u32 {
        u32::from(s.parse::<Ipv4Addr>().unwrap())
    }

    fn p(s: &str) -> Prefix {
        Prefix::parse(s).unwrap()
    }

    #[test]
    fn parse_and_display() {
        assert_eq!(p("10.2.1.0/24").to_string(), "10.2.1.0/24");
        assert_eq!(p("0.0.0.0/0").to_string(), "0.0.0.0/0");
        assert_eq!(p("10.2.1.7/32").to_string(), "10.2.1.7/32");
        assert!(Prefix::parse("10.2.1.7/24")
            .unwrap_err()
            .contains("did you mean 10.2.1.0/24"));
        assert!(Prefix::parse("10.2.1/24")
            .unwrap_err()
            .contains("not an IPv4"));
        assert!(Prefix::parse("10.2.1.0")
            .unwrap_err()
            .contains("A.B.C.D/LEN"));
        assert!(Prefix::parse("10.2.1.0/x").unwrap_err().contains("0 to 32"));
    }

    #[test]
    fn contains_edges() {
        assert!(p("10.2.1.0/24").contains(ip("10.2.1.255")));
        assert!(!p("10.2.1.0/24").contains(ip("10.2.2.0")));
        assert!(p("0.0.0.0/0").contains(ip("255.255.255.255")));
        assert!(p("10.2.1.7/32").contains(ip("10.2.1.7")));
        assert!(!p("10.2.1.7/32").contains(ip("10.2.1.6")));
    }

    #[test]
    fn longest_prefix_wins_regardless_of_order() {
        let routes = [
            p("10.0.0.0/8"),
            p("10.2.1.0/24"),
            p("10.2.0.0/16"),
            p("0.0.0.0/0"),
        ];
        assert_eq!(longest_match(&routes, ip("10.2.1.9")), Some(1));
        assert_eq!(longest_match(&routes, ip("10.2.9.9")), Some(2));
        assert_eq!(longest_match(&routes, ip("10.9.9.9")), Some(0));
        assert_eq!(longest_match(&routes, ip("192.168.0.1")), Some(3));
        assert_eq!(longest_match(&routes[..3], ip("192.168.0.1")), None);
    }

    #[test]
    fn destination_of_packets() {
        let mut pkt = [0u8; 20];
        pkt[0] = 0x45;
        pkt[16..20].copy_from_slice(&[10, 2, 1, 2]);
        assert_eq!(ipv4_destination(&pkt), Some(ip("10.2.1.2")));
        pkt[0] = 0x60; // IPv6
        assert_eq!(ipv4_destination(&pkt), None);
        assert_eq!(ipv4_destination(&pkt[..19]), None);
    }
}
