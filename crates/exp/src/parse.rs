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
pub const MAX_SLOTS: usize = 1 << 24;

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
        assert_eq!(listen_addr("[::1]:0"), Ok("[::1]:0".parse().unwrap()));
        for bad in ["127.0.0.1", "127.0.0.1:65536", "127.0.0.1:-1", ":9100", "no such host.invalid:1", "1.2.3:x"] {
            assert!(listen_addr(bad).is_err(), "{bad}");
        }
    }
}
