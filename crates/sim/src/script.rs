//! Scenario scripts: readable tests whose expected output is written in the
//! test file itself (the form of etcd-io/raft's `testdata/*.txt`, run by
//! cockroachdb's `datadriven`).
//!
//! A script is a text file of cases. Each case is one command line, a line
//! `----`, and the output the command is expected to print, up to the next
//! blank line (or the end of the file). Lines starting with `#` between
//! cases are comments:
//!
//! ```text
//! # Gotthard section 3.1, Figure 3.
//! send client=clients.0 id=1 WRITE(1,a)
//! ----
//!
//! run for=100ms
//! ----
//!  10.000 ms clients.0 -> switch  REQ cl=1 req=1 [WRITE(1,"a")]
//! ```
//!
//! [`run_file`] hands each command to the test's interpreter, which runs it
//! (usually on a [`crate::Sim`] whose [`crate::Sim::take_packets`] it
//! prints) and returns what it printed. When a command's output differs from
//! the script, the test fails naming the file, the line, the command and the
//! first line where they part. With `INNET_REWRITE=1` in the environment
//! ([`REWRITE_ENV`]) the file is written back with the outputs the commands
//! gave instead: read the diff before committing it.
//!
//! This module knows no protocol: the interpreters live in the services'
//! tests (`crates/txn/tests/scenarios.rs`, ...) beside their `testdata/`.

use std::path::Path;
use std::str::FromStr;

use innet_core::{Dest, Host, Outbox, Time};

use crate::{Fate, LoggedPacket, NodeId, Sim};

/// Set to `1` to rewrite every script's expected outputs with what the
/// commands print now.
pub const REWRITE_ENV: &str = "INNET_REWRITE";

/// The line between a command and its expected output.
pub const SEPARATOR: &str = "----";

/// Lines a script may hold (a bound on what a test reads).
pub const SCRIPT_LINES_MAX: usize = 100_000;

/// One command of a script: its name and its arguments, split at spaces.
/// Arguments are `key=value` pairs or bare words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// The line of the file the command is on (from 1).
    pub line: usize,
    pub name: String,
    pub args: Vec<String>,
}

impl Command {
    /// Parses a command line.
    pub fn parse(line: usize, text: &str) -> Command {
        let mut words = text.split_whitespace().map(str::to_string);
        let name = words.next().unwrap_or_default();
        let command = Command { line, name, args: words.collect() };
        debug_assert!(!command.args.iter().any(String::is_empty));
        command
    }

    /// The value of argument `key=value`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        let value = self.args.iter().find_map(|a| a.strip_prefix(key)?.strip_prefix('='));
        debug_assert!(value.is_none() || !key.is_empty());
        value
    }

    /// The value of `key=value`, which the command needs.
    pub fn need(&self, key: &str) -> Result<&str, String> {
        self.get(key).ok_or_else(|| format!("'{}' needs {key}=...", self.name))
    }

    /// The value of `key=value` parsed as a `T`, or `default` when absent.
    pub fn parse_or<T: FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("'{}': {key}={v} does not parse", self.name)),
        }
    }

    /// The arguments without `=`, in order.
    pub fn words(&self) -> Vec<&str> {
        self.args.iter().filter(|a| !a.contains('=')).map(String::as_str).collect()
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)?;
        self.args.iter().try_for_each(|a| write!(f, " {a}"))
    }
}

/// A piece of a script: comment and blank lines kept as they are, or a case.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Case { command: Command, text: String, expected: Vec<String> },
}

/// Splits a script into its pieces. Errors name the line.
fn parse(script: &str) -> Result<Vec<Piece>, String> {
    let lines: Vec<&str> = script.lines().collect();
    if lines.len() > SCRIPT_LINES_MAX {
        return Err(format!("{} lines; a script holds at most {SCRIPT_LINES_MAX}", lines.len()));
    }
    let mut pieces = vec![];
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim().is_empty() || line.starts_with('#') {
            pieces.push(Piece::Text(line.to_string()));
            i += 1;
            continue;
        }
        if lines.get(i + 1).map(|l| l.trim_end()) != Some(SEPARATOR) {
            return Err(format!("line {}: a command is followed by a line '{SEPARATOR}'", i + 1));
        }
        let command = Command::parse(i + 1, line);
        let expected: Vec<String> =
            lines[i + 2..].iter().take_while(|l| !l.trim().is_empty()).map(|l| l.trim_end().to_string()).collect();
        i += 2 + expected.len();
        pieces.push(Piece::Case { command, text: line.to_string(), expected });
    }
    debug_assert!(i == lines.len());
    Ok(pieces)
}

