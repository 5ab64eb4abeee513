//! The flag parsers every subcommand shares: each number a flag takes is
//! range-checked here (finite, non-negative, within what a duration, a port
//! or the memory of this machine can hold), so a careless value is refused
//! with one line before anything starts, never a panic or a hang later.

/// The longest delay or timeout a flag takes, ms (a day: beyond is a typo,
/// and `Duration::from_secs_f64` cannot hold every float).
pub const MAX_MS: f64 = 86_400_000.0;
/// The longest run a flag takes, seconds (a day).
pub const MAX_S: f64 = 86_400.0;
/// The most table slots (switch cache, acceptor history) a flag takes: 2^24.
pub const MAX_SLOTS: usize = innet_core::limits::TABLE_SLOTS_MAX;

fn number(s: &str, what: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("'{s}' is not a number ({what})")),
    }
}

/// A delay in ms: 0 ..= a day.
pub fn delay_ms(s: &str) -> Result<f64, String> {
    let v = number(s, "milliseconds, e.g. 10 or 2.5")?;
    if !(0.0..=MAX_MS).contains(&v) {
        return Err(format!("{s} ms is out of range: expected 0 to {MAX_MS} (a day)"));
    }
    Ok(v)
}

/// A delay or cost in microseconds: 0 ..= a day.
pub fn delay_us(s: &str) -> Result<f64, String> {
    let v = number(s, "microseconds, e.g. 50 or 2.5")?;
    if !(0.0..=MAX_MS * 1e3).contains(&v) {
        return Err(format!("{s} us is out of range: expected 0 to {} (a day)", MAX_MS * 1e3));
    }
    Ok(v)
}

/// A rate in events per second: > 0 ..= 1e9.
pub fn rate(s: &str) -> Result<f64, String> {
    let v = number(s, "events per second, e.g. 10000")?;
    if !(v > 0.0 && v <= 1e9) {
        return Err(format!("{s} per second is out of range: expected more than 0 and at most 1e9"));
    }
    Ok(v)
}

/// A timeout in ms: > 0 (a zero timeout resends without pause) ..= a day.
pub fn timeout_ms(s: &str) -> Result<f64, String> {
    let v = delay_ms(s)?;
    if v <= 0.0 {
        return Err(format!("{s} ms: a timeout must be > 0 (0 would resend without pause)"));
    }
    Ok(v)
}

/// A whole number of ms for a timeout: 1 ..= a day.
pub fn timeout_ms_u64(s: &str) -> Result<u64, String> {
    let v: u64 = s.trim().parse().map_err(|_| format!("'{s}' is not a whole number of milliseconds"))?;
    if v == 0 || v as f64 > MAX_MS {
        return Err(format!("{v} ms is out of range: expected 1 to {MAX_MS} (0 would resend without pause)"));
    }
    Ok(v)
}

/// A run length in seconds: > 0 ..= a day.
pub fn seconds(s: &str) -> Result<f64, String> {
    let v = number(s, "seconds, e.g. 5 or 0.5")?;
    if !(v > 0.0 && v <= MAX_S) {
        return Err(format!("{s} s is out of range: expected more than 0 and at most {MAX_S} (a day)"));
    }
    Ok(v)
}

/// A moment in a run, seconds from its start: 0 ..= a day.
pub fn at_seconds(s: &str) -> Result<f64, String> {
    let v = number(s, "seconds from the start, e.g. 1.5")?;
    if !(0.0..=MAX_S).contains(&v) {
        return Err(format!("{s} s is out of range: expected 0 to {MAX_S} (a day)"));
    }
    Ok(v)
}

/// A share or probability: 0 ..= 1.
pub fn ratio(s: &str) -> Result<f64, String> {
    let v = number(s, "a ratio from 0 to 1, e.g. 0.5")?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{s} is out of range: expected a ratio from 0 to 1, e.g. 0.5"));
    }
    Ok(v)
}

