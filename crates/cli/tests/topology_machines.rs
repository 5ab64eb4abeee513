//! One topology file, two "machines": two network namespaces joined by a
//! veth pair, each running `innet up SERVICE --topology FILE --only
//! MACHINE`. Consensus (CAANS Figure 1: coordinator and acceptors on one
//! machine, backup, learners and proposer on the other) commits and both
//! learners deliver the same values; a NetCRAQ chain (switches on one
//! machine, control plane and clients on the other) is configured over the
//! network and serves reads and writes. Needs root (namespaces): without it
//! the test says why on stderr (`SKIPPED: ...`) and fails under `CI=true`.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use innet_xdp::privileged::{self, say};

mod common;
use common::{run, skip_reason, INNET};

/// Two namespaces with a veth between them; removed on drop. Names outside
/// the testbed's `innet-` prefix, so a testbed's `down` leaves them alone.
struct Machines {
    names: [String; 2],
}

const IPS: [&str; 2] = ["10.81.0.1", "10.81.0.2"];

impl Machines {
    fn new() -> Machines {
        let tag = std::process::id();
        let names = [format!("itop{tag}a"), format!("itop{tag}b")];
        for n in &names {
            run("ip", &["netns", "add", n]);
            run("ip", &["-n", n, "link", "set", "lo", "up"]);
        }
        let (va, vb) = (format!("itv{tag}a"), format!("itv{tag}b"));
        run("ip", &["link", "add", &va, "netns", &names[0], "type", "veth", "peer", "name", &vb, "netns", &names[1]]);
        for (n, (dev, ip)) in names.iter().zip([(&va, IPS[0]), (&vb, IPS[1])]) {
            run("ip", &["-n", n, "addr", "add", &format!("{ip}/24"), "dev", dev]);
            run("ip", &["-n", n, "link", "set", dev, "up"]);
        }
        Machines { names }
    }

    fn up(&self, machine: usize, service: &str, file: &std::path::Path, seconds: f64) -> Child {
        Command::new("ip")
            .args(["netns", "exec", &self.names[machine], INNET, "up", service, "--topology"])
            .arg(file)
            .args(["--only", ["m1", "m2"][machine], "--duration-s", &seconds.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start innet up")
    }
}

impl Drop for Machines {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

fn finish(c: Child) -> String {
    let out = c.wait_with_output().expect("innet up finishes");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "innet up failed: {}\n{text}", String::from_utf8_lossy(&out.stderr));
    text
}

fn counter(out: &str, name: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no counter {name} in:\n{out}"))
}

fn field(out: &str, name: &str) -> u64 {
    let line = out.lines().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no load report in:\n{out}"));
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    v[name].as_u64().unwrap_or_else(|| panic!("no {name} in {line}"))
}

fn node(name: &str, role: &str, machine: usize, port: u16) -> String {
    format!(
        "[[node]]\nname = \"{name}\"\nrole = \"{role}\"\nmachine = \"m{}\"\nlisten = \"{}:{port}\"\n\n",
        machine + 1,
        IPS[machine]
    )
}

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("innet-{}-{name}.toml", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn paxos_and_a_netcraq_chain_run_on_two_machines_from_one_file() {
    if !privileged::proceed("paxos_and_a_netcraq_chain_run_on_two_machines_from_one_file", skip_reason()) {
        return;
    }
    let m = Machines::new();

    let mut paxos = String::from("[paxos]\ndata_plane = \"switch\"\n\n");
    paxos += &node("coordinator", "coordinator", 0, 9200);
    for i in 0..3 {
        paxos += &node(&format!("acceptor{i}"), "acceptor", 0, 9201 + i);
    }
    paxos += &node("backup", "backup", 1, 9204);
    paxos += &node("learner0", "learner", 1, 9205);
    paxos += &node("learner1", "learner", 1, 9206);
    paxos += &node("proposer0", "proposer", 1, 9207);
    let file = write("paxos", &paxos);
    let servers = m.up(0, "paxos", &file, 4.0);
    std::thread::sleep(Duration::from_millis(500));
    let clients = finish(m.up(1, "paxos", &file, 2.5));
    finish(servers);
    let (l0, l1) = (counter(&clients, "learner0.delivered"), counter(&clients, "learner1.delivered"));
    let committed = field(&clients, "committed");
    assert!(committed > 100, "only {committed} values committed across machines:\n{clients}");
    assert!(l0 >= committed && l0 == l1, "learners delivered {l0} and {l1}, {committed} committed");
    assert_eq!(counter(&clients, "backup.took_over"), 0, "the coordinator never failed");
    say(&format!("TOPOLOGY paxos on two machines: {committed} values committed, learners delivered {l0} and {l1}"));

    let mut chain = String::from("[chain]\nprotocol = \"netcraq\"\n\n");
    for i in 0..3 {
        chain += &node(&format!("node{i}"), "node", 0, 9300 + i);
    }
    chain += &node("control", "control", 1, 9309);
    chain += "[[node]]\nname = \"clients\"\nrole = \"clients\"\nmachine = \"m2\"\ncount = 2\n";
    let file = write("chain", &chain);
    let switches = m.up(0, "chain", &file, 4.0);
    std::thread::sleep(Duration::from_millis(500));
    let rest = finish(m.up(1, "chain", &file, 2.5));
    let switches = finish(switches);
    let (reads, writes) = (field(&rest, "reads"), field(&rest, "writes"));
    assert!(reads > 100 && writes > 20, "chain across machines: {reads} reads, {writes} writes:\n{rest}");
    assert_eq!(counter(&rest, "control.removals"), 0, "no node was taken for failed:\n{rest}");
    for i in 0..3 {
        assert!(counter(&switches, &format!("node{i}.agent_requests")) > 10, "node{i} was managed over the network");
        assert_eq!(counter(&switches, &format!("node{i}.agent_dropped_foreign")), 0);
    }
    say(&format!("TOPOLOGY netcraq chain on two machines: {reads} reads, {writes} writes, 0 removals"));
    let _ = std::fs::remove_file(&file);
}
