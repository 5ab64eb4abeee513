//! `innet bench tpcc` (Gotthard Figures 13 and 14, NOCC Figure 5, in the
//! simulator or live), `innet client tpcc --load` (TPC-C terminals against
//! a live switch, the store loaded over the wire and checked after) and
//! `innet check tpcc` (random faulty TPC-C runs, with forged replies,
//! through the serializability checker and TPC-C's consistency conditions).

use std::path::PathBuf;
use std::time::Instant;

use crate::tpcc_bench::{self, Figure};
use crate::tpcc_sim::{self, TpccConfig, TpccResult};
use crate::Runtime;
use clap::Args;
use innet_tpcc::Kind;
use innet_txn::Mode;

#[derive(Args, Debug)]
pub struct BenchTpccArgs {
    /// Where to run: the simulator (default) or live over UDP on loopback
    /// (store and switch in this process, the store loaded over the wire).
    #[arg(long, value_enum, default_value = "sim")]
    runtime: Runtime,
    /// Which figure: fig13 (Gotthard Figure 13), fig14 (Gotthard Figure 14),
    /// nocc5 (NOCC Figure 5), or all of them.
    #[arg(long, default_value = "fig13")]
    figure: String,
    /// Comma-separated modes to compare [default: the paper's for the figure].
    #[arg(long, value_delimiter = ',', value_parser = crate::parse::mode())]
    modes: Option<Vec<Mode>>,
    /// Output folder for tpcc-<figure>.jsonl and tpcc-<figure>.png [default: results/tpcc-<runtime>].
    #[arg(long, value_parser = crate::parse::out_dir)]
    out: Option<PathBuf>,
    #[command(flatten)]
    point: TpccConfig,
}

/// `innet client tpcc --load`: TPC-C terminals against a live switch.
#[derive(Args, Debug)]
pub struct ClientTpccArgs {
    /// The switch (or store) to send to, HOST:PORT.
    #[arg(long, value_parser = super::parse_addr)]
    to: std::net::SocketAddr,
    /// Run the closed-loop terminals (the only thing this command does; the
    /// flag mirrors `innet client txn --load`).
    #[arg(long, required = true)]
    load: bool,
    /// The store itself, HOST:PORT, if reachable: loading, CPU_PCT queries
    /// and the read-back go there directly [default: through --to].
    #[arg(long, value_parser = super::parse_addr)]
    store: Option<std::net::SocketAddr>,
    /// Terminals.
    #[arg(long, default_value_t = 8, value_parser = crate::parse::clients)]
    clients: u32,
    #[arg(long, default_value_t = 1)]
    warehouses: u32,
    /// Districts per warehouse.
    #[arg(long, default_value_t = 2)]
    districts: u32,
    /// Customers per district.
    #[arg(long, default_value_t = 10)]
    customers: u32,
    #[arg(long, default_value_t = 50)]
    items: u32,
    /// Seconds to run.
    #[arg(long, default_value_t = 10.0, value_parser = crate::parse::seconds)]
    duration_s: f64,
    /// Seed of the initial database and the terminals' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// One transaction type instead of the mix.
    #[arg(long, value_parser = Kind::parse)]
    only: Option<Kind>,
    /// Do not write the initial database (the store already holds one of this scale).
    #[arg(long)]
    no_populate: bool,
    /// One-way client <-> switch delay each terminal emulates, ms.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
    client_delay_ms: f64,
    /// Resend timeout, ms.
    #[arg(long, default_value_t = 1000.0, value_parser = crate::parse::timeout_ms)]
    timeout_ms: f64,
    /// Resends of one request before giving up.
    #[arg(long, default_value_t = 5)]
    max_resends: u32,
    /// Commit attempts of one transaction before the terminal gives up.
    #[arg(long, default_value_t = 1000)]
    retry_limit: u32,
    /// First terminal's client id [default: a fresh one, since a store
    /// remembers client ids and their last request across runs].
    #[arg(long)]
    client_id: Option<u32>,
}

