//! The twelve results `innet bench` already regenerated, as reproduction
//! entries: Gotthard Figures 7, 13, 14; NOCC Figure 5; CAANS Figures 7a,
//! 7b, 7d, 8 and Table 4; NetCRAQ Figures 3-6. Each calls the experiment
//! code of its bench (`txn_bench`, `tpcc_bench`, `paxos_bench`,
//! `chain_bench`), at the bench's parameters scaled by [`Ctx::scale`], and
//! sets the paper's numbers (transcribed from its text, with section) beside
//! ours. docs/reproduce.md lists the sizes.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use innet_core::deploy::DataPlaneAt;
use innet_txn::Mode;

use crate::entry::{Claim, Ctx, Entry, Obtained, Outcome, Paper, Runtime, LIVE_FIGURE_BESIDE};
use crate::txn_locality::one_plot_outcome;
use innet_exp::chain_bench::{self, ChainBenchResult};
use innet_exp::paxos::{PaxosConfig, PaxosResult};
use innet_exp::plot::{self, Panel};
use innet_exp::tpcc_bench::{self, Figure};
use innet_exp::tpcc_sim::{TpccConfig, TpccResult};
use innet_exp::txn::TxnPointConfig;
use innet_exp::{paxos_bench, results, txn_bench};
use innet_tpcc::Kind;

pub fn entries() -> Vec<Entry> {
    let e = |id, paper, figure, title, run| Entry { id, paper, figure, title, run };
    vec![
        e(
            "gotthard-fig7",
            Paper::Gotthard,
            "Figure 7",
            "throughput and latency vs % writes, per switch mode",
            gotthard_fig7,
        ),
        e("gotthard-fig13", Paper::Gotthard, "Figure 13", "TPC-C throughput per transaction type", gotthard_fig13),
        e(
            "gotthard-fig14",
            Paper::Gotthard,
            "Figure 14",
            "TPC-C Payment and Order-Status vs delta ratio and vs clients",
            gotthard_fig14,
        ),
        e("nocc-fig5", Paper::Nocc, "Figure 5", "TPC-C Payment throughput and store CPU vs contention", nocc_fig5),
        e("caans-fig7a", Paper::Caans, "Figure 7a", "consensus throughput vs latency, CAANS vs libpaxos", caans_fig7a),
        e("caans-fig7b", Paper::Caans, "Figure 7b", "latency CDF at 25/50/75% of maximum throughput", caans_fig7b),
        e("caans-fig7d", Paper::Caans, "Figure 7d", "replicated LevelDB: throughput vs latency", caans_fig7d),
        e(
            "caans-fig8",
            Paper::Caans,
            "Figure 8",
            "throughput over time when an acceptor or the coordinator fails",
            caans_fig8,
        ),
        e("caans-table4", Paper::Caans, "Table 4", "mean and std of latency at 25/50/75% of maximum", caans_table4),
        e("netcraq-fig3", Paper::Netcraq, "Figure 3", "max read rate vs distance from the tail", netcraq_fig3),
        e("netcraq-fig4", Paper::Netcraq, "Figure 4", "read latency vs offered rate", netcraq_fig4),
        e("netcraq-fig5", Paper::Netcraq, "Figure 5", "mixed read/write workloads", netcraq_fig5),
        e("netcraq-fig6", Paper::Netcraq, "Figure 6", "read throughput vs chain length", netcraq_fig6),
    ]
}

// ---------------------------------------------------------------- claims

pub use crate::entry::NEAR_TOLERANCE;

/// A claim whose paper number is a figure ours should come close to:
/// holds when `|ours / paper - 1| <= NEAR_TOLERANCE`.
fn near(what: &str, paper_text: &str, paper: f64, ours: f64, unit: &str) -> Claim {
    let tol = NEAR_TOLERANCE;
    Claim {
        what: what.into(),
        paper_text: paper_text.into(),
        paper: Some(paper),
        ours,
        unit: unit.into(),
        holds: paper != 0.0 && (ours / paper - 1.0).abs() <= tol,
        rule: format!("ours within {:.0}% of the paper", tol * 100.0),
        calibration: false,
        spread: None,
        beside: false,
    }
}

/// A claim that holds by `holds` (a direction or a bound the paper states;
/// `paper` is its number where it gives one).
fn rule(what: &str, paper_text: &str, paper: Option<f64>, ours: f64, unit: &str, holds: bool, rule: &str) -> Claim {
    Claim {
        what: what.into(),
        paper_text: paper_text.into(),
        paper,
        ours,
        unit: unit.into(),
        holds,
        rule: rule.into(),
        calibration: false,
        spread: None,
        beside: false,
    }
}

/// A result's caveat, printed whether its claims hold or not.
fn caveat(text: String) -> Option<String> {
    Some(text)
}

/// How a transaction result was obtained: live, or the simulator whose one
/// cost (the store's per-packet time) was measured on the live store; the
/// latencies are the paper's own.
fn txn_obtained(ran_on: Runtime) -> Obtained {
    match ran_on {
        Runtime::Live => Obtained::Live,
        Runtime::Xdp => Obtained::Xdp,
        Runtime::Sim => crate::entry::store_measured(),
    }
}

/// How a CAANS simulator result was obtained: live, or the simulator
/// with the roles' costs measured on this machine (a prediction; the
/// measurement is named, `crate::costs`).
fn paxos_obtained(ran_on: Runtime) -> Obtained {
    match ran_on {
        Runtime::Live => Obtained::Live,
        Runtime::Xdp => Obtained::Xdp,
        Runtime::Sim => Obtained::SimMeasured { measurement: crate::costs::active().paxos.sentence() },
    }
}

