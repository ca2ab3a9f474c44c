//! `tbrw export timeline`: an interval stream (MTMC tasks, winIDEA calls)
//! as an SVG written by hand: one lane per thread (or per CPU), one bar per
//! interval coloured by its name, nested intervals one row below the one
//! they are in, a time axis, and a `<title>` per bar that viewers show on
//! hover (duration, counter deltas, topdown). Intervals narrower than a
//! pixel are not drawn one by one: each lane's pixel column sums them into
//! one bar (count, busy time, most frequent name), so that the drawing has
//! at most a bar per pixel for them however many there are. Two passes over
//! the records: the time range and lanes, then the bars.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use tbrw::Tb5File;

use crate::error::{ExportError, Nothing};
use tbrw_query::intervals::{duration, Interval, IntervalStream};

/// What a lane is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lanes {
    /// One lane per thread (winIDEA: per context).
    #[default]
    Thread,
    /// One lane per CPU (the CPU an interval began on).
    Cpu,
}

impl Lanes {
    /// Both kinds.
    pub const ALL: [Lanes; 2] = [Lanes::Thread, Lanes::Cpu];

    /// The name `--lanes` takes.
    pub fn name(self) -> &'static str {
        match self {
            Lanes::Thread => "thread",
            Lanes::Cpu => "cpu",
        }
    }

    /// From [`Lanes::name`].
    pub fn from_name(s: &str) -> Option<Lanes> {
        Lanes::ALL.into_iter().find(|l| l.name() == s)
    }
}

/// The timeline's options.
#[derive(Clone, Debug)]
pub struct TimelineOptions {
    /// The stream.
    pub stream: u32,
    /// What a lane is.
    pub lanes: Lanes,
    /// The drawing's width in pixels (the time axis gets all but the lane labels).
    pub width: u32,
    /// Only intervals that overlap `start..end` (the start field's clock).
    pub time: Option<(u64, u64)>,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions { stream: 0, lanes: Lanes::Thread, width: 1200, time: None }
    }
}

/// What the drawing holds, for the command's summary and the tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimelineSummary {
    /// Intervals drawn (one by one or summed).
    pub intervals: u64,
    /// Bars of one interval each.
    pub bars: u64,
    /// Bars summing intervals narrower than a pixel.
    pub summed_bars: u64,
    /// Intervals summed into them.
    pub summed: u64,
    /// Intervals left out because they never end.
    pub unended: u64,
    /// Lanes.
    pub lanes: usize,
}

const ROW_H: f64 = 16.0;
/// The most characters of a lane's label drawn (longer ones are cut with
/// `…`), so that the label column is at most about 360 pixels wide.
const LABEL_CHARS: usize = 52;
const LANE_GAP: f64 = 6.0;
const TOP: f64 = 48.0;
/// Nesting rows a lane gets at most; deeper intervals share the last.
const MAX_DEPTH: usize = 8;

