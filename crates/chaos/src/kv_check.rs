//! A linearizability checker for key-value histories (put, get, delete,
//! compare-and-set), one key at a time: linearizability is local
//! (Herlihy and Wing, "Linearizability: a correctness condition for
//! concurrent objects", TOPLAS 1990, section 3.3), so a history is
//! linearizable iff each key's is.
//!
//! The chain checker (`innet_chain::check`) decides register histories in
//! polynomial time because every write writes a distinct value and a read
//! names its write; a delete (every delete writes "absent") and a CAS (a
//! read and a write in one step) break both assumptions. So this is the
//! search of Wing and Gong ("Testing and verifying concurrent objects",
//! J. Parallel Distrib. Comput. 1993) with the memo of Lowe ("Testing for
//! linearizability", CCPE 2017): from a state (which operations took
//! effect, the key's value), any operation that no pending operation's
//! response precedes may take effect next if its result fits the value;
//! states already explored are not explored again. The search is bounded:
//! at most [`SEARCH_STATES_MAX`] states per key, beyond which the key is
//! reported as not decided (a violation: the check does not pass silently).
//!
//! An operation without a response (timed out, or answered EXPIRED: it
//! may or may not have been applied) takes effect at any time after its
//! invocation or never; a get without a response is left out.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// States explored per key before the key is reported undecided.
pub const SEARCH_STATES_MAX: usize = 2_000_000;

/// What an operation did to its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvOp {
    Put(Vec<u8>),
    Delete,
    Get,
    /// Set to the value if the key held `expected` (`None`: absent).
    Cas {
        expected: Option<Vec<u8>>,
        value: Vec<u8>,
    },
}

/// What the service answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvResult {
    /// A put, delete or a CAS that set.
    Ok,
    /// A get: the value, or `None` (not found).
    Value(Option<Vec<u8>>),
    /// A CAS whose expectation failed.
    CasFailed,
    /// No answer (timed out, or EXPIRED): applied or not.
    Unknown,
}

/// One operation of one client.
#[derive(Clone, Debug)]
pub struct KvRecord {
    pub client: usize,
    pub key: Vec<u8>,
    pub op: KvOp,
    pub invoke: Duration,
    /// `None`: no response ([`KvResult::Unknown`]).
    pub response: Option<Duration>,
    pub result: KvResult,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvCheckSummary {
    pub keys: usize,
    pub operations: usize,
    /// Puts, deletes and CASes that set, acknowledged.
    pub writes_acked: usize,
    /// Operations without a response.
    pub unknown: usize,
    /// States the searches explored, over every key.
    pub states: usize,
}

/// Checks every key's history; `Err` lists the violations.
pub fn check(history: &[KvRecord]) -> Result<KvCheckSummary, Vec<String>> {
    let mut by_key: BTreeMap<&[u8], Vec<&KvRecord>> = BTreeMap::new();
    for r in history {
        by_key.entry(&r.key).or_default().push(r);
    }
    let mut sum = KvCheckSummary { keys: by_key.len(), operations: history.len(), ..Default::default() };
    let mut errors = vec![];
    for (key, ops) in by_key {
        sum.writes_acked += ops
            .iter()
            .filter(|r| r.response.is_some() && !matches!(r.op, KvOp::Get) && r.result == KvResult::Ok)
            .count();
        sum.unknown += ops.iter().filter(|r| r.response.is_none()).count();
        match check_key(&ops) {
            Ok(states) => sum.states += states,
            Err(e) => errors.push(format!("key {}: {e}", String::from_utf8_lossy(key))),
        }
    }
    if errors.is_empty() {
        Ok(sum)
    } else {
        Err(errors)
    }
}

/// An operation with its value interned (0: absent).
#[derive(Clone, Copy, Debug)]
struct Op {
    invoke: u64,
    /// `u64::MAX`: none.
    response: u64,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Put(u32),
    Delete,
    /// Read this value.
    Get(u32),
    /// Set `value` if the key holds `expected`: `ok` says it did (`None`:
    /// unknown).
    Cas {
        expected: u32,
        value: u32,
        ok: Option<bool>,
    },
}

impl Kind {
    /// The value after this operation from `v`, if its result fits `v`.
    fn step(self, v: u32, known: bool) -> Option<u32> {
        match self {
            Kind::Put(x) => Some(x),
            Kind::Delete => Some(0),
            Kind::Get(x) => (x == v).then_some(v),
            Kind::Cas { expected, value, ok: Some(true) } => (expected == v).then_some(value),
            Kind::Cas { expected, ok: Some(false), .. } => (expected != v).then_some(v),
            Kind::Cas { expected, value, ok: None } => {
                debug_assert!(!known);
                Some(if expected == v { value } else { v })
            }
        }
    }
}

/// The search's state: operations `0..frontier` (by invocation) took
/// effect except those in `open` (sorted), and the key's value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    frontier: usize,
    open: Vec<usize>,
    value: u32,
}

