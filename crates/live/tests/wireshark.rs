//! The Wireshark dissectors (`tools/wireshark/innet.lua`) decode every innet
//! wire format exactly as the Rust decoders do.
//!
//! Packets: the golden vectors of every format (`crates/wire/golden`), every
//! prefix of each valid one, and seeded random mutations of them, each in
//! Ethernet/IPv4/UDP: on the format's default port, on a port innet does not
//! use (the dissectors' heuristics), and behind the live runtime's origin
//! shim ([`add_origin_shim`], IPv4 and IPv6 origins), plus malformed shims.
//! tshark runs the dissectors over the pcap file (PDML), and packet by packet
//! every field it shows is compared with what `innet_wire` decodes from the
//! same bytes: value, byte position and size, the names of op types,
//! statuses and message types, each flag bit, every op and every stack
//! address, the Paxos value envelope as `Envelope::from_value` reads it; for
//! malformed bytes, the `DecodeError` name, which the dissector must also
//! raise as an expert-info error. No packet may raise a Lua error.
//!
//! The layouts are docs/wire.md's: the transaction header of Gotthard
//! (section 3.5, Figure 5, in the field split of its reference code), the
//! Paxos header of CAANS (section 3.1, Figure 5, in P4xos's layout), NetCRAQ
//! (section III-A2) and NetChain (section 4, its address stack).
//!
//! Without tshark the test prints `SKIPPED` and passes, except under
//! `CI=true` (scripts/setup.sh installs it).

#[path = "../../wire/tests/common/mod.rs"]
mod golden;

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

use innet_live::switch::{add_origin_shim, split_origin_shim, ORIGIN_SHIM_MAGIC};
use innet_paxos::envelope::Envelope;
use innet_wire::{netchain, netcraq, paxos, txn};

const TEST: &str = "wireshark_dissectors_decode_like_the_rust_decoders";

/// A UDP port no innet format and no Wireshark dissector is registered on.
const UNKNOWN_PORT: u16 = 60050;
/// The source port of every frame (no dissector is registered on it either).
const SOURCE_PORT: u16 = 60100;
/// Ethernet + IPv4 + UDP headers in front of the payload.
const PAYLOAD_AT: usize = 14 + 20 + 8;
/// Random mutations per valid golden vector and port.
const MUTATIONS: usize = 12;
const SEED: u64 = 0x1dee_7c0d_e5ee_d001;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Txn,
    Paxos,
    Craq,
    Chain,
}

impl Format {
    const ALL: [Format; 4] = [Format::Txn, Format::Paxos, Format::Craq, Format::Chain];

    fn golden_file(self) -> &'static str {
        match self {
            Format::Txn => "txn.json",
            Format::Paxos => "paxos.json",
            Format::Craq => "netcraq.json",
            Format::Chain => "netchain.json",
        }
    }

    fn proto(self) -> &'static str {
        match self {
            Format::Txn => "innet_txn",
            Format::Paxos => "innet_paxos",
            Format::Craq => "innet_netcraq",
            Format::Chain => "innet_netchain",
        }
    }

    /// innet's default UDP ports of the format.
    fn ports(self) -> &'static [u16] {
        match self {
            Format::Txn => &[txn::DEFAULT_PORT],
            Format::Paxos => &[paxos::DATAPLANE_PORT, paxos::LEARNER_PORT],
            Format::Craq => &[netcraq::DEFAULT_PORT],
            Format::Chain => &[netchain::DEFAULT_PORT, netchain::REPLY_PORT],
        }
    }

    /// The Rust decoder's verdict: the bytes a valid packet uses, or the
    /// name of the decode error.
    fn decode(self, b: &[u8]) -> Result<usize, &'static str> {
        match self {
            Format::Txn => {
                txn::TxnMsg::decode(b).map(|m| txn::HEADER_LEN + m.ops.len() * txn::OP_LEN).map_err(|e| e.name())
            }
            Format::Paxos => paxos::PaxosMsg::decode(b).map(|_| paxos::PACKET_LEN).map_err(|e| e.name()),
            Format::Craq => netcraq::CraqMsg::decode(b).map(|_| netcraq::LEN).map_err(|e| e.name()),
            Format::Chain => netchain::NcMsg::decode(b).map(|m| m.encode().len()).map_err(|e| e.name()),
        }
    }

    /// Compares what tshark shows of `b` (at frame offset `at`) with the
    /// Rust decoder's reading of it.
    fn check(self, p: &Packet, b: &[u8], at: usize) -> Result<(), String> {
        match self {
            Format::Txn => check_txn(p, b, at),
            Format::Paxos => check_paxos(p, b, at),
            Format::Craq => check_craq(p, b, at),
            Format::Chain => check_chain(p, b, at),
        }
    }
}