/// A colour for a name: its hash as a hue, so the same name always gets it.
pub(crate) fn colour(name: &str) -> String {
    // FNV-1a: stable across runs and platforms.
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    let hue = f64::from(h % 360);
    let sat = f64::from(55 + (h >> 9) % 25) / 100.0;
    let light = f64::from(50 + (h >> 17) % 15) / 100.0;
    // HSL to RGB (hex, which every SVG renderer reads).
    let c = (1.0 - (2.0 * light - 1.0).abs()) * sat;
    let x = c * (1.0 - ((hue / 60.0) % 2.0 - 1.0).abs());
    let (r, g, b) = match (hue / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = light - c / 2.0;
    let to = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    format!("#{:02x}{:02x}{:02x}", to(r), to(g), to(b))
}

/// Text for XML: control characters escaped as every text output escapes
/// them ([`tbrw::text`]; XML cannot hold most of them), then `&`, `<`,
/// `>` and quotes as entities.
pub(crate) fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in tbrw::text::escape(s).chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// A "nice" tick step (1, 2 or 5 times a power of ten) for about `n` ticks over `span`.
fn tick_step(span: u64, n: u64) -> u64 {
    let raw = (span / n.max(1)).max(1);
    let mut p = 1u64;
    while p.saturating_mul(10) <= raw {
        p *= 10;
    }
    [1, 2, 5, 10].into_iter().map(|m| m * p).find(|s| *s >= raw).unwrap_or(p * 10)
}

/// A tick's text: in the unit its step is counted in, with the decimals the step needs.
fn tick_label(t: u64, step: u64, nanos: bool) -> String {
    if !nanos {
        return t.to_string();
    }
    let (unit, name) = match step {
        0..1_000 => (1.0, "ns"),
        1_000..1_000_000 => (1e3, "µs"),
        1_000_000..1_000_000_000 => (1e6, "ms"),
        _ => (1e9, "s"),
    };
    let q = step as f64 / unit;
    let decimals = if q >= 1.0 { 0 } else { (-q.log10()).ceil() as usize };
    format!("{:.*} {name}", decimals, t as f64 / unit)
}

/// Where a line of `chars` characters starts: at `x`, or further left as
/// far as needed to end inside the drawing (7 pixels a character, as
/// [`tick_anchor`] estimates).
fn text_x(x: f64, chars: usize, width: f64) -> f64 {
    x.min(width - chars as f64 * 7.0 - 10.0).max(10.0)
}

/// `text` cut to `chars` characters, the last of them `…` when cut.
fn fit(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        text.to_owned()
    } else {
        text.chars().take(chars.saturating_sub(1)).chain(['…']).collect()
    }
}

/// Where a tick's label is anchored so that it stays within the plot
/// (`left..right`): centred on its tick, unless that would cross an end
/// (the first and last ticks), then starting or ending at the tick. The
/// text's width is estimated at 7 pixels a character, a digit's width in
/// Verdana and DejaVu Sans at the drawing's 11 pixels (the widest of the
/// fonts a viewer picks for `Verdana, sans-serif`).
fn tick_anchor(x: f64, chars: usize, left: f64, right: f64) -> &'static str {
    let half = chars as f64 * 7.0 / 2.0;
    if x - half < left {
        "start"
    } else if x + half > right {
        "end"
    } else {
        "middle"
    }
}

/// The first start, readable: a CLOCK_REALTIME time as its UTC date and
/// time, other nanosecond clocks in seconds (of whatever their zero is:
/// boot for a monotonic clock), ticks as a number of ticks.
fn start_text(t0: u64, nanos: bool, realtime: bool) -> String {
    if realtime {
        format!("{} UTC", crate::vtune_csv::utc_text(t0))
    } else if nanos {
        format!("{}.{:09} s", t0 / 1_000_000_000, t0 % 1_000_000_000)
    } else {
        format!("tick {t0}")
    }
}

/// One pixel column's sum of sub-pixel intervals in a lane.
#[derive(Default)]
struct Column {
    count: u64,
    busy: u64,
    /// Per event id (`None`: the stream's comment names them), how many:
    /// ids, not names, so that summing an interval allocates nothing.
    names: HashMap<Option<u32>, u64>,
}

/// Writes the timeline of `opts.stream`.
pub fn write(file: &Tb5File, opts: &TimelineOptions, out: &mut dyn Write) -> Result<TimelineSummary, ExportError> {
    let st = IntervalStream::open(file, opts.stream, "a timeline")?;
    let n = st.data.len();
    if opts.lanes == Lanes::Cpu && n > 0 && st.interval(0).cpu.is_none() {
        return Err(ExportError::NoCpuField { file: file.path().display().to_string(), stream: opts.stream });
    }
    let t = Timeline { st: &st, opts };
    let scan = t.scan();
    if scan.summary.intervals == 0 {
        let why = if opts.time.is_some() { Nothing::NoIntervalInTime } else { Nothing::NoEndedInterval };
        return Err(ExportError::Nothing { file: file.path().display().to_string(), stream: opts.stream, why });
    }
    let axis = t.axis(&scan);
    let rows = t.rows(&scan, &axis);
    let mut summary = scan.summary.clone();
    let title = format!(
        "{}, stream {} ({}): {} intervals",
        file.path().file_name().map_or_else(|| file.path().display().to_string(), |f| f.to_string_lossy().into()),
        opts.stream,
        st.comment,
        summary.intervals
    );
    t.draw(out, &title, &scan, &axis, &rows, &mut summary).map_err(|e| ExportError::write("timeline", e))?;
    summary.lanes = scan.lanes.len();
    Ok(summary)
}

