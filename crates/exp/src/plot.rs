//! PNG plots made from result records (never from re-typed numbers).
//!
//! [`lines_png`] draws any set of named `(x, y)` series as lines with markers;
//! [`txn_figure7`] lays out two such panels like Gotthard's Figure 7
//! (throughput and latency against the write ratio, one line per switch mode).
//!
//! Text is rendered with `ab_glyph`, which has no system font lookup: the
//! DejaVu Sans font (Debian package `fonts-dejavu-core`) is loaded from disk
//! once and registered as the `sans-serif` family.

use std::path::Path;
use std::sync::Mutex;

use anyhow::{anyhow, bail, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

use crate::txn::TxnPointResult;

/// Where the font is read from (Debian `fonts-dejavu-core`).
pub const FONT_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Size of a one-panel figure, in pixels.
pub const SINGLE_SIZE_PX: (u32, u32) = (1000, 700);
/// Size of the two-panel Figure 7, in pixels.
pub const FIGURE7_SIZE_PX: (u32, u32) = (1800, 750);

/// One colour and marker per series, in order; colour-blind friendly
/// (Okabe-Ito) and distinguishable in grey by marker shape.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

static FONT_REGISTERED: Mutex<bool> = Mutex::new(false);

/// Reads a font file, or says which package provides it.
fn read_font(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        anyhow!(
            "cannot read the plot font {}: {e}; install it with `apt-get install fonts-dejavu-core`",
            path.display()
        )
    })
}

/// Registers [`FONT_PATH`] as `sans-serif` once per process.
fn ensure_font() -> Result<()> {
    let mut done = FONT_REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    if *done {
        return Ok(());
    }
    let bytes: &'static [u8] = Box::leak(read_font(Path::new(FONT_PATH))?.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| anyhow!("{FONT_PATH} is not a usable TrueType font"))?;
    *done = true;
    Ok(())
}

fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

/// `lo..hi` widened so that it is never empty and the extreme points do not
/// sit on the frame.
fn padded_range(lo: f64, hi: f64, from_zero: bool) -> std::ops::Range<f64> {
    let lo = if from_zero { lo.min(0.0) } else { lo };
    let span = hi - lo;
    if span <= f64::EPSILON * hi.abs().max(1.0) {
        let d = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
        return (lo - if from_zero && lo == 0.0 { 0.0 } else { d })..(hi + d);
    }
    let pad = span * 0.05;
    (if from_zero && lo == 0.0 { 0.0 } else { lo - pad })..(hi + pad)
}

/// Rejects what cannot be drawn, before any file is created.
fn check_series(caption: &str, series: &[(String, Vec<(f64, f64)>)]) -> Result<()> {
    let mut points = series.iter().flat_map(|(_, p)| p.iter().copied()).peekable();
    if points.peek().is_none() {
        bail!("nothing to plot in '{caption}': every series is empty");
    }
    if let Some((x, y)) = points.find(|(x, y)| !x.is_finite() || !y.is_finite()) {
        bail!("'{caption}': point ({x}, {y}) is not finite");
    }
    Ok(())
}

/// Draws one panel (axes, lines with markers, legend) into `area`. The y
/// range has headroom at the top so that the legend does not hide data.
fn draw_panel(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    caption: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    check_series(caption, series)?;
    let points = || series.iter().flat_map(|(_, p)| p.iter().copied());
    let (x_range, y_range, corner) = panel_ranges(series);
    let mut builder = ChartBuilder::on(area);
    if !caption.is_empty() {
        builder.caption(caption, ("sans-serif", 28));
    }
    let mut chart = builder
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x_range, y_range)
        .map_err(plot_err)?;
    // Counts on the x axis (hops, nodes, clients) get whole-number ticks only.
    let whole = integer_axis(points().map(|(x, _)| x));
    let x_ticks = match whole {
        Some(span) => span + 1,
        None => 10,
    };
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_labels(x_ticks)
        .x_label_formatter(&|v| if whole.is_some() && v.fract().abs() > 1e-9 { String::new() } else { human(*v) })
        .y_label_formatter(&|v| human(*v))
        .axis_desc_style(("sans-serif", 22))
        .label_style(("sans-serif", 18))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()
        .map_err(plot_err)?;

    for (i, (name, pts)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let line = ShapeStyle::from(color).stroke_width(3);
        let mut pts = pts.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart.draw_series(LineSeries::new(pts.iter().copied(), line)).map_err(plot_err)?.label(name.as_str()).legend(
            move |(x, y)| {
                EmptyElement::at((x + 20, y))
                    + PathElement::new(vec![(-18, 0), (18, 0)], line)
                    + marker(i, (0, 0), color)
            },
        );
        chart.draw_series(pts.iter().map(|&p| EmptyElement::at(p) + marker(i, (0, 0), color))).map_err(plot_err)?;
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 20))
        .legend_area_size(50)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .position(corner.unwrap_or(SeriesLabelPosition::UpperRight))
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