/// How a NetCRAQ result was obtained: the simulator with BMv2's costs, one
/// of them calibrated from the paper's own "22%".
fn chain_obtained() -> Obtained {
    Obtained::SimChosen {
        parameter: format!(
            "BMv2 {} us per packet (BMV2_PER_PACKET_US) + {:.1} ns per header byte (BMV2_PER_BYTE_NS)",
            chain_bench::BMV2_PER_PACKET_US,
            chain_bench::BMV2_PER_BYTE_NS
        ),
        source: "10 us: p4lang/behavioral-model's performance notes (~100k packets/s); the per-byte cost is \
                 calibrated from \"Scale-friendly In-network Coordination\", Section IV-A's 22% at the tail of \
                 Figure 3 (that claim reads \"calibration\"), see docs/chain.md"
            .into(),
        claim_follows: false,
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// The runtime an entry with a live variant runs on: live when asked for
/// live, else the simulator (the XDP data plane has no variant of these).
///
/// Never `Xdp`: matches on its value put `Xdp` with `Sim` only because
/// the enum has it.
fn sim_or_live(ctx: &Ctx) -> Runtime {
    match ctx.runtime {
        Runtime::Live => Runtime::Live,
        _ => Runtime::Sim,
    }
}

fn fresh(path: PathBuf) -> PathBuf {
    let _ = std::fs::remove_file(&path);
    path
}

// ---------------------------------------------------------------- Gotthard Figure 7

const FIG7_RATIOS: [f64; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
const FIG7_DOC: &str = "docs/txn.md#the-headline-experiment-figure-7";

fn gotthard_fig7(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let runtime = sim_or_live(ctx);
    // The paper's 3 minutes per point in the simulator; live, 5 s per point
    // at the ratios the claims name and the ends.
    let (duration_s, ratios): (f64, Vec<f64>) = match runtime {
        Runtime::Sim | Runtime::Xdp => (ctx.seconds(180.0, 10.0), FIG7_RATIOS.to_vec()),
        Runtime::Live => (ctx.seconds(5.0, 1.0), vec![0.0, 0.2, 0.5, 1.0]),
    };
    let base = TxnPointConfig { duration_s, seed: ctx.seed, ..TxnPointConfig::default() };
    let rs = txn_bench::sweep(runtime, &base, &Mode::ALL, &ratios, |_| {})?;
    let (jsonl, png) = txn_bench::write_results(&ctx.out, &rs)?;
    let at = |w| txn_bench::ratio_at(&rs, w, Mode::OptimisticAbort, Mode::ReadCache).unwrap_or(0.0);
    let text = "Section 5.3, Percentage of writes: \"At 0.2 %writes, Gotthard's throughput is already 1.5x that of \
                Read Cache, reaching 3.3x that of Read Cache at around 0.5 %writes\"";
    let claims = vec![
        near("committed/s, optimistic abort / read cache, 0.2 writes", &format!("1.5x ({text})"), 1.5, at(0.2), "x"),
        near("committed/s, optimistic abort / read cache, 0.5 writes", &format!("3.3x ({text})"), 3.3, at(0.5), "x"),
    ];
    let why = caveat(format!(
        "the ratios come from the latencies alone (read cache: one write per RTT on the counter; optimistic \
             abort: one per 2 d_cs); see {FIG7_DOC}"
    ));
    let config = format!(
        "Gotthard Table 2 defaults: 8 clients, 1 key, RTT 100 ms, delta 0.2, {} s per point, {} modes x {} \
         write ratios, {} runtime",
        duration_s,
        Mode::ALL.len(),
        ratios.len(),
        runtime.name()
    );
    Ok(one_plot_outcome(txn_obtained(runtime), runtime, claims, why, (png, jsonl), config))
}

// ---------------------------------------------------------------- TPC-C

const TPCC_DOC: &str = "docs/tpcc.md";

/// Live runs of the TPC-C figures keep a few points of each axis.
fn tpcc_live_point(c: &TpccConfig, base: &TpccConfig) -> bool {
    [0.0, 0.2, 0.5, 1.0].contains(&c.delta) && [1, 4, 8, 24, 40].contains(&c.clients) && c.rtt_ms == base.rtt_ms
        || c.rtt_ms != base.rtt_ms && [1, 8, 40].contains(&c.clients)
}

fn tpcc_run(ctx: &Ctx, figure: Figure) -> anyhow::Result<(Vec<TpccResult>, TpccConfig, Runtime, PathBuf, PathBuf)> {
    let runtime = sim_or_live(ctx);
    // Gotthard's 3 minutes per point; NOCC Figure 5's points (RTT 1 ms,
    // thousands of transactions a second) take 10 s, capped by `configs`.
    let duration_s = match (runtime, figure) {
        (Runtime::Sim | Runtime::Xdp, Figure::Nocc5) => ctx.seconds(tpcc_bench::NOCC5_DURATION_S, 0.5),
        (Runtime::Sim | Runtime::Xdp, _) => ctx.seconds(180.0, 10.0),
        (Runtime::Live, _) => ctx.seconds(5.0, 1.0),
    };
    let base = TpccConfig { duration_s, seed: ctx.seed, ..TpccConfig::default() };
    let mut cfgs = tpcc_bench::configs(figure, &base, &tpcc_bench::default_modes(figure));
    if runtime == Runtime::Live {
        cfgs.retain(|c| tpcc_live_point(c, &base));
    }
    let stop = innet_live::Stop::new();
    let rs = tpcc_bench::run(runtime, &cfgs, &stop, |_| {})?;
    if let Some(bad) = rs.iter().find(|r| !r.consistency_violations.is_empty()) {
        anyhow::bail!("TPC-C consistency conditions failed: {:?}", bad.consistency_violations);
    }
    std::fs::create_dir_all(&ctx.out)?;
    let _ = std::fs::remove_file(ctx.out.join(format!("tpcc-{}.jsonl", figure.name())));
    let (jsonl, png) = tpcc_bench::write(figure, &base, &rs, &ctx.out)?;
    Ok((rs, base, runtime, jsonl, png))
}

fn per_s(r: &TpccResult, k: Kind) -> f64 {
    r.per_type.get(k.name()).map_or(0.0, |t| t.committed_per_s)
}

fn latency_ms(r: &TpccResult, k: Kind) -> f64 {
    r.per_type.get(k.name()).map_or(0.0, |t| t.mean_latency_ms)
}

fn tpcc_find(rs: &[TpccResult], m: Mode, k: Kind, f: impl Fn(&TpccConfig) -> bool) -> Option<&TpccResult> {
    rs.iter().find(|r| r.config.mode == m.name() && r.config.only == Some(k) && f(&r.config))
}

fn gotthard_fig13(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (rs, base, ran_on, jsonl, png) = tpcc_run(ctx, Figure::Fig13)?;
    let table = tpcc_bench::fig13_table(&rs);
    let row = |m: Mode| table.iter().find(|(x, _, _)| *x == m).cloned();
    let (Some(oa), Some(rc)) = (row(Mode::OptimisticAbort), row(Mode::ReadCache)) else {
        anyhow::bail!("Figure 13 needs optimistic-abort and read-cache results");
    };
    let kind_ratio = |k: Kind| fig13_ratio(&oa, &rc, k);
    let claims = fig13_claims(&oa, &rc);
    let why = caveat(format!(
        "Payment {:.2}x, not about 2x: every Payment of the one warehouse updates W_YTD, so with the read cache \
             a stale Payment learns so only at the store (one commit per RTT), while optimistic abort serializes \
             them at the switch; the paper's Payment record shapes are not known. Order-Status {:.2}x, not 1.1x: \
             TPC-C's Order-Status only reads, so nothing conflicts when it runs alone. See \
             {TPCC_DOC}#why-ours-differs-figure-13",
        kind_ratio(Kind::Payment),
        kind_ratio(Kind::OrderStatus)
    ));
    let config = format!(
        "Gotthard's TPC-C scale (1 warehouse, 2 districts, 10 customers, 50 items), {} terminals, RTT {} ms, \
         delta {}, {} s per point, each type alone and the mix, {} modes, {} runtime",
        base.clients,
        base.rtt_ms,
        base.delta,
        base.duration_s,
        table.len(),
        ran_on.name()
    );
    Ok(one_plot_outcome(txn_obtained(ran_on), ran_on, claims, why, (png, jsonl), config))
}

/// A row of Figure 13's table: the mode, its weighted mean committed/s
/// and its committed/s per transaction type (in [`Kind::ALL`]'s order).
type Fig13Row = (Mode, f64, Vec<f64>);

/// Committed/s of type `k`, row `oa` over row `rc`.
fn fig13_ratio(oa: &Fig13Row, rc: &Fig13Row, k: Kind) -> f64 {
    let i = Kind::ALL.iter().position(|x| *x == k).unwrap_or(0);
    ratio(oa.2[i], rc.2[i])
}

/// The claims of Section 5.4 on Figure 13: optimistic abort (`oa`) over
/// read cache (`rc`) per type and on the mix.
fn fig13_claims(oa: &Fig13Row, rc: &Fig13Row) -> Vec<Claim> {
    let text = "Section 5.4, Complete benchmark: \"Gotthard significantly improves the throughput compared to the \
                Read Cache (around 2x for Payment, and 1.1x for Order status)\"";
    let others = [Kind::NewOrder, Kind::Delivery, Kind::StockLevel].map(|k| fig13_ratio(oa, rc, k));
    let others_max = others.iter().copied().fold(0.0, f64::max);
    vec![
        near(
            "Payment committed/s, optimistic abort / read cache",
            &format!("about 2x ({text})"),
            2.0,
            fig13_ratio(oa, rc, Kind::Payment),
            "x",
        ),
        near(
            "Order-Status committed/s, optimistic abort / read cache",
            &format!("1.1x ({text})"),
            1.1,
            fig13_ratio(oa, rc, Kind::OrderStatus),
            "x",
        ),
        rule(
            "weighted mean committed/s, optimistic abort / read cache",
            "\"on average, Gotthard improves the overall performance\" (Section 5.4)",
            None,
            ratio(oa.1, rc.1),
            "x",
            ratio(oa.1, rc.1) > 1.0,
            "ours above 1",
        ),
        rule(
            "largest of New-Order, Delivery, Stock-Level: optimistic abort / read cache",
            "\"It is less effective for the other three transactions\" (Section 5.4)",
            None,
            others_max,
            "x",
            others_max < fig13_ratio(oa, rc, Kind::Payment),
            "ours below the Payment ratio",
        ),
    ]
}

fn gotthard_fig14(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (rs, base, ran_on, jsonl, png) = tpcc_run(ctx, Figure::Fig14)?;
    let (c0, d0) = (base.clients, base.delta);
    let claims = Fig14Ratios::of(&rs, &base).claims(d0);
    let why = caveat(format!(
            "Payment with optimistic abort flattens past 8 clients at its own limit (the switch passes one Payment \
             per round trip to the clients, 2 d_cs = {:.0} ms, {:.0}/s); Order-Status only reads here (TPC-C's writes nothing), so alone nothing \
             conflicts, no mode saturates and the read cache is marginally ahead. See \
             {TPCC_DOC}#gotthard-figure-14-payment-and-order-status-alone-8-terminals-when-delta-varies-delta-02-when-clients-vary \
             and {TPCC_DOC}#why-ours-differs-figure-13",
            d0 * base.rtt_ms,
            1e3 / (d0 * base.rtt_ms).max(1e-9)
        ),
    );
    let config = format!(
        "Gotthard's TPC-C scale, Payment and Order-Status alone, RTT {} ms, {} terminals when delta varies, delta \
         {} when clients vary, {} s per point, forward / read-cache / optimistic-abort, {} runtime",
        base.rtt_ms,
        c0,
        d0,
        base.duration_s,
        ran_on.name()
    );
    Ok(one_plot_outcome(txn_obtained(ran_on), ran_on, claims, why, (png, jsonl), config))
}

/// Gotthard Figure 14's ratios of committed/s (of mean latency where
/// named), optimistic abort over read cache unless named otherwise.
struct Fig14Ratios {
    /// Payment at delta 0 and at delta 1.
    payment_delta0: f64,
    payment_delta1: f64,
    /// Payment, optimistic abort: 24 clients over 8.
    payment_scaling: f64,
    /// Order-Status at the base delta.
    order_status: f64,
    order_status_latency: f64,
    /// Order-Status, read cache: 8 clients over 4.
    read_cache_saturation: f64,
}

impl Fig14Ratios {
    /// The ratios of the results `rs` of a Figure 14 run around `base`.
    fn of(rs: &[TpccResult], base: &TpccConfig) -> Fig14Ratios {
        let (c0, d0) = (base.clients, base.delta);
        let tput = |m, k, f: &dyn Fn(&TpccConfig) -> bool| tpcc_find(rs, m, k, f).map_or(0.0, |r| per_s(r, k));
        let lat = |m, k, f: &dyn Fn(&TpccConfig) -> bool| tpcc_find(rs, m, k, f).map_or(0.0, |r| latency_ms(r, k));
        let at_delta = |d: f64| move |c: &TpccConfig| c.clients == c0 && (c.delta - d).abs() < 1e-9;
        let at_clients = |n: u32| move |c: &TpccConfig| c.clients == n && (c.delta - d0).abs() < 1e-9;
        let (oa, rc) = (Mode::OptimisticAbort, Mode::ReadCache);
        let pay = Kind::Payment;
        let os = Kind::OrderStatus;
        Fig14Ratios {
            payment_delta0: ratio(tput(oa, pay, &at_delta(0.0)), tput(rc, pay, &at_delta(0.0))),
            payment_delta1: ratio(tput(oa, pay, &at_delta(1.0)), tput(rc, pay, &at_delta(1.0))),
            payment_scaling: ratio(tput(oa, pay, &at_clients(24)), tput(oa, pay, &at_clients(8))),
            order_status: ratio(tput(oa, os, &at_delta(d0)), tput(rc, os, &at_delta(d0))),
            order_status_latency: ratio(lat(oa, os, &at_delta(d0)), lat(rc, os, &at_delta(d0))),
            read_cache_saturation: ratio(tput(rc, os, &at_clients(8)), tput(rc, os, &at_clients(4))),
        }
    }

    /// The claims of Section 5.4 on Figure 14; `d0` the base delta.
    fn claims(&self, d0: f64) -> Vec<Claim> {
        let s = "Section 5.4";
        vec![
            rule(
                "Payment at delta 0: optimistic abort / read cache committed/s",
                &format!("\"When the switch is closer to the clients (lower delta ratio), Gotthard has ... higher throughput\" ({s}, Fig. 14a)"),
                None,
                self.payment_delta0,
                "x",
                self.payment_delta0 > 1.05,
                "ours above 1.05",
            ),
            rule(
                "Payment at delta 1: optimistic abort / read cache committed/s",
                &format!("\"As the switch is moved further from the clients ... Gotthard's performance is more similar to the other switches'\" ({s}, Fig. 14a)"),
                None,
                self.payment_delta1,
                "x",
                (self.payment_delta1 - 1.0).abs() < (self.payment_delta0 - 1.0).abs(),
                "ours closer to 1 than the delta-0 ratio (\"more similar\" is a direction; the paper gives no number)",
            ),
            rule(
                "Payment, optimistic abort: committed/s at 24 clients / at 8",
                &format!("\"The other switches saturate at 8 clients, while Gotthard continues to scale\" ({s}, Fig. 14b)"),
                None,
                self.payment_scaling,
                "x",
                self.payment_scaling > 1.1,
                "ours above 1.1 (still scaling past 8 clients)",
            ),
            rule(
                &format!("Order-Status at delta {d0}: optimistic abort / read cache committed/s"),
                &format!("\"Gotthard has higher throughput than the Read Cache until the switch is halfway\" ({s}, Fig. 14c)"),
                None,
                self.order_status,
                "x",
                self.order_status > 1.0,
                "ours above 1",
            ),
            rule(
                &format!("Order-Status at delta {d0}: optimistic abort / read cache mean latency"),
                &format!("\"Gotthard always has lower latency than the others\" ({s}, Fig. 14g)"),
                None,
                self.order_status_latency,
                "x",
                self.order_status_latency > 0.0 && self.order_status_latency < 1.0,
                "ours below 1",
            ),
            rule(
                "Order-Status, read cache: committed/s at 8 clients / at 4",
                &format!("\"The other switches saturate at 4 clients\" ({s}, Fig. 14d)"),
                None,
                self.read_cache_saturation,
                "x",
                self.read_cache_saturation <= 1.1,
                "ours at most 1.1 (saturated)",
            ),
        ]
    }
}

fn nocc_fig5(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (rs, base, ran_on, jsonl, png) = tpcc_run(ctx, Figure::Nocc5)?;
    let table = tpcc_bench::nocc5_table(&rs);
    let lower = |(_, _, _, o, n): &(u32, f64, f64, f64, f64)| if *o > 0.0 { (1.0 - n / o) * 100.0 } else { 0.0 };
    let max_lower = table.iter().map(lower).fold(0.0, f64::max);
    let top = table.last().copied().unwrap_or_default();
    let tput = ratio(top.2, top.1);
    let text = "Section 4: \"NOCC reduces the load on the store (by up to 22% compared to OCC), while maintaining \
                slightly higher throughput\"";
    let claims = vec![
        near("largest store CPU reduction, NOCC vs OCC", &format!("up to 22% ({text})"), 22.0, max_lower, "%"),
        rule(
            &format!("store CPU, NOCC below OCC at {} clients", top.0),
            &format!("lower ({text})"),
            None,
            lower(&top),
            "%",
            lower(&top) > 0.0,
            "ours above 0% (NOCC lower)",
        ),
        rule(
            &format!("Payment committed/s, NOCC / OCC at {} clients", top.0),
            &format!("slightly higher ({text})"),
            None,
            tput,
            "x",
            (1.0..=1.5).contains(&tput),
            "ours between 1.0 and 1.5 (\"slightly higher\")",
        ),
    ];
    let why = caveat(format!(
            "the direction holds, the size does not ({max_lower:.0}% lower, {tput:.2}x throughput): in our store \
             model every packet costs the same (2 us, measured on the live store) and under OCC every conflicting \
             Payment reaches the store and is aborted there, while NOCC's switch aborts them; the paper's store had \
             a floor of CPU use a per-packet model leaves out, and its switch made incorrect speculative \
             decisions. See {TPCC_DOC}#nocc-figure-5-payment-alone-noccs-scale-10-items-occ--forward-nocc--optimistic-abort"
        ),
    );
    let config = format!(
        "NOCC's TPC-C scale (10 items), Payment alone, RTT {} ms, delta {}, {} s per point, clients {:?}, OCC = \
         forward, NOCC = optimistic-abort, store {} us/packet, {} runtime",
        tpcc_bench::NOCC5_RTT_MS,
        tpcc_bench::NOCC5_DELTA,
        base.duration_s.min(tpcc_bench::NOCC5_DURATION_S),
        table.iter().map(|t| t.0).collect::<Vec<_>>(),
        base.store_us_per_packet,
        ran_on.name()
    );
    Ok(one_plot_outcome(txn_obtained(ran_on), ran_on, claims, why, (png, jsonl), config))
}

// ---------------------------------------------------------------- CAANS

const PAXOS_DOC: &str = "docs/paxos.md#the-software-baseline";
const SWEEP: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The Figure 7a sweep, shared by Figures 7a, 7b and Table 4 of one run
/// (same runtime, scale and seed).
type SweepKey = (Runtime, u64, u64);
static SWEEP_CACHE: Mutex<Option<(SweepKey, Vec<Vec<PaxosResult>>)>> = Mutex::new(None);

fn paxos_base(ctx: &Ctx, runtime: Runtime) -> PaxosConfig {
    PaxosConfig {
        seed: ctx.seed,
        slots: paxos_bench::PAPER_SLOTS,
        duration_s: match runtime {
            Runtime::Sim | Runtime::Xdp => ctx.seconds(PAXOS_SIM_SECONDS, 0.03),
            Runtime::Live => ctx.seconds(1.0, 0.3),
        },
        ..PaxosConfig::default()
    }
}

/// Simulated seconds per CAANS sweep point at scale 1: with the measured
/// costs the deployments commit up to ~300k values/s, so a tenth of a
/// second is up to 30k instances per point (the simulator runs about 2 M
/// packets a second of wall time).
pub const PAXOS_SIM_SECONDS: f64 = 0.1;

/// Simulated seconds of each CAANS Figure 8 run at scale 1 (the failure
/// at its midpoint, after 15 heartbeats of 10 ms).
pub const FIG8_SIM_SECONDS: f64 = 0.3;

/// Seeds each CAANS simulator result runs (the run's seed and the next
/// ones): its directions hold only by more than the spread over them.
pub const PAXOS_SEEDS: usize = 3;

/// `cfg` with the measured costs of its deployment (`crate::costs`).
fn measured(mut cfg: PaxosConfig) -> PaxosConfig {
    crate::costs::active().paxos.apply(&mut cfg);
    cfg
}

/// The seeds a CAANS result runs: [`PAXOS_SEEDS`] in the simulator, one live.
fn paxos_seeds(ctx: &Ctx, runtime: Runtime) -> Vec<u64> {
    match runtime {
        Runtime::Sim | Runtime::Xdp => (0..PAXOS_SEEDS as u64).map(|i| ctx.seed + i).collect(),
        Runtime::Live => vec![ctx.seed],
    }
}

/// The Figure 7a sweep of each seed (the run's seed first); with `--xdp`,
/// the XDP testbed's sweep beside live software processes
/// ([`crate::caans_xdp::sweep`]: CAANS's results carry the `Switch` data
/// plane here, `Xdp` in their records).
fn paxos_sweep(ctx: &Ctx) -> anyhow::Result<(Vec<Vec<PaxosResult>>, Runtime)> {
    if ctx.runtime == Runtime::Xdp {
        return Ok((crate::caans_xdp::sweep(ctx)?, Runtime::Xdp));
    }
    let runtime = sim_or_live(ctx);
    let key = (runtime, ctx.scale.to_bits(), ctx.seed);
    let mut cache = SWEEP_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((k, rs)) = cache.as_ref() {
        if *k == key {
            return Ok((rs.clone(), runtime));
        }
    }
    let base = paxos_base(ctx, runtime);
    let mut runs = vec![];
    for seed in paxos_seeds(ctx, runtime) {
        let base = PaxosConfig { seed, ..base.clone() };
        runs.push(match runtime {
            Runtime::Sim | Runtime::Xdp => {
                let cfgs: Vec<PaxosConfig> = SWEEP
                    .iter()
                    .flat_map(|&n| {
                        paxos_bench::DEPLOYMENTS
                            .map(|dp| measured(PaxosConfig { data_plane: dp, outstanding: n, ..base.clone() }))
                    })
                    .collect();
                innet_exp::run_parallel(&cfgs, innet_exp::paxos_sim::run_point_sim)
                    .into_iter()
                    .collect::<anyhow::Result<Vec<_>>>()?
            }
            Runtime::Live => paxos_bench::sweep(runtime, &base, &SWEEP)?,
        });
    }
    *cache = Some((key, runs.clone()));
    Ok((runs, runtime))
}

/// Ours for each seed's run.
fn each(runs: &[Vec<PaxosResult>], f: impl Fn(&[PaxosResult]) -> f64) -> Vec<f64> {
    runs.iter().map(|rs| f(rs)).collect()
}

/// The simulator's measured costs, one line.
fn paxos_costs_line() -> String {
    let c = &crate::costs::active().paxos;
    format!(
        "measured costs per packet: BPF coordinator {:.2} / acceptor {:.2} us, user-space coordinator {:.2} / \
         acceptor {:.2} us, learner/proposer {:.2} us; links {} us",
        c.bpf_coordinator_ns / 1e3,
        c.bpf_acceptor_ns / 1e3,
        c.coordinator_us,
        c.acceptor_us,
        c.host_us(),
        crate::costs::PAXOS_LINK_US
    )
}

fn paxos_caption(fig: &str, r: &PaxosResult, extra: &str) -> String {
    let c = &r.config;
    let costs = if r.runtime == Runtime::Sim { format!("; {}", paxos_costs_line()) } else { String::new() };
    format!(
        "CAANS {fig}; {} runtime, {} acceptors, {} learners, {} proposer(s), {} s per point{extra}{costs}; seed {}, \
         commit {}",
        r.runtime.record_name(),
        c.acceptors,
        c.learners,
        c.proposers,
        c.duration_s,
        c.seed,
        short(&r.git_commit)
    )
}

fn paxos_config_line(r: &PaxosResult, what: &str) -> String {
    let c = &r.config;
    let costs = if r.runtime == Runtime::Sim {
        format!("; {} seeds from {}; {}", PAXOS_SEEDS, c.seed, paxos_costs_line())
    } else {
        String::new()
    };
    format!(
        "{what}; {} acceptors, {} learners, {} proposer(s), {} s per point, ring {} slots{costs} ({} runtime)",
        c.acceptors,
        c.learners,
        c.proposers,
        c.duration_s,
        c.slots,
        r.runtime.record_name()
    )
}

/// A deployment's name in a plot; `ran_on` XDP: CAANS is the XDP testbed
/// and libpaxos the software processes live on loopback.
fn deployment_label(dp: DataPlaneAt, ran_on: Runtime) -> &'static str {
    match (dp, ran_on) {
        (DataPlaneAt::Switch, Runtime::Xdp) | (DataPlaneAt::Xdp, _) => {
            "CAANS on XDP (coordinator + acceptors BPF programs, netns testbed)"
        }
        (DataPlaneAt::Process, Runtime::Xdp) => "libpaxos-style (software processes, live on loopback)",
        (DataPlaneAt::Switch, _) => "CAANS (coordinator + acceptors in switches)",
        (DataPlaneAt::Process, _) => "libpaxos-style (software processes)",
    }
}

fn by_deployment(
    rs: &[PaxosResult],
    ran_on: Runtime,
    f: impl Fn(&PaxosResult) -> (f64, f64),
) -> Vec<(String, Vec<(f64, f64)>)> {
    paxos_bench::DEPLOYMENTS
        .iter()
        .map(|dp| {
            (
                deployment_label(*dp, ran_on).to_string(),
                rs.iter().filter(|r| r.config.data_plane == *dp).map(&f).collect(),
            )
        })
        .filter(|(_, v): &(String, Vec<(f64, f64)>)| !v.is_empty())
        .collect()
}

fn write_records(path: PathBuf, rs: &[PaxosResult]) -> anyhow::Result<PathBuf> {
    let path = fresh(path);
    let rs: Vec<PaxosResult> = rs.iter().map(crate::caans_xdp::as_recorded).collect();
    results::append_jsonl(&path, &rs)?;
    Ok(path)
}

fn one_panel(
    path: &Path,
    title: &str,
    caption: &str,
    x: &str,
    y: &str,
    series: Vec<(String, Vec<(f64, f64)>)>,
) -> anyhow::Result<()> {
    plot::panels_png(
        path,
        title,
        caption,
        &[Panel { title: String::new(), x_label: x.into(), y_label: y.into(), series }],
        1,
    )
}

/// Requests in flight of the live sweep shown beside the simulator's
/// Figure 7a prediction.
const LIVE_BESIDE: [usize; 3] = [4, 16, 64];

fn caans_fig7a(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (runs, ran_on) = paxos_sweep(ctx)?;
    std::fs::create_dir_all(&ctx.out)?;
    let mut records = vec![write_records(ctx.out.join("paxos-sweep.jsonl"), &runs.concat())?];
    let rs = &runs[0];
    let first = rs.first().ok_or_else(|| anyhow::anyhow!("empty sweep"))?;
    let png = ctx.out.join("caans-fig7a-throughput-latency.png");
    one_panel(
        &png,
        "Consensus throughput vs latency, requests in flight 1-64 (CAANS Fig. 7a)",
        &paxos_caption("Fig. 7a", first, ""),
        "values committed per second",
        "mean latency (us)",
        by_deployment(rs, ran_on, |r| (r.committed_per_s, r.mean_latency_us)),
    )?;
    let (s, w, _) = paxos_bench::max_throughput(rs);
    let mut claims = fig7a_claims(&runs);
    // The live measurement of the same figure, beside the prediction.
    if ran_on == Runtime::Sim {
        let live = paxos_bench::sweep(Runtime::Live, &paxos_base(ctx, Runtime::Live), &LIVE_BESIDE)?;
        let (ls, lw, lx) = paxos_bench::max_throughput(&live);
        records.push(write_records(ctx.out.join("paxos-live-beside.jsonl"), &live)?);
        claims.push(Claim {
            beside: true,
            rule: format!(
                "shown beside: live on loopback, requests in flight {LIVE_BESIDE:?}, both deployments user-space \
                 processes (switch {ls:.0}/s, software {lw:.0}/s)"
            ),
            ..rule(
                "max committed/s, CAANS / libpaxos, measured live",
                "2.24x (Section 6.3)",
                Some(2.24),
                lx,
                "x",
                false,
                "",
            )
        });
    }
    let sim = sim_beside(ctx, ran_on, |c| Ok(fig7a_claims(&paxos_sweep(c)?.0)))?;
    let c = &crate::costs::active().paxos;
    let why = format!(
        "a prediction from the roles' costs measured on this machine, not the paper's FPGA: as processes our \
         coordinator costs {:.2} us and an acceptor {:.2} us per packet (the data-plane program in a process: a \
         counter and a header rewrite, not libpaxos's coordinator, whose 69,185 values/s CPU-bound is 14.5 us a \
         value, Section 2.2), as BPF programs {:.2} and {:.2} us; the learners ({:.2} us per vote, 3 votes an \
         instance) then bound both deployments alike, so CAANS's lead is what the data plane saves the processes, \
         not 2.24x. Live on loopback both deployments are user-space processes. See {PAXOS_DOC}",
        c.coordinator_us,
        c.acceptor_us,
        c.bpf_coordinator_ns / 1e3,
        c.bpf_acceptor_ns / 1e3,
        c.learner_us
    );
    let config = paxos_config_line(
        first,
        &format!(
            "requests in flight {:?} per deployment; max {} {s:.0}/s, software {w:.0}/s (first seed)",
            if ran_on == Runtime::Xdp { &crate::caans_xdp::SWEEP[..] } else { &SWEEP[..] },
            if ran_on == Runtime::Xdp { "XDP" } else { "switch" }
        ),
    );
    let xdp_detail = format!("max XDP {s:.0}/s, software processes {w:.0}/s");
    Ok(paxos_outcome(ran_on, (claims, sim), (why, ("Figure 7a", &xdp_detail)), (vec![png], records), config))
}

/// A CAANS result's outcome on `ran_on`: its `claims`, then (with
/// `--xdp`) the simulator's `sim` beside them, its first also in the
/// summary; the caveat is the XDP testbed's (`xdp`: the figure and a
/// detail) on XDP, else `why`.
fn paxos_outcome(
    ran_on: Runtime,
    (mut claims, sim): (Vec<Claim>, Vec<Claim>),
    (why, xdp): (String, (&str, &str)),
    (plots, records): (Vec<PathBuf>, Vec<PathBuf>),
    config: String,
) -> Outcome {
    claims.extend(sim.iter().cloned());
    Outcome {
        sim_headline: sim.into_iter().next(),
        claims,
        why: caveat(if ran_on == Runtime::Xdp { crate::caans_xdp::caveat(xdp.0, xdp.1) } else { why }),
        obtained: paxos_obtained(ran_on),
        plots,
        records,
        ran_on,
        config,
    }
}

/// Figure 7a's claims on `runs` (one sweep per seed).
fn fig7a_claims(runs: &[Vec<PaxosResult>]) -> Vec<Claim> {
    let lat = |rs: &[PaxosResult], dp: DataPlaneAt, f: fn(f64, f64) -> f64, init: f64| {
        rs.iter().filter(|r| r.config.data_plane == dp).map(|r| r.mean_latency_us).fold(init, f)
    };
    let lo = |rs: &[PaxosResult]| {
        ratio(lat(rs, DataPlaneAt::Process, f64::min, f64::MAX), lat(rs, DataPlaneAt::Switch, f64::min, f64::MAX))
    };
    let hi = |rs: &[PaxosResult]| {
        ratio(lat(rs, DataPlaneAt::Process, f64::max, 0.0), lat(rs, DataPlaneAt::Switch, f64::max, 0.0))
    };
    let s63 = "Section 6.3, Throughput and latency";
    vec![
        Claim::near_over_seeds(
            "max committed/s, CAANS / libpaxos",
            &format!("2.24x (\"libpaxos ... 59,604 messages per second, CAANS reaches 134,094 ..., a 2.24x improvement\", {s63})"),
            2.24,
            &each(runs, |rs| paxos_bench::max_throughput(rs).2),
            "x",
        ),
        Claim::direction(
            "lowest mean latency, libpaxos / CAANS",
            &format!("3.0x (157 us vs 52 us, {s63})"),
            Some(157.0 / 52.0),
            &each(runs, lo),
            "x",
            1.0,
            true,
            "ours above 1 (CAANS lower)",
        ),
        Claim::direction(
            "highest mean latency, libpaxos / CAANS",
            &format!("3.7x (2,510 us vs 686 us, {s63})"),
            Some(2510.0 / 686.0),
            &each(runs, hi),
            "x",
            1.0,
            true,
            "ours above 1 (CAANS lower)",
        ),
    ]
}

/// With `--xdp`: the simulator's claims of the same result (`claims` run
/// on a context asking for the simulator), shown beside ours, each named
/// "simulator (measured costs): ..." and counted neither way. Empty
/// otherwise.
fn sim_beside(
    ctx: &Ctx,
    ran_on: Runtime,
    claims: impl Fn(&Ctx) -> anyhow::Result<Vec<Claim>>,
) -> anyhow::Result<Vec<Claim>> {
    if ran_on != Runtime::Xdp {
        return Ok(vec![]);
    }
    let sim = Ctx { runtime: Runtime::Sim, ..ctx.clone() };
    Ok(claims(&sim)?
        .into_iter()
        .map(|c| shown_beside(c, "simulator (measured costs): ", "the simulator's prediction"))
        .collect())
}

/// `c` shown beside (counted neither way): its `what` after `prefix`, its
/// rule naming `source` and whether it holds there.
fn shown_beside(c: Claim, prefix: &str, source: &str) -> Claim {
    Claim {
        what: format!("{prefix}{}", c.what),
        rule: format!("shown beside: {source} ({}: {})", c.rule, if c.holds { "holds" } else { "does not hold" }),
        beside: true,
        ..c
    }
}

fn caans_fig7b(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (runs, ran_on) = paxos_sweep(ctx)?;
    std::fs::create_dir_all(&ctx.out)?;
    let jsonl = write_records(ctx.out.join("paxos-sweep.jsonl"), &runs.concat())?;
    let rs = &runs[0];
    let t4 = paxos_bench::table4(rs);
    let first = rs.first().ok_or_else(|| anyhow::anyhow!("empty sweep"))?;
    let cdf: Vec<(String, Vec<(f64, f64)>)> = t4
        .iter()
        .filter(|(_, _, r)| r.latency_quantiles_us.len() > 1)
        .map(|(dp, f, r)| {
            let n = r.latency_quantiles_us.len() as f64 - 1.0;
            let pts = r.latency_quantiles_us.iter().enumerate().map(|(i, l)| (*l, i as f64 / n)).collect();
            let who = match (*dp, ran_on) {
                (DataPlaneAt::Switch, Runtime::Xdp) => "CAANS on XDP",
                (DataPlaneAt::Switch, _) => "CAANS",
                _ => "libpaxos-style",
            };
            (format!("{who} at {:.0}% of max", f * 100.0), pts)
        })
        .collect();
    let png = ctx.out.join("caans-fig7b-latency-cdf.png");
    one_panel(
        &png,
        "Latency CDF at 25/50/75% of each deployment's max throughput (CAANS Fig. 7b)",
        &paxos_caption("Fig. 7b", first, "; nearest sweep point to each fraction"),
        "latency (us)",
        "fraction of requests",
        cdf,
    )?;
    let sim = sim_beside(ctx, ran_on, |c| Ok(fig7b_claims(&paxos_sweep(c)?.0)))?;
    Ok(paxos_outcome(
        ran_on,
        (fig7b_claims(&runs), sim),
        (format!("see {PAXOS_DOC}"), ("Figure 7b", "the Figure 7a sweep's points nearest 25/50/75% of each maximum")),
        (vec![png], vec![jsonl]),
        paxos_config_line(first, "the Figure 7a sweep's points nearest 25/50/75% of each deployment's max"),
    ))
}

/// Figure 7b's claims on `runs` (one sweep per seed).
fn fig7b_claims(runs: &[Vec<PaxosResult>]) -> Vec<Claim> {
    let p99 = |t4: &[(DataPlaneAt, f64, PaxosResult)], dp: DataPlaneAt, f: f64| {
        t4.iter().find(|(d, x, _)| *d == dp && (*x - f).abs() < 1e-9).map_or(0.0, |(_, _, r)| r.p99_latency_us)
    };
    let t4s: Vec<_> = runs.iter().map(|rs| paxos_bench::table4(rs)).collect();
    [0.25, 0.5, 0.75]
        .iter()
        .map(|&f| {
            let per_seed: Vec<f64> =
                t4s.iter().map(|t| ratio(p99(t, DataPlaneAt::Switch, f), p99(t, DataPlaneAt::Process, f))).collect();
            Claim::direction(
                &format!("p99 latency at {:.0}% of max, CAANS / libpaxos", f * 100.0),
                "\"CAANS messages also demonstrate more predictability than libpaxos\" (Section 6.3, Predictability)",
                None,
                &per_seed,
                "x",
                1.0,
                false,
                "ours below 1",
            )
        })
        .collect()
}

fn caans_table4(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (runs, ran_on) = paxos_sweep(ctx)?;
    std::fs::create_dir_all(&ctx.out)?;
    let jsonl = write_records(ctx.out.join("paxos-sweep.jsonl"), &runs.concat())?;
    let rs = &runs[0];
    let t4 = paxos_bench::table4(rs);
    let first = rs.first().ok_or_else(|| anyhow::anyhow!("empty sweep"))?;
    let claims = table4_claims(&runs)?;
    let sim = sim_beside(ctx, ran_on, |c| table4_claims(&paxos_sweep(c)?.0))?;
    // The table as a plot: mean latency per fraction, with std as a second panel.
    let series = |y: fn(&PaxosResult) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
        paxos_bench::DEPLOYMENTS
            .iter()
            .map(|dp| {
                let pts = t4.iter().filter(|(d, _, _)| d == dp).map(|(_, f, r)| (f * 100.0, y(r))).collect();
                (deployment_label(*dp, ran_on).to_string(), pts)
            })
            .collect()
    };
    let png = ctx.out.join("caans-table4.png");
    plot::panels_png(
        &png,
        "Latency at 25/50/75% of each deployment's max throughput (CAANS Table 4)",
        &paxos_caption("Table 4", first, "; nearest sweep point to each fraction"),
        &[
            Panel {
                title: "(a) mean".into(),
                x_label: "% of max throughput".into(),
                y_label: "mean latency (us)".into(),
                series: series(|r| r.mean_latency_us),
            },
            Panel {
                title: "(b) standard deviation".into(),
                x_label: "% of max throughput".into(),
                y_label: "std of latency (us)".into(),
                series: series(|r| r.std_latency_us),
            },
        ],
        2,
    )?;
    let means: Vec<f64> = t4.iter().map(|t| t.2.mean_latency_us).collect();
    let (lo, hi) = (means.iter().copied().fold(f64::MAX, f64::min), means.iter().copied().fold(0.0, f64::max));
    let why = format!(
        "the absolute figures differ (ours {lo:.0}-{hi:.0} us, the paper's 61-1,800 us from its FPGA and 10G \
         testbed): the simulator's latencies follow the measured per-packet costs and a chosen 10 us link, and the \
         sweep's points below the maximum are far from saturation, so they queue little. The paper's own 50% row \
         has CAANS's std above libpaxos's (389.2 vs 145.4 us), so no std direction is drawn there. See {PAXOS_DOC}"
    );
    let detail = format!("ours {lo:.0}-{hi:.0} us at the points nearest each fraction");
    Ok(paxos_outcome(
        ran_on,
        (claims, sim),
        (why, ("Table 4", &detail)),
        (vec![png], vec![jsonl]),
        paxos_config_line(first, "the Figure 7a sweep's points nearest 25/50/75% of each deployment's max"),
    ))
}

/// Table 4's claims on `runs` (one sweep per seed): its 12 numbers, then
/// the directions the paper draws from them.
fn table4_claims(runs: &[Vec<PaxosResult>]) -> anyhow::Result<Vec<Claim>> {
    let t4s: Vec<_> = runs.iter().map(|rs| paxos_bench::table4(rs)).collect();
    let each_seed = |dp, f, stat| table4_each_seed(&t4s, dp, f, stat);
    let mean_of = |r: &PaxosResult| r.mean_latency_us;
    let std_of = |r: &PaxosResult| r.std_latency_us;
    // Table 4 of the paper: (fraction, CAANS mean, CAANS std, libpaxos mean, libpaxos std), us.
    let paper =
        [(0.25, 60.8, 38.4, 275.9, 92.7), (0.5, 582.5, 389.2, 637.4, 145.4), (0.75, 653.9, 385.1, 1800.1, 465.0)];
    // Each of the table's 12 numbers is compared once, by the verdict rule
    // (within 10%, on the mean over the seeds); then each direction the
    // paper draws from it, once, by more than the spread over the seeds:
    // the mean lower at every fraction, the std lower at 25% and 75% (at
    // 50% the paper's own std is higher for CAANS, 389.2 vs 145.4 us, so it
    // states no such direction there).
    let mut claims = vec![];
    let mut directions = vec![];
    for (f, cm, cs, lm, ls) in paper {
        let pct = f * 100.0;
        let t = |v: f64, what: &str| format!("{v} us ({what} at {pct:.0}% max, Table 4, Section 6.3)");
        let (sm, ss) = (each_seed(DataPlaneAt::Switch, f, mean_of)?, each_seed(DataPlaneAt::Switch, f, std_of)?);
        let (wm, ws) = (each_seed(DataPlaneAt::Process, f, mean_of)?, each_seed(DataPlaneAt::Process, f, std_of)?);
        for (who, stat, paper_us, ours_us) in [
            ("CAANS", "mean", cm, &sm),
            ("CAANS", "std", cs, &ss),
            ("libpaxos", "mean", lm, &wm),
            ("libpaxos", "std", ls, &ws),
        ] {
            claims.push(Claim::near_over_seeds(
                &format!("{who} {stat} latency, {pct:.0}%"),
                &t(paper_us, &format!("{who} {stat}")),
                paper_us,
                ours_us,
                "us",
            ));
        }
        let over = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(a, b)| ratio(*a, *b)).collect::<Vec<f64>>();
        directions.push(Claim::direction(
            &format!("mean latency at {pct:.0}%, CAANS / libpaxos"),
            &format!("{:.2}x ({cm} vs {lm} us, Table 4, Section 6.3)", cm / lm),
            None,
            &over(&sm, &wm),
            "x",
            1.0,
            false,
            "ours below 1 (CAANS lower)",
        ));
        if cs < ls {
            directions.push(Claim::direction(
                &format!("std of latency at {pct:.0}%, CAANS / libpaxos"),
                &format!("{:.2}x ({cs} vs {ls} us, Table 4, Section 6.3)", cs / ls),
                None,
                &over(&ss, &ws),
                "x",
                1.0,
                false,
                "ours below 1 (CAANS steadier)",
            ));
        }
    }
    claims.extend(directions);
    Ok(claims)
}

