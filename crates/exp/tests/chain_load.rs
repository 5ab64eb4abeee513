//! The chain's load service (`innet client chain --load`) through the
//! batched generator against a live NetCRAQ chain whose registers it reads
//! back.

use std::time::Duration;

use innet_exp::chain_load::{self, ChainLoadConfig};

#[test]
fn loads_a_live_chain_and_reads_back_what_it_wrote() {
    use innet_chain::Protocol;
    use innet_live::chain::{run_one, LiveChain, LiveChainConfig};
    let stop = innet_live::Stop::new();
    let chain = LiveChain::start(LiveChainConfig::new(Protocol::NetCraq, 3), &stop).unwrap();
    let nodes = chain.addrs();
    // Let the control plane configure the nodes.
    std::thread::sleep(Duration::from_millis(50));
    // One client, only puts: the last ACK of each key is the chain's value.
    let cfg = ChainLoadConfig { threads: 1, sockets: 1, ..ChainLoadConfig::new(1, 1.0, 8, 0.5) };
    let r = chain_load::run(&nodes, &cfg).unwrap();
    assert!(r.load.completed > 50 && r.writes > 50 && r.reads == 0, "{:?}", r.load);
    assert!(r.ceiling.completed > 0);
    assert_eq!(r.last_acked.len(), 8, "every key written: {:?}", r.last_acked);
    for (k, v) in &r.last_acked {
        for near in 0..3 {
            let got =
                run_one(Protocol::NetCraq, &nodes, near, *k, None, Duration::from_millis(100), Duration::from_secs(2))
                    .unwrap()
                    .expect("an answer");
            assert_eq!(got.value, *v, "key {k} from node {near}");
        }
    }
    // Mixed load, many clients: gets and puts both complete.
    let cfg = ChainLoadConfig::new(32, 0.5, 64, 0.5);
    let r = chain_load::run(&nodes, &cfg).unwrap();
    assert!(r.reads > 0 && r.writes > 0, "{:?}", r.load);
    chain.shutdown().unwrap();
}
