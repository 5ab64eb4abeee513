//! What every service's chaos run shares: the configuration and report,
//! the processes and their kill schedule, the adversary (forger, tap,
//! replays, floods) and the run that drives them ([`Run`]).

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use innet_core::rng::Rng;
use innet_core::{Host, Outbox, Sender, Time};
use innet_live::{clock, run_hosts, HostOptions, Stop};

const ANY_PORT: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// Longest run `--duration-s` takes (an hour).
pub const DURATION_S_MAX: f64 = 3_600.0;
/// Packets of one flood.
pub const FLOOD_PACKETS: usize = 2_000;
/// Real packets the adversary keeps for replays (newest first out).
pub const TAP_KEEP: usize = 4_096;
/// How long the deployment drains after the load stops, before the checks.
pub const DRAIN: Duration = Duration::from_secs(3);

/// The transaction messages the adversary forges (`kind` indexes these).
pub const TXN_KINDS: [&str; 11] = [
    "READ",
    "WRITE",
    "VALUE_WRITE",
    "FRAGMENT",
    "RESET",
    "REPLY_OK",
    "REPLY_ABORT",
    "REPLY_OPTIMISTIC_ABORT",
    "REPLY_BADREQ",
    "STORE_COMMIT",
    "SHIM",
];

/// The Paxos messages the adversary forges: every `MsgType`, in order.
pub const PAXOS_KINDS: [&str; 11] = [
    "PHASE_1A",
    "PHASE_1B",
    "PHASE_2A",
    "PHASE_2B",
    "REQUEST",
    "TRIM",
    "HEARTBEAT",
    "TAKEOVER",
    "CATCHUP",
    "DECIDED",
    "WINDOW",
];

/// The chain messages the adversary forges (data, management, VIEW, shim).
pub const CHAIN_KINDS: [&str; 12] = [
    "READ",
    "READ_REPLY",
    "WRITE",
    "WRITE_REPLY",
    "ACK",
    "WRITE_REFUSED",
    "MANAGE_REPORT",
    "MANAGE_APPLY",
    "MANAGE_SNAPSHOT_GET",
    "MANAGE_SNAPSHOT_PUT",
    "VIEW",
    "SHIM",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChaosService {
    Txn,
    Paxos,
    Chain,
}

impl ChaosService {
    /// The message types the adversary forges for this service.
    pub fn kinds(self) -> &'static [&'static str] {
        match self {
            ChaosService::Txn => &TXN_KINDS,
            ChaosService::Paxos => &PAXOS_KINDS,
            ChaosService::Chain => &CHAIN_KINDS,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ChaosService::Txn => "txn",
            ChaosService::Paxos => "paxos",
            ChaosService::Chain => "chain",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ChaosConfig {
    pub service: ChaosService,
    /// Seconds of client load (and attacks); the drain comes after.
    pub duration_s: f64,
    pub seed: u64,
    /// The `innet` program the roles run as.
    pub exe: PathBuf,
    /// Where topology files, data and the processes' logs go.
    pub dir: PathBuf,
    /// Paxos only: the key-value service's crash campaign (issue 24 item
    /// 6, [`crate::kv`]) instead of the adversary's.
    pub kv: bool,
    /// With `kv`: restart the killed coordinator too (it takes the role
    /// back from the backup: needs failback).
    pub coordinator_restarts: bool,
}

impl ChaosConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.duration_s >= 2.0 && self.duration_s <= DURATION_S_MAX) {
            return Err(format!(
                "--duration-s {}: expected 2 ..= {DURATION_S_MAX} (a run needs time for a kill and a restart)",
                self.duration_s
            ));
        }
        if self.kv && self.service != ChaosService::Paxos {
            return Err(format!(
                "--kv is a campaign of the paxos service: say `innet chaos paxos --kv`, not {}",
                self.service.name()
            ));
        }
        if self.coordinator_restarts && !self.kv {
            return Err("--coordinator-restarts is part of the key-value campaign: add --kv".into());
        }
        Ok(())
    }
}

