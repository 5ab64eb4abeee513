//! The chain's control plane (NetCRAQ paper section III-B and III-C; CRAQ
//! and chain replication's membership rules), as a state machine.
//!
//! It decides; a runtime applies. Its output is a [`Layout`] (the chain's
//! order and whether writes are paused, which a runtime turns into table
//! writes: each node's role, its `PORT_NEXT` / `PORT_TAIL`, the tail's ACK
//! group, NetChain's skip entries, clients' view of the chain) and
//! [`Action::Copy`] (register reads and writes, as a P4 control plane does
//! over Thrift).
//!
//! * **Failure detection**: a runtime reports a heartbeat for every node
//!   that answers on the management channel ([`ChainControl::on_heartbeat`],
//!   the way a P4 controller polls its switches). A member silent for
//!   `failure_timeout` that also missed the last [`SILENT_POLLS_FOR_FAILURE`]
//!   polls in a row, or one that answers but has lost its configuration
//!   (it restarted), has failed. Counting polls as well as time means that
//!   a control plane held up (a busy CPU, a slow step) does not take the
//!   time it lost for its nodes' silence: only missing answers count.
//! * **Removal** (phase 1 of section III-C): the failed node leaves the
//!   chain at once, so traffic continues: its predecessor forwards to its
//!   successor, a new head or tail takes over (a new NetCRAQ tail commits
//!   its newest versions), the ACK group shrinks.
//! * **Resync** (phase 2): writes are paused at the head; after `drain`
//!   (longer than any write or ACK can stay in flight) the tail's committed
//!   state is copied to every other member and to the nodes that are
//!   joining, which are appended at the end of the chain (the new tail, as
//!   in chain replication); every member then takes the new chain with
//!   writes still paused, and only then do writes resume (a node still in
//!   the old layout when the head resumes would act on it: an old tail
//!   would commit writes its new successor never sees). The copy also
//!   clears versions left dirty by writes or ACKs lost with a failed node,
//!   which would otherwise fill their objects' version cells for good.
//! * **Failed steps**: a runtime that reaches its nodes over a network
//!   says when a node did not take an action ([`ChainControl::on_failed`]).
//!   A pause or a copy that did not land is never built on: the resync
//!   starts again from the pause (writes stay paused meanwhile), so the
//!   drain is always timed from a pause every member holds.
//! * A restarted node (heartbeat, unconfigured, not a member) joins through
//!   a resync. A NetCRAQ member that keeps reporting full objects triggers a
//!   resync too (versions orphaned by lost packets).

use std::time::Duration;

use innet_core::Time;

/// Polls in a row a member must miss (besides `failure_timeout` of
/// silence) before it is judged failed.
pub const SILENT_POLLS_FOR_FAILURE: u32 = 3;

#[derive(Clone, Debug, PartialEq)]
pub struct ControlConfig {
    /// How often the runtime should poll nodes and tick the control plane.
    pub heartbeat_interval: Duration,
    /// A member silent this long has failed.
    pub failure_timeout: Duration,
    /// How long writes stay paused before state is copied.
    pub drain: Duration,
    /// Consecutive heartbeats with full objects that trigger a resync.
    pub full_heartbeats: u32,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            heartbeat_interval: Duration::from_millis(5),
            failure_timeout: Duration::from_millis(20),
            drain: Duration::from_millis(20),
            full_heartbeats: 3,
        }
    }
}

/// The chain as the runtime should configure it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Node indices, head first.
    pub chain: Vec<usize>,
    pub writes_paused: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Configure every table to match.
    Apply(Layout),
    /// Copy `from`'s committed state into each of `to` (register reads and
    /// writes while writes are paused).
    Copy { from: usize, to: Vec<usize> },
}

impl Action {
    /// A step later steps build on: a copy, or a layout that pauses
    /// writes. If it did not land, the steps after it must not run.
    pub fn is_critical(&self) -> bool {
        match self {
            Action::Copy { .. } => true,
            Action::Apply(l) => l.writes_paused,
        }
    }
}

