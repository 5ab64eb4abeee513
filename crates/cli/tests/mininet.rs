//! `innet mininet`: topology files, unchanged, as Mininet networks (one
//! Mininet host per innet machine, Linux bridges, every node an `innet up`
//! in its host; the papers' authors emulated their networks in Mininet:
//! Gotthard section 5.1, CAANS section 4, NetCRAQ section IV).
//! Gotthard's two-edge-switch tree (section 3.6, Figure 4): transactions
//! commit behind both edge switches and the edges abort optimistically
//! (section 3.3, Algorithm 2); CAANS and a NetCRAQ chain serve their load;
//! and each run leaves no process, host shell, bridge or link behind.
//! Needs root and Mininet: without them the tests say why on stderr
//! (`SKIPPED: ...`) and fail under `CI=true`.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use innet_live::mininet::{self, MininetReport};
use innet_xdp::privileged::{self, say};

mod common;
use common::{run, INNET};

/// One Mininet network at a time: the networks' bridges share names.
static ONE_NETWORK: Mutex<()> = Mutex::new(());

/// An example file's canonical path (the one the hosts' `innet up` command lines carry).
fn example(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name);
    std::fs::canonicalize(p).unwrap().to_string_lossy().into_owned()
}

fn mininet_run(file: &str, extra: &[&str]) -> MininetReport {
    let out = Command::new(INNET)
        .args(["mininet", "--topology", file, "--json"])
        .args(extra)
        .output()
        .expect("run innet mininet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "innet mininet {file} failed:\n{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("no report ({e}):\n{stdout}"))
}

/// What the run could have left: its bridges and their ports in this
/// namespace, its hosts' shells (`bash ... mininet:HOST`), and `innet up`
/// processes of this topology file.
fn leftovers(r: &MininetReport, file: &str) -> Vec<String> {
    let mut left: Vec<String> = run("ip", &["-o", "link", "show"])
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .filter(|n| r.bridges.iter().any(|b| n == b || n.starts_with(&format!("{b}-eth"))))
        .map(|n| format!("link {n}"))
        .collect();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(p.path().join("cmdline")) else { continue };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let shell = r.hosts.iter().any(|h| cmd.contains(&format!("mininet:{} ", h.host)));
        if shell || (cmd.contains(" up ") && cmd.contains(file) && cmd.contains("--place")) {
            left.push(format!("process {}: {cmd}", p.file_name().to_string_lossy()));
        }
    }
    left
}

fn counter(r: &MininetReport, node: &str, name: &str) -> u64 {
    *r.counters.get(node).and_then(|c| c.get(name)).unwrap_or_else(|| panic!("no {node}.{name} in {:?}", r.counters))
}

