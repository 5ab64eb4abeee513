//! The XDP commands of an `innet` built without the `xdp` feature (no clang
//! or libbpf on the build machine): they take any arguments and say how to
//! get the real ones.

const NO_XDP: &str = "this innet was built without the XDP data plane (cargo feature `xdp`): \
     install clang, llvm, libbpf-dev, gcc-multilib, libelf-dev and zlib1g-dev (scripts/setup.sh does) \
     and build with `cargo build --release -p innet` (the feature is on by default)";

/// Any arguments.
#[derive(clap::Args, Debug)]
pub struct Anything {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _rest: Vec<String>,
}

fn refuse<T>() -> anyhow::Result<T> {
    anyhow::bail!("{NO_XDP}")
}

pub mod testbed {
    /// Any testbed subcommand.
    #[derive(clap::Subcommand, Debug)]
    pub enum TestbedCmd {
        #[command(external_subcommand)]
        Any(Vec<String>),
    }

    pub fn run_testbed(c: TestbedCmd) -> anyhow::Result<i32> {
        let TestbedCmd::Any(args) = c;
        anyhow::bail!("innet testbed {}: {}", args.join(" "), crate::no_xdp::NO_XDP)
    }
}

pub mod txn {
    use crate::no_xdp::{refuse, Anything};

    pub type BenchXdpArgs = Anything;
    pub type BenchXdpTxnArgs = Anything;

    pub fn run_bench_xdp(_: BenchXdpArgs) -> anyhow::Result<i32> {
        refuse()
    }
    pub fn run_bench_xdp_txn(_: BenchXdpTxnArgs) -> anyhow::Result<i32> {
        refuse()
    }
}

pub mod chain {
    use crate::no_xdp::{refuse, Anything};

    pub type BenchXdpChainArgs = Anything;

    pub fn run(_: BenchXdpChainArgs) -> anyhow::Result<i32> {
        refuse()
    }
}

pub mod paxos {
    use crate::no_xdp::{refuse, Anything};

    pub type BenchXdpPaxosArgs = Anything;
    pub type XdpPaxosHostsArgs = Anything;
    pub type BenchTable1Args = Anything;

    pub fn run_bench(_: BenchXdpPaxosArgs) -> anyhow::Result<i32> {
        refuse()
    }
    pub fn run_hosts(_: XdpPaxosHostsArgs) -> anyhow::Result<i32> {
        refuse()
    }
    pub fn run_table1(_: BenchTable1Args) -> anyhow::Result<i32> {
        refuse()
    }
}

pub mod upcall {
    use crate::no_xdp::{refuse, Anything};

    pub type BenchXdpUpcallArgs = Anything;

    pub fn run(_: BenchXdpUpcallArgs) -> anyhow::Result<i32> {
        refuse()
    }
}
