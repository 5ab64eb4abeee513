//! Simulator commands: `innet demo`, `innet sim`, `innet bench`, `innet check`.

use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct DemoArgs {}

#[derive(Subcommand, Debug)]
pub enum SimService {
    /// One point of the transaction experiment.
    Txn,
}

#[derive(Subcommand, Debug)]
pub enum BenchService {
    /// The write-ratio sweep of Gotthard Figure 7.
    Txn,
}

#[derive(Subcommand, Debug)]
pub enum CheckService {
    /// Random faulty runs through the serializability checker.
    Txn,
}

pub fn run_demo(_a: DemoArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
pub fn run_sim(_s: SimService) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
pub fn run_bench(_s: BenchService) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
pub fn run_check(_s: CheckService) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
