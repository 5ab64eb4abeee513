//! A serializability checker for the histories the simulator records.
//!
//! The store's decisions, in the order it made them, are the serialization
//! order (Gotthard section 3.7). The checker replays them from the empty
//! store and reports a violation when:
//!
//! 1. a committed request's compares or returned reads do not match the state
//!    produced by the commits before it, or an aborted request had no failing
//!    compare (the store's own OCC, Algorithm 1);
//! 2. the same request (client id, request id) committed twice;
//! 3. the store's final contents differ from the replay;
//! 4. a client was told "committed by the store" for a request the store did
//!    not commit, or with other values than the store returned;
//! 5. a client was told "aborted" (by the switch or the store) for a request
//!    the store committed: it would re-run a transaction that took effect;
//! 6. a read-only request answered by a switch returned values that never
//!    held together at any point of the commit order (such a transaction is
//!    serializable exactly when some prefix of the order explains its reads).

use std::collections::{BTreeMap, HashMap};

use innet_wire::txn::{Key, OpType, Status, Value};

use crate::client::{Attempt, AttemptResult};
use crate::store::Decision;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    pub store_commits: usize,
    pub store_aborts: usize,
    pub client_commits_checked: usize,
    pub switch_answers_checked: usize,
    pub client_aborts_checked: usize,
}

/// Half-open ranges of commit indices `[from, to)`.
type Ranges = Vec<(usize, usize)>;

fn intersect(a: &Ranges, b: &Ranges) -> Ranges {
    let mut out = vec![];
    for &(a0, a1) in a {
        for &(b0, b1) in b {
            let (lo, hi) = (a0.max(b0), a1.min(b1));
            if lo < hi {
                out.push((lo, hi));
            }
        }
    }
    debug_assert!(out.iter().all(|&(lo, hi)| lo < hi), "half-open ranges, none empty");
    out
}

struct Replay {
    state: HashMap<Key, Value>,
    /// Per key, `(commit index from which it holds, value)`, index 0 = initial.
    versions: HashMap<Key, Vec<(usize, Value)>>,
    commits: usize,
}

impl Replay {
    fn get(&self, k: Key) -> Value {
        self.state.get(&k).copied().unwrap_or(Value::ZERO)
    }

    /// Commit indices at which `key` held `value` (state after i commits).
    fn ranges(&self, key: Key, value: Value) -> Ranges {
        let end = self.commits + 1;
        let default = [(0usize, Value::ZERO)];
        let vs = self.versions.get(&key).map_or(&default[..], |v| &v[..]);
        let mut out = vec![];
        for (j, (from, v)) in vs.iter().enumerate() {
            let to = vs.get(j + 1).map_or(end, |n| n.0);
            if *v == value && *from < to {
                out.push((*from, to));
            }
        }
        debug_assert!(out.iter().all(|&(_, to)| to <= end), "a range past the last commit");
        out
    }
}

/// Checks one history; `Err` lists every violation found.
pub fn check(
    decisions: &[Decision],
    attempts: &[Attempt],
    final_state: &BTreeMap<Key, Value>,
) -> Result<CheckSummary, Vec<String>> {
    let mut errors = vec![];
    let mut summary = CheckSummary::default();
    let (r, committed) = replay(decisions, &mut summary, &mut errors);
    debug_assert_eq!(r.commits, summary.store_commits, "one replayed commit per store commit");

    let replayed: BTreeMap<Key, Value> = r.state.iter().map(|(k, v)| (*k, *v)).collect();
    if &replayed != final_state {
        errors.push(format!("final store state {final_state:?} differs from the replay of its commits {replayed:?}"));
    }
    for a in attempts {
        check_attempt(a, &r, &committed, &mut summary, &mut errors);
    }
    if errors.is_empty() {
        Ok(summary)
    } else {
        Err(errors)
    }
}

/// Rules 1-2: replays the store's decisions from the empty store; the
/// replay and the decisions that committed, by request.
fn replay<'a>(
    decisions: &'a [Decision],
    summary: &mut CheckSummary,
    errors: &mut Vec<String>,
) -> (Replay, HashMap<(u32, i32), &'a Decision>) {
    let mut r = Replay { state: HashMap::new(), versions: HashMap::new(), commits: 0 };
    let mut committed: HashMap<(u32, i32), &Decision> = HashMap::new();
    for d in decisions {
        let id = (d.cl_id, d.req_id);
        let stale: Vec<Key> = d.compares.iter().filter(|(k, v)| r.get(*k) != *v).map(|(k, _)| *k).collect();
        match d.status {
            Status::Ok => {
                summary.store_commits += 1;
                if !stale.is_empty() {
                    errors.push(format!("store committed {id:?} although its compares on keys {stale:?} were stale"));
                }
                let mut after = r.state.clone();
                for (k, v) in &d.writes {
                    after.insert(*k, *v);
                }
                for (k, v) in &d.reads {
                    let want = after.get(k).copied().unwrap_or(Value::ZERO);
                    if *v != want {
                        errors.push(format!("store returned {v:?} for key {k} in {id:?}, the state held {want:?}"));
                    }
                }
                r.commits += 1;
                for (k, v) in &d.writes {
                    r.state.insert(*k, *v);
                    let vs = r.versions.entry(*k).or_insert_with(|| vec![(0, Value::ZERO)]);
                    debug_assert!(vs.last().is_some_and(|(from, _)| *from <= r.commits), "versions in commit order");
                    vs.push((r.commits, *v));
                }
                if committed.insert(id, d).is_some() {
                    errors.push(format!("request {id:?} committed twice"));
                }
            }
            Status::Abort | Status::OptimisticAbort => {
                summary.store_aborts += 1;
                if stale.is_empty() {
                    errors.push(format!("store aborted {id:?} although every compare held"));
                }
            }
            Status::BadRequest => {}
        }
    }
    (r, committed)
}

