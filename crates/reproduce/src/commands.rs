//! The commands of the reproduction: `innet reproduce` (every result of
//! the four papers, regenerated into one folder, with a report setting the
//! papers' numbers beside ours), and the paper figures `innet bench txn
//! --figure` and `innet bench paxos --figure` regenerate: each one's flags
//! and the function the `innet` program calls, which prints its report.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use std::path::PathBuf;

use innet_exp::commands::paxos::{BenchPaxosArgs, RolesFigure};
use innet_exp::commands::txn::{BenchTxnArgs, TXN_FIGURES};
use innet_exp::paxos::PaxosConfig;

use crate::report::{self, Options, Progress};
use crate::Runtime;

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Report folder: one sub-folder per result, REPORT.md and REPORT.html.
    #[arg(long, default_value = "results/reproduce", value_parser = innet_exp::parse::out_dir)]
    out: std::path::PathBuf,
    /// Comma-separated result ids (e.g. gotthard-fig7,caans-fig8); default: all 26.
    #[arg(long, value_delimiter = ',')]
    only: Option<Vec<String>>,
    /// Run size: 1.0 fits all 26 in under 10 minutes on 2 cores; 0.05 is a quick look.
    #[arg(long, default_value_t = 1.0, value_parser = scale)]
    scale: f64,
    /// Base seed (every record carries it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run the results that have a live variant live on loopback (slower).
    #[arg(long, conflicts_with = "xdp")]
    live: bool,
    /// Run the results that have an XDP variant on the XDP testbed (root).
    #[arg(long)]
    xdp: bool,
    /// Measured costs the simulator uses (default: the checked-in
    /// crates/reproduce/measured-costs.json), e.g. a file --calibrate wrote.
    #[arg(long, value_name = "FILE")]
    costs: Option<std::path::PathBuf>,
    /// Measure the CAANS roles' costs on this machine (live user-space roles,
    /// BPF roles by BPF_PROG_TEST_RUN: root) into --costs-out and exit.
    #[arg(long)]
    calibrate: bool,
    /// --calibrate: seconds of the live run.
    #[arg(long, default_value_t = 4.0, value_parser = innet_exp::parse::seconds, requires = "calibrate")]
    calibrate_seconds: f64,
    /// --calibrate: single BPF_PROG_TEST_RUN runs per BPF entry.
    #[arg(long, default_value_t = 20_000, value_parser = innet_exp::parse::test_runs, requires = "calibrate")]
    calibrate_bpf_runs: u32,
    /// --calibrate: also take the store part from this output of
    /// tools/gotthard-reference/store_capacity.py (else it is kept).
    #[arg(long, value_name = "FILE", requires = "calibrate")]
    store_capacity: Option<std::path::PathBuf>,
    /// --calibrate: where to write the costs.
    #[arg(long, value_name = "FILE", default_value = crate::costs::COSTS_FILE, requires = "calibrate")]
    costs_out: std::path::PathBuf,
}

/// `innet reproduce --calibrate`: measures the CAANS roles' costs (and takes
/// the store's from store_capacity.py's output) into `a.costs_out`.
fn calibrate(a: &ReproduceArgs) -> anyhow::Result<i32> {
    use crate::costs::{self, MeasuredCosts};
    let mut c = match &a.costs {
        Some(p) => MeasuredCosts::load(p)?,
        None => MeasuredCosts::checked_in(),
    };
    println!(
        "measuring the CAANS roles: {} s live (every role a process), {} BPF_PROG_TEST_RUN runs per BPF entry",
        a.calibrate_seconds, a.calibrate_bpf_runs
    );
    c.paxos = crate::caans_roles::measure_paxos(a.calibrate_seconds, a.seed, a.calibrate_bpf_runs)?;
    if let Some(p) = &a.store_capacity {
        let text = std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("read {}: {e}", p.display()))?;
        c.store = costs::store_from_script(
            &text,
            "PYENV_VERSION=2.7.18 python2 tools/gotthard-reference/store_capacity.py --reference GOTTHARD_CHECKOUT",
        )?;
    }
    c.machine = costs::machine();
    c.save(&a.costs_out)?;
    println!("{}", c.paxos.sentence());
    println!("store: {}", c.store.sentence());
    println!("written to {}", a.costs_out.display());
    Ok(0)
}

fn scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 100.0 => Ok(v),
        _ => Err(format!("'{s}' is not a scale above 0 and at most 100")),
    }
}