/// What a node reports with its heartbeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NodeReport {
    /// It holds a role (a restarted switch has none).
    pub configured: bool,
    /// NetCRAQ objects with every version cell in use.
    pub full_objects: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Normal,
    /// Writes paused; copy at `until`.
    Draining {
        until: Time,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControlStats {
    pub removals: u64,
    pub resyncs: u64,
    pub joins: u64,
    /// Resyncs started again because a pause, a copy or the new chain did
    /// not reach every node ([`ChainControl::on_failed`]).
    pub retried: u64,
}

/// The end of a resync, until the runtime has applied it: what to go back
/// to if one of its steps does not land.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Resume {
    members: Vec<usize>,
    joined: Vec<usize>,
}

pub struct ChainControl {
    pub config: ControlConfig,
    members: Vec<usize>,
    joining: Vec<usize>,
    last_seen: Vec<Time>,
    /// Node answered since the last tick.
    heard: Vec<bool>,
    /// Ticks in a row without an answer.
    silent_polls: Vec<u32>,
    full_streak: Vec<u32>,
    phase: Phase,
    resync_wanted: bool,
    /// Set by the tick that ended a resync, until the next heartbeat or
    /// tick: the runtime applies that tick's actions in between.
    resume: Option<Resume>,
    next_tick: Time,
    pub stats: ControlStats,
    /// Every action, with its time (for reports and tests).
    pub log: Vec<(Time, Action)>,
}

impl ChainControl {
    /// A chain of `nodes` nodes in index order; returns the control plane
    /// and the initial layout to apply.
    pub fn new(config: ControlConfig, nodes: usize, now: Time) -> (ChainControl, Layout) {
        assert!(nodes > 0);
        let members: Vec<usize> = (0..nodes).collect();
        let layout = Layout { chain: members.clone(), writes_paused: false };
        let c = ChainControl {
            next_tick: now + config.heartbeat_interval,
            config,
            members,
            joining: vec![],
            last_seen: vec![now; nodes],
            heard: vec![false; nodes],
            silent_polls: vec![0; nodes],
            full_streak: vec![0; nodes],
            phase: Phase::Normal,
            resync_wanted: false,
            resume: None,
            stats: ControlStats::default(),
            log: vec![],
        };
        debug_assert!(c.holds());
        (c, layout)
    }

    /// The control plane's invariants: members and joining nodes are
    /// distinct nodes of the deployment, no node both; one entry per node
    /// in every per-node table.
    fn holds(&self) -> bool {
        let nodes = self.last_seen.len();
        let mut seen = vec![false; nodes];
        let distinct =
            self.members.iter().chain(&self.joining).all(|&n| n < nodes && !std::mem::replace(&mut seen[n], true));
        distinct && self.heard.len() == nodes && self.silent_polls.len() == nodes && self.full_streak.len() == nodes
    }

    pub fn members(&self) -> &[usize] {
        debug_assert!(self.holds());
        &self.members
    }

    pub fn is_paused(&self) -> bool {
        debug_assert!(self.holds());
        matches!(self.phase, Phase::Draining { .. })
    }

    pub fn next_tick(&self) -> Time {
        debug_assert!(self.holds());
        self.next_tick
    }

    fn layout(&self) -> Layout {
        debug_assert!(self.holds());
        Layout { chain: self.members.clone(), writes_paused: self.is_paused() }
    }

    fn emit(&mut self, now: Time, a: Action, out: &mut Vec<Action>) {
        self.log.push((now, a.clone()));
        out.push(a);
    }

