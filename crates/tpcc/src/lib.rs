//! TPC-C over the transaction service (Gotthard section 5.4, NOCC section 4):
//! the data model (every record as keys of the store, `docs/tpcc.md`), the
//! five transactions written once against [`Db`], the initial database, the
//! client that runs the standard mix with a record cache validated at commit,
//! and TPC-C's consistency conditions over a store's contents.
//!
//! The store has no indexes: every access is an exact select of a key the
//! transaction computes from values it read (the district's next order id,
//! an order's line count, a customer's last order id, a district's delivery
//! cursor).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use innet_core::rng::Rng;
use innet_core::{Host, Outbox, Time};
use innet_txn::client::{Completed, GiveUp, Txn, TxnClient, TxnCtx};
use innet_wire::txn::{Key, Value, VALUE_LEN};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------- scale

/// The database's size. The papers' reduced scale for contention: Gotthard
/// 1 warehouse, 2 districts, 10 customers per district, 50 items; NOCC the
/// same with 10 items.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scale {
    pub warehouses: u32,
    pub districts: u32,
    pub customers: u32,
    pub items: u32,
}

impl Scale {
    pub const GOTTHARD: Scale = Scale { warehouses: 1, districts: 2, customers: 10, items: 50 };

    /// Checks every dimension against what the key encoding holds.
    pub fn validate(&self) -> Result<(), String> {
        let check = |name: &str, v: u32, max: u32| {
            if v == 0 || v > max {
                Err(format!("{name} {v} is outside 1..={max} (the key encoding's field width, docs/tpcc.md)"))
            } else {
                Ok(())
            }
        };
        check("warehouses", self.warehouses, MAX_WAREHOUSE)?;
        check("districts", self.districts, MAX_DISTRICT)?;
        check("customers", self.customers, MAX_CUSTOMER)?;
        // One item id above `items` is the unused id of New-Order's rollback.
        check("items", self.items, MAX_ITEM - 1)
    }
}

// ---------------------------------------------------------------- keys

const W_BITS: u32 = 2;
const D_BITS: u32 = 4;
const C_BITS: u32 = 12;
const I_BITS: u32 = 17;
const O_BITS: u32 = 18;
const OL_BITS: u32 = 4;
const H_BITS: u32 = 22;
const CHUNK_BITS: u32 = 2;

pub const MAX_WAREHOUSE: u32 = (1 << W_BITS) - 1;
pub const MAX_DISTRICT: u32 = (1 << D_BITS) - 1;
pub const MAX_CUSTOMER: u32 = (1 << C_BITS) - 1;
pub const MAX_ITEM: u32 = (1 << I_BITS) - 1;
/// Order ids per district the key encoding holds; a New-Order beyond it
/// writes nothing and is counted as `exhausted`.
pub const MAX_ORDER: u32 = (1 << O_BITS) - 1;
/// TPC-C's most order lines per order.
pub const MAX_LINES: u32 = 15;
pub const MAX_HISTORY: u32 = (1 << H_BITS) - 1;

/// The table in a key's top 4 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Table {
    Warehouse = 1,
    District = 2,
    Customer = 3,
    History = 4,
    NewOrder = 5,
    Order = 6,
    OrderLine = 7,
    Item = 8,
    Stock = 9,
}

impl Table {
    const ALL: [Table; 9] = [
        Table::Warehouse,
        Table::District,
        Table::Customer,
        Table::History,
        Table::NewOrder,
        Table::Order,
        Table::OrderLine,
        Table::Item,
        Table::Stock,
    ];
    /// The widths of the fields after the table, most significant first.
    fn widths(self) -> &'static [u32] {
        match self {
            Table::Warehouse => &[W_BITS, CHUNK_BITS],
            Table::District => &[W_BITS, D_BITS, CHUNK_BITS],
            Table::Customer => &[W_BITS, D_BITS, C_BITS, CHUNK_BITS],
            Table::History => &[W_BITS, D_BITS, H_BITS],
            Table::NewOrder | Table::Order => &[W_BITS, D_BITS, O_BITS],
            Table::OrderLine => &[W_BITS, D_BITS, O_BITS, OL_BITS],
            Table::Item => &[I_BITS],
            Table::Stock => &[W_BITS, I_BITS],
        }
    }
}

fn pack(t: Table, fields: &[u32]) -> Key {
    let mut k: u32 = 0;
    for (&v, &bits) in fields.iter().zip(t.widths()) {
        debug_assert!(v < (1 << bits), "{t:?} field {v} exceeds {bits} bits");
        k = (k << bits) | (v & ((1 << bits) - 1));
    }
    ((t as u32) << 28) | k
}

/// A key's table and fields, if it is a TPC-C key.
pub fn decode_key(k: Key) -> Option<(Table, Vec<u32>)> {
    let t = *Table::ALL.iter().find(|t| **t as u32 == k >> 28)?;
    let mut rest = k & ((1 << 28) - 1);
    let mut fields = vec![0; t.widths().len()];
    for (i, &bits) in t.widths().iter().enumerate().rev() {
        fields[i] = rest & ((1 << bits) - 1);
        rest >>= bits;
    }
    let decoded = (rest == 0).then_some((t, fields));
    debug_assert!(decoded.as_ref().is_none_or(|(t, f)| pack(*t, f) == k), "a decoded key packs back to itself");
    decoded
}

/// Record chunks: chunk 0 of a record holds the fields transactions write,
/// the other chunks fields written only by the load (read once, never
/// validated) or written by one transaction type only.
pub mod key {
    use super::*;
    pub fn warehouse(w: u32, chunk: u32) -> Key {
        pack(Table::Warehouse, &[w, chunk])
    }
    pub fn district(w: u32, d: u32, chunk: u32) -> Key {
        pack(Table::District, &[w, d, chunk])
    }
    pub fn customer(w: u32, d: u32, c: u32, chunk: u32) -> Key {
        pack(Table::Customer, &[w, d, c, chunk])
    }
    pub fn history(w: u32, d: u32, n: u32) -> Key {
        pack(Table::History, &[w, d, n])
    }
    pub fn new_order(w: u32, d: u32, o: u32) -> Key {
        pack(Table::NewOrder, &[w, d, o])
    }
    pub fn order(w: u32, d: u32, o: u32) -> Key {
        pack(Table::Order, &[w, d, o])
    }
    pub fn order_line(w: u32, d: u32, o: u32, ol: u32) -> Key {
        pack(Table::OrderLine, &[w, d, o, ol])
    }
    pub fn item(i: u32) -> Key {
        pack(Table::Item, &[i])
    }
    pub fn stock(w: u32, i: u32) -> Key {
        pack(Table::Stock, &[w, i])
    }
}

// ---------------------------------------------------------------- values

/// Byte 15 of every record is 1: the all-zero value (what the store holds
/// for a key never written) is "no such record", and deleting a record
/// writes it.
const PRESENT: usize = VALUE_LEN - 1;

struct Bytes([u8; VALUE_LEN]);

