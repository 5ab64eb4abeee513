//! `innet reproduce`: every result of the four papers, regenerated and set
//! beside the paper's own numbers.
//!
//! * [`entry`]: what a result is ([`Entry`]: paper, figure, the function
//!   that runs it) and what its run gives ([`Outcome`]: the paper's claims
//!   beside ours, how they were obtained, the verdict under
//!   [`VERDICT_RULE`]).
//! * [`registry`]: every registered result in paper order ([`entries`],
//!   [`ALL_RESULTS`]).
//! * [`report`]: running the registry and writing `REPORT.md` and
//!   `REPORT.html`.
//! * The results, each module contributing its entries to the registry:
//!   [`existing`] (the figures the experiments of `innet-exp` draw),
//!   [`gotthard_micro`] (Gotthard's and NOCC's microbenchmarks),
//!   [`txn_locality`] (Gotthard Figure 11, NOCC Figures 3 and 4),
//!   [`caans_roles`] (CAANS Figures 2 and 7c, Table 1: per-role CPU),
//!   [`caans_xdp`] (the XDP variants of CAANS Figures 7a, 7b, 8, Table 4).
//!
//! The experiments themselves (configurations, runs on every runtime,
//! records, plots) are `innet-exp`'s; this crate sets them at the papers'
//! parameters and compares.

pub mod caans_roles;
pub mod caans_xdp;
pub mod commands;
pub mod costs;
pub mod entry;
pub mod existing;
pub mod gotthard_micro;
pub mod registry;
pub mod report;
pub mod txn_locality;

pub use entry::{
    over_seeds, store_measured, Claim, Ctx, Entry, Obtained, Outcome, Paper, Runtime, Spread, Verdict, VERDICT_RULE,
};
pub use registry::{entries, result_dir, ALL_RESULTS};
