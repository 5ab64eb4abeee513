//! `innet chaos paxos --kv`: the crash campaign of issue 24 item 6 on the
//! live key-value service. A deployment of real processes on loopback
//! (the coordinator `innet up paxos --node coordinator`, three persistent
//! acceptors `--node acceptorN --dir D`, the backup coordinator in the
//! process that runs the rest, three `innet kv-replica` processes with
//! directories of their own) serves [`CLIENTS`] network clients
//! ([`KvNetClient`], each given every replica, failing over by itself)
//! issuing put, get, delete and compare-and-set on [`KEYS`] keys, while
//! the schedule SIGKILLs and restarts acceptors and replicas (one process
//! down at a time) and kills the coordinator (the backup takes over). A
//! coordinator restart is one kind of event of the schedule, enabled by
//! `--coordinator-restarts`, and so is a restart of the backup's process
//! (while the coordinator is up: one process down at a time; the backup
//! starts again watching, and takes over above every round it hears when
//! the coordinator dies next): every `innet up paxos` process runs with
//! `--data-plane process --dir D`, so the deployment has failback (a
//! restarted coordinator takes a fresh round with phase 1 and the backup
//! hands the role back; `innet_live::paxos::coordinator_epoch`).
//!
//! Every client's history is recorded (invocation and response times,
//! operation, result; an operation that timed out, or was answered
//! EXPIRED, has no response). At the end, after the load stopped and the
//! deployment drained, one more client reads every key; then:
//!
//! * the whole history must be linearizable ([`crate::kv_check`]);
//! * the last acknowledged write of each key (one no other write of the
//!   key overlaps or follows) must be what the final read saw: otherwise
//!   an acknowledged write was lost;
//! * every replica's store, read from its directory after the processes
//!   stopped, must be identical and hold, for every key, what the final
//!   read saw.
//!
//! Failovers and failbacks are counted from what the backup reports (its
//! `takeovers` and `step_downs` metrics, polled from the process that runs
//! it), not from
//! what the schedule intended. The schedule derives from the seed; timing
//! on a live machine is not replayed exactly.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use innet_core::rng::Rng;
use innet_live::kv_client::KvNetClient;
use innet_wire::kv::{Op, Reply};

use crate::harness::{free_ports, ChaosConfig, ChaosReport, Event, Run, DRAIN};
use crate::kv_check::{KvOp, KvRecord, KvResult};

/// Clients issuing operations.
pub const CLIENTS: usize = 4;
/// Keys they operate on (`k0`, `k1`, ...): few, so operations overlap.
pub const KEYS: usize = 4;
/// Operations one client records at most (then it stops issuing).
pub const HISTORY_PER_CLIENT_MAX: usize = 1_000_000;
/// A client's wait for one replica before it tries the next.
pub const CLIENT_TIMEOUT: Duration = Duration::from_millis(300);
/// A client gives an operation up (no response) after this long.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(10);
/// How long the replicas may take to agree (same next instance and
/// digest) after the final reads.
pub const CONVERGE_MAX: Duration = Duration::from_secs(60);
/// Every this often the backup's metrics are read (failovers, failbacks).
pub const METRICS_POLL: Duration = Duration::from_millis(100);
/// A value of a put is this long one time in [`LARGE_ONE_IN`] (over one
/// datagram: it goes by TCP).
pub const LARGE_VALUE: usize = 3_000;
pub const LARGE_ONE_IN: u64 = 20;

const ACCEPTORS: usize = 3;
const REPLICAS: usize = 3;

fn s(x: impl ToString) -> String {
    x.to_string()
}

/// The kinds of process the schedule kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Coordinator,
    Acceptor,
    Replica,
    Backup,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Coordinator => "coordinator",
            Role::Acceptor => "acceptor",
            Role::Replica => "replica",
            Role::Backup => "backup",
        }
    }
}

/// The kill schedule: one process down at a time; each kill is followed
/// by its restart 0.4-1.6 s later and the next kill 0.3-1.2 s after that.
/// The first three kills are one of each kind (in an order the seed
/// picks); a coordinator that is not restarted is killed once.
/// Process indices of the deployment's roles in its [`Run`].
struct Procs<'p> {
    backup: usize,
    coordinator: usize,
    acceptors: &'p [usize],
    replicas: &'p [usize],
}