/// One timeline being made: the stream and what was asked of it.
struct Timeline<'a, 'f> {
    st: &'a IntervalStream<'f>,
    opts: &'a TimelineOptions,
}

/// Pass 1: the intervals drawn, their time range and lanes.
struct Scan {
    summary: TimelineSummary,
    /// Each lane's key (a tid or cpu; `None`: the records have none).
    lanes: BTreeMap<Option<u64>, usize>,
    /// The labels of `lanes`, in order.
    labels: Vec<String>,
    /// The lanes the other kind would have: the label column is as wide in
    /// both kinds, so a drawing's time axis, and so which bars have room
    /// for their names, is the same with `--lanes thread` and `--lanes cpu`.
    other_lanes: BTreeSet<Option<u64>>,
    t0: u64,
    t1: u64,
}

/// Where time goes across the drawing.
struct Axis {
    label_w: f64,
    plot_w: f64,
    t0: u64,
    span: u64,
}

impl Axis {
    /// The x of time `t`.
    fn px(&self, t: u64) -> f64 {
        self.label_w + (t.saturating_sub(self.t0)) as f64 * self.plot_w / self.span as f64
    }
}

/// Pass 2: the bars, each lane's rows and where it is drawn.
struct Rows {
    /// Intervals a pixel wide or more: (lane, start, end, record), sorted
    /// by lane, start, longest first; and each one's row in its lane.
    wide: Vec<(usize, u64, u64, u64)>,
    depth_of: Vec<usize>,
    /// Narrower intervals, summed per lane and pixel column.
    columns: Vec<BTreeMap<u32, Column>>,
    /// Each lane's rows and top.
    depth: Vec<usize>,
    lane_y: Vec<f64>,
    /// The bottom of the last lane.
    bottom: f64,
}

impl Rows {
    fn summed(&self) -> bool {
        self.columns.iter().any(|c| !c.is_empty())
    }
}

impl Timeline<'_, '_> {
    fn lane_of(&self, k: u64) -> Option<u64> {
        let iv = self.st.interval(k);
        match self.opts.lanes {
            Lanes::Thread => iv.tid.map(u64::from),
            Lanes::Cpu => iv.cpu,
        }
    }

    fn keep(&self, k: u64) -> bool {
        let iv = self.st.interval(k);
        iv.ended() && self.opts.time.is_none_or(|(lo, hi)| iv.end > lo && iv.start < hi)
    }

    fn label(&self, lanes: Lanes, key: &Option<u64>) -> String {
        match (lanes, key) {
            (Lanes::Thread, Some(t)) => self.st.lane_name(*t as u32),
            (Lanes::Cpu, Some(c)) => format!("cpu {c}"),
            (_, None) => "all".to_owned(),
        }
    }

    fn scan(&self) -> Scan {
        let st = self.st;
        let n = st.data.len();
        let mut summary = TimelineSummary::default();
        let mut lanes: BTreeMap<Option<u64>, usize> = BTreeMap::new();
        let mut other_lanes: BTreeSet<Option<u64>> = BTreeSet::new();
        let has_cpu = n > 0 && st.interval(0).cpu.is_some();
        let (mut t0, mut t1) = (u64::MAX, 0u64);
        for k in 0..n {
            let iv = st.interval(k);
            if !iv.ended() {
                summary.unended += 1;
                continue;
            }
            if !self.keep(k) {
                continue;
            }
            t0 = t0.min(iv.start);
            t1 = t1.max(iv.end);
            lanes.entry(self.lane_of(k)).or_insert(0);
            match self.opts.lanes {
                Lanes::Thread if has_cpu => other_lanes.insert(iv.cpu),
                Lanes::Cpu => other_lanes.insert(iv.tid.map(u64::from)),
                Lanes::Thread => false,
            };
            summary.intervals += 1;
        }
        let labels = lanes.keys().map(|key| self.label(self.opts.lanes, key)).collect();
        Scan { summary, lanes, labels, other_lanes, t0, t1 }
    }

