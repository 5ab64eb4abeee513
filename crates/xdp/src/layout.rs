//! The shared headers (`bpf/include/*.h`) seen from Rust.
//!
//! `build.rs` turns every numeric `#define INNET_*` into a constant in
//! [`consts`]; the `const _` assertions below fail the *Rust* build if the
//! header and `innet-wire` / `innet-txn` / `innet-core` ever disagree, as the
//! header's `_Static_assert`s fail the C build. What a const cannot check
//! (counter indexes against the references' counter names, map names and
//! sizes in the compiled objects) the unit tests here and in `txn`, `paxos`
//! and `chain` do. Map values are encoded and
//! decoded here by hand at the offsets of the C structs (no `unsafe`
//! transmutes); their sizes are asserted against the header's.

use innet_core::Verdict;
use innet_txn::switch::{CacheEntry, ClientEntry, Mode};
use innet_wire::txn::{self as wire, DecodeError, OpType, Status, Value, VALUE_LEN};

/// Constants generated from the shared headers.
#[allow(dead_code)]
pub mod consts {
    include!(concat!(env!("OUT_DIR"), "/bpf_consts.rs"));
}
use consts as c;

macro_rules! same {
    ($c:expr, $rust:expr) => {
        const _: () = assert!($c == $rust as i64, "bpf/include header and Rust disagree");
    };
}
pub(crate) use same;

same!(c::TXN_HEADER_LEN, wire::HEADER_LEN);
same!(c::TXN_VALUE_LEN, wire::VALUE_LEN);
same!(c::TXN_OP_LEN, wire::OP_LEN);
same!(c::TXN_MAX_OPS_PER_PACKET, wire::MAX_OPS_PER_PACKET);
same!(c::TXN_MAX_PACKET_LEN, wire::MAX_PACKET_LEN);
same!(c::TXN_DEFAULT_PORT, wire::DEFAULT_PORT);
same!(c::TXN_OFF_FLAGS, wire::offset::FLAGS);
same!(c::TXN_OFF_CL_ID, wire::offset::CL_ID);
same!(c::TXN_OFF_REQ_ID, wire::offset::REQ_ID);
same!(c::TXN_OFF_FRAG_SEQ, wire::offset::FRAG_SEQ);
same!(c::TXN_OFF_FRAG_CNT, wire::offset::FRAG_CNT);
same!(c::TXN_OFF_STATUS, wire::offset::STATUS);
same!(c::TXN_OFF_OP_CNT, wire::offset::OP_CNT);
same!(c::TXN_OFF_OP_TYPE, wire::offset::OP_TYPE);
same!(c::TXN_OFF_OP_KEY, wire::offset::OP_KEY);
same!(c::TXN_OFF_OP_VALUE, wire::offset::OP_VALUE);
same!(c::TXN_FLAG_RESPONSE, wire::Flags::RESPONSE);
same!(c::TXN_FLAG_FROM_SWITCH, wire::Flags::FROM_SWITCH);
same!(c::TXN_FLAG_RESET, wire::Flags::RESET);
same!(c::TXN_FLAG_STORE_COMMIT, wire::Flags::STORE_COMMIT);
same!(c::TXN_OP_NOP, OpType::Nop);
same!(c::TXN_OP_READ, OpType::Read);
same!(c::TXN_OP_WRITE, OpType::Write);
same!(c::TXN_OP_VALUE, OpType::Value);
same!(c::TXN_OP_UPDATED, OpType::Updated);
same!(c::TXN_OP_CPU_PCT, OpType::CpuPct);
same!(c::TXN_STATUS_OK, Status::Ok);
same!(c::TXN_STATUS_ABORT, Status::Abort);
same!(c::TXN_STATUS_OPTIMISTIC_ABORT, Status::OptimisticAbort);
same!(c::TXN_STATUS_BAD_REQUEST, Status::BadRequest);
same!(c::TXN_ERR_TRUNCATED, DecodeError::Truncated);
same!(c::TXN_ERR_TOO_MANY_OPS, DecodeError::TooManyOps);
same!(c::TXN_ERR_OPS_BEYOND_PACKET, DecodeError::OpsBeyondPacket);
same!(c::TXN_ERR_UNKNOWN_OP_TYPE, DecodeError::UnknownOpType);
same!(c::TXN_ERR_UNKNOWN_STATUS, DecodeError::UnknownStatus);
same!(c::TXN_ERR_BAD_FRAGMENT, DecodeError::BadFragment);
same!(c::TXN_ERR_COUNT, DecodeError::ALL.len());
same!(c::TXN_MODE_FORWARD, Mode::Forward);
same!(c::TXN_MODE_READ_CACHE, Mode::ReadCache);
same!(c::TXN_MODE_EARLY_ABORT, Mode::EarlyAbort);
same!(c::TXN_MODE_OPTIMISTIC_ABORT, Mode::OptimisticAbort);
same!(c::VERDICT_DROP, Verdict::Drop.code());
same!(c::VERDICT_UPSTREAM, Verdict::Upstream { flow: 0 }.code());
same!(c::VERDICT_DOWNSTREAM, Verdict::Downstream { flow: 0 }.code());
same!(c::VERDICT_REFLECT, Verdict::Reflect.code());
same!(c::WAYS, innet_core::table::WAYS);
same!(c::CACHE_SLOTS_DEFAULT, innet_txn::switch::CACHE_SLOTS_DEFAULT);
same!(c::CLIENT_SLOTS_DEFAULT, innet_txn::switch::CLIENT_SLOTS_DEFAULT);
same!(c::AWAITING_SPAN_MAX, innet_txn::switch::AWAITING_SPAN_MAX);

