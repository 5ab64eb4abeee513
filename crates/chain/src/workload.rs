//! A closed-loop workload driver around [`ChainClient`]: each client runs
//! one operation after another (reads or writes at `write_ratio`, keys
//! uniform), as the randomized checks and the live demo use it. Written
//! values are unique: `client id (4 bytes) | operation number (8 bytes) |
//! attempt stamp (4 bytes)`, so the checker can tell every write apart.

use std::time::Duration;

use innet_core::rng::Rng;
use innet_core::{Host, Outbox, Time};
use innet_wire::netcraq::Value;

use crate::client::{ChainClient, Completion, OpKind};

#[derive(Clone, Debug)]
pub struct Workload {
    pub write_ratio: f64,
    pub keys: u32,
    pub think: Duration,
    pub start: Time,
    /// No operation starts after this.
    pub stop: Time,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadStats {
    pub reads: u64,
    pub writes: u64,
    pub latency_sum_s: f64,
    /// Completion times, for interruption measurements.
    pub last_completion: Option<Time>,
    /// Longest gap between two completions.
    pub max_gap: Duration,
}

pub struct LoadClient {
    pub client: ChainClient,
    pub workload: Workload,
    rng: Rng,
    next_start: Time,
    ops: u64,
    pub stats: LoadStats,
    /// Every completion, when recording.
    pub completions: Option<Vec<Completion>>,
}

impl LoadClient {
    pub fn new(client: ChainClient, workload: Workload, rng: Rng) -> LoadClient {
        debug_assert!((0.0..=1.0).contains(&workload.write_ratio) && workload.keys >= 1);
        let next_start = workload.start;
        LoadClient { client, workload, rng, next_start, ops: 0, stats: LoadStats::default(), completions: None }
    }

    fn value(&self) -> Value {
        let mut v = [0u8; 16];
        v[..4].copy_from_slice(&(self.client.config.id + 1).to_be_bytes());
        v[4..12].copy_from_slice(&self.ops.to_be_bytes());
        // Distinct per client and operation, never the initial zero value
        // (the linearizability checker needs distinct values).
        debug_assert_ne!(Value(v), Value::ZERO);
        Value(v)
    }

    fn finished(&mut self, c: Completion) {
        match c.kind {
            OpKind::Read => self.stats.reads += 1,
            OpKind::Write => self.stats.writes += 1,
        }
        self.stats.latency_sum_s += c.finished.since(c.started).as_secs_f64();
        if let Some(last) = self.stats.last_completion {
            self.stats.max_gap = self.stats.max_gap.max(c.finished.since(last));
        }
        self.stats.last_completion = Some(c.finished);
        if let Some(v) = self.completions.as_mut() {
            v.push(c);
        }
        self.next_start = c.finished + self.workload.think;
        debug_assert!(self.stats.reads + self.stats.writes <= self.ops, "more completions than operations started");
    }
}

impl Host for LoadClient {
    fn on_packet(&mut self, now: Time, packet: &[u8], _out: &mut Outbox) {
        if let Some(c) = self.client.on_packet(now, packet) {
            self.finished(c);
        }
    }

    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        if self.client.is_idle() && now >= self.next_start && now < self.workload.stop {
            self.ops += 1;
            let key = self.rng.below(self.workload.keys as u64) as u32;
            if self.rng.chance(self.workload.write_ratio) {
                let v = self.value();
                self.client.put(now, key, v);
            } else {
                self.client.get(now, key);
            }
        }
        self.client.on_tick(now, out);
    }

    fn next_tick(&self) -> Option<Time> {
        if self.client.is_idle() {
            (self.next_start < self.workload.stop).then_some(self.next_start)
        } else {
            self.client.next_tick()
        }
    }
}