    /// The runtime could not apply `action` (a node did not take it), or
    /// skipped it because an earlier critical action of the same step
    /// failed ([`Action::is_critical`]). Call before the next heartbeat.
    ///
    /// A failed critical action undoes the resync it belonged to (the
    /// joining nodes wait again) and starts a new one from the pause:
    /// writes are paused at the head in every layout a node may now hold,
    /// and stay so until a copy and a new chain have reached every member.
    /// A layout that resumes writes and did not land needs nothing: every
    /// member holds its role already, the runtime sends it again.
    pub fn on_failed(&mut self, now: Time, action: &Action) {
        let _ = now;
        if !action.is_critical() {
            return;
        }
        if let Some(r) = self.resume.take() {
            // The members the resync added join again; any member removed
            // since stays removed.
            self.members.retain(|n| !r.joined.contains(n));
            debug_assert!(self.members.iter().all(|n| r.members.contains(n)));
            for n in r.joined {
                if !self.joining.contains(&n) {
                    self.joining.push(n);
                }
            }
        }
        if !(self.phase == Phase::Normal && self.resync_wanted) {
            // The first failure of this step (later ones find it so).
            self.stats.retried += 1;
        }
        self.phase = Phase::Normal;
        self.resync_wanted = true;
        debug_assert!(self.holds());
    }

    /// Node `node` answered a heartbeat.
    pub fn on_heartbeat(&mut self, now: Time, node: usize, report: NodeReport, out: &mut Vec<Action>) {
        self.resume = None;
        let (Some(seen), Some(heard)) = (self.last_seen.get_mut(node), self.heard.get_mut(node)) else { return };
        *seen = now;
        *heard = true;
        let member = self.members.contains(&node);
        if member && !report.configured {
            // Restarted before we noticed: its state is gone.
            self.remove(now, node, out);
        } else if !member && !self.joining.contains(&node) {
            self.joining.push(node);
            self.stats.joins += 1;
            self.resync_wanted = true;
        }
        if member {
            self.full_streak[node] = if report.full_objects > 0 { self.full_streak[node] + 1 } else { 0 };
            if self.full_streak[node] >= self.config.full_heartbeats {
                self.full_streak[node] = 0;
                self.resync_wanted = true;
            }
        }
        debug_assert!(self.holds());
    }

    fn remove(&mut self, now: Time, node: usize, out: &mut Vec<Action>) {
        debug_assert!(self.members.contains(&node), "only a member is removed");
        self.members.retain(|n| *n != node);
        self.stats.removals += 1;
        self.resync_wanted = true;
        self.emit(now, Action::Apply(self.layout()), out);
    }

    /// Detects failures, runs resyncs. Call at `next_tick` (or later).
    pub fn on_tick(&mut self, now: Time, out: &mut Vec<Action>) {
        self.resume = None;
        self.next_tick = now + self.config.heartbeat_interval;
        for (heard, silent) in self.heard.iter_mut().zip(self.silent_polls.iter_mut()) {
            *silent = if std::mem::take(heard) { 0 } else { silent.saturating_add(1) };
        }
        let failed: Vec<usize> = self
            .members
            .iter()
            .copied()
            .filter(|n| {
                now.since(self.last_seen[*n]) > self.config.failure_timeout
                    && self.silent_polls[*n] >= SILENT_POLLS_FOR_FAILURE
            })
            .collect();
        for n in failed {
            self.remove(now, n, out);
        }
        self.joining.retain(|n| now.since(self.last_seen[*n]) <= self.config.failure_timeout);
        match self.phase {
            Phase::Normal if self.resync_wanted && !self.members.is_empty() => {
                self.resync_wanted = false;
                self.phase = Phase::Draining { until: now + self.config.drain };
                self.emit(now, Action::Apply(self.layout()), out);
            }
            Phase::Draining { until } if now >= until && !self.members.is_empty() => {
                self.resync_wanted = false;
                let tail = *self.members.last().expect("non-empty");
                let mut to: Vec<usize> = self.members.iter().copied().filter(|n| *n != tail).collect();
                to.extend(self.joining.iter().copied());
                self.emit(now, Action::Copy { from: tail, to }, out);
                self.resume = Some(Resume { members: self.members.clone(), joined: self.joining.clone() });
                self.members.append(&mut self.joining);
                // Every member takes the new chain while writes are still
                // paused; only then does the head resume them.
                self.emit(now, Action::Apply(Layout { chain: self.members.clone(), writes_paused: true }), out);
                self.phase = Phase::Normal;
                self.stats.resyncs += 1;
                self.emit(now, Action::Apply(self.layout()), out);
            }
            _ => {}
        }
        debug_assert!(self.holds());
        debug_assert!(self.next_tick > now || self.config.heartbeat_interval.is_zero());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time(x * 1_000_000)
    }