impl Bytes {
    fn new() -> Bytes {
        let mut b = [0; VALUE_LEN];
        b[PRESENT] = 1;
        Bytes(b)
    }
    fn of(v: Value) -> Option<Bytes> {
        (v.0[PRESENT] == 1).then_some(Bytes(v.0))
    }
    fn uint(&self, at: usize, len: usize) -> u64 {
        self.0[at..at + len].iter().fold(0, |a, &b| (a << 8) | b as u64)
    }
    fn put_uint(&mut self, at: usize, len: usize, v: u64) {
        debug_assert!(len == 8 || v < 1 << (8 * len), "{v} exceeds {len} bytes");
        for i in 0..len {
            self.0[at + i] = (v >> (8 * (len - 1 - i))) as u8;
        }
    }
    fn value(self) -> Value {
        Value(self.0)
    }
}

/// `v + d`, held at the largest value `bytes` bytes carry.
fn sat_add(v: u64, d: u64, bytes: usize) -> u64 {
    v.saturating_add(d).min((1u64 << (8 * bytes)) - 1)
}

macro_rules! record {
    ($name:ident { $($field:ident : $ty:ty = $at:expr, $len:expr;)* }) => {
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name { $(pub $field: $ty,)* }
        impl $name {
            /// `None` for the absent record (the all-zero value).
            pub fn decode(v: Value) -> Option<$name> {
                let b = Bytes::of(v)?;
                Some($name { $($field: b.uint($at, $len) as $ty,)* })
            }
            /// The record, or all fields 0 if absent.
            pub fn of(v: Value) -> $name {
                $name::decode(v).unwrap_or_default()
            }
            pub fn encode(&self) -> Value {
                let mut b = Bytes::new();
                $(b.put_uint($at, $len, self.$field as u64);)*
                let v = b.value();
                debug_assert_eq!($name::decode(v).as_ref(), Some(self), "every field fits its bytes: reads back");
                v
            }
        }
    };
}

// Money is in cents; dates in ms since the run started, plus 1 (0 = null).
record!(Warehouse0 { ytd: i64 = 0, 8; });
record!(WarehouseStatic { tax_bp: u32 = 0, 2; name: u64 = 2, 8; });
record!(District0 { ytd: i64 = 0, 8; next_o_id: u32 = 8, 4; history_cnt: u32 = 12, 3; });
record!(DistrictStatic { tax_bp: u32 = 0, 2; name: u64 = 2, 8; });
record!(DistrictDelivery { next_delivery: u32 = 0, 4; });
record!(Customer0 { balance: i64 = 0, 8; ytd_payment: u64 = 8, 5; payment_cnt: u32 = 13, 2; });
record!(CustomerStatic { discount_bp: u32 = 0, 2; bad_credit: u8 = 2, 1; last: u32 = 3, 2; });
record!(CustomerDelivery { delivery_cnt: u32 = 0, 4; });
record!(CustomerLast { last_o_id: u32 = 0, 4; });
record!(History0 { c_id: u32 = 0, 2; c_d_id: u32 = 2, 1; c_w_id: u32 = 3, 1; amount: u32 = 4, 4; date: u32 = 8, 4; });
/// A NEW-ORDER row: present or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewOrder0 {}
impl NewOrder0 {
    pub fn decode(v: Value) -> Option<NewOrder0> {
        Bytes::of(v).map(|_| NewOrder0 {})
    }
    pub fn encode(&self) -> Value {
        let v = Bytes::new().value();
        debug_assert!(NewOrder0::decode(v).is_some() && v != Value::ZERO, "a row is present, unlike a deleted one");
        v
    }
}
record!(Order0 { c_id: u32 = 0, 2; carrier_id: u32 = 2, 1; ol_cnt: u32 = 3, 1; all_local: u32 = 4, 1; entry_d: u32 = 5, 4; });
record!(OrderLine0 { i_id: u32 = 0, 4; supply_w_id: u32 = 4, 1; quantity: u32 = 5, 1; amount: u32 = 6, 4; delivery_d: u32 = 10, 4; });
record!(Item0 { price: u32 = 0, 4; im_id: u32 = 4, 4; name: u32 = 8, 4; });
record!(Stock0 { quantity: u32 = 0, 4; ytd: u32 = 4, 4; order_cnt: u32 = 8, 4; remote_cnt: u32 = 12, 2; });

/// Chunks of the warehouse, district and customer records.
pub const HOT: u32 = 0;
pub const STATIC: u32 = 1;
/// District: the delivery cursor. Customer: the delivery count.
pub const DELIVERY: u32 = 2;
/// Customer: the id of its last order.
pub const LAST_ORDER: u32 = 3;

// ---------------------------------------------------------------- transactions

/// What a transaction body may do.
pub trait Db {
    /// A record some transaction writes: read, and validated at commit.
    fn get(&mut self, k: Key) -> Value;
    /// A record only the load writes: read once into the cache, never
    /// validated (it cannot change).
    fn get_static(&mut self, k: Key) -> Value;
    fn put(&mut self, k: Key, v: Value);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl Kind {
    pub const ALL: [Kind; 5] = [Kind::NewOrder, Kind::Payment, Kind::OrderStatus, Kind::Delivery, Kind::StockLevel];
    /// The standard mix (TPC-C 5.2.3's minimums, as py-tpcc runs them), percent.
    pub fn weight(self) -> u64 {
        match self {
            Kind::NewOrder => 45,
            Kind::Payment => 43,
            _ => 4,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Kind::NewOrder => "new-order",
            Kind::Payment => "payment",
            Kind::OrderStatus => "order-status",
            Kind::Delivery => "delivery",
            Kind::StockLevel => "stock-level",
        }
    }
    pub fn parse(s: &str) -> Result<Kind, String> {
        Kind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            format!("unknown transaction type '{s}' (new-order, payment, order-status, delivery, stock-level)")
        })
    }
    /// Whether which records the transaction touches depends on values
    /// other transactions write (Gotthard section 5.4): after an abort the
    /// client re-reads what the aborted attempt read before re-running it.
    /// Payment and Order-Status re-run at once on the abort's corrections.
    pub fn rereads_on_abort(self) -> bool {
        matches!(self, Kind::NewOrder | Kind::Delivery | Kind::StockLevel)
    }
}

/// One transaction's input, drawn by the terminal (TPC-C 2.4.1, 2.5.1,
/// 2.6.1, 2.7.1, 2.8.1 at this scale).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    NewOrder { w: u32, d: u32, c: u32, lines: Vec<Line>, now: u32 },
    Payment { w: u32, d: u32, c_w: u32, c_d: u32, c: u32, amount: u32, now: u32 },
    OrderStatus { w: u32, d: u32, c: u32 },
    Delivery { w: u32, districts: u32, carrier: u32, now: u32 },
    StockLevel { w: u32, d: u32, threshold: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    pub item: u32,
    pub supply_w: u32,
    pub quantity: u32,
}

impl Input {
    pub fn kind(&self) -> Kind {
        match self {
            Input::NewOrder { .. } => Kind::NewOrder,
            Input::Payment { .. } => Kind::Payment,
            Input::OrderStatus { .. } => Kind::OrderStatus,
            Input::Delivery { .. } => Kind::Delivery,
            Input::StockLevel { .. } => Kind::StockLevel,
        }
    }