fn schedule(rng: &mut Rng, duration_s: f64, p: Procs, coordinator_restarts: bool) -> Vec<Event> {
    let (coordinator, acceptors, replicas) = (p.coordinator, p.acceptors, p.replicas);
    let mut first = vec![Role::Coordinator, Role::Acceptor, Role::Replica];
    if coordinator_restarts {
        // With failback every role restarts: the backup too.
        first.push(Role::Backup);
    }
    for i in (1..first.len()).rev() {
        first.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut out = vec![];
    let mut t = 1.0 + rng.f64();
    let mut coordinator_down = false;
    let end = duration_s - 1.0;
    for k in 0.. {
        let role = match first.get(k) {
            Some(&r) => r,
            None if coordinator_restarts && rng.below(5) == 0 => Role::Coordinator,
            None if coordinator_restarts && rng.below(10) == 0 => Role::Backup,
            None if rng.chance(0.5) => Role::Acceptor,
            None => Role::Replica,
        };
        let proc = match role {
            Role::Coordinator => coordinator,
            Role::Acceptor => acceptors[rng.below(acceptors.len() as u64) as usize],
            Role::Replica => replicas[rng.below(replicas.len() as u64) as usize],
            Role::Backup => p.backup,
        };
        let down = 0.4 + rng.f64() * 1.2;
        if t + down > end {
            break;
        }
        if role == Role::Coordinator && !coordinator_restarts {
            if coordinator_down {
                continue;
            }
            // Down for good: time for the backup to take over.
            coordinator_down = true;
            out.push(Event { at: t, proc, restart: false });
            t += 2.0;
            continue;
        }
        out.push(Event { at: t, proc, restart: false });
        out.push(Event { at: t + down, proc, restart: true });
        t += down + 0.3 + rng.f64() * 0.9;
    }
    out
}

/// One client's load: operations on random keys until `end`.
fn client_load(
    k: usize,
    mut kv: KvNetClient,
    mut rng: Rng,
    t0: Instant,
    end: Instant,
) -> (Vec<KvRecord>, Vec<String>, u64) {
    let (mut history, mut odd) = (vec![], vec![]);
    let mut last_seen: BTreeMap<usize, Option<Vec<u8>>> = BTreeMap::new();
    let mut n = 0u64;
    while Instant::now() < end && history.len() < HISTORY_PER_CLIENT_MAX {
        let key = rng.below(KEYS as u64) as usize;
        let kb = format!("k{key}").into_bytes();
        n += 1;
        // Every value written is unique: client, number.
        let mut value = format!("c{k}-{n}").into_bytes();
        if rng.below(LARGE_ONE_IN) == 0 {
            value.resize(LARGE_VALUE, b'.');
        }
        let (op, kvop) = match rng.below(100) {
            0..=34 => (Op::Put { key: kb.clone(), value: value.clone() }, KvOp::Put(value)),
            35..=64 => (Op::Get { key: kb.clone() }, KvOp::Get),
            65..=74 => (Op::Delete { key: kb.clone() }, KvOp::Delete),
            _ => {
                // Expect what this client saw last (or, sometimes, absent).
                let expected = if rng.chance(0.8) { last_seen.get(&key).cloned().flatten() } else { None };
                (
                    Op::Cas { key: kb.clone(), expected: expected.clone(), value: value.clone() },
                    KvOp::Cas { expected, value },
                )
            }
        };
        let invoke = t0.elapsed();
        let reply = kv.execute(op);
        let at = t0.elapsed();
        let (response, result) = match reply {
            Ok(Reply::Ok) => (Some(at), KvResult::Ok),
            Ok(Reply::Value(v)) => (Some(at), KvResult::Value(Some(v))),
            Ok(Reply::NotFound) => (Some(at), KvResult::Value(None)),
            Ok(Reply::CasFailed) => (Some(at), KvResult::CasFailed),
            Ok(Reply::Expired) | Err(_) => (None, KvResult::Unknown),
            Ok(r) => {
                odd.push(format!("client {k}: {r:?} for an operation on k{key}"));
                (None, KvResult::Unknown)
            }
        };
        match (&kvop, &result) {
            (_, KvResult::Value(v)) => {
                last_seen.insert(key, v.clone());
            }
            (KvOp::Put(v) | KvOp::Cas { value: v, .. }, KvResult::Ok) => {
                last_seen.insert(key, Some(v.clone()));
            }
            (KvOp::Delete, KvResult::Ok) => {
                last_seen.insert(key, None);
            }
            _ => {}
        }
        history.push(KvRecord { client: k, key: kb, op: kvop, invoke, response, result });
    }
    (history, odd, kv.failovers)
}

/// The clients' loads ([`client_load`]) in threads of their own, client
/// `k` trying the replicas at `client_ports` from the `k`th on.
#[allow(clippy::type_complexity)]
fn spawn_clients(
    client_ports: &[SocketAddr],
    rng: &mut Rng,
    t0: Instant,
    end: Instant,
) -> anyhow::Result<Vec<std::thread::JoinHandle<(Vec<KvRecord>, Vec<String>, u64)>>> {
    (0..CLIENTS)
        .map(|k| {
            let mut order = client_ports.to_vec();
            order.rotate_left(k % REPLICAS);
            let mut kv = KvNetClient::connect(&order)?;
            kv.timeout = CLIENT_TIMEOUT;
            kv.deadline = CLIENT_DEADLINE;
            let rng = rng.fork();
            Ok(std::thread::Builder::new()
                .name(format!("innet-chaos-kv{k}"))
                .spawn(move || client_load(k, kv, rng, t0, end))?)
        })
        .collect()
}

/// The last status line (`applied N next I digest H ...`) in a replica's
/// log: `(next, digest)`.
fn replica_status(log: &Path) -> Option<(u64, String)> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().rev().find(|l| l.starts_with("applied "))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let field = |f: &str| w.iter().position(|x| *x == f).and_then(|i| w.get(i + 1)).copied();
    Some((field("next")?.parse().ok()?, field("digest")?.to_string()))
}

