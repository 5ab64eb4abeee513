//! What a reproduced result is: an [`Entry`] names which paper and figure
//! it is, and holds a function that runs the experiment (at the paper's
//! parameters, sized to fit the run's time budget), writes its records and
//! plots under [`Ctx::out`], and returns an [`Outcome`]: the paper's numbers
//! as transcribed from its text ([`Claim::paper_text`], with section), ours
//! beside them, and whether the paper's conclusion holds here, with the
//! reason (and the doc section that explains it) where it does not.

use std::path::PathBuf;

/// How a claim shown beside an XDP figure begins when the figure beside is
/// the live one, on loopback, not the simulator's (CAANS Figure 7d: the
/// simulator does not model the LevelDB replicas).
pub const LIVE_FIGURE_BESIDE: &str = "live on loopback: ";

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
    pub runtime: Runtime,
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
/// `--xdp`): a result with no variant for it runs in the simulator and says
/// so in its outcome.
pub use innet_exp::Runtime;

/// `outcome.json` names the runtime by its variant (`Sim`, `Live`, `Xdp`),
/// as it always has; the result records say `sim`, `live`, `xdp-testbed`.
pub fn serialize_variant<S: serde::Serializer>(r: &Runtime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match r {
        Runtime::Sim => "Sim",
        Runtime::Live => "Live",
        Runtime::Xdp => "Xdp",
    })
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
    /// The run-to-run spread of `ours` over several seeds, where the claim
    /// was run on several (a direction then holds only when ours goes the
    /// paper's way by more than the spread: [`Spread::clears`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
    /// A figure shown beside the counted claims, not counted either way:
    /// the unsaturated run beside the paper's saturated regime (NOCC
    /// Figures 1, 3, 4, CAANS Figure 2), or a live measurement beside a
    /// simulator prediction.
    #[serde(default)]
    pub beside: bool,
}

/// The smallest margin a direction over seeds needs, as a share of the
/// neutral value (1%), whatever the spread: named in [`VERDICT_RULE`].
pub const DIRECTION_FLOOR: f64 = 0.01;