    /// Draws the next transaction of the mix for a terminal of warehouse `w`.
    pub fn draw(rng: &mut Rng, scale: &Scale, w: u32, now: u32) -> Input {
        debug_assert_eq!(Kind::ALL.iter().map(|k| k.weight()).sum::<u64>(), 100, "the mix is in percent");
        let mut roll = rng.below(100);
        let mut kind = Kind::NewOrder;
        for k in Kind::ALL {
            if roll < k.weight() {
                kind = k;
                break;
            }
            roll -= k.weight();
        }
        Input::draw_kind(rng, scale, w, now, kind)
    }

    pub fn draw_kind(rng: &mut Rng, s: &Scale, w: u32, now: u32, kind: Kind) -> Input {
        let input = Input::draw_unchecked(rng, s, w, now, kind);
        debug_assert!(input.kind() == kind && input.within(s), "{input:?} outside {s:?}");
        input
    }

    /// Every id within `s` (an item one past it: New-Order's rollback),
    /// New-Order's 5..=15 lines (TPC-C 2.4.1.3).
    fn within(&self, s: &Scale) -> bool {
        let id = |v: u32, max: u32| (1..=max).contains(&v);
        let wd = |w: u32, d: u32| id(w, s.warehouses) && id(d, s.districts);
        match self {
            Input::NewOrder { w, d, c, lines, .. } => {
                wd(*w, *d)
                    && id(*c, s.customers)
                    && (5..=15).contains(&lines.len())
                    && lines.iter().all(|l| id(l.item, s.items + 1) && id(l.supply_w, s.warehouses))
            }
            Input::Payment { w, d, c_w, c_d, c, .. } => wd(*w, *d) && wd(*c_w, *c_d) && id(*c, s.customers),
            Input::OrderStatus { w, d, c } => wd(*w, *d) && id(*c, s.customers),
            Input::Delivery { w, districts, .. } => id(*w, s.warehouses) && *districts == s.districts,
            Input::StockLevel { w, d, .. } => wd(*w, *d),
        }
    }

    fn draw_unchecked(rng: &mut Rng, s: &Scale, w: u32, now: u32, kind: Kind) -> Input {
        let mut pick = |n: u32| 1 + rng.below(n as u64) as u32;
        let d = pick(s.districts);
        let c = pick(s.customers);
        match kind {
            Kind::NewOrder => {
                let n = 5 + rng.below(11) as u32;
                let rollback = rng.chance(0.01);
                let lines = (0..n)
                    .map(|i| {
                        let item =
                            if rollback && i == n - 1 { s.items + 1 } else { 1 + rng.below(s.items as u64) as u32 };
                        let supply_w =
                            if s.warehouses > 1 && rng.chance(0.01) { other(rng, s.warehouses, w) } else { w };
                        Line { item, supply_w, quantity: 1 + rng.below(10) as u32 }
                    })
                    .collect();
                Input::NewOrder { w, d, c, lines, now }
            }
            Kind::Payment => {
                let (c_w, c_d) = if s.warehouses > 1 && rng.chance(0.15) {
                    (other(rng, s.warehouses, w), 1 + rng.below(s.districts as u64) as u32)
                } else {
                    (w, d)
                };
                Input::Payment { w, d, c_w, c_d, c, amount: 100 + rng.below(500_000 - 100 + 1) as u32, now }
            }
            Kind::OrderStatus => Input::OrderStatus { w, d, c },
            Kind::Delivery => Input::Delivery { w, districts: s.districts, carrier: 1 + rng.below(10) as u32, now },
            Kind::StockLevel => Input::StockLevel { w, d, threshold: 10 + rng.below(11) as u32 },
        }
    }
}

/// A warehouse other than `w` (there are at least two).
fn other(rng: &mut Rng, warehouses: u32, w: u32) -> u32 {
    let o = 1 + rng.below(warehouses as u64 - 1) as u32;
    if o >= w {
        o + 1
    } else {
        o
    }
}

/// What a transaction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// New-Order with an unused item: nothing written (TPC-C 2.4.2.3).
    RolledBack,
    /// New-Order past [`MAX_ORDER`]: nothing written.
    Exhausted,
    /// Order-Status: the lines of the customer's last order.
    OrderLines(u32),
    /// Delivery: the districts whose oldest new order was delivered.
    Delivered(u32),
    /// Stock-Level: distinct items of the last 20 orders below the threshold.
    LowStock(u32),
}

/// Runs `input` against `db` (TPC-C section 2, exact selects only).
pub fn execute(input: &Input, db: &mut dyn Db) -> Outcome {
    let outcome = run(input, db);
    debug_assert!(
        match (input, outcome) {
            (Input::NewOrder { .. }, Outcome::Done | Outcome::RolledBack | Outcome::Exhausted) => true,
            (Input::Payment { .. }, Outcome::Done) => true,
            (Input::OrderStatus { .. }, Outcome::OrderLines(n)) => n <= MAX_LINES,
            (Input::Delivery { districts, .. }, Outcome::Delivered(n)) => n <= *districts,
            // Distinct items of the last 20 orders.
            (Input::StockLevel { .. }, Outcome::LowStock(n)) => n <= 20 * MAX_LINES,
            _ => false,
        },
        "{input:?} cannot end {outcome:?}"
    );
    outcome
}

fn run(input: &Input, db: &mut dyn Db) -> Outcome {
    match *input {
        Input::NewOrder { w, d, c, ref lines, now } => new_order(db, (w, d, c), lines, now),
        Input::Payment { w, d, c_w, c_d, c, amount, now } => payment(db, (w, d), (c_w, c_d, c), amount, now),
        Input::OrderStatus { w, d, c } => order_status(db, w, d, c),
        Input::Delivery { w, districts, carrier, now } => delivery(db, w, districts, carrier, now),
        Input::StockLevel { w, d, threshold } => stock_level(db, w, d, threshold),
    }
}

/// New-Order (TPC-C 2.4.2) by customer `c` of district `d` of warehouse
/// `w`: the district's next order id, the order, its new-order row and
/// its lines, each taking from its supplying warehouse's stock.
fn new_order(db: &mut dyn Db, (w, d, c): (u32, u32, u32), lines: &[Line], now: u32) -> Outcome {
    db.get_static(key::warehouse(w, STATIC));
    db.get_static(key::district(w, d, STATIC));
    db.get_static(key::customer(w, d, c, STATIC));
    let mut prices = Vec::with_capacity(lines.len());
    for l in lines {
        match Item0::decode(db.get_static(key::item(l.item))) {
            Some(i) => prices.push(i.price),
            None => return Outcome::RolledBack,
        }
    }
    let mut d0 = District0::of(db.get(key::district(w, d, HOT)));
    let o = d0.next_o_id;
    if o == 0 || o > MAX_ORDER {
        return Outcome::Exhausted;
    }
    d0.next_o_id += 1;
    db.put(key::district(w, d, HOT), d0.encode());
    let all_local = lines.iter().all(|l| l.supply_w == w) as u32;
    let order = Order0 { c_id: c, carrier_id: 0, ol_cnt: lines.len() as u32, all_local, entry_d: now };
    db.put(key::order(w, d, o), order.encode());
    db.put(key::new_order(w, d, o), NewOrder0 {}.encode());
    db.put(key::customer(w, d, c, LAST_ORDER), CustomerLast { last_o_id: o }.encode());
    for (n, (l, price)) in lines.iter().zip(prices).enumerate() {
        let sk = key::stock(l.supply_w, l.item);
        let mut s = Stock0::of(db.get(sk));
        s.quantity = if s.quantity >= l.quantity + 10 { s.quantity - l.quantity } else { s.quantity + 91 - l.quantity };
        s.ytd = sat_add(s.ytd as u64, l.quantity as u64, 4) as u32;
        s.order_cnt = sat_add(s.order_cnt as u64, 1, 4) as u32;
        if l.supply_w != w {
            s.remote_cnt = sat_add(s.remote_cnt as u64, 1, 2) as u32;
        }
        db.put(sk, s.encode());
        let ol = OrderLine0 {
            i_id: l.item,
            supply_w_id: l.supply_w,
            quantity: l.quantity,
            amount: l.quantity * price,
            delivery_d: 0,
        };
        db.put(key::order_line(w, d, o, n as u32 + 1), ol.encode());
    }
    Outcome::Done
}

