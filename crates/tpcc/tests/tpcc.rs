//! TPC-C over the transaction service: each transaction's effects on a real
//! store (`TxnStore`, reached through the client's packets) and the
//! consistency conditions catching injected inconsistencies. The simulated
//! runs of the mix are `crates/exp/tests/tpcc_sim.rs`.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use innet_core::rng::Rng;
use innet_core::{Host, Outbox, Time};
use innet_tpcc::*;
use innet_txn::client::{ClientConfig, TxnClient};
use innet_txn::store::MemBackend;
use innet_txn::TxnStore;
use innet_wire::txn::{Key, Value};

const S: Scale = Scale::GOTTHARD;

/// Runs one transaction of `kind` from a terminal against a store holding
/// the initial database, passing packets both ways; the store's contents
/// before and after.
fn one(kind: Kind, seed: u64) -> (BTreeMap<Key, Value>, BTreeMap<Key, Value>) {
    let before = initial_db(&S, seed);
    let mut store = TxnStore::new(Box::new(MemBackend::with_contents(before.clone(), HashMap::new())));
    let mut cfg = ClientConfig::new(1);
    cfg.retry_limit = 1;
    let mut t = TpccClient::new(
        TxnClient::new(cfg),
        S,
        1,
        Rng::new(seed),
        10,
        Duration::from_secs(3600),
        Time::ZERO,
        Time::from_secs_f64(3000.0),
    );
    t.only = Some(kind);
    let mut now = Time::ZERO;
    let mut out = Outbox::new();
    t.on_tick(now, &mut out);
    for _ in 0..100 {
        if t.stats.per_kind.get(&kind).is_some_and(|s| s.committed == 1) {
            assert_eq!(t.stats.committed(), 1);
            return (before, store.snapshot());
        }
        now = now + Duration::from_millis(1);
        let mut replies = Outbox::new();
        for (_, p) in out.drain() {
            store.handle(&p, &mut replies);
        }
        for (_, p) in replies.drain() {
            t.on_packet(now, &p, &mut out);
        }
    }
    panic!("{kind:?} did not commit: {:?}", t.stats);
}

/// Keys whose values differ.
fn changed(a: &BTreeMap<Key, Value>, b: &BTreeMap<Key, Value>) -> Vec<(Table, Vec<u32>)> {
    let mut keys: Vec<Key> = a.keys().chain(b.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(k).copied().unwrap_or(Value::ZERO) != b.get(k).copied().unwrap_or(Value::ZERO))
        .map(|k| decode_key(k).expect("a TPC-C key"))
        .collect()
}

fn get(db: &BTreeMap<Key, Value>, k: Key) -> Value {
    db.get(&k).copied().unwrap_or(Value::ZERO)
}

#[test]
fn payment_moves_one_amount_through_warehouse_district_customer_and_history() {
    for seed in 1..6 {
        let (a, b) = one(Kind::Payment, seed);
        let ch = changed(&a, &b);
        assert_eq!(ch.len(), 4, "{ch:?}");
        let w =
            Warehouse0::of(get(&b, key::warehouse(1, HOT))).ytd - Warehouse0::of(get(&a, key::warehouse(1, HOT))).ytd;
        assert!((100..=500_000).contains(&w), "amount {w}");
        let (_, df) = ch.iter().find(|(t, _)| *t == Table::District).expect("district written");
        let d = df[1];
        let d0a = District0::of(get(&a, key::district(1, d, HOT)));
        let d0b = District0::of(get(&b, key::district(1, d, HOT)));
        assert_eq!(d0b.ytd - d0a.ytd, w);
        assert_eq!(d0b.history_cnt, d0a.history_cnt + 1);
        assert_eq!(d0b.next_o_id, d0a.next_o_id, "payment leaves the order counter alone");
        let (_, cf) = ch.iter().find(|(t, _)| *t == Table::Customer).expect("customer written");
        let ck = key::customer(cf[0], cf[1], cf[2], HOT);
        let (ca, cb) = (Customer0::of(get(&a, ck)), Customer0::of(get(&b, ck)));
        assert_eq!(ca.balance - cb.balance, w);
        assert_eq!(cb.ytd_payment - ca.ytd_payment, w as u64);
        assert_eq!(cb.payment_cnt, ca.payment_cnt + 1);
        let h = History0::decode(get(&b, key::history(1, d, d0b.history_cnt))).expect("history row");
        assert_eq!((h.amount as i64, h.c_id), (w, cf[2]));
        assert!(check_consistency(&S, &b).is_empty());
    }
}