/// The backup's `takeovers` and `step_downs` (its handbacks to a
/// restarted coordinator) from the metrics at `addr`: counts, so a
/// failover and failback between two polls are both seen.
fn takeovers(addr: SocketAddr) -> Option<(u64, u64)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: chaos\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let value = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().last()?.parse::<f64>().ok().map(|v| v as u64)
    };
    Some((value("innet_paxos_takeovers")?, value("innet_paxos_step_downs")?))
}

/// A replica directory's data (key, value), read after its process stopped.
#[cfg(feature = "leveldb")]
fn replica_contents(dir: &Path) -> anyhow::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let r = innet_paxos_kv::Replica::open(dir, innet_paxos::LearnerConfig::new(0, 2))
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", dir.display()))?;
    Ok(r.contents())
}

#[cfg(not(feature = "leveldb"))]
fn replica_contents(_: &Path) -> anyhow::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    anyhow::bail!("this innet was built without LevelDB (cargo feature `leveldb`): the replicas' stores cannot be read")
}

/// Acknowledged writes lost: for each key, its last acknowledged write
/// (one that no other write of the key overlaps or follows) must be what
/// the final read saw.
fn lost_writes(history: &[KvRecord], finals: &BTreeMap<Vec<u8>, Option<Vec<u8>>>) -> Vec<String> {
    let mut out = vec![];
    for (key, seen) in finals {
        let writes: Vec<&KvRecord> = history
            .iter()
            .filter(|r| &r.key == key && !matches!(r.op, KvOp::Get) && r.result != KvResult::CasFailed)
            .collect();
        for w in writes.iter().filter(|w| w.response.is_some() && w.result == KvResult::Ok) {
            let last = writes.iter().all(|o| std::ptr::eq(*o, *w) || o.response.is_some_and(|t| t < w.invoke));
            if !last {
                continue;
            }
            let wrote = match &w.op {
                KvOp::Put(v) | KvOp::Cas { value: v, .. } => Some(v.clone()),
                _ => None,
            };
            if &wrote != seen {
                out.push(format!(
                    "key {}: acknowledged write by client {} at {:?} lost: the final read saw {}",
                    String::from_utf8_lossy(key),
                    w.client,
                    w.response,
                    seen.as_ref().map_or("nothing".into(), |v| format!("{} bytes", v.len()))
                ));
            }
        }
    }
    out
}

