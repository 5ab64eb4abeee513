//! Running the reproduction registry and writing its report: every
//! registered [`Entry`] in [`ALL_RESULTS`] order, each into its own folder,
//! one failing entry not stopping the others; then `REPORT.md` and
//! `REPORT.html` (one self-contained page, plots embedded), listing all 26
//! results (an id with no registered entry as "not registered").

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use crate::entry::{Claim, Ctx, Entry, Outcome, Paper, Runtime, Verdict, LIVE_FIGURE_BESIDE, VERDICT_RULE};
use crate::registry::{result_dir, ALL_RESULTS};

/// What `innet reproduce` was asked for.
#[derive(Clone, Debug)]
pub struct Options {
    /// The report folder (`results/reproduce`).
    pub out: PathBuf,
    /// Only these ids (all when `None`).
    pub only: Option<Vec<String>>,
    pub scale: f64,
    pub seed: u64,
    pub runtime: Runtime,
}

/// One result's run: its outcome or the error it failed with.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ran {
    pub id: String,
    pub paper: Paper,
    pub figure: String,
    pub title: String,
    pub outcome: Result<Outcome, String>,
    pub seconds: f64,
    pub seed: u64,
    pub scale: f64,
    /// The runtime asked for (the outcome says where it ran).
    #[serde(serialize_with = "crate::entry::serialize_variant")]
    pub asked: Runtime,
    pub git_commit: String,
}

/// Progress of a run, for the terminal.
pub enum Progress<'a> {
    /// Entry `index` (0-based) of `total` starts; `expected_s` is its
    /// budget at this scale.
    Start { index: usize, total: usize, id: &'a str, expected_s: f64 },
    /// Entry `index` of `total` finished.
    Done { index: usize, total: usize, ran: &'a Ran },
}

/// Wall seconds a result is expected to take at scale 1.0 on 2 cores
/// (measured with other builds running; the progress bar's weights, the
/// report records what each took). An id not listed counts 20 s.
pub fn expected_seconds(id: &str) -> f64 {
    match id {
        "gotthard-fig7" => 5.0,
        "gotthard-fig13" => 15.0,
        "gotthard-fig14" => 25.0,
        "nocc-fig5" => 30.0,
        "caans-fig7a" => 35.0,
        "caans-fig7b" | "caans-table4" | "netcraq-fig4" => 1.0,
        "caans-fig7d" => 20.0,
        "caans-fig8" => 25.0,
        "netcraq-fig3" | "netcraq-fig6" => 5.0,
        "netcraq-fig5" => 4.0,
        "gotthard-fig9" | "gotthard-fig10" => 2.0,
        "gotthard-fig2" | "gotthard-fig6" | "gotthard-fig8" => 4.0,
        "gotthard-fig12" | "caans-fig2" => 8.0,
        "gotthard-fig11" | "caans-fig7c" | "caans-table1" => 12.0,
        "nocc-fig1" | "nocc-fig3" | "nocc-fig4" => 40.0,
        _ => 20.0,
    }
}

/// The entries `opts.only` selects, in [`ALL_RESULTS`] order; an id that is
/// not one of the 26 is an error naming them.
pub fn select<'a>(entries: &'a [Entry], opts: &Options) -> anyhow::Result<Vec<&'a Entry>> {
    if let Some(only) = &opts.only {
        for id in only {
            anyhow::ensure!(
                ALL_RESULTS.contains(&id.as_str()),
                "--only: '{id}' is not a result id; the ids are: {}",
                ALL_RESULTS.join(", ")
            );
        }
    }
    Ok(entries.iter().filter(|e| opts.only.as_ref().is_none_or(|o| o.iter().any(|x| x == e.id))).collect())
}