/// A panel's x and y ranges and its legend's corner: one the lines leave
/// empty; where none is, the upper right above the data (`None`, the y
/// range with headroom for it).
fn panel_ranges(
    series: &[(String, Vec<(f64, f64)>)],
) -> (std::ops::Range<f64>, std::ops::Range<f64>, Option<SeriesLabelPosition>) {
    let points = || series.iter().flat_map(|(_, p)| p.iter().copied());
    let (x_lo, x_hi) = points().fold((f64::MAX, f64::MIN), |(a, b), (x, _)| (a.min(x), b.max(x)));
    let (y_lo, y_hi) = points().fold((f64::MAX, f64::MIN), |(a, b), (_, y)| (a.min(y), b.max(y)));
    let y_range = padded_range(y_lo, y_hi, true);
    let x_range = padded_range(x_lo, x_hi, false);
    let corner = empty_corner(series, &x_range, &y_range, series.len());
    let y_range = match corner {
        Some(_) => y_range,
        None => {
            let legend_share = 0.1 + 0.07 * series.len() as f64;
            y_range.start..y_range.end + (y_range.end - y_range.start) * legend_share
        }
    };
    (x_range, y_range, corner)
}

/// An axis formatter naming position `i` `names[i]` (nothing between).
fn category_label(names: Vec<String>) -> impl Fn(&f64) -> String {
    move |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 0.01 && i >= 0.0 && (i as usize) < names.len() {
            names[i as usize].clone()
        } else {
            String::new()
        }
    }
}

/// A corner of the plot area that no line passes through (points and the
/// segments between them, sampled), for a legend of `entries` lines: the
/// box is about 45% of the width and 8% of the height per entry (plus a
/// margin). Upper right, upper left, lower right, lower left, in that order
/// of preference.
fn empty_corner(
    series: &[(String, Vec<(f64, f64)>)],
    x: &std::ops::Range<f64>,
    y: &std::ops::Range<f64>,
    entries: usize,
) -> Option<SeriesLabelPosition> {
    let (w, h) = (x.end - x.start, y.end - y.start);
    if w <= 0.0 || h <= 0.0 {
        return None;
    }
    let (bw, bh) = (0.45, (0.06 + 0.08 * entries as f64).min(0.9));
    let mut samples = vec![];
    for (_, pts) in series {
        let mut pts = pts.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        for p in &pts {
            samples.push(((p.0 - x.start) / w, (p.1 - y.start) / h));
        }
        for seg in pts.windows(2) {
            for k in 1..20 {
                let t = k as f64 / 20.0;
                let (px, py) = (seg[0].0 + t * (seg[1].0 - seg[0].0), seg[0].1 + t * (seg[1].1 - seg[0].1));
                samples.push(((px - x.start) / w, (py - y.start) / h));
            }
        }
    }
    let corners = [
        (SeriesLabelPosition::UpperRight, 1.0 - bw, 1.0, 1.0 - bh, 1.0),
        (SeriesLabelPosition::UpperLeft, 0.0, bw, 1.0 - bh, 1.0),
        (SeriesLabelPosition::LowerRight, 1.0 - bw, 1.0, 0.0, bh),
        (SeriesLabelPosition::LowerLeft, 0.0, bw, 0.0, bh),
    ];
    corners
        .into_iter()
        .find(|(_, x0, x1, y0, y1)| !samples.iter().any(|(sx, sy)| sx >= x0 && sx <= x1 && sy >= y0 && sy <= y1))
        .map(|c| c.0)
}

