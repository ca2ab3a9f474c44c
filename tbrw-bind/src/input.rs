//! What the engine binds: modules and samples, reduced to the fields
//! binding needs. The callers (the `tbrw` crate, or any other) fill these
//! from `TBRW_MODULE` records and data records.

/// `unload_time` of a module that is never unloaded (`(TBRW_U64)-1`).
pub const NEVER: u64 = u64::MAX;

/// What a module record notifies (guide 6.6: `TBRW_MODULE_LOADED` /
/// `TBRW_MODULE_UNLOADED`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ModuleKind {
    /// A load: a mapping samples can bind to.
    #[default]
    Load,
    /// An unload notification: it ends the load it pairs with (by pid and
    /// address, or by pid and module path or name when its address is 0:
    /// docs/BIND.md) and is never itself a bind target.
    Unload,
}

/// One module record. Its index is its position in the slice given to the engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ModuleSpec {
    /// `module_associated_pid`: the OS pid that loaded (or unloaded) it.
    pub pid: u32,
    /// `module_load_address`.
    pub load_address: u64,
    /// `module_length`. A zero-length module covers no address.
    pub length: u64,
    /// `module_event_when`: the time of the notification; for a load, its
    /// load time (0: loaded before collection started).
    pub load_time: u64,
    /// `module_unload_tsc`: unload time ([`NEVER`]: never unloaded).
    pub unload_time: u64,
    /// `TBRW_MODULE_GLOBAL_LOAD`: seen by every process (kernel modules).
    pub global: bool,
    /// `TBRW_MODULE_IS_EXE`: the executable of its process.
    pub exe: bool,
    /// `TBRW_MODULE_TSC_USED`: the times are TSC values (else sample counts).
    pub tsc_time: bool,
    /// Load or unload notification.
    pub kind: ModuleKind,
    /// `module_path`, as an identity of its text: records with equal texts
    /// have equal values (`None`: no path). Only an unload record without an
    /// address consults it, to find the load of its module (docs/BIND.md).
    pub path: Option<u64>,
    /// `module_name`, as `path` is `module_path`.
    pub name: Option<u64>,
    /// `TBRW_MODULE_1ST_MODULE_REC_IN_PROCESS`: the first notification of a
    /// process; its load time starts a process instance.
    pub first_in_process: bool,
}

impl ModuleSpec {
    /// One past the last address covered (saturating at `u64::MAX`, which
    /// therefore no module covers).
    pub fn end(&self) -> u64 {
        self.load_address.saturating_add(self.length)
    }

    /// The sample's time in this module's time base: its index in the
    /// stream for a module timed in sample counts; its TSC for a module
    /// timed in TSCs, or `None` when the sample has no TSC (then time
    /// cannot tell whether the module was loaded).
    pub fn time_of(&self, sample: &Sample, index: u64) -> Option<u64> {
        if self.tsc_time {
            sample.tsc
        } else {
            Some(index)
        }
    }

    /// Whether the module is loaded at time `t` (`load <= t < unload`).
    pub fn loaded_at(&self, t: u64) -> bool {
        self.load_time <= t && (self.unload_time == NEVER || t < self.unload_time)
    }
}

/// One sample. Its index is its position in the stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sample {
    /// The instruction pointer.
    pub ip: u64,
    /// The OS process id.
    pub pid: u32,
    /// The OS thread id.
    pub tid: u32,
    /// The time stamp counter, when the stream has one.
    pub tsc: Option<u64>,
}