/// Runs `entries` one after the other, each into `<out>/<id>/` (an
/// `outcome.json` beside its records), catching an entry's error or panic
/// as its failure.
pub fn run(entries: &[&Entry], opts: &Options, mut progress: impl FnMut(Progress)) -> Vec<Ran> {
    let commit = innet_exp::results::git_commit();
    let total = entries.len();
    let mut out = vec![];
    for (index, e) in entries.iter().enumerate() {
        progress(Progress::Start { index, total, id: e.id, expected_s: expected_seconds(e.id) * opts.scale });
        let ctx = Ctx { out: result_dir(&opts.out, e.id), seed: opts.seed, scale: opts.scale, runtime: opts.runtime };
        let started = Instant::now();
        let outcome = std::fs::create_dir_all(&ctx.out)
            .map_err(|err| format!("creating {}: {err}", ctx.out.display()))
            .and_then(|_| match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (e.run)(&ctx))) {
                Ok(Ok(o)) => Ok(o),
                Ok(Err(err)) => Err(format!("{err:#}")),
                Err(p) => Err(format!(
                    "panicked: {}",
                    p.downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| p.downcast_ref::<&str>().copied())
                        .unwrap_or("(no message)")
                )),
            })
            .and_then(|o| if o.claims.is_empty() { Err("the outcome has no claims".to_string()) } else { Ok(o) });
        let ran = Ran {
            id: e.id.to_string(),
            paper: e.paper,
            figure: e.figure.to_string(),
            title: e.title.to_string(),
            outcome,
            seconds: started.elapsed().as_secs_f64(),
            seed: opts.seed,
            scale: opts.scale,
            asked: opts.runtime,
            git_commit: commit.clone(),
        };
        if let Ok(s) = serde_json::to_string_pretty(&ran) {
            let _ = std::fs::write(ctx.out.join("outcome.json"), s);
        }
        progress(Progress::Done { index, total, ran: &ran });
        out.push(ran);
    }
    out
}

/// A number in its unit: "1.53x", "22.0%", "34.2 us", "1.2k txn/s".
pub fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "x" => format!("{v:.2}x"),
        "%" => format!("{v:.1}%"),
        "" => innet_exp::plot::human(v),
        u => format!("{} {u}", innet_exp::plot::human(v)),
    }
}

fn paper_value(c: &Claim) -> String {
    c.paper.map_or_else(|| "(direction)".to_string(), |p| fmt_value(p, &c.unit))
}

/// Ours, with the spread over seeds where the claim ran several.
pub fn ours_text(c: &Claim) -> String {
    match &c.spread {
        Some(sp) => format!(
            "{} ({} seeds: {} to {}, spread {})",
            fmt_value(c.ours, &c.unit),
            sp.seeds,
            fmt_value(sp.min, &c.unit),
            fmt_value(sp.max, &c.unit),
            fmt_value(sp.width(), &c.unit)
        ),
        None => fmt_value(c.ours, &c.unit),
    }
}

/// "max committed/s, CAANS / libpaxos: 1.93x measured on XDP, 1.00x in
/// the simulator (measured costs); paper 2.24x" (or "... live on
/// loopback" where the simulator does not model the result, CAANS Figure
/// 7d: [`LIVE_FIGURE_BESIDE`]).
fn side_by_side(o: &Outcome, sim: &Claim) -> String {
    let c = &o.claims[0];
    let beside =
        if sim.what.starts_with(LIVE_FIGURE_BESIDE) { "live on loopback" } else { "in the simulator (measured costs)" };
    format!(
        "{}: {} {}, {} {beside}; paper {}",
        c.what,
        ours_text(c),
        o.obtained.short(),
        ours_text(sim),
        paper_value(c)
    )
}

/// The summary's "simulator" cell: the figure shown beside, marked
/// "(live)" where it is the live one ([`LIVE_FIGURE_BESIDE`]).
fn beside_value(s: &Claim) -> String {
    let v = fmt_value(s.ours, &s.unit);
    if s.what.starts_with(LIVE_FIGURE_BESIDE) {
        format!("{v} (live)")
    } else {
        v
    }
}

fn ratio_text(c: &Claim) -> String {
    c.ratio().map_or_else(|| "-".to_string(), |r| format!("{r:.2}"))
}

/// The summary's verdict cell: "yes (3/3)" only for a result that holds;
/// "partly (1/2)", "no (0/2)", "calibration", "model only (3/3 in the
/// model)"; "+ k calibration" where claims were calibrations.
pub fn verdict_text(o: &Outcome) -> String {
    let (h, n, cal) = o.claim_counts();
    let mut cal = if cal > 0 && n > 0 { format!(" + {cal} calibration") } else { String::new() };
    let beside = o.claims.iter().filter(|c| c.beside).count();
    if beside > 0 {
        cal.push_str(&format!(" + {beside} beside"));
    }
    match o.verdict() {
        Verdict::Holds => format!("yes ({h}/{n}){cal}"),
        Verdict::Partly => format!("partly ({h}/{n}){cal}"),
        Verdict::DoesNotHold => format!("no ({h}/{n}){cal}"),
        Verdict::Calibration => "calibration".to_string(),
        Verdict::ModelOnly => format!("model only ({h}/{n} in the model){cal}"),
    }
}

