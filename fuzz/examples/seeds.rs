//! Writes the committed seed corpora, `fuzz/corpus/<target>/seed-*`: the
//! golden vectors of `crates/wire/golden/` (read here, so a new vector
//! becomes a seed at the next run) and valid messages made by the crates'
//! own encoders and state machines, each framed the way its target splits
//! its input. Seeds give the fuzzer valid packets and short protocol runs to
//! mutate from the first second, instead of searching for a checksum-free
//! but exact header from nothing (kv_decode from an empty corpus stayed at
//! 74 edges for 10 minutes).
//!
//! Run from anywhere, on stable (no libFuzzer needed):
//!
//! ```sh
//! cargo run --manifest-path fuzz/Cargo.toml --example seeds
//! ```
//!
//! It removes the target directories' old `seed-*` files first (never the
//! corpus libFuzzer grew, whose files are named by their SHA-1), so the
//! committed set is exactly what this program writes.

use innet_chain::client::node_addr;
use innet_core::{DataPlane, Outbox, Time};
use innet_paxos::envelope::{Envelope, PackBuilder};
use innet_paxos::{Acceptor, AcceptorConfig, Coordinator, CoordinatorConfig, Proposer, ProposerConfig};
use innet_wire::kv::{self, Message, Reply};
use innet_wire::netchain::{key_from_u32, NcMsg, NcOp};
use innet_wire::netcraq::{CraqMsg, KvOp};
use innet_wire::paxos::{self, MsgType, PaxosMsg, PACKET_LEN};
use innet_wire::txn::{self, Op, Status, TxnMsg, MAX_PACKET_LEN};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One golden record: its name and its string fields (`hex`, `input_hex`,
/// `sender`, `ingress`, ...), in file order.
type Record = (String, BTreeMap<String, String>);

/// The `"key": "string"` pairs of a golden JSON file, grouped into records
/// at each `"name"` (the files' cases are flat objects with a name first).
/// Numbers, arrays and nested objects are skipped: only strings matter here.
fn records(file: &Path) -> Vec<Record> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut strings = Vec::new(); // (string, followed by ':')
    let mut chars = text.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut s = String::new();
        while let Some((_, c)) = chars.next() {
            match c {
                '\\' => s.extend(chars.next().map(|(_, c)| c)),
                '"' => break,
                c => s.push(c),
            }
        }
        while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
            chars.next();
        }
        let key = chars.peek().is_some_and(|&(_, c)| c == ':');
        strings.push((s, key));
    }
    let mut out: Vec<Record> = Vec::new();
    for w in strings.windows(2) {
        let ((k, is_key), (v, v_is_key)) = (&w[0], &w[1]);
        if !is_key || *v_is_key {
            continue;
        }
        if k == "name" {
            out.push((v.clone(), BTreeMap::new()));
        } else if let Some((_, fields)) = out.last_mut() {
            fields.insert(k.clone(), v.clone());
        }
    }
    assert!(!out.is_empty(), "{}: no records", file.display());
    out
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s}");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// The packets (`hex`, else `input_hex`) of a golden file, by record name;
/// not the empty one (libFuzzer tries the empty input itself).
fn golden(dir: &Path, file: &str) -> Vec<(String, Vec<u8>, BTreeMap<String, String>)> {
    records(&dir.join(file))
        .into_iter()
        .filter_map(|(name, f)| {
            let hex = f.get("hex").or(f.get("input_hex"))?.clone();
            Some((name, unhex(&hex), f))
        })
        .filter(|(_, b, _)| !b.is_empty())
        .collect()
}

/// A target's seed directory, emptied of earlier seeds.
struct Seeds {
    dir: PathBuf,
    bytes: usize,
    count: usize,
}

impl Seeds {
    fn new(corpus: &Path, target: &str) -> Seeds {
        let dir = corpus.join(target);
        std::fs::create_dir_all(&dir).expect("create corpus dir");
        for e in std::fs::read_dir(&dir).expect("read corpus dir").flatten() {
            if e.file_name().to_string_lossy().starts_with("seed-") {
                std::fs::remove_file(e.path()).expect("remove old seed");
            }
        }
        Seeds { dir, bytes: 0, count: 0 }
    }

    fn put(&mut self, name: &str, bytes: &[u8]) {
        assert!(!bytes.is_empty(), "{name}: empty seed");
        let path = self.dir.join(format!("seed-{name}"));
        assert!(!path.exists(), "{name}: two seeds of one name");
        std::fs::write(path, bytes).expect("write seed");
        self.bytes += bytes.len();
        self.count += 1;
    }