/// Runs `innet client tpcc`: prints the run's record as JSON; exit status
/// 0 if something committed and every consistency condition holds.
pub fn run_client(a: ClientTpccArgs) -> anyhow::Result<i32> {
    let ms = |v: f64| std::time::Duration::from_secs_f64(v / 1e3);
    let mut sending = crate::tpcc_live::LiveSending::new(a.to);
    sending.client_delay = ms(a.client_delay_ms);
    sending.timeout = ms(a.timeout_ms);
    sending.max_resends = a.max_resends;
    let point = TpccConfig {
        clients: a.clients,
        warehouses: a.warehouses,
        districts: a.districts,
        customers: a.customers,
        items: a.items,
        duration_s: a.duration_s,
        seed: a.seed,
        only: a.only,
        retry_limit: a.retry_limit,
        ..TpccConfig::default()
    };
    anyhow::ensure!(a.load, "innet client tpcc runs the terminals: add --load");
    let run = crate::tpcc_live::ClientRun {
        sending,
        store: a.store,
        first_client_id: a.client_id.unwrap_or_else(|| innet_live::txn::fresh_client_id_base(a.clients + 1)),
        point,
        populate: !a.no_populate,
    };
    let stop = innet_live::stop_on_signals()?;
    let r = crate::tpcc_live::client_run(&run, &stop)?;
    let mut json = serde_json::to_value(&r)?;
    json["target"] = a.to.to_string().into();
    json["first_client_id"] = run.first_client_id.into();
    json["populated"] = run.populate.into();
    json["interrupted"] = stop.is_stopped().into();
    super::print_line(&json.to_string());
    let committed: u64 = r.per_type.values().map(|t| t.totals.committed).sum();
    Ok(if committed > 0 && r.consistency_violations.is_empty() { 0 } else { 1 })
}

fn figures(s: &str) -> anyhow::Result<Vec<Figure>> {
    if s == "all" {
        return Ok(Figure::ALL.to_vec());
    }
    s.split(',')
        .map(|f| {
            Figure::ALL
                .into_iter()
                .find(|x| x.name() == f.trim())
                .ok_or_else(|| anyhow::anyhow!("unknown figure '{f}': expected fig13, fig14, nocc5 or all"))
        })
        .collect()
}

pub fn run_bench(a: BenchTpccArgs) -> anyhow::Result<i32> {
    a.point.validate().map_err(anyhow::Error::msg)?;
    let figs = figures(&a.figure)?;
    let base = bench_base(&a);
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from(format!("results/tpcc-{}", a.runtime.name())));
    crate::results::check_writable(&out).map_err(anyhow::Error::msg)?;
    let stop = innet_live::stop_on_signals()?;
    let mut bad = 0;
    for fig in figs {
        let modes: Vec<Mode> = match &a.modes {
            Some(m) => m.clone(),
            None => tpcc_bench::default_modes(fig),
        };
        let cfgs = tpcc_bench::configs(fig, &base, &modes);
        print_bench_header(fig, cfgs.len(), a.runtime, &base);
        let wall = Instant::now();
        let live = a.runtime == Runtime::Live;
        let rs = tpcc_bench::run(a.runtime, &cfgs, &stop, |r| {
            if live {
                println!(
                    "  {} {:?} clients {} delta {}: {:.1} committed/s, store CPU {:?}%",
                    r.config.mode,
                    r.config.only.map(|k| k.name()),
                    r.config.clients,
                    r.config.delta,
                    r.committed_per_s,
                    r.store_cpu_pct.map(|c| (c * 10.0).round() / 10.0)
                );
            }
        })?;
        match fig {
            Figure::Fig13 => print_fig13(&rs),
            Figure::Fig14 => print_fig14(&rs, &base),
            Figure::Nocc5 => print_nocc5(&rs),
        }
        let bad_here = print_violations(&rs);
        bad += bad_here;
        println!("TPC-C consistency conditions: {} of {} runs hold all", rs.len() - bad_here.min(rs.len()), rs.len());
        let (jsonl, png) = tpcc_bench::write(fig, &base, &rs, &out)?;
        println!("wrote {} and {} ({:.1} s wall)", jsonl.display(), png.display(), wall.elapsed().as_secs_f64());
    }
    Ok(if bad == 0 { 0 } else { 1 })
}

/// The point every figure varies: the flags', except that a live run left
/// at the simulator's RTT and duration gets a short, nearer deployment.
fn bench_base(a: &BenchTpccArgs) -> TpccConfig {
    let mut base = a.point.clone();
    let defaults = TpccConfig::default();
    if a.runtime == Runtime::Live && base.duration_s == defaults.duration_s && base.rtt_ms == defaults.rtt_ms {
        // Live runs take real time: default to a short, nearer deployment.
        base.rtt_ms = 20.0;
        base.duration_s = 10.0;
        println!("live runtime: using RTT 20 ms and 10 s per point (set --rtt-ms/--duration-s to change)");
    }
    base
}