/// One figure of each seed's Table 4 (of `t4s`): `stat` of deployment
/// `dp` at the fraction `f` of its max throughput.
fn table4_each_seed(
    t4s: &[Vec<(DataPlaneAt, f64, PaxosResult)>],
    dp: DataPlaneAt,
    f: f64,
    stat: fn(&PaxosResult) -> f64,
) -> anyhow::Result<Vec<f64>> {
    t4s.iter()
        .map(|t| {
            t.iter()
                .find(|(d, x, _)| *d == dp && (*x - f).abs() < 1e-9)
                .map(|t| stat(&t.2))
                .ok_or_else(|| anyhow::anyhow!("no Table 4 point at {f}"))
        })
        .collect()
}

fn caans_fig7d(ctx: &Ctx) -> anyhow::Result<Outcome> {
    if ctx.runtime == Runtime::Xdp {
        return caans_fig7d_xdp(ctx);
    }
    // The simulator does not model LevelDB: live (docs/paxos.md); 1 s per point.
    let base = paxos_base(ctx, Runtime::Live);
    let points = [1, 4, 16, 64];
    let kv = paxos_bench::kv_sweep(&base, &points)?;
    let plain = paxos_bench::sweep(Runtime::Live, &base, &points)?;
    std::fs::create_dir_all(&ctx.out)?;
    let mut all = kv.clone();
    all.extend(plain.iter().cloned());
    let jsonl = write_records(ctx.out.join("paxos-kv.jsonl"), &all)?;
    let first = kv.first().ok_or_else(|| anyhow::anyhow!("empty kv sweep"))?;
    let mut series = by_deployment(&kv, Runtime::Live, |r| (r.committed_per_s, r.mean_latency_us));
    for (name, _) in &mut series {
        *name = format!("{name} + LevelDB");
    }
    let png = ctx.out.join("caans-fig7d-kv-throughput-latency.png");
    one_panel(
        &png,
        "Replicated LevelDB: throughput vs latency, requests in flight 1-64 (CAANS Fig. 7d)",
        &paxos_caption("Fig. 7d", first, "; LevelDB replicas as learners, live on loopback"),
        "commands committed per second",
        "mean latency (us)",
        series,
    )?;
    let max = |rs: &[PaxosResult], dp| {
        rs.iter().filter(|r| r.config.data_plane == dp).map(|r| r.committed_per_s).fold(0.0, f64::max)
    };
    let (ks, kw) = (max(&kv, DataPlaneAt::Switch), max(&kv, DataPlaneAt::Process));
    let ps = max(&plain, DataPlaneAt::Switch);
    let claims = fig7d_claims(ks, kw, ps);
    // Said whether or not the claims hold: a live ratio on a shared
    // machine moves from run to run.
    let why = Some(format!(
        "ours {:.2}x against the paper's 1.30x: live on loopback both deployments are user-space processes on the \
         same 2 cores (the socket load generator and the LevelDB replicas share them), so the hardware advantage \
         the paper measured cannot appear and the ratio is noise around what the two software paths cost (it \
         moves between runs); this is not the paper's FPGA result and we do not claim it. See \
         docs/paxos.md#the-replicated-key-value-store-figure-7d and {PAXOS_DOC}",
        ratio(ks, kw)
    ));
    Ok(Outcome {
        sim_headline: None,
        claims,
        why,
        obtained: Obtained::Live,
        plots: vec![png],
        records: vec![jsonl],
        ran_on: Runtime::Live,
        config: paxos_config_line(first, &format!("live on loopback, LevelDB replicas as learners, requests in flight {points:?}, and the same without LevelDB")),
    })
}

