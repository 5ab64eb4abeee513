//! The chaos run ([`run`]) and the three services under it: each one's
//! deployment as processes, its kill schedule, its clients and its forger.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use innet_chain::client::{ChainClient, ClientConfig as ChainClientConfig, OpKind, Record};
use innet_chain::workload::{LoadClient as ChainLoad, Workload as ChainWorkload};
use innet_chain::Protocol;
use innet_core::rng::Rng;
use innet_core::Time;
use innet_live::chain::ViewedClient;
use innet_live::topology::Topology;
use innet_live::{clock, HostOptions};
use innet_paxos::check::{History, LearnerHistory};
use innet_paxos::deploy::{PaxosRole, Roles};
use innet_paxos::envelope::Envelope;
use innet_paxos::workload::LoadProposer;
use innet_paxos::{Learner, Proposer};
use innet_topology::Service;
use innet_txn::workload::{LoadClient, Workload};
use innet_txn::{ClientConfig, TxnClient};
use innet_wire::netchain::{self, NcMsg, NcOp};
use innet_wire::netcraq::{CraqMsg, KvOp};
use innet_wire::paxos::{MsgType, PaxosMsg};
use innet_wire::txn::{Flags, Op, OpType, Status, TxnMsg, Value};

use crate::harness::{
    any_port, free_ports, run_tapped, schedule, value16, ChaosConfig, ChaosReport, ChaosService, Forge, Run,
    CHAIN_KINDS, PAXOS_KINDS, TXN_KINDS,
};

/// Runs the chaos check `cfg` describes.
pub fn run(cfg: &ChaosConfig) -> anyhow::Result<ChaosReport> {
    cfg.validate().map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(&cfg.dir).with_context(|| format!("cannot create {}", cfg.dir.display()))?;
    let _lock = hold_dir(&cfg.dir)?;
    let mut report = ChaosReport {
        service: cfg.service.name().to_string(),
        seed: cfg.seed,
        duration_s: cfg.duration_s,
        ..ChaosReport::default()
    };
    match cfg.service {
        ChaosService::Txn => txn(cfg, &mut report)?,
        ChaosService::Paxos if cfg.kv => crate::kv::run(cfg, &mut report)?,
        ChaosService::Paxos => paxos(cfg, &mut report)?,
        ChaosService::Chain => chain(cfg, &mut report)?,
    }
    if let Some(k) = crate::harness::peak_rss_kib(std::process::id()) {
        report.rss_max_kib.push(("chaos".into(), k));
    }
    Ok(report)
}

/// One campaign per directory: a second one would delete the first's data
/// directories under it. The lock is held while the returned file lives.
fn hold_dir(dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    let path = dir.join(".chaos.lock");
    let lock = std::fs::File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this function owns; no memory is shared.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        anyhow::bail!(
            "another innet chaos campaign is running in {} (it holds {}); give this one another --out",
            dir.display(),
            path.display()
        );
    }
    Ok(lock)
}

fn s(x: impl ToString) -> String {
    x.to_string()
}

/// Clients in every run.
const CLIENTS: u32 = 4;
/// The first 4 bytes of every value the adversary writes.
const ADVERSARY_TAG: u32 = 0xADAD_ADAD;

// ------------------------------------------------------------------ transactions

