//! What a reproduced result is: an [`Entry`] names which paper and figure
//! it is, and holds a function that runs the experiment (at the paper's
//! parameters, sized to fit the run's time budget), writes its records and
//! plots under [`Ctx::out`], and returns an [`Outcome`]: the paper's numbers
//! as transcribed from its text ([`Claim::paper_text`], with section), ours
//! beside them, and whether the paper's conclusion holds here, with the
//! reason (and the doc section that explains it) where it does not.

use std::path::PathBuf;

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
    /// "optimistic abort above forward"; an exception to [`VERDICT_RULE`]
    /// names itself and its reason here.
    pub rule: String,
    /// The paper's number was used to set a model parameter (e.g. the chain
    /// model's `BMV2_PER_BYTE_NS` from NetCRAQ's "22%"): the claim is shown
    /// as "calibration", never as holding, and is not counted either way.
    pub calibration: bool,
}

impl Claim {
    /// The claim's verdict cell: "calibration", "yes" or "no".
    pub fn verdict_text(&self) -> &'static str {
        if self.calibration {
            "calibration"
        } else if self.holds {
            "yes"
        } else {
            "no"
        }
    }

    /// ours / paper, where the paper gives a number.
    pub fn ratio(&self) -> Option<f64> {
        self.paper.filter(|p| *p != 0.0).map(|p| self.ours / p)
    }
}

/// The one verdict rule, stated at the top of the report.
pub const VERDICT_RULE: &str = "A number the paper states holds when ours is within 10% of it. A direction the \
    paper states holds when ours goes the same way by more than the run-to-run spread (shown in the row where the \
    result has several seeds; a result with one seed states the margin it uses instead). Any other rule is an \
    exception named in its row with its reason. A claim whose paper number set a model parameter reads \
    \"calibration\" and counts neither way. A result whose claim follows from a chosen model parameter reads \
    \"model only\" and is never counted as reproduced. A result holds when every compared claim holds, partly \
    when some do, does not hold when none does.";

/// How a result's numbers were obtained.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum Obtained {
    /// Measured live: real processes on real UDP sockets (loopback).
    Live,
    /// Measured on the XDP data plane: the BPF programs in the kernel
    /// (namespace testbed or `BPF_PROG_TEST_RUN`).
    Xdp,
    /// The simulator, with its costs measured on this machine;
    /// `measurement` names the measurement and where it is described.
    SimMeasured { measurement: String },
    /// The simulator with a chosen model: `parameter` (its value) and
    /// `source` (where the value comes from). `claim_follows`: the compared
    /// claim is a consequence of that choice (e.g. CAANS's data-plane /
    /// software ratio is the ratio of two chosen per-packet costs), so the
    /// result is "model only" and never counts as reproduced.
    SimChosen { parameter: String, source: String, claim_follows: bool },
}

impl Obtained {
    /// The summary column's short name.
    pub fn short(&self) -> &'static str {
        match self {
            Obtained::Live => "measured live",
            Obtained::Xdp => "measured on XDP",
            Obtained::SimMeasured { .. } => "sim, measured costs",
            Obtained::SimChosen { claim_follows: true, .. } => "sim, chosen model (model only)",
            Obtained::SimChosen { .. } => "sim, chosen model",
        }
    }

    /// The section's sentence: how, with the measurement or the parameter
    /// and its source.
    pub fn sentence(&self) -> String {
        match self {
            Obtained::Live => "measured live on loopback (real processes, real UDP sockets)".into(),
            Obtained::Xdp => "measured on the XDP data plane (the BPF programs in the kernel)".into(),
            Obtained::SimMeasured { measurement } => {
                format!("simulator with costs measured on this machine: {measurement}")
            }
            Obtained::SimChosen { parameter, source, claim_follows } => format!(
                "simulator with a chosen model: {parameter} (source: {source}){}",
                if *claim_follows {
                    "; the paper's claim follows from this choice, so this result is a model only, not a reproduction"
                } else {
                    ""
                }
            ),
        }
    }
}

/// The transaction simulator's one measured cost: the store's time per
/// packet, measured on the live store; its latencies are the papers' stated
/// setups.
pub fn store_measured() -> Obtained {
    Obtained::SimMeasured {
        measurement: "the store's 2 us per packet (STORE_US_PER_PACKET, measured on the live store, docs/txn.md); \
                      link latencies are the paper's stated setup (Gotthard Table 2, NOCC Section 4)"
            .into(),
    }
}

/// A result's verdict under [`VERDICT_RULE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Verdict {
    /// Every compared claim holds.
    Holds,
    /// Some compared claims hold, some do not.
    Partly,
    /// No compared claim holds.
    DoesNotHold,
    /// Every claim was used to calibrate a parameter: nothing to compare.
    Calibration,
    /// The claim follows from a chosen model parameter.
    ModelOnly,
}

impl Verdict {
    pub const ALL: [Verdict; 5] =
        [Verdict::Holds, Verdict::Partly, Verdict::DoesNotHold, Verdict::Calibration, Verdict::ModelOnly];

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Partly => "partly",
            Verdict::DoesNotHold => "does not hold",
            Verdict::Calibration => "calibration",
            Verdict::ModelOnly => "model only",
        }
    }
}

/// What one result's run produced.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Outcome {
    /// The paper's numbers beside ours (at least one).
    pub claims: Vec<Claim>,
    /// The caveat: how far ours differs from the paper and why, what the
    /// model assumes, with a link to the doc section, e.g.
    /// "docs/txn.md#figure-8". Printed whether the claims hold or not.
    pub why: Option<String>,
    /// How the numbers were obtained.
    pub obtained: Obtained,
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
    /// The verdict under [`VERDICT_RULE`]: "model only" whenever the claim
    /// follows from a chosen parameter, whatever the claims say; calibration
    /// claims are left out of the count.
    pub fn verdict(&self) -> Verdict {
        if matches!(self.obtained, Obtained::SimChosen { claim_follows: true, .. }) {
            return Verdict::ModelOnly;
        }
        let compared: Vec<&Claim> = self.claims.iter().filter(|c| !c.calibration).collect();
        let holding = compared.iter().filter(|c| c.holds).count();
        match (compared.len(), holding) {
            (0, _) => Verdict::Calibration,
            (n, h) if h == n => Verdict::Holds,
            (_, 0) => Verdict::DoesNotHold,
            _ => Verdict::Partly,
        }
    }

    /// Whether the result counts as reproduced (its verdict is "holds").
    pub fn holds(&self) -> bool {
        self.verdict() == Verdict::Holds
    }

    /// (compared claims that hold, compared claims, calibration claims).
    pub fn claim_counts(&self) -> (usize, usize, usize) {
        let compared = self.claims.iter().filter(|c| !c.calibration);
        let n = compared.clone().count();
        (compared.filter(|c| c.holds).count(), n, self.claims.len() - n)
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