/// The campaign ([`crate::kv`]'s module doc).
pub fn run(cfg: &ChaosConfig, report: &mut ChaosReport) -> anyhow::Result<()> {
    report.flags = format!(" --kv{}", if cfg.coordinator_restarts { " --coordinator-restarts" } else { "" });
    let mut d = KvDeployment::start(cfg)?;
    let procs = Procs { backup: d.backup, coordinator: d.coordinator, acceptors: &d.acceptors, replicas: &d.replicas };
    let events = schedule(&mut d.run.rng, cfg.duration_s, procs, cfg.coordinator_restarts);

    // The clients, in threads of their own.
    let t0 = Instant::now();
    let load_end = t0 + Duration::from_secs_f64(cfg.duration_s);
    let clients = spawn_clients(&d.client_ports, &mut d.run.rng, t0, load_end)?;

    let mut tally = d.supervise(cfg, events, t0, load_end, report)?;
    d.restart_the_rest(cfg, t0, &mut tally, report)?;
    let (mut history, mut odd, mut client_failovers) = (vec![], vec![], 0);
    for c in clients {
        let (h, o, f) = c.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
        history.extend(h);
        odd.extend(o);
        client_failovers += f;
    }
    let operations = history.len() as u64;
    let timeouts = history.iter().filter(|r| r.response.is_none()).count() as u64;
    std::thread::sleep(DRAIN);

    let finals = final_reads(&d.client_ports, t0, &mut history, report)?;
    let logs: Vec<std::path::PathBuf> = d.replicas.iter().map(|&i| d.run.procs[i].log.clone()).collect();
    let agreed = replicas_agree(&logs, report);
    d.run.finish(report);
    report.violations.extend(odd);

    // The checks.
    let lost = lost_writes(&history, &finals);
    let lin = crate::kv_check::check(&history);
    let mismatches = store_mismatches(&d.data, &finals, report)?;
    let lost_n = lost.len() as u64;
    report.violations.extend(lost);
    match &lin {
        Ok(sum) => {
            report.checked = format!(
                "linearizable: {} operations on {} keys ({} acknowledged writes, {} without response), {} states \
                 searched; {} acknowledged writes lost; {} replicas identical: {}",
                sum.operations,
                sum.keys,
                sum.writes_acked,
                sum.unknown,
                sum.states,
                lost_n,
                REPLICAS,
                mismatches == 0 && agreed
            )
        }
        Err(v) => report.violations.extend(v.iter().cloned()),
    }
    tally.report(report);
    report.counts.push(("operations".into(), operations));
    report.counts.push(("timeouts".into(), timeouts));
    report.counts.push(("client_failovers".into(), client_failovers));
    report.counts.push(("lost_acked_writes".into(), lost_n));
    report.counts.push(("replica_mismatches".into(), mismatches));
    let _ = std::fs::remove_dir_all(&d.data);
    Ok(())
}

/// The deployment as processes: the backup's (with the metrics), the
/// coordinator's, the acceptors' and the replicas', started.
struct KvDeployment<'a> {
    run: Run<'a>,
    /// Process indices in `run`.
    backup: usize,
    coordinator: usize,
    acceptors: Vec<usize>,
    replicas: Vec<usize>,
    /// The replicas' client ports.
    client_ports: Vec<SocketAddr>,
    /// The backup's process's metrics endpoint.
    metrics: SocketAddr,
    /// The acceptors' and the replicas' directories.
    data: std::path::PathBuf,
}