/// Ours over several seeds: the mean is [`Claim::ours`], the spread the
/// range from the lowest seed to the highest.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Spread {
    /// The seeds run (the run's seed, seed + 1, ...).
    pub seeds: usize,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (one per seed); `None` for fewer than 2.
    pub fn of(values: &[f64]) -> Option<Spread> {
        (values.len() >= 2).then(|| Spread {
            seeds: values.len(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// The range, highest seed minus lowest.
    pub fn width(&self) -> f64 {
        self.max - self.min
    }

    /// The verdict rule for a direction: the mean `mean` lies beyond
    /// `neutral` on the paper's side (`above`: the paper says ours should
    /// exceed `neutral`) by more than the spread, and so does every seed.
    /// The margin must also be at least [`DIRECTION_FLOOR`] of `neutral`: a
    /// simulator whose seeds change nothing has no spread, and a difference
    /// of a rounding error is no direction.
    pub fn clears(&self, mean: f64, neutral: f64, above: bool) -> bool {
        let (margin, worst) =
            if above { (mean - neutral, self.min - neutral) } else { (neutral - mean, neutral - self.max) };
        margin > self.width() && margin >= DIRECTION_FLOOR * neutral.abs() && worst > 0.0
    }

    /// "mean 1.47, seeds 1.41-1.52 (3 seeds)" style text for a row.
    pub fn text(&self) -> String {
        format!("{} seeds: {:.3} to {:.3}, spread {:.3}", self.seeds, self.min, self.max, self.width())
    }
}

/// The means of `per_seed` (one vector of values per seed, each the same
/// length) and their spreads.
pub fn over_seeds(per_seed: &[Vec<f64>]) -> Vec<(f64, Option<Spread>)> {
    let n = per_seed.first().map_or(0, Vec::len);
    (0..n)
        .map(|i| {
            let v: Vec<f64> = per_seed.iter().filter_map(|s| s.get(i).copied()).collect();
            (v.iter().sum::<f64>() / v.len().max(1) as f64, Spread::of(&v))
        })
        .collect()
}

impl Claim {
    /// The claim's verdict cell: "beside", "calibration", "yes" or "no".
    pub fn verdict_text(&self) -> &'static str {
        if self.beside {
            "beside (not counted)"
        } else if self.calibration {
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

    /// Whether the claim is compared (neither a calibration nor shown beside).
    pub fn compared(&self) -> bool {
        !self.calibration && !self.beside
    }

    /// A number the paper states, over several seeds: holds when the mean
    /// of `per_seed` is within [`NEAR_TOLERANCE`] of
    /// `paper`; the spread is shown.
    pub fn near_over_seeds(what: &str, paper_text: &str, paper: f64, per_seed: &[f64], unit: &str) -> Claim {
        let mean = per_seed.iter().sum::<f64>() / per_seed.len().max(1) as f64;
        let tol = NEAR_TOLERANCE;
        Claim {
            what: what.into(),
            paper_text: paper_text.into(),
            paper: Some(paper),
            ours: mean,
            unit: unit.into(),
            holds: paper != 0.0 && !per_seed.is_empty() && (mean / paper - 1.0).abs() <= tol,
            rule: format!("ours within {:.0}% of the paper", tol * 100.0),
            calibration: false,
            spread: Spread::of(per_seed),
            beside: false,
        }
    }

    /// A direction over several seeds: `per_seed` holds ours for each
    /// seed; the claim holds when the mean goes the paper's way (above
    /// `neutral` when `above`, else below) by more than the spread
    /// ([`Spread::clears`]). With one seed it holds on the side alone and
    /// says that no spread was measured.
    #[allow(clippy::too_many_arguments)]
    pub fn direction(
        what: &str,
        paper_text: &str,
        paper: Option<f64>,
        per_seed: &[f64],
        unit: &str,
        neutral: f64,
        above: bool,
        side: &str,
    ) -> Claim {
        let mean = per_seed.iter().sum::<f64>() / per_seed.len().max(1) as f64;
        let spread = Spread::of(per_seed);
        let on_side = if above { mean > neutral } else { mean < neutral };
        let (holds, rule) = match &spread {
            Some(s) => (
                !per_seed.is_empty() && s.clears(mean, neutral, above),
                format!("{side} by more than the spread over {} seeds ({:.3})", s.seeds, s.width()),
            ),
            None => (!per_seed.is_empty() && on_side, format!("{side} (one seed: no spread measured)")),
        };
        Claim {
            what: what.into(),
            paper_text: paper_text.into(),
            paper,
            ours: mean,
            unit: unit.into(),
            holds,
            rule,
            calibration: false,
            spread,
            beside: false,
        }
    }
}

/// The verdict rule's tolerance for a number the paper states
/// ([`VERDICT_RULE`]).
pub const NEAR_TOLERANCE: f64 = 0.1;

/// The one verdict rule, stated at the top of the report.
pub const VERDICT_RULE: &str = "A number the paper states holds when ours is within 10% of it. A direction the \
    paper states holds when ours goes the same way by more than the run-to-run spread: where a result runs several \
    seeds, the mean goes the paper's way by more than the range over the seeds, and by at least 1% (a simulator \
    whose seeds change nothing has no spread), and every seed goes that way (the spread is shown in the row); a \
    result with one seed says so in its row. Any other rule is an exception named in \
    its row with its reason. A claim whose paper number set a model parameter reads \"calibration\" and counts \
    neither way; a figure shown beside the counted ones (the unsaturated run beside the paper's saturated regime, a \
    live measurement beside a prediction) reads \"beside\" and counts neither way. A result whose claim follows \
    from a chosen model parameter reads \"model only\" and is never counted as reproduced; a simulator run with \
    costs measured on this machine is a prediction, named as such. A result holds when every compared claim holds, \
    partly when some do, does not hold when none does.";

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
    #[serde(serialize_with = "serialize_variant")]
    pub ran_on: Runtime,
    /// One line naming the configuration (the plot caption's line).
    pub config: String,
    /// Where the result ran on the XDP data plane and the simulator predicts
    /// the same figure: the simulator's headline claim (the same comparison
    /// as `claims[0]`), shown beside ours in the summary. Counts neither way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_headline: Option<Claim>,
}

impl Outcome {
    /// The verdict under [`VERDICT_RULE`]: "model only" whenever the claim
    /// follows from a chosen parameter, whatever the claims say; calibration
    /// claims are left out of the count.
    pub fn verdict(&self) -> Verdict {
        if matches!(self.obtained, Obtained::SimChosen { claim_follows: true, .. }) {
            return Verdict::ModelOnly;
        }
        let compared: Vec<&Claim> = self.claims.iter().filter(|c| c.compared()).collect();
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

    /// (compared claims that hold, compared claims, calibration claims);
    /// claims shown beside count in none.
    pub fn claim_counts(&self) -> (usize, usize, usize) {
        let compared = self.claims.iter().filter(|c| c.compared());
        let n = compared.clone().count();
        (compared.filter(|c| c.holds).count(), n, self.claims.iter().filter(|c| c.calibration && !c.beside).count())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direction_holds_only_beyond_the_spread_over_seeds() {
        let d = |v: &[f64], above| Claim::direction("x", "p", None, v, "x", 1.0, above, "side");
        // Mean 1.3, range 0.1: clears.
        assert!(d(&[1.25, 1.3, 1.35], true).holds);
        // Mean 1.05, range 0.2: on the paper's side but within the spread.
        let within = d(&[0.95, 1.05, 1.15], true);
        assert!(!within.holds && within.ours > 1.0, "{within:?}");
        // Every seed must go the paper's way, not only the mean.
        assert!(!Spread::of(&[0.99, 1.6, 1.61]).unwrap().clears(1.4, 1.0, true));
        // No spread (a deterministic simulator): the margin must still be 1%.
        assert!(!d(&[1.004, 1.004, 1.004], true).holds);
        assert!(d(&[1.02, 1.02, 1.02], true).holds);
        // Below: mirrored.
        assert!(d(&[0.5, 0.52, 0.55], false).holds);
        assert!(!d(&[0.5, 0.52, 0.55], true).holds);
        // The row shows the spread.
        let s = d(&[1.25, 1.3, 1.35], true).spread.unwrap();
        assert_eq!((s.seeds, s.min, s.max), (3, 1.25, 1.35));
        // One seed: no spread measured, said in the rule.
        let one = d(&[1.2], true);
        assert!(one.holds && one.spread.is_none() && one.rule.contains("one seed"), "{one:?}");
    }

    #[test]
    fn a_claim_shown_beside_counts_neither_way() {
        let c = |holds, beside| Claim {
            what: "w".into(),
            paper_text: "p".into(),
            paper: Some(2.0),
            ours: 2.0,
            unit: "x".into(),
            holds,
            rule: "r".into(),
            calibration: false,
            spread: None,
            beside,
        };
        let o = Outcome {
            sim_headline: None,
            claims: vec![c(true, false), c(false, true)],
            why: None,
            obtained: Obtained::Live,
            plots: vec![],
            records: vec![],
            ran_on: Runtime::Live,
            config: String::new(),
        };
        assert_eq!(o.verdict(), Verdict::Holds);
        assert_eq!(o.claim_counts(), (1, 1, 0));
        assert_eq!(o.claims[1].verdict_text(), "beside (not counted)");
        let only_beside = Outcome { claims: vec![c(true, true)], ..o.clone() };
        assert_ne!(only_beside.verdict(), Verdict::Holds, "a result of beside claims alone holds nothing");
    }

    #[test]
    fn a_number_over_seeds_is_judged_on_its_mean() {
        let c = Claim::near_over_seeds("w", "p", 2.0, &[1.7, 2.1, 2.3], "x");
        assert!(c.holds && (c.ours - 2.033).abs() < 0.01);
        assert!(!Claim::near_over_seeds("w", "p", 2.0, &[2.4, 2.5], "x").holds);
    }
}