/// A non-negative real number below 1e6 (a Zipf exponent, a rate factor).
pub fn non_negative(s: &str) -> Result<f64, String> {
    let v = number(s, "a number >= 0")?;
    if !(0.0..1e6).contains(&v) {
        return Err(format!("{s} is out of range: expected a number from 0 to 1e6"));
    }
    Ok(v)
}

/// A run size (`innet bench txn --figure --scale`): above 0, at most 100.
pub fn run_scale(s: &str) -> Result<f64, String> {
    let v = number(s, "a run size above 0")?;
    if !(v > 0.0 && v <= 100.0) {
        return Err(format!(
            "{s} is out of range: expected a run size above 0 and at most 100 (1 = the documented size)"
        ));
    }
    Ok(v)
}

/// Slots of a table whose entries take `bytes_each` bytes: a power of two
/// from `min` to [`MAX_SLOTS`]; the error gives the memory it would take.
pub fn table_slots(s: &str, min: usize, bytes_each: usize) -> Result<usize, String> {
    let n: u128 = s.trim().parse().map_err(|_| format!("'{s}' is not a whole number of slots"))?;
    if n > MAX_SLOTS as u128 {
        let gb = n as f64 * bytes_each as f64 / 1e9;
        return Err(format!(
            "{n} slots would take about {gb:.1} GB of memory ({bytes_each} bytes a slot); at most {MAX_SLOTS} ({:.1} GB)",
            (MAX_SLOTS * bytes_each) as f64 / 1e9
        ));
    }
    let n = n as usize;
    if n < min || !n.is_power_of_two() {
        return Err(format!("{n} slots: expected a power of two from {min} to {MAX_SLOTS}"));
    }
    Ok(n)
}

/// Memory a transaction switch takes per cache slot (its cache and client
/// tables), bytes, as measured on this build's layout.
const CACHE_SLOT_BYTES: usize = 56;
/// Memory an acceptor takes per slot, bytes, as measured on this build's layout.
const ACCEPTOR_SLOT_BYTES: usize = 16;

/// The switch cache's slots (a power of two >= the associativity).
pub fn cache_slots(s: &str) -> Result<usize, String> {
    table_slots(s, innet_core::table::WAYS, CACHE_SLOT_BYTES)
}

/// `--pack`: client values per instance's value, 1 (off) to
/// [`innet_paxos::envelope::PACK_MAX`].
pub fn pack(s: &str) -> Result<usize, String> {
    let max = innet_paxos::envelope::PACK_MAX;
    match s.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("must be a whole number from 1 (no packing) to {max}")),
    }
}

/// An acceptor's slots (a power of two).
pub fn acceptor_slots(s: &str) -> Result<usize, String> {
    table_slots(s, 1, ACCEPTOR_SLOT_BYTES)
}

/// The first of `count` consecutive ports from `base`, refused if the last
/// one would not be a port (`what` names the flag).
pub fn port_span(what: &str, base: u16, count: usize) -> Result<(), String> {
    if base as usize + count.saturating_sub(1) > u16::MAX as usize {
        return Err(format!(
            "{what} {base} cannot hold {count} consecutive ports (the last would be {}); use at most {}",
            base as usize + count - 1,
            (u16::MAX as usize + 1).saturating_sub(count)
        ));
    }
    Ok(())
}

/// A whole number of `what` from `min` to `max`; the error names the
/// bound (`limit`, listed in docs/security.md) so that the fix is plain.
fn count<T: TryFrom<u128>>(s: &str, what: &str, min: u128, max: u128, limit: &str) -> Result<T, String> {
    let n: u128 = s.trim().parse().map_err(|_| format!("'{s}' is not a whole number of {what}"))?;
    if n < min || n > max {
        return Err(format!("{n} {what} is out of range: expected {min} to {max} (the limit {limit})"));
    }
    T::try_from(n).map_err(|_| format!("{n} {what} does not fit"))
}

/// `Ok` if `v` is in `min..=max`, else the one line that says so, naming
/// the flag and the bound (`limit`): for configurations checked after
/// parsing (a topology's counts, the Python package's arguments).
pub fn within<T: PartialOrd + std::fmt::Display>(flag: &str, v: T, min: T, max: T, limit: &str) -> Result<(), String> {
    if v < min || v > max {
        return Err(format!("{flag} {v} must be from {min} to {max} (the limit {limit})"));
    }
    Ok(())
}

