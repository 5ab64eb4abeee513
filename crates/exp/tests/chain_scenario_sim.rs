//! Scenarios of the chain store in the simulator: the paper's failure
//! handling (NetCRAQ section III-C) on a 4-node chain, and NetChain's 16-bit
//! sequence numbers past their wrap-around (NetCRAQ paper section II-B2).

use std::time::Duration;

use innet_chain::check::check;
use innet_chain::client::{ChainClient, ClientConfig};
use innet_chain::workload::{LoadClient, Workload};
use innet_chain::Protocol;
use innet_core::rng::Rng;
use innet_core::Time;
use innet_exp::chain_sim::ChainSim;
use innet_sim::LinkSpec;
use innet_wire::netchain::key_from_u32;

fn chain(protocol: Protocol, clients: u32, write_ratio: f64, stop_s: f64) -> ChainSim {
    let link = LinkSpec::latency(Duration::from_micros(50));
    let fabric = LinkSpec::latency(Duration::from_micros(100));
    let mut c = ChainSim::new(protocol, 4, 7, link, fabric);
    let mut rng = Rng::new(3);
    for i in 0..clients {
        let mut cfg = ClientConfig::new(protocol, i, 4);
        cfg.near = i as usize % 4;
        cfg.timeout = Duration::from_millis(5);
        cfg.stamp_attempts = true;
        let w = Workload {
            write_ratio,
            keys: 8,
            think: Duration::from_micros(200),
            start: Time::ZERO,
            stop: Time::from_secs_f64(stop_s),
        };
        c.add_client(&format!("c{i}"), LoadClient::new(ChainClient::new(cfg).with_history(), w, rng.fork()));
    }
    c
}

/// Section III-C: a middle node fails; it is removed so traffic continues,
/// then restarted, given the chain's state while writes are paused, and
/// re-added; afterwards it holds the same values as every other node.
#[test]
fn a_failed_middle_node_is_removed_recovered_and_re_added() {
    for protocol in Protocol::ALL {
        let mut c = chain(protocol, 4, 0.3, 1.0);
        let mut faults = vec![(Time::from_secs_f64(0.3), 1, true), (Time::from_secs_f64(0.5), 1, false)];
        c.run_until(Time::from_secs_f64(1.2), &mut faults);
        assert_eq!(c.control.stats.removals, 1, "{protocol}");
        assert_eq!(c.control.members(), &[0, 2, 3, 1], "{protocol}: re-added as the new tail");
        let stats = c.load_stats();
        assert!(stats.writes > 500 && stats.reads > 1000, "{protocol}: {stats:?}");
        assert!(stats.max_gap < Duration::from_millis(100), "{protocol}: clients kept working: {stats:?}");
        check(&c.history()).unwrap_or_else(|e| panic!("{protocol}: {e:?}"));
        let values = |i: usize| c.node(i).values(8);
        for i in 0..4 {
            assert_eq!(values(i), values(3), "{protocol}: node {i} differs from node 3");
        }
    }
}

/// NetCRAQ paper II-B2: 16-bit sequence numbers allow 65,536 writes per key;
/// ours compare as serial numbers, so a key written 70,000 times still
/// reads its latest value, through the whole simulated chain.
#[test]
fn a_netchain_key_written_past_65536_times_reads_its_latest_value() {
    let mut c = chain(Protocol::NetChain, 1, 1.0, 1e9);
    {
        let lc = c.sim.host_mut::<LoadClient>(c.clients[0]).unwrap();
        lc.workload.keys = 1;
        lc.workload.think = Duration::ZERO;
        lc.client.history = None;
    }
    let mut none = vec![];
    let mut t = 0.0;
    while c.load_stats().writes < 70_000 {
        t += 1.0;
        c.run_until(Time::from_secs_f64(t), &mut none);
    }
    let lc = c.sim.host_mut::<LoadClient>(c.clients[0]).unwrap();
    lc.workload.stop = Time::ZERO;
    c.run_until(Time::from_secs_f64(t + 0.1), &mut none);
    let tail = c.node(3).as_netchain().unwrap().get(&key_from_u32(0)).unwrap();
    let writes = c.load_stats().writes;
    assert!(writes > 65_536);
    // The value's bytes 4..12 count the client's operations.
    let op = u64::from_be_bytes(tail.value.0[4..12].try_into().unwrap());
    assert_eq!(op, writes, "the tail holds the latest write");
    assert_eq!(tail.seq, (writes % 65_536) as u16);
    for i in 0..3 {
        assert_eq!(c.node(i).as_netchain().unwrap().get(&key_from_u32(0)).unwrap(), tail);
    }
    // A read through the chain returns it.
    let lc = c.sim.host_mut::<LoadClient>(c.clients[0]).unwrap();
    lc.completions = Some(vec![]);
    lc.client.get(Time::from_secs_f64(t + 0.1), 0);
    c.sim.wake(c.clients[0]);
    c.run_until(Time::from_secs_f64(t + 0.2), &mut none);
    let done = c.sim.host::<LoadClient>(c.clients[0]).unwrap().completions.clone().unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].value, tail.value);
}