/// How one attack is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Attack {
    Forged,
    Malformed,
    Replayed,
    Reordered,
    Flood,
}

impl Attack {
    pub const ALL: [Attack; 5] =
        [Attack::Forged, Attack::Malformed, Attack::Replayed, Attack::Reordered, Attack::Flood];
    pub fn name(self) -> &'static str {
        match self {
            Attack::Forged => "forged",
            Attack::Malformed => "malformed",
            Attack::Replayed => "replayed",
            Attack::Reordered => "reordered",
            Attack::Flood => "flood",
        }
    }
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct ChaosReport {
    pub service: String,
    pub seed: u64,
    pub duration_s: f64,
    /// The checker's findings (empty: none).
    pub violations: Vec<String>,
    /// Processes that panicked or ended on their own, with why.
    pub failures: Vec<String>,
    /// Largest resident set per process (its peak `VmHWM` over every
    /// incarnation), KiB; `chaos` is this process (clients, Paxos learners).
    pub rss_max_kib: Vec<(String, u64)>,
    /// Packets sent per (attack, message type).
    pub packets: BTreeMap<(String, String), u64>,
    /// `(seconds from the start, what)` of every kill and restart.
    pub events: Vec<(f64, String)>,
    /// What the checker checked, one line.
    pub checked: String,
    /// The command-line flags of the run beyond the seed and duration
    /// (` --kv`), for the replay command.
    pub flags: String,
    /// Counts of the key-value campaign, `(name, count)` in print order.
    pub counts: Vec<(String, u64)>,
}

impl ChaosReport {
    pub fn ok(&self) -> bool {
        self.violations.is_empty() && self.failures.is_empty()
    }
    /// Packets per attack, summed over message types.
    pub fn per_attack(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for ((a, _), n) in &self.packets {
            *m.entry(a.clone()).or_insert(0) += n;
        }
        m
    }
    pub fn replay_command(&self) -> String {
        format!("innet chaos {} --duration-s {} --seed {}{}", self.service, self.duration_s, self.seed, self.flags)
    }
}

// ------------------------------------------------------------------ processes

/// One role's process, restarted under the same arguments.
pub(crate) struct Proc {
    pub(crate) name: String,
    args: Vec<String>,
    pub(crate) log: PathBuf,
    pub(crate) child: Option<Child>,
    rss_max_kib: u64,
    /// Whether this run killed the running incarnation.
    killed: bool,
    failures: Vec<String>,
}

impl Proc {
    fn new(name: &str, args: Vec<String>, dir: &Path) -> Proc {
        // A log from an earlier run would lend it its panics.
        let _ = std::fs::remove_file(dir.join(format!("{name}.log")));
        Proc {
            name: name.to_string(),
            args,
            log: dir.join(format!("{name}.log")),
            child: None,
            rss_max_kib: 0,
            killed: false,
            failures: vec![],
        }
    }