#[test]
fn the_two_edge_switch_tree_commits_behind_both_edges_in_mininet_and_leaves_nothing() {
    let test = "the_two_edge_switch_tree_commits_behind_both_edges_in_mininet_and_leaves_nothing";
    if !privileged::proceed(test, mininet::unavailable()) {
        return;
    }
    let _one = ONE_NETWORK.lock().unwrap_or_else(|e| e.into_inner());
    let file = example("topology-txn-tree.toml");
    let r = mininet_run(&file, &["--duration-s", "3"]);
    assert_eq!(r.service, "txn");
    assert_eq!(r.hosts.len(), 6, "store, core, two edges, two client groups: {:?}", r.hosts);
    let mut ips: Vec<&str> = r.hosts.iter().map(|h| h.ip.as_str()).collect();
    ips.dedup();
    assert_eq!(ips.len(), 6, "each host its own address");
    let mut committed = vec![];
    let mut store_decided = 0;
    for (group, edge) in [("clients0", "edge0"), ("clients1", "edge1")] {
        let host = r.host(group).unwrap_or_else(|| panic!("no host for {group}"));
        assert_eq!(host.upstream, [edge], "{group} sends to {edge}");
        let l = r.loads.iter().find(|l| l.machine == group).unwrap_or_else(|| panic!("no load from {group}"));
        assert_eq!(l.nodes, 4);
        assert!(l.committed > 0, "nothing committed behind {edge}: {l:?}");
        // Section 3.6: what the store decided for this group climbed through its edge.
        let forwarded = counter(&r, edge, "forwarded");
        assert!(forwarded >= l.committed + l.aborts_by_store, "{edge} forwarded {forwarded} for {l:?}");
        committed.push(l.committed);
        store_decided += l.committed + l.aborts_by_store;
    }
    // Every commit a client saw went through the core to the store in another host.
    let store = counter(&r, "store", "committed");
    assert!(store >= committed.iter().sum(), "the store committed {store}, the clients saw {committed:?}");
    let aborts = r.switch_aborts();
    let at = |s: &str| aborts.iter().find(|a| a.switch == s).unwrap_or_else(|| panic!("no counters of {s}")).optimistic;
    let (e0, e1) = (at("edge0"), at("edge1"));
    assert!(e0 > 0 && e1 > 0, "each edge aborts optimistically: edge0 {e0}, edge1 {e1}");
    // The switch aborts a group was told came from its own edge or the
    // core (an edge sees only its own group's requests; a reply can be
    // lost, never made up).
    let made = |s: &str| aborts.iter().find(|a| a.switch == s).map_or(0, |a| a.optimistic + a.aborted);
    for (group, edge) in [("clients0", "edge0"), ("clients1", "edge1")] {
        let l = r.loads.iter().find(|l| l.machine == group).expect("a load");
        let (e, c) = (made(edge), made("core"));
        assert!(
            l.aborts_by_switch <= e + c,
            "{group}: {} switch aborts, {edge} made {e}, the core {c}",
            l.aborts_by_switch
        );
    }
    for switch in ["edge0", "edge1", "core"] {
        // Section 3.3: a switch forwards a request or answers it itself, exactly once.
        let answered = ["aborted", "optimistically_aborted", "served_from_cache", "confirmed"]
            .into_iter()
            .chain(["refused_duplicate", "refused_stale"])
            .map(|c| counter(&r, switch, c))
            .sum::<u64>();
        let (requests, forwarded) = (counter(&r, switch, "requests"), counter(&r, switch, "forwarded"));
        assert_eq!(
            requests,
            forwarded + answered,
            "{switch}: {requests} requests, {forwarded} forwarded, {answered} answered"
        );
        assert_eq!(counter(&r, switch, "live_dropped_no_route"), 0);
    }
    // The core's requests came from the edges, and carried every request the store decided.
    let core_requests = counter(&r, "core", "requests");
    assert!(core_requests >= store_decided, "the core saw {core_requests} requests, the store decided {store_decided}");
    let from_edges = counter(&r, "edge0", "forwarded") + counter(&r, "edge1", "forwarded");
    assert!(core_requests <= from_edges, "the core saw {core_requests} requests, the edges forwarded {from_edges}");
    assert_eq!(counter(&r, "core", "live_dropped"), 0, "the core takes the edges' shimmed packets");
    let left = leftovers(&r, &file);
    assert!(left.is_empty(), "the Mininet run left things behind:\n{}", left.join("\n"));
    say(&format!(
        "MININET txn tree ({} hosts, {} bridges): {} committed behind edge0, {} behind edge1; \
         optimistic aborts edge0 {e0}, edge1 {e1}; store committed {store}; wall {:.1} s; nothing left behind",
        r.hosts.len(),
        r.bridges.len(),
        committed[0],
        committed[1],
        r.wall_s
    ));
}

#[test]
fn paxos_and_a_netcraq_chain_serve_their_load_in_mininet() {
    let test = "paxos_and_a_netcraq_chain_serve_their_load_in_mininet";
    if !privileged::proceed(test, mininet::unavailable()) {
        return;
    }
    let _one = ONE_NETWORK.lock().unwrap_or_else(|e| e.into_inner());
    let file = example("topology-paxos.toml");
    let r = mininet_run(&file, &["--duration-s", "2", "--outstanding", "4"]);
    let committed = r.loads.iter().map(|l| l.committed).sum::<u64>();
    let (l0, l1) = (counter(&r, "learner0", "delivered"), counter(&r, "learner1", "delivered"));
    assert!(committed > 100, "only {committed} values committed: {:?}", r.loads);
    assert!(l0 >= committed && l0 == l1, "learners delivered {l0} and {l1}, {committed} committed");
    assert!(leftovers(&r, &file).is_empty(), "{:?}", leftovers(&r, &file));
    say(&format!(
        "MININET paxos ({} hosts): {committed} values committed, learners delivered {l0} and {l1}; wall {:.1} s",
        r.hosts.len(),
        r.wall_s
    ));

    let file = example("topology-chain.toml");
    let r = mininet_run(&file, &["--duration-s", "2"]);
    let (reads, writes) = (r.loads.iter().map(|l| l.reads).sum::<u64>(), r.loads.iter().map(|l| l.writes).sum::<u64>());
    assert!(reads > 100 && writes > 20, "chain: {reads} reads, {writes} writes");
    assert_eq!(counter(&r, "control", "removals"), 0, "no chain node was taken for failed");
    for n in ["node0", "node1", "node2"] {
        assert!(counter(&r, n, "agent_requests") > 0, "{n} was managed across hosts");
        assert_eq!(counter(&r, n, "agent_dropped_foreign"), 0, "{n}'s agent heard only the control");
    }
    assert!(leftovers(&r, &file).is_empty(), "{:?}", leftovers(&r, &file));
    say(&format!(
        "MININET netcraq chain ({} hosts): {reads} reads, {writes} writes, 0 removals; wall {:.1} s",
        r.hosts.len(),
        r.wall_s
    ));
}