/// Slots per set.
pub const WAYS: usize = c::WAYS as usize;

/// Counter names of the BPF program, in `INNET_TXN_CTR_*` order. The first
/// [`SWITCH_COUNTERS`] are `TxnSwitch`'s (same names, same order: checked by
/// a test); the rest exist only in XDP.
pub const COUNTER_NAMES: [&str; c::TXN_CTR_COUNT as usize] = [
    "requests",
    "responses",
    "forwarded",
    "aborted",
    "optimistically_aborted",
    "served_from_cache",
    "confirmed",
    "passed_fragmented",
    "passed_store_commit",
    "passed_duplicate",
    "refused_duplicate",
    "refused_stale",
    "learned_replies",
    "resets",
    "dropped_reply_from_downstream",
    "unlearned_reply_not_awaited",
    "forgot_on_upstream_switch_abort",
    "passed_untracked",
    "dropped_malformed_truncated",
    "dropped_malformed_too_many_ops",
    "dropped_malformed_ops_beyond_packet",
    "dropped_malformed_unknown_op_type",
    "dropped_malformed_unknown_status",
    "dropped_malformed_bad_fragment",
    "xdp_passed_other",
    "auth_refused",
];
/// How many counters the Rust reference has.
pub const SWITCH_COUNTERS: usize = c::TXN_CTR_SWITCH_COUNT as usize;
const _: () = assert!(c::TXN_CTR_DROPPED_MALFORMED + c::TXN_ERR_COUNT == c::TXN_CTR_SWITCH_COUNT);

/// `struct innet_txn_config`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub mode: Mode,
    pub cache_set_bits: u32,
    pub client_set_bits: u32,
    pub udp_port: u16,
    pub client_ifindex: u32,
    pub store_ifindex: u32,
    pub service_ip: std::net::Ipv4Addr,
    pub store_ip: std::net::Ipv4Addr,
    pub client_port_mac: [u8; 6],
    pub client_mac: [u8; 6],
    pub store_port_mac: [u8; 6],
    pub store_mac: [u8; 6],
}

impl Config {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(c::TXN_CONFIG_SIZE as usize);
        for v in [
            self.mode.id() as u32,
            self.cache_set_bits,
            self.client_set_bits,
            self.udp_port as u32,
            self.client_ifindex,
            self.store_ifindex,
        ] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&self.service_ip.octets());
        b.extend_from_slice(&self.store_ip.octets());
        for mac in [self.client_port_mac, self.client_mac, self.store_port_mac, self.store_mac] {
            b.extend_from_slice(&mac);
        }
        assert_eq!(b.len(), c::TXN_CONFIG_SIZE as usize, "struct innet_txn_config layout");
        b
    }
}

/// `struct innet_txn_state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct State {
    pub cache_clock: u32,
    pub client_clock: u32,
    pub generation: u32,
    pub replies_learned: u32,
    pub cache_evictions: u64,
    pub client_evictions: u64,
}

impl State {
    pub fn decode(b: &[u8]) -> State {
        assert_eq!(b.len(), c::TXN_STATE_SIZE as usize, "struct innet_txn_state layout");
        State {
            cache_clock: u32_at(b, 0),
            client_clock: u32_at(b, 4),
            generation: u32_at(b, 8),
            replies_learned: u32_at(b, 12),
            cache_evictions: u64_at(b, 16),
            client_evictions: u64_at(b, 24),
        }
    }
}

/// One table slot as the BPF map holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot<V> {
    pub valid: bool,
    pub key: u32,
    pub stamp: u32,
    pub value: V,
}