/// How many results have each verdict, in [`Verdict::ALL`] order.
pub fn verdict_counts(ran: &[Ran]) -> Vec<(Verdict, usize)> {
    Verdict::ALL
        .iter()
        .map(|v| (*v, ran.iter().filter(|r| r.outcome.as_ref().is_ok_and(|o| o.verdict() == *v)).count()))
        .collect()
}

/// "14 holds, 3 partly, ..." for the header and the terminal.
pub fn counts_line(ran: &[Ran]) -> String {
    verdict_counts(ran).iter().map(|(v, n)| format!("{n} {}", v.name())).collect::<Vec<_>>().join(", ")
}

/// `p` relative to the report folder where it lies inside it.
fn rel(report: &Path, p: &Path) -> PathBuf {
    p.strip_prefix(report).map(Path::to_path_buf).unwrap_or_else(|_| p.to_path_buf())
}

/// How to reach the repository root (where `docs/` is) from the report
/// folder: `../..` for `results/reproduce`, else the absolute path.
fn docs_prefix(report: &Path) -> String {
    let relative_down = report.is_relative() && report.components().all(|c| matches!(c, Component::Normal(_)));
    if relative_down {
        let depth = report.components().count();
        vec![".."; depth].join("/")
    } else {
        std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| ".".into())
    }
}

/// `text` with every `docs/<file>.md[#anchor]` made a link (Markdown or HTML).
fn link_docs(text: &str, prefix: &str, html: bool) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("docs/") {
        let (before, from) = rest.split_at(i);
        out.push_str(&if html { escape(before) } else { before.to_string() });
        let end = from
            .find(|c: char| c.is_whitespace() || c == ')' || c == ',' || c == ';' || c == '"')
            .unwrap_or(from.len());
        let mut target = &from[..end];
        // A sentence's full stop is not part of the link.
        if target.ends_with('.') {
            target = &target[..target.len() - 1];
        }
        let href = format!("{prefix}/{target}");
        if html {
            let _ = write!(out, "<a href=\"{}\">{}</a>", escape(&href), escape(target));
        } else {
            let _ = write!(out, "[{target}]({href})");
        }
        rest = &from[target.len()..];
    }
    out.push_str(&if html { escape(rest) } else { rest.to_string() });
    out
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The summary row's cells for one id: (title, paper's number, ours,
/// ratio, holds, seconds).
struct Row {
    id: String,
    paper: String,
    figure: String,
    title: String,
    headline: String,
    paper_num: String,
    ours: String,
    /// The simulator's figure for the same claim, where the result ran on
    /// XDP and the simulator predicts it too ([`Outcome::sim_headline`]).
    sim: String,
    ratio: String,
    obtained: String,
    holds: String,
    seconds: String,
}

fn rows(ran: &[Ran], entries: &[Entry]) -> Vec<Row> {
    ALL_RESULTS
        .iter()
        .map(|id| {
            let entry = entries.iter().find(|e| e.id == *id);
            let r = ran.iter().find(|r| r.id == *id);
            let (paper, figure, title) = match (r, entry) {
                (Some(r), _) => (r.paper.name().to_string(), r.figure.clone(), r.title.clone()),
                (None, Some(e)) => (e.paper.name().to_string(), e.figure.to_string(), e.title.to_string()),
                (None, None) => (paper_of(id).to_string(), "-".into(), "-".into()),
            };
            let blank = |holds: &str| Row {
                id: id.to_string(),
                paper: paper.clone(),
                figure: figure.clone(),
                title: title.clone(),
                headline: "-".into(),
                paper_num: "-".into(),
                ours: "-".into(),
                sim: "-".into(),
                ratio: "-".into(),
                obtained: "-".into(),
                holds: holds.into(),
                seconds: "-".into(),
            };
            match (r, entry) {
                (None, None) => blank("not registered"),
                (None, Some(_)) => blank("not run"),
                (Some(r), _) => match &r.outcome {
                    Err(_) => Row { seconds: format!("{:.1}", r.seconds), ..blank("failed") },
                    Ok(o) => {
                        let c = &o.claims[0];
                        Row {
                            headline: c.what.clone(),
                            paper_num: paper_value(c),
                            ours: fmt_value(c.ours, &c.unit),
                            sim: o.sim_headline.as_ref().map_or("-".into(), beside_value),
                            ratio: ratio_text(c),
                            obtained: o.obtained.short().to_string(),
                            holds: verdict_text(o),
                            seconds: format!("{:.1}", r.seconds),
                            ..blank("")
                        }
                    }
                },
            }
        })
        .collect()
}

