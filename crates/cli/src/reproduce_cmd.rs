//! `innet reproduce`: every result of the four papers, regenerated into one
//! folder, with a report setting the papers' numbers beside ours.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use innet_reproduce::report::{self, Options, Progress};
use innet_reproduce::Where;

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Report folder: one sub-folder per result, REPORT.md and REPORT.html.
    #[arg(long, default_value = "results/reproduce", value_parser = innet_exp::parse::out_dir)]
    out: std::path::PathBuf,
    /// Comma-separated result ids (e.g. gotthard-fig7,caans-fig8); default: all 26.
    #[arg(long)]
    only: Option<String>,
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
    #[arg(long, default_value = innet_reproduce::costs::COSTS_FILE, requires = "calibrate")]
    costs_out: std::path::PathBuf,
}

/// `innet reproduce --calibrate`: measures the CAANS roles' costs (and takes
/// the store's from store_capacity.py's output) into `a.costs_out`.
fn calibrate(a: &ReproduceArgs) -> anyhow::Result<i32> {
    use innet_reproduce::costs::{self, MeasuredCosts};
    let mut c = match &a.costs {
        Some(p) => MeasuredCosts::load(p)?,
        None => MeasuredCosts::checked_in(),
    };
    println!(
        "measuring the CAANS roles: {} s live (every role a process), {} BPF_PROG_TEST_RUN runs per BPF entry",
        a.calibrate_seconds, a.calibrate_bpf_runs
    );
    c.paxos = costs::measure_paxos(a.calibrate_seconds, a.seed, a.calibrate_bpf_runs)?;
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
        innet_reproduce::costs::set_active(innet_reproduce::costs::MeasuredCosts::load(p)?);
    }
    let opts = Options {
        out: a.out,
        only: a.only.map(|s| s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect()),
        scale: a.scale,
        seed: a.seed,
        runtime: if a.live {
            Where::Live
        } else if a.xdp {
            Where::Xdp
        } else {
            Where::Sim
        },
    };
    let entries = innet_reproduce::entries();
    let chosen = report::select(&entries, &opts)?;
    let unregistered: Vec<&str> = innet_reproduce::ALL_RESULTS
        .iter()
        .copied()
        .filter(|id| !entries.iter().any(|e| e.id == *id))
        .filter(|id| opts.only.as_ref().is_none_or(|o| o.iter().any(|x| x == id)))
        .collect();
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
    let tty = std::io::stdout().is_terminal();
    let weights: Vec<u64> =
        chosen.iter().map(|e| (report::expected_seconds(e.id) * opts.scale * 10.0).ceil() as u64 + 1).collect();
    let bar = tty.then(|| {
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
    let mut done_weight = 0u64;
    let ran = report::run(&chosen, &opts, |p| match p {
        Progress::Start { index, total, id, .. } => {
            *current.lock().unwrap_or_else(|e| e.into_inner()) = (done_weight, weights[index], Instant::now());
            if let Some(b) = &bar {
                b.set_message(format!("[{}/{total}] {id}", index + 1));
            }
        }
        Progress::Done { index, total, ran } => {
            done_weight += weights[index];
            *current.lock().unwrap_or_else(|e| e.into_inner()) = (done_weight, 0, Instant::now());
            let line = match &ran.outcome {
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
            };
            match &bar {
                Some(b) => {
                    b.set_position(done_weight);
                    b.println(line);
                }
                None => println!("{line}"),
            }
        }
    });
    ticking.store(false, Ordering::Relaxed);
    if let Some(t) = ticker {
        let _ = t.join();
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
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