/// `Some(span)` when every x is a whole number and they span at most 12
/// (an axis of counts), else `None`.
fn integer_axis(xs: impl Iterator<Item = f64>) -> Option<usize> {
    let (mut lo, mut hi) = (f64::MAX, f64::MIN);
    for x in xs {
        if x.fract() != 0.0 {
            return None;
        }
        lo = lo.min(x);
        hi = hi.max(x);
    }
    (hi >= lo && hi - lo <= 12.0).then_some((hi - lo) as usize)
}

/// A tick label in human units: 166661 -> "167k", 2500000 -> "2.5M",
/// 0.25 -> "0.25", 12 -> "12" (three significant digits at most, no
/// trailing zeros).
pub fn human(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    let (scaled, suffix) = match a {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e4 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let digits = match scaled.abs() {
        x if x >= 100.0 || x == 0.0 => 0,
        x if x >= 10.0 => 1,
        x if x >= 1.0 => 2,
        _ => 3,
    };
    let mut t = format!("{scaled:.digits$}");
    if t.contains('.') {
        t = t.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if t == "-0" {
        t = "0".into();
    }
    format!("{t}{suffix}")
}

/// One panel of a figure: its title, axis titles (with units) and series.
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

/// Height of the title line, pixels.
const TITLE_PX: u32 = 60;
/// Height of one caption line, and the caption area's padding, pixels.
const CAPTION_LINE_PX: u32 = 24;
const CAPTION_PAD_PX: u32 = 26;

/// Height of the caption area for `caption` on a figure `width` pixels wide.
fn caption_px(caption: &str, width: u32) -> u32 {
    CAPTION_PAD_PX + CAPTION_LINE_PX * caption_lines(caption, caption_chars(width)).len() as u32
}

/// Characters of caption text that fit on one line of `width` pixels.
fn caption_chars(width: u32) -> usize {
    (width as usize).saturating_sub(40) / CAPTION_CHAR_PX
}

/// Draws `title` on top of `root` and `caption` at its bottom (the paper
/// figure and configuration, wrapped to the width), returning the area
/// between them. The title's font shrinks to fit the width.
fn titled<'a>(
    root: &DrawingArea<BitMapBackend<'a>, Shift>,
    title: &str,
    caption: &str,
) -> Result<DrawingArea<BitMapBackend<'a>, Shift>> {
    let (w, h) = root.dim_in_pixel();
    let cap_h = caption_px(caption, w);
    let (top, rest) = root.split_vertically(TITLE_PX);
    let (body, bottom) = rest.split_vertically(h.saturating_sub(TITLE_PX + cap_h));
    let centre = |y| (w as i32 / 2, y);
    let style = |size| TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
    // DejaVu Sans averages about 0.55 em per character.
    let title_size = (30.0f64).min((w as f64 - 40.0) / (0.55 * title.chars().count().max(1) as f64)).max(16.0);
    top.draw(&Text::new(title.to_string(), centre(35), style(title_size))).map_err(plot_err)?;
    let lines = caption_lines(caption, caption_chars(w));
    for (i, line) in lines.into_iter().enumerate() {
        let y = (CAPTION_PAD_PX / 2 + CAPTION_LINE_PX / 2 + CAPTION_LINE_PX * i as u32) as i32;
        bottom.draw(&Text::new(line, centre(y), style(19.0))).map_err(plot_err)?;
    }
    Ok(body)
}

/// Width of a caption character, pixels (19 px DejaVu Sans, generous).
const CAPTION_CHAR_PX: usize = 10;

/// `caption` wrapped into lines of at most about `max_chars`, breaking
/// after "; " where a line can end there, else at a space.
fn caption_lines(caption: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(20);
    let mut lines = vec![];
    let mut rest = caption.trim();
    while rest.chars().count() > max_chars {
        let cut = rest.char_indices().nth(max_chars).map_or(rest.len(), |(i, _)| i);
        let head = &rest[..cut];
        let at = head
            .rfind("; ")
            .filter(|&i| i > cut / 2)
            .map(|i| i + 1)
            .or_else(|| head.rfind(' '))
            .filter(|&i| i > 0)
            .unwrap_or(cut);
        lines.push(rest[..at].trim().to_string());
        rest = rest[at..].trim_start();
    }
    if !rest.is_empty() || lines.is_empty() {
        lines.push(rest.to_string());
    }
    lines
}

