//! The TPC-C figures: Gotthard Figure 13 (committed/s per transaction type
//! run alone, per switch mode, and their mix-weighted mean), Gotthard
//! Figure 14 (Payment and Order-Status against the delta ratio and against
//! the number of clients: throughput and latency) and NOCC Figure 5 (TPC-C
//! Payment throughput and store CPU against contention, OCC = forward,
//! NOCC = optimistic-abort), as sweeps over [`TpccConfig`] points and their
//! plots. Every record carries its configuration, seed and git commit.

use std::path::{Path, PathBuf};

use innet_live::Stop;
use innet_txn::Mode;

use crate::plot::{bars_png, panels_png, Panel};
use crate::tpcc_sim::{self, TpccConfig, TpccResult};
use crate::{results, tpcc_live, Runtime};
use innet_tpcc::Kind;

/// Which figure a sweep regenerates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Figure {
    /// Gotthard Figure 13: per type alone, per mode, and the weighted mean.
    Fig13,
    /// Gotthard Figure 14: Payment and Order-Status vs delta and vs clients.
    Fig14,
    /// NOCC Figure 5: Payment throughput and store CPU vs clients.
    Nocc5,
}

impl Figure {
    pub const ALL: [Figure; 3] = [Figure::Fig13, Figure::Fig14, Figure::Nocc5];
    pub fn name(self) -> &'static str {
        match self {
            Figure::Fig13 => "fig13",
            Figure::Fig14 => "fig14",
            Figure::Nocc5 => "nocc5",
        }
    }
}

