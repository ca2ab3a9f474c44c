//! Topdown: the PERF_METRICS register's eight byte-sized fractions of the
//! slots counter, turned into a task's own level-1 and level-2 breakdown.

/// Level-1 and (when present) level-2 topdown fractions of a task, in [0, 1].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Topdown {
    /// Retiring, bad speculation, frontend bound, backend bound.
    pub level1: [f64; 4],
    /// Heavy operations, branch mispredicts, fetch latency, memory bound.
    pub level2: Option<[f64; 4]>,
    /// Slots the task used.
    pub slots: u64,
}

/// Level-1 names, in byte order of PERF_METRICS.
pub const LEVEL1: [&str; 4] = ["retiring", "bad_speculation", "frontend_bound", "backend_bound"];
/// Level-2 names, bytes 4-7.
pub const LEVEL2: [&str; 4] = ["heavy_operations", "branch_mispredicts", "fetch_latency", "memory_bound"];

/// Slots attributed to each of the 8 metric bytes by one reading: `slots × byte / 255`.
pub fn category_slots(slots: u64, metrics: u64) -> [f64; 8] {
    let mut v = [0.0; 8];
    for (i, x) in v.iter_mut().enumerate() {
        *x = slots as f64 * ((metrics >> (8 * i)) & 0xFF) as f64 / 255.0;
    }
    v
}

/// A task's own breakdown: each category's slots at the end minus at the
/// begin, over the slots the task used. `None` when the slot counter did
/// not advance (reset, overflow, or an empty task).
pub fn topdown(slots_begin: u64, metrics_begin: u64, slots_end: u64, metrics_end: u64) -> Option<Topdown> {
    let used = slots_end.checked_sub(slots_begin).filter(|&d| d > 0)?;
    let b = category_slots(slots_begin, metrics_begin);
    let e = category_slots(slots_end, metrics_end);
    let frac = |i: usize| ((e[i] - b[i]) / used as f64).clamp(0.0, 1.0);
    let level2_present = (metrics_begin >> 32) != 0 || (metrics_end >> 32) != 0;
    Some(Topdown {
        level1: [frac(0), frac(1), frac(2), frac(3)],
        level2: level2_present.then(|| [frac(4), frac(5), frac(6), frac(7)]),
        slots: used,
    })
}
