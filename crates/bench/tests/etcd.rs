//! etcd as the chain store's peer: one member started by the test, a put
//! and a get through the benchmark's gRPC client, then its closed loop.

use std::io::Write;
use std::time::Duration;

use innet_bench::etcd::{self, EtcdCluster, EtcdLoadConfig, EtcdOp};

#[test]
fn one_member_puts_and_gets_through_the_grpc_client() {
    if etcd::etcd_binary().is_none() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: etcd_client: etcd not installed (scripts/setup.sh installs etcd-server)"
        );
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "skipped under CI=true: scripts/setup.sh installs etcd-server"
        );
        return;
    }
    let parent = std::env::temp_dir();
    let cluster = EtcdCluster::start(1, &parent).unwrap();
    let dir = cluster.dir().to_path_buf();
    assert!(dir.exists());
    let a = cluster.endpoints()[0];
    assert_eq!(etcd::get(a, b"innet-test").unwrap(), None, "nothing there yet");
    etcd::put(a, b"innet-test", b"seven").unwrap();
    assert_eq!(etcd::get(a, b"innet-test").unwrap().as_deref(), Some(&b"seven"[..]));
    for op in [EtcdOp::Put, EtcdOp::Get] {
        let cfg = EtcdLoadConfig {
            op,
            clients: 4,
            conns: 2,
            keys: 16,
            value_len: 16,
            warmup_s: 0.05,
            duration_s: 0.4,
            seed: 1,
        };
        let r = etcd::run_load(&cluster.endpoints(), &cfg).unwrap();
        assert!(r.load.completed > 10 && r.errors == 0, "{op:?}: {:?}", r.load);
        assert!(r.client_cpu_s > 0.0);
    }
    // The load's puts landed: every key it used holds its value.
    let v = etcd::get(a, &etcd::key_name(3)).unwrap();
    assert_eq!(v.as_deref(), Some(&[b'v'; 16][..]));
    drop(cluster);
    std::thread::sleep(Duration::from_millis(50));
    assert!(!dir.exists(), "the cluster's folder is removed");
}