/// A figure of `panels` in `cols` columns, with a title line and a caption
/// line (which paper figure, which configuration).
pub fn panels_png(path: &Path, title: &str, caption: &str, panels: &[Panel], cols: usize) -> Result<()> {
    if panels.is_empty() {
        bail!("panels_png: no panels for '{title}'");
    }
    for p in panels {
        check_series(&p.title, &p.series)?;
    }
    ensure_font()?;
    let cols = cols.clamp(1, panels.len());
    let rows = panels.len().div_ceil(cols);
    let width = (900 * cols as u32).max(1300);
    let size = (width, 620 * rows as u32 + TITLE_PX + caption_px(caption, width));
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let body = titled(&root, title, caption)?;
    let areas = body.split_evenly((rows, cols));
    for (p, area) in panels.iter().zip(&areas) {
        draw_panel(area, &p.title, &p.x_label, &p.y_label, &p.series)?;
    }
    finish(root, path)
}

/// A grouped bar chart: one group per category, one bar per series in
/// each (series `i`'s value for category `j` is `series[i].1[j]`), with a
/// title line, a caption line, value labels on the bars and a legend.
pub fn bars_png(
    path: &Path,
    title: &str,
    caption: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<()> {
    check_bars(title, categories, series)?;
    ensure_font()?;
    let size = (1400, 750 + TITLE_PX + caption_px(caption, 1400));
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let body = titled(&root, title, caption)?;
    let y_max = series.iter().flat_map(|(_, v)| v.iter().copied()).fold(0.0, f64::max).max(1e-9);
    let legend_share = 0.1 + 0.07 * series.len() as f64;
    let n = categories.len();
    let mut chart = ChartBuilder::on(&body)
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..y_max * (1.08 + legend_share))
        .map_err(plot_err)?;
    let cats = category_label(categories.to_vec());
    chart
        .configure_mesh()
        .y_desc(y_label)
        .x_labels(n)
        .x_label_formatter(&cats)
        .y_label_formatter(&|v| human(*v))
        .disable_x_mesh()
        .axis_desc_style(("sans-serif", 22))
        .label_style(("sans-serif", 20))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()
        .map_err(plot_err)?;
    let width = 0.8 / series.len() as f64;
    for (i, (name, vs)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let x0 = |j: usize| j as f64 - 0.4 + width * i as f64;
        chart
            .draw_series(vs.iter().enumerate().map(|(j, &v)| {
                Rectangle::new([(x0(j) + width * 0.05, 0.0), (x0(j) + width * 0.95, v)], color.filled())
            }))
            .map_err(plot_err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 8), (x + 24, y + 8)], color.filled()));
        let label = TextStyle::from(("sans-serif", 16).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(
                vs.iter()
                    .enumerate()
                    .map(|(j, &v)| Text::new(human(v), (x0(j) + width * 0.5, v + y_max * 0.01), label.clone())),
            )
            .map_err(plot_err)?;
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 20))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(plot_err)?;
    finish(root, path)
}

/// Refuses bars that cannot be drawn: none, a series without a value
/// per category, a value that is not a finite non-negative number.
fn check_bars(title: &str, categories: &[String], series: &[(String, Vec<f64>)]) -> Result<()> {
    if categories.is_empty() || series.is_empty() {
        bail!("bars_png: nothing to plot in '{title}'");
    }
    for (name, vs) in series {
        if vs.len() != categories.len() {
            bail!("'{title}': series {name} has {} values for {} categories", vs.len(), categories.len());
        }
        if let Some(v) = vs.iter().find(|v| !v.is_finite() || **v < 0.0) {
            bail!("'{title}': series {name} has value {v}, not a finite non-negative number");
        }
    }
    Ok(())
}

/// Empirical CDFs of named samples (e.g. latencies in ms) in one panel with
/// a title line and a caption line: x the value, y the fraction of samples
/// at or below it (each series drawn through at most 60 of its quantiles,
/// from the smallest to the largest sample).
pub fn cdf_png(path: &Path, title: &str, caption: &str, x_label: &str, samples: &[(String, Vec<f64>)]) -> Result<()> {
    let series: Vec<(String, Vec<(f64, f64)>)> =
        samples.iter().map(|(name, v)| (name.clone(), cdf_points(v, 60))).collect();
    let panel =
        Panel { title: "CDF".into(), x_label: x_label.into(), y_label: "fraction of transactions".into(), series };
    panels_png(path, title, caption, &[panel], 1)
}

