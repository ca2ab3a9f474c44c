//! What the engine produces: one bind entry per sample, the generated
//! process and thread tables, and a bind entry per module and per thread.
//! The bind entries have the layout of their C structures.

/// Module index of a sample no module covers.
pub const UNKNOWN_MODULE: u64 = u64::MAX;

/// `DATA_BIND_STRUCT`: one per sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct DataBind {
    /// `module_index`: index of the module, or [`UNKNOWN_MODULE`].
    pub module_index: u64,
    /// `pid_index`: index into the generated process table.
    pub pid_index: u64,
    /// `tid_index`: index into the generated thread table.
    pub tid_index: u64,
}

/// `MODULE_BIND_STRUCT`: one per module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct ModuleBind {
    /// `pid_index`: the process the module belongs to.
    pub pid_index: u64,
}

/// `TID_BIND_STRUCT`: one per thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct TidBind {
    /// `pid_index`: the process the thread belongs to.
    pub pid_index: u64,
}

const _: () = assert!(std::mem::size_of::<DataBind>() == 24);
const _: () = assert!(std::mem::size_of::<ModuleBind>() == 8);
const _: () = assert!(std::mem::size_of::<TidBind>() == 8);

/// One entry of the generated process table: a process instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Process {
    /// The OS pid.
    pub pid: u32,
    /// 0 for the process the pid names from the start; k for the process
    /// begun by the k-th later load of an executable module for this pid.
    pub instance: u32,
    /// When it began: the load time of that executable (0 for instance 0).
    pub start: u64,
    /// The first executable module (by index) of this instance, if any:
    /// where its path and name come from.
    pub exe_module: Option<u64>,
}

/// One entry of the generated thread table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Thread {
    /// Index of its process in the process table.
    pub pid_index: u64,
    /// The OS thread id.
    pub tid: u32,
}

/// Everything a bind produces but the per-sample entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BindTables {
    /// The process table, in order of first appearance (modules, then samples).
    pub processes: Vec<Process>,
    /// The thread table, in order of first appearance in the samples.
    pub threads: Vec<Thread>,
    /// One per module, in module order.
    pub module_binds: Vec<ModuleBind>,
}

impl BindTables {
    /// One `TID_BIND_STRUCT` per thread.
    pub fn tid_binds(&self) -> Vec<TidBind> {
        self.threads.iter().map(|t| TidBind { pid_index: t.pid_index }).collect()
    }
}

/// A complete bind result, for callers that keep it in memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BindResult {
    /// One per sample, in sample order.
    pub data: Vec<DataBind>,
    /// The tables.
    pub tables: BindTables,
}
