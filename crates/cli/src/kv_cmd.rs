//! `innet kv put|get|del|cas --replicas A,B,C`: one request to the
//! consensus-replicated key-value service (`innet kv-replica` processes'
//! client ports), failing over between the replicas by itself
//! (`innet_paxos_kv::KvNetClient`).

use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum KvCmd {
    /// Set KEY to VALUE (or to the contents of --value-file).
    Put(PutArgs),
    /// Print KEY's value on stdout as raw bytes (exit status 1 if there is none).
    Get(KeyArgs),
    /// Delete KEY.
    Del(KeyArgs),
    /// Set KEY to VALUE only if it holds --expect (or is absent: --expect-absent); exit status 1 if not.
    Cas(CasArgs),
}

#[derive(Args, Debug)]
pub struct Target {
    /// The replicas' client ports (`client HOST:PORT` in `innet kv-replica`'s output), comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    replicas: Vec<std::net::SocketAddr>,
    /// Wait this long for one replica before trying the next (ms).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    timeout_ms: u64,
}

#[derive(Args, Debug)]
pub struct KeyArgs {
    key: String,
    #[command(flatten)]
    target: Target,
}

#[derive(Args, Debug)]
pub struct PutArgs {
    key: String,
    #[arg(required_unless_present = "value_file")]
    value: Option<String>,
    /// Read the value from this file (up to 1 MiB).
    #[arg(long, conflicts_with = "value")]
    value_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    target: Target,
}

#[derive(Args, Debug)]
pub struct CasArgs {
    key: String,
    #[arg(required_unless_present = "value_file")]
    value: Option<String>,
    #[arg(long, conflicts_with = "value")]
    value_file: Option<std::path::PathBuf>,
    /// The value KEY must hold.
    #[arg(long, required_unless_present = "expect_absent")]
    expect: Option<String>,
    /// KEY must be absent.
    #[arg(long, conflicts_with = "expect")]
    expect_absent: bool,
    #[command(flatten)]
    target: Target,
}

fn value(v: Option<String>, file: Option<std::path::PathBuf>) -> anyhow::Result<Vec<u8>> {
    let v = match (v, file) {
        (Some(v), _) => v.into_bytes(),
        (None, Some(f)) => std::fs::read(&f).map_err(|e| anyhow::anyhow!("--value-file {}: {e}", f.display()))?,
        (None, None) => anyhow::bail!("give a VALUE or --value-file"),
    };
    let max = innet_wire::kv::VALUE_MAX;
    anyhow::ensure!(v.len() <= max, "the value has {} bytes; at most {max} (1 MiB) fit", v.len());
    Ok(v)
}

#[cfg(feature = "leveldb")]
pub fn run(cmd: KvCmd) -> anyhow::Result<i32> {
    use std::io::Write;
    let connect = |t: &Target| -> anyhow::Result<innet_paxos_kv::KvNetClient> {
        let mut c = innet_paxos_kv::KvNetClient::connect(&t.replicas)?;
        c.timeout = std::time::Duration::from_millis(t.timeout_ms);
        Ok(c)
    };
    let key_max = innet_wire::kv::KEY_MAX;
    let check_key = |k: &str| -> anyhow::Result<()> {
        anyhow::ensure!(k.len() <= key_max, "the key has {} bytes; at most {key_max} fit", k.len());
        Ok(())
    };
    match cmd {
        KvCmd::Put(a) => {
            check_key(&a.key)?;
            let v = value(a.value, a.value_file)?;
            connect(&a.target)?.put(a.key.as_bytes(), &v)?;
            println!("ok");
            Ok(0)
        }
        KvCmd::Get(a) => {
            check_key(&a.key)?;
            match connect(&a.target)?.get(a.key.as_bytes())? {
                Some(v) => {
                    std::io::stdout().write_all(&v)?;
                    Ok(0)
                }
                None => {
                    eprintln!("innet: kv get: no key {:?}", a.key);
                    Ok(1)
                }
            }
        }
        KvCmd::Del(a) => {
            check_key(&a.key)?;
            connect(&a.target)?.delete(a.key.as_bytes())?;
            println!("ok");
            Ok(0)
        }
        KvCmd::Cas(a) => {
            check_key(&a.key)?;
            let v = value(a.value, a.value_file)?;
            let expected = a.expect.map(String::into_bytes);
            if connect(&a.target)?.cas(a.key.as_bytes(), expected.as_deref(), &v)? {
                println!("ok");
                Ok(0)
            } else {
                eprintln!("innet: kv cas: {:?} does not hold the expected value; nothing changed", a.key);
                Ok(1)
            }
        }
    }
}

#[cfg(not(feature = "leveldb"))]
pub fn run(cmd: KvCmd) -> anyhow::Result<i32> {
    let _ = (cmd, value);
    anyhow::bail!(
        "this innet was built without the key-value service (cargo feature `leveldb`): install libleveldb-dev \
         and build with the default features"
    )
}