#[test]
fn new_order_takes_the_next_order_id_and_writes_order_lines_and_stock() {
    for seed in 1..6 {
        let (a, b) = one(Kind::NewOrder, seed);
        let ch = changed(&a, &b);
        let Some((_, df)) = ch.iter().find(|(t, _)| *t == Table::District) else {
            // The 1% rollback writes nothing.
            assert!(ch.is_empty(), "{ch:?}");
            continue;
        };
        let d = df[1];
        let d0a = District0::of(get(&a, key::district(1, d, HOT)));
        let d0b = District0::of(get(&b, key::district(1, d, HOT)));
        assert_eq!(d0b.next_o_id, d0a.next_o_id + 1);
        let o = d0a.next_o_id;
        let order = Order0::decode(get(&b, key::order(1, d, o))).expect("order row");
        assert!((5..=15).contains(&order.ol_cnt));
        assert_eq!(order.carrier_id, 0);
        assert!(NewOrder0::decode(get(&b, key::new_order(1, d, o))).is_some());
        let last = CustomerLast::of(get(&b, key::customer(1, d, order.c_id, LAST_ORDER)));
        assert_eq!(last.last_o_id, o);
        let mut qty_by_item: BTreeMap<u32, u32> = BTreeMap::new();
        for n in 1..=order.ol_cnt {
            let ol = OrderLine0::decode(get(&b, key::order_line(1, d, o, n))).expect("order line");
            let price = Item0::of(get(&b, key::item(ol.i_id))).price;
            assert_eq!(ol.amount, ol.quantity * price);
            assert_eq!(ol.delivery_d, 0);
            *qty_by_item.entry(ol.i_id).or_default() += ol.quantity;
        }
        for (i, q) in qty_by_item {
            let (sa, sb) = (Stock0::of(get(&a, key::stock(1, i))), Stock0::of(get(&b, key::stock(1, i))));
            assert_eq!(sb.ytd - sa.ytd, q, "item {i}");
            assert!(sb.quantity >= 10 || sb.quantity + q >= 10, "item {i}: quantity {}", sb.quantity);
        }
        let stock_rows = ch.iter().filter(|(t, _)| *t == Table::Stock).count();
        assert!(stock_rows >= 1);
        assert!(check_consistency(&S, &b).is_empty(), "{:?}", check_consistency(&S, &b));
    }
}

#[test]
fn delivery_delivers_the_oldest_new_order_of_every_district() {
    let (a, b) = one(Kind::Delivery, 1);
    for d in 1..=S.districts {
        let o = DistrictDelivery::of(get(&a, key::district(1, d, DELIVERY))).next_delivery;
        assert_eq!(DistrictDelivery::of(get(&b, key::district(1, d, DELIVERY))).next_delivery, o + 1);
        assert!(NewOrder0::decode(get(&b, key::new_order(1, d, o))).is_none(), "new-order row deleted");
        let order = Order0::of(get(&b, key::order(1, d, o)));
        assert!((1..=10).contains(&order.carrier_id));
        let mut sum = 0i64;
        for n in 1..=order.ol_cnt {
            let ol = OrderLine0::of(get(&b, key::order_line(1, d, o, n)));
            assert_ne!(ol.delivery_d, 0);
            sum += ol.amount as i64;
        }
        let ck = key::customer(1, d, order.c_id, HOT);
        assert_eq!(Customer0::of(get(&b, ck)).balance - Customer0::of(get(&a, ck)).balance, sum);
        let dk = key::customer(1, d, order.c_id, DELIVERY);
        assert_eq!(CustomerDelivery::of(get(&b, dk)).delivery_cnt, 1);
    }
    assert!(check_consistency(&S, &b).is_empty(), "{:?}", check_consistency(&S, &b));
}

#[test]
fn order_status_and_stock_level_read_and_change_nothing() {
    for kind in [Kind::OrderStatus, Kind::StockLevel] {
        let (a, b) = one(kind, 2);
        assert_eq!(a, b, "{kind:?} wrote");
    }
}

#[test]
fn the_consistency_conditions_catch_injected_inconsistencies() {
    let db = initial_db(&S, 4);
    assert!(check_consistency(&S, &db).is_empty());
    let mut bump = db.clone();
    let wk = key::warehouse(1, HOT);
    bump.insert(wk, Warehouse0 { ytd: Warehouse0::of(db[&wk]).ytd + 1 }.encode());
    let e = check_consistency(&S, &bump);
    assert!(e.iter().any(|m| m.contains("condition 1")), "{e:?}");

    let mut hole = db.clone();
    let o = DistrictDelivery::of(db[&key::district(1, 1, DELIVERY)]).next_delivery;
    hole.remove(&key::new_order(1, 1, o + 1));
    let e = check_consistency(&S, &hole);
    assert!(e.iter().any(|m| m.contains("condition 3")), "{e:?}");
    assert!(e.iter().any(|m| m.contains("condition 5")), "{e:?}");

    let mut line = db.clone();
    line.remove(&key::order_line(1, 2, 1, 1));
    let e = check_consistency(&S, &line);
    assert!(e.iter().any(|m| m.contains("condition 4")), "{e:?}");
    assert!(e.iter().any(|m| m.contains("condition 6")), "{e:?}");

    let mut counter = db.clone();
    let dk = key::district(1, 2, HOT);
    let mut d0 = District0::of(db[&dk]);
    d0.next_o_id += 1;
    counter.insert(dk, d0.encode());
    let e = check_consistency(&S, &counter);
    assert!(e.iter().any(|m| m.contains("condition 2")), "{e:?}");

    let mut lost = db.clone();
    let ck = key::customer(1, 1, 3, HOT);
    let mut c0 = Customer0::of(db[&ck]);
    c0.balance -= 500;
    lost.insert(ck, c0.encode());
    let e = check_consistency(&S, &lost);
    assert!(e.iter().any(|m| m.contains("condition 10")), "{e:?}");
}
