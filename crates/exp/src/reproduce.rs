//! `innet reproduce`: every result of the four papers, regenerated and set
//! beside the paper's own numbers.
//!
//! A result is an [`Entry`]: which paper and figure it is, and a function
//! that runs the experiment (at the paper's parameters, sized to fit the
//! run's time budget), writes its records and plots under [`Ctx::out`], and
//! returns an [`Outcome`]: the paper's numbers as transcribed from its text
//! ([`Claim::paper_text`], with section), ours beside them, and whether the
//! paper's conclusion holds here, with the reason (and the doc section that
//! explains it) where it does not.
//!
//! Each experiment module contributes its entries (`entries()`); this module
//! lists them in paper order.

use std::path::{Path, PathBuf};

/// Which of the four papers a result comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum Paper {
    /// "Optimistic Aborts for Geo-distributed Transactions" (Gotthard, 2016).
    Gotthard,
    /// "Infinite Resources for Optimistic Concurrency Control" (NOCC, 2018).
    Nocc,
    /// "Network Hardware-Accelerated Consensus" (CAANS, 2016).
    Caans,
    /// "Scale-friendly In-network Coordination" (NetCRAQ, 2022).
    Netcraq,
}

impl Paper {
    pub fn name(self) -> &'static str {
        match self {
            Paper::Gotthard => "Gotthard",
            Paper::Nocc => "NOCC",
            Paper::Caans => "CAANS",
            Paper::Netcraq => "NetCRAQ",
        }
    }
}

/// Where and how large a reproduction runs.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// Folder for this result's records and plots (one per result:
    /// `<report folder>/<id>/`).
    pub out: PathBuf,
    /// Base seed; every record carries the seed it ran with.
    pub seed: u64,
    /// Run size: 1.0 is the default sized for the whole reproduction to
    /// finish in under 10 minutes on 2 cores; smaller is a quick look (tests
    /// use ~0.05), larger gives tighter figures.
    pub scale: f64,
    /// Where the experiment runs when it can run in more than one place.
    pub runtime: Where,
}

impl Ctx {
    /// `base` simulated (or live) seconds scaled by [`Ctx::scale`], never
    /// below `min`.
    pub fn seconds(&self, base: f64, min: f64) -> f64 {
        (base * self.scale).max(min)
    }

    /// A count (seeds, transactions, clients) scaled by [`Ctx::scale`],
    /// never below `min`.
    pub fn count(&self, base: usize, min: usize) -> usize {
        ((base as f64 * self.scale).round() as usize).max(min)
    }
}

/// The runtime a reproduction asks for (`innet reproduce`, `--live`,
/// `--xdp`). A result with no variant for it runs in the simulator and says
/// so in its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Where {
    Sim,
    Live,
    Xdp,
}

impl Where {
    pub fn name(self) -> &'static str {
        match self {
            Where::Sim => "sim",
            Where::Live => "live",
            Where::Xdp => "xdp",
        }
    }
}

/// One number the paper states, and ours beside it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Claim {
    /// What is compared, e.g. "committed/s, optimistic abort / forward, 0.2 writes".
    pub what: String,
    /// The paper's words, with section: e.g. "1.5x at 0.2 writes (Section 5.2)".
    pub paper_text: String,
    /// The paper's number, in the same unit as ours (`None` where the paper
    /// gives only a direction, e.g. "lower").
    pub paper: Option<f64>,
    /// Our number.
    pub ours: f64,
    /// The unit of both ("x", "ms", "%", "txn/s").
    pub unit: String,
    /// Whether the paper's conclusion behind this number holds in our run,
    /// by the rule in `rule`.
    pub holds: bool,
    /// How `holds` was decided, e.g. "ours within 10% of the paper" or
    /// "optimistic abort above forward".
    pub rule: String,
}

impl Claim {
    /// ours / paper, where the paper gives a number.
    pub fn ratio(&self) -> Option<f64> {
        self.paper.filter(|p| *p != 0.0).map(|p| self.ours / p)
    }
}

/// What one result's run produced.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Outcome {
    /// The paper's numbers beside ours (at least one).
    pub claims: Vec<Claim>,
    /// Why the paper's conclusion does not hold (or differs by how much and
    /// why), with a link to the doc section, e.g. "docs/txn.md#figure-8".
    /// `None` when every claim holds.
    pub why: Option<String>,
    /// Plots written (PNG), relative to the report folder or absolute.
    pub plots: Vec<PathBuf>,
    /// Records written (JSON lines; each record carries configuration, seed
    /// and commit).
    pub records: Vec<PathBuf>,
    /// The runtime it actually ran on.
    pub ran_on: Where,
    /// One line naming the configuration (the plot caption's line).
    pub config: String,
}

impl Outcome {
    pub fn holds(&self) -> bool {
        self.claims.iter().all(|c| c.holds)
    }
}

/// One result of one paper.
pub struct Entry {
    /// Stable identifier, also the folder name: "gotthard-fig2", "caans-table1".
    pub id: &'static str,
    pub paper: Paper,
    /// As the paper names it: "Figure 2", "Table 4".
    pub figure: &'static str,
    /// What it shows, in a few words.
    pub title: &'static str,
    /// Runs the experiment into `ctx.out`.
    pub run: fn(&Ctx) -> anyhow::Result<Outcome>,
}

/// The 26 results of the four papers, in paper order.
pub const ALL_RESULTS: [&str; 26] = [
    "gotthard-fig2",
    "gotthard-fig6",
    "gotthard-fig7",
    "gotthard-fig8",
    "gotthard-fig9",
    "gotthard-fig10",
    "gotthard-fig11",
    "gotthard-fig12",
    "gotthard-fig13",
    "gotthard-fig14",
    "nocc-fig1",
    "nocc-fig3",
    "nocc-fig4",
    "nocc-fig5",
    "caans-fig2",
    "caans-fig7a",
    "caans-fig7b",
    "caans-fig7c",
    "caans-fig7d",
    "caans-fig8",
    "caans-table1",
    "caans-table4",
    "netcraq-fig3",
    "netcraq-fig4",
    "netcraq-fig5",
    "netcraq-fig6",
];

/// Every registered result, in the order of [`ALL_RESULTS`].
pub fn entries() -> Vec<Entry> {
    let mut all: Vec<Entry> = Vec::new();
    // Each experiment module appends its entries here.
    all.extend(crate::reproduce_existing::entries());
    all.extend(crate::gotthard_micro::entries());
    all.extend(crate::txn_locality::entries());
    all.extend(crate::caans_roles::entries());
    all.sort_by_key(|e| ALL_RESULTS.iter().position(|id| *id == e.id).unwrap_or(usize::MAX));
    all
}

/// The folder of one result inside a report folder.
pub fn result_dir(report: &Path, id: &str) -> PathBuf {
    report.join(id)
}