/// Payment (TPC-C 2.5.2) of `amount` to district `d` of warehouse `w` by
/// customer `c` of district `c_d` of warehouse `c_w`, with its history row.
fn payment(db: &mut dyn Db, (w, d): (u32, u32), (c_w, c_d, c): (u32, u32, u32), amount: u32, now: u32) -> Outcome {
    db.get_static(key::warehouse(w, STATIC));
    db.get_static(key::district(w, d, STATIC));
    db.get_static(key::customer(c_w, c_d, c, STATIC));
    let wk = key::warehouse(w, HOT);
    let mut w0 = Warehouse0::of(db.get(wk));
    let dk = key::district(w, d, HOT);
    let mut d0 = District0::of(db.get(dk));
    let ck = key::customer(c_w, c_d, c, HOT);
    let mut c0 = Customer0::of(db.get(ck));
    w0.ytd += amount as i64;
    d0.ytd += amount as i64;
    d0.history_cnt = sat_add(d0.history_cnt as u64, 1, 3) as u32;
    c0.balance -= amount as i64;
    c0.ytd_payment = sat_add(c0.ytd_payment, amount as u64, 5);
    c0.payment_cnt = sat_add(c0.payment_cnt as u64, 1, 2) as u32;
    db.put(wk, w0.encode());
    db.put(dk, d0.encode());
    db.put(ck, c0.encode());
    let h = History0 { c_id: c, c_d_id: c_d, c_w_id: c_w, amount, date: now };
    db.put(key::history(w, d, d0.history_cnt.min(MAX_HISTORY)), h.encode());
    Outcome::Done
}

/// Order-Status (TPC-C 2.6.2): the lines of customer `c`'s last order.
fn order_status(db: &mut dyn Db, w: u32, d: u32, c: u32) -> Outcome {
    db.get(key::customer(w, d, c, HOT));
    let last = CustomerLast::of(db.get(key::customer(w, d, c, LAST_ORDER))).last_o_id;
    if last == 0 || last > MAX_ORDER {
        return Outcome::OrderLines(0);
    }
    let o = Order0::of(db.get(key::order(w, d, last)));
    let n = o.ol_cnt.min(MAX_LINES);
    for ol in 1..=n {
        db.get(key::order_line(w, d, last, ol));
    }
    Outcome::OrderLines(n)
}

/// Delivery (TPC-C 2.7.4): in each of warehouse `w`'s `districts`
/// districts, the oldest new order, if any ([`deliver_oldest`]).
fn delivery(db: &mut dyn Db, w: u32, districts: u32, carrier: u32, now: u32) -> Outcome {
    let mut delivered = 0;
    for d in 1..=districts {
        if deliver_oldest(db, w, d, carrier, now) {
            delivered += 1;
        }
    }
    Outcome::Delivered(delivered)
}

/// Delivers district `d`'s oldest new order (the one at its delivery
/// cursor) by `carrier`: its lines dated `now`, their sum credited to its
/// customer; false when the district has none.
fn deliver_oldest(db: &mut dyn Db, w: u32, d: u32, carrier: u32, now: u32) -> bool {
    let cur_k = key::district(w, d, DELIVERY);
    let mut cur = DistrictDelivery::of(db.get(cur_k));
    let o = cur.next_delivery;
    if o == 0 || o > MAX_ORDER || NewOrder0::decode(db.get(key::new_order(w, d, o))).is_none() {
        return false;
    }
    let ok = key::order(w, d, o);
    let mut order = Order0::of(db.get(ok));
    order.carrier_id = carrier;
    db.put(ok, order.encode());
    let mut sum = 0i64;
    for n in 1..=order.ol_cnt.min(MAX_LINES) {
        let lk = key::order_line(w, d, o, n);
        let mut ol = OrderLine0::of(db.get(lk));
        ol.delivery_d = now;
        sum += ol.amount as i64;
        db.put(lk, ol.encode());
    }
    db.put(key::new_order(w, d, o), Value::ZERO);
    cur.next_delivery = o + 1;
    db.put(cur_k, cur.encode());
    if order.c_id != 0 && order.c_id <= MAX_CUSTOMER {
        let ck = key::customer(w, d, order.c_id, HOT);
        let mut c0 = Customer0::of(db.get(ck));
        c0.balance += sum;
        db.put(ck, c0.encode());
        let dk = key::customer(w, d, order.c_id, DELIVERY);
        let mut cd = CustomerDelivery::of(db.get(dk));
        cd.delivery_cnt = sat_add(cd.delivery_cnt as u64, 1, 4) as u32;
        db.put(dk, cd.encode());
    }
    true
}

/// Stock-Level (TPC-C 2.8.2): distinct items of district `d`'s last 20
/// orders whose stock is below `threshold`.
fn stock_level(db: &mut dyn Db, w: u32, d: u32, threshold: u32) -> Outcome {
    let next = District0::of(db.get(key::district(w, d, HOT))).next_o_id.min(MAX_ORDER + 1);
    let mut items = BTreeSet::new();
    for o in next.saturating_sub(20).max(1)..next {
        let order = Order0::of(db.get(key::order(w, d, o)));
        for n in 1..=order.ol_cnt.min(MAX_LINES) {
            let i = OrderLine0::of(db.get(key::order_line(w, d, o, n))).i_id;
            if i != 0 && i <= MAX_ITEM {
                items.insert(i);
            }
        }
    }
    let low = items.iter().filter(|&&i| Stock0::of(db.get(key::stock(w, i))).quantity < threshold).count();
    Outcome::LowStock(low as u32)
}

// ---------------------------------------------------------------- the load