/// Gotthard Figure 14's delta ratios.
pub const FIG14_DELTAS: [f64; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
/// Gotthard Figure 14's client counts (the paper: the others saturate at
/// 8 (Payment) and 4 (Order-Status) clients, Gotthard scales to 10 and beyond).
pub const FIG14_CLIENTS: [u32; 10] = [1, 2, 4, 6, 8, 10, 12, 16, 20, 24];
/// The modes of Gotthard Figures 13 and 14 ("the three switch approaches").
pub const GOTTHARD_MODES: [Mode; 3] = [Mode::Forward, Mode::ReadCache, Mode::OptimisticAbort];
/// NOCC Figure 5's contention axis: the number of Payment clients (NOCC's
/// Figure 1 goes to 40 clients).
pub const NOCC5_CLIENTS: [u32; 9] = [1, 2, 4, 8, 12, 16, 24, 32, 40];
/// NOCC's testbed as a network (docs/tpcc.md, "NOCC Figure 5"): clients and
/// store on two machines one top-of-rack switch apart, so the switch is
/// midway (delta 0.5); RTT 1 ms (the paper gives none).
pub const NOCC5_RTT_MS: f64 = 1.0;
pub const NOCC5_DELTA: f64 = 0.5;
/// Simulated seconds per NOCC Figure 5 point (thousands of transactions each).
pub const NOCC5_DURATION_S: f64 = 10.0;

/// The points of `figure` around `base` (its scale, network and seed).
pub fn configs(figure: Figure, base: &TpccConfig, modes: &[Mode]) -> Vec<TpccConfig> {
    let mut out = vec![];
    match figure {
        Figure::Fig13 => {
            for m in modes {
                for only in std::iter::once(None).chain(Kind::ALL.map(Some)) {
                    out.push(TpccConfig { mode: m.name().into(), only, ..base.clone() });
                }
            }
        }
        Figure::Fig14 => {
            for m in modes {
                for k in [Kind::Payment, Kind::OrderStatus] {
                    let p = TpccConfig { mode: m.name().into(), only: Some(k), ..base.clone() };
                    for d in FIG14_DELTAS {
                        out.push(TpccConfig { delta: d, ..p.clone() });
                    }
                    for c in FIG14_CLIENTS.into_iter().filter(|&c| c != base.clients) {
                        out.push(TpccConfig { clients: c, ..p.clone() });
                    }
                }
            }
        }
        Figure::Nocc5 => {
            for m in modes {
                for c in NOCC5_CLIENTS {
                    out.push(TpccConfig {
                        mode: m.name().into(),
                        only: Some(Kind::Payment),
                        clients: c,
                        items: 10,
                        rtt_ms: NOCC5_RTT_MS,
                        delta: NOCC5_DELTA,
                        duration_s: base.duration_s.min(NOCC5_DURATION_S),
                        ..base.clone()
                    });
                }
            }
        }
    }
    out
}

/// The default modes of `figure`: the paper's.
pub fn default_modes(figure: Figure) -> Vec<Mode> {
    match figure {
        Figure::Fig13 => Mode::ALL.to_vec(),
        Figure::Fig14 => GOTTHARD_MODES.to_vec(),
        Figure::Nocc5 => vec![Mode::Forward, Mode::OptimisticAbort],
    }
}

/// Runs `cfgs` (the simulator in parallel, live one after the other),
/// calling `each` with every result.
pub fn run(
    runtime: Runtime,
    cfgs: &[TpccConfig],
    stop: &Stop,
    mut each: impl FnMut(&TpccResult),
) -> anyhow::Result<Vec<TpccResult>> {
    let rs: Vec<TpccResult> = match runtime {
        Runtime::Xdp => return Err(Runtime::no_xdp("none (TPC-C runs in the simulator or live)")),
        Runtime::Sim => {
            let progress = crate::progress::Progress::new(cfgs.len() as u64, "bench tpcc");
            let name = |c: &TpccConfig| format!("{} seed {}", c.mode, c.seed);
            let rs = crate::run_parallel_shown(cfgs, &progress, name, tpcc_sim::run_point);
            progress.finish();
            rs.into_iter().collect::<anyhow::Result<Vec<_>>>()?
        }
        Runtime::Live => {
            let progress = crate::progress::Progress::new(cfgs.len() as u64, "bench tpcc (live)");
            let mut out = vec![];
            for c in cfgs {
                if stop.is_stopped() {
                    break;
                }
                let r = tpcc_live::run_point_live(c, stop)?;
                progress.suspend(|| each(&r));
                progress.step(format_args!("{} seed {}", c.mode, c.seed));
                out.push(r);
            }
            progress.finish();
            return Ok(out);
        }
    };
    rs.iter().for_each(&mut each);
    Ok(rs)
}

fn per_s(r: &TpccResult, k: Kind) -> f64 {
    r.per_type.get(k.name()).map_or(0.0, |t| t.committed_per_s)
}

fn latency(r: &TpccResult, k: Kind) -> f64 {
    r.per_type.get(k.name()).map_or(0.0, |t| t.mean_latency_ms)
}

/// The modes present in `rs`, in the usual order.
fn modes_of(rs: &[TpccResult]) -> Vec<Mode> {
    Mode::ALL.into_iter().filter(|m| rs.iter().any(|r| r.config.mode == m.name())).collect()
}

/// The result of `mode` running `k` alone with `f` true of its config.
fn find(rs: &[TpccResult], mode: Mode, k: Kind, f: impl Fn(&TpccConfig) -> bool) -> Option<&TpccResult> {
    rs.iter().find(|r| r.config.mode == mode.name() && r.config.only == Some(k) && f(&r.config))
}

/// Figure 13's numbers: per mode, the weighted mean of the per-type rates
/// and each type's committed/s when run alone.
pub fn fig13_table(rs: &[TpccResult]) -> Vec<(Mode, f64, Vec<f64>)> {
    modes_of(rs)
        .into_iter()
        .map(|m| {
            let solo: Vec<f64> =
                Kind::ALL.iter().map(|&k| find(rs, m, k, |_| true).map_or(0.0, |r| per_s(r, k))).collect();
            let weighted = Kind::ALL.iter().zip(&solo).map(|(k, v)| v * k.weight() as f64 / 100.0).sum();
            (m, weighted, solo)
        })
        .collect()
}

fn network_caption(r: &TpccResult) -> String {
    let c = &r.config;
    format!(
        "{} runtime; scale {} warehouse, {} districts, {} customers/district, {} items; RTT {} ms, seed {}, \
         store {} us/packet, commit {}",
        r.runtime.record_name(),
        c.warehouses,
        c.districts,
        c.customers,
        c.items,
        c.rtt_ms,
        c.seed,
        c.store_us_per_packet,
        &r.git_commit[..r.git_commit.len().min(7)]
    )
}

/// Gotthard Figure 13 as grouped bars: the weighted mean, then each type.
pub fn plot_fig13(rs: &[TpccResult], path: &Path) -> anyhow::Result<()> {
    let table = fig13_table(rs);
    let first = rs.first().ok_or_else(|| anyhow::anyhow!("no Figure 13 results"))?;
    let mut cats = vec!["weighted mean".to_string()];
    cats.extend(Kind::ALL.iter().map(|k| k.name().to_string()));
    let series: Vec<(String, Vec<f64>)> = table
        .iter()
        .map(|(m, w, solo)| (m.name().to_string(), std::iter::once(*w).chain(solo.iter().copied()).collect()))
        .collect();
    let caption = format!(
        "Gotthard Fig. 13 (each type run alone; weighted 45/43/4/4/4): {} clients, delta {}, {} s; {}",
        first.config.clients,
        first.config.delta,
        first.config.duration_s,
        network_caption(first)
    );
    bars_png(path, "TPC-C throughput per transaction type", &caption, "committed transactions/s", &cats, &series)
}

/// Gotthard Figure 14: (a-d) throughput, (e-h) mean latency of Payment and
/// Order-Status against the delta ratio (at the base clients) and against
/// the number of clients (at the base delta).
pub fn plot_fig14(rs: &[TpccResult], base: &TpccConfig, path: &Path) -> anyhow::Result<()> {
    let first = rs.first().ok_or_else(|| anyhow::anyhow!("no Figure 14 results"))?;
    let series = |k: Kind, vs_delta: bool, y: &dyn Fn(&TpccResult, Kind) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
        modes_of(rs)
            .into_iter()
            .map(|m| {
                let pts = rs
                    .iter()
                    .filter(|r| r.config.mode == m.name() && r.config.only == Some(k))
                    .filter(|r| if vs_delta { r.config.clients == base.clients } else { r.config.delta == base.delta })
                    .map(|r| (if vs_delta { r.config.delta } else { r.config.clients as f64 }, y(r, k)))
                    .collect();
                (m.name().to_string(), pts)
            })
            .collect()
    };
    let mut panels = vec![];
    let letters = ["a", "b", "c", "d", "e", "f", "g", "h"];
    for (row, (ylab, y)) in
        [("committed transactions/s", &per_s as &dyn Fn(&TpccResult, Kind) -> f64), ("mean latency (ms)", &latency)]
            .into_iter()
            .enumerate()
    {
        for (col, (k, vs_delta)) in
            [(Kind::Payment, true), (Kind::Payment, false), (Kind::OrderStatus, true), (Kind::OrderStatus, false)]
                .into_iter()
                .enumerate()
        {
            let (x_label, fixed) = if vs_delta {
                ("delta ratio d_cs/(d_cs+d_ss)".to_string(), format!("{} clients", base.clients))
            } else {
                ("clients (closed-loop terminals)".to_string(), format!("delta {}", base.delta))
            };
            panels.push(Panel {
                title: format!("({}) {} ({fixed})", letters[row * 4 + col], k.name()),
                x_label,
                y_label: ylab.to_string(),
                series: series(k, vs_delta, y),
            });
        }
    }
    // A partial sweep (some types or axes only, or a live run stopped
    // early) plots the panels it has.
    panels.retain(|p| p.series.iter().any(|(_, pts)| !pts.is_empty()));
    let caption = format!(
        "Gotthard Fig. 14 (one type alone per point), {} s per point; {}",
        base.duration_s,
        network_caption(first)
    );
    panels_png(path, "TPC-C Payment and Order-Status vs delta ratio and vs clients", &caption, &panels, 4)
}

