//! Live-runtime commands: `innet up`, `innet store`, `innet switch`, `innet client`.
//! (Owned by the live-runtime work; see crates/live.)

use clap::Args;

/// Start a store and a switch on loopback and print their UDP addresses.
#[derive(Args, Debug)]
pub struct UpCmd {}

/// Run a transaction store.
#[derive(Args, Debug)]
pub struct StoreArgs {}

/// Run a transaction switch (user-space software switch over UDP).
#[derive(Args, Debug)]
pub struct SwitchCmd {}

/// Send transactions to a switch or store.
#[derive(Args, Debug)]
pub struct ClientCmd {}

pub fn run_up(_a: UpCmd) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
pub fn run_store(_a: StoreArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
pub fn run_switch(_a: SwitchCmd) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
pub fn run_client(_a: ClientCmd) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
