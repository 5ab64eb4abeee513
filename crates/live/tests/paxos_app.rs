//! The Rust API of CAANS (section 3.1, Figure 4): values submitted through
//! `submit` come back once each through the deliver callback; `recover` on
//! a delivered instance delivers nothing new, on an instance nobody
//! proposed it delivers the no-op; the service goes on afterwards.

use std::time::Duration;

use innet_core::deploy::DataPlaneAt;
use innet_live::paxos::app::PaxosApp;
use innet_live::paxos::{LiveConfig, PaxosParams};

/// Polls until `done` holds (a liveness bound, not a timing check).
fn poll_until(app: &PaxosApp, log: &mut Vec<(u32, Vec<u8>)>, done: impl Fn(&[(u32, Vec<u8>)]) -> bool) {
    for _ in 0..1_000 {
        if done(log) {
            return;
        }
        app.poll_timeout(Duration::from_millis(20), |i, v| log.push((i, v.to_vec())));
    }
    panic!("not delivered: {log:?}");
}

fn run(data_plane: DataPlaneAt) {
    let app = PaxosApp::start(&LiveConfig { data_plane, ..LiveConfig::default() }).expect("deployment starts");
    const N: usize = 20;
    let values: Vec<Vec<u8>> = (0..N).map(|i| format!("value {i}").into_bytes()).collect();
    for v in &values {
        app.submit(v).unwrap();
    }
    assert!(app.submit(&[0; 25]).is_err(), "wider than a value");
    let mut log = vec![];
    let is_value = |v: &Vec<u8>| !v.is_empty();
    poll_until(&app, &mut log, |l| l.iter().filter(|(_, v)| is_value(v)).count() >= N);
    // Each value exactly once (no-ops, empty, may fill gaps), in instance order.
    let mut delivered: Vec<&Vec<u8>> = log.iter().map(|(_, v)| v).filter(|v| is_value(v)).collect();
    delivered.sort();
    let mut expected: Vec<&Vec<u8>> = values.iter().collect();
    expected.sort();
    assert_eq!(delivered, expected);
    assert!(log.windows(2).all(|w| w[0].0 < w[1].0), "instance order: {log:?}");
    let before = log.clone();
    let last = log.last().expect("delivered").0;

    // recover on a delivered instance: decided already, nothing new.
    app.recover(before[0].0, b"NOOP").unwrap();
    // recover on an instance nobody proposed (a few beyond the last, so a
    // late duplicate of a resubmitted value cannot be there): the no-op is
    // chosen; the learner fills the instances before it.
    let fresh = last + 4;
    app.recover(fresh, b"NOOP").unwrap();
    poll_until(&app, &mut log, |l| l.iter().any(|(i, _)| *i == fresh));
    // A value submitted afterwards is still delivered (the coordinator's
    // 2As for the recovered instances are refused in round 1; the proposer
    // resubmits).
    app.submit(b"after").unwrap();
    poll_until(&app, &mut log, |l| l.iter().any(|(_, v)| v == b"after"));
    assert!(log.windows(2).all(|w| w[0].0 < w[1].0), "one delivery per instance, in order: {log:?}");
    assert_eq!(log[..before.len()], before[..], "recover changed nothing delivered");
    let at = |i: u32| log.iter().find(|(j, _)| *j == i).map(|(_, v)| v.as_slice());
    assert_eq!(at(fresh), Some(&b"NOOP"[..]), "the no-op fills an unproposed instance");
    assert_eq!(log.iter().filter(|(_, v)| v == b"after").count(), 1);
    // Between: gap no-ops (empty) only.
    assert!(log.iter().filter(|(i, _)| *i > last && *i < fresh).all(|(_, v)| v.is_empty()));
    app.stop();
}

#[test]
fn submit_deliver_recover_switch() {
    run(DataPlaneAt::Switch);
}

#[test]
fn submit_deliver_recover_process() {
    run(DataPlaneAt::Process);
}

/// Packing on (4 values per instance): every submitted value is delivered
/// once, in submission order, several sharing an instance; the instance
/// numbers never go down.
#[test]
fn packed_values_are_delivered_once_each_in_order() {
    let cfg = LiveConfig { params: PaxosParams { pack: 4, ..PaxosParams::default() }, ..LiveConfig::default() };
    let app = PaxosApp::start(&cfg).expect("deployment starts");
    const N: usize = 40;
    let values: Vec<Vec<u8>> = (0..N).map(|i| format!("p{i}").into_bytes()).collect();
    for v in &values {
        app.submit(v).unwrap();
    }
    let mut log = vec![];
    poll_until(&app, &mut log, |l| l.iter().filter(|(_, v)| !v.is_empty()).count() >= N);
    let delivered: Vec<&Vec<u8>> = log.iter().map(|(_, v)| v).filter(|v| !v.is_empty()).collect();
    assert_eq!(delivered, values.iter().collect::<Vec<_>>(), "once each, in submission order");
    assert!(log.windows(2).all(|w| w[0].0 <= w[1].0), "instance order: {log:?}");
    let instances: std::collections::BTreeSet<u32> = log.iter().map(|(i, _)| *i).collect();
    assert!(instances.len() < N, "values shared instances: {log:?}");
    app.stop();
}