/// The initial database (TPC-C 4.3.3.1 at `scale`): per district as many
/// orders as customers (one each, a random permutation), the last 30% of
/// them undelivered (new orders), each customer one history row of $10.
/// Warehouse and district YTD are set so that the consistency conditions
/// hold from the start (W_YTD = D x C x $10, D_YTD = C x $10, as TPC-C's
/// $300,000 = 10 x $30,000 = 30,000 x $10).
pub fn initial_db(scale: &Scale, seed: u64) -> BTreeMap<Key, Value> {
    debug_assert!(scale.validate().is_ok(), "a validated scale: {scale:?}");
    let mut rng = Rng::new(seed ^ 0x7C7C_0001);
    let mut db = BTreeMap::new();
    let s = scale;
    let undelivered = (s.customers * 3).div_ceil(10);
    let first_new = s.customers - undelivered + 1;
    for i in 1..=s.items {
        let item = Item0 { price: 100 + rng.below(9901) as u32, im_id: 1 + rng.below(10_000) as u32, name: i };
        db.insert(key::item(i), item.encode());
    }
    for w in 1..=s.warehouses {
        let ytd = (s.districts * s.customers) as i64 * 1000;
        db.insert(key::warehouse(w, HOT), Warehouse0 { ytd }.encode());
        let ws = WarehouseStatic { tax_bp: rng.below(2001) as u32, name: w as u64 };
        db.insert(key::warehouse(w, STATIC), ws.encode());
        for i in 1..=s.items {
            let st = Stock0 { quantity: 10 + rng.below(91) as u32, ..Default::default() };
            db.insert(key::stock(w, i), st.encode());
        }
        for d in 1..=s.districts {
            load_district(&mut db, &mut rng, s, (w, d), first_new);
        }
    }
    debug_assert_eq!(check_consistency(scale, &db), Vec::<String>::new(), "the load meets every condition");
    db
}

