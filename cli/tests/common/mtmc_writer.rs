//! Test support: MTMC task lines written the way the profiler's Finish()
//! writes them, one writer per layout, from a plain description of a task
//! (written here from the facts in docs/IMPORT.md, not with the importer's code).
#![allow(dead_code)]

/// One task as the profiler holds it before writing.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub tid: u32,
    pub pthread: u32,
    pub start: u64,
    /// 0: the task never ended.
    pub end: u64,
    pub parent_tid: u32,
    pub parent_pthread: u32,
    pub scheduled: u64,
    /// Slots, PERF_METRICS, UOP_DROPPING at begin, then at end (v0.1 with topdown on).
    pub topdown: Option<[u64; 6]>,
    /// CPU at begin and at end.
    pub cpu: [u64; 2],
    /// NUMA node at begin and at end.
    pub numa: [u64; 2],
    pub begin: Vec<u64>,
    pub end_readings: Vec<u64>,
    /// 2023 layout: integer prefix, user prefix, configuration index, constants.
    pub extra: Option<(i64, String, i64, Vec<f64>)>,
}

impl Line {
    /// A plain task: no topdown, no 2023 sections.
    pub fn plain(tid: u32, start: u64, end: u64, cpu: u64, begin: Vec<u64>, end_readings: Vec<u64>) -> Line {
        Line {
            tid,
            pthread: tid.wrapping_mul(7919),
            start,
            end,
            parent_tid: tid + 1,
            parent_pthread: 77,
            scheduled: start.saturating_sub(100),
            topdown: None,
            cpu: [cpu, cpu],
            numa: [0, 0],
            begin,
            end_readings,
            extra: None,
        }
    }
}

/// Readings each followed by `_`, the last by `,`; nothing at all without readings.
fn readings(v: &[u64], out: &mut String) {
    for (i, r) in v.iter().enumerate() {
        out.push_str(&r.to_string());
        out.push(if i + 1 == v.len() { ',' } else { '_' });
    }
}

fn head(l: &Line) -> String {
    format!("{},{},{},{},{},{},{},", l.tid, l.pthread, l.start, l.end, l.parent_tid, l.parent_pthread, l.scheduled)
}

/// The v0.1 layout: [7] the topdown readings or empty; the number of
/// events counts the three topdown events; a trailing comma.
pub fn v01(l: &Line) -> String {
    let mut s = head(l);
    let mut n = l.begin.len();
    if let Some(t) = l.topdown {
        n += 3;
        s.push_str(&format!("{}_{}_{}_{}_{}_{}", t[0], t[1], t[2], t[3], t[4], t[5]));
    }
    s.push(',');
    s.push_str(&format!("{n}_{}_{},", l.cpu[0], l.numa[0]));
    readings(&l.begin, &mut s);
    s.push_str(&format!("{n}_{}_{},", l.cpu[1], l.numa[1]));
    readings(&l.end_readings, &mut s);
    s
}

/// The 2023 layout: [7] six zeros, every reading in [9]/[11], then the
/// integer prefix, the user prefix, the configuration index and the
/// constants, with no trailing comma.
pub fn v2023(l: &Line) -> String {
    let mut s = head(l);
    s.push_str("0_0_0_0_0_0,");
    let n = l.begin.len();
    s.push_str(&format!("{n}_{}_{},", l.cpu[0], l.numa[0]));
    readings(&l.begin, &mut s);
    s.push_str(&format!("{n}_{}_{},", l.cpu[1], l.numa[1]));
    readings(&l.end_readings, &mut s);
    let (ip, prefix, cfg, consts) = l.extra.clone().unwrap_or_default();
    let c: Vec<String> = consts.iter().map(|c| c.to_string()).collect();
    s.push_str(&format!("{ip},{prefix},{cfg},{}", c.join("_")));
    s
}