pub const CACHE_SLOT_SIZE: usize = c::CACHE_SLOT_SIZE as usize;
pub const CLIENT_SLOT_SIZE: usize = c::CLIENT_SLOT_SIZE as usize;

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_ne_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

fn value_at(b: &[u8], o: usize) -> Value {
    Value(b[o..o + VALUE_LEN].try_into().expect("value"))
}

/// `struct innet_cache_slot`.
pub fn decode_cache_slot(b: &[u8]) -> Slot<CacheEntry> {
    assert_eq!(b.len(), CACHE_SLOT_SIZE);
    Slot {
        valid: u32_at(b, 0) != 0,
        key: u32_at(b, 4),
        stamp: u32_at(b, 8),
        value: CacheEntry {
            generation: u32_at(b, 12),
            learned_from: u32_at(b, 16),
            has_value: b[20] != 0,
            has_pending: b[21] != 0,
            opti: b[22] != 0,
            value: value_at(b, 24),
            pending: value_at(b, 24 + VALUE_LEN),
        },
    }
}

/// `struct innet_client_slot`.
pub fn decode_client_slot(b: &[u8]) -> Slot<ClientEntry> {
    assert_eq!(b.len(), CLIENT_SLOT_SIZE);
    Slot {
        valid: u32_at(b, 0) != 0,
        key: u32_at(b, 4),
        stamp: u32_at(b, 8),
        value: ClientEntry {
            req_id: u32_at(b, 12) as i32,
            forwarded: b[16] != 0,
            awaiting: b[17],
            generation: u16::from_ne_bytes([b[18], b[19]]),
            pinned: b[20] != 0,
        },
    }
}

const _: () = assert!(CACHE_SLOT_SIZE == 24 + 2 * VALUE_LEN);
const _: () = assert!(CLIENT_SLOT_SIZE == 24);

/// Asserts that every header constant `<prefix>NAME` (except the `*COUNT`s)
/// is the index of counter `name` in `names` (the BPF program's counters
/// in map order); `<prefix>DROPPED_MALFORMED` is the first of the
/// `dropped_malformed_<error>` counters, at `DROPPED_MALFORMED +
/// <errors>ERROR` for every error constant. Returns how many counters it
/// checked.
#[cfg(test)]
pub(crate) fn assert_counter_indexes(prefix: &str, errors: Option<&str>, names: &[&str]) -> usize {
    let name_at = |i: i64| names.get(i as usize).copied().unwrap_or("(none)");
    let mut checked = 0;
    for (constant, index) in c::ALL {
        let Some(name) = constant.strip_prefix(prefix) else { continue };
        if name.ends_with("COUNT") {
            continue;
        }
        let want = name.to_lowercase();
        let got = name_at(*index);
        if name == "DROPPED_MALFORMED" {
            let errors = errors.expect("a DROPPED_MALFORMED counter needs its error constants");
            assert!(got.starts_with("dropped_malformed_"), "{constant} = {index} is counter {got}");
            for (e, code) in c::ALL.iter().filter_map(|(n, v)| Some((n.strip_prefix(errors)?, v))) {
                if e == "COUNT" {
                    continue;
                }
                let want = format!("dropped_malformed_{}", e.to_lowercase());
                assert_eq!(name_at(index + code), want, "{constant} + {errors}{e}");
                checked += 1;
            }
        } else {
            assert_eq!(got, want, "{constant} = {index}");
            checked += 1;
        }
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_core::Counters;

    #[test]
    fn counter_names_match_the_rust_switch_in_order() {
        let rust: Vec<&str> =
            innet_txn::switch::SwitchCounters::default().counters().into_iter().map(|(n, _)| n).collect();
        assert_eq!(&COUNTER_NAMES[..SWITCH_COUNTERS], &rust[..]);
    }

    #[test]
    fn counter_constants_name_their_counters() {
        let checked = assert_counter_indexes("TXN_CTR_", Some("TXN_ERR_"), &COUNTER_NAMES);
        assert_eq!(checked, COUNTER_NAMES.len());
    }

    #[test]
    fn op_and_status_maxima_are_the_last_codes() {
        for (max, decodes) in [
            (c::TXN_OP_MAX, &(|b| OpType::from_u8(b).is_some()) as &dyn Fn(u8) -> bool),
            (c::TXN_STATUS_MAX, &|b| Status::from_u8(b).is_some()),
        ] {
            assert!((0..=max as u8).all(decodes), "every code up to {max} decodes");
            assert!(!decodes(max as u8 + 1), "{} does not", max + 1);
        }
    }
}