/// Transaction or TPC-C clients: 1 ..= [`innet_core::limits::CLIENTS_MAX`].
pub fn clients(s: &str) -> Result<u32, String> {
    count(s, "clients", 1, innet_core::limits::CLIENTS_MAX as u128, "CLIENTS_MAX")
}

/// Keys of a transaction workload: 1 ..= [`innet_core::limits::TXN_KEYS_MAX`].
pub fn txn_keys(s: &str) -> Result<u32, String> {
    count(s, "keys", 1, innet_core::limits::TXN_KEYS_MAX as u128, "TXN_KEYS_MAX")
}

/// Keys one transaction touches: 1 ..= [`innet_txn::workload::SPAN_MAX`]
/// (its ops fit 255 fragments).
pub fn span(s: &str) -> Result<u32, String> {
    count(s, "keys per transaction", 1, innet_txn::workload::SPAN_MAX as u128, "SPAN_MAX, 255 fragments of 7 ops")
}

/// Edge switches of a transaction tree: 0 ..= [`innet_core::limits::CLIENTS_MAX`]
/// (each in front of at least one client).
pub fn edge_switches(s: &str) -> Result<u32, String> {
    count(s, "edge switches", 0, innet_core::limits::CLIENTS_MAX as u128, "CLIENTS_MAX")
}

/// Keys of a chain workload (`0..N`): 1 ..= [`innet_chain::netcraq::OBJECTS_MAX`]
/// (and at most the chain's objects, checked with the deployment).
pub fn chain_keys(s: &str) -> Result<u32, String> {
    count(s, "keys", 1, innet_chain::netcraq::OBJECTS_MAX as u128, "OBJECTS_MAX")
}

/// Paxos acceptors: 1 ..= [`innet_paxos::MAX_ACCEPTORS`].
pub fn acceptors(s: &str) -> Result<usize, String> {
    count(s, "acceptors", 1, innet_paxos::MAX_ACCEPTORS as u128, "MAX_ACCEPTORS, the learners' vote bitmaps")
}

/// Paxos learners: 1 ..= [`innet_paxos::MAX_LEARNERS`].
pub fn learners(s: &str) -> Result<usize, String> {
    count(s, "learners", 1, innet_paxos::MAX_LEARNERS as u128, "MAX_LEARNERS, the acceptors' checkpoint registers")
}

/// Learners that must checkpoint before a slot is reused: 0 (a majority)
/// ..= [`innet_paxos::MAX_LEARNERS`] (and at most `--learners`, checked
/// with the other flags).
pub fn trim_quorum(s: &str) -> Result<usize, String> {
    count(s, "learners", 0, innet_paxos::MAX_LEARNERS as u128, "MAX_LEARNERS")
}

/// Paxos proposers: 1 ..= [`innet_core::limits::PROPOSERS_MAX`].
pub fn proposers(s: &str) -> Result<usize, String> {
    count(s, "proposers", 1, innet_core::limits::PROPOSERS_MAX as u128, "PROPOSERS_MAX")
}

/// Built-in load proposers: 0 (none) ..= [`innet_core::limits::PROPOSERS_MAX`].
pub fn load_proposers(s: &str) -> Result<usize, String> {
    count(s, "proposers", 0, innet_core::limits::PROPOSERS_MAX as u128, "PROPOSERS_MAX")
}

/// Requests a proposer keeps in flight: 1 ..= [`innet_core::limits::OUTSTANDING_MAX`].
pub fn outstanding(s: &str) -> Result<usize, String> {
    count(s, "requests in flight", 1, innet_core::limits::OUTSTANDING_MAX as u128, "OUTSTANDING_MAX")
}

/// A node's position in a chain (0: the head); `< --nodes` is checked
/// with the chain's length.
pub fn chain_position(s: &str) -> Result<usize, String> {
    s.parse().map_err(|_| format!("'{s}' is not a chain position (0 = head, 1 = the next node, ...)"))
}