/// CAANS Figure 7d's claims on the max committed/s of CAANS with LevelDB
/// (`ks`), libpaxos with LevelDB (`kw`) and CAANS without it (`ps`).
fn fig7d_claims(ks: f64, kw: f64, ps: f64) -> Vec<Claim> {
    let s = "Section 6.3, Application overhead";
    vec![
        near(
            "max committed/s with LevelDB, CAANS / libpaxos",
            &format!("1.30x (CAANS 75,825 vs libpaxos 58,427 messages per second, {s})"),
            75825.0 / 58427.0,
            ratio(ks, kw),
            "x",
        ),
        rule(
            "CAANS max committed/s, with LevelDB / without",
            &format!(
                "0.57x (75,825 vs 134,094: \"the replicated application itself ... becomes the bottleneck\", {s})"
            ),
            Some(75825.0 / 134094.0),
            ratio(ks, ps),
            "x",
            ratio(ks, ps) < 1.0,
            "ours below 1 (LevelDB costs throughput)",
        ),
    ]
}

/// Figure 7d on the XDP data plane ([`crate::caans_xdp::kv_sweep`]): the
/// coordinator and the acceptors BPF programs, the learners LevelDB
/// key-value replicas; libpaxos-style processes with the same replicas
/// live; the live figure (both deployments processes on loopback) shown
/// beside, as the simulator's is for Figure 7a (the simulator does not
/// model LevelDB). Every run's replicas must have applied every command
/// once and be identical, or the result fails with the run that was not.
fn caans_fig7d_xdp(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let dir = std::env::temp_dir().join(format!("innet-reproduce-kv-xdp-{}", std::process::id()));
    let runs = crate::caans_xdp::kv_sweep(ctx, &dir)?;
    replicas_checked(&runs)?;
    std::fs::create_dir_all(&ctx.out)?;
    let jsonl = write_kv_xdp_records(fresh(ctx.out.join("paxos-kv-xdp.jsonl")), &runs)?;
    let s0 = runs.first().ok_or_else(|| anyhow::anyhow!("no Figure 7d run"))?;
    let first = &s0.xdp_kv.first().ok_or_else(|| anyhow::anyhow!("empty Figure 7d sweep"))?.result;
    let points =
        |rs: &[PaxosResult]| -> Vec<(f64, f64)> { rs.iter().map(|r| (r.committed_per_s, r.mean_latency_us)).collect() };
    let label = |dp| deployment_label(dp, Runtime::Xdp);
    let series = vec![
        (format!("{} + LevelDB", label(DataPlaneAt::Switch)), points(&s0.xdp_kv_results())),
        (format!("{} + LevelDB", label(DataPlaneAt::Process)), points(&s0.software_kv)),
        (format!("{} without LevelDB", label(DataPlaneAt::Switch)), points(&s0.xdp_plain)),
    ];
    let png = ctx.out.join("caans-fig7d-xdp-kv-throughput-latency.png");
    one_panel(
        &png,
        "Replicated LevelDB on the XDP data plane: throughput vs latency, requests in flight 1-64 (CAANS Fig. 7d)",
        &paxos_caption(
            "Fig. 7d",
            first,
            "; LevelDB replicas as learners; XDP testbed, libpaxos-style live on loopback",
        ),
        "commands committed per second",
        "mean latency (us)",
        series,
    )?;
    let claims = fig7d_xdp_claims(&runs);
    // The live figure beside (its records and plot too).
    let live = caans_fig7d(&Ctx { runtime: Runtime::Live, ..ctx.clone() })?;
    let source = "live on loopback, both deployments software processes";
    let beside: Vec<Claim> =
        live.claims.iter().filter(|c| !c.beside).map(|c| shown_beside(c.clone(), LIVE_FIGURE_BESIDE, source)).collect();
    let (ks, kw, ps) = (max_rate(&s0.xdp_kv_results()), max_rate(&s0.software_kv), max_rate(&s0.xdp_plain));
    let checked = runs.iter().map(|s| s.xdp_kv.len()).sum::<usize>();
    let replicas = first.config.learners;
    let detail = format!(
        "the learners are LevelDB key-value replicas (the replica `innet kv-replica` runs), user-space threads like \
         the other end hosts, applying the live Figure 7d's commands (puts over 64 keys, every 7th a delete, every \
         11th a get); first seed's max: XDP + LevelDB {ks:.0}/s, software processes + LevelDB {kw:.0}/s, XDP \
         without LevelDB {ps:.0}/s; in each of the {checked} XDP runs the {replicas} replicas applied every \
         committed command once, in the same instances, and hold the same store"
    );
    let config = paxos_config_line(
        first,
        &format!(
            "XDP testbed, LevelDB replicas as learners, requests in flight {:?}; libpaxos-style with the same \
             replicas live on loopback; XDP without LevelDB; {} seed(s); the live figure beside",
            crate::caans_xdp::KV_SWEEP,
            runs.len()
        ),
    );
    let mut plots = vec![png];
    plots.extend(live.plots);
    let mut records = vec![jsonl];
    records.extend(live.records);
    Ok(paxos_outcome(Runtime::Xdp, (claims, beside), (String::new(), ("Figure 7d", &detail)), (plots, records), config))
}

