//! The safety checker for consensus histories (CAANS section 3: agreement, validity, exactly-once delivery), over what
//! the simulator records: the values proposers submitted and every learner's
//! sequence of deliveries (no-ops and filtered duplicates included).
//!
//! * **agreement**: no two learners deliver different values for one
//!   instance (Paxos's safety property); a packed instance is compared
//!   client value by client value (`(instance, index)`);
//! * **validity**: every delivered value was submitted (with the same
//!   payload) or is a no-op;
//! * **exactly once**: every submitted value reaches every checked learner's
//!   application exactly once (after duplicates are filtered), and nothing
//!   else does;
//! * **order**: an ordered learner delivers instances `first, first+1, ...`
//!   with no gap and no repetition (the client values of a packed instance
//!   one after the other, index 0, 1, ...).

use std::collections::{BTreeMap, HashMap};

use innet_wire::paxos::Value;

use crate::envelope::Envelope;
use crate::learner::{Delivery, DeliveryKind};

/// What one run produced.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// `(proposer, request)` -> payload, for every submitted value.
    pub submitted: BTreeMap<(u32, u32), Vec<u8>>,
    /// Per learner: whether its deliveries must be complete (it was up at
    /// the end), whether it delivers in order, and its deliveries.
    pub learners: Vec<LearnerHistory>,
}

#[derive(Clone, Debug, Default)]
pub struct LearnerHistory {
    pub name: String,
    pub complete: bool,
    pub ordered: bool,
    pub first_instance: u32,
    pub deliveries: Vec<Delivery>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation(pub String);

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the checker saw, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub instances: usize,
    pub values: usize,
    pub noops: usize,
    pub duplicates: usize,
}

pub fn check(h: &History) -> Result<Summary, Violation> {
    let mut chosen: HashMap<(u32, u8), (Value, &str)> = HashMap::new();
    let mut s = Summary::default();
    for l in &h.learners {
        let mut expect = l.first_instance;
        let mut last_index = 0u8;
        let mut got: HashMap<(u32, u32), usize> = HashMap::new();
        for d in &l.deliveries {
            let e = agreed_and_valid(h, l, d, &mut chosen)?;
            if d.kind == DeliveryKind::Value {
                *got.entry((e.proposer, e.request)).or_default() += 1;
            }
            // Order.
            if l.ordered {
                let want = if d.index == 0 { (expect, 0) } else { (expect.wrapping_sub(1), last_index + 1) };
                if (d.instance, d.index) != want {
                    return Err(Violation(format!(
                        "order: {} delivered instance {} (value {}) when {} (value {}) was next",
                        l.name, d.instance, d.index, want.0, want.1
                    )));
                }
                if d.index == 0 {
                    expect += 1;
                }
                last_index = d.index;
            }
        }
        exactly_once(h, l, &got)?;
        s.values = s.values.max(got.len());
        s.noops += l.deliveries.iter().filter(|d| d.kind == DeliveryKind::Noop).count();
        s.duplicates += l.deliveries.iter().filter(|d| d.kind == DeliveryKind::Duplicate).count();
    }
    s.instances = chosen.keys().filter(|(_, index)| *index == 0).count();
    debug_assert!(s.values <= h.submitted.len(), "a learner delivered a value nobody submitted");
    Ok(s)
}

/// Agreement and validity of one delivery: the same value as every other
/// learner's for its `(instance, index)`, and submitted (or a no-op). The
/// delivery's envelope.
fn agreed_and_valid<'a>(
    h: &History,
    l: &'a LearnerHistory,
    d: &Delivery,
    chosen: &mut HashMap<(u32, u8), (Value, &'a str)>,
) -> Result<Envelope, Violation> {
    match chosen.get(&(d.instance, d.index)) {
        Some((v, other)) if *v != d.value => {
            return Err(Violation(format!(
                "agreement: instance {} (value {}) delivered as {:?} by {} and as {:?} by {}",
                d.instance, d.index, v, other, d.value, l.name
            )))
        }
        Some(_) => {}
        None => {
            chosen.insert((d.instance, d.index), (d.value, &l.name));
        }
    }
    let e = Envelope::from_value(&d.value)
        .ok_or_else(|| Violation(format!("validity: {} delivered a non-envelope value {:?}", l.name, d.value)))?;
    if e.is_noop() != (d.kind == DeliveryKind::Noop) {
        return Err(Violation(format!("validity: {} mislabelled instance {}", l.name, d.instance)));
    }
    if !e.is_noop() {
        match h.submitted.get(&(e.proposer, e.request)) {
            Some(p) if p.as_slice() == e.payload() => {}
            _ => {
                return Err(Violation(format!(
                    "validity: {} delivered {:?} in instance {}, which nobody submitted",
                    l.name, e, d.instance
                )))
            }
        }
    }
    debug_assert!(chosen.get(&(d.instance, d.index)).is_some_and(|(v, _)| *v == d.value));
    Ok(e)
}