/// At most `max_points` points `(value, fraction <= value)` of the empirical
/// CDF of `values`, always including the smallest and largest value.
pub fn cdf_points(values: &[f64], max_points: usize) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return vec![];
    }
    let k = max_points.clamp(2, n.max(2));
    let mut out: Vec<(f64, f64)> = (0..k)
        .map(|i| {
            let rank = ((i as f64 / (k - 1) as f64) * (n - 1) as f64).round() as usize;
            (v[rank], (rank + 1) as f64 / n as f64)
        })
        .collect();
    out.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    out
}

/// A heatmap: `values[row][col]` drawn as a coloured cell with its value
/// printed in it, rows bottom to top, columns left to right, labelled by
/// `rows`/`cols`. Colours diverge around `centre` on a log scale (blue
/// below, white at, red above; saturated at `centre` x/÷ `span`), so a ratio
/// of 1 is white.
#[allow(clippy::too_many_arguments)]
pub fn heatmap_png(
    path: &Path,
    title: &str,
    caption: &str,
    x_label: &str,
    y_label: &str,
    cols: &[String],
    rows: &[String],
    values: &[Vec<f64>],
    centre: f64,
    span: f64,
) -> Result<()> {
    check_heatmap(title, cols, rows, values, (centre, span))?;
    ensure_font()?;
    let size = (1300, 850 + TITLE_PX + caption_px(caption, 1300));
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let body = titled(&root, title, caption)?;
    let (nx, ny) = (cols.len(), rows.len());
    let mut chart = ChartBuilder::on(&body)
        .margin(20)
        .x_label_area_size(70)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5..nx as f64 - 0.5, -0.5..ny as f64 - 0.5)
        .map_err(plot_err)?;
    let (xf, yf) = (category_label(cols.to_vec()), category_label(rows.to_vec()));
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_labels(nx)
        .y_labels(ny)
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .disable_mesh()
        .axis_desc_style(("sans-serif", 22))
        .label_style(("sans-serif", 18))
        .draw()
        .map_err(plot_err)?;
    let colour = |v: f64| diverging_colour(v, centre, span);
    for (r, vs) in values.iter().enumerate() {
        chart
            .draw_series(vs.iter().enumerate().map(|(c, &v)| {
                Rectangle::new([(c as f64 - 0.5, r as f64 - 0.5), (c as f64 + 0.5, r as f64 + 0.5)], colour(v).filled())
            }))
            .map_err(plot_err)?;
        let text = TextStyle::from(("sans-serif", 16).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
        chart
            .draw_series(
                vs.iter().enumerate().map(|(c, &v)| Text::new(format!("{v:.2}"), (c as f64, r as f64), text.clone())),
            )
            .map_err(plot_err)?;
    }
    finish(root, path)
}

/// Refuses a heatmap that cannot be drawn: a value row per row label, a
/// value per column, each finite and positive; `centre` above 0 and
/// `span` above 1.
fn check_heatmap(
    title: &str,
    cols: &[String],
    rows: &[String],
    values: &[Vec<f64>],
    (centre, span): (f64, f64),
) -> Result<()> {
    if cols.is_empty() || rows.is_empty() || values.len() != rows.len() {
        bail!("heatmap_png: '{title}' needs a value row per row label ({} rows, {} labels)", values.len(), rows.len());
    }
    for (r, vs) in values.iter().enumerate() {
        if vs.len() != cols.len() {
            bail!("heatmap_png: '{title}' row {r} has {} values for {} columns", vs.len(), cols.len());
        }
        if let Some(v) = vs.iter().find(|v| !v.is_finite() || **v <= 0.0) {
            bail!("heatmap_png: '{title}' row {r} has value {v}, not a finite positive number");
        }
    }
    if !(centre > 0.0 && span > 1.0) {
        bail!("heatmap_png: centre {centre} must be > 0 and span {span} > 1");
    }
    Ok(())
}

/// A heatmap cell's colour: white at `centre`, red above it and blue below,
/// full at `centre` times or divided by `span` (on a log scale).
fn diverging_colour(v: f64, centre: f64, span: f64) -> RGBColor {
    let t = ((v / centre).ln() / span.ln()).clamp(-1.0, 1.0);
    let mix = |a: u8, b: u8, f: f64| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    if t >= 0.0 {
        RGBColor(mix(255, 178, t), mix(255, 24, t), mix(255, 43, t))
    } else {
        RGBColor(mix(255, 33, -t), mix(255, 102, -t), mix(255, 172, -t))
    }
}