/// The lines of a command's output as a script holds them (no trailing
/// spaces, no blank lines: a blank line ends a case).
fn output_lines(output: &str) -> Vec<String> {
    let lines: Vec<String> = output.lines().map(|l| l.trim_end().to_string()).filter(|l| !l.is_empty()).collect();
    debug_assert!(lines.iter().all(|l| !l.is_empty()));
    lines
}

/// Where `expected` and `got` first part, as a message (`None` if equal).
pub fn first_differing_line(expected: &[String], got: &[String]) -> Option<String> {
    let i = expected
        .iter()
        .zip(got)
        .position(|(e, g)| e != g)
        .or_else(|| (expected.len() != got.len()).then(|| expected.len().min(got.len())))?;
    let show = |l: Option<&String>| l.map_or("(no more lines)".to_string(), |l| format!("{l:?}"));
    debug_assert!(expected[..i] == got[..i]);
    Some(format!("output line {}:\n  expected {}\n  got      {}", i + 1, show(expected.get(i)), show(got.get(i))))
}

/// Runs every command of the script at `path` through `run` (whose
/// `Err(message)` prints as `error: message`) and compares each output with
/// the script's; panics at the first case that differs, naming the first
/// differing line. With [`REWRITE_ENV`] set to `1`, writes the outputs back
/// into the file instead.
pub fn run_file(path: &Path, mut run: impl FnMut(&Command) -> Result<String, String>) {
    let script = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let pieces = parse(&script).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rewrite = std::env::var(REWRITE_ENV).is_ok_and(|v| v == "1");
    let mut written = String::new();
    for piece in &pieces {
        match piece {
            Piece::Text(t) => {
                written.push_str(t);
                written.push('\n');
            }
            Piece::Case { command, text, expected } => {
                let got = output_lines(&run(command).unwrap_or_else(|e| format!("error: {e}")));
                if let (false, Some(diff)) = (rewrite, first_differing_line(expected, &got)) {
                    panic!(
                        "{}:{}: `{command}` printed something else; {diff}\nwhat it printed:\n{}\n\
                         (if the change is meant, rerun with {REWRITE_ENV}=1 and read the diff)",
                        path.display(),
                        command.line,
                        got.join("\n")
                    );
                }
                written.push_str(text);
                written.push('\n');
                written.push_str(SEPARATOR);
                written.push('\n');
                got.iter().for_each(|l| {
                    written.push_str(l);
                    written.push('\n');
                });
            }
        }
    }
    if rewrite && written != script {
        std::fs::write(path, written).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// Packets a [`Puppet`] holds to send (a bound on what a script queues).
pub const PUPPET_QUEUE_MAX: usize = 1_024;

/// An end host a script drives: it sends what the script queues
/// ([`Puppet::queue`], then [`Sim::wake`]) and keeps what it receives (the
/// log shows it too).
#[derive(Default)]
pub struct Puppet {
    to_send: Vec<(Dest, Vec<u8>)>,
    pub received: Vec<Vec<u8>>,
}

impl Puppet {
    /// Queues `bytes` for `dest`; they leave at the next tick.
    pub fn queue(&mut self, dest: Dest, bytes: Vec<u8>) -> Result<(), String> {
        if self.to_send.len() >= PUPPET_QUEUE_MAX {
            return Err(format!("a puppet holds at most {PUPPET_QUEUE_MAX} packets to send"));
        }
        self.to_send.push((dest, bytes));
        debug_assert!(self.next_tick().is_some());
        Ok(())
    }
}

impl Host for Puppet {
    fn on_packet(&mut self, _now: Time, packet: &[u8], _out: &mut Outbox) {
        self.received.push(packet.to_vec());
    }
    fn on_tick(&mut self, _now: Time, out: &mut Outbox) {
        for (dest, bytes) in self.to_send.drain(..) {
            out.send(dest, bytes);
        }
        debug_assert!(self.to_send.is_empty());
    }
    fn next_tick(&self) -> Option<Time> {
        // The simulator runs a tick in the past at once.
        (!self.to_send.is_empty()).then_some(Time::ZERO)
    }
}

/// Queues `bytes` at puppet `node` for `dest` and wakes it.
pub fn puppet_send(sim: &mut Sim, node: NodeId, dest: Dest, bytes: Vec<u8>) -> Result<(), String> {
    let name = sim.name(node).to_string();
    sim.host_mut::<Puppet>(node).ok_or_else(|| format!("'{name}' is not driven by the script"))?.queue(dest, bytes)?;
    sim.wake(node);
    Ok(())
}

/// Runs `sim` for `ms` more milliseconds and prints the packets it logged
/// ([`Sim::record_packets`]), one line each: the time in ms, the hop, and
/// the packet as `describe` puts it.
pub fn run_and_print(sim: &mut Sim, ms: f64, describe: impl Fn(&[u8]) -> String) -> String {
    let end = Time::from_secs_f64(sim.now().as_secs_f64() + ms / 1e3);
    sim.run_until(end);
    let packets = sim.take_packets();
    let lines: Vec<String> = packets.iter().map(|p| packet_line(sim, p, &describe)).collect();
    debug_assert_eq!(lines.len(), packets.len());
    lines.join("\n")
}

/// One logged packet as a line of a script's output: `at  from -> to  what`;
/// `at  X sends nothing on:  what` when switch X took the packet and sent
/// nothing (a drop, or a packet it consumed, as NetCRAQ's ACK at a
/// replica); `(lost: X is down)` when it reached a crashed node.
pub fn packet_line(sim: &Sim, p: &LoggedPacket, describe: impl Fn(&[u8]) -> String) -> String {
    let at = format!("{:8.3} ms", p.at.as_secs_f64() * 1e3);
    let (from, to, what) = (sim.name(p.from), sim.name(p.to), describe(&p.bytes));
    match p.fate {
        Fate::Delivered => format!("{at}  {from} -> {to}  {what}"),
        Fate::NodeDown => format!("{at}  {from} -> {to}  {what}  (lost: {to} is down)"),
        Fate::Dropped => format!("{at}  {to} sends nothing on:  {what}"),
    }
}

/// [`run_file`] for scripts that build their scenario: a `deploy` command
/// makes a fresh `S` with `deploy` (which also says what it built), every
/// other command goes to `step` with the current one.
pub fn run_scenario<S>(
    path: &Path,
    mut deploy: impl FnMut(&Command) -> Result<(S, String), String>,
    mut step: impl FnMut(&mut S, &Command) -> Result<String, String>,
) {
    let mut scenario: Option<S> = None;
    run_file(path, |cmd| {
        if cmd.name == "deploy" {
            let (s, shown) = deploy(cmd)?;
            scenario = Some(s);
            return Ok(shown);
        }
        step(scenario.as_mut().ok_or("deploy first")?, cmd)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "# a comment\n\necho a b\n----\na\nb\n\nquiet k=v\n----\n\necho c\n----\nc\n";

    #[test]
    fn a_script_parses_into_comments_and_cases() {
        let pieces = parse(SCRIPT).unwrap();
        let cases: Vec<(usize, String, Vec<String>)> = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Case { command, expected, .. } => Some((command.line, command.name.clone(), expected.clone())),
                Piece::Text(_) => None,
            })
            .collect();
        let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            cases,
            vec![
                (3, "echo".into(), lines(&["a", "b"])),
                (8, "quiet".into(), vec![]),
                (11, "echo".into(), lines(&["c"]))
            ]
        );
        let quiet = Command::parse(8, "quiet k=v word");
        assert_eq!((quiet.get("k"), quiet.get("x"), quiet.words()), (Some("v"), None, vec!["word"]));
        assert!(parse("echo a\nb\n").unwrap_err().contains("line 1"), "a command without '----'");
    }

    #[test]
    fn a_difference_names_its_first_line_and_equal_outputs_none() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(first_differing_line(&l(&["a", "b"]), &l(&["a", "b"])), None);
        let d = first_differing_line(&l(&["a", "b", "c"]), &l(&["a", "x", "c"])).unwrap();
        assert!(d.starts_with("output line 2:") && d.contains("\"b\"") && d.contains("\"x\""), "{d}");
        let d = first_differing_line(&l(&["a"]), &l(&["a", "more"])).unwrap();
        assert!(d.contains("(no more lines)") && d.contains("\"more\""), "{d}");
    }

    #[test]
    fn run_file_passes_matching_outputs_and_fails_at_the_first_differing_line() {
        let dir = std::env::temp_dir().join(format!("innet-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("echo.txt");
        std::fs::write(&path, SCRIPT).unwrap();
        let echo = |c: &Command| Ok(c.words().join("\n"));
        run_file(&path, echo);
        let wrong =
            std::panic::catch_unwind(|| run_file(&path, |c: &Command| Ok(format!("{}!", c.words().join("\n")))));
        let message = *wrong.unwrap_err().downcast::<String>().unwrap();
        assert!(message.contains("echo.txt:3: `echo a b`") && message.contains("output line 2:"), "{message}");
        assert!(message.contains("expected \"b\"") && message.contains("got      \"b!\""), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