/// Exactly once: no value given to `l`'s application twice, and (if `l`
/// was up at the end) every submitted value given.
fn exactly_once(h: &History, l: &LearnerHistory, got: &HashMap<(u32, u32), usize>) -> Result<(), Violation> {
    if let Some((k, n)) = got.iter().find(|(_, n)| **n > 1) {
        return Err(Violation(format!("exactly-once: {} gave {:?} to the application {} times", l.name, k, n)));
    }
    if l.complete {
        if let Some(k) = h.submitted.keys().find(|k| !got.contains_key(k)) {
            return Err(Violation(format!(
                "exactly-once: {} never delivered submitted value {:?} (delivered {} of {})",
                l.name,
                k,
                got.len(),
                h.submitted.len()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(instance: u32, p: u32, r: u32, payload: &[u8], kind: DeliveryKind) -> Delivery {
        Delivery { instance, index: 0, value: Envelope::new(p, r, payload).unwrap().to_value(), kind }
    }

    fn at(index: u8, d: Delivery) -> Delivery {
        Delivery { index, ..d }
    }

    fn history(a: Vec<Delivery>, b: Vec<Delivery>) -> History {
        let mut h = History::default();
        h.submitted.insert((1, 1), b"x".to_vec());
        h.submitted.insert((1, 2), b"y".to_vec());
        for (i, ds) in [a, b].into_iter().enumerate() {
            h.learners.push(LearnerHistory {
                name: format!("learner{i}"),
                complete: true,
                ordered: true,
                first_instance: 0,
                deliveries: ds,
            });
        }
        h
    }

    use DeliveryKind::*;

    #[test]
    fn accepts_a_correct_history_with_noops_and_duplicates() {
        let a =
            vec![d(0, 1, 1, b"x", Value), d(1, 0, 0, b"", Noop), d(2, 1, 2, b"y", Value), d(3, 1, 1, b"x", Duplicate)];
        let s = check(&history(a.clone(), a)).unwrap();
        assert_eq!((s.instances, s.values, s.noops, s.duplicates), (4, 2, 2, 2));
    }

    /// Each property is caught: the checker is only worth what it catches.
    #[test]
    fn catches_each_violation() {
        let good = vec![d(0, 1, 1, b"x", Value), d(1, 1, 2, b"y", Value)];
        let swapped = vec![d(0, 1, 2, b"y", Value), d(1, 1, 1, b"x", Value)];
        assert!(check(&history(good.clone(), swapped)).unwrap_err().0.starts_with("agreement"));
        let forged = vec![d(0, 1, 1, b"x", Value), d(1, 1, 2, b"z", Value)];
        assert!(check(&history(forged.clone(), forged)).unwrap_err().0.starts_with("validity"));
        let twice = vec![d(0, 1, 1, b"x", Value), d(1, 1, 2, b"y", Value), d(2, 1, 1, b"x", Value)];
        assert!(check(&history(twice.clone(), twice)).unwrap_err().0.starts_with("exactly-once"));
        let missing = vec![d(0, 1, 1, b"x", Value)];
        assert!(check(&history(missing.clone(), missing)).unwrap_err().0.starts_with("exactly-once"));
        let gap = vec![d(0, 1, 1, b"x", Value), d(2, 1, 2, b"y", Value)];
        assert!(check(&history(gap.clone(), gap)).unwrap_err().0.starts_with("order"));
    }

    /// Both values packed into instance 0: accepted; a learner that
    /// delivers the pack's entries in another order, or skips an index,
    /// is caught.
    #[test]
    fn packed_instances() {
        let packed = vec![d(0, 1, 1, b"x", Value), at(1, d(0, 1, 2, b"y", Value))];
        let s = check(&history(packed.clone(), packed.clone())).unwrap();
        assert_eq!((s.instances, s.values), (1, 2));
        let swapped = vec![d(0, 1, 2, b"y", Value), at(1, d(0, 1, 1, b"x", Value))];
        assert!(check(&history(packed.clone(), swapped)).unwrap_err().0.starts_with("agreement"));
        let skipped = vec![d(0, 1, 1, b"x", Value), at(2, d(0, 1, 2, b"y", Value))];
        assert!(check(&history(skipped.clone(), skipped)).unwrap_err().0.starts_with("order"));
    }
}