/// District `d` of warehouse `w` of the initial database, into `db`: its
/// records, its customers (one history row each) and as many orders as
/// customers, those from `first_new` on undelivered.
fn load_district(db: &mut BTreeMap<Key, Value>, rng: &mut Rng, s: &Scale, (w, d): (u32, u32), first_new: u32) {
    let d0 = District0 { ytd: s.customers as i64 * 1000, next_o_id: s.customers + 1, history_cnt: s.customers };
    db.insert(key::district(w, d, HOT), d0.encode());
    let ds = DistrictStatic { tax_bp: rng.below(2001) as u32, name: d as u64 };
    db.insert(key::district(w, d, STATIC), ds.encode());
    db.insert(key::district(w, d, DELIVERY), DistrictDelivery { next_delivery: first_new }.encode());
    let mut perm: Vec<u32> = (1..=s.customers).collect();
    for i in (1..perm.len()).rev() {
        perm.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for c in 1..=s.customers {
        let c0 = Customer0 { balance: -1000, ytd_payment: 1000, payment_cnt: 1 };
        db.insert(key::customer(w, d, c, HOT), c0.encode());
        let cs =
            CustomerStatic { discount_bp: rng.below(5001) as u32, bad_credit: rng.chance(0.1) as u8, last: c % 1000 };
        db.insert(key::customer(w, d, c, STATIC), cs.encode());
        db.insert(key::customer(w, d, c, DELIVERY), CustomerDelivery { delivery_cnt: 0 }.encode());
        let h = History0 { c_id: c, c_d_id: d, c_w_id: w, amount: 1000, date: 1 };
        db.insert(key::history(w, d, c), h.encode());
    }
    for o in 1..=s.customers {
        let c = perm[o as usize - 1];
        let delivered = o < first_new;
        let ol_cnt = 5 + rng.below(11) as u32;
        let order = Order0 {
            c_id: c,
            carrier_id: if delivered { 1 + rng.below(10) as u32 } else { 0 },
            ol_cnt,
            all_local: 1,
            entry_d: 1,
        };
        db.insert(key::order(w, d, o), order.encode());
        db.insert(key::customer(w, d, c, LAST_ORDER), CustomerLast { last_o_id: o }.encode());
        if !delivered {
            db.insert(key::new_order(w, d, o), NewOrder0 {}.encode());
        }
        for n in 1..=ol_cnt {
            let ol = OrderLine0 {
                i_id: 1 + rng.below(s.items as u64) as u32,
                supply_w_id: w,
                quantity: 5,
                amount: if delivered { 0 } else { 1 + rng.below(999_999) as u32 },
                delivery_d: if delivered { 1 } else { 0 },
            };
            db.insert(key::order_line(w, d, o, n), ol.encode());
        }
    }
}

// ---------------------------------------------------------------- consistency

/// TPC-C's consistency conditions (clause 3.3.2) that apply to this data
/// model, over a store's contents; every violation found, as a sentence.
///
/// The conditions, numbered as in the clause: (1) W_YTD = sum(D_YTD);
/// (2) D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID); (3) max(NO_O_ID) -
/// min(NO_O_ID) + 1 = rows in NEW-ORDER (contiguous); (4) sum(O_OL_CNT) =
/// rows in ORDER-LINE; (5) O_CARRIER_ID is null exactly for orders with a
/// NEW-ORDER row; (6) each order's lines are 1..=O_OL_CNT; (7) OL_DELIVERY_D
/// is null exactly when O_CARRIER_ID is; (8) W_YTD = sum(H_AMOUNT); (9) D_YTD
/// = sum(H_AMOUNT) of the district; (10) C_BALANCE = sum(OL_AMOUNT of
/// delivered lines of the customer's orders) - sum(H_AMOUNT of the
/// customer); (12) C_BALANCE + C_YTD_PAYMENT = that sum of delivered
/// OL_AMOUNT. Condition 11 (NEW-ORDER rows = ORDER rows - 2,100 at load) is
/// specific to the full scale's load and is not checked. And of this
/// model's own fields: the delivery cursor is the oldest new order (or
/// D_NEXT_O_ID when none), the district's history count is its history rows
/// 1..=n, C_PAYMENT_CNT is the customer's history rows, and a customer's
/// last-order id is its highest order id.
pub fn check_consistency(scale: &Scale, db: &BTreeMap<Key, Value>) -> Vec<String> {
    debug_assert!(scale.validate().is_ok(), "a validated scale (its ids fit the keys): {scale:?}");
    let mut errs = vec![];
    let records = Records::read(scale, db, &mut errs);
    let mut per_customer = PerCustomer::default();
    for w in 1..=scale.warehouses {
        let Some(&w_ytd) = records.warehouses.get(&w) else {
            errs.push(format!("warehouse {w} is missing"));
            continue;
        };
        let mut d_sum = 0i64;
        let mut h_sum_w = 0i64;
        for d in 1..=scale.districts {
            let at = format!("warehouse {w} district {d}");
            let Some(ds) = records.districts.get(&(w, d)) else {
                errs.push(format!("{at} is missing"));
                continue;
            };
            let Some(d0) = ds.d0 else {
                errs.push(format!("{at}: its record is missing"));
                continue;
            };
            d_sum += d0.ytd;
            h_sum_w += ds.check(&at, d0, (w, d), &mut per_customer, &mut errs);
        }
        if w_ytd != d_sum {
            errs.push(format!("warehouse {w}: W_YTD {w_ytd} != sum(D_YTD) {d_sum} (condition 1)"));
        }
        if w_ytd != h_sum_w {
            errs.push(format!("warehouse {w}: W_YTD {w_ytd} != sum(H_AMOUNT) {h_sum_w} (condition 8)"));
        }
    }
    per_customer.check(&records.customers, &mut errs);
    errs
}

/// A store's records, as [`check_consistency`] reads them.
#[derive(Default)]
struct Records {
    /// W_YTD by warehouse.
    warehouses: BTreeMap<u32, i64>,
    /// By (warehouse, district).
    districts: BTreeMap<(u32, u32), DistrictRecords>,
    /// By (warehouse, district, customer): its record and its last order id.
    customers: BTreeMap<(u32, u32, u32), (Customer0, Option<u32>)>,
}

/// One district's records and the rows of its tables.
#[derive(Default)]
struct DistrictRecords {
    d0: Option<District0>,
    cursor: Option<u32>,
    orders: BTreeMap<u32, Order0>,
    new_orders: BTreeSet<u32>,
    lines: BTreeMap<u32, BTreeMap<u32, OrderLine0>>,
    history: BTreeMap<u32, History0>,
}

/// Sums by customer over every district's rows: history (amount, rows),
/// delivered order-line amounts, and the highest order id.
#[derive(Default)]
struct PerCustomer {
    history: BTreeMap<(u32, u32, u32), (i64, u32)>,
    delivered: BTreeMap<(u32, u32, u32), i64>,
    last_order: BTreeMap<(u32, u32, u32), u32>,
}

impl Records {
    /// The records of `db` (a key that is not TPC-C's, a value that is not
    /// a record or a district outside `scale` goes to `errs`).
    fn read(scale: &Scale, db: &BTreeMap<Key, Value>, errs: &mut Vec<String>) -> Records {
        let mut r = Records::default();
        let bad = |k: Key, what: &str| format!("key {k:#010x}: {what}");
        for (&k, &v) in db {
            if v == Value::ZERO {
                continue;
            }
            let Some((t, f)) = decode_key(k) else {
                errs.push(bad(k, "not a TPC-C key"));
                continue;
            };
            let in_scale = |w: u32, d: u32| w >= 1 && w <= scale.warehouses && d >= 1 && d <= scale.districts;
            let undecodable = || format!("key {k:#010x} ({t:?} {f:?}): value {v:?} is not a record");
            match t {
                Table::Warehouse => {
                    if f[1] == HOT {
                        match Warehouse0::decode(v) {
                            Some(w0) => {
                                r.warehouses.insert(f[0], w0.ytd);
                            }
                            None => errs.push(undecodable()),
                        }
                    }
                }
                Table::District
                | Table::Customer
                | Table::History
                | Table::NewOrder
                | Table::Order
                | Table::OrderLine => {
                    if !in_scale(f[0], f[1]) {
                        errs.push(bad(
                            k,
                            &format!("{t:?} of warehouse {} district {} is outside the scale", f[0], f[1]),
                        ));
                        continue;
                    }
                    if r.read_district_row(t, &f, v).is_none() {
                        errs.push(undecodable());
                    }
                }
                Table::Item | Table::Stock => {}
            }
        }
        r
    }

    /// Reads the row `v` of table `t` at the key fields `f` into its
    /// district's (or customer's) records; `None` if `v` is not a record.
    fn read_district_row(&mut self, t: Table, f: &[u32], v: Value) -> Option<()> {
        let ds = self.districts.entry((f[0], f[1])).or_default();
        let custs = &mut self.customers;
        match t {
            Table::District if f[2] == HOT => District0::decode(v).map(|r| ds.d0 = Some(r)),
            Table::District if f[2] == DELIVERY => {
                DistrictDelivery::decode(v).map(|r| ds.cursor = Some(r.next_delivery))
            }
            Table::Customer if f[3] == HOT => Customer0::decode(v).map(|r| {
                custs.entry((f[0], f[1], f[2])).or_insert((r, None)).0 = r;
            }),
            Table::Customer if f[3] == LAST_ORDER => CustomerLast::decode(v).map(|r| {
                custs.entry((f[0], f[1], f[2])).or_default().1 = Some(r.last_o_id);
            }),
            Table::History => History0::decode(v).map(|r| {
                ds.history.insert(f[2], r);
            }),
            Table::NewOrder => NewOrder0::decode(v).map(|_| {
                ds.new_orders.insert(f[2]);
            }),
            Table::Order => Order0::decode(v).map(|r| {
                ds.orders.insert(f[2], r);
            }),
            Table::OrderLine => OrderLine0::decode(v).map(|r| {
                ds.lines.entry(f[2]).or_default().insert(f[3], r);
            }),
            _ => Some(()),
        }
    }
}

impl DistrictRecords {
    /// Conditions 2-7 and 9 over district `(w, d)` (called `at`) whose
    /// record is `d0`, its history's and orders' sums added to
    /// `per_customer`; returns sum(H_AMOUNT) of the district.
    fn check(
        &self,
        at: &str,
        d0: District0,
        (w, d): (u32, u32),
        per_customer: &mut PerCustomer,
        errs: &mut Vec<String>,
    ) -> i64 {
        let h_sum: i64 = self.history.values().map(|h| h.amount as i64).sum();
        if d0.ytd != h_sum {
            errs.push(format!("{at}: D_YTD {} != sum(H_AMOUNT) {h_sum} (condition 9)", d0.ytd));
        }
        let ids: Vec<u32> = self.history.keys().copied().collect();
        if ids != (1..=d0.history_cnt).collect::<Vec<_>>() {
            errs.push(format!("{at}: history rows are not 1..={} ({} rows)", d0.history_cnt, ids.len()));
        }
        for h in self.history.values() {
            let e = per_customer.history.entry((h.c_w_id, h.c_d_id, h.c_id)).or_default();
            e.0 += h.amount as i64;
            e.1 += 1;
        }
        let max_o = self.orders.keys().next_back().copied().unwrap_or(0);
        if d0.next_o_id.wrapping_sub(1) != max_o {
            errs.push(format!("{at}: D_NEXT_O_ID - 1 = {} != max(O_ID) {max_o} (condition 2)", d0.next_o_id - 1));
        }
        if let (Some(&lo), Some(&hi)) = (self.new_orders.first(), self.new_orders.last()) {
            if hi != max_o {
                errs.push(format!("{at}: max(NO_O_ID) {hi} != max(O_ID) {max_o} (condition 2)"));
            }
            if hi - lo + 1 != self.new_orders.len() as u32 {
                errs.push(format!(
                    "{at}: new orders {lo}..={hi} are not contiguous ({} rows, condition 3)",
                    self.new_orders.len()
                ));
            }
        }
        let cursor_want = self.new_orders.first().copied().unwrap_or(d0.next_o_id);
        if self.cursor != Some(cursor_want) {
            errs.push(format!("{at}: delivery cursor {:?} != oldest new order {cursor_want}", self.cursor));
        }
        let ol_cnt_sum: u64 = self.orders.values().map(|o| o.ol_cnt as u64).sum();
        let ol_rows: u64 = self.lines.values().map(|l| l.len() as u64).sum();
        if ol_cnt_sum != ol_rows {
            errs.push(format!("{at}: sum(O_OL_CNT) {ol_cnt_sum} != order-line rows {ol_rows} (condition 4)"));
        }
        for o in self.lines.keys() {
            if !self.orders.contains_key(o) {
                errs.push(format!("{at}: order lines of order {o}, which does not exist"));
            }
        }
        if (1..=max_o).any(|o| !self.orders.contains_key(&o)) {
            errs.push(format!("{at}: order ids 1..={max_o} have gaps"));
        }
        self.check_orders(at, (w, d), per_customer, errs);
        h_sum
    }

    /// Conditions 5-7 over each order of district `(w, d)`, its delivered
    /// lines' sum and its id added to its customer's in `per_customer`.
    fn check_orders(&self, at: &str, (w, d): (u32, u32), per_customer: &mut PerCustomer, errs: &mut Vec<String>) {
        for (&o, order) in &self.orders {
            let no = self.new_orders.contains(&o);
            if (order.carrier_id == 0) != no {
                errs.push(format!(
                    "{at} order {o}: carrier {} with{} a new-order row (condition 5)",
                    order.carrier_id,
                    if no { "" } else { "out" }
                ));
            }
            let empty = BTreeMap::new();
            let lines = self.lines.get(&o).unwrap_or(&empty);
            if lines.keys().copied().collect::<Vec<_>>() != (1..=order.ol_cnt).collect::<Vec<_>>() {
                errs.push(format!("{at} order {o}: lines {:?} != 1..={} (condition 6)", lines.keys(), order.ol_cnt));
            }
            let mut sum = 0i64;
            for (n, l) in lines {
                if (l.delivery_d == 0) != (order.carrier_id == 0) {
                    errs.push(format!(
                        "{at} order {o} line {n}: delivery date {} with carrier {} (condition 7)",
                        l.delivery_d, order.carrier_id
                    ));
                }
                if l.delivery_d != 0 {
                    sum += l.amount as i64;
                }
            }
            *per_customer.delivered.entry((w, d, order.c_id)).or_default() += sum;
            let lo = per_customer.last_order.entry((w, d, order.c_id)).or_default();
            *lo = (*lo).max(o);
        }
    }
}

impl PerCustomer {
    /// Conditions 10 and 12, the payment count and the last order id of
    /// every customer record of `customers`.
    fn check(&self, customers: &BTreeMap<(u32, u32, u32), (Customer0, Option<u32>)>, errs: &mut Vec<String>) {
        for (&(w, d, c), &(c0, last)) in customers {
            let at = format!("customer {w}/{d}/{c}");
            let (h_sum, h_rows) = self.history.get(&(w, d, c)).copied().unwrap_or_default();
            let delivered = self.delivered.get(&(w, d, c)).copied().unwrap_or(0);
            if c0.balance != delivered - h_sum {
                errs.push(format!(
                    "{at}: C_BALANCE {} != delivered OL_AMOUNT {delivered} - H_AMOUNT {h_sum} (condition 10)",
                    c0.balance
                ));
            }
            if c0.balance + c0.ytd_payment as i64 != delivered {
                errs.push(format!(
                    "{at}: C_BALANCE {} + C_YTD_PAYMENT {} != delivered OL_AMOUNT {delivered} (condition 12)",
                    c0.balance, c0.ytd_payment
                ));
            }
            if c0.payment_cnt != h_rows {
                errs.push(format!("{at}: C_PAYMENT_CNT {} != its history rows {h_rows}", c0.payment_cnt));
            }
            let want = self.last_order.get(&(w, d, c)).copied();
            if last != want {
                errs.push(format!("{at}: last order id {last:?} != its highest order {want:?}"));
            }
        }
    }
}

// ---------------------------------------------------------------- the client

/// A [`Db`] over a client's record cache that lists what it lacks.
struct Discover<'a> {
    client: &'a TxnClient,
    own: HashMap<Key, Value>,
    missing: Vec<Key>,
    statics: HashMap<Key, Value>,
}