/// Fails naming the first run of `runs` whose replicas are not identical
/// or did not apply every committed command once.
fn replicas_checked(runs: &[crate::caans_xdp::KvSweep]) -> anyhow::Result<()> {
    for r in runs.iter().flat_map(|s| &s.xdp_kv) {
        anyhow::ensure!(
            r.identical && r.applied_once,
            "CAANS Figure 7d on XDP, {} in flight, seed {}: the replicas failed their check (identical: {}; every \
             committed command applied once: {}): {:?}",
            r.result.config.outstanding,
            r.result.config.seed,
            r.identical,
            r.applied_once,
            r.replicas
        );
    }
    Ok(())
}

/// Appends every run of `runs` to `jsonl` (as recorded); its path.
fn write_kv_xdp_records(jsonl: PathBuf, runs: &[crate::caans_xdp::KvSweep]) -> anyhow::Result<PathBuf> {
    for s in runs {
        let kv: Vec<crate::caans_xdp::KvRun> = s
            .xdp_kv
            .iter()
            .map(|r| crate::caans_xdp::KvRun { result: crate::caans_xdp::as_recorded(&r.result), ..r.clone() })
            .collect();
        results::append_jsonl(&jsonl, &kv)?;
        let others: Vec<PaxosResult> =
            s.software_kv.iter().chain(&s.xdp_plain).map(crate::caans_xdp::as_recorded).collect();
        results::append_jsonl(&jsonl, &others)?;
    }
    Ok(jsonl)
}