fn check_key(records: &[&KvRecord]) -> Result<usize, String> {
    let mut values: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut intern = |v: &Option<Vec<u8>>| -> u32 {
        match v {
            None => 0,
            Some(b) => {
                let n = values.len() as u32 + 1;
                *values.entry(b.clone()).or_insert(n)
            }
        }
    };
    let mut ops: Vec<Op> = vec![];
    for r in records {
        let response = r.response.map_or(u64::MAX, |t| t.as_nanos() as u64);
        let known = r.response.is_some() && r.result != KvResult::Unknown;
        let response = if known { response } else { u64::MAX };
        let kind = match (&r.op, &r.result) {
            (KvOp::Get, KvResult::Value(v)) if known => Kind::Get(intern(v)),
            (KvOp::Get, _) if !known => continue,
            (KvOp::Put(v), KvResult::Ok | KvResult::Unknown) => Kind::Put(intern(&Some(v.clone()))),
            (KvOp::Delete, KvResult::Ok | KvResult::Unknown) => Kind::Delete,
            (KvOp::Cas { expected, value }, res @ (KvResult::Ok | KvResult::CasFailed | KvResult::Unknown)) => {
                let ok = match res {
                    _ if !known => None,
                    KvResult::Ok => Some(true),
                    _ => Some(false),
                };
                if ok == Some(false) {
                    // A failed CAS changes nothing: a read that saw another value.
                    let expected = intern(expected);
                    Kind::Cas { expected, value: 0, ok }
                } else {
                    Kind::Cas { expected: intern(expected), value: intern(&Some(value.clone())), ok }
                }
            }
            (op, res) => return Err(format!("client {} got {res:?} for {op:?}", r.client)),
        };
        ops.push(Op { invoke: r.invoke.as_nanos() as u64, response, kind });
    }
    ops.sort_by_key(|o| (o.invoke, o.response));
    let must = ops.iter().filter(|o| o.response != u64::MAX).count();
    search(&ops, must)
}