/// The format `b` is an exact, valid packet of (valid, no trailing bytes):
/// what the dissectors' heuristics claim. The formats' lengths do not
/// overlap, so at most one matches.
fn exact_format(b: &[u8]) -> Option<Format> {
    let matches: Vec<Format> = Format::ALL.into_iter().filter(|f| f.decode(b) == Ok(b.len())).collect();
    assert!(matches.len() <= 1, "{b:02x?} is an exact packet of {matches:?}");
    matches.first().copied()
}

const INNET_PROTOS: [&str; 5] = ["innet_txn", "innet_paxos", "innet_netcraq", "innet_netchain", "innet_shim"];

/// What tshark must show for one frame.
#[derive(Debug)]
enum Expect {
    /// The format's dissector decodes the payload (after the shim, if any).
    Decoded { format: Format, shim: bool },
    /// A well-formed shim whose payload is no exact packet of any format, on
    /// a port of no format: an expert-info error on the shim.
    ShimUnknownPayload,
    /// A malformed shim, with the dissector's error name.
    ShimMalformed(&'static str),
    /// No innet dissector claims the packet.
    Unclaimed,
}

struct Case {
    label: String,
    port: u16,
    payload: Vec<u8>,
    expect: Expect,
}

/// The name the dissector gives a shim `split_origin_shim` rejects (the
/// runtime only counts them, `dropped_bad_shim`, without a reason).
fn shim_error(b: &[u8]) -> &'static str {
    match b.get(ORIGIN_SHIM_MAGIC.len()) {
        Some(4 | 6) | None => "truncated",
        Some(_) => "unknown_family",
    }
}

/// What the dissectors must make of `b` on UDP port `port`: on a format's
/// port that format, elsewhere the format `b` is an exact packet of (the
/// heuristics); behind a shim the same for the shim's payload.
fn expect(port: u16, b: &[u8]) -> Expect {
    let port_format = Format::ALL.into_iter().find(|f| f.ports().contains(&port));
    if b.is_empty() {
        // UDP hands no dissector an empty payload.
        return Expect::Unclaimed;
    }
    if !b.starts_with(&ORIGIN_SHIM_MAGIC) {
        return match port_format.or_else(|| exact_format(b)) {
            Some(format) => Expect::Decoded { format, shim: false },
            None => Expect::Unclaimed,
        };
    }
    let Some((_, len)) = split_origin_shim(b) else { return Expect::ShimMalformed(shim_error(b)) };
    let payload = &b[len..];
    match exact_format(payload).or(port_format) {
        Some(format) if !payload.is_empty() => Expect::Decoded { format, shim: true },
        _ => Expect::ShimUnknownPayload,
    }
}

struct Cases(Vec<Case>);

impl Cases {
    fn add(&mut self, label: &str, port: u16, b: &[u8]) {
        let label = format!("{label} on port {port}");
        self.0.push(Case { label, port, payload: b.to_vec(), expect: expect(port, b) });
    }
}

#[derive(serde::Deserialize)]
struct Vector {
    name: String,
    hex: String,
}

/// xorshift64: the mutations are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// 1-3 bytes set to random values, sometimes random bytes appended.
fn mutate(rng: &mut Rng, b: &[u8]) -> Vec<u8> {
    let mut m = b.to_vec();
    for _ in 0..1 + rng.below(3) {
        let i = rng.below(m.len());
        // Small values half the time: they hit the edges of codes and counts.
        m[i] = if rng.below(2) == 0 { rng.below(12) as u8 } else { rng.next() as u8 };
    }
    if rng.below(4) == 0 {
        for _ in 0..1 + rng.below(8) {
            m.push(rng.next() as u8);
        }
    }
    m
}