impl Discover<'_> {
    fn lookup(&mut self, k: Key) -> Value {
        if let Some(v) = self.own.get(&k) {
            return *v;
        }
        match self.client.known(k) {
            Some(v) => v,
            None => {
                if !self.missing.contains(&k) {
                    self.missing.push(k);
                }
                Value::ZERO
            }
        }
    }
}

impl Db for Discover<'_> {
    fn get(&mut self, k: Key) -> Value {
        self.lookup(k)
    }
    fn get_static(&mut self, k: Key) -> Value {
        let v = self.lookup(k);
        self.statics.insert(k, v);
        v
    }
    fn put(&mut self, k: Key, v: Value) {
        self.own.insert(k, v);
    }
}

/// A [`Db`] over a transaction attempt: reads become VALUE compares, writes
/// are buffered WRITE ops, static records come from the cache's copy.
struct Attempt<'a, 'b> {
    ctx: &'a mut TxnCtx<'b>,
    statics: &'a HashMap<Key, Value>,
}

impl Db for Attempt<'_, '_> {
    fn get(&mut self, k: Key) -> Value {
        self.ctx.read(k)
    }
    fn get_static(&mut self, k: Key) -> Value {
        self.statics.get(&k).copied().unwrap_or(Value::ZERO)
    }
    fn put(&mut self, k: Key, v: Value) {
        self.ctx.write(k, v)
    }
}

/// Rounds of fetching missing records before an attempt is sent anyway (its
/// compares then abort and correct what is still missing).
pub const MAX_FETCH_ROUNDS: u32 = 8;

/// Per transaction type totals.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct KindStats {
    pub started: u64,
    pub committed: u64,
    pub rolled_back: u64,
    pub exhausted: u64,
    pub gave_up: u64,
    /// Commit attempts (first try and re-runs).
    pub attempts: u64,
    pub aborts_by_switch: u64,
    pub aborts_by_store: u64,
    /// Read requests: fetching missing records and re-reading after aborts.
    pub reads: u64,
    /// Latency of each committed transaction, start to final answer.
    #[serde(skip)]
    pub latencies_ns: Vec<u64>,
}

impl KindStats {
    /// A transaction finishes once, after it started; a rollback or an
    /// exhausted New-Order is a committed one.
    fn adds_up(&self) -> bool {
        self.committed + self.gave_up <= self.started && self.rolled_back + self.exhausted <= self.committed
    }

    pub fn merge(&mut self, o: &KindStats) {
        debug_assert!(self.adds_up() && o.adds_up(), "{self:?} {o:?}");
        self.started += o.started;
        self.committed += o.committed;
        self.rolled_back += o.rolled_back;
        self.exhausted += o.exhausted;
        self.gave_up += o.gave_up;
        self.attempts += o.attempts;
        self.aborts_by_switch += o.aborts_by_switch;
        self.aborts_by_store += o.aborts_by_store;
        self.reads += o.reads;
        self.latencies_ns.extend_from_slice(&o.latencies_ns);
    }
}

#[derive(Clone, Debug, Default)]
pub struct TpccStats {
    pub per_kind: BTreeMap<Kind, KindStats>,
}

impl TpccStats {
    pub fn kind(&mut self, k: Kind) -> &mut KindStats {
        let s = self.per_kind.entry(k).or_default();
        debug_assert!(s.adds_up(), "{k:?}: {s:?}");
        s
    }
    pub fn merge(&mut self, o: &TpccStats) {
        let before = self.committed();
        for (k, s) in &o.per_kind {
            self.kind(*k).merge(s);
        }
        debug_assert_eq!(self.committed(), before + o.committed(), "a merge loses no transaction");
    }
    pub fn committed(&self) -> u64 {
        debug_assert!(self.per_kind.values().all(KindStats::adds_up));
        self.per_kind.values().map(|s| s.committed).sum()
    }
}

enum Phase {
    Fetch,
    Commit,
}

struct Current {
    input: Input,
    started: Time,
    attempts: u32,
    fetch_rounds: u32,
    phase: Phase,
    outcome: Outcome,
}

