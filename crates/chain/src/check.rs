//! A linearizability checker for per-key register histories in which every
//! write writes a distinct value (the checker's workload makes them so, see
//! `client.rs`), so each read names the write it observed.
//!
//! With distinct values the problem is polynomial (Gibbons and Korach,
//! "Testing shared memories", SIAM J. Comput. 1997). Group each write with
//! the reads that returned its value: a *cluster*. A cluster's zone runs from
//! the earliest response of its operations to the latest invocation. When
//! the earliest response comes first the zone is *forward*: every operation
//! of the cluster must take effect inside it, so the cluster's write is the
//! register's value throughout. A key's history is linearizable iff
//!
//! 1. every read returns a value some write of that key wrote (or the
//!    initial zero value), and no read finishes before its write starts;
//! 2. no two forward zones overlap (two values cannot both be current);
//! 3. no backward zone lies inside a forward zone (a cluster whose
//!    operations all overlap would have to fit between two points where
//!    another value is current).
//!
//! Writes without a response (lost, refused, or still pending) may take
//! effect at any time after their invocation or never: their response is
//! "infinitely late", and a pending write no read returned is left out. The
//! initial value is a write that completed before time zero.

use std::collections::{BTreeMap, HashMap};

use innet_wire::netcraq::Value;

use crate::client::{OpKind, Record};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    pub keys: usize,
    pub reads: usize,
    pub writes_acked: usize,
    pub writes_unacked: usize,
}

#[derive(Clone, Copy)]
struct Zone {
    /// Earliest response of the cluster.
    lo: u64,
    /// Latest invocation.
    hi: u64,
}

/// Checks every key's history; `Err` lists the violations found.
pub fn check(history: &[Record]) -> Result<CheckSummary, Vec<String>> {
    let mut by_key: BTreeMap<u32, Vec<&Record>> = BTreeMap::new();
    for r in history {
        by_key.entry(r.key).or_default().push(r);
    }
    let mut summary = CheckSummary { keys: by_key.len(), ..Default::default() };
    let mut errors = vec![];
    for (key, ops) in by_key {
        check_key(key, &ops, &mut summary, &mut errors);
    }
    debug_assert_eq!(
        summary.reads + summary.writes_acked + summary.writes_unacked,
        history.len(),
        "every record checked"
    );
    if errors.is_empty() {
        Ok(summary)
    } else {
        Err(errors)
    }
}

const NEVER: u64 = u64::MAX;

/// Times shifted by one so that the initial write, at 0, precedes them all.
fn inv(r: &Record) -> u64 {
    debug_assert!(r.response.is_none_or(|t| t >= r.invoke), "a response before its invocation");
    r.invoke.as_nanos() + 1
}

fn resp(r: &Record) -> u64 {
    r.response.map_or(NEVER, |t| t.as_nanos() + 1)
}