/// NOCC Figure 5: (a) Payment committed/s and (b) store CPU against the
/// number of clients, OCC (forward) and NOCC (optimistic-abort).
pub fn plot_nocc5(rs: &[TpccResult], path: &Path) -> anyhow::Result<()> {
    let first = rs.first().ok_or_else(|| anyhow::anyhow!("no NOCC Figure 5 results"))?;
    let label = |m: Mode| match m {
        Mode::Forward => "OCC (forward)".to_string(),
        Mode::OptimisticAbort => "NOCC (optimistic-abort)".to_string(),
        m => m.name().to_string(),
    };
    let series = |y: &dyn Fn(&TpccResult) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
        modes_of(rs)
            .into_iter()
            .map(|m| {
                let pts =
                    rs.iter().filter(|r| r.config.mode == m.name()).map(|r| (r.config.clients as f64, y(r))).collect();
                (label(m), pts)
            })
            .collect()
    };
    let panels = [
        Panel {
            title: "(a) Payment throughput".into(),
            x_label: "clients (contention)".into(),
            y_label: "committed Payments/s".into(),
            series: series(&|r| per_s(r, Kind::Payment)),
        },
        Panel {
            title: "(b) Store CPU".into(),
            x_label: "clients (contention)".into(),
            y_label: "store CPU (% of one core)".into(),
            series: series(&|r| r.store_cpu_pct.unwrap_or(0.0)),
        },
    ];
    let caption = format!(
        "NOCC Fig. 5 (Payment only), delta {}, {} s per point; {}",
        first.config.delta,
        first.config.duration_s,
        network_caption(first)
    );
    panels_png(path, "TPC-C Payment: throughput and store CPU vs contention", &caption, &panels, 2)
}

/// Writes `rs` to `out/tpcc-<figure>.jsonl` and the figure's PNG beside it.
pub fn write(figure: Figure, base: &TpccConfig, rs: &[TpccResult], out: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let jsonl = out.join(format!("tpcc-{}.jsonl", figure.name()));
    results::append_jsonl(&jsonl, rs)?;
    let png = out.join(format!("tpcc-{}.png", figure.name()));
    match figure {
        Figure::Fig13 => plot_fig13(rs, &png)?,
        Figure::Fig14 => plot_fig14(rs, base, &png)?,
        Figure::Nocc5 => plot_nocc5(rs, &png)?,
    }
    Ok((jsonl, png))
}

/// NOCC Figure 5's headline: per client count, NOCC's store CPU relative to
/// OCC's (1 - nocc/occ, the paper's "up to 22%" lower) and the throughput
/// ratio.
pub fn nocc5_table(rs: &[TpccResult]) -> Vec<(u32, f64, f64, f64, f64)> {
    NOCC5_CLIENTS
        .iter()
        .filter_map(|&c| {
            let at = |m: Mode| rs.iter().find(|r| r.config.mode == m.name() && r.config.clients == c);
            let (o, n) = (at(Mode::Forward)?, at(Mode::OptimisticAbort)?);
            Some((
                c,
                per_s(o, Kind::Payment),
                per_s(n, Kind::Payment),
                o.store_cpu_pct.unwrap_or(0.0),
                n.store_cpu_pct.unwrap_or(0.0),
            ))
        })
        .collect()
}
