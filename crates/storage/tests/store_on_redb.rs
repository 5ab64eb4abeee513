//! The transaction store on the durable backend: decisions and exactly-once
//! records survive closing and reopening the database.

use innet_core::Outbox;
use innet_storage::RedbBackend;
use innet_txn::TxnStore;
use innet_wire::txn::{Op, Status, TxnMsg, Value};

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    std::env::temp_dir().join(format!("innet-storage-it-{tag}-{}-{nanos}", std::process::id()))
}

fn v(s: &str) -> Value {
    Value::from_str_padded(s).unwrap()
}

fn send(store: &mut TxnStore, msg: &TxnMsg) -> Vec<Vec<u8>> {
    let mut out = Outbox::new();
    store.handle(&msg.encode(), &mut out);
    out.drain().map(|(_, b)| b).collect()
}

#[test]
fn store_reopened_keeps_values_and_answers_duplicates_from_its_record() {
    let dir = temp_dir("store");
    let commit = TxnMsg::request(1, 1, vec![Op::write(1, v("a"))]);
    let abort = TxnMsg::request(2, 5, vec![Op::value(1, v("x")), Op::write(1, v("y"))]);
    let (commit_reply, abort_reply) = {
        let mut s = TxnStore::new(Box::new(RedbBackend::open(&dir).unwrap()));
        let c = send(&mut s, &commit);
        let a = send(&mut s, &abort);
        assert_eq!(TxnMsg::decode(&c[0]).unwrap().status, Status::Ok);
        assert_eq!(TxnMsg::decode(&a[0]).unwrap().status, Status::Abort);
        (c, a)
    };
    let mut s = TxnStore::new(Box::new(RedbBackend::open(&dir).unwrap()));
    assert_eq!(s.get(1), v("a"));
    // Resends after the restart get byte-identical replies, and change nothing.
    assert_eq!(send(&mut s, &commit), commit_reply);
    assert_eq!(send(&mut s, &abort), abort_reply);
    assert_eq!(s.counters.duplicates_answered, 2);
    // An older request id of a known client is rejected and changes nothing.
    let old = send(&mut s, &TxnMsg::request(2, 4, vec![Op::write(1, v("old"))]));
    assert_eq!(TxnMsg::decode(&old[0]).unwrap().status, Status::BadRequest);
    assert_eq!(s.get(1), v("a"));
    // A new request sees the durable value.
    let r = send(&mut s, &TxnMsg::request(2, 6, vec![Op::value(1, v("a")), Op::write(1, v("b"))]));
    assert_eq!(TxnMsg::decode(&r[0]).unwrap().status, Status::Ok);
    drop(s);
    let s = TxnStore::new(Box::new(RedbBackend::open(&dir).unwrap()));
    assert_eq!(s.get(1), v("b"));
    drop(s);
    std::fs::remove_dir_all(&dir).unwrap();
}