    fn done(self) {
        println!("{}: {} seeds, {} bytes", self.dir.display(), self.count, self.bytes);
        assert!(self.bytes < 16 * 1024, "a seed set stays a few KB");
    }
}

/// txn_switch's framing: a length byte whose value mod 161 is the length,
/// top bit set for a packet from the store side (possible for packets of at
/// most 94 bytes: 161 + 94 = 255; longer ones arrive from the client side).
fn txn_frame(pkt: &[u8], from_store: bool) -> Vec<u8> {
    let n = pkt.len();
    assert!(n <= MAX_PACKET_LEN);
    let len = if from_store && n + MAX_PACKET_LEN < 255 { n + MAX_PACKET_LEN + 1 } else { n };
    let mut v = vec![len as u8];
    v.extend_from_slice(pkt);
    v
}

fn txn_seeds(golden_dir: &Path, corpus: &Path) {
    let mut decode = Seeds::new(corpus, "txn_decode");
    let mut switch = Seeds::new(corpus, "txn_switch");
    let mut every = Vec::new();
    for (name, b, _) in golden(golden_dir, "txn.json") {
        decode.put(&format!("golden-{name}"), &b);
        if b.len() <= MAX_PACKET_LEN {
            every.extend(txn_frame(&b, false));
        }
    }
    switch.put("golden-txn-all", &every);
    // The optimistic-abort case file is one run through a switch: frame it
    // as one input, each packet from the side the case names.
    let mut run = Vec::new();
    for (_, b, f) in golden(golden_dir, "txn_switch_optimistic_abort.json") {
        run.extend(txn_frame(&b, f.get("ingress").map(String::as_str) == Some("store")));
    }
    switch.put("golden-optimistic-abort-run", &run);
    // Encoder-made: a read-compare-write transaction on two keys, its store
    // commit and abort replies, and the full 7-op packet.
    let v = |s: &str| txn::Value::from_str_padded(s).expect("short");
    let req =
        TxnMsg::request(7, 1, vec![Op::read(2), Op::value(1, v("a")), Op::write(1, v("b")), Op::write(2, v("c"))]);
    let commit = req.reply(Status::Ok, false, vec![Op::updated(1, v("b")), Op::updated(2, v("c"))]);
    let abort = req.reply(Status::Abort, false, vec![Op::value(1, v("z"))]);
    let full = TxnMsg::request(8, 2, (0..7).map(|k| Op::write(k, txn::Value::from_counter(u64::from(k)))).collect());
    for (name, m) in [("rcw", &req), ("rcw-commit", &commit), ("rcw-abort", &abort), ("seven-writes", &full)] {
        decode.put(name, &m.encode());
    }
    let mut run = txn_frame(&req.encode(), false);
    run.extend(txn_frame(&commit.encode(), true));
    run.extend(txn_frame(&req.encode(), false));
    run.extend(txn_frame(&abort.encode(), true));
    switch.put("rcw-commit-retry-abort", &run);
    decode.done();
    switch.done();
}

fn paxos_value(proposer: u32, request: u32, payload: &[u8]) -> paxos::Value {
    Envelope::new(proposer, request, payload).expect("short payload").to_value()
}