pub fn run(a: ReproduceArgs) -> anyhow::Result<i32> {
    if a.calibrate {
        return calibrate(&a);
    }
    if let Some(p) = &a.costs {
        crate::costs::set_active(crate::costs::MeasuredCosts::load(p)?);
    }
    let opts = Options {
        out: a.out,
        only: a.only,
        scale: a.scale,
        seed: a.seed,
        runtime: if a.live {
            Runtime::Live
        } else if a.xdp {
            Runtime::Xdp
        } else {
            Runtime::Sim
        },
    };
    let entries = crate::entries();
    let chosen = report::select(&entries, &opts)?;
    let unregistered = unregistered(&entries, &opts);
    println!(
        "innet reproduce: {} results into {} (scale {}, seed {}, runtime {}){}",
        chosen.len(),
        opts.out.display(),
        opts.scale,
        opts.seed,
        opts.runtime.name(),
        if unregistered.is_empty() { String::new() } else { format!("; not registered: {}", unregistered.join(", ")) }
    );
    let started = Instant::now();
    // Each result's own sweep would draw its own bar or lines inside ours.
    innet_exp::progress::hide_nested(true);
    let mut bar = RunBar::new(&chosen, opts.scale);
    let ran = report::run(&chosen, &opts, |p| match p {
        Progress::Start { index, total, id, .. } => bar.start(index, total, id),
        Progress::Done { index, total, ran } => bar.done(index, done_line(index, total, ran)),
    });
    bar.finish();
    let wall = started.elapsed().as_secs_f64();
    let (md, html) = report::write_report(&opts, &entries, &ran, wall)?;
    let failed: Vec<&str> = ran.iter().filter(|r| r.outcome.is_err()).map(|r| r.id.as_str()).collect();
    println!(
        "{} results in {wall:.1} s: {}; {} failed{}; report: {} and {}",
        ran.len(),
        report::counts_line(&ran),
        failed.len(),
        if failed.is_empty() { String::new() } else { format!(" ({})", failed.join(", ")) },
        md.display(),
        html.display()
    );
    Ok(if failed.is_empty() { 0 } else { 1 })
}

/// The paper results `--only` asks for (all when absent) that no entry
/// runs yet.
fn unregistered(entries: &[crate::Entry], opts: &Options) -> Vec<&'static str> {
    crate::ALL_RESULTS
        .iter()
        .copied()
        .filter(|id| !entries.iter().any(|e| e.id == *id))
        .filter(|id| opts.only.as_ref().is_none_or(|o| o.iter().any(|x| x == id)))
        .collect()
}

/// The line printed when one result finishes: its verdict and first claim,
/// or why it failed.
fn done_line(index: usize, total: usize, ran: &report::Ran) -> String {
    match &ran.outcome {
        Ok(o) => {
            let c = &o.claims[0];
            format!(
                "[{}/{total}] {:<15} {:>6.1} s  {:<14}  {}: ours {} vs paper {}",
                index + 1,
                ran.id,
                ran.seconds,
                o.verdict().name(),
                c.what,
                report::fmt_value(c.ours, &c.unit),
                c.paper.map_or("(direction)".to_string(), |v| report::fmt_value(v, &c.unit))
            )
        }
        Err(e) => format!("[{}/{total}] {:<15} {:>6.1} s  FAILED: {e}", index + 1, ran.id, ran.seconds),
    }
}

/// The reproduction's progress: on a terminal a bar weighted by each
/// result's expected seconds, moved by a ticker thread while a result runs;
/// elsewhere plain lines.
struct RunBar {
    /// Each chosen result's budget, in tenths of its expected seconds.
    weights: Vec<u64>,
    /// The budgets of the results finished so far.
    done_weight: u64,
    bar: Option<indicatif::ProgressBar>,
    /// (budget done before the running result, its budget, when it started).
    current: Arc<Mutex<(u64, u64, Instant)>>,
    ticking: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl RunBar {
    fn new(chosen: &[&crate::Entry], scale: f64) -> RunBar {
        let weights: Vec<u64> =
            chosen.iter().map(|e| (report::expected_seconds(e.id) * scale * 10.0).ceil() as u64 + 1).collect();
        let bar = std::io::stdout().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new(weights.iter().sum());
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {percent}% ~{eta} left  {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        // The bar moves through each result's budget (tenths of its expected
        // seconds) as it runs, stopping short of its end until it finishes, so
        // the time left follows the real pace.
        let current: Arc<Mutex<(u64, u64, Instant)>> = Arc::new(Mutex::new((0, 0, Instant::now())));
        let ticking = Arc::new(AtomicBool::new(true));
        let ticker = bar.clone().map(|b| {
            let (current, ticking) = (current.clone(), ticking.clone());
            std::thread::spawn(move || {
                while ticking.load(Ordering::Relaxed) {
                    let (base, weight, since) = *current.lock().unwrap_or_else(|e| e.into_inner());
                    let inside = ((since.elapsed().as_secs_f64() * 10.0) as u64).min(weight.saturating_sub(1));
                    b.set_position(base + inside);
                    std::thread::sleep(Duration::from_millis(250));
                }
            })
        });
        RunBar { weights, done_weight: 0, bar, current, ticking, ticker }
    }

    fn start(&mut self, index: usize, total: usize, id: &str) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) =
            (self.done_weight, self.weights[index], Instant::now());
        if let Some(b) = &self.bar {
            b.set_message(format!("[{}/{total}] {id}", index + 1));
        }
    }

