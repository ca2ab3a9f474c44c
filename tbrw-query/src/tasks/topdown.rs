//! Topdown as the MTMC profiler's own post-processing computes it: level 1
//! from the PERF_METRICS bytes weighted by the slots, corrected by
//! INT_MISC.UOP_DROPPING, normalised by the sum of the four level-1
//! categories, never clamped; level 2 as eight figures. Pure arithmetic:
//! imports nothing of the import or the report.

/// Level-1 names, in the order of [`Topdown::level1`].
pub const LEVEL1: [&str; 4] = ["retiring", "bad_speculation", "frontend_bound", "backend_bound"];
/// Level-2 names, in the order of [`Topdown::level2`].
pub const LEVEL2: [&str; 8] = [
    "heavy_operations",
    "light_operations",
    "branch_mispredicts",
    "machine_clears",
    "fetch_latency",
    "fetch_bandwidth",
    "memory_bound",
    "core_bound",
];

/// Level-1 and (when the readings have level-2 bytes) level-2 fractions of
/// one task or of a group of tasks. Fractions of 1; a figure may fall
/// slightly outside [0, 1] (the MSR's rounding, the drop correction): that
/// is kept, as the profiler's post-processing keeps it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Topdown {
    /// Retiring, bad speculation, frontend bound, backend bound.
    pub level1: [f64; 4],
    /// Heavy operations, light operations, branch mispredicts, machine
    /// clears, fetch latency, fetch bandwidth, memory bound, core bound.
    pub level2: Option<[f64; 8]>,
    /// Slots the task(s) used.
    pub slots: u64,
}

/// Why a task has no topdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoTopdown {
    /// The slot counter did not advance (an empty task).
    NoSlots,
    /// A counter went backwards: it was reset between begin and end (the
    /// profiler resets them at every task start, so a task started on the
    /// same core in between resets them).
    Reset,
    /// The category slots sum to zero.
    Empty,
}

impl std::fmt::Display for NoTopdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoTopdown::NoSlots => "the slot counter did not advance",
            NoTopdown::Reset => "the topdown counters were reset between begin and end",
            NoTopdown::Empty => "no slots in any category",
        })
    }
}

fn byte(metrics: u64, k: usize) -> f64 {
    ((metrics >> (8 * k)) & 0xFF) as f64
}

/// One task's (or group's) raw sums: for each of the 8 PERF_METRICS bytes,
/// the slots it stands for (in 1/255 units: `byte × slots`) at end minus at
/// begin; the slots and dropped uops used.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sums {
    /// `byte_k(end) × slots_end − byte_k(begin) × slots_begin`, summed.
    pub category: [f64; 8],
    /// Δ slots, summed.
    pub slots: u64,
    /// Δ INT_MISC.UOP_DROPPING, summed.
    pub uop_drop: u64,
    /// Whether any reading had level-2 bytes.
    pub level2: bool,
}

impl Sums {
    /// The sums of one task's readings `[slots, metrics, drop]` at begin and
    /// end (the layout of section `[7]`).
    pub fn of(td: &[u64; 6]) -> Result<Sums, NoTopdown> {
        let [sb, mb, db, se, me, de] = *td;
        // Raw values reset at each task start: a decrease is a reset, never a wrap.
        let slots = se.checked_sub(sb).ok_or(NoTopdown::Reset)?;
        let uop_drop = de.checked_sub(db).ok_or(NoTopdown::Reset)?;
        if slots == 0 {
            return Err(NoTopdown::NoSlots);
        }
        let mut category = [0.0; 8];
        for (k, c) in category.iter_mut().enumerate() {
            *c = byte(me, k) * se as f64 - byte(mb, k) * sb as f64;
        }
        Ok(Sums { category, slots, uop_drop, level2: (mb >> 32) != 0 || (me >> 32) != 0 })
    }

    /// Adds another task's sums (totals weigh each task by its slots).
    pub fn add(&mut self, o: &Sums) {
        for (a, b) in self.category.iter_mut().zip(o.category) {
            *a += b;
        }
        self.slots += o.slots;
        self.uop_drop += o.uop_drop;
        self.level2 |= o.level2;
    }

    /// The breakdown of these sums.
    pub fn topdown(&self) -> Result<Topdown, NoTopdown> {
        if self.slots == 0 {
            return Err(NoTopdown::NoSlots);
        }
        let d = self.slots as f64;
        // Each category's share of the task's slots (the 1/255 cancels out in the normalisation).
        let t: Vec<f64> = self.category.iter().map(|c| c / d).collect();
        let sum = t[0] + t[1] + t[2] + t[3];
        if sum == 0.0 {
            return Err(NoTopdown::Empty);
        }
        let drop = self.uop_drop as f64 / d;
        let retiring = t[0] / sum;
        let frontend = t[2] / sum - drop;
        let backend = t[3] / sum;
        let bad = 1.0 - retiring - frontend - backend;
        let level2 = self.level2.then(|| {
            let heavy = t[4] / sum;
            let branch = t[5] / sum;
            let fetch_latency = t[6] / sum - drop;
            let memory = t[7] / sum;
            [
                heavy,
                retiring - heavy,
                branch,
                bad - branch,
                fetch_latency,
                frontend - fetch_latency,
                memory,
                backend - memory,
            ]
        });
        Ok(Topdown { level1: [retiring, bad, frontend, backend], level2, slots: self.slots })
    }
}

/// One task's breakdown from its section `[7]` readings.
pub fn topdown(td: &[u64; 6]) -> Result<Topdown, NoTopdown> {
    Sums::of(td)?.topdown()
}