/// The paper an id belongs to, from its prefix.
fn paper_of(id: &str) -> &'static str {
    match id.split('-').next() {
        Some("gotthard") => "Gotthard",
        Some("nocc") => "NOCC",
        Some("caans") => "CAANS",
        Some("netcraq") => "NetCRAQ",
        _ => "-",
    }
}

fn header_lines(opts: &Options, entries: &[Entry], ran: &[Ran], wall_s: f64) -> Vec<String> {
    let commit = ran.first().map_or_else(innet_exp::results::git_commit, |r| r.git_commit.clone());
    let load = std::fs::read_to_string("/proc/loadavg").map(|s| s.trim().to_string()).unwrap_or_default();
    let failed = ran.iter().filter(|r| r.outcome.is_err()).count();
    vec![
        format!("**Verdict rule.** {VERDICT_RULE}"),
        format!(
            "{} of the {} results run: {}; {failed} failed, {} not registered; wall time {wall_s:.1} s",
            ran.len(),
            ALL_RESULTS.len(),
            counts_line(ran),
            ALL_RESULTS.iter().filter(|id| !entries.iter().any(|e| e.id == **id)).count()
        ),
        format!(
            "scale {}, seed {}, runtime asked {}, git commit {commit}, load average at the end {load}",
            opts.scale,
            opts.seed,
            opts.runtime.name()
        ),
        "\"holds\": the result's verdict (yes only when every compared claim holds; n/m counts the compared claims \
         that hold; calibration claims and claims shown beside, such as the unsaturated run beside the paper's \
         saturated regime, are not compared; \"+ k beside\" counts those). \"how obtained\": measured live, \
         measured on the XDP data plane, the simulator with costs measured on this machine (a prediction; \
         crates/reproduce/measured-costs.json), or the simulator with a chosen model (each section names the \
         measurement or the parameter and its source). The summary shows each result's first \
         claim; ratio = ours / paper's; \"simulator\": where a result was measured on XDP and the simulator \
         predicts it too, the simulator's figure for the same claim (shown beside, not counted); marked \
         \"(live)\" where the simulator does not model the result (CAANS Figure 7d's LevelDB replicas) and the \
         figure beside is the live one, on loopback."
            .to_string(),
    ]
}

/// Writes `<out>/REPORT.md` and `<out>/REPORT.html`; their paths.
pub fn write_report(opts: &Options, entries: &[Entry], ran: &[Ran], wall_s: f64) -> anyhow::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(&opts.out)?;
    let md = opts.out.join("REPORT.md");
    let html = opts.out.join("REPORT.html");
    std::fs::write(&md, markdown(opts, entries, ran, wall_s))?;
    std::fs::write(&html, html_page(opts, entries, ran, wall_s))?;
    Ok((md, html))
}

fn markdown(opts: &Options, entries: &[Entry], ran: &[Ran], wall_s: f64) -> String {
    let prefix = docs_prefix(&opts.out);
    let mut s = String::new();
    let _ = writeln!(s, "# innet reproduce: the four papers' 26 results beside ours\n");
    for l in header_lines(opts, entries, ran, wall_s) {
        let _ = writeln!(s, "{l}\n");
    }
    markdown_summary(&mut s, ran, entries);
    for r in ran {
        markdown_result(&mut s, &opts.out, &prefix, r);
    }
    s
}

/// The summary table: one row per result, linked to its section if it ran.
fn markdown_summary(s: &mut String, ran: &[Ran], entries: &[Entry]) {
    let _ = writeln!(s, "## Summary\n");
    let _ = writeln!(
        s,
        "| id | paper | figure | title | headline claim | paper | ours | simulator | ratio | how obtained | holds | s |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows(ran, entries) {
        let link = if ran.iter().any(|x| x.id == r.id) { format!("[{0}](#{0})", r.id) } else { r.id.clone() };
        let _ = writeln!(
            s,
            "| {link} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.paper,
            md_cell(&r.figure),
            md_cell(&r.title),
            md_cell(&r.headline),
            r.paper_num,
            r.ours,
            r.sim,
            r.ratio,
            r.obtained,
            r.holds,
            r.seconds
        );
    }
}