/// Transactions: `innet store --record-decisions` (durable, killed and
/// restarted) behind `innet switch txn` (optimistic abort, killed and
/// restarted with an empty cache); clients run multi-key increments.
pub fn txn(cfg: &ChaosConfig, report: &mut ChaosReport) -> anyhow::Result<()> {
    let base = free_ports(2, false)?;
    let (store, switch): (SocketAddr, SocketAddr) =
        (format!("127.0.0.1:{base}").parse()?, format!("127.0.0.1:{}", base + 1).parse()?);
    let data = cfg.dir.join("store-data");
    let _ = std::fs::remove_dir_all(&data);
    let mut run = Run::new(cfg);
    let st = run.add(
        "store",
        &[
            s("store"),
            s("--listen"),
            s(store),
            s("--data-dir"),
            s(data.display()),
            s("--record-decisions"),
            // Only the switch may reach the store (issue 21): a request the
            // switch aborted, replayed to the store, is refused.
            s("--downstream"),
            s(switch),
        ],
    );
    let sw = run.add(
        "switch",
        &[
            s("switch"),
            s("txn"),
            s("--mode"),
            s("optimistic-abort"),
            s("--listen"),
            s(switch),
            s("--upstream"),
            s(store),
        ],
    );
    run.start_all()?;
    let events = schedule(&mut run.rng, cfg.duration_s, &[st, sw], true, kills(cfg.duration_s));
    let seed = run.rng.next_u64();
    let tap = run.tap.clone();
    let workload = Workload {
        write_ratio: 0.6,
        keys: 8,
        zipf: 0.0,
        think_time: Duration::from_millis(1),
        span: 3,
        validated_reads: 0.2,
    };
    let base_id = innet_live::txn::fresh_client_id_base(CLIENTS);
    let clients = move |stop_at: Time, until: Time, stop: innet_live::Stop| {
        let mut rng = Rng::new(seed);
        let start = clock::now();
        let hosts: Vec<LoadClient> = (0..CLIENTS)
            .map(|k| {
                let mut cc = ClientConfig::new(base_id + k);
                cc.first_req_id = innet_live::txn::wall_clock_req_id();
                cc.timeout = Duration::from_millis(300);
                let client = TxnClient::new(cc).with_history();
                LoadClient::new(client, workload.clone(), rng.fork(), start, stop_at)
            })
            .collect();
        run_tapped(hosts, any_port, |_| HostOptions::upstream(switch), &tap, &stop, until)
    };
    let forge = Box::new(TxnForge { keys: 8, n: 0 });
    let hosts = run.drive(events, forge, vec![switch, store], report, clients);
    run.finish(report);
    check_txn(&data, &hosts?, report)
}

/// Serializability of what the store in `data` decided and the clients
/// `hosts` saw ([`innet_txn::check`]).
fn check_txn(data: &std::path::Path, hosts: &[LoadClient], report: &mut ChaosReport) -> anyhow::Result<()> {
    let (decisions, state) =
        innet_storage::RedbBackend::read_decisions(data).map_err(|e| anyhow::anyhow!("reading the store: {e}"))?;
    let attempts: Vec<_> = hosts.iter().flat_map(|h| h.client.history.clone().unwrap_or_default()).collect();
    match innet_txn::check::check(&decisions, &attempts, &state) {
        Ok(sum) => {
            report.checked = format!(
                "serializable: {} store commits, {} store aborts, {} client commits, {} switch answers, {} client aborts checked",
                sum.store_commits,
                sum.store_aborts,
                sum.client_commits_checked,
                sum.switch_answers_checked,
                sum.client_aborts_checked
            )
        }
        Err(v) => report.violations.extend(v),
    }
    Ok(())
}

/// Writes and loads the topology file `name` in the run's directory:
/// `header`, node i of `names` with role i of `roles` listening on
/// 127.0.0.1:`base`+i, then `tail`.
fn write_topology(
    cfg: &ChaosConfig,
    name: &str,
    header: &str,
    names: &[impl std::fmt::Display],
    roles: &[&str],
    base: u16,
    tail: &str,
) -> anyhow::Result<(std::path::PathBuf, Topology)> {
    let mut toml = String::from(header);
    for (i, (n, r)) in names.iter().zip(roles).enumerate() {
        toml += &format!("\n[[node]]\nname = \"{n}\"\nrole = \"{r}\"\nlisten = \"127.0.0.1:{}\"\n", base + i as u16);
    }
    toml += tail;
    let file = cfg.dir.join(name);
    std::fs::write(&file, &toml)?;
    let topo = Topology::load(&file)?;
    Ok((file, topo))
}

/// Kills in a run of `duration_s`: one every 5 s or so, at least one.
fn kills(duration_s: f64) -> usize {
    ((duration_s / 5.0) as usize).clamp(1, 200)
}

struct TxnForge {
    keys: u32,
    n: u64,
}

impl TxnForge {
    /// A client id and request id: a real pair seen in the clients'
    /// traffic (moved a little), or made up.
    fn ids(&self, rng: &mut Rng, tap: &[Vec<u8>]) -> (u32, i32) {
        let real = tap.iter().find_map(|b| TxnMsg::decode(b).ok());
        match real {
            Some(m) if rng.chance(0.7) => (m.cl_id, m.req_id.wrapping_add(rng.below(5) as i32 - 2)),
            _ => (rng.next_u64() as u32, rng.next_u64() as i32),
        }
    }
}

