//! The report's verdict rule on real results (`innet reproduce`'s
//! entries, run small): CAANS Figure 7a in the simulator is a prediction
//! from measured costs and names the measurement; a result whose claim
//! follows from a chosen model parameter (the same result under a chosen
//! capacity model) is "model only" and never reads "yes", even with every
//! claim holding; a claim whose paper
//! number calibrated a parameter (NetCRAQ Figure 3's 22%, from which
//! `BMV2_PER_BYTE_NS` is derived) reads "calibration", never "holds", and
//! does not count either way.

use innet_reproduce::report::{verdict_counts, verdict_text, Ran};
use innet_reproduce::{entries, Ctx, Obtained, Outcome, Runtime, Verdict};

fn run(id: &str, dir: &std::path::Path) -> Outcome {
    let all = entries();
    let e = all.iter().find(|e| e.id == id).unwrap_or_else(|| panic!("{id} is registered"));
    let ctx = Ctx { out: dir.join(id), seed: 1, scale: 0.05, runtime: Runtime::Sim };
    std::fs::create_dir_all(&ctx.out).expect("result folder");
    (e.run)(&ctx).unwrap_or_else(|err| panic!("{id}: {err:#}"))
}

fn ran(id: &str, o: &Outcome) -> Ran {
    Ran {
        id: id.into(),
        paper: innet_reproduce::Paper::Caans,
        figure: "-".into(),
        title: "-".into(),
        outcome: Ok(o.clone()),
        seconds: 0.0,
        seed: 1,
        scale: 0.05,
        asked: Runtime::Sim,
        git_commit: "test".into(),
    }
}

#[test]
fn a_model_only_result_never_reads_yes_and_a_calibration_never_holds() {
    let dir = std::env::temp_dir().join(format!("innet-reproduce-verdict-{}", std::process::id()));

    // CAANS Figure 7a in the simulator: a prediction from the roles' costs
    // measured on this machine, which names the measurement.
    let fig7a_measured = run("caans-fig7a", &dir);
    match &fig7a_measured.obtained {
        Obtained::SimMeasured { measurement } => {
            assert!(measurement.contains("BPF_PROG_TEST_RUN"), "{measurement}");
            assert!(measurement.contains(innet_reproduce::costs::COSTS_FILE), "{measurement}");
        }
        o => panic!("caans-fig7a from the simulator runs on measured costs: {o:?}"),
    }
    assert_ne!(fig7a_measured.verdict(), Verdict::ModelOnly);
    // Its directions carry the spread over the seeds they ran.
    assert!(fig7a_measured.claims.iter().filter(|c| c.compared()).all(|c| c.spread.is_some()));
    // The live measurement of the same figure sits beside it, uncounted.
    assert!(fig7a_measured.claims.iter().any(|c| c.beside && c.what.contains("measured live")));
    // The same result, were its claim a consequence of a chosen parameter,
    // is a model only and never reads "yes", even with every claim holding.
    let mut fig7a = Outcome {
        sim_headline: None,
        obtained: Obtained::SimChosen {
            parameter: "a software coordinator 12 us per packet, a switch 0.1 us".into(),
            source: "chosen".into(),
            claim_follows: true,
        },
        ..fig7a_measured.clone()
    };
    assert_eq!(fig7a.verdict(), Verdict::ModelOnly);
    for c in &mut fig7a.claims {
        c.holds = true;
    }
    assert_eq!(fig7a.verdict(), Verdict::ModelOnly);
    assert!(!fig7a.holds(), "a model-only result never counts as reproduced");
    assert!(!verdict_text(&fig7a).starts_with("yes"), "{}", verdict_text(&fig7a));
    assert!(fig7a.why.is_some(), "its caveat is printed although every claim holds");

    // NetCRAQ Figure 3: the 22% at the tail calibrated BMV2_PER_BYTE_NS.
    let mut fig3 = run("netcraq-fig3", &dir);
    let cal: Vec<usize> = (0..fig3.claims.len()).filter(|&i| fig3.claims[i].calibration).collect();
    assert_eq!(cal.len(), 1, "one calibration claim: {:?}", fig3.claims);
    let i = cal[0];
    assert!(fig3.claims[i].paper_text.contains("22%"), "{}", fig3.claims[i].paper_text);
    fig3.claims[i].holds = true;
    assert_eq!(fig3.claims[i].verdict_text(), "calibration");
    // It counts neither way: the compared claims alone decide.
    let (holding, compared, calibrations) = fig3.claim_counts();
    assert_eq!((compared, calibrations), (fig3.claims.len() - 1, 1));
    let others_hold = fig3.claims.iter().enumerate().filter(|(j, _)| *j != i).all(|(_, c)| c.holds);
    assert_eq!(fig3.verdict() == Verdict::Holds, others_hold, "{holding}/{compared}");
    fig3.claims[i].holds = false;
    assert_eq!(fig3.claim_counts().0, holding, "the calibration's own outcome changes no count");
    // With the compared claims gone, what is left is a calibration, not a pass.
    let only_cal = Outcome { claims: vec![fig3.claims[i].clone()], ..fig3.clone() };
    assert_eq!(only_cal.verdict(), Verdict::Calibration);
    assert_eq!(verdict_text(&only_cal), "calibration");

    // The summary's counts put each under its own heading.
    let counts = verdict_counts(&[ran("caans-fig7a", &fig7a), ran("netcraq-calibration", &only_cal)]);
    let n = |v: Verdict| counts.iter().find(|(x, _)| *x == v).map_or(0, |(_, n)| *n);
    assert_eq!((n(Verdict::ModelOnly), n(Verdict::Calibration), n(Verdict::Holds)), (1, 1, 0));
    let _ = std::fs::remove_dir_all(&dir);
}