    pub(crate) fn start(&mut self, exe: &Path) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log)?;
        let child = Command::new(exe)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {} ({})", self.name, exe.display()))?;
        self.child = Some(child);
        self.killed = false;
        Ok(())
    }

    pub(crate) fn sample(&mut self) {
        if let Some(c) = &self.child {
            if let Some(k) = peak_rss_kib(c.id()) {
                self.rss_max_kib = self.rss_max_kib.max(k);
            }
        }
    }

    /// Notices an incarnation that ended without being told to.
    pub(crate) fn poll(&mut self) {
        let Some(c) = self.child.as_mut() else { return };
        if let Ok(Some(status)) = c.try_wait() {
            self.failures.push(format!("{} ended on its own ({status}); see {}", self.name, self.log.display()));
            self.child = None;
        }
    }

    pub(crate) fn kill(&mut self) {
        self.sample();
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            self.killed = true;
        }
    }

    /// SIGTERM, then up to 5 s for it to print its counters and exit 0.
    pub(crate) fn stop(&mut self) {
        self.sample();
        let Some(mut c) = self.child.take() else { return };
        // SAFETY: signalling a child this process started and has not reaped.
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            match c.try_wait() {
                Ok(Some(s)) if s.success() => return,
                Ok(Some(s)) => {
                    self.failures.push(format!(
                        "{} exited with {s} when stopped; see {}",
                        self.name,
                        self.log.display()
                    ));
                    return;
                }
                _ if Instant::now() > until => {
                    let _ = c.kill();
                    let _ = c.wait();
                    self.failures.push(format!("{} did not stop within 5 s of SIGTERM", self.name));
                    return;
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Panics in the log (any incarnation).
    fn panics(&self) -> Option<String> {
        let mut text = String::new();
        std::fs::File::open(&self.log).ok()?.read_to_string(&mut text).ok()?;
        let line = text.lines().find(|l| l.contains("panicked"))?;
        Some(format!("{} panicked: {line} (see {})", self.name, self.log.display()))
    }
}

/// The peak resident set (`VmHWM`) of process `pid`, KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `n` consecutive free loopback ports (and, with `manage`, the ports
/// [`innet_live::chain::manage::MANAGE_PORT_OFFSET`] above them), below
/// the kernel's ephemeral range ([`innet_live::ports::free_block`]): a
/// port in that range may be given to another socket while the process
/// that owns it is killed, and the restarted process then could not bind
/// it.
pub(crate) fn free_ports(n: u16, manage: bool) -> anyhow::Result<u16> {
    let offset = innet_live::chain::manage::MANAGE_PORT_OFFSET;
    let also: &[u16] = if manage { &[offset] } else { &[] };
    Ok(innet_live::ports::free_block(n, also)?)
}

/// A kill or a restart of process `proc` at `at` seconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    pub at: f64,
    pub proc: usize,
    pub restart: bool,
}

/// Kills of `victims` (indexes into the processes) spread over the first
/// 70% of the run, one at a time; `restart`: each comes back 0.3-1.5 s later.
pub(crate) fn schedule(rng: &mut Rng, duration_s: f64, victims: &[usize], restart: bool, kills: usize) -> Vec<Event> {
    let mut out = vec![];
    let span = duration_s * 0.7 / kills.max(1) as f64;
    for k in 0..kills {
        let Some(&proc) = victims.get(rng.below(victims.len() as u64) as usize) else { break };
        let at = 1.0 + span * k as f64 + rng.f64() * span * 0.4;
        out.push(Event { at, proc, restart: false });
        if restart {
            out.push(Event { at: at + 0.3 + rng.f64() * 1.2, proc, restart: true });
        }
    }
    out
}

/// Runs `procs` for `total` seconds from `start`, applying `events`,
/// sampling memory and noticing processes that end on their own.
fn supervise(
    exe: &Path,
    procs: &mut [Proc],
    mut events: Vec<Event>,
    start: Instant,
    total: f64,
    log: &mut Vec<(f64, String)>,
) -> anyhow::Result<()> {
    events.sort_by(|a, b| a.at.total_cmp(&b.at));
    let mut events: VecDeque<Event> = events.into();
    while start.elapsed().as_secs_f64() < total {
        let now = start.elapsed().as_secs_f64();
        while events.front().is_some_and(|e| e.at <= now) {
            let Some(e) = events.pop_front() else { break };
            let p = &mut procs[e.proc];
            if e.restart {
                p.start(exe)?;
                log.push((now, format!("restart {}", p.name)));
            } else if p.child.is_some() {
                p.kill();
                log.push((now, format!("SIGKILL {}", p.name)));
            }
        }
        for p in procs.iter_mut() {
            p.sample();
            p.poll();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

// ------------------------------------------------------------------ adversary

/// Real packets the clients sent and received, for replays.
#[derive(Clone, Default)]
pub struct Tap(Arc<Mutex<VecDeque<Vec<u8>>>>);

impl Tap {
    fn keep(&self, b: &[u8]) {
        let mut q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= TAP_KEEP {
            q.pop_front();
        }
        q.push_back(b.to_vec());
    }
    fn pick(&self, rng: &mut Rng, n: usize) -> Vec<Vec<u8>> {
        let q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if q.is_empty() {
            return vec![];
        }
        (0..n).map(|_| q[rng.below(q.len() as u64) as usize].clone()).collect()
    }
}

/// A client host whose packets, both ways, go to a [`Tap`] too.
pub struct Tapped<H> {
    pub host: H,
    tap: Tap,
}

impl<H: Host> Tapped<H> {
    fn keep_sends(&self, out: &Outbox, from: usize) {
        for (_, b) in out.sends.iter().skip(from) {
            self.tap.keep(b);
        }
    }
}

impl<H: Host> Host for Tapped<H> {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.tap.keep(packet);
        let n = out.sends.len();
        self.host.on_packet(now, packet, out);
        self.keep_sends(out, n);
    }
    fn on_packet_from(&mut self, now: Time, packet: &[u8], from: Sender, out: &mut Outbox) {
        self.tap.keep(packet);
        let n = out.sends.len();
        self.host.on_packet_from(now, packet, from, out);
        self.keep_sends(out, n);
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        let n = out.sends.len();
        self.host.on_tick(now, out);
        self.keep_sends(out, n);
    }
    fn next_tick(&self) -> Option<Time> {
        self.host.next_tick()
    }
}

/// A role the adversary sends to.
#[derive(Clone, Debug)]
struct Target {
    addr: SocketAddr,
}

/// A service's message forger.
pub(crate) trait Forge: Send {
    /// The message types it forges (names as in docs/wire.md).
    fn kinds(&self) -> &'static [&'static str];
    /// One message of type `kinds()[kind]`, fields drawn from `rng` and
    /// the identities `tap` shows.
    fn forge(&mut self, kind: usize, rng: &mut Rng, tap: &[Vec<u8>]) -> Vec<u8>;
    /// The name of a real packet's type, for the counts.
    fn classify(&self, b: &[u8]) -> &'static str;
    /// Whether a real packet may be replayed without making a legitimate
    /// operation the history cannot account for (a chain write).
    fn replayable(&self, _b: &[u8]) -> bool {
        true
    }
    /// Whether a forged message of type `kind` may have bytes flipped (a
    /// flipped chain write is a write the history does not hold); if not,
    /// a malformed one is cut short instead.
    fn may_flip(&self, _kind: usize) -> bool {
        true
    }
}

struct Adversary {
    forge: Box<dyn Forge>,
    targets: Vec<Target>,
    tap: Tap,
    rng: Rng,
    sockets: Vec<UdpSocket>,
    packets: BTreeMap<(String, String), u64>,
}

impl Adversary {
    fn new(forge: Box<dyn Forge>, targets: Vec<Target>, tap: Tap, seed: u64) -> anyhow::Result<Adversary> {
        let sockets = (0..4)
            .map(|_| {
                let s = UdpSocket::bind("127.0.0.1:0")?;
                s.set_nonblocking(true)?;
                Ok(s)
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Adversary { forge, targets, tap, rng: Rng::new(seed), sockets, packets: BTreeMap::new() })
    }

    fn send(&mut self, attack: Attack, kind: &str, target: usize, b: &[u8]) {
        let s = &self.sockets[self.rng.below(self.sockets.len() as u64) as usize];
        let _ = s.send_to(b, self.targets[target].addr);
        // Drain what the deployment answers, unread.
        let mut buf = [0u8; 2048];
        while s.recv_from(&mut buf).is_ok() {}
        *self.packets.entry((attack.name().to_string(), kind.to_string())).or_insert(0) += 1;
    }

    fn forged(&mut self, kind: usize) -> Vec<u8> {
        let tap = self.tap.pick(&mut self.rng, 4);
        self.forge.forge(kind, &mut self.rng, &tap)
    }

    /// One attack of the schedule.
    fn step(&mut self) {
        let kinds = self.forge.kinds();
        let kind = self.rng.below(kinds.len() as u64) as usize;
        let target = self.rng.below(self.targets.len() as u64) as usize;
        let attack = Attack::ALL[self.rng.below(Attack::ALL.len() as u64) as usize];
        match attack {
            Attack::Forged => {
                let b = self.forged(kind);
                self.send(attack, kinds[kind], target, &b);
            }
            Attack::Malformed => {
                let mut b = self.forged(kind);
                if !self.forge.may_flip(kind) {
                    b.truncate(self.rng.below(8) as usize);
                } else if self.rng.chance(0.5) && !b.is_empty() {
                    b.truncate(self.rng.below(b.len() as u64) as usize);
                } else {
                    for _ in 0..1 + self.rng.below(4) {
                        if b.is_empty() {
                            break;
                        }
                        let i = self.rng.below(b.len() as u64) as usize;
                        b[i] ^= 1 << self.rng.below(8);
                    }
                }
                self.send(attack, kinds[kind], target, &b);
            }
            Attack::Replayed | Attack::Reordered => {
                let n = if attack == Attack::Replayed { 1 } else { 2 + self.rng.below(7) as usize };
                let mut burst: Vec<Vec<u8>> =
                    self.tap.pick(&mut self.rng, n).into_iter().filter(|b| self.forge.replayable(b)).collect();
                if attack == Attack::Reordered {
                    while burst.len() < n {
                        let b = self.forged(kind);
                        burst.push(b);
                    }
                    // Newest first, then a shuffle of the rest.
                    burst.reverse();
                    for i in (1..burst.len()).rev() {
                        let j = self.rng.below(i as u64 + 1) as usize;
                        burst.swap(i, j);
                    }
                }
                for b in burst {
                    let k = self.forge.classify(&b);
                    self.send(attack, k, target, &b);
                }
            }
            Attack::Flood => {
                for _ in 0..FLOOD_PACKETS {
                    let b = self.forged(kind);
                    self.send(attack, kinds[kind], target, &b);
                }
            }
        }
    }

    /// Attacks until `end` (a pause of 1-3 ms between attacks keeps the
    /// machine's two cores for the deployment too).
    fn run(mut self, end: Instant, stop: &Stop) -> BTreeMap<(String, String), u64> {
        while Instant::now() < end && !stop.is_stopped() {
            self.step();
            std::thread::sleep(Duration::from_micros(1_000 + self.rng.below(2_000)));
        }
        self.packets
    }
}

fn spawn_adversary(
    forge: Box<dyn Forge>,
    targets: Vec<Target>,
    tap: Tap,
    seed: u64,
    end: Instant,
    stop: &Stop,
) -> anyhow::Result<std::thread::JoinHandle<BTreeMap<(String, String), u64>>> {
    let adv = Adversary::new(forge, targets, tap, seed)?;
    let stop = stop.clone();
    Ok(std::thread::Builder::new().name("innet-chaos-adversary".into()).spawn(move || adv.run(end, &stop))?)
}

/// A random 16-byte value starting with `tag`.
pub(crate) fn value16(rng: &mut Rng, tag: u32) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..4].copy_from_slice(&tag.to_be_bytes());
    v[4..12].copy_from_slice(&rng.next_u64().to_be_bytes());
    v
}

// ------------------------------------------------------------------ the run

/// What every service's run shares: its processes, the schedule, the
/// adversary and the clients' thread; `clients` runs the load until the
/// given time and returns what the checker needs.
pub(crate) struct Run<'a> {
    pub cfg: &'a ChaosConfig,
    pub procs: Vec<Proc>,
    pub rng: Rng,
    pub stop: Stop,
    pub tap: Tap,
}

