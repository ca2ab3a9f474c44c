//! The TB5 bind engine: attributes each sample to the module loaded at its
//! instruction pointer in its process at its time, and generates the
//! process and thread tables (TBRW guide 3.3, 6.1, 8.12).
//!
//! ```
//! use tbrw_bind::*;
//!
//! // The guide's example (3.3): ProjNavigator.dll at 0x630E0000, 0x27000 bytes, in pid 428.
//! let modules = [ModuleSpec { pid: 428, load_address: 0x630E_0000, length: 0x27000, unload_time: NEVER, ..Default::default() }];
//! let samples = [
//!     Sample { ip: 0x630E_5907, pid: 428, tid: 1, tsc: None },
//!     Sample { ip: 0x6310_7000, pid: 428, tid: 1, tsc: None }, // one past the end
//! ];
//! let r = bind(&modules, &samples);
//! assert_eq!(r.data[0].module_index, 0);
//! assert_eq!(r.data[1].module_index, UNKNOWN_MODULE);
//! assert_eq!(r.tables.processes[0].pid, 428);
//! ```
//!
//! The rules are in docs/BIND.md; [`reference::bind`] applies them
//! naively and is what the tests compare the engine with. This crate does
//! no I/O and knows nothing of the TB5 file format.

#![deny(missing_docs)]

mod binder;
mod input;
mod map;
mod output;
pub mod reference;

pub use binder::{bind_parallel, Binder, Renumbering};
pub use input::{ModuleKind, ModuleSpec, Sample, NEVER};
pub use map::{ModuleMap, Span};
pub use output::{BindResult, BindTables, DataBind, ModuleBind, Process, Thread, TidBind, UNKNOWN_MODULE};

/// Binds `samples` (indices 0, 1, ...) against `modules` in one call.
pub fn bind(modules: &[ModuleSpec], samples: &[Sample]) -> BindResult {
    let map = ModuleMap::new(modules);
    let mut b = Binder::new(&map);
    let mut data = Vec::new();
    b.bind(samples, &mut data);
    BindResult { data, tables: b.finish() }
}