/// The highest committed/s of `rs`.
fn max_rate(rs: &[PaxosResult]) -> f64 {
    rs.iter().map(|r| r.committed_per_s).fold(0.0, f64::max)
}

/// Figure 7d's claims on the XDP runs (one sweep per seed): CAANS on XDP
/// against libpaxos-style processes, both with LevelDB replicas; CAANS
/// with LevelDB against CAANS without.
fn fig7d_xdp_claims(runs: &[crate::caans_xdp::KvSweep]) -> Vec<Claim> {
    let with = |s: &crate::caans_xdp::KvSweep| max_rate(&s.xdp_kv_results());
    let s = "Section 6.3, Application overhead";
    vec![
        Claim::near_over_seeds(
            "max committed/s with LevelDB, CAANS / libpaxos",
            &format!("1.30x (CAANS 75,825 vs libpaxos 58,427 messages per second, {s})"),
            75825.0 / 58427.0,
            &runs.iter().map(|r| ratio(with(r), max_rate(&r.software_kv))).collect::<Vec<_>>(),
            "x",
        ),
        Claim::direction(
            "CAANS max committed/s, with LevelDB / without",
            &format!(
                "0.57x (75,825 vs 134,094: \"the replicated application itself ... becomes the bottleneck\", {s})"
            ),
            Some(75825.0 / 134094.0),
            &runs.iter().map(|r| ratio(with(r), max_rate(&r.xdp_plain))).collect::<Vec<_>>(),
            "x",
            1.0,
            false,
            "ours below 1 (LevelDB costs throughput)",
        ),
    ]
}