    fn done(&mut self, index: usize, line: String) {
        self.done_weight += self.weights[index];
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = (self.done_weight, 0, Instant::now());
        match &self.bar {
            Some(b) => {
                b.set_position(self.done_weight);
                b.println(line);
            }
            None => println!("{line}"),
        }
    }

    /// Stops the ticker and clears the bar.
    fn finish(self) {
        self.ticking.store(false, Ordering::Relaxed);
        if let Some(t) = self.ticker {
            let _ = t.join();
        }
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// A figure of `txn_locality` that `innet bench txn --figure` regenerates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TxnFigure {
    /// Gotthard Figure 11: throughput vs locality on two edge switches under a core.
    Fig11,
    /// NOCC Figure 3: aborts the store sends, and latency vs load.
    Nocc3,
    /// NOCC Figure 4: throughput and latency vs write ratio, and vs Zipf skew.
    Nocc4,
}

impl TxnFigure {
    /// Its `innet reproduce` id.
    pub fn id(self) -> &'static str {
        match self {
            TxnFigure::Fig11 => "gotthard-fig11",
            TxnFigure::Nocc3 => "nocc-fig3",
            TxnFigure::Nocc4 => "nocc-fig4",
        }
    }
}

/// Runs one figure into `out/<id>/` and prints its records, plot and the
/// paper's numbers beside ours.
fn run_txn_figure(f: TxnFigure, seed: u64, scale: f64, out: Option<PathBuf>) -> anyhow::Result<i32> {
    let out = out.unwrap_or_else(|| PathBuf::from("results/txn-figures"));
    let ctx = crate::Ctx { out: crate::result_dir(&out, f.id()), seed, scale, runtime: crate::Runtime::Sim };
    let started = Instant::now();
    let o = crate::txn_locality::run_by_id(f.id(), &ctx)?;
    println!("{} ({:.1} s wall): {}", f.id(), started.elapsed().as_secs_f64(), o.config);
    for c in &o.claims {
        let paper = c.paper.map_or("-".to_string(), |p| format!("{p}"));
        println!(
            "  {}: ours {:.3} {}, paper {} ({}); {} by rule: {}",
            c.what,
            c.ours,
            c.unit,
            paper,
            c.paper_text,
            if c.holds { "holds" } else { "DOES NOT HOLD" },
            c.rule
        );
    }
    if let Some(why) = &o.why {
        println!("  why: {why}");
    }
    for p in o.records.iter().chain(&o.plots) {
        println!("wrote {}", p.display());
    }
    Ok(0)
}

/// `innet bench txn --figure NAME`: one microbenchmark figure in the
/// simulator, its claims beside the paper's.
pub fn run_txn_figure_named(name: &str, a: &BenchTxnArgs) -> anyhow::Result<i32> {
    use crate::gotthard_micro;
    use crate::Ctx;
    anyhow::ensure!(a.runtime == Runtime::Sim, "--figure runs in the simulator only (drop --runtime live)");
    if let Ok(f) = <TxnFigure as clap::ValueEnum>::from_str(name, true) {
        return run_txn_figure(f, a.point.seed, a.scale, a.out.clone());
    }
    let entry = gotthard_micro::by_figure_name(name)
        .ok_or_else(|| anyhow::anyhow!("--figure {name}: not one of {}", TXN_FIGURES.join(", ")))?;
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from(format!("results/txn-sim/{}", entry.id)));
    innet_exp::results::check_writable(&out).map_err(anyhow::Error::msg)?;
    let ctx = Ctx { out: out.clone(), seed: a.point.seed, scale: a.scale, runtime: Runtime::Sim };
    let started = Instant::now();
    let o = (entry.run)(&ctx)?;
    gotthard_micro::print_outcome(&entry, &o, &out);
    println!("  {:.1} s wall", started.elapsed().as_secs_f64());
    Ok(0)
}