fn set(b: &mut [u8], i: usize, v: u8) {
    if let Some(x) = b.get_mut(i) {
        *x = v;
    }
}

/// Makes a packet malformed in one way.
type Fault = fn(&mut Vec<u8>);

/// A golden vector of each format and faults that make it malformed, each
/// alone naming a different error. Every subset of them applied together (in
/// this order) checks that the dissector names the error the Rust decoder
/// finds first.
fn faults(format: Format) -> (&'static str, Vec<Fault>) {
    match format {
        Format::Txn => (
            "request_value_write",
            vec![
                |b| set(b, 11, 4), // unknown_status
                |b| {
                    set(b, 9, 0); // bad_fragment
                    set(b, 10, 3)
                },
                |b| set(b, 13 + 21, 6), // unknown_op_type (second op)
                |b| set(b, 12, 3),      // ops_beyond_packet
                |b| set(b, 12, 8),      // too_many_ops
                |b| b.truncate(12),     // truncated
            ],
        ),
        Format::Paxos => (
            "acceptor_2b",
            vec![
                |b| set(b, 1, 11),  // unknown_msgtype
                |b| set(b, 15, 33), // value_too_long
                |b| b.truncate(47), // truncated
            ],
        ),
        Format::Craq => (
            "write",
            vec![
                |b| set(b, 0, 7),   // unknown_op
                |b| b.truncate(20), // truncated
            ],
        ),
        Format::Chain => (
            "write_req_4_chain",
            vec![
                |b| set(b, 21, 3),                       // chain_count_mismatch
                |b| set(b, 20, 4),                       // unknown_op
                |b| b.truncate(57),                      // truncated (fixed part)
                |b| (16..44).for_each(|i| set(b, i, 1)), // chain_too_long
                |b| b.truncate(10),                      // truncated (stack)
            ],
        ),
    }
}

fn build_cases() -> Vec<Case> {
    let mut cases = Cases(Vec::new());
    let mut rng = Rng(SEED);
    let origins: [SocketAddr; 2] = ["10.0.0.7:5000".parse().unwrap(), "[2001:db8::7]:40123".parse().unwrap()];
    for format in Format::ALL {
        let port = format.ports()[0];
        let vectors: Vec<Vector> = golden::load(format.golden_file());
        let (fault_base, fault_list) = faults(format);
        for (k, v) in vectors.iter().enumerate() {
            let b = golden::unhex(&v.hex);
            let name = format!("{} {}", format.golden_file(), v.name);
            for &p in format.ports().iter().chain(&[UNKNOWN_PORT]) {
                cases.add(&name, p, &b);
            }
            let origin = origins[k % origins.len()];
            let shimmed = add_origin_shim(origin, &b);
            for p in [port, UNKNOWN_PORT] {
                cases.add(&format!("{name} shimmed from {origin}"), p, &shimmed);
            }
            if v.name == fault_base {
                for subset in 1..1u32 << fault_list.len() {
                    let mut m = b.clone();
                    for (i, fault) in fault_list.iter().enumerate() {
                        if subset & 1 << i != 0 {
                            fault(&mut m);
                        }
                    }
                    cases.add(&format!("{name} with faults {subset:#b}"), port, &m);
                }
                // Every prefix of a shimmed packet: the shim, then its payload, cut short.
                for n in 1..shimmed.len() {
                    for p in [port, UNKNOWN_PORT] {
                        cases.add(&format!("{name} shimmed from {origin} cut to {n} bytes"), p, &shimmed[..n]);
                    }
                }
            }
            if format.decode(&b).is_err() {
                continue;
            }
            for n in 1..b.len() {
                cases.add(&format!("{name} cut to {n} bytes"), port, &b[..n]);
            }
            for i in 0..MUTATIONS {
                for p in [port, UNKNOWN_PORT] {
                    let m = mutate(&mut rng, &b);
                    cases.add(&format!("{name} mutation {i} ({})", hex(&m)), p, &m);
                }
            }
        }
    }
    // Malformed shims: the runtime drops them (`split_origin_shim` is None).
    let magic = ORIGIN_SHIM_MAGIC.to_vec();
    let bad: [(&str, Vec<u8>); 3] = [
        ("family 5", [&magic[..], &[5, 10, 0, 0, 1, 0x13, 0x88]].concat()),
        ("family 0 before a txn packet", [&magic[..], &[0], &[0; 13]].concat()),
        ("IPv6 origin cut short", [&magic[..], &[6], &[0x20; 15]].concat()),
    ];
    for (label, b) in bad {
        assert_eq!(split_origin_shim(&b), None, "{label}: the runtime accepts it");
        for port in [UNKNOWN_PORT, txn::DEFAULT_PORT] {
            cases.add(&format!("malformed shim: {label}"), port, &b);
        }
    }
    cases.0
}