    /// The label column has room for the longest label of either kind.
    fn axis(&self, scan: &Scan) -> Axis {
        let other = match self.opts.lanes {
            Lanes::Thread => Lanes::Cpu,
            Lanes::Cpu => Lanes::Thread,
        };
        let longest = scan
            .labels
            .iter()
            .map(|l| l.chars().count())
            .chain(scan.other_lanes.iter().map(|key| self.label(other, key).chars().count()))
            .max()
            .unwrap_or(0);
        let label_w = (longest.min(LABEL_CHARS) as f64 * 6.6 + 14.0).max(80.0);
        let plot_w = (f64::from(self.opts.width) - label_w - 20.0).max(100.0);
        Axis { label_w, plot_w, t0: scan.t0, span: (scan.t1 - scan.t0).max(1) }
    }

    /// Intervals a pixel wide or more are kept (their nesting needs them
    /// sorted); narrower ones go into their lane's pixel column.
    fn rows(&self, scan: &Scan, axis: &Axis) -> Rows {
        let st = self.st;
        let lane_index: HashMap<Option<u64>, usize> = scan.lanes.keys().enumerate().map(|(i, k)| (*k, i)).collect();
        let mut wide: Vec<(usize, u64, u64, u64)> = Vec::new();
        let mut columns: Vec<BTreeMap<u32, Column>> = (0..scan.lanes.len()).map(|_| BTreeMap::new()).collect();
        for k in 0..st.data.len() {
            if !self.keep(k) {
                continue;
            }
            let iv = st.interval(k);
            let lane = lane_index[&self.lane_of(k)];
            let (x0, x1) = (axis.px(iv.start), axis.px(iv.end));
            if x1 - x0 >= 1.0 {
                wide.push((lane, iv.start, iv.end, k));
            } else {
                let c = columns[lane].entry(x0 as u32).or_default();
                c.count += 1;
                c.busy += iv.end - iv.start;
                *c.names.entry(iv.event).or_default() += 1;
            }
        }
        // Nesting: per lane by start, longest first; an interval starting
        // before the one it follows ends is one row deeper.
        wide.sort_by_key(|a| (a.0, a.1, std::cmp::Reverse(a.2)));
        let mut depth_of = Vec::with_capacity(wide.len());
        let mut depth = vec![1usize; scan.lanes.len()];
        let mut open: Vec<u64> = Vec::new();
        let mut current = usize::MAX;
        for &(lane, start, end, _) in &wide {
            if lane != current {
                open.clear();
                current = lane;
            }
            while open.last().is_some_and(|&e| e <= start) {
                open.pop();
            }
            let d = open.len().min(MAX_DEPTH - 1);
            open.push(end);
            depth[lane] = depth[lane].max(d + 1);
            depth_of.push(d);
        }
        let mut lane_y = Vec::with_capacity(scan.lanes.len());
        let mut y = TOP;
        for d in &depth {
            lane_y.push(y);
            y += *d as f64 * ROW_H + LANE_GAP;
        }
        Rows { wide, depth_of, columns, depth, lane_y, bottom: y }
    }