/// The line that opens a figure: its size and the point's settings.
fn print_bench_header(fig: Figure, points: usize, runtime: Runtime, p: &TpccConfig) {
    println!(
        "TPC-C {} ({} points, {} runtime): {} warehouse(s), {} districts, {} customers/district, {} items; \
         {} terminals, RTT {} ms, delta {}, {} s per point, seed {}, store {} us/packet (simulator), load {}",
        fig.name(),
        points,
        runtime.name(),
        p.warehouses,
        p.districts,
        p.customers,
        p.items,
        p.clients,
        p.rtt_ms,
        p.delta,
        p.duration_s,
        p.seed,
        p.store_us_per_packet,
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
}

/// Prints every run of `rs` whose TPC-C consistency conditions fail; their
/// number.
fn print_violations(rs: &[TpccResult]) -> usize {
    let mut bad = 0;
    for r in rs.iter().filter(|r| !r.consistency_violations.is_empty()) {
        bad += 1;
        println!(
            "CONSISTENCY VIOLATED in {} {:?} clients {} delta {}: {:?}",
            r.config.mode,
            r.config.only,
            r.config.clients,
            r.config.delta,
            &r.consistency_violations[..5.min(r.consistency_violations.len())]
        );
    }
    bad
}

fn print_fig13(rs: &[TpccResult]) {
    let table = tpcc_bench::fig13_table(rs);
    println!(
        "committed/s of each type run alone (mean latency ms), their mix-weighted mean, the mix itself, store CPU %:"
    );
    print!("{:<18} {:>9}", "mode", "weighted");
    for k in Kind::ALL {
        print!(" {:>14}", k.name());
    }
    println!(" {:>10} {:>9}", "mix total", "store CPU");
    let lat = |m: Mode, k: Kind| {
        rs.iter()
            .find(|r| r.config.mode == m.name() && r.config.only == Some(k))
            .map_or(0.0, |r| r.per_type[k.name()].mean_latency_ms)
    };
    for (m, weighted, solo) in &table {
        print!("{:<18} {:>9.2}", m.name(), weighted);
        for (k, v) in Kind::ALL.iter().zip(solo) {
            print!(" {:>7.2} ({:>4.0})", v, lat(*m, *k));
        }
        let mix = rs.iter().find(|r| r.config.mode == m.name() && r.config.only.is_none());
        println!(
            " {:>10.2} {:>9.3}",
            mix.map_or(0.0, |r| r.committed_per_s),
            mix.and_then(|r| r.store_cpu_pct).unwrap_or(0.0)
        );
    }
    let get = |m: Mode| table.iter().find(|(x, _, _)| *x == m);
    if let (Some(oa), Some(rc)) = (get(Mode::OptimisticAbort), get(Mode::ReadCache)) {
        let r = |i: usize| oa.2[i] / rc.2[i].max(1e-9);
        println!(
            "optimistic-abort / read-cache: payment {:.2}x (paper: about 2x), order-status {:.2}x (paper: 1.1x), \
             new-order {:.2}x, delivery {:.2}x, stock-level {:.2}x, weighted {:.2}x",
            r(1),
            r(2),
            r(0),
            r(3),
            r(4),
            oa.1 / rc.1.max(1e-9)
        );
    }
}

fn print_fig14(rs: &[TpccResult], base: &TpccConfig) {
    println!("committed/s (mean latency ms) of Payment and Order-Status alone, by mode:");
    for k in [Kind::Payment, Kind::OrderStatus] {
        for vs_delta in [true, false] {
            let xs: Vec<f64> = if vs_delta {
                tpcc_bench::FIG14_DELTAS.to_vec()
            } else {
                tpcc_bench::FIG14_CLIENTS.iter().map(|&c| c as f64).collect()
            };
            println!("{} vs {}:", k.name(), if vs_delta { "delta" } else { "clients" });
            for m in Mode::ALL {
                let row: Vec<String> = xs
                    .iter()
                    .filter_map(|&x| {
                        rs.iter().find(|r| {
                            r.config.mode == m.name()
                                && r.config.only == Some(k)
                                && if vs_delta {
                                    r.config.delta == x && r.config.clients == base.clients
                                } else {
                                    r.config.clients as f64 == x && r.config.delta == base.delta
                                }
                        })
                    })
                    .map(|r| {
                        let t = &r.per_type[k.name()];
                        format!("{:.1} ({:.0})", t.committed_per_s, t.mean_latency_ms)
                    })
                    .collect();
                if !row.is_empty() {
                    println!("  {:<17} {}", m.name(), row.join("  "));
                }
            }
        }
    }
}

fn print_nocc5(rs: &[TpccResult]) {
    println!("clients   OCC Payments/s  NOCC Payments/s  ratio   OCC store CPU %  NOCC store CPU %  NOCC lower by");
    for (c, occ, nocc, occ_cpu, nocc_cpu) in tpcc_bench::nocc5_table(rs) {
        println!(
            "{c:>7} {occ:>16.1} {nocc:>16.1} {:>6.2}x {occ_cpu:>16.1} {nocc_cpu:>17.1} {:>13.1}%",
            nocc / occ.max(1e-9),
            (1.0 - nocc_cpu / occ_cpu.max(1e-9)) * 100.0
        );
    }
    println!("(paper, NOCC section 4: NOCC store CPU up to 22% lower than OCC, slightly higher throughput)");
}

pub fn run_check(a: super::CheckModesArgs) -> anyhow::Result<i32> {
    let modes = a.modes.clone();
    let (seeds, verbose) = a.seeds.range(super::CHECK_TPCC_SEEDS);
    let wall = Instant::now();
    let jobs = seeds.iter().flat_map(|s| modes.iter().map(move |&m| tpcc_sim::random_check_config(s, m, a.duration_s)));
    let progress = crate::progress::Progress::new(seeds.count.saturating_mul(modes.len() as u64), "check tpcc");
    let mut violations = 0;
    let mut runs = 0u64;
    let (mut commits, mut switch_answers, mut store_commits) = (0u64, 0usize, 0usize);
    let mut per_kind = std::collections::BTreeMap::new();
    crate::run_parallel_each(
        jobs,
        &progress,
        |c| format!("seed {} {}", c.seed, c.mode),
        tpcc_sim::run_checked,
        |cfg, run| -> anyhow::Result<()> {
            let run = run.map_err(|e| anyhow::anyhow!("{e}"))?;
            runs += 1;
            if verbose {
                println!("{}", serde_json::to_string(cfg).unwrap_or_default());
            }
            commits += run.committed;
            for (k, n) in &run.per_kind {
                *per_kind.entry(k.name()).or_insert(0u64) += n;
            }
            if let Ok(s) = &run.serializable {
                switch_answers += s.switch_answers_checked;
                store_commits += s.store_commits;
            }
            if !run.ok() {
                violations += 1;
                println!("VIOLATION seed {} mode {}:", cfg.seed, cfg.mode);
                let errs = run.serializable.as_ref().err().cloned().unwrap_or_default();
                for e in errs.iter().chain(&run.consistency).take(if verbose { usize::MAX } else { 5 }) {
                    println!("  {e}");
                }
                println!(
                    "  replay: innet check tpcc --seed {} --modes {} --duration-s {}",
                    cfg.seed, cfg.mode, a.duration_s
                );
            }
            // Determinism: the first job again must give the same trace.
            if runs == 1 {
                let again = tpcc_sim::run_checked(cfg).map_err(anyhow::Error::msg)?;
                let traced = || tpcc_sim::run_traced(cfg);
                if let Some(why) =
                    crate::nondeterminism(run.trace_hash, again.trace_hash, traced).map_err(anyhow::Error::msg)?
                {
                    violations += 1;
                    println!("NONDETERMINISM seed {} mode {}: {why}", cfg.seed, cfg.mode);
                }
            }
            Ok(())
        },
    )?;
    progress.finish();
    println!(
        "checked {} TPC-C runs ({} seeds x {} modes, {} s simulated each, loss/dup/reorder/jitter on) in {:.1} s: \
         {commits} transactions committed {per_kind:?}, {store_commits} store commits, {switch_answers} switch answers \
         verified serializable; consistency conditions checked after every run; {violations} violations",
        runs,
        seeds.count,
        modes.len(),
        a.duration_s,
        wall.elapsed().as_secs_f64(),
    );
    Ok(if violations == 0 { 0 } else { 1 })
}