impl<'a> KvDeployment<'a> {
    fn start(cfg: &'a ChaosConfig) -> anyhow::Result<KvDeployment<'a>> {
        // Ports: coordinator, acceptors, backup, learners (the replicas), then
        // the replicas' client ports and the metrics of the backup's process.
        let base = free_ports(16, false)?;
        let client_ports: Vec<SocketAddr> =
            (0..REPLICAS).map(|i| SocketAddr::from(([127, 0, 0, 1], base + 10 + i as u16))).collect();
        let metrics = SocketAddr::from(([127, 0, 0, 1], base + 14));
        let data = cfg.dir.join("kv-data");
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data)?;
        let acceptor_dir = data.join("acceptors");
        // Processes with a directory: failback (the coordinator's epochs in
        // DIR/coordinator; every process of the deployment must agree).
        let deployment = |extra: &[String]| {
            let mut a = vec![s("up"), s("paxos"), s("--base-port"), s(base), s("--learners"), s(REPLICAS)];
            a.extend([s("--external-learners"), s("--proposers"), s("0")]);
            a.extend([s("--data-plane"), s("process"), s("--dir"), s(acceptor_dir.display())]);
            a.extend(extra.iter().cloned());
            a
        };
        let mut run = Run::new(cfg);
        let elsewhere = std::iter::once(s("coordinator")).chain((0..ACCEPTORS).map(|i| format!("acceptor{i}")));
        let rest = deployment(&[s("--elsewhere"), elsewhere.collect::<Vec<_>>().join(","), s("--metrics"), s(metrics)]);
        let backup = run.add("backup", &rest);
        let coordinator = run.add("coordinator", &deployment(&[s("--node"), s("coordinator")]));
        let acceptors: Vec<usize> = (0..ACCEPTORS)
            .map(|i| {
                let args = [s("--node"), format!("acceptor{i}")];
                run.add(&format!("acceptor{i}"), &deployment(&args))
            })
            .collect();
        let replicas: Vec<usize> = (0..REPLICAS)
            .map(|i| {
                let args = [
                    s("kv-replica"),
                    s("--id"),
                    s(i),
                    s("--data-dir"),
                    s(data.join(format!("r{i}")).display()),
                    s("--base-port"),
                    s(base),
                    s("--learners"),
                    s(REPLICAS),
                    s("--client-port"),
                    s(client_ports[i].port()),
                    s("--status-ms"),
                    s(100),
                ];
                run.add(&format!("replica{i}"), &args)
            })
            .collect();
        run.start_all()?;
        Ok(KvDeployment { run, backup, coordinator, acceptors, replicas, client_ports, metrics, data })
    }

    fn role_of(&self, p: usize) -> Role {
        if p == self.coordinator {
            Role::Coordinator
        } else if p == self.backup {
            Role::Backup
        } else if self.acceptors.contains(&p) {
            Role::Acceptor
        } else {
            Role::Replica
        }
    }