// ---------------------------------------------------------------------------
// pcap

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Ethernet/IPv4/UDP around `payload`. Every frame has its own source
/// address, so no conversation one dissector sets up carries over to the
/// next frame.
fn frame(i: usize, dport: u16, payload: &[u8]) -> Vec<u8> {
    let src = Ipv4Addr::from(0xac10_0000 + i as u32);
    let dst = Ipv4Addr::new(10, 0, 0, 2);
    let mut f = Vec::with_capacity(PAYLOAD_AT + payload.len());
    f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&((20 + 8 + payload.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    let sum = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&SOURCE_PORT.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]); // no UDP checksum (allowed over IPv4)
    f.extend_from_slice(payload);
    f
}

fn write_pcap(path: &Path, cases: &[Case]) {
    let mut out = Vec::new();
    // Classic pcap, microsecond timestamps, LINKTYPE_ETHERNET.
    out.extend_from_slice(&0xa1b2_c3d4_u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, c) in cases.iter().enumerate() {
        let f = frame(i, c.port, &c.payload);
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&f);
    }
    std::fs::write(path, out).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

// ---------------------------------------------------------------------------
// PDML: one `<field>` or `<proto>` element per line

#[derive(Debug, Default)]
struct Field {
    name: String,
    show: String,
    showname: String,
    value: String,
    pos: usize,
    size: usize,
}

#[derive(Debug, Default)]
struct Packet {
    fields: Vec<Field>,
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').map(|j| i + j).unwrap_or(rest.len() - 1);
        let entity = &rest[i + 1..end];
        let c = match entity {
            "quot" => Some('"'),
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "apos" => Some('\''),
            e if e.starts_with("#x") => u32::from_str_radix(&e[2..], 16).ok().and_then(char::from_u32),
            e if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match c {
            Some(c) => out.push(c),
            None => out.push_str(&rest[i..=end]),
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The attributes of one element line.
fn element(line: &str) -> Field {
    let mut f = Field::default();
    let mut rest = line;
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].rsplit(' ').next().unwrap_or("");
        let after = &rest[eq + 2..];
        let end = after.find('"').unwrap_or(after.len());
        let value = unescape(&after[..end]);
        match key {
            "name" => f.name = value,
            "show" => f.show = value,
            "showname" => f.showname = value,
            "value" => f.value = value,
            "pos" => f.pos = value.parse().unwrap_or(usize::MAX),
            "size" => f.size = value.parse().unwrap_or(usize::MAX),
            _ => {}
        }
        rest = &after[(end + 1).min(after.len())..];
    }
    f
}

fn parse_pdml(text: &str) -> Vec<Packet> {
    let mut packets = Vec::new();
    let mut current: Option<Packet> = None;
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("<packet>") {
            current = Some(Packet::default());
        } else if line.starts_with("</packet>") {
            packets.extend(current.take());
        } else if line.starts_with("<field ") || line.starts_with("<proto ") {
            if let Some(p) = current.as_mut() {
                p.fields.push(element(line));
            }
        }
    }
    packets
}

// ---------------------------------------------------------------------------
// Comparing fields