/// A TPC-C terminal: runs the mix back to back (closed loop) from `start`
/// until `stop`, each transaction to commit or `retry_limit` attempts.
///
/// Its record cache is the [`TxnClient`]'s known values: every record it
/// read, wrote, or learned from an abort's corrections (the store's, or a
/// switch's optimistic ones). A transaction runs against the cache; records
/// not in it are fetched first with READ ops; the attempt sends VALUE
/// compares for every record it read (except static ones) and WRITE ops.
pub struct TpccClient {
    pub client: TxnClient,
    scale: Scale,
    warehouse: u32,
    rng: Rng,
    retry_limit: u32,
    think: std::time::Duration,
    wake_at: Option<Time>,
    stop_at: Time,
    cur: Option<Current>,
    /// Only this kind, if set (for tests and per-type experiments).
    pub only: Option<Kind>,
    pub stats: TpccStats,
}

impl TpccClient {
    /// `client` should have `retry_limit` 1: this terminal decides what an
    /// abort leads to.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: TxnClient,
        scale: Scale,
        warehouse: u32,
        rng: Rng,
        retry_limit: u32,
        think: std::time::Duration,
        start: Time,
        stop: Time,
    ) -> TpccClient {
        assert_eq!(client.config().retry_limit, 1, "the TPC-C terminal handles aborts itself");
        TpccClient {
            client,
            scale,
            warehouse,
            rng,
            retry_limit: retry_limit.max(1),
            think,
            wake_at: Some(start),
            stop_at: stop,
            cur: None,
            only: None,
            stats: TpccStats::default(),
        }
    }

    fn now_date(now: Time) -> u32 {
        (now.as_nanos() / 1_000_000).min(u32::MAX as u64 - 1) as u32 + 1
    }

    /// Fetches what the transaction lacks, or sends its attempt.
    fn advance(&mut self, now: Time, out: &mut Outbox) {
        let cur = self.cur.as_mut().expect("a transaction is running");
        let mut dis = Discover { client: &self.client, own: HashMap::new(), missing: vec![], statics: HashMap::new() };
        cur.outcome = execute(&cur.input, &mut dis);
        if !dis.missing.is_empty() && cur.fetch_rounds < MAX_FETCH_ROUNDS {
            cur.fetch_rounds += 1;
            cur.phase = Phase::Fetch;
            self.stats.kind(cur.input.kind()).reads += 1;
            self.client.start(now, Txn::Read(dis.missing), out);
            return;
        }
        cur.phase = Phase::Commit;
        cur.attempts += 1;
        self.stats.kind(cur.input.kind()).attempts += 1;
        let input = cur.input.clone();
        let statics = Arc::new(dis.statics);
        self.client.start(
            now,
            Txn::body(move |t| {
                execute(&input, &mut Attempt { ctx: t, statics: &statics });
            }),
            out,
        );
    }

    fn on_done(&mut self, now: Time, c: Completed, out: &mut Outbox) {
        let Some(cur) = self.cur.as_mut() else { return };
        let kind = cur.input.kind();
        let counted = c.finished <= self.stop_at;
        let st = self.stats.per_kind.entry(kind).or_default();
        st.aborts_by_switch += c.aborts_by_switch as u64;
        st.aborts_by_store += c.aborts_by_store as u64;
        match (&cur.phase, c.gave_up) {
            (Phase::Fetch, None) => self.advance(now, out),
            (Phase::Commit, None) => {
                if counted {
                    st.committed += 1;
                    match cur.outcome {
                        Outcome::RolledBack => st.rolled_back += 1,
                        Outcome::Exhausted => st.exhausted += 1,
                        _ => {}
                    }
                    st.latencies_ns.push(now.since(cur.started).as_nanos() as u64);
                }
                self.cur = None;
            }
            (Phase::Commit, Some(GiveUp::RetryLimit)) if cur.attempts < self.retry_limit => {
                cur.fetch_rounds = 0;
                if kind.rereads_on_abort() {
                    // Re-read what the aborted attempt depended on.
                    let keys: Vec<Key> = c.reads.iter().map(|(k, _)| *k).collect();
                    cur.phase = Phase::Fetch;
                    st.reads += 1;
                    self.client.start(now, Txn::Read(keys), out);
                } else {
                    self.advance(now, out);
                }
            }
            _ => {
                if counted {
                    st.gave_up += 1;
                }
                self.cur = None;
            }
        }
    }

    fn settle(&mut self, now: Time, out: &mut Outbox) {
        let mut finished = false;
        while let Some(c) = self.client.poll() {
            self.on_done(now, c, out);
            finished |= self.cur.is_none();
        }
        if finished && self.cur.is_none() {
            self.wake_at = Some(now + self.think);
        }
        if let Some(t) = self.wake_at {
            if t <= now && self.cur.is_none() && now < self.stop_at {
                self.wake_at = None;
                let date = Self::now_date(now);
                let input = match self.only {
                    Some(k) => Input::draw_kind(&mut self.rng, &self.scale, self.warehouse, date, k),
                    None => Input::draw(&mut self.rng, &self.scale, self.warehouse, date),
                };
                self.stats.kind(input.kind()).started += 1;
                self.cur = Some(Current {
                    input,
                    started: now,
                    attempts: 0,
                    fetch_rounds: 0,
                    phase: Phase::Fetch,
                    outcome: Outcome::Done,
                });
                self.advance(now, out);
                self.settle(now, out);
            }
        }
    }
}

impl Host for TpccClient {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.client.on_packet(now, packet, out);
        self.settle(now, out);
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.client.on_tick(now, out);
        self.settle(now, out);
    }
    fn next_tick(&self) -> Option<Time> {
        let wake = self.wake_at.filter(|t| *t < self.stop_at);
        match (wake, self.client.next_tick()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_tables_do_not_overlap() {
        let ks = [
            key::warehouse(3, 1),
            key::district(1, 15, 2),
            key::customer(2, 3, 4095, 3),
            key::history(1, 2, MAX_HISTORY),
            key::new_order(1, 2, MAX_ORDER),
            key::order(1, 2, MAX_ORDER),
            key::order_line(1, 2, MAX_ORDER, 15),
            key::item(MAX_ITEM),
            key::stock(3, MAX_ITEM),
        ];
        let set: BTreeSet<Key> = ks.iter().copied().collect();
        assert_eq!(set.len(), ks.len());
        assert_eq!(decode_key(key::order_line(1, 2, 77, 9)), Some((Table::OrderLine, vec![1, 2, 77, 9])));
        assert_eq!(decode_key(key::customer(2, 3, 4095, 3)), Some((Table::Customer, vec![2, 3, 4095, 3])));
        assert_eq!(decode_key(5), None);
    }

    #[test]
    fn records_round_trip_and_absent_is_zero() {
        let c = Customer0 { balance: -123_456, ytd_payment: (1 << 40) - 1, payment_cnt: 65535 };
        assert_eq!(Customer0::decode(c.encode()), Some(c));
        assert_eq!(Customer0::decode(Value::ZERO), None);
        assert_ne!(NewOrder0 {}.encode(), Value::ZERO);
    }

    #[test]
    fn the_initial_database_is_consistent() {
        for scale in [Scale::GOTTHARD, Scale { warehouses: 2, districts: 3, customers: 7, items: 10 }] {
            let db = initial_db(&scale, 9);
            assert_eq!(check_consistency(&scale, &db), Vec::<String>::new());
        }
    }
}