    /// Until `until`: kills and restarts processes as `events` say (times
    /// from `t0`), samples them, and counts the backup's failovers and
    /// failbacks from its metrics.
    fn supervise(
        &mut self,
        cfg: &ChaosConfig,
        mut events: Vec<Event>,
        t0: Instant,
        until: Instant,
        report: &mut ChaosReport,
    ) -> anyhow::Result<Tally> {
        events.sort_by(|a, b| a.at.total_cmp(&b.at));
        let mut queue: std::collections::VecDeque<Event> = events.into();
        let mut tally = Tally::default();
        // The backup's counters as last read (its process restarts too).
        let mut seen = (0u64, 0u64);
        let mut next_poll = Instant::now();
        while Instant::now() < until {
            let now = t0.elapsed().as_secs_f64();
            while queue.front().is_some_and(|e| e.at <= now) {
                let Some(e) = queue.pop_front() else { break };
                let role = self.role_of(e.proc);
                let p = &mut self.run.procs[e.proc];
                if e.restart {
                    p.start(&cfg.exe)?;
                    *tally.restarts.entry(role).or_insert(0) += 1;
                    report.events.push((now, format!("restart {}", p.name)));
                } else if p.child.is_some() {
                    p.kill();
                    *tally.kills.entry(role).or_insert(0) += 1;
                    report.events.push((now, format!("SIGKILL {}", p.name)));
                }
            }
            for p in self.run.procs.iter_mut() {
                p.sample();
                p.poll();
            }
            if Instant::now() >= next_poll {
                next_poll = Instant::now() + METRICS_POLL;
                if let Some((over, back)) = takeovers(self.metrics) {
                    if over < seen.0 || back < seen.1 {
                        // A restarted backup counts from 0 again.
                        seen = (0, 0);
                    }
                    if over > seen.0 {
                        tally.failovers += over - seen.0;
                        report.events.push((now, format!("backup took over ({} times)", tally.failovers)));
                    }
                    if back > seen.1 {
                        tally.failbacks += back - seen.1;
                        report.events.push((now, format!("backup handed the role back ({} times)", tally.failbacks)));
                    }
                    seen = (over, back);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(tally)
    }

    /// Whatever the schedule left down comes back (not a coordinator
    /// without failback).
    fn restart_the_rest(
        &mut self,
        cfg: &ChaosConfig,
        t0: Instant,
        tally: &mut Tally,
        report: &mut ChaosReport,
    ) -> anyhow::Result<()> {
        for i in 0..self.run.procs.len() {
            let role = self.role_of(i);
            let p = &mut self.run.procs[i];
            if p.child.is_none() && (i != self.coordinator || cfg.coordinator_restarts) {
                p.start(&cfg.exe)?;
                *tally.restarts.entry(role).or_insert(0) += 1;
                report.events.push((t0.elapsed().as_secs_f64(), format!("restart {} (end of the schedule)", p.name)));
            }
        }
        Ok(())
    }
}

/// What the supervision did and saw: kills and restarts by role, and the
/// backup's failovers and failbacks.
#[derive(Default)]
struct Tally {
    kills: BTreeMap<Role, u64>,
    restarts: BTreeMap<Role, u64>,
    failovers: u64,
    failbacks: u64,
}

impl Tally {
    fn report(&self, report: &mut ChaosReport) {
        for role in [Role::Coordinator, Role::Acceptor, Role::Replica, Role::Backup] {
            report.counts.push((format!("kills_{}", role.name()), self.kills.get(&role).copied().unwrap_or(0)));
            report.counts.push((format!("restarts_{}", role.name()), self.restarts.get(&role).copied().unwrap_or(0)));
        }
        report.counts.push(("failovers".into(), self.failovers));
        report.counts.push(("failbacks".into(), self.failbacks));
    }
}

/// The final reads of every key, through the replicas at `client_ports`,
/// added to `history`: what each key holds (a read that failed is a
/// violation, and its key is left out).
fn final_reads(
    client_ports: &[SocketAddr],
    t0: Instant,
    history: &mut Vec<KvRecord>,
    report: &mut ChaosReport,
) -> anyhow::Result<BTreeMap<Vec<u8>, Option<Vec<u8>>>> {
    let mut reader = KvNetClient::connect(client_ports)?;
    reader.timeout = CLIENT_TIMEOUT;
    reader.deadline = CONVERGE_MAX;
    let mut finals = BTreeMap::new();
    for key in 0..KEYS {
        let kb = format!("k{key}").into_bytes();
        let invoke = t0.elapsed();
        let got = match reader.get(&kb) {
            Ok(got) => got,
            Err(e) => {
                report.violations.push(format!("the final read of k{key} failed: {e}"));
                continue;
            }
        };
        history.push(KvRecord {
            client: CLIENTS,
            key: kb.clone(),
            op: KvOp::Get,
            invoke,
            response: Some(t0.elapsed()),
            result: KvResult::Value(got.clone()),
        });
        finals.insert(kb, got);
    }
    Ok(finals)
}

/// Whether the replicas whose logs are `logs` agree (same next instance
/// and digest) within [`CONVERGE_MAX`]; a violation if not.
fn replicas_agree(logs: &[std::path::PathBuf], report: &mut ChaosReport) -> bool {
    let until = Instant::now() + CONVERGE_MAX;
    loop {
        let st: Vec<Option<(u64, String)>> = logs.iter().map(|l| replica_status(l)).collect();
        if st.iter().all(|x| x.is_some() && *x == st[0]) {
            return true;
        }
        if Instant::now() > until {
            report.violations.push(format!("the replicas did not agree within {CONVERGE_MAX:?}: {st:?}"));
            return false;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Stores (read from the replicas' directories under `data`) that differ
/// from replica 0's, and values that differ from what the final read
/// `finals` saw, each a violation.
fn store_mismatches(
    data: &Path,
    finals: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    report: &mut ChaosReport,
) -> anyhow::Result<u64> {
    let mut mismatches = 0u64;
    let stores: Vec<Vec<(Vec<u8>, Vec<u8>)>> =
        (0..REPLICAS).map(|i| replica_contents(&data.join(format!("r{i}")))).collect::<anyhow::Result<_>>()?;
    for (i, st) in stores.iter().enumerate() {
        if st != &stores[0] {
            mismatches += 1;
            report.violations.push(format!(
                "replica{i}'s store differs from replica0's ({} and {} keys)",
                st.len(),
                stores[0].len()
            ));
        }
        let map: BTreeMap<&Vec<u8>, &Vec<u8>> = st.iter().map(|(k, v)| (k, v)).collect();
        for (key, seen) in finals {
            if map.get(key).copied() != seen.as_ref() {
                mismatches += 1;
                report.violations.push(format!(
                    "replica{i} holds another value of {} than the final read saw",
                    String::from_utf8_lossy(key)
                ));
            }
        }
    }
    Ok(mismatches)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first kills are one of each kind (the backup too with
    /// restarts); one process down at a time; without restarts the
    /// coordinator is killed once; the same seed gives the same schedule.
    #[test]
    fn the_schedule_kills_every_kind_one_at_a_time() {
        for restarts in [false, true] {
            let procs = || Procs { backup: 7, coordinator: 0, acceptors: &[1, 2, 3], replicas: &[4, 5, 6] };
            let sched = |seed| schedule(&mut Rng::new(seed), 120.0, procs(), restarts);
            let e = sched(7);
            let again = sched(7);
            assert_eq!(format!("{e:?}"), format!("{again:?}"));
            let kills: Vec<usize> = e.iter().filter(|e| !e.restart).map(|e| e.proc).collect();
            let kind = |p: usize| [0, 1, 1, 1, 2, 2, 2, 3][p];
            let kinds = if restarts { 4 } else { 3 };
            let mut first: Vec<usize> = kills[..kinds].iter().map(|&p| kind(p)).collect();
            first.sort();
            assert_eq!(first, (0..kinds).collect::<Vec<_>>());
            assert_eq!(kills.contains(&7), restarts, "the backup is killed only with restarts");
            let coord = kills.iter().filter(|&&p| p == 0).count();
            if restarts {
                assert!(coord > 1, "{coord}");
            } else {
                assert_eq!(coord, 1);
            }
            let mut down: Option<usize> = None;
            for ev in &e {
                if ev.restart {
                    assert_eq!(down.take(), Some(ev.proc));
                } else if down.is_some() {
                    panic!("two down at once: {e:?}");
                } else if ev.proc != 0 || restarts {
                    down = Some(ev.proc);
                }
                assert!(ev.at < 119.0);
            }
            assert!(kills.len() > 30, "{}", kills.len());
        }
    }

    #[test]
    fn a_lost_write_is_found() {
        let w = |inv: u64, resp: u64, v: &str| KvRecord {
            client: 0,
            key: b"k0".to_vec(),
            op: KvOp::Put(v.as_bytes().to_vec()),
            invoke: Duration::from_millis(inv),
            response: Some(Duration::from_millis(resp)),
            result: KvResult::Ok,
        };
        let h = vec![w(0, 1, "a"), w(2, 3, "b")];
        let finals = |v: &str| BTreeMap::from([(b"k0".to_vec(), Some(v.as_bytes().to_vec()))]);
        assert!(lost_writes(&h, &finals("b")).is_empty());
        assert_eq!(lost_writes(&h, &finals("a")).len(), 1);
    }
}