/// Rules 4-6 for one attempt as its client saw it.
fn check_attempt(
    a: &Attempt,
    r: &Replay,
    committed: &HashMap<(u32, i32), &Decision>,
    summary: &mut CheckSummary,
    errors: &mut Vec<String>,
) {
    let id = (a.cl_id, a.req_id);
    let compares: Vec<(Key, Value)> =
        a.ops.iter().filter(|o| o.kind == OpType::Value).map(|o| (o.key, o.value)).collect();
    let writes: Vec<(Key, Value)> =
        a.ops.iter().filter(|o| o.kind == OpType::Write).map(|o| (o.key, o.value)).collect();
    match &a.result {
        AttemptResult::Committed { from_switch: false, values } => {
            summary.client_commits_checked += 1;
            match committed.get(&id) {
                None => errors.push(format!("client was told the store committed {id:?}, the store did not")),
                Some(d) => {
                    if d.compares != compares || d.writes != writes {
                        errors.push(format!("client's request {id:?} differs from what the store committed"));
                    }
                    if &d.reads != values {
                        errors.push(format!("client got {values:?} for {id:?}, the store returned {:?}", d.reads));
                    }
                }
            }
        }
        AttemptResult::Committed { from_switch: true, values } => {
            summary.switch_answers_checked += 1;
            if !writes.is_empty() {
                errors.push(format!("a switch answered OK to {id:?}, which writes"));
            }
            if committed.contains_key(&id) {
                errors.push(format!("{id:?} was answered by a switch and also committed by the store"));
            }
            let mut possible: Ranges = vec![(0, r.commits + 1)];
            for (k, v) in values.iter().chain(compares.iter()) {
                possible = intersect(&possible, &r.ranges(*k, *v));
            }
            if possible.is_empty() {
                errors.push(format!(
                    "switch answered {id:?} with {values:?}: no point of the commit order held these values"
                ));
            }
        }
        AttemptResult::Aborted { from_switch, status, .. } => {
            summary.client_aborts_checked += 1;
            if committed.contains_key(&id) {
                let by = if *from_switch { "a switch" } else { "the store" };
                errors.push(format!("client was told {status:?} by {by} for {id:?}, which the store committed"));
            }
        }
        AttemptResult::BadRequest | AttemptResult::Unknown => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_wire::txn::Op;

    fn v(n: u64) -> Value {
        Value::from_counter(n)
    }

    fn commit(cl: u32, req: i32, compares: Vec<(Key, Value)>, writes: Vec<(Key, Value)>) -> Decision {
        Decision { cl_id: cl, req_id: req, status: Status::Ok, compares, reads: vec![], writes }
    }

    #[test]
    fn accepts_a_serial_history_and_rejects_a_lost_update() {
        let ok =
            vec![commit(1, 1, vec![(1, Value::ZERO)], vec![(1, v(1))]), commit(2, 1, vec![(1, v(1))], vec![(1, v(2))])];
        let fin: BTreeMap<Key, Value> = [(1, v(2))].into();
        assert!(check(&ok, &[], &fin).is_ok());
        // Both read 0 and wrote 1: the second compare was stale.
        let bad = vec![
            commit(1, 1, vec![(1, Value::ZERO)], vec![(1, v(1))]),
            commit(2, 1, vec![(1, Value::ZERO)], vec![(1, v(1))]),
        ];
        let fin: BTreeMap<Key, Value> = [(1, v(1))].into();
        let e = check(&bad, &[], &fin).unwrap_err();
        assert!(e[0].contains("stale"), "{e:?}");
    }

    #[test]
    fn rejects_an_abort_told_for_a_committed_request() {
        let d = vec![commit(1, 1, vec![], vec![(1, v(1))])];
        let a = vec![Attempt {
            cl_id: 1,
            req_id: 1,
            ops: vec![Op::write(1, v(1))],
            result: AttemptResult::Aborted { from_switch: true, status: Status::OptimisticAbort, values: vec![] },
        }];
        let fin: BTreeMap<Key, Value> = [(1, v(1))].into();
        assert!(check(&d, &a, &fin).is_err());
    }

    #[test]
    fn switch_reads_must_match_one_prefix() {
        // x=1 (c1); x=2,y=2 (c2); y=3 (c3). {x=1,y=3} never held together.
        let d = vec![
            commit(1, 1, vec![], vec![(1, v(1))]),
            commit(1, 2, vec![], vec![(1, v(2)), (2, v(2))]),
            commit(1, 3, vec![], vec![(2, v(3))]),
        ];
        let fin: BTreeMap<Key, Value> = [(1, v(2)), (2, v(3))].into();
        let read = |req, x, y| Attempt {
            cl_id: 9,
            req_id: req,
            ops: vec![Op::read(1), Op::read(2)],
            result: AttemptResult::Committed { from_switch: true, values: vec![(1, v(x)), (2, v(y))] },
        };
        assert!(check(&d, &[read(1, 2, 3)], &fin).is_ok());
        assert!(check(&d, &[read(1, 1, 3)], &fin).is_err());
    }
}
