//! Scenario scripts of the consensus service (`crates/paxos/testdata/*.txt`,
//! the format in `crates/paxos/testdata/README.md`), run on the simulator
//! through the service's own deployment (`innet_paxos::deploy`, CAANS
//! Figure 1) and `Sim::instantiate`: coordinator and acceptors are the
//! data-plane programs in switches, backup and learners the real hosts;
//! proposers submit what the script tells them.
//!
//! Commands:
//! * `deploy acceptors=N learners=N proposers=N fabric=MS`
//! * `submit proposer=NAME value=TEXT`
//! * `run ms=N [hide=TYPE,TYPE..]`: runs N ms and prints every packet
//!   (types as CAANS names them: 1A 1B 2A 2B REQUEST TRIM HEARTBEAT TAKEOVER
//!   CATCHUP DECIDED WINDOW), but those of the hidden types.
//! * `crash node=NAME`
//! * `delivered learner=NAME`: what the learner delivered since the last
//!   time, in order.
//! * `backup`: whether the backup coordinator took over, and when.
//!
//! `INNET_REWRITE=1 cargo test -p innet-paxos --test scenarios` rewrites the
//! expected outputs.

use std::path::Path;
use std::time::Duration;

use innet_core::{Host, Outbox, Time};
use innet_paxos::deploy::{self, PaxosParams, PaxosRole, PaxosShape, Roles};
use innet_paxos::envelope::{proposer_id, Contents};
use innet_paxos::{Acceptor, BackupCoordinator, Coordinator, Learner, Proposer};
use innet_sim::script::{packet_line, run_scenario, Command};
use innet_sim::{LinkSpec, NodeId, Sim, SimNode};
use innet_wire::paxos::{MsgType, PaxosMsg, Value};

/// A proposer that submits the values the script gives it.
struct ScriptProposer {
    proposer: Proposer,
    to_submit: Vec<Vec<u8>>,
}

impl Host for ScriptProposer {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.proposer.on_packet(now, packet, out);
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        for v in std::mem::take(&mut self.to_submit) {
            let _ = self.proposer.submit(now, &v, out);
        }
        self.proposer.on_tick(now, out);
    }
    fn next_tick(&self) -> Option<Time> {
        if self.to_submit.is_empty() {
            self.proposer.next_tick()
        } else {
            Some(Time::ZERO)
        }
    }
}

struct Scenario {
    sim: Sim,
    names: Vec<String>,
    ids: Vec<NodeId>,
    backup: NodeId,
}

fn deploy(cmd: &Command) -> Result<(Scenario, String), String> {
    let shape = PaxosShape {
        acceptors: cmd.parse_or("acceptors", 3)?,
        learners: cmd.parse_or("learners", 1)?,
        proposers: cmd.parse_or("proposers", 1)?,
        origin_votes: false,
        failback: false,
    };
    let d = deploy::deployment(shape, Duration::from_secs_f64(cmd.parse_or("fabric", 1.0)? / 1e3));
    deploy::validate(&d).map_err(|e| e.0)?;
    let roles = Roles::of(&d, PaxosParams::default());
    let mut sim = Sim::new(cmd.parse_or("seed", 1)?);
    sim.record_packets();
    let ids = sim.instantiate(
        &d,
        |_, n| match n.role {
            PaxosRole::Coordinator => SimNode::switch(Coordinator::new(roles.coordinator())),
            PaxosRole::Acceptor { id } => SimNode::switch(Acceptor::new(roles.acceptor(id))),
            PaxosRole::Backup => SimNode::host(BackupCoordinator::new(roles.backup())),
            PaxosRole::Learner { id } => SimNode::host(Learner::new(roles.learner(id))),
            PaxosRole::Proposer { index } => {
                let proposer = Proposer::new(roles.proposer(proposer_id(index as usize, 0)));
                SimNode::host(ScriptProposer { proposer, to_submit: vec![] })
            }
        },
        LinkSpec::latency,
    );
    let lines: Vec<String> = d
        .nodes
        .iter()
        .map(|n| {
            let groups: Vec<String> = n
                .groups
                .iter()
                .map(|(g, m)| {
                    let members: Vec<String> = m
                        .iter()
                        .map(|m| match m {
                            innet_core::Member::Node(x) => d.nodes[*x].name.clone(),
                            innet_core::Member::Origin => "origin".to_string(),
                        })
                        .collect();
                    format!(" group {g}: {}", members.join(" "))
                })
                .collect();
            format!("{}: {}{}", n.name, n.role.name(), groups.concat())
        })
        .collect();
    let backup = ids[d.with_role(|r| *r == PaxosRole::Backup)[0]];
    let names = d.nodes.iter().map(|n| n.name.clone()).collect();
    Ok((Scenario { sim, names, ids, backup }, format!("quorum {}\n{}", roles.quorum(), lines.join("\n"))))
}

