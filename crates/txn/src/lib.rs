//! Transactions with in-network optimistic abort: the protocol logic of
//! Gotthard (Jepsen et al., 2016) and NOCC (Jepsen et al., 2018), as pure
//! state machines. No sockets, no clocks, no threads: runtimes (`innet-sim`,
//! `innet-live`, and the XDP data plane) move bytes and time through them.
//!
//! * [`switch::TxnSwitch`]: the data-plane program (four modes).
//! * [`store::TxnStore`]: the OCC store (Algorithm 1).
//! * [`client::TxnClient`]: begin / read / write / commit with re-execution.
//! * [`workload::LoadClient`]: the paper's counter microbenchmark driver.
//! * [`check::check`]: the serializability checker over recorded histories.

#![forbid(unsafe_code)]

pub mod check;
pub mod client;
pub mod deploy;
pub mod store;
pub mod switch;
pub mod workload;

pub use client::{ClientConfig, Txn, TxnClient};
pub use store::TxnStore;
pub use switch::{Mode, TxnSwitch};