/// Result `r`'s section: its plots (relative to the report's folder `out`),
/// verdict, claims, caveat and how it ran; documents linked under `prefix`.
fn markdown_result(s: &mut String, out: &Path, prefix: &str, r: &Ran) {
    let _ = writeln!(s, "\n<a id=\"{0}\"></a>\n\n## {0}: {1} {2}, {3}\n", r.id, r.paper.name(), r.figure, r.title);
    match &r.outcome {
        Err(e) => {
            let _ = writeln!(s, "**Failed** after {:.1} s: {}\n", r.seconds, md_cell(e));
        }
        Ok(o) => {
            for p in &o.plots {
                let _ = writeln!(s, "![{}]({})\n", r.id, rel(out, p).display());
            }
            let _ = writeln!(
                s,
                "**Verdict: {}.** How obtained: {}.\n",
                verdict_text(o),
                link_docs(&o.obtained.sentence(), prefix, false)
            );
            let _ = writeln!(s, "| what | paper says | paper | ours | ratio | rule | holds |");
            let _ = writeln!(s, "|---|---|---|---|---|---|---|");
            for c in &o.claims {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    md_cell(&c.what),
                    md_cell(&c.paper_text),
                    paper_value(c),
                    ours_text(c),
                    ratio_text(c),
                    md_cell(&c.rule),
                    match c.verdict_text() {
                        "no" => "**no**",
                        v => v,
                    }
                );
            }
            if let Some(sim) = &o.sim_headline {
                let _ = writeln!(s, "\n**Side by side:** {}", side_by_side(o, sim));
            }
            if let Some(w) = &o.why {
                let _ = writeln!(s, "\n**Caveat:** {}", link_docs(w, prefix, false));
            }
            let _ = writeln!(s, "\n* Configuration: {}", o.config);
            let ran_on = if o.ran_on == r.asked {
                o.ran_on.name().to_string()
            } else {
                format!("{} ({} asked; this result has no {} variant)", o.ran_on.name(), r.asked.name(), r.asked.name())
            };
            let _ = writeln!(s, "* Ran on: {ran_on}; seed {}; scale {}; git commit {}", r.seed, r.scale, r.git_commit);
            let recs: Vec<String> = o.records.iter().map(|p| rel(out, p).display().to_string()).collect();
            let _ = writeln!(s, "* Records: {}", recs.join(", "));
            let _ = writeln!(s, "* Wall time: {:.1} s", r.seconds);
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Standard base64 (RFC 4648) of `bytes`.
pub fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The report page's head: its style and title.
const HTML_HEAD: &str =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>innet reproduce</title>\n<style>\n\
         body{font-family:sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}\n\
         table{border-collapse:collapse;margin:1em 0;font-size:0.9em}\n\
         th,td{border:1px solid #bbb;padding:4px 8px;text-align:left;vertical-align:top}\n\
         th{background:#eee}\n.yes{background:#e3f5e1}\n.no{background:#fbe3e1}\n.gray{color:#777}\n\
         img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}\n\
         </style></head><body>\n<h1>innet reproduce: the four papers' 26 results beside ours</h1>\n";

fn html_page(opts: &Options, entries: &[Entry], ran: &[Ran], wall_s: f64) -> String {
    let prefix = docs_prefix(&opts.out);
    let mut s = String::new();
    s.push_str(HTML_HEAD);
    for l in header_lines(opts, entries, ran, wall_s) {
        let _ = writeln!(s, "<p>{}</p>", escape(&l));
    }
    html_summary(&mut s, ran, entries);
    for r in ran {
        html_result(&mut s, &opts.out, &prefix, r);
    }
    s.push_str("</body></html>\n");
    s
}

/// The summary table: one row per result, colored by its verdict, linked
/// to its section if it ran.
fn html_summary(s: &mut String, ran: &[Ran], entries: &[Entry]) {
    s.push_str("<h2>Summary</h2>\n<table><tr><th>id</th><th>paper</th><th>figure</th><th>title</th><th>headline claim</th><th>paper</th><th>ours</th><th>simulator</th><th>ratio</th><th>how obtained</th><th>holds</th><th>s</th></tr>\n");
    for r in rows(ran, entries) {
        let class = if r.holds.starts_with("yes") {
            "yes"
        } else if r.holds.starts_with("no") || r.holds.starts_with("partly") || r.holds == "failed" {
            "no"
        } else {
            "gray"
        };
        let id = if ran.iter().any(|x| x.id == r.id) {
            format!("<a href=\"#{0}\">{0}</a>", escape(&r.id))
        } else {
            escape(&r.id)
        };
        let _ = writeln!(
            s,
            "<tr class=\"{class}\"><td>{id}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.paper),
            escape(&r.figure),
            escape(&r.title),
            escape(&r.headline),
            escape(&r.paper_num),
            escape(&r.ours),
            escape(&r.sim),
            escape(&r.ratio),
            escape(&r.obtained),
            escape(&r.holds),
            escape(&r.seconds)
        );
    }
    s.push_str("</table>\n");
}

/// Result `r`'s section: its plots (relative to the report's folder `out`),
/// verdict, claims, caveat and how it ran; documents linked under `prefix`.
fn html_result(s: &mut String, out: &Path, prefix: &str, r: &Ran) {
    let _ = writeln!(
        s,
        "<h2 id=\"{0}\">{0}: {1} {2}, {3}</h2>",
        escape(&r.id),
        r.paper.name(),
        escape(&r.figure),
        escape(&r.title)
    );
    match &r.outcome {
        Err(e) => {
            let _ = writeln!(s, "<p class=\"no\"><b>Failed</b> after {:.1} s: {}</p>", r.seconds, escape(e));
        }
        Ok(o) => {
            html_plots(s, out, &o.plots);
            let _ = writeln!(
                s,
                "<p><b>Verdict: {}.</b> How obtained: {}.</p>",
                escape(&verdict_text(o)),
                link_docs(&o.obtained.sentence(), prefix, true)
            );
            html_claims(s, &o.claims);
            if let Some(sim) = &o.sim_headline {
                let _ = writeln!(s, "<p><b>Side by side:</b> {}</p>", escape(&side_by_side(o, sim)));
            }
            if let Some(w) = &o.why {
                let _ = writeln!(s, "<p><b>Caveat:</b> {}</p>", link_docs(w, prefix, true));
            }
            let recs: Vec<String> = o.records.iter().map(|p| rel(out, p).display().to_string()).collect();
            let _ = writeln!(
                s,
                "<ul><li>Configuration: {}</li><li>Ran on: {} (asked {}); seed {}; scale {}; git commit {}</li><li>Records: {}</li><li>Wall time: {:.1} s</li></ul>",
                escape(&o.config),
                o.ran_on.name(),
                r.asked.name(),
                r.seed,
                r.scale,
                escape(&r.git_commit),
                escape(&recs.join(", ")),
                r.seconds
            );
        }
    }
}

/// `plots` as images inlined in the page (paths relative to `out`), or a
/// line saying why one could not be read.
fn html_plots(s: &mut String, out: &Path, plots: &[PathBuf]) {
    for p in plots {
        let path = if p.is_absolute() { p.clone() } else { out.join(p) };
        match std::fs::read(&path).or_else(|_| std::fs::read(p)) {
            Ok(bytes) => {
                let _ = writeln!(
                    s,
                    "<p><img alt=\"{}\" src=\"data:image/png;base64,{}\"></p>",
                    escape(&rel(out, p).display().to_string()),
                    base64(&bytes)
                );
            }
            Err(e) => {
                let _ = writeln!(
                    s,
                    "<p class=\"no\">plot {} unreadable: {}</p>",
                    escape(&p.display().to_string()),
                    escape(&e.to_string())
                );
            }
        }
    }
}

/// The claims table, each row colored by its verdict.
fn html_claims(s: &mut String, claims: &[Claim]) {
    s.push_str("<table><tr><th>what</th><th>paper says</th><th>paper</th><th>ours</th><th>ratio</th><th>rule</th><th>holds</th></tr>\n");
    for c in claims {
        let _ = writeln!(
            s,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            match c.verdict_text() {
                "yes" => "yes",
                "no" => "no",
                _ => "gray",
            },
            escape(&c.what),
            escape(&c.paper_text),
            escape(&paper_value(c)),
            escape(&ours_text(c)),
            escape(&ratio_text(c)),
            escape(&c.rule),
            c.verdict_text()
        );
    }
    s.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o, "{i}");
        }
    }

    #[test]
    fn doc_references_become_links_without_the_full_stop() {
        let t = link_docs("see docs/txn.md#figure-7. And docs/tpcc.md", "../..", false);
        assert_eq!(t, "see [docs/txn.md#figure-7](../../docs/txn.md#figure-7). And [docs/tpcc.md](../../docs/tpcc.md)");
        let h = link_docs("a < b, docs/x.md", "..", true);
        assert_eq!(h, "a &lt; b, <a href=\"../docs/x.md\">docs/x.md</a>");
    }

    #[test]
    fn docs_prefix_climbs_out_of_a_relative_report_folder() {
        assert_eq!(docs_prefix(Path::new("results/reproduce")), "../..");
    }
}