    fn tick_all(c: &mut ChainControl, now: Time, up: &[usize], configured: bool) -> Vec<Action> {
        let mut out = vec![];
        for n in up {
            let report = NodeReport { configured: configured || c.members().contains(n), full_objects: 0 };
            c.on_heartbeat(now, *n, report, &mut out);
        }
        c.on_tick(now, &mut out);
        out
    }

    #[test]
    fn a_silent_member_is_removed_then_recovered_at_the_tail() {
        // Section III-C: immediate removal, then copy while writes are
        // paused, then re-add.
        let (mut c, layout) = ChainControl::new(ControlConfig::default(), 4, ms(0));
        assert_eq!(layout.chain, vec![0, 1, 2, 3]);
        let mut t = 5;
        let mut actions = vec![];
        while c.members().len() == 4 {
            actions = tick_all(&mut c, ms(t), &[0, 2, 3], true);
            t += 5;
        }
        assert_eq!(t, 30, "detected after the 20 ms timeout");
        assert_eq!(actions[0], Action::Apply(Layout { chain: vec![0, 2, 3], writes_paused: false }));
        assert_eq!(actions[1], Action::Apply(Layout { chain: vec![0, 2, 3], writes_paused: true }));
        // The drain ends: the tail's state is copied, writes resume.
        while c.is_paused() {
            actions = tick_all(&mut c, ms(t), &[0, 2, 3], true);
            t += 5;
        }
        assert_eq!(actions[0], Action::Copy { from: 3, to: vec![0, 2] });
        assert_eq!(actions[1], Action::Apply(Layout { chain: vec![0, 2, 3], writes_paused: true }));
        assert_eq!(actions[2], Action::Apply(Layout { chain: vec![0, 2, 3], writes_paused: false }));
        // Node 1 restarts, unconfigured: it joins as the new tail.
        let mut all = vec![];
        for _ in 0..10 {
            all.extend(tick_all(&mut c, ms(t), &[0, 1, 2, 3], false));
            t += 5;
        }
        assert!(all.contains(&Action::Copy { from: 3, to: vec![0, 2, 1] }));
        let n = all.len();
        assert_eq!(
            all[n - 2..],
            [
                Action::Apply(Layout { chain: vec![0, 2, 3, 1], writes_paused: true }),
                Action::Apply(Layout { chain: vec![0, 2, 3, 1], writes_paused: false })
            ],
            "the new tail and the old one take their roles before the head resumes writes"
        );
        assert_eq!(c.stats, ControlStats { removals: 1, resyncs: 2, joins: 1, retried: 0 });
    }

    /// Ticks with every node of `up` answering (unconfigured if not a
    /// member) until a resync ends; the actions of that tick.
    fn until_resync_ends(c: &mut ChainControl, t: &mut u64, up: &[usize]) -> Vec<Action> {
        for _ in 0..100 {
            let actions = tick_all(c, ms(*t), up, false);
            *t += 5;
            if actions.iter().any(|a| matches!(a, Action::Copy { .. })) {
                return actions;
            }
        }
        panic!("no resync ended");
    }

    #[test]
    fn a_resync_whose_copy_or_new_chain_did_not_land_starts_again_from_the_pause() {
        // Node 2 of 3 restarted: it joins at the end of a resync.
        let (mut c, _) = ChainControl::new(ControlConfig::default(), 3, ms(0));
        let mut t = 5;
        tick_all(&mut c, ms(t), &[0, 1], true);
        let mut out = vec![];
        c.on_heartbeat(ms(t), 2, NodeReport { configured: false, full_objects: 0 }, &mut out);
        assert_eq!(c.members(), &[0, 1]);
        for failing in 0..2 {
            let actions = until_resync_ends(&mut c, &mut t, &[0, 1, 2]);
            assert_eq!(actions[0], Action::Copy { from: 1, to: vec![0, 2] });
            assert_eq!(c.members(), &[0, 1, 2]);
            // The runtime: action `failing` did not land, the rest skipped.
            for a in &actions[failing..] {
                c.on_failed(ms(t), a);
            }
            assert_eq!(c.members(), &[0, 1], "node 2 joins again, through a new copy");
            assert_eq!(c.stats.retried, failing as u64 + 1);
            // The next tick pauses writes again, and the drain restarts.
            let again = tick_all(&mut c, ms(t), &[0, 1, 2], false);
            t += 5;
            assert_eq!(again, vec![Action::Apply(Layout { chain: vec![0, 1], writes_paused: true })]);
            assert!(c.is_paused());
        }
        let actions = until_resync_ends(&mut c, &mut t, &[0, 1, 2]);
        // A resume that did not land needs nothing more.
        c.on_failed(ms(t), &actions[2]);
        assert_eq!(c.members(), &[0, 1, 2]);
        assert!(!c.is_paused());
        assert_eq!(c.stats.retried, 2);
    }