impl Packet {
    fn all(&self, name: &str) -> Vec<&Field> {
        self.fields.iter().filter(|f| f.name == name).collect()
    }
    fn has(&self, name: &str) -> bool {
        self.fields.iter().any(|f| f.name == name)
    }
    fn one(&self, name: &str) -> Result<&Field, String> {
        match self.all(name)[..] {
            [f] => Ok(f),
            ref fs => Err(format!("{} times field {name}", fs.len())),
        }
    }
    fn absent(&self, name: &str) -> Result<(), String> {
        match self.has(name) {
            true => Err(format!("field {name} is shown, should not be")),
            false => Ok(()),
        }
    }
    /// As many `name` fields as `n`.
    fn many(&self, name: &str, n: usize) -> Result<Vec<&Field>, String> {
        let fs = self.all(name);
        match fs.len() == n {
            true => Ok(fs),
            false => Err(format!("{} times field {name}, want {n}", fs.len())),
        }
    }
}

impl Field {
    fn at(&self, pos: usize, size: usize) -> Result<&Field, String> {
        match (self.pos, self.size) == (pos, size) {
            true => Ok(self),
            false => Err(format!("{} at {}+{}, want {pos}+{size}", self.name, self.pos, self.size)),
        }
    }
    /// The number tshark shows (decimal, or 0x-hex for hex fields).
    fn num(&self, want: i128, pos: usize, size: usize) -> Result<(), String> {
        self.at(pos, size)?;
        let got = match self.show.strip_prefix("0x") {
            Some(h) => i128::from_str_radix(h, 16).ok(),
            None => self.show.parse().ok(),
        };
        match got == Some(want) {
            true => Ok(()),
            false => Err(format!("{} shows {:?}, want {want}", self.name, self.show)),
        }
    }
    /// A code shown with its name, `NAME (code)`.
    fn named(&self, code: i128, name: &str, pos: usize, size: usize) -> Result<(), String> {
        self.num(code, pos, size)?;
        match self.showname.contains(&format!("{name} ({code})")) {
            true => Ok(()),
            false => Err(format!("{} reads {:?}, want the name {name} ({code})", self.name, self.showname)),
        }
    }
    fn bytes(&self, want: &[u8], pos: usize) -> Result<(), String> {
        self.at(pos, want.len())?;
        match self.value == hex(want) {
            true => Ok(()),
            false => Err(format!("{} has bytes {}, want {}", self.name, self.value, hex(want))),
        }
    }
    fn text(&self, want: &str, pos: usize, size: usize) -> Result<(), String> {
        self.at(pos, size)?;
        match self.show == want {
            true => Ok(()),
            false => Err(format!("{} shows {:?}, want {want:?}", self.name, self.show)),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// The protocol item covers the whole payload; the error field and the
/// expert-info error are there exactly when the Rust decoder fails, with its
/// error's name.
fn check_verdict(p: &Packet, proto: &str, b: &[u8], at: usize, verdict: Result<usize, &str>) -> Result<(), String> {
    p.one(proto)?.at(at, b.len())?;
    let (error, expert) = (format!("{proto}.error"), format!("{proto}.malformed"));
    match verdict {
        Ok(used) => {
            p.absent(&error)?;
            p.absent(&expert)?;
            let trailing = format!("{proto}.trailing");
            match used < b.len() {
                true => p.one(&trailing)?.bytes(&b[used..], at + used),
                false => p.absent(&trailing),
            }
        }
        Err(name) => {
            let f = p.one(&error)?;
            if f.show != name {
                return Err(format!("{error} is {:?}, the Rust decoder says {name}", f.show));
            }
            p.one(&expert).map(|_| ())
        }
    }
}

fn check_txn(p: &Packet, b: &[u8], at: usize) -> Result<(), String> {
    check_verdict(p, "innet_txn", b, at, Format::Txn.decode(b))?;
    let Ok(m) = txn::TxnMsg::decode(b) else { return Ok(()) };
    let flags = m.flags.0;
    p.one("innet_txn.flags")?.num(flags.into(), at, 1)?;
    p.one("innet_txn.flags.msg_type")?.num(m.flags.is_response().into(), at, 1)?;
    p.one("innet_txn.flags.from_switch")?.num(m.flags.from_switch().into(), at, 1)?;
    p.one("innet_txn.flags.reset")?.num(m.flags.reset().into(), at, 1)?;
    p.one("innet_txn.flags.store_commit")?.num(m.flags.store_commit().into(), at, 1)?;
    p.one("innet_txn.flags.reserved")?.num((flags & 0x0f).into(), at, 1)?;
    p.one("innet_txn.cl_id")?.num(m.cl_id.into(), at + 1, 4)?;
    p.one("innet_txn.req_id")?.num(m.req_id.into(), at + 5, 4)?;
    p.one("innet_txn.frag_seq")?.num(m.frag_seq.into(), at + 9, 1)?;
    p.one("innet_txn.frag_cnt")?.num(m.frag_cnt.into(), at + 10, 1)?;
    p.one("innet_txn.status")?.named(m.status as i128, m.status.name(), at + 11, 1)?;
    p.one("innet_txn.op_cnt")?.num(m.ops.len() as i128, at + 12, 1)?;
    let n = m.ops.len();
    let (ops, types) = (p.many("innet_txn.op", n)?, p.many("innet_txn.op.type", n)?);
    let (keys, values) = (p.many("innet_txn.op.key", n)?, p.many("innet_txn.op.value", n)?);
    for (i, op) in m.ops.iter().enumerate() {
        let o = at + txn::HEADER_LEN + i * txn::OP_LEN;
        ops[i].at(o, txn::OP_LEN)?;
        types[i].named(op.kind as i128, op.kind.name(), o, 1)?;
        keys[i].num(op.key.into(), o + 1, 4)?;
        values[i].bytes(&op.value.0, o + 5)?;
    }
    Ok(())
}

fn check_paxos(p: &Packet, b: &[u8], at: usize) -> Result<(), String> {
    check_verdict(p, "innet_paxos", b, at, Format::Paxos.decode(b))?;
    let Ok(m) = paxos::PaxosMsg::decode(b) else { return Ok(()) };
    p.one("innet_paxos.msgtype")?.named(m.msgtype as i128, m.msgtype.name(), at, 2)?;
    p.one("innet_paxos.inst")?.num(m.inst.into(), at + 2, 4)?;
    // Rounds are `epoch << 8 | issuer` (docs/wire.md).
    for (name, round, off) in [("rnd", m.rnd, 6), ("vrnd", m.vrnd, 8)] {
        p.one(&format!("innet_paxos.{name}"))?.num(round.into(), at + off, 2)?;
        p.one(&format!("innet_paxos.{name}.epoch"))?.num((round >> 8).into(), at + off, 2)?;
        p.one(&format!("innet_paxos.{name}.issuer"))?.num((round & 0xff).into(), at + off, 2)?;
    }
    p.one("innet_paxos.acptid")?.num(m.acptid.into(), at + 10, 2)?;
    p.one("innet_paxos.value_len")?.num(m.value.len.into(), at + 12, 4)?;
    p.one("innet_paxos.value")?.bytes(&m.value.bytes, at + 16)?;
    match Envelope::from_value(&m.value) {
        Some(e) => {
            p.one("innet_paxos.envelope")?.at(at + 16, m.value.len as usize)?;
            p.one("innet_paxos.envelope.proposer")?.num(e.proposer.into(), at + 16, 4)?;
            p.one("innet_paxos.envelope.request")?.num(e.request.into(), at + 20, 4)?;
            match e.payload().is_empty() {
                true => p.absent("innet_paxos.envelope.payload"),
                false => p.one("innet_paxos.envelope.payload")?.bytes(e.payload(), at + 24),
            }
        }
        None => p.absent("innet_paxos.envelope"),
    }
}

fn check_craq(p: &Packet, b: &[u8], at: usize) -> Result<(), String> {
    check_verdict(p, "innet_netcraq", b, at, Format::Craq.decode(b))?;
    let Ok(m) = netcraq::CraqMsg::decode(b) else { return Ok(()) };
    p.one("innet_netcraq.kv_op")?.named(m.op as i128, m.op.name(), at, 1)?;
    p.one("innet_netcraq.key")?.num(m.key.into(), at + 1, 4)?;
    p.one("innet_netcraq.value")?.bytes(&m.value.0, at + 5)
}

fn check_chain(p: &Packet, b: &[u8], at: usize) -> Result<(), String> {
    check_verdict(p, "innet_netchain", b, at, Format::Chain.decode(b))?;
    let Ok(m) = netchain::NcMsg::decode(b) else { return Ok(()) };
    let depth = m.chain.len();
    let addrs = p.many("innet_netchain.addr", depth)?;
    for (i, a) in m.chain.iter().enumerate() {
        addrs[i].text(&Ipv4Addr::from(*a).to_string(), at + i * netchain::ADDR_LEN, netchain::ADDR_LEN)?;
    }
    // A write reply has no stack; anything else its addresses and terminator.
    let entries = if m.op == netchain::NcOp::WriteReply { 0 } else { depth + 1 };
    if entries == 0 {
        p.absent("innet_netchain.stack")?;
        p.absent("innet_netchain.stack_end")?;
    } else {
        p.one("innet_netchain.stack")?.at(at, entries * netchain::ADDR_LEN)?;
        p.one("innet_netchain.stack_end")?.num(0, at + depth * netchain::ADDR_LEN, netchain::ADDR_LEN)?;
    }
    let f = at + entries * netchain::ADDR_LEN;
    p.one("innet_netchain.op")?.named(m.op as i128, m.op.name(), f, 1)?;
    p.one("innet_netchain.sc")?.num(entries as i128, f + 1, 1)?;
    p.one("innet_netchain.seq")?.num(m.seq.into(), f + 2, 2)?;
    p.one("innet_netchain.key")?.bytes(&m.key, f + 4)?;
    p.one("innet_netchain.value")?.bytes(&m.value.0, f + 20)?;
    p.one("innet_netchain.vgroup")?.num(m.vgroup.into(), f + 36, 2)
}

/// The shim's fields as `split_origin_shim` reads them; its length.
fn check_shim(p: &Packet, b: &[u8]) -> Result<usize, String> {
    let (origin, len) = split_origin_shim(b).ok_or("the runtime finds no shim")?;
    p.one("innet_shim")?.at(PAYLOAD_AT, len)?;
    p.one("innet_shim.magic")?.bytes(&ORIGIN_SHIM_MAGIC, PAYLOAD_AT)?;
    let family = p.one("innet_shim.family")?;
    let a = PAYLOAD_AT + ORIGIN_SHIM_MAGIC.len() + 1;
    match origin.ip() {
        IpAddr::V4(ip) => {
            family.named(4, "IPv4", a - 1, 1)?;
            p.one("innet_shim.origin_ipv4")?.text(&ip.to_string(), a, 4)?;
            p.absent("innet_shim.origin_ipv6")?;
        }
        IpAddr::V6(ip) => {
            family.named(6, "IPv6", a - 1, 1)?;
            p.one("innet_shim.origin_ipv6")?.text(&ip.to_string(), a, 16)?;
            p.absent("innet_shim.origin_ipv4")?;
        }
    }
    p.one("innet_shim.origin_port")?.num(origin.port().into(), PAYLOAD_AT + len - 2, 2)?;
    p.absent("innet_shim.error")?;
    Ok(len)
}

/// Exactly the innet protocols `want` are in the packet.
fn only_protos(p: &Packet, want: &[&str]) -> Result<(), String> {
    let shown: Vec<&str> = INNET_PROTOS.into_iter().filter(|name| p.has(name)).collect();
    match shown == want {
        true => Ok(()),
        false => Err(format!("innet protocols shown: {shown:?}, want {want:?}")),
    }
}

fn check_case(c: &Case, p: &Packet) -> Result<(), String> {
    if let Some(f) = p.fields.iter().find(|f| f.name.starts_with("_ws.lua")) {
        if f.name != "_ws.lua.fake" {
            return Err(format!("Lua error: {}", f.showname));
        }
    }
    match c.expect {
        Expect::Decoded { format, shim: false } => {
            only_protos(p, &[format.proto()])?;
            format.check(p, &c.payload, PAYLOAD_AT)
        }
        Expect::Decoded { format, shim: true } => {
            only_protos(p, &[format.proto(), "innet_shim"])?;
            let len = check_shim(p, &c.payload)?;
            p.absent("innet_shim.unknown_payload")?;
            format.check(p, &c.payload[len..], PAYLOAD_AT + len)
        }
        Expect::ShimUnknownPayload => {
            only_protos(p, &["innet_shim"])?;
            check_shim(p, &c.payload)?;
            p.one("innet_shim.unknown_payload").map(|_| ())
        }
        Expect::ShimMalformed(name) => {
            only_protos(p, &["innet_shim"])?;
            p.one("innet_shim.error")?.text(name, PAYLOAD_AT, 0)?;
            p.one("innet_shim.malformed").map(|_| ())
        }
        Expect::Unclaimed => only_protos(p, &[]),
    }
}

/// One line straight to stderr, past libtest's capture, so scripts/test.sh
/// sees it in the log of a passing run.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn lua_script() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/wireshark/innet.lua");
    path.canonicalize().unwrap_or(path)
}

#[test]
fn wireshark_dissectors_decode_like_the_rust_decoders() {
    if Command::new("tshark").arg("--version").output().is_err() {
        say(&format!("SKIPPED: {TEST}: tshark not installed (apt install tshark)"));
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{TEST} skipped under CI=true: scripts/setup.sh installs tshark"
        );
        return;
    }
    let cases = build_cases();
    let dir = std::env::temp_dir().join(format!("innet-wireshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("golden.pcap");
    write_pcap(&pcap, &cases);

    // A fresh HOME: no personal preferences or plugins (another copy of
    // innet.lua, say) change what tshark shows.
    let out = Command::new("tshark")
        .arg("-n")
        .arg("-X")
        .arg(format!("lua_script:{}", lua_script().display()))
        .arg("-r")
        .arg(&pcap)
        .args(["-T", "pdml"])
        .env("HOME", &dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .output()
        .expect("run tshark");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark failed: {stderr}");
    assert!(!stderr.contains("Lua"), "tshark reports a Lua problem: {stderr}");
    let packets = parse_pdml(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(packets.len(), cases.len(), "tshark shows {} packets of {}", packets.len(), cases.len());

    let mut failures = Vec::new();
    let mut decoded = [0usize; 4];
    for (i, (c, p)) in cases.iter().zip(&packets).enumerate() {
        match check_case(c, p) {
            Ok(()) => {
                if let Expect::Decoded { format, .. } = c.expect {
                    decoded[Format::ALL.iter().position(|f| *f == format).unwrap()] += 1;
                }
            }
            Err(e) => failures.push(format!("frame {}: {}: {e}", i + 1, c.label)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} frames differ (pcap kept in {}; look with `tshark -X lua_script:{} -r {} -V`):\n{}",
        failures.len(),
        cases.len(),
        pcap.display(),
        lua_script().display(),
        pcap.display(),
        failures[..failures.len().min(30)].join("\n")
    );
    // The test must have reached every format and every path.
    for (f, n) in Format::ALL.iter().zip(decoded) {
        assert!(n >= 50, "only {n} frames decoded as {f:?}");
    }
    let count = |e: fn(&Case) -> bool| cases.iter().filter(|c| e(c)).count();
    assert!(count(|c| matches!(c.expect, Expect::Decoded { shim: true, .. })) >= 100);
    assert!(count(|c| c.port == UNKNOWN_PORT && matches!(c.expect, Expect::Decoded { shim: false, .. })) >= 40);
    assert!(count(|c| matches!(c.expect, Expect::ShimUnknownPayload)) >= 20);
    assert!(count(|c| matches!(c.expect, Expect::ShimMalformed("truncated"))) >= 10);
    assert!(count(|c| matches!(c.expect, Expect::ShimMalformed("unknown_family"))) >= 2);
    std::fs::remove_dir_all(&dir).ok();
    say(&format!("WIRESHARK {} frames decoded by tshark as by innet_wire ({decoded:?} per format)", cases.len()));
}