/// The marker of series `i`: circle, triangle, square, cross, repeating.
fn marker<DB: DrawingBackend>(i: usize, at: (i32, i32), color: RGBColor) -> DynElement<'static, DB, (i32, i32)> {
    const SIZE: i32 = 7;
    let fill = ShapeStyle::from(color).filled();
    match i % 4 {
        0 => Circle::new(at, SIZE, fill).into_dyn(),
        1 => TriangleMarker::new(at, SIZE + 2, fill).into_dyn(),
        2 => Rectangle::new([(at.0 - SIZE, at.1 - SIZE), (at.0 + SIZE, at.1 + SIZE)], fill).into_dyn(),
        _ => Cross::new(at, SIZE, ShapeStyle::from(color).stroke_width(3)).into_dyn(),
    }
}

fn finish(root: DrawingArea<BitMapBackend<'_>, Shift>, path: &Path) -> Result<()> {
    root.present().map_err(plot_err).with_context(|| format!("writing {}", path.display()))
}

/// A one-panel PNG of named series, each drawn as a line with markers (points
/// sorted by x), with a legend. The y axis starts at zero when all y >= 0.
pub fn lines_png(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    check_series(title, series)?;
    ensure_font()?;
    let root = BitMapBackend::new(path, SINGLE_SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    draw_panel(&root, title, x_label, y_label, series)?;
    finish(root, path)
}

/// The distinct values of a configuration field, joined with `/`.
fn distinct<T: PartialEq>(results: &[TxnPointResult], f: impl Fn(&TxnPointResult) -> T) -> Vec<T> {
    let mut out: Vec<T> = vec![];
    for r in results {
        let v = f(r);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn joined<T: std::fmt::Display>(values: &[T]) -> String {
    values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("/")
}

/// One series per mode (the paper's modes first, in their usual order), each
/// point `(write_ratio, y(result))`.
fn by_mode(results: &[TxnPointResult], y: impl Fn(&TxnPointResult) -> f64) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut modes: Vec<String> = innet_txn::Mode::ALL.iter().map(|m| m.name().to_string()).collect();
    for m in distinct(results, |r| r.config.mode.clone()) {
        if !modes.contains(&m) {
            modes.push(m);
        }
    }
    modes
        .into_iter()
        .filter_map(|m| {
            let pts: Vec<(f64, f64)> =
                results.iter().filter(|r| r.config.mode == m).map(|r| (r.config.write_ratio, y(r))).collect();
            (!pts.is_empty()).then_some((m, pts))
        })
        .collect()
}

/// Gotthard Figure 7 from result records: (a) committed transactions/s and
/// (b) mean latency (ms) against the write ratio, one line per mode. The title
/// names the runtime(s), RTT, delta and number of clients of the records.
pub fn txn_figure7(results: &[TxnPointResult], path: &Path) -> Result<()> {
    if results.is_empty() {
        bail!("txn_figure7: no results to plot");
    }
    let throughput = by_mode(results, |r| r.committed_per_s);
    let latency = by_mode(results, |r| r.mean_latency_ms);
    check_series("(a) Throughput", &throughput)?;
    check_series("(b) Latency", &latency)?;
    ensure_font()?;
    let title = format!(
        "Transactions vs write ratio (Gotthard Fig. 7): runtime {}, RTT {} ms, delta {}, {} clients",
        joined(&distinct(results, |r| r.runtime.record_name().to_string())),
        joined(&distinct(results, |r| r.config.rtt_ms)),
        joined(&distinct(results, |r| r.config.delta)),
        joined(&distinct(results, |r| r.config.clients)),
    );
    let caption = format!(
        "Gotthard Fig. 7 (Section 5.3): {} key(s), Zipf {}, {} s per point, think {} ms, jitter {} ms, loss {}; \
         store {} us/packet; seed {}, commit {}",
        joined(&distinct(results, |r| r.config.keys)),
        joined(&distinct(results, |r| r.config.zipf)),
        joined(&distinct(results, |r| r.config.duration_s)),
        joined(&distinct(results, |r| r.config.think_ms)),
        joined(&distinct(results, |r| r.config.faults.jitter_ms)),
        joined(&distinct(results, |r| r.config.faults.loss)),
        joined(&distinct(results, |r| r.config.store_us_per_packet)),
        joined(&distinct(results, |r| r.config.seed)),
        joined(&distinct(results, |r| r.git_commit.chars().take(12).collect::<String>())),
    );
    let size = (FIGURE7_SIZE_PX.0, FIGURE7_SIZE_PX.1 + caption_px(&caption, FIGURE7_SIZE_PX.0));
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let body = titled(&root, &title, &caption)?;
    let panels = body.split_evenly((1, 2));
    let x = "write ratio (fraction of transactions that write)";
    draw_panel(&panels[0], "(a) Throughput", x, "committed transactions/s", &throughput)?;
    draw_panel(&panels[1], "(b) Latency", x, "mean latency (ms)", &latency)?;
    finish(root, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::TxnPointConfig;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("innet-plot-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("create temp dir");
        d
    }

    fn assert_png(path: &Path) {
        let bytes = std::fs::read(path).expect("png written");
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG magic");
        assert!(bytes.len() > 4096, "only {} bytes", bytes.len());
    }

    fn point(mode: &str, write_ratio: f64, per_s: f64, latency_ms: f64) -> TxnPointResult {
        TxnPointResult {
            experiment: "txn".into(),
            runtime: crate::Runtime::Sim,
            config: TxnPointConfig { mode: mode.into(), write_ratio, ..TxnPointConfig::default() },
            git_commit: "test".into(),
            committed: 0,
            committed_per_s: per_s,
            committed_reads: 0,
            committed_writes: 0,
            mean_latency_ms: latency_ms,
            p50_latency_ms: latency_ms,
            p99_latency_ms: latency_ms,
            aborts_by_switch: 0,
            aborts_by_store: 0,
            gave_up: 0,
            run_seconds: 1.0,
            wall_seconds: 1.0,
            speedup: None,
            switch_counters: Default::default(),
            per_node: Default::default(),
            store_cpu_pct: None,
            store_packets: None,
        }
    }

    #[test]
    fn plot_txn_figure7_renders_a_png() {
        let mut results = vec![];
        for (i, mode) in innet_txn::Mode::ALL.iter().enumerate() {
            for w in [0.0, 0.2, 0.4, 0.6, 0.8, 1.0] {
                let boost = 1.0 + i as f64 * 0.4;
                results.push(point(mode.name(), w, 80.0 * boost * (1.0 - 0.6 * w), 100.0 / boost * (1.0 + w)));
            }
        }
        let path = temp_dir("fig7").join("figure7.png");
        txn_figure7(&results, &path).expect("rendered");
        assert_png(&path);
        std::fs::remove_dir_all(path.parent().expect("dir")).ok();
    }

    #[test]
    fn plot_lines_png_renders_a_png() {
        let series = vec![
            ("linear".to_string(), (0..10).map(|x| (x as f64, x as f64)).collect()),
            ("one point".to_string(), vec![(3.0, 7.0)]),
        ];
        let path = temp_dir("lines").join("lines.png");
        lines_png(&path, "A test figure", "x (units)", "y (units)", &series).expect("rendered");
        assert_png(&path);
        std::fs::remove_dir_all(path.parent().expect("dir")).ok();
    }

    #[test]
    fn plot_rejects_empty_input() {
        let dir = temp_dir("empty");
        assert!(txn_figure7(&[], &dir.join("a.png")).is_err());
        let empty: Vec<(String, Vec<(f64, f64)>)> = vec![("none".into(), vec![])];
        assert!(lines_png(&dir.join("b.png"), "t", "x", "y", &empty).is_err());
        let nan = vec![("nan".to_string(), vec![(0.0, f64::NAN)])];
        assert!(lines_png(&dir.join("c.png"), "t", "x", "y", &nan).is_err());
        assert!(!dir.join("b.png").exists() && !dir.join("c.png").exists(), "no file on error");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn tick_labels_are_in_human_units() {
        let cases = [
            (166661.0, "167k"),
            (2_500_000.0, "2.5M"),
            (0.25, "0.25"),
            (12.0, "12"),
            (0.0, "0"),
            (1500.0, "1500"),
            (-20000.0, "-20k"),
            (99.5, "99.5"),
        ];
        for (v, want) in cases {
            assert_eq!(human(v), want, "{v}");
        }
    }

    #[test]
    fn plot_panels_and_bars_render_pngs() {
        let dir = temp_dir("panels");
        let panel = |t: &str| Panel {
            title: t.into(),
            x_label: "clients".into(),
            y_label: "committed/s".into(),
            series: vec![("a".into(), (1..6).map(|x| (x as f64, 1000.0 * x as f64)).collect())],
        };
        panels_png(&dir.join("p.png"), "Title", "Caption: config", &[panel("(a)"), panel("(b)")], 2).expect("panels");
        assert_png(&dir.join("p.png"));
        let cats: Vec<String> = ["x", "y", "z"].iter().map(|s| s.to_string()).collect();
        let series = vec![("m1".to_string(), vec![1.0, 2.0, 3.0]), ("m2".to_string(), vec![3.0, 0.0, 1.5])];
        bars_png(&dir.join("b.png"), "Bars", "Caption", "committed/s", &cats, &series).expect("bars");
        assert_png(&dir.join("b.png"));
        let bad = vec![("m".to_string(), vec![1.0])];
        assert!(bars_png(&dir.join("c.png"), "Bars", "c", "y", &cats, &bad).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_legend_goes_where_no_line_passes() {
        let rising = vec![("a".to_string(), (0..=10).map(|i| (i as f64, i as f64)).collect::<Vec<_>>())];
        let (x, y) = (0.0..10.0, 0.0..10.0);
        // A rising diagonal crosses the lower-left and upper-right corners.
        assert!(matches!(empty_corner(&rising, &x, &y, 1), Some(SeriesLabelPosition::UpperLeft)));
        let full =
            vec![("a".to_string(), vec![(0.0, 0.0), (10.0, 10.0)]), ("b".to_string(), vec![(0.0, 10.0), (10.0, 0.0)])];
        assert!(empty_corner(&full, &x, &y, 2).is_none());
    }

    #[test]
    fn captions_wrap_at_semicolons_or_spaces_and_lose_no_word() {
        let c = "Gotthard Fig. 7 (Section 5.3): 1 key(s), 180 s per point; store 2 us/packet; seed 1, commit abcdef";
        let lines = caption_lines(c, 40);
        assert!(lines.len() >= 3, "{lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert_eq!(lines.join(" "), c);
        assert_eq!(caption_lines("short", 40), vec!["short".to_string()]);
    }

    #[test]
    fn plot_cdf_and_heatmap_render_pngs() {
        let dir = temp_dir("cdf-heat");
        let samples = vec![
            ("fast".to_string(), (1..500).map(|x| x as f64 / 10.0).collect()),
            ("slow".to_string(), (1..500).map(|x| (x * x) as f64 / 100.0).collect()),
        ];
        cdf_png(&dir.join("cdf.png"), "CDF", "Caption", "latency (ms)", &samples).expect("cdf");
        assert_png(&dir.join("cdf.png"));
        let pts = cdf_points(&[3.0, 1.0, 2.0, 2.0], 60);
        assert_eq!(pts.first(), Some(&(1.0, 0.25)));
        assert_eq!(pts.last(), Some(&(3.0, 1.0)));
        let cols: Vec<String> = ["0", "0.5", "1"].iter().map(|s| s.to_string()).collect();
        let rows: Vec<String> = ["0", "2"].iter().map(|s| s.to_string()).collect();
        let values = vec![vec![0.5, 1.0, 2.0], vec![0.8, 3.0, 9.0]];
        heatmap_png(&dir.join("h.png"), "Heat", "Caption", "x", "y", &cols, &rows, &values, 1.0, 4.0).expect("heat");
        assert_png(&dir.join("h.png"));
        let bad = vec![vec![1.0, 2.0]];
        assert!(heatmap_png(&dir.join("i.png"), "Heat", "c", "x", "y", &cols, &rows, &bad, 1.0, 4.0).is_err());
        assert!(!dir.join("i.png").exists(), "no file on error");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn plot_missing_font_names_the_package() {
        let e = read_font(Path::new("/nonexistent/DejaVuSans.ttf")).unwrap_err();
        assert!(e.to_string().contains("apt-get install fonts-dejavu-core"), "{e}");
    }
}