/// A value as the script reads it: `"x" (request 1)` (a proposer's
/// request number 1), a no-op, or its length.
fn show_value(v: &Value) -> String {
    match Contents::of(v) {
        Contents::Single(e) if e.is_noop() => "no-op".to_string(),
        Contents::Single(e) => format!("{:?} (request {})", String::from_utf8_lossy(e.payload()), e.request),
        Contents::Packed(es) => format!("pack of {}", es.len()),
        Contents::Malformed | Contents::Foreign => format!("{} bytes", v.len),
    }
}

fn type_name(t: MsgType) -> &'static str {
    match t {
        MsgType::Phase1A => "1A",
        MsgType::Phase1B => "1B",
        MsgType::Phase2A => "2A",
        MsgType::Phase2B => "2B",
        other => other.name(),
    }
}

/// A packet as a line: `2B inst=0 rnd=1 vrnd=1 acpt=2 "x" (request 1)`.
fn describe(bytes: &[u8]) -> String {
    let Ok(m) = PaxosMsg::decode(bytes) else { return format!("{} bytes, not a Paxos message", bytes.len()) };
    let t = type_name(m.msgtype);
    let value = if m.value.len > 0 { format!(" {}", show_value(&m.value)) } else { String::new() };
    match m.msgtype {
        MsgType::Request => format!("{t}{value}"),
        MsgType::Phase2B | MsgType::Phase1B => {
            format!("{t} inst={} rnd={} vrnd={} acpt={}{value}", m.inst, m.rnd, m.vrnd, m.acptid)
        }
        MsgType::Heartbeat | MsgType::Trim | MsgType::Window => format!("{t} inst={}", m.inst),
        _ => format!("{t} inst={} rnd={}{value}", m.inst, m.rnd),
    }
}

impl Scenario {
    fn node(&self, name: &str) -> Result<NodeId, String> {
        let ix = self.names.iter().position(|n| n == name);
        ix.map(|i| self.ids[i]).ok_or_else(|| format!("no node '{name}' (nodes: {})", self.names.join(", ")))
    }

    fn submit(&mut self, cmd: &Command) -> Result<String, String> {
        let node = self.node(cmd.need("proposer")?)?;
        let p = self.sim.host_mut::<ScriptProposer>(node).ok_or("not a proposer")?;
        p.to_submit.push(cmd.need("value")?.as_bytes().to_vec());
        self.sim.wake(node);
        Ok(String::new())
    }

    fn run(&mut self, cmd: &Command) -> Result<String, String> {
        let hidden: Vec<&str> = cmd.get("hide").map(|h| h.split(',').collect()).unwrap_or_default();
        let end = self.sim.now().as_secs_f64() + cmd.parse_or("ms", 100.0)? / 1e3;
        self.sim.run_until(Time::from_secs_f64(end));
        let lines: Vec<String> = self
            .sim
            .take_packets()
            .iter()
            .filter(|p| PaxosMsg::decode(&p.bytes).is_ok_and(|m| !hidden.contains(&type_name(m.msgtype))))
            .map(|p| packet_line(&self.sim, p, describe))
            .collect();
        Ok(lines.join("\n"))
    }

    fn delivered(&mut self, cmd: &Command) -> Result<String, String> {
        let node = self.node(cmd.need("learner")?)?;
        let learner = self.sim.host_mut::<Learner>(node).ok_or("not a learner")?;
        let lines: Vec<String> = learner
            .take_deliveries()
            .iter()
            .map(|d| format!("instance {}: {}", d.instance, show_value(&d.value)))
            .collect();
        Ok(if lines.is_empty() { "nothing".to_string() } else { lines.join("\n") })
    }

    fn backup(&self) -> String {
        let b = self.sim.host::<BackupCoordinator>(self.backup).expect("the backup");
        match b.active_since() {
            Some(t) => format!("took over at {:.3} ms", t.as_secs_f64() * 1e3),
            None => "standing by".to_string(),
        }
    }
}

fn run_script(name: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(name);
    run_scenario(&path, deploy, |s: &mut Scenario, cmd| match cmd.name.as_str() {
        "submit" => s.submit(cmd),
        "run" => s.run(cmd),
        "crash" => {
            let node = s.node(cmd.need("node")?)?;
            s.sim.crash(node);
            Ok(String::new())
        }
        "delivered" => s.delivered(cmd),
        "backup" => Ok(s.backup()),
        other => Err(format!("unknown command '{other}'")),
    });
}

/// CAANS section 3 (the coordinator in the network, the backup coordinator
/// taking over when it fails) on Figure 1's deployment.
#[test]
fn caans_coordinator_failover() {
    run_script("caans_coordinator_failover.txt");
}