impl Forge for TxnForge {
    fn kinds(&self) -> &'static [&'static str] {
        &TXN_KINDS
    }

    fn forge(&mut self, kind: usize, rng: &mut Rng, tap: &[Vec<u8>]) -> Vec<u8> {
        self.n += 1;
        let (cl_id, req_id) = self.ids(rng, tap);
        let key = 1 + rng.below(u64::from(self.keys)) as u32;
        let v = Value(value16(rng, ADVERSARY_TAG));
        let req = |ops: Vec<Op>| TxnMsg::request(cl_id, req_id, ops);
        let from_switch = rng.chance(0.5);
        let reply = |status: Status, flags: u8| {
            let mut m = req(vec![]).reply(status, from_switch, vec![Op::new(OpType::Value, key, v)]);
            m.flags = Flags(m.flags.0 | flags);
            m
        };
        let m = match kind {
            0 => req(vec![Op::new(OpType::Read, key, Value::ZERO)]),
            1 => req(vec![Op::new(OpType::Write, key, v)]),
            2 => req(vec![Op::new(OpType::Value, key, Value::ZERO), Op::new(OpType::Write, key, v)]),
            3 => {
                let mut m = req(vec![Op::new(OpType::Write, key, v)]);
                m.frag_cnt = 2 + rng.below(250) as u8;
                m.frag_seq = 1 + rng.below(u64::from(m.frag_cnt)) as u8;
                m
            }
            4 => {
                let mut m = req(vec![]);
                m.flags = Flags(Flags::RESET);
                m
            }
            5 => reply(Status::Ok, 0),
            6 => reply(Status::Abort, 0),
            7 => reply(Status::OptimisticAbort, 0),
            8 => reply(Status::BadRequest, 0),
            9 => reply(Status::Ok, Flags::STORE_COMMIT),
            _ => {
                let inner = req(vec![Op::new(OpType::Write, key, v)]).encode();
                let origin = SocketAddr::from(([127, 0, 0, 1], rng.below(65_536) as u16));
                return innet_live::switch::add_origin_shim(origin, &inner);
            }
        };
        m.encode()
    }

    fn classify(&self, b: &[u8]) -> &'static str {
        match TxnMsg::decode(b) {
            Ok(m) if m.flags.is_response() => "REPLY",
            Ok(_) => "REQUEST",
            Err(_) => "UNDECODABLE",
        }
    }
}

// ------------------------------------------------------------------ Paxos

/// Paxos (CAANS): coordinator, three acceptors and the backup as
/// processes (`innet up paxos --topology FILE --only NAME`); proposers and
/// both learners here. The coordinator is killed once (the backup takes
/// over for good) and one acceptor once (its votes are in memory only, so
/// it stays down; two of three remain a quorum).
pub fn paxos(cfg: &ChaosConfig, report: &mut ChaosReport) -> anyhow::Result<()> {
    let base = free_ports(7 + CLIENTS as u16, false)?;
    let mut names: Vec<String> =
        ["coordinator", "acceptor0", "acceptor1", "acceptor2", "backup", "learner0", "learner1"]
            .map(String::from)
            .to_vec();
    let mut roles = vec!["coordinator", "acceptor", "acceptor", "acceptor", "backup", "learner", "learner"];
    for k in 0..CLIENTS {
        names.push(format!("proposer{k}"));
        roles.push("proposer");
    }
    let header = "[paxos]\ndata_plane = \"switch\"\nslots = 65536\nheartbeat_ms = 25.0\n";
    let (file, topo) = write_topology(cfg, "paxos.toml", header, &names, &roles, base, "")?;
    let Service::Paxos(p) = &topo.service else { anyhow::bail!("a paxos topology") };
    let d = p.deployment.clone();
    let addrs: Vec<SocketAddr> =
        (0..names.len()).map(|i| format!("127.0.0.1:{}", base + i as u16).parse()).collect::<Result<_, _>>()?;
    let mut run = Run::new(cfg);
    let mut ix = vec![];
    for n in &names[..5] {
        let args = [s("up"), s("paxos"), s("--topology"), s(file.display()), s("--only"), s(n)];
        ix.push(run.add(n, &args));
    }
    run.start_all()?;
    // The coordinator once; an acceptor once, later; neither comes back.
    let mut events = schedule(&mut run.rng, cfg.duration_s * 0.5, &[ix[0]], false, 1);
    let acceptor = ix[1 + run.rng.below(3) as usize];
    events.extend(schedule(&mut run.rng, cfg.duration_s, &[acceptor], false, 1).into_iter().map(|mut e| {
        e.at = e.at.max(cfg.duration_s * 0.5);
        e
    }));
    let seed = run.rng.next_u64();
    let tap = run.tap.clone();
    let params = p.params.clone();
    let (d2, addrs2) = (d.clone(), addrs.clone());
    // Proposer k speaks under an id of the deployment's block k (issue 21:
    // an id outside a sender's block is refused), in a fresh incarnation.
    let incarnation = innet_live::txn::fresh_client_id_base(1) % innet_paxos::envelope::INCARNATIONS;
    let proposer_of = move |k: u32| innet_paxos::envelope::proposer_id(k as usize, incarnation);
    let clients = move |stop_at: Time, until: Time, stop: innet_live::Stop| {
        let _ = seed;
        let proposer_of = &proposer_of;
        paxos_clients(&d2, params, &addrs2, proposer_of, (stop_at, until), &stop, &tap)
    };
    let targets: Vec<SocketAddr> = addrs[..7].to_vec();
    let forge = Box::new(PaxosForge { real: vec![] });
    let out = run.drive(events, forge, targets, report, clients);
    run.finish(report);
    let (proposers, learners) = out?;
    let real: Vec<u32> = (0..CLIENTS).map(proposer_of).collect();
    check_paxos(&proposers, &learners, &real, report);
    Ok(())
}