impl<'a> Run<'a> {
    pub fn new(cfg: &'a ChaosConfig) -> Run<'a> {
        Run { cfg, procs: vec![], rng: Rng::new(cfg.seed), stop: Stop::new(), tap: Tap::default() }
    }

    pub fn add(&mut self, name: &str, args: &[String]) -> usize {
        self.procs.push(Proc::new(name, args.to_vec(), &self.cfg.dir));
        self.procs.len() - 1
    }

    pub fn start_all(&mut self) -> anyhow::Result<()> {
        for p in &mut self.procs {
            p.start(&self.cfg.exe)?;
        }
        // Let every process bind and configure (the chain control plane
        // sets its nodes up) before load starts.
        std::thread::sleep(Duration::from_millis(800));
        for p in &mut self.procs {
            p.poll();
        }
        let failed: Vec<String> = self.procs.iter().flat_map(|p| p.failures.clone()).collect();
        if !failed.is_empty() {
            bail!("the deployment did not start: {}", failed.join("; "));
        }
        Ok(())
    }

    /// Runs the schedule, the adversary and `clients` (in a thread, given
    /// the instant load stops and the instant it must return by).
    pub fn drive<T: Send + 'static>(
        &mut self,
        events: Vec<Event>,
        forge: Box<dyn Forge>,
        targets: Vec<SocketAddr>,
        report: &mut ChaosReport,
        clients: impl FnOnce(Time, Time, Stop) -> anyhow::Result<T> + Send + 'static,
    ) -> anyhow::Result<T> {
        let start = Instant::now();
        let load_end = start + Duration::from_secs_f64(self.cfg.duration_s);
        let t0 = clock::now();
        let stop_at = t0 + Duration::from_secs_f64(self.cfg.duration_s);
        let until = stop_at + DRAIN;
        let stop = self.stop.clone();
        let client_thread = std::thread::Builder::new()
            .name("innet-chaos-clients".into())
            .spawn(move || clients(stop_at, until, stop))?;
        let targets = targets.into_iter().map(|addr| Target { addr }).collect();
        let adversary = spawn_adversary(forge, targets, self.tap.clone(), self.rng.next_u64(), load_end, &self.stop)?;
        let total = self.cfg.duration_s + DRAIN.as_secs_f64();
        let supervised = supervise(&self.cfg.exe, &mut self.procs, events, start, total, &mut report.events);
        report.packets = adversary.join().map_err(|_| anyhow::anyhow!("the adversary thread panicked"))?;
        let out = client_thread.join();
        supervised?;
        match out {
            Ok(r) => r,
            Err(_) => {
                report.failures.push("the clients' thread panicked".into());
                bail!("the clients' thread panicked")
            }
        }
    }