    /// The SVG: title, lanes, summed columns, bars, the time axis.
    fn draw(
        &self,
        w: &mut dyn Write,
        title: &str,
        scan: &Scan,
        axis: &Axis,
        rows: &Rows,
        summary: &mut TimelineSummary,
    ) -> std::io::Result<()> {
        let st = self.st;
        let (label_w, plot_w) = (axis.label_w, axis.plot_w);
        // A note under the axis when some intervals were summed into columns.
        let height = rows.bottom + if rows.summed() { 56.0 } else { 40.0 };
        let width = label_w + plot_w + 20.0;
        writeln!(w, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
        writeln!(
            w,
            r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="Verdana, sans-serif" font-size="11">"#
        )?;
        writeln!(w, r##"<rect x="0" y="0" width="{width}" height="{height}" fill="#fafafa"/>"##)?;
        writeln!(w, r#"<text x="{}" y="20" font-size="15" text-anchor="middle">{}</text>"#, width / 2.0, xml(title))?;
        let subtitle = format!("from {} ({})", start_text(scan.t0, st.clock.nanos, st.clock.realtime), st.clock.name);
        writeln!(
            w,
            r##"<text x="{}" y="38" fill="#555">{}</text>"##,
            text_x(label_w, subtitle.chars().count(), width),
            xml(&subtitle)
        )?;
        // Lanes: a label and a light band.
        for (i, label) in scan.labels.iter().enumerate() {
            let h = rows.depth[i] as f64 * ROW_H;
            writeln!(
                w,
                r##"<rect x="{label_w}" y="{}" width="{plot_w}" height="{h}" fill="#eeeeee"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
                rows.lane_y[i],
                label_w - 6.0,
                rows.lane_y[i] + ROW_H * 0.75,
                xml(&fit(label, LABEL_CHARS))
            )?;
        }
        self.draw_columns(w, rows, summary)?;
        self.draw_bars(w, axis, rows, summary)?;
        self.draw_axis(w, axis, rows, width)?;
        writeln!(w, "</svg>")
    }

    /// Summed columns, drawn first, under the bars.
    fn draw_columns(&self, w: &mut dyn Write, rows: &Rows, summary: &mut TimelineSummary) -> std::io::Result<()> {
        let st = self.st;
        for (lane, cols) in rows.columns.iter().enumerate() {
            let h = rows.depth[lane] as f64 * ROW_H;
            for (x, c) in cols {
                // The most frequent name; a tie goes to the name first in
                // alphabetical order, so the drawing is the same every run.
                let mut by_name: HashMap<&str, u64> = HashMap::new();
                for (e, n) in &c.names {
                    *by_name.entry(st.name(&Interval { event: *e, ..Interval::default() })).or_default() += n;
                }
                let name = by_name.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map_or("", |(n, _)| *n);
                writeln!(
                    w,
                    r#"<rect x="{x}" y="{}" width="1" height="{h}" fill="{}" opacity="0.8"><title>{} intervals narrower than a pixel, busy {}, mostly {}</title></rect>"#,
                    rows.lane_y[lane],
                    colour(name),
                    c.count,
                    duration(c.busy, st.clock.nanos),
                    xml(name)
                )?;
                summary.summed_bars += 1;
                summary.summed += c.count;
            }
        }
        Ok(())
    }

    /// One bar per wide interval, with its figures as its `<title>` and its
    /// name when it has room for a few characters.
    fn draw_bars(
        &self,
        w: &mut dyn Write,
        axis: &Axis,
        rows: &Rows,
        summary: &mut TimelineSummary,
    ) -> std::io::Result<()> {
        let st = self.st;
        for (&(lane, start, end, k), &d) in rows.wide.iter().zip(&rows.depth_of) {
            let iv = st.interval(k);
            let name = st.name(&iv);
            let (x0, x1) = (axis.px(start), axis.px(end));
            let yy = rows.lane_y[lane] + d as f64 * ROW_H;
            write!(
                w,
                r#"<g><rect x="{x0:.2}" y="{yy}" width="{:.2}" height="{}" fill="{}" stroke="white" stroke-width="0.5"/><title>{}"#,
                x1 - x0,
                ROW_H - 1.0,
                colour(name),
                xml(name)
            )?;
            for (label, value) in st.figures(k) {
                write!(w, "\n{}: {}", xml(&label), xml(&value))?;
            }
            write!(w, "</title>")?;
            let room = ((x1 - x0 - 4.0) / 6.5) as usize;
            if room >= 3 {
                let text = fit(name, room);
                write!(
                    w,
                    r#"<text x="{:.2}" y="{}" font-size="10">{}</text>"#,
                    x0 + 2.0,
                    yy + ROW_H - 4.5,
                    xml(&text)
                )?;
            }
            writeln!(w, "</g>")?;
            summary.bars += 1;
        }
        Ok(())
    }

    /// The time axis, its ticks, and the note on summed columns.
    fn draw_axis(&self, w: &mut dyn Write, axis: &Axis, rows: &Rows, width: f64) -> std::io::Result<()> {
        let (label_w, plot_w, span) = (axis.label_w, axis.plot_w, axis.span);
        let axis_y = rows.bottom + 4.0;
        writeln!(w, r#"<line x1="{label_w}" y1="{axis_y}" x2="{}" y2="{axis_y}" stroke="black"/>"#, label_w + plot_w)?;
        // About a tick per 110 pixels, so that the labels do not crowd.
        let step = tick_step(span, (plot_w / 110.0).clamp(2.0, 10.0) as u64);
        let mut t = 0u64;
        while t <= span {
            let x = axis.px(axis.t0 + t);
            let text = tick_label(t, step, self.st.clock.nanos);
            writeln!(
                w,
                r#"<line x1="{x:.2}" y1="{axis_y}" x2="{x:.2}" y2="{}" stroke="black"/><text x="{x:.2}" y="{}" text-anchor="{}">{}</text>"#,
                axis_y + 5.0,
                axis_y + 18.0,
                tick_anchor(x, text.chars().count(), label_w, label_w + plot_w),
                xml(&text)
            )?;
            match t.checked_add(step) {
                Some(next) => t = next,
                None => break,
            }
        }
        if rows.summed() {
            let note = "1-pixel bars: intervals narrower than a pixel, summed";
            writeln!(
                w,
                r##"<text x="{}" y="{}" fill="#555">{note}</text>"##,
                text_x(label_w, note.chars().count(), width),
                axis_y + 36.0
            )?;
        }
        Ok(())
    }
}

/// The timeline export with its options, as the registry runs it
/// ([`crate::registry::Export`]).
#[derive(Clone, Debug, Default)]
pub struct SvgTimeline {
    /// The drawing's options.
    pub options: TimelineOptions,
}

impl crate::registry::Export for SvgTimeline {
    fn name(&self) -> &'static str {
        "timeline"
    }

    fn export(
        &self,
        file: &Tb5File,
        out: crate::registry::Output<'_>,
        _warn: &mut Vec<crate::Warning>,
        _progress: &mut dyn tbrw_schema::Progress,
    ) -> Result<crate::registry::Summary, ExportError> {
        let s = write(file, &self.options, crate::registry::file_of(self.name(), out)?)?;
        let line = format!(
            "{} intervals in {} lanes: {} bars, {} more summed into {} one-pixel bars",
            s.intervals, s.lanes, s.bars, s.summed, s.summed_bars
        );
        let mut notes = Vec::new();
        if s.unended > 0 {
            notes.push(format!("stream {}: {} intervals with no end left out", self.options.stream, s.unended));
        }
        Ok(crate::registry::Summary { line, notes, ..Default::default() })
    }
}

/// An SVG timeline of an interval stream (MTMC tasks, winIDEA calls).
#[cfg(feature = "cli")]
#[derive(clap::Args, Debug)]
pub struct TimelineArgs {
    /// The TB5 file.
    pub file: std::path::PathBuf,
    /// The SVG to write (`-`: standard output).
    #[arg(short, long)]
    pub output: std::path::PathBuf,
    /// Replace OUTPUT if it exists (never an input).
    #[arg(short, long)]
    pub force: bool,
    /// The stream.
    #[arg(long, default_value_t = 0)]
    pub stream: u32,
    /// One lane per thread or per CPU.
    #[arg(long, value_parser = crate::named!(Lanes), default_value = "thread")]
    pub lanes: Lanes,
    /// The width in pixels.
    #[arg(long, default_value_t = 1200)]
    pub width: u32,
    /// Only intervals overlapping A..B (the start field's clock values,
    /// percentages of the recording, or time since its start: as
    /// `report --time`).
    #[arg(long, value_name = "A..B")]
    pub time: Option<String>,
}

#[cfg(feature = "cli")]
impl crate::cli::ExportArgs for TimelineArgs {
    fn job(self) -> Result<crate::cli::Job, crate::cli::ArgsError> {
        let time = crate::cli::time_range(self.time.as_deref(), &self.file, self.stream)?;
        let options = TimelineOptions { stream: self.stream, lanes: self.lanes, width: self.width, time };
        let export = Box::new(SvgTimeline { options });
        Ok(crate::cli::Job::One { input: self.file, output: self.output, force: self.force, export })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_the_svg_are_escaped_as_in_every_text_output() {
        assert_eq!(xml("task\x1b[31m <a> & \"b\"\n"), "task\\x1b[31m &lt;a&gt; &amp; &quot;b&quot;\\n");
        // Nothing XML 1.0 forbids is left.
        assert!(!xml("\0\x07\x1b\u{9b}").chars().any(char::is_control));
    }
}