fn check_key(key: u32, ops: &[&Record], summary: &mut CheckSummary, errors: &mut Vec<String>) {
    // Clusters by value: (write invocation, write response, reads).
    let mut writes: HashMap<Value, (u64, u64)> = HashMap::new();
    writes.insert(Value::ZERO, (0, 0));
    for w in ops.iter().filter(|r| r.kind == OpKind::Write) {
        if w.response.is_some() {
            summary.writes_acked += 1;
        } else {
            summary.writes_unacked += 1;
        }
        if w.value == Value::ZERO || writes.insert(w.value, (inv(w), resp(w))).is_some() {
            errors.push(format!("key {key}: value {:?} written twice; the checker needs distinct values", w.value));
        }
    }
    let mut zones: HashMap<Value, Zone> = HashMap::new();
    for r in ops.iter().filter(|r| r.kind == OpKind::Read) {
        summary.reads += 1;
        let Some(&(w_inv, _)) = writes.get(&r.value) else {
            errors.push(format!("key {key}: client {} read {:?}, which no write wrote", r.client, r.value));
            continue;
        };
        if resp(r) < w_inv {
            errors.push(format!(
                "key {key}: client {} read {:?} at {:?}, before its write started at {w_inv} ns",
                r.client, r.value, r.response
            ));
        }
        let z = zones.entry(r.value).or_insert_with(|| {
            let (inv, res) = writes[&r.value];
            Zone { lo: res, hi: inv }
        });
        z.lo = z.lo.min(resp(r));
        z.hi = z.hi.max(inv(r));
    }
    // Acknowledged writes nobody read are clusters of one (always backward).
    for (v, (inv, res)) in &writes {
        if *res != NEVER {
            zones.entry(*v).or_insert(Zone { lo: *res, hi: *inv });
        }
    }
    let mut forward: Vec<(Value, Zone)> = zones.iter().filter(|(_, z)| z.lo < z.hi).map(|(v, z)| (*v, *z)).collect();
    forward.sort_by_key(|(_, z)| z.lo);
    for pair in forward.windows(2) {
        let ((va, a), (vb, b)) = (pair[0], pair[1]);
        if b.lo < a.hi {
            errors.push(format!(
                "key {key}: {va:?} must be current during [{}, {}] ns and {vb:?} during [{}, {}] ns",
                a.lo, a.hi, b.lo, b.hi
            ));
        }
    }
    for (vb, b) in zones.iter().filter(|(_, z)| z.lo >= z.hi) {
        // Backward zone [hi, lo]; inside a forward zone [lo', hi'] is a violation.
        let inside = forward.iter().find(|(_, f)| f.lo < b.hi && b.lo < f.hi);
        if let Some((vf, f)) = inside {
            errors.push(format!(
                "key {key}: {vf:?} is current during [{}, {}] ns, yet {vb:?} was written and read within [{}, {}] ns",
                f.lo, f.hi, b.hi, b.lo
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_core::Time;

    fn v(i: u64) -> Value {
        Value::from_counter(i)
    }
    fn w(val: u64, inv: u64, res: Option<u64>) -> Record {
        Record { client: 1, key: 0, kind: OpKind::Write, value: v(val), invoke: Time(inv), response: res.map(Time) }
    }
    fn r(val: u64, inv: u64, res: u64) -> Record {
        let value = if val == 0 { Value::ZERO } else { v(val) };
        Record { client: 2, key: 0, kind: OpKind::Read, value, invoke: Time(inv), response: Some(Time(res)) }
    }

    #[test]
    fn sequential_and_concurrent_histories_pass() {
        assert!(check(&[r(0, 0, 1), w(1, 2, Some(3)), r(1, 4, 5), w(2, 6, Some(7)), r(2, 8, 9)]).is_ok());
        // A read concurrent with a write may return either value.
        assert!(check(&[w(1, 0, Some(10)), r(0, 1, 2), r(1, 3, 4), r(1, 5, 6)]).is_ok());
        // An unacknowledged write may take effect late, or never.
        assert!(check(&[w(1, 0, None), r(0, 1, 2), w(2, 3, Some(4)), r(2, 5, 6), r(1, 7, 8)]).is_ok());
        assert!(check(&[w(1, 0, None), r(0, 1, 2)]).is_ok());
    }

    #[test]
    fn a_stale_read_after_a_completed_write_is_caught() {
        let e = check(&[w(1, 0, Some(1)), w(2, 2, Some(3)), r(1, 4, 5)]).unwrap_err();
        assert!(e[0].contains("is current during"), "{e:?}");
        // Reading the initial value after a write completed.
        assert!(check(&[w(1, 0, Some(1)), r(0, 2, 3)]).is_err());
    }

    #[test]
    fn new_then_old_reads_are_caught() {
        // Two reads, one after the other, see 2 then 1 while 1 was written before 2.
        let h = [w(1, 0, Some(10)), w(2, 1, Some(10)), r(2, 2, 3), r(1, 4, 5), r(2, 6, 7)];
        assert!(check(&h).is_err());
    }

    #[test]
    fn reads_from_nowhere_or_the_future_are_caught() {
        assert!(check(&[r(9, 0, 1)]).is_err());
        assert!(check(&[r(1, 0, 1), w(1, 2, Some(3))]).is_err());
        assert!(check(&[w(1, 0, Some(1)), w(1, 2, Some(3))]).is_err(), "duplicate values are refused");
    }
}