fn paxos_seeds(golden_dir: &Path, corpus: &Path) {
    let vectors = golden(golden_dir, "paxos.json");
    let mut decode = Seeds::new(corpus, "paxos_decode");
    for (name, b, _) in &vectors {
        decode.put(&format!("golden-{name}"), b);
    }
    decode.done();

    // paxos_pack: values, raw (at most 32 bytes).
    let mut pack = Seeds::new(corpus, "paxos_pack");
    let mut b = PackBuilder::new(3, 10);
    for p in [&b"put a 1"[..], b"get a", b"del b"] {
        assert!(b.push(p));
    }
    pack.put("packed-3", b.to_value().as_slice());
    let mut one = PackBuilder::new(1, 0);
    assert!(one.push(b"x"));
    pack.put("packed-1", one.to_value().as_slice());
    pack.put("single", paxos_value(1, 1, b"put k v").as_slice());
    pack.put("noop", Envelope::noop(b"").expect("empty").to_value().as_slice());
    pack.put("foreign-short", b"hey");
    pack.done();

    // A short, real Paxos run, as the state machines make it: proposer 1's
    // requests, the coordinator's 2As for them, acceptor 0's votes.
    let mut proposer = Proposer::new(ProposerConfig::new(1, 2, Duration::from_millis(2)));
    let mut coordinator = Coordinator::new(CoordinatorConfig::new(2));
    let mut acceptor = Acceptor::new(AcceptorConfig::new(0, 2));
    let mut out = Outbox::new();
    let mut run = Vec::new(); // (msg, the acceptor id it is voted by)
    for (k, p) in [&b"put k v"[..], b"get k", b"cas k v w"].into_iter().enumerate() {
        proposer.submit(Time(k as u64), p, &mut out);
    }
    for (_, request) in out.drain() {
        let mut a = request.clone();
        coordinator.process(&mut a);
        let mut v = a.clone();
        acceptor.process(&mut v);
        run.push((request, a, v));
    }
    assert!(run.iter().all(|(r, a, v)| {
        let t = |b: &[u8]| PaxosMsg::decode(b).map(|m| m.msgtype);
        (t(r), t(a), t(v)) == (Ok(MsgType::Request), Ok(MsgType::Phase2A), Ok(MsgType::Phase2B))
    }));

    // paxos_vote_counter: byte 0 picks 3 acceptors (a quorum of 2) and a
    // ring of 2 slots; then `len, packet` frames: every acceptor's vote on
    // each instance (so decisions, duplicates and evictions), a late vote.
    let mut counter = Seeds::new(corpus, "paxos_vote_counter");
    let mut input = vec![2u8];
    for (_, _, vote) in &run {
        for acptid in 0..3u16 {
            let mut m = PaxosMsg::decode(vote).expect("a vote");
            m.acptid = acptid;
            input.push(PACKET_LEN as u8);
            input.extend(m.encode());
        }
    }
    input.push(PACKET_LEN as u8);
    input.extend(&run[0].2);
    counter.put("three-acceptors-votes", &input);
    for (name, b, _) in vectors.iter().filter(|(n, _, _)| n.contains("2b") || n == "decided") {
        let mut one = vec![0u8, b.len() as u8];
        one.extend(b);
        counter.put(&format!("golden-{name}"), &one);
    }
    counter.done();

    // paxos_roles: byte 0 (quorum 2, 2 ms timeout, no packing), then
    // `pick, len, packet` frames; `pick % 6` names the sender's class
    // (0 coordinator, 1 backup, 2 acceptor, 3 learner, 4 proposer, 5 an
    // outsider), round issuer `pick % 6 + 1` (bit 7 clear), and bit 6 asks
    // the proposer to submit the packet's first bytes.
    let class_of = |t: MsgType| match t {
        MsgType::Phase2A | MsgType::Phase1A | MsgType::Window => 0u8,
        MsgType::Heartbeat | MsgType::Takeover => 1,
        MsgType::Phase1B | MsgType::Phase2B | MsgType::Decided => 2,
        MsgType::Trim | MsgType::Catchup => 3,
        MsgType::Request => 4,
    };
    let mut roles = Seeds::new(corpus, "paxos_roles");
    let mut input = vec![1u8];
    for (request, a, v) in &run {
        for (pick, b) in [(4u8, request), (0, a), (2, v)] {
            input.extend([pick, b.len() as u8]);
            input.extend(b);
        }
    }
    roles.put("request-2a-2b-run", &input);
    let mut input = vec![1u8];
    for (_, b, _) in &vectors {
        let pick = PaxosMsg::decode(b).map(|m| class_of(m.msgtype)).unwrap_or(5);
        input.extend([pick, b.len() as u8]);
        input.extend(b);
    }
    roles.put("golden-all", &input);
    // The CAANS fixture's cases as one run, each from its sender's class.
    let mut input = vec![1u8];
    for (_, b, f) in golden(golden_dir, "caans_coordinator_acceptor.json") {
        let pick = match f.get("from").map(String::as_str) {
            Some("coordinator") => 0u8,
            Some("backup") => 1,
            Some("learner0" | "learner1") => 3,
            Some("proposer0") => 4,
            _ => 5,
        };
        input.extend([pick, b.len() as u8]);
        input.extend(&b);
    }
    roles.put("golden-caans-fixture-run", &input);
    // The proposer submitting (bit 6) while votes and a takeover arrive.
    let mut input = vec![0x81u8];
    for (request, _, v) in &run {
        input.extend([0x44, request.len() as u8]);
        input.extend(request);
        input.extend([2, v.len() as u8]);
        input.extend(v);
    }
    roles.put("submit-and-votes", &input);
    roles.done();
}