/// Agreement, validity, exactly-once and order ([`innet_paxos::check`])
/// of what the `proposers` submitted and the `learners` delivered; `real`
/// are the proposers' ids (a value under any other is the adversary's).
fn check_paxos(proposers: &[LoadProposer], learners: &[Learner], real: &[u32], report: &mut ChaosReport) {
    let mut h = History::default();
    for p in proposers {
        h.submitted.extend(p.submitted.iter().map(|(k, v)| (*k, v.clone())));
    }
    for (i, l) in learners.iter().enumerate() {
        for dl in &l.log {
            // A value under a proposer id no real proposer has is the
            // adversary's own submission (an unauthenticated client's, its
            // payload a function of its request id): submitted, once it was
            // decided. Under a real proposer's id nothing is excused.
            if let Some(e) = Envelope::from_value(&dl.value).filter(|e| !e.is_noop() && !real.contains(&e.proposer)) {
                h.submitted.entry((e.proposer, e.request)).or_insert_with(|| e.payload().to_vec());
            }
        }
        h.learners.push(LearnerHistory {
            name: format!("learner{i}"),
            complete: true,
            ordered: l.config().ordered,
            first_instance: 0,
            deliveries: l.log.clone(),
        });
    }
    match innet_paxos::check::check(&h) {
        Ok(sum) => {
            report.checked = format!(
                "agreement, validity, exactly-once, order: {} values submitted, {} instances, {} values, {} no-ops, {} duplicates filtered",
                h.submitted.len(),
                sum.instances,
                sum.values,
                sum.noops,
                sum.duplicates
            )
        }
        Err(v) => report.violations.push(v.0),
    }
}

/// The Paxos run's clients: the deployment `d`'s learners, on their own
/// addresses (the deployment's tables name them), recording every
/// delivery, and its proposers (proposer k under the id `proposer_of(k)`)
/// submitting load until `stop_at`; all stop at `until`.
fn paxos_clients(
    d: &innet_paxos::deploy::PaxosDeployment,
    params: innet_paxos::deploy::PaxosParams,
    addrs: &[SocketAddr],
    proposer_of: &impl Fn(u32) -> u32,
    (stop_at, until): (Time, Time),
    stop: &innet_live::Stop,
    tap: &crate::harness::Tap,
) -> anyhow::Result<(Vec<LoadProposer>, Vec<Learner>)> {
    let roles = Roles::of(d, params);
    let learner_ix: Vec<usize> = d.with_role(|r| matches!(r, PaxosRole::Learner { .. }));
    let learners: Vec<Learner> = (0..learner_ix.len())
        .map(|id| {
            let mut c = roles.learner(id as u16);
            c.keep_log = true;
            Learner::new(c)
        })
        .collect();
    let lsockets = learner_ix
        .iter()
        .map(|&i| Ok((std::net::UdpSocket::bind(addrs[i])?, innet_live::paxos::options(d, addrs, i))))
        .collect::<std::io::Result<Vec<_>>>()?;
    let lstop = stop.clone();
    let learner_thread = std::thread::Builder::new().name("innet-chaos-learners".into()).spawn(move || {
        let mut learners = learners;
        innet_live::run_hosts(&mut learners, lsockets, &lstop, Some(until)).map(|_| learners)
    })?;
    // Each proposer on its node's address: TAKEOVER goes there.
    let proposer_ix = d.with_role(|r| matches!(r, PaxosRole::Proposer { .. }));
    let proposers: Vec<LoadProposer> = (0..proposer_ix.len() as u32)
        .map(|k| LoadProposer::new(Proposer::new(roles.proposer(proposer_of(k))), 8, stop_at, true))
        .collect();
    let proposers = run_tapped(
        proposers,
        |k| addrs[proposer_ix[k]],
        |k| innet_live::paxos::options(d, addrs, proposer_ix[k]),
        tap,
        stop,
        until,
    )?;
    let learners = learner_thread.join().map_err(|_| anyhow::anyhow!("the learners' thread panicked"))??;
    Ok((proposers, learners))
}