/// Seeds of a check: 1 ..= [`innet_core::limits::CHECK_SEEDS_MAX`].
pub fn check_seeds(s: &str) -> Result<u64, String> {
    count(s, "seeds", 1, innet_core::limits::CHECK_SEEDS_MAX as u128, "CHECK_SEEDS_MAX")
}

/// Measured requests of a benchmark round: 1 ..= [`innet_core::limits::BENCH_REQUESTS_MAX`].
pub fn bench_requests(s: &str) -> Result<usize, String> {
    count(s, "requests", 1, innet_core::limits::BENCH_REQUESTS_MAX as u128, "BENCH_REQUESTS_MAX")
}

/// Warm-up requests of a benchmark round: 0 ..= [`innet_core::limits::BENCH_REQUESTS_MAX`].
pub fn bench_warmup(s: &str) -> Result<usize, String> {
    count(s, "requests", 0, innet_core::limits::BENCH_REQUESTS_MAX as u128, "BENCH_REQUESTS_MAX")
}

/// Rounds or runs of a benchmark: 1 ..= [`innet_core::limits::BENCH_ROUNDS_MAX`].
pub fn bench_rounds(s: &str) -> Result<usize, String> {
    count(s, "rounds", 1, innet_core::limits::BENCH_ROUNDS_MAX as u128, "BENCH_ROUNDS_MAX")
}

/// Requests in flight in a benchmark: 1 ..= [`innet_core::limits::BENCH_WINDOW_MAX`].
pub fn bench_window(s: &str) -> Result<usize, String> {
    count(s, "requests in flight", 1, innet_core::limits::BENCH_WINDOW_MAX as u128, "BENCH_WINDOW_MAX")
}

/// Single test runs per program: 1 ..= [`innet_core::limits::TEST_RUNS_MAX`].
pub fn test_runs(s: &str) -> Result<u32, String> {
    count(s, "runs", 1, innet_core::limits::TEST_RUNS_MAX as u128, "TEST_RUNS_MAX")
}

/// A whole number of ms for a phase that may be left out: 0 ..= a day.
pub fn whole_ms(s: &str) -> Result<u64, String> {
    let max = MAX_MS as u64;
    count(s, "milliseconds", 0, max as u128, "a day")
}

/// A parser for one of `names` (a list flag's items with `value_delimiter`),
/// each mapped to `T` by its `FromStr`: clap lists the choices on a bad
/// value, and a name outside them (an old spelling) is refused.
pub fn one_of<T>(names: impl IntoIterator<Item = &'static str>) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::fmt::Debug,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names).map(|s| s.parse::<T>().expect("every listed name parses"))
}

/// A transaction switch mode (`--modes`).
pub fn mode() -> impl clap::builder::TypedValueParser<Value = innet_txn::Mode> {
    one_of(innet_txn::Mode::ALL.map(innet_txn::Mode::name))
}

/// A chain protocol (`--protocols`).
pub fn protocol() -> impl clap::builder::TypedValueParser<Value = innet_chain::Protocol> {
    one_of(innet_chain::Protocol::ALL.map(innet_chain::Protocol::name))
}

/// Where a simulated Paxos deployment's coordinator and acceptors run
/// (`--data-planes` of `innet check paxos`): `switch` or `process` (the
/// earlier name `software` is refused with these two).
pub fn sim_data_plane() -> impl clap::builder::TypedValueParser<Value = innet_core::deploy::DataPlaneAt> {
    use innet_core::deploy::DataPlaneAt;
    one_of([DataPlaneAt::Switch, DataPlaneAt::Process].map(DataPlaneAt::name))
}

/// Where a Paxos deployment's coordinator and acceptors run (`--data-plane`):
/// `switch`, `process` or `xdp`; `software` is refused with the choices.
pub fn data_plane() -> impl clap::builder::TypedValueParser<Value = innet_core::deploy::DataPlaneAt> {
    one_of(innet_core::deploy::DataPlaneAt::ALL.map(innet_core::deploy::DataPlaneAt::name))
}