/// `bench paxos --figure`: one of CAANS Figures 2 and 7c.
pub fn run_paxos_figure(figure: RolesFigure, a: &BenchPaxosArgs) -> anyhow::Result<i32> {
    use crate::caans_roles::{self, Load};
    use crate::Ctx;
    let base = a.point.config()?;
    let defaults = PaxosConfig::default();
    let name = match figure {
        RolesFigure::Fig2 => "fig2",
        RolesFigure::Fig7c => "fig7c",
    };
    let ctx = Ctx {
        out: a.out.clone().unwrap_or_else(|| std::path::PathBuf::from(format!("results/paxos-{name}"))),
        seed: base.seed,
        scale: 1.0,
        runtime: if a.xdp { Runtime::Xdp } else { Runtime::Live },
    };
    innet_exp::results::check_writable(&ctx.out).map_err(anyhow::Error::msg)?;
    let mut load = Load::of(&ctx);
    if base.duration_s != defaults.duration_s {
        load.duration_s = base.duration_s;
    }
    if base.outstanding != defaults.outstanding {
        load.outstanding = base.outstanding;
    }
    println!(
        "CAANS Figure {}: CPU per role at peak load, {} s per deployment, 1 proposer x {} in flight, 3 acceptors, 2 learners",
        &name[3..],
        load.duration_s,
        load.outstanding
    );
    let (o, recs) = match figure {
        RolesFigure::Fig2 => caans_roles::fig2_with(&ctx, load)?,
        RolesFigure::Fig7c => caans_roles::fig7c_with(&ctx, load)?,
    };
    for line in caans_roles::summary(&o, &recs) {
        println!("{line}");
    }
    println!(
        "commit {}; records and plot in {}",
        recs.first().map_or("", |r| r.git_commit.as_str()),
        ctx.out.display()
    );
    Ok(0)
}

#[cfg(feature = "xdp")]
#[derive(clap::Args, Debug)]
pub struct BenchTable1Args {
    /// Single BPF_PROG_TEST_RUN runs per program (rounded up to 1,000s).
    #[arg(long, default_value_t = 200_000, value_parser = innet_exp::parse::test_runs)]
    runs: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output folder for caans-table1.jsonl and caans-table1.png.
    #[arg(long, default_value = "results/xdp", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
}

/// `innet bench xdp-paxos-table1`: CAANS Table 1 on this machine.
#[cfg(feature = "xdp")]
pub fn run_table1(a: BenchTable1Args) -> anyhow::Result<i32> {
    use crate::caans_roles;
    use crate::Ctx;
    anyhow::ensure!(a.runs >= 1, "--runs must be at least 1");
    let ctx = Ctx { out: a.out.clone(), seed: a.seed, scale: 1.0, runtime: Runtime::Xdp };
    let (o, t) = caans_roles::table1_with(&ctx, a.runs)?;
    let (pf, pa, pc) = caans_roles::PAPER_TABLE1_P4FPGA_US;
    let (sf, sa, sc) = caans_roles::PAPER_TABLE1_SDNET_US;
    println!(
        "CAANS Table 1: median ns per packet of {} single BPF_PROG_TEST_RUN runs per program (load average {})",
        t.runs, t.load_average
    );
    println!("{:<12} {:>10} {:>12} {:>14} {:>12}", "", "ours (ns)", "x forwarding", "P4FPGA (ns)", "SDNet (ns)");
    println!("{:<12} {:>10.0} {:>12} {:>14.0} {:>12.0}", "forwarding", t.forward_ns, "1.00", pf * 1e3, sf * 1e3);
    println!(
        "{:<12} {:>10.0} {:>12.2} {:>14.0} {:>12.0}",
        "acceptor",
        t.acceptor_ns,
        t.acceptor_over_forward,
        pa * 1e3,
        sa * 1e3
    );
    println!(
        "{:<12} {:>10.0} {:>12.2} {:>14.0} {:>12.0}",
        "coordinator",
        t.coordinator_ns,
        t.coordinator_over_forward,
        pc * 1e3,
        sc * 1e3
    );
    println!("{:<12} {:>10.0}   (xdp_pass: the measurement's floor)", "no-op", t.pass_ns);
    println!(
        "one run repeated in the kernel (mean): forwarding {:.1} ns, no-op {:.1} ns",
        t.forward_repeated_ns, t.pass_repeated_ns
    );
    for line in caans_roles::claim_lines(&o) {
        println!("{line}");
    }
    println!("commit {}; records and plot in {}", t.git_commit, a.out.display());
    Ok(0)
}