struct PaxosForge {
    real: Vec<u32>,
}

impl Forge for PaxosForge {
    fn kinds(&self) -> &'static [&'static str] {
        &PAXOS_KINDS
    }

    fn forge(&mut self, kind: usize, rng: &mut Rng, tap: &[Vec<u8>]) -> Vec<u8> {
        for b in tap {
            if let Ok(m) = PaxosMsg::decode(b) {
                if let Some(e) = Envelope::from_value(&m.value).filter(|e| !e.is_noop()) {
                    if !self.real.contains(&e.proposer) && self.real.len() < 64 {
                        self.real.push(e.proposer);
                    }
                }
            }
        }
        let mut m = PaxosMsg::new(MsgType::ALL[kind % MsgType::ALL.len()]);
        m.inst = match rng.below(3) {
            0 => rng.below(1 << 16) as u32,
            1 => rng.next_u64() as u32,
            _ => u32::MAX - rng.below(4) as u32,
        };
        m.rnd = [0, 1, innet_paxos::round(1, innet_paxos::ISSUER_BACKUP), u16::MAX][rng.below(4) as usize];
        m.vrnd = m.rnd;
        m.acptid = rng.below(4) as u16;
        // A real proposer's id (as one sniffed packet shows it) with a
        // request number ahead of its own, or an id of the adversary's.
        let proposer = match self.real.get(rng.below(self.real.len() as u64 + 1) as usize) {
            Some(&p) if rng.chance(0.5) => p,
            _ => ADVERSARY_TAG,
        };
        let request = rng.below(1 << 20) as u32;
        // The same (proposer, request) always carries the same payload, as
        // a client's resubmission would.
        let payload = value16(&mut Rng::new(u64::from(proposer) << 32 | u64::from(request)), ADVERSARY_TAG);
        if let Some(e) = Envelope::new(proposer, request, &payload) {
            m.value = e.to_value();
        }
        m.encode()
    }

    fn classify(&self, b: &[u8]) -> &'static str {
        PaxosMsg::decode(b).map_or("UNDECODABLE", |m| m.msgtype.name())
    }
}

// ------------------------------------------------------------------ chain

