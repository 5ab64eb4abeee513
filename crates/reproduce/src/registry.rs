//! The registry: every result of the four papers, in paper order. Each
//! module of results (`existing`, `gotthard_micro`, `txn_locality`,
//! `caans_roles`) contributes its entries; this module lists them.

use std::path::{Path, PathBuf};

use crate::entry::Entry;

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
    all.extend(crate::existing::entries());
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
