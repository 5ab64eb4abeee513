//! Ethernet / IPv4 / UDP frames around a protocol payload: what the BPF
//! programs see, built for `BPF_PROG_TEST_RUN` and read back from it.

use std::net::Ipv4Addr;

pub const ETH_LEN: usize = 14;
pub const IPV4_LEN: usize = 20;
pub const UDP_LEN: usize = 8;
/// Offset of the UDP payload in a frame built by [`udp_frame`].
pub const PAYLOAD_OFFSET: usize = ETH_LEN + IPV4_LEN + UDP_LEN;

/// One end of a UDP flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub mac: [u8; 6],
    pub ip: Ipv4Addr,
    pub port: u16,
}

/// A frame from `src` to `dst` carrying `payload`, padded with zeros to at
/// least `min_len` bytes (Ethernet pads short frames; UDP length excludes it).
pub fn udp_frame(src: Endpoint, dst: Endpoint, payload: &[u8], min_len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(PAYLOAD_OFFSET + payload.len());
    f.extend_from_slice(&dst.mac);
    f.extend_from_slice(&src.mac);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = (IPV4_LEN + UDP_LEN + payload.len()) as u16;
    let mut ip = [0u8; IPV4_LEN];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src.ip.octets());
    ip[16..20].copy_from_slice(&dst.ip.octets());
    let sum = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&src.port.to_be_bytes());
    f.extend_from_slice(&dst.port.to_be_bytes());
    f.extend_from_slice(&((UDP_LEN + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    if f.len() < min_len {
        f.resize(min_len, 0);
    }
    f
}

/// The internet checksum of an IPv4 header (with its checksum field zero or not).
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for (i, w) in header.chunks(2).enumerate() {
        if i == 5 {
            continue; // the checksum field itself
        }
        sum += u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The addresses and payload of a frame built by [`udp_frame`] (or rewritten
/// by a program): `(src, dst, payload, ip_checksum_ok)`.
pub fn parse(f: &[u8]) -> Option<(Endpoint, Endpoint, &[u8], bool)> {
    if f.len() < PAYLOAD_OFFSET || f[12..14] != [0x08, 0x00] || f[ETH_LEN] != 0x45 {
        return None;
    }
    let ip = &f[ETH_LEN..ETH_LEN + IPV4_LEN];
    let udp = &f[ETH_LEN + IPV4_LEN..PAYLOAD_OFFSET];
    let mac = |o: usize| -> [u8; 6] { f[o..o + 6].try_into().expect("6 bytes") };
    let ipv4 = |o: usize| Ipv4Addr::new(ip[o], ip[o + 1], ip[o + 2], ip[o + 3]);
    let port = |o: usize| u16::from_be_bytes([udp[o], udp[o + 1]]);
    let len = (port(4) as usize).checked_sub(UDP_LEN)?;
    let payload = f.get(PAYLOAD_OFFSET..PAYLOAD_OFFSET + len)?;
    let checksum_ok = u16::from_be_bytes([ip[10], ip[11]]) == ipv4_checksum(ip);
    Some((
        Endpoint { mac: mac(6), ip: ipv4(12), port: port(0) },
        Endpoint { mac: mac(0), ip: ipv4(16), port: port(2) },
        payload,
        checksum_ok,
    ))
}

/// Lowercase hex of `b`, for test messages.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The bytes of a hex string (panics on anything else: test input).
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// `(name, bytes)` of every vector of a golden file (`crates/wire/golden/*.json`).
pub fn golden_vectors(json: &str) -> Vec<(String, Vec<u8>)> {
    let v: serde_json::Value = serde_json::from_str(json).expect("golden json");
    v.as_array()
        .expect("array")
        .iter()
        .map(|g| (g["name"].as_str().expect("name").to_string(), unhex(g["hex"].as_str().expect("hex"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_frame_parses_back_with_a_valid_checksum() {
        let a = Endpoint { mac: [2, 0, 0, 0, 0, 1], ip: Ipv4Addr::new(10, 0, 0, 1), port: 4000 };
        let b = Endpoint { mac: [2, 0, 0, 0, 0, 2], ip: Ipv4Addr::new(10, 0, 0, 2), port: 9999 };
        let f = udp_frame(a, b, b"hello", 60);
        assert_eq!(f.len(), 60);
        let (src, dst, payload, ok) = parse(&f).unwrap();
        assert_eq!((src, dst, payload, ok), (a, b, &b"hello"[..], true));
    }
}