/// Committed/s over `[from, to)` seconds of `r`'s timeline.
fn rate_between(r: &PaxosResult, from: f64, to: f64) -> f64 {
    let bin = r.timeline_bin_ms / 1e3;
    if bin <= 0.0 || to <= from {
        return 0.0;
    }
    let (a, b) = ((from / bin).floor() as usize, ((to / bin).floor() as usize).min(r.timeline.len()));
    if b <= a {
        return 0.0;
    }
    r.timeline[a..b].iter().sum::<u64>() as f64 / ((b - a) as f64 * bin)
}

/// The Figure 8 runs of each seed (acceptor 0 failing, then the
/// coordinator, at `fbase`'s midpoint, both deployments) on `ctx`'s
/// runtime; with `--xdp`, CAANS on the XDP testbed
/// ([`crate::caans_xdp::failures`]).
fn fig8_runs(ctx: &Ctx, fbase: &PaxosConfig) -> anyhow::Result<Vec<Vec<PaxosResult>>> {
    let runtime = sim_or_live(ctx);
    let half = fbase.duration_s / 2.0;
    let seeds = if ctx.runtime == Runtime::Xdp { crate::caans_xdp::seeds(ctx) } else { paxos_seeds(ctx, runtime) };
    let mut runs = vec![];
    for seed in seeds {
        let fbase = PaxosConfig { seed, ..fbase.clone() };
        runs.push(match (ctx.runtime, runtime) {
            (Runtime::Xdp, _) => crate::caans_xdp::failures(&fbase)?,
            (_, Runtime::Sim | Runtime::Xdp) => {
                let cfgs: Vec<PaxosConfig> = paxos_bench::DEPLOYMENTS
                    .iter()
                    .flat_map(|&dp| {
                        [(Some(half), None), (None, Some(half))].map(|(acc, coord)| {
                            measured(PaxosConfig {
                                data_plane: dp,
                                acceptor_crash_at_s: acc,
                                acceptor_restart_at_s: None,
                                coordinator_fail_at_s: coord,
                                ..fbase.clone()
                            })
                        })
                    })
                    .collect();
                innet_exp::run_parallel(&cfgs, innet_exp::paxos_sim::run_point_sim)
                    .into_iter()
                    .collect::<anyhow::Result<Vec<_>>>()?
            }
            (_, Runtime::Live) => paxos_bench::failures(runtime, &fbase)?,
        });
    }
    Ok(runs)
}

/// Figure 8's base configuration on `ctx`'s runtime: 8 requests in flight,
/// the failure at the midpoint.
fn fig8_base(ctx: &Ctx) -> PaxosConfig {
    let runtime = if ctx.runtime == Runtime::Sim { Runtime::Sim } else { Runtime::Live };
    PaxosConfig {
        outstanding: 8,
        duration_s: match runtime {
            Runtime::Sim | Runtime::Xdp => ctx.seconds(FIG8_SIM_SECONDS, 0.2),
            Runtime::Live => ctx.seconds(2.0, 1.0),
        },
        ..paxos_base(ctx, runtime)
    }
}

/// Figure 8's claims on `runs` (one list of failure runs per seed) of
/// `duration_s`, the failure at the midpoint.
fn fig8_claims(runs: &[Vec<PaxosResult>], duration_s: f64) -> anyhow::Result<Vec<Claim>> {
    let half = duration_s / 2.0;
    let find = |rs: &[PaxosResult], coord: bool| -> anyhow::Result<PaxosResult> {
        rs.iter()
            .find(|r| r.config.data_plane == DataPlaneAt::Switch && r.config.coordinator_fail_at_s.is_some() == coord)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("missing failure runs"))
    };
    let before = |r: &PaxosResult| rate_between(r, half * 0.5, half);
    let after_from = |r: &PaxosResult| half + r.failover_gap_ms.unwrap_or(0.0) / 1e3 + 0.05 * duration_s;
    let after_over_before = |r: &PaxosResult| ratio(rate_between(r, after_from(r), duration_s), before(r));
    let mut acc_x = vec![];
    let mut coord_x = vec![];
    for rs in runs {
        acc_x.push(after_over_before(&find(rs, false)?));
        coord_x.push(after_over_before(&find(rs, true)?));
    }
    let s = "Section 6.4";
    let mut resilient = Claim::direction(
        "CAANS committed/s after the software backup coordinator took over / before",
        &format!("resilient, with overhead (\"CAANS is resilient to the failure, although the software-coordinator adds additional processing overhead\", {s}, Fig. 8b)"),
        None,
        &coord_x,
        "x",
        1.0,
        false,
        "every seed recovers (above 0) and ours below 1 (the software coordinator costs)",
    );
    resilient.holds &= coord_x.iter().all(|x| *x > 0.0);
    Ok(vec![
        Claim::direction(
            "CAANS committed/s after acceptor 0 fails / before",
            &format!("increases (\"the throughput of CAANS increases after the loss of one acceptor\", {s}, Fig. 8a)"),
            None,
            &acc_x,
            "x",
            1.0,
            true,
            "ours above 1",
        ),
        resilient,
    ])
}

fn caans_fig8(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let ran_on = match ctx.runtime {
        Runtime::Xdp => Runtime::Xdp,
        _ => sim_or_live(ctx),
    };
    let fbase = fig8_base(ctx);
    let half = fbase.duration_s / 2.0;
    let runs = fig8_runs(ctx, &fbase)?;
    let rs = &runs[0];
    std::fs::create_dir_all(&ctx.out)?;
    let jsonl = write_records(ctx.out.join("paxos-failures.jsonl"), &runs.concat())?;
    let first = rs.first().ok_or_else(|| anyhow::anyhow!("no failure runs"))?;
    let timeline = |r: &PaxosResult| -> Vec<(f64, f64)> {
        let bin_s = r.timeline_bin_ms / 1e3;
        let per = (50.0 / r.timeline_bin_ms).round().max(1.0) as usize;
        r.timeline
            .chunks(per)
            .enumerate()
            .map(|(i, c)| ((i * per) as f64 * bin_s, c.iter().sum::<u64>() as f64 / (c.len() as f64 * bin_s)))
            .collect()
    };
    let panel = |coord: bool, title: &str| Panel {
        title: title.into(),
        x_label: "time (s)".into(),
        y_label: "values committed per second".into(),
        series: rs
            .iter()
            .filter(|r| r.config.coordinator_fail_at_s.is_some() == coord)
            .map(|r| (deployment_label(r.config.data_plane, ran_on).to_string(), timeline(r)))
            .collect(),
    };
    let png = ctx.out.join("caans-fig8-failures.png");
    plot::panels_png(
        &png,
        "Throughput over time, failure at the midpoint (CAANS Fig. 8)",
        &paxos_caption("Fig. 8", first, &format!("; 8 requests in flight; failure at {half} s, 50 ms bins")),
        &[
            panel(false, &format!("(a) acceptor 0 fails at {half} s")),
            panel(true, &format!("(b) coordinator fails at {half} s; software backup takes over")),
        ],
        2,
    )?;
    let sim = sim_beside(ctx, ran_on, |c| {
        let b = fig8_base(c);
        fig8_claims(&fig8_runs(c, &b)?, b.duration_s)
    })?;
    Ok(paxos_outcome(
        ran_on,
        (fig8_claims(&runs, fbase.duration_s)?, sim),
        (
            format!("see docs/paxos.md#coordinator-failover and {PAXOS_DOC}"),
            (
                "Figure 8",
                "acceptor 0's namespace, or the coordinator's, has every link set down at the midpoint (a switch's \
                 ports going dark); the backup coordinator is a user-space thread in the hosts namespace",
            ),
        ),
        (vec![png], vec![jsonl]),
        paxos_config_line(first, &format!("8 requests in flight, {} s runs, failure at {half} s", fbase.duration_s)),
    ))
}

// ---------------------------------------------------------------- NetCRAQ

const CHAIN_DOC: &str = "docs/chain.md#figures-3-6-in-the-simulator-innet-bench-chain";

/// Runs the configurations of chain figure `figure` (shared-CPU service
/// model, the paper's testbed) and writes their records and plots.
fn chain_run(ctx: &Ctx, figure: u32) -> anyhow::Result<(Vec<ChainBenchResult>, PathBuf, Vec<PathBuf>, f64)> {
    let duration_s = ctx.seconds(0.2, 0.03);
    let cfgs: Vec<_> = chain_bench::figure_configs("shared", duration_s, ctx.seed)
        .into_iter()
        .filter(|(_, c, _)| c.figure == figure)
        .collect();
    let rs = chain_bench::run_all(&cfgs, |_| {})?;
    let (jsonl, pngs) = chain_bench::write(&ctx.out, &rs)?;
    Ok((rs, jsonl, pngs, duration_s))
}

