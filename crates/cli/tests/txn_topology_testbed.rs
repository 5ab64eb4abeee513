//! `innet testbed up txn --topology FILE` on Gotthard's multi-switch
//! deployment (Gotthard section 3.6, Figure 4: two edge switches, each in
//! front of its own client group, under a core switch in front of the
//! store), every switch an XDP program: clients behind both edges commit,
//! and the edge switches abort optimistically what they decide from the
//! requests and replies they saw pass (section 3.3). The example file runs
//! unchanged. `down --only txn-topology` leaves nothing behind. Needs root:
//! without it the test says why (`SKIPPED: ...`) and fails under `CI=true`.

use innet_xdp::privileged::{self, say};

mod common;
use common::{run, skip_reason, wait_clean, INNET};

fn field(line: &str, name: &str) -> u64 {
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        if w == name {
            return words.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} in '{line}'"));
        }
    }
    panic!("no {name} in '{line}'")
}

#[test]
fn the_two_edge_tree_commits_behind_both_edges_and_the_edges_abort_through_xdp() {
    if !privileged::proceed(
        "the_two_edge_tree_commits_behind_both_edges_and_the_edges_abort_through_xdp",
        skip_reason(),
    ) {
        return;
    }
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/topology-txn-tree.toml");
    run(INNET, &["testbed", "down", "--only", "txn-topology"]);
    let out = run(INNET, &["testbed", "up", "txn", "--topology", file, "--load-s", "2", "--write-ratio", "0.5"]);
    let programs = ["core", "edge0", "edge1"]
        .map(|s| run("ip", &["-n", &format!("innet-t{s}"), "link", "show"]).matches("prog/xdp").count());
    assert_eq!(programs, [3, 2, 2], "the program is on every port of every switch (core: store and two edges)");
    // `group clients committed committed/s aborts_by_switch aborts_by_store`
    let group = |g: &str| -> [u64; 3] {
        let line = out.lines().find(|l| l.starts_with(g)).unwrap_or_else(|| panic!("no {g} line in:\n{out}"));
        let column = |i: usize| line.split_whitespace().nth(i).and_then(|v| v.parse().ok()).expect("a count");
        [column(2), column(4), column(5)]
    };
    let switch =
        |s: &str| out.lines().find(|l| l.starts_with(&format!("switch {s} "))).expect("switch line").to_string();
    let ([c0, by_switch0, by_store0], [c1, by_switch1, by_store1]) = (group("clients0 "), group("clients1 "));
    let (e0, e1) =
        (field(&switch("edge0"), "optimistically_aborted"), field(&switch("edge1"), "optimistically_aborted"));
    let core = switch("core");
    assert!(c0 > 0 && c1 > 0, "clients behind both edges commit:\n{out}");
    assert!(e0 > 0 && e1 > 0, "each edge aborts conflicts among its own clients:\n{out}");
    // Section 3.6: a request the store decides climbs the tree, its edge and
    // then the core forwarding it; the store's replies come back through the
    // core, which learns each reply it awaits (no read is answered by a
    // switch here: reads are READ ops, which the switches forward).
    assert!(field(&switch("edge0"), "forwarded") >= c0 + by_store0, "edge0 forwards its group's requests:\n{out}");
    assert!(field(&switch("edge1"), "forwarded") >= c1 + by_store1, "edge1 forwards its group's requests:\n{out}");
    let store_decided = c0 + c1 + by_store0 + by_store1;
    assert!(field(&core, "forwarded") >= store_decided, "the core forwards both edges' requests:\n{out}");
    assert!(field(&core, "learned_replies") >= c0 + c1, "the core learns the store's replies it passes down:\n{out}");
    // Every abort a client was told came from a switch was made by one of them.
    let switch_aborts: u64 = ["edge0", "edge1", "core"]
        .map(|s| field(&switch(s), "aborted") + field(&switch(s), "optimistically_aborted"))
        .iter()
        .sum();
    assert!(switch_aborts >= by_switch0 + by_switch1, "clients counted more switch aborts than switches made:\n{out}");
    // And each group's came from its own edge or the core: an edge sees
    // only its own group's requests (section 3.6).
    let made = |s: &str| field(&switch(s), "aborted") + field(&switch(s), "optimistically_aborted");
    for (g, by_switch, edge) in [("clients0", by_switch0, "edge0"), ("clients1", by_switch1, "edge1")] {
        let (e, c) = (made(edge), made("core"));
        assert!(by_switch <= e + c, "{g} counted {by_switch} switch aborts, {edge} made {e}, the core {c}:\n{out}");
    }
    run(INNET, &["testbed", "down", "--only", "txn-topology"]);
    let left = wait_clean();
    assert_eq!(left, Vec::<String>::new(), "down left things behind");
    say(&format!(
        "TESTBED txn tree (XDP core + 2 edges, 2 s): committed clients0 {c0}, clients1 {c1}; optimistic aborts edge0 {e0}, edge1 {e1}; core {}; down left nothing",
        core.trim_start_matches("switch core").trim()
    ));
}