fn chain_seeds(golden_dir: &Path, corpus: &Path) {
    let craq = golden(golden_dir, "netcraq.json");
    let nc = golden(golden_dir, "netchain.json");
    let replica = golden(golden_dir, "netcraq_replica.json");
    let mut decode = Seeds::new(corpus, "chain_decode");
    for (name, b, _) in &craq {
        decode.put(&format!("golden-craq-{name}"), b);
    }
    for (name, b, _) in &nc {
        decode.put(&format!("golden-netchain-{name}"), b);
    }
    decode.done();

    // chain_node: byte 0 picks the node's place (`% 4`: head 0, replica 1,
    // tail 2, removed 3; bit 2 pauses writes), then `sender, len, packet`
    // frames (`sender % 8`: chain node 0..4, 5 a client, 6 upstream).
    let mut node = Seeds::new(corpus, "chain_node");
    let frame = |input: &mut Vec<u8>, sender: u8, b: &[u8]| {
        input.extend([sender, b.len() as u8]);
        input.extend(b);
    };
    // netcraq_replica.json's run, on node 1 of chain [0, 1, 2]: its
    // predecessor is node 0, its tail node 2.
    let mut input = vec![1u8];
    for (_, b, f) in &replica {
        let sender = match f.get("sender").map(String::as_str) {
            Some("predecessor") => 0,
            Some("tail") => 2,
            Some("another_node") => 4,
            _ => 5,
        };
        frame(&mut input, sender, b);
    }
    node.put("golden-craq-replica-run", &input);
    // Each place: a client's write, read and their replies as they travel
    // the chain [0, 1, 2] (NetChain: the address stack shrinking by one per
    // hop; NetCRAQ: the write forwarded, the tail's ACK coming back).
    let addrs: Vec<u32> = (0..3).map(node_addr).collect();
    let value = txn::Value::from_str_padded("v1").expect("short");
    for me in 0..4u8 {
        let mut input = vec![me];
        let hop = usize::from(me.min(2));
        let mut w = NcMsg::write(addrs[hop..].to_vec(), key_from_u32(1), value);
        w.seq = u16::from(me > 0);
        let prev = if me == 0 { 5 } else { me - 1 };
        frame(&mut input, prev, &w.encode());
        let r = NcMsg {
            chain: vec![addrs[2]],
            op: NcOp::ReadReq,
            seq: 0,
            key: key_from_u32(1),
            value: txn::Value::ZERO,
            vgroup: 0,
        };
        frame(&mut input, 5, &r.encode());
        frame(&mut input, prev, &CraqMsg::write(1, value).encode());
        frame(&mut input, 2, &CraqMsg { op: KvOp::Ack, key: 1, value }.encode());
        frame(&mut input, 5, &CraqMsg::read(1).encode());
        node.put(&format!("place-{me}-write-read"), &input);
    }
    node.done();
}

fn kv_seeds(corpus: &Path) {
    use kv::Op as K;
    let mut s = Seeds::new(corpus, "kv_decode");
    let key = || b"user:42".to_vec();
    let msgs = [
        ("put", Message::request(1, 1, K::Put { key: key(), value: b"hello".to_vec() })),
        ("get", Message::request(1, 2, K::Get { key: key() })),
        ("delete", Message::request(2, 3, K::Delete { key: key() })),
        ("cas-absent", Message::request(3, 4, K::Cas { key: key(), expected: None, value: b"a".to_vec() })),
        ("cas", Message::request(3, 5, K::Cas { key: key(), expected: Some(b"a".to_vec()), value: b"b".to_vec() })),
        ("ok", Message::reply(1, 1, Reply::Ok)),
        ("value", Message::reply(1, 2, Reply::Value(b"hello".to_vec()))),
        ("not-found", Message::reply(1, 2, Reply::NotFound)),
        ("cas-failed", Message::reply(3, 5, Reply::CasFailed)),
        ("too-large", Message::reply(4, 6, Reply::TooLarge { len: 1 << 21 })),
        ("expired", Message::reply(4, 7, Reply::Expired)),
        ("busy", Message::reply(4, 8, Reply::Busy)),
        ("invalid", Message::reply(4, 9, Reply::Invalid)),
    ];
    for (name, m) in msgs {
        let b = m.encode().expect("short key and value");
        assert_eq!(Message::decode(&b).as_ref(), Ok(&m), "{name} round-trips");
        s.put(name, &b);
    }
    s.done();
}

fn main() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR"));
    let golden_dir = fuzz.join("../crates/wire/golden");
    let corpus = fuzz.join("corpus");
    txn_seeds(&golden_dir, &corpus);
    paxos_seeds(&golden_dir, &corpus);
    chain_seeds(&golden_dir, &corpus);
    kv_seeds(&corpus);
}