    #[test]
    fn a_pause_that_did_not_land_is_sent_again_and_the_drain_timed_from_it() {
        let (mut c, _) = ChainControl::new(ControlConfig::default(), 3, ms(0));
        let mut t = 5;
        while c.members().len() == 3 {
            tick_all(&mut c, ms(t), &[0, 1], true);
            t += 5;
        }
        // The removal's tick paused writes; the head did not take it.
        let pause = Action::Apply(Layout { chain: vec![0, 1], writes_paused: true });
        c.on_failed(ms(t), &pause);
        assert!(!c.is_paused());
        let again = tick_all(&mut c, ms(t), &[0, 1], true);
        assert_eq!(again, vec![pause]);
        let paused_at = t;
        t += 5;
        let actions = until_resync_ends(&mut c, &mut t, &[0, 1]);
        assert_eq!(actions[0], Action::Copy { from: 1, to: vec![0] });
        assert!(t - 5 >= paused_at + 20, "drained 20 ms after the pause that landed");
    }

    #[test]
    fn a_member_that_restarted_unnoticed_is_removed_at_once() {
        let (mut c, _) = ChainControl::new(ControlConfig::default(), 3, ms(0));
        let mut out = vec![];
        c.on_heartbeat(ms(1), 1, NodeReport { configured: false, full_objects: 0 }, &mut out);
        assert_eq!(out, vec![Action::Apply(Layout { chain: vec![0, 2], writes_paused: false })]);
    }

    #[test]
    fn persistently_full_objects_trigger_a_resync() {
        let (mut c, _) = ChainControl::new(ControlConfig::default(), 2, ms(0));
        let mut out = vec![];
        for i in 1..=3 {
            for n in 0..2 {
                c.on_heartbeat(
                    ms(5 * i),
                    n,
                    NodeReport { configured: true, full_objects: (n == 0) as usize },
                    &mut out,
                );
            }
            c.on_tick(ms(5 * i), &mut out);
        }
        assert!(c.is_paused());
    }

    #[test]
    fn a_control_plane_held_up_does_not_take_its_own_delay_for_a_failure() {
        // Section III-C removes a node that failed; a control loop that
        // stalled 100 ms and then missed one answer has no evidence of that.
        let (mut c, _) = ChainControl::new(ControlConfig::default(), 3, ms(0));
        for t in [5, 10, 15] {
            tick_all(&mut c, ms(t), &[0, 1, 2], true);
        }
        // Held up until 115 ms; node 1's answer to this poll is lost.
        let actions = tick_all(&mut c, ms(115), &[0, 2], true);
        assert!(actions.is_empty(), "{actions:?}");
        assert_eq!(c.members(), &[0, 1, 2]);
        tick_all(&mut c, ms(120), &[0, 1, 2], true);
        assert_eq!(c.members(), &[0, 1, 2]);
        // A node that stays silent is still removed, at its third missed poll.
        let mut t = 125;
        while c.members().len() == 3 {
            tick_all(&mut c, ms(t), &[0, 2], true);
            t += 5;
        }
        assert_eq!(t, 150, "removed at 145 ms: 25 ms and 5 polls after its last answer");
        assert_eq!(c.members(), &[0, 2]);
    }
}