/// Depth-first over the states; `Ok(states explored)` if every operation
/// with a response can take effect in an order its times allow.
fn search(ops: &[Op], must: usize) -> Result<usize, String> {
    let start = State { frontier: 0, open: vec![], value: 0 };
    let mut seen: HashSet<State> = HashSet::new();
    // (state, operations with a response that took effect)
    let mut stack: Vec<(State, usize)> = vec![(start, 0)];
    let mut deepest = 0usize;
    while let Some((s, done)) = stack.pop() {
        if done == must {
            return Ok(seen.len());
        }
        if !seen.insert(s.clone()) {
            continue;
        }
        if seen.len() > SEARCH_STATES_MAX {
            return Err(format!(
                "not decided within {SEARCH_STATES_MAX} states (SEARCH_STATES_MAX; {} operations)",
                ops.len()
            ));
        }
        deepest = deepest.max(done);
        // The earliest response among the operations that did not take
        // effect: nothing invoked after it may go first.
        let mut bound = s.open.iter().map(|&i| ops[i].response).min().unwrap_or(u64::MAX);
        let mut candidates: Vec<usize> = s.open.iter().copied().filter(|&i| ops[i].invoke <= bound).collect();
        let mut j = s.frontier;
        while j < ops.len() && ops[j].invoke <= bound {
            bound = bound.min(ops[j].response);
            candidates.push(j);
            j += 1;
        }
        for &i in candidates.iter().rev() {
            let o = ops[i];
            if o.invoke > bound {
                continue;
            }
            let known = o.response != u64::MAX;
            let Some(value) = o.kind.step(s.value, known) else { continue };
            if !known && value == s.value {
                // Taking effect changes nothing: the same as never.
                continue;
            }
            let mut next = State { frontier: s.frontier, open: s.open.clone(), value };
            if i < s.frontier {
                next.open.retain(|&k| k != i);
            } else {
                next.open.extend(s.frontier..i);
                next.frontier = i + 1;
            }
            stack.push((next, done + usize::from(known)));
        }
    }
    Err(format!(
        "not linearizable: at most {deepest} of the {must} answered operations fit an order ({} operations, {} \
         states)",
        ops.len(),
        seen.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn rec(client: usize, op: KvOp, inv: u64, resp: Option<u64>, result: KvResult) -> KvRecord {
        KvRecord { client, key: b"k".to_vec(), op, invoke: at(inv), response: resp.map(at), result }
    }

    fn put(v: &str) -> KvOp {
        KvOp::Put(v.as_bytes().to_vec())
    }

    fn got(v: Option<&str>) -> KvResult {
        KvResult::Value(v.map(|s| s.as_bytes().to_vec()))
    }

    #[test]
    fn sequential_and_concurrent_histories_pass() {
        let h = vec![
            rec(0, put("a"), 0, Some(10), KvResult::Ok),
            rec(1, KvOp::Get, 11, Some(12), got(Some("a"))),
            // Concurrent put b and get: either order.
            rec(0, put("b"), 20, Some(30), KvResult::Ok),
            rec(1, KvOp::Get, 21, Some(29), got(Some("a"))),
            rec(1, KvOp::Cas { expected: Some(b"b".to_vec()), value: b"c".to_vec() }, 31, Some(40), KvResult::Ok),
            rec(0, KvOp::Delete, 41, Some(50), KvResult::Ok),
            rec(1, KvOp::Get, 51, Some(52), got(None)),
            rec(
                1,
                KvOp::Cas { expected: Some(b"c".to_vec()), value: b"d".to_vec() },
                53,
                Some(54),
                KvResult::CasFailed,
            ),
            // A put that timed out shows up later.
            rec(0, put("e"), 60, None, KvResult::Unknown),
            rec(1, KvOp::Get, 100, Some(101), got(None)),
            rec(1, KvOp::Get, 102, Some(103), got(Some("e"))),
        ];
        let s = check(&h).unwrap();
        assert_eq!((s.keys, s.operations, s.writes_acked, s.unknown), (1, 11, 4, 1));
    }

    /// A stale read after an acknowledged write, a lost write (read back
    /// the value before it), a CAS applied twice (the second sees its own
    /// value) and a read of a value no one wrote are all found.
    #[test]
    fn violations_are_found() {
        let stale = vec![
            rec(0, put("a"), 0, Some(10), KvResult::Ok),
            rec(0, put("b"), 11, Some(20), KvResult::Ok),
            rec(1, KvOp::Get, 21, Some(22), got(Some("a"))),
        ];
        assert!(check(&stale).is_err());
        let lost = vec![rec(0, put("a"), 0, Some(10), KvResult::Ok), rec(1, KvOp::Get, 11, Some(12), got(None))];
        assert!(check(&lost).is_err());
        let cas = |e: &str, v: &str| KvOp::Cas { expected: Some(e.as_bytes().to_vec()), value: v.as_bytes().to_vec() };
        let twice = vec![
            rec(0, put("1"), 0, Some(1), KvResult::Ok),
            rec(0, cas("1", "2"), 2, Some(3), KvResult::Ok),
            rec(1, cas("1", "2"), 4, Some(5), KvResult::Ok),
        ];
        assert!(check(&twice).is_err());
        let invented = vec![rec(1, KvOp::Get, 0, Some(1), got(Some("z")))];
        assert!(check(&invented).is_err());
        // A put without a response may have happened, but not before its invocation.
        let early = vec![rec(1, KvOp::Get, 0, Some(1), got(Some("a"))), rec(0, put("a"), 5, None, KvResult::Unknown)];
        assert!(check(&early).is_err());
    }

    /// Many clients, many concurrent operations: decided well within the bound.
    #[test]
    fn a_long_history_is_decided() {
        let mut h = vec![];
        let mut t = 0;
        for n in 0..20_000u64 {
            let v = format!("v{n}");
            h.push(rec(0, put(&v), t, Some(t + 5), KvResult::Ok));
            h.push(rec(1, KvOp::Get, t + 1, Some(t + 3), got(Some(&v))));
            h.push(rec(2, KvOp::Delete, t + 2, Some(t + 4), KvResult::Ok));
            t += 6;
        }
        let s = check(&h).unwrap();
        assert!(s.states < 200_000, "{}", s.states);
    }
}