/// Chain replication: three chain switches and the control plane as
/// processes (`innet up chain --topology FILE --only NAME`), NetCRAQ or
/// NetChain by the seed; clients here, following the control plane's
/// view. A chain node is killed and restarted, one at a time: the control
/// plane removes it, and re-adds it after a resync.
pub fn chain(cfg: &ChaosConfig, report: &mut ChaosReport) -> anyhow::Result<()> {
    let base = free_ports(4, true)?;
    let protocol = if cfg.seed % 2 == 0 { Protocol::NetCraq } else { Protocol::NetChain };
    let pname = if protocol == Protocol::NetCraq { "netcraq" } else { "netchain" };
    let names = ["node0", "node1", "node2", "control"];
    let roles = ["node", "node", "node", "control"];
    let header = format!("[chain]\nprotocol = \"{pname}\"\nkeys = 16\n");
    let clients = format!("\n[[node]]\nname = \"clients\"\nrole = \"clients\"\ncount = {CLIENTS}\n");
    let (file, topo) = write_topology(cfg, "chain.toml", &header, &names, &roles, base, &clients)?;
    let Service::Chain(c) = &topo.service else { anyhow::bail!("a chain topology") };
    let d = c.deployment.clone();
    let n = topo.names().len();
    let mut addrs: Vec<SocketAddr> = vec![SocketAddr::from(([127, 0, 0, 1], 0)); n];
    for (i, a) in addrs.iter_mut().enumerate().take(names.len()) {
        *a = format!("127.0.0.1:{}", base + i as u16).parse()?;
    }
    let mut run = Run::new(cfg);
    let mut ix = vec![];
    for nm in &names {
        let args = [s("up"), s("chain"), s("--topology"), s(file.display()), s("--only"), s(nm)];
        ix.push(run.add(nm, &args));
    }
    run.start_all()?;
    let events = schedule(&mut run.rng, cfg.duration_s, &ix[..3], true, kills(cfg.duration_s));
    let seed = run.rng.next_u64();
    let tap = run.tap.clone();
    let client_ix: Vec<usize> = (0..n).filter(|&i| innet_live::topology::is_load(&topo, i)).collect();
    let chain_nodes = innet_chain::deploy::chain_nodes(&d).len();
    let keys = 16;
    let (topo2, addrs2) = (topo.clone(), addrs.clone());
    let clients = move |stop_at: Time, until: Time, stop: innet_live::Stop| {
        let Service::Chain(c) = &topo2.service else { anyhow::bail!("a chain topology") };
        let view = innet_live::up::follow_remote_view(&topo2, &addrs2, &stop)?;
        let mut rng = Rng::new(seed);
        let start = clock::now();
        let hosts: Vec<ViewedClient> = (0..client_ix.len())
            .map(|k| {
                let mut cc = ChainClientConfig::new(protocol, k as u32, chain_nodes);
                cc.near = k % chain_nodes;
                cc.timeout = Duration::from_millis(250);
                cc.stamp_attempts = true;
                let w = ChainWorkload { write_ratio: 0.4, keys, think: Duration::from_millis(1), start, stop: stop_at };
                ViewedClient::new(ChainLoad::new(ChainClient::new(cc).with_history(), w, rng.fork()), view.clone())
            })
            .collect();
        let d = &c.deployment;
        let options = |k: usize| innet_live::deploy::host_options(d, &addrs2, client_ix[k]);
        run_tapped(hosts, any_port, options, &tap, &stop, until)
    };
    let offset = innet_live::chain::manage::MANAGE_PORT_OFFSET;
    let mut targets: Vec<SocketAddr> = addrs[..names.len()].to_vec();
    targets.extend(addrs[..names.len()].iter().map(|a| SocketAddr::new(a.ip(), a.port() + offset)));
    let forge = ChainForge { protocol, keys, nodes: chain_nodes as u32, n: 0, written: Default::default() };
    let written = forge.written.clone();
    let out = run.drive(events, Box::new(forge), targets, report, clients);
    run.finish(report);
    let hosts = out.context("the chain clients")?;
    check_chain(&hosts, &written, pname, report);
    Ok(())
}

/// Linearizability ([`innet_chain::check`]) of what the clients `hosts`
/// saw and the adversary `written`, on the chain of protocol `pname`.
fn check_chain(hosts: &[ViewedClient], written: &Written, pname: &str, report: &mut ChaosReport) {
    let mut history: Vec<Record> =
        hosts.iter().flat_map(|h| h.load.client.history.clone().unwrap_or_default()).collect();
    history.extend(written.lock().unwrap_or_else(|e| e.into_inner()).iter().copied());
    match innet_chain::check::check(&history) {
        Ok(sum) => {
            report.checked = format!(
                "linearizable ({pname}): {} keys, {} reads, {} writes acknowledged, {} not",
                sum.keys, sum.reads, sum.writes_acked, sum.writes_unacked
            )
        }
        Err(v) => report.violations.extend(v),
    }
}

type Written = std::sync::Arc<std::sync::Mutex<Vec<Record>>>;

struct ChainForge {
    protocol: Protocol,
    keys: u32,
    nodes: u32,
    n: u64,
    /// Every write the adversary sent: an operation of an unauthenticated
    /// client, in the history as a write without a response.
    written: Written,
}

impl ChainForge {
    fn record_write(&mut self, key: u32, value: [u8; 16]) {
        let r = Record {
            client: ADVERSARY_TAG,
            key,
            kind: OpKind::Write,
            value: innet_wire::netcraq::Value(value),
            invoke: clock::now(),
            response: None,
        };
        self.written.lock().unwrap_or_else(|e| e.into_inner()).push(r);
    }
}