/// Seeds a check runs: `count` seeds from `first`, wrapping past
/// `u64::MAX` to 0 (a seed is a name, not a quantity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds {
    pub first: u64,
    pub count: u64,
}

impl Seeds {
    /// Just `seed`.
    pub fn one(seed: u64) -> Seeds {
        Seeds { first: seed, count: 1 }
    }

    pub fn iter(self) -> impl Iterator<Item = u64> {
        (0..self.count).map(move |i| self.first.wrapping_add(i))
    }
}

/// An output folder (`--out`), checked up front: it, or the folder it
/// will be created in, must take a file ([`crate::results::check_writable`]).
pub fn out_dir(s: &str) -> Result<std::path::PathBuf, String> {
    let p = std::path::PathBuf::from(s);
    crate::results::check_writable(&p).map_err(|e| format!("{e}: choose a folder you can write to"))?;
    Ok(p)
}

/// A key file (`--auth-key FILE`), read and checked now: a bad file is
/// one line before anything runs.
pub fn key_file(s: &str) -> Result<innet_live::auth::KeyFile, String> {
    // clap names the flag and the value; the reason without them.
    innet_live::auth::KeyFile::read(std::path::Path::new(s))
        .map_err(|e| e.strip_prefix(&format!("--auth-key {s}: ")).map_or(e.clone(), str::to_string))
}

/// An address to listen on, `HOST:PORT` (port 0: any free port; a host
/// name is resolved, IPv6 in brackets).
pub fn listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
    let form = "expected HOST:PORT, e.g. 127.0.0.1:9100 (port 0: any free port)";
    let (host, port) = s.trim().rsplit_once(':').ok_or_else(|| format!("'{s}' has no port; {form}"))?;
    let port: u16 = port.parse().map_err(|_| format!("'{s}': '{port}' is not a port (0 to 65535); {form}"))?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if host.is_empty() {
        return Err(format!("'{s}' has no host; {form}"));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    match (host, port).to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(a)) => Ok(a),
        _ => Err(format!("'{s}': '{host}' is not an IP address or a name that resolves; {form}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(delay_ms("2.5"), Ok(2.5));
        for bad in ["-1", "nan", "inf", "1e300", "x"] {
            assert!(delay_ms(bad).is_err(), "{bad}");
            assert!(seconds(bad).is_err(), "{bad}");
            assert!(ratio(bad).is_err(), "{bad}");
        }
        assert!(timeout_ms("0").is_err());
        assert!(timeout_ms_u64("0").is_err());
        assert!(seconds("0").is_err());
        assert_eq!(at_seconds("0"), Ok(0.0));
        assert!(cache_slots("4294967296").unwrap_err().contains("GB"));
        assert!(cache_slots("6").is_err());
        assert_eq!(cache_slots("4096"), Ok(4096));
        assert!(port_span("--base-port", 65530, 8).is_err());
        assert!(port_span("--base-port", 65528, 8).is_ok());
        assert_eq!(listen_addr("127.0.0.1:9100"), Ok("127.0.0.1:9100".parse().unwrap()));
        assert_eq!(clients("4096"), Ok(4096));
        for bad in ["0", "4097", "4294967296", "-1", "1e3"] {
            assert!(clients(bad).is_err(), "{bad}");
        }
        assert!(clients("4294967295").unwrap_err().contains("CLIENTS_MAX"));
        assert!(outstanding("4294967296").unwrap_err().contains("OUTSTANDING_MAX"));
        assert_eq!(trim_quorum("0"), Ok(0));
        let wrapping = Seeds { first: u64::MAX, count: 3 };
        assert_eq!(wrapping.iter().collect::<Vec<_>>(), vec![u64::MAX, 0, 1], "seeds wrap, on purpose");
        assert_eq!(listen_addr("[::1]:0"), Ok("[::1]:0".parse().unwrap()));
        for bad in ["127.0.0.1", "127.0.0.1:65536", "127.0.0.1:-1", ":9100", "no such host.invalid:1", "1.2.3:x"] {
            assert!(listen_addr(bad).is_err(), "{bad}");
        }
    }
}