/// A NetCRAQ figure's outcome: its claims and why, the plots and records
/// [`chain_run`] wrote, run in the simulator.
fn chain_outcome(
    claims: Vec<Claim>,
    why: Option<String>,
    plots: Vec<PathBuf>,
    records: PathBuf,
    duration_s: f64,
    what: &str,
) -> Outcome {
    Outcome {
        sim_headline: None,
        claims,
        why,
        obtained: chain_obtained(),
        plots,
        records: vec![records],
        ran_on: Runtime::Sim,
        config: chain_config(duration_s, what),
    }
}

fn chain_config(duration_s: f64, what: &str) -> String {
    format!(
        "{what}; switches share one CPU (BMv2 on one machine): {} us per packet + {:.1} ns per header byte, queues of \
         {} packets, links 10 us, {duration_s} simulated s per point, max rate = largest rate answered at >= 95% \
         (simulator)",
        chain_bench::BMV2_PER_PACKET_US,
        chain_bench::BMV2_PER_BYTE_NS,
        chain_bench::BMV2_QUEUE_PACKETS
    )
}

fn chain_get(rs: &[ChainBenchResult], f: impl Fn(&ChainBenchResult) -> bool) -> f64 {
    rs.iter().find(|r| f(r)).map_or(0.0, |r| r.replies_per_s)
}

fn netcraq_fig3(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (rs, jsonl, pngs, d) = chain_run(ctx, 3)?;
    let at = |label: &str, dist: usize| {
        chain_get(&rs, |r| chain_bench::label(r) == label && r.config.nodes - 1 - r.config.read_targets[0] == dist)
    };
    let clean: Vec<f64> = (0..4).map(|x| at("netcraq", x)).collect();
    let flat = ratio(clean.iter().copied().fold(0.0, f64::max), clean.iter().copied().fold(f64::MAX, f64::min));
    let s = "Section IV-A";
    let claims = vec![
        near("clean reads to the head (distance 3), NetCRAQ / NetChain", &format!("4.08x (\"4.08x higher throughput for queries directed to the head of the chain\", {s})"), 4.08, ratio(at("netcraq", 3), at("netchain", 3)), "x"),
        Claim {
            calibration: true,
            spread: None,
            beside: false,
            rule: "none: BMV2_PER_BYTE_NS is calibrated from this number, so it cannot test the model".into(),
            ..near("dirty reads at the tail, NetCRAQ / NetChain", &format!("1.22x (\"NetCRAQ shows 22% higher throughput than NetChain\", {s})"), 1.22, ratio(at("netcraq-dirty", 0), at("netchain", 0)), "x")
        },
        near("dirty reads to the head, NetCRAQ / NetChain", &format!("1.105x (\"Here NetCRAQ is 10.5% faster\", {s})"), 1.105, ratio(at("netcraq-dirty", 3), at("netchain", 3)), "x"),
        near("NetCRAQ clean reads: max / min over distance 0-3", &format!("1.0x, unaffected (\"NetCRAQ's throughput appears unaffected by distance when the queried object is clean\", {s})"), 1.0, flat, "x"),
    ];
    let why = caveat(format!(
        "NetCRAQ's dirty reads go straight to the tail here (every pair of switches is linked, two passes), so \
             they beat NetChain by more than in the paper, whose Mininet topology makes a forwarded read cross the \
             intermediate switches; at the tail our NetChain read is 46 bytes, not 72. See {CHAIN_DOC}"
    ));
    Ok(chain_outcome(
        claims,
        why,
        pngs,
        jsonl,
        d,
        "4 nodes, reads to one node at distance 0-3 from the tail, clean and dirty objects",
    ))
}

fn netcraq_fig4(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (rs, jsonl, pngs, d) = chain_run(ctx, 4)?;
    let lat = |p: &str, rate: f64| {
        rs.iter()
            .find(|r| r.config.protocol == p && (r.offered_per_s - rate).abs() < 1.0)
            .map_or(0.0, |r| r.mean_latency_us)
    };
    let s = "Section IV-B";
    let text = |x: &str, q: &str| format!("{x} (\"{q}\", {s})");
    let mut claims: Vec<Claim> = [
        (5000.0, 100.0, "two orders of magnitude faster responses for 5k and 10k QPS"),
        (10_000.0, 100.0, "two orders of magnitude faster responses for 5k and 10k QPS"),
        (20_000.0, 1000.0, "three orders of magnitude for 20k QPS"),
    ]
    .into_iter()
    .map(|(rate, paper, q)| {
        let x = ratio(lat("netchain", rate), lat("netcraq", rate));
        rule(
            &format!("mean latency at {:.0}k reads/s, NetChain / NetCRAQ", rate / 1e3),
            &text(&format!("{paper}x"), q),
            Some(paper),
            x,
            "x",
            x >= paper / 10.0,
            "ours within an order of magnitude of the paper (at least a tenth of it)",
        )
    })
    .collect();
    let craq: Vec<f64> = rs.iter().filter(|r| r.config.protocol == "netcraq").map(|r| r.mean_latency_us).collect();
    let rise = ratio(craq.iter().copied().fold(0.0, f64::max), craq.iter().copied().fold(f64::MAX, f64::min));
    claims.push(rule(
        "NetCRAQ mean latency: highest / lowest over the offered rates",
        &text(
            "steady",
            "NetCRAQ shows a steady latency response that rises marginally with the number of read queries",
        ),
        None,
        rise,
        "x",
        rise <= 1.5,
        "ours at most 1.5",
    ));
    let why = caveat(format!(
        "ours {}: in our model NetChain is not yet saturated at 5-20k reads/s (it saturates a little above, \
             where its latency jumps to milliseconds), so the gap there is a few times, not orders of magnitude. \
             See {CHAIN_DOC}",
        claims.iter().take(3).map(|c| format!("{:.1}x", c.ours)).collect::<Vec<_>>().join(", ")
    ));
    Ok(chain_outcome(claims, why, pngs, jsonl, d, "4 nodes, reads spread over all nodes, offered 1k-75k reads/s"))
}

fn netcraq_fig5(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (rs, jsonl, pngs, d) = chain_run(ctx, 5)?;
    let get = |p: &str, w: f64| rs.iter().find(|r| r.config.protocol == p && (r.config.write_ratio - w).abs() < 1e-9);
    let reads = |p: &str, w: f64| get(p, w).map_or(0.0, |r| r.read_replies_per_s);
    let q = "\"NetCRAQ achieves more than double the read throughput for all write percentages\" (Section IV-C)";
    let mut claims: Vec<Claim> = [0.0, 0.25, 0.5, 0.75]
        .into_iter()
        .map(|w| {
            let x = ratio(reads("netcraq", w), reads("netchain", w));
            rule(
                &format!("read replies/s at the max rate, {:.0}% writes, NetCRAQ / NetChain", w * 100.0),
                &format!("more than 2x ({q})"),
                Some(2.0),
                x,
                "x",
                x > 2.0,
                "ours above 2",
            )
        })
        .collect();
    let dirty = |w| get("netcraq", w).map_or(0.0, |r| r.dirty_versions_per_s);
    let rise = ratio(dirty(0.75), dirty(0.25));
    claims.push(rule(
        "NetCRAQ dirty versions stored per s, 75% writes / 25%",
        "rising (\"the increasing amount of dirty commits as write percentage rises\", Section IV-C)",
        None,
        rise,
        "x",
        rise > 1.0,
        "ours above 1",
    ));
    let why = caveat(format!(
        "ours {} at 0/25/50/75% writes: in the model a NetCRAQ write costs one pass per node plus an ACK \
             processed by every other node (7 passes on 4 nodes) against NetChain's 4, so NetCRAQ's read advantage \
             shrinks as the write share grows. See {CHAIN_DOC}",
        claims.iter().take(4).map(|c| format!("{:.2}x", c.ours)).collect::<Vec<_>>().join(", ")
    ));
    Ok(chain_outcome(
        claims,
        why,
        pngs,
        jsonl,
        d,
        "4 nodes, reads spread over all nodes, writes to the head, 0-100% writes",
    ))
}

fn netcraq_fig6(ctx: &Ctx) -> anyhow::Result<Outcome> {
    let (rs, jsonl, pngs, d) = chain_run(ctx, 6)?;
    let at = |p: &str, n: usize| chain_get(&rs, |r| r.config.protocol == p && r.config.nodes == n);
    let s = "Section IV-D";
    let claims = vec![
        near("clean reads to the head, 8 nodes, NetCRAQ / NetChain", &format!("9.46x (\"The throughput difference can be up to 9.46x in favour of NetCRAQ, for the case of 8 chain nodes\", {s})"), 9.46, ratio(at("netcraq", 8), at("netchain", 8)), "x"),
        near("NetChain read rate, 8 nodes / 4 nodes", &format!("0.5x (\"in a chain of 8 nodes, the throughput of NetChain was reduced in half\", {s})"), 0.5, ratio(at("netchain", 8), at("netchain", 4)), "x"),
        near("NetCRAQ read rate, 8 nodes / 4 nodes", &format!("1.0x (\"the performance remains the same regardless of chain size\", {s})"), 1.0, ratio(at("netcraq", 8), at("netcraq", 4)), "x"),
    ];
    let why = caveat(format!("see {CHAIN_DOC}"));
    Ok(chain_outcome(claims, why, pngs, jsonl, d, "2-8 nodes, reads to the head"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_holds_within_the_tolerance_only() {
        assert!(near("x", "p", 1.5, 1.6, "x").holds);
        assert!(!near("x", "p", 1.5, 1.7, "x").holds);
        assert!(!near("x", "p", 0.0, 0.0, "x").holds);
    }

    #[test]
    fn every_entry_id_is_one_of_the_26() {
        for e in entries() {
            assert!(crate::registry::ALL_RESULTS.contains(&e.id), "{}", e.id);
        }
    }
}