impl Forge for ChainForge {
    fn kinds(&self) -> &'static [&'static str] {
        &CHAIN_KINDS
    }

    fn forge(&mut self, kind: usize, rng: &mut Rng, _tap: &[Vec<u8>]) -> Vec<u8> {
        self.n += 1;
        let key = rng.below(u64::from(self.keys)) as u32;
        // Unique: the tag, then a counter.
        let mut value = [0u8; 16];
        value[..4].copy_from_slice(&ADVERSARY_TAG.to_be_bytes());
        value[4..12].copy_from_slice(&self.n.to_be_bytes());
        let is_write = kind == 2;
        let data = |this: &mut ChainForge, rng: &mut Rng| -> Vec<u8> {
            match this.protocol {
                Protocol::NetCraq => {
                    let op = KvOp::ALL[kind % KvOp::ALL.len()];
                    CraqMsg { op, key, value: innet_wire::netcraq::Value(value) }.encode()
                }
                Protocol::NetChain => {
                    let op = [NcOp::ReadReq, NcOp::ReadReply, NcOp::WriteReq, NcOp::WriteReply][kind % 4];
                    let depth = if op == NcOp::WriteReply { 0 } else { 1 + rng.below(u64::from(this.nodes)) as usize };
                    let chain = (0..depth).map(|_| innet_chain::client::node_addr(rng.below(3) as u32)).collect();
                    let m = NcMsg {
                        chain,
                        op,
                        seq: rng.next_u64() as u16,
                        key: netchain::key_from_u32(key),
                        value: innet_wire::netcraq::Value(value),
                        vgroup: 0,
                    };
                    m.encode()
                }
            }
        };
        if kind < 6 {
            if is_write {
                self.record_write(key, value);
            }
            return data(self, rng);
        }
        if kind == 11 {
            if rng.chance(0.5) {
                // A write inside a shim is a write too, if a node took it.
                self.record_write(key, value);
            }
            let inner = data(self, rng);
            let origin = SocketAddr::from(([127, 0, 0, 1], rng.below(65_536) as u16));
            return innet_live::switch::add_origin_shim(origin, &inner);
        }
        let mkind: u8 = [1, 3, 5, 7, 8][kind - 6];
        let mut b = innet_live::chain::manage::MAGIC.to_vec();
        b.push(mkind);
        b.extend_from_slice(&(rng.next_u64() as u32).to_be_bytes());
        match mkind {
            3 => {
                b.extend_from_slice(&rng.next_u64().to_be_bytes());
                b.push(rng.below(2) as u8);
                b.push(1);
                b.push(rng.below(3) as u8);
            }
            5 => b.extend_from_slice(&0u32.to_be_bytes()),
            7 => {
                b.extend_from_slice(&1u32.to_be_bytes());
                b.extend_from_slice(&0u32.to_be_bytes());
                b.extend_from_slice(&value);
            }
            _ => {}
        }
        b
    }

    fn classify(&self, b: &[u8]) -> &'static str {
        match self.protocol {
            Protocol::NetCraq => CraqMsg::decode(b).map_or("UNDECODABLE", |m| m.op.name()),
            Protocol::NetChain => NcMsg::decode(b).map_or("UNDECODABLE", |m| m.op.name()),
        }
    }

    fn may_flip(&self, kind: usize) -> bool {
        kind != 2 && kind != 11
    }

    /// A client's write, replayed, is a new write of an old value (neither
    /// format has a request id): the history could not tell it apart.
    fn replayable(&self, b: &[u8]) -> bool {
        match self.protocol {
            Protocol::NetCraq => CraqMsg::decode(b).map_or(true, |m| m.op != KvOp::Write),
            Protocol::NetChain => NcMsg::decode(b).map_or(true, |m| m.op != NcOp::WriteReq),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second campaign in a directory in use is refused (it would delete
    /// the first one's data), and the directory is free again after.
    #[test]
    fn one_campaign_per_directory() {
        let dir = std::env::temp_dir().join(format!("innet-chaos-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = hold_dir(&dir).unwrap();
        let e = hold_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("another innet chaos campaign") && e.contains("--out"), "{e}");
        drop(first);
        assert!(hold_dir(&dir).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