    /// Stops every process and reports memory, panics and failures.
    pub fn finish(&mut self, report: &mut ChaosReport) {
        self.stop.stop();
        for p in &mut self.procs {
            p.stop();
        }
        for p in &self.procs {
            report.rss_max_kib.push((p.name.clone(), p.rss_max_kib));
            report.failures.extend(p.failures.iter().cloned());
            report.failures.extend(p.panics());
        }
    }
}

/// Runs `hosts` (each tapped) until `until`, host `i` on a socket bound
/// to `bind(i)` with `options(i)`.
/// A loopback address, any port.
pub(crate) fn any_port(_: usize) -> SocketAddr {
    ANY_PORT
}

pub(crate) fn run_tapped<H: Host>(
    hosts: Vec<H>,
    bind: impl Fn(usize) -> SocketAddr,
    options: impl Fn(usize) -> HostOptions,
    tap: &Tap,
    stop: &Stop,
    until: Time,
) -> anyhow::Result<Vec<H>> {
    let mut tapped: Vec<Tapped<H>> = hosts.into_iter().map(|host| Tapped { host, tap: tap.clone() }).collect();
    let endpoints =
        (0..tapped.len()).map(|i| Ok((UdpSocket::bind(bind(i))?, options(i)))).collect::<std::io::Result<Vec<_>>>()?;
    run_hosts(&mut tapped, endpoints, stop, Some(until))?;
    Ok(tapped.into_iter().map(|t| t.host).collect())
}
