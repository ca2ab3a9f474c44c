//! MTMC temporal profiler raw task logs: [`parse_line`] parses a line
//! (either layout the profiler writes) into a [`Task`], [`import_mtmc`]
//! writes `tbrw import mtmc LOG -o OUT.tb5` (the private modules `log` and
//! `import`; their items are here); the record layout (the one encoder and
//! decoder) is `tbrw_schema::mtmc`, the task report `tbrw_query::tasks`. Mapping, layouts, limits and arithmetic: docs/IMPORT.md.
//!
//! A v0.1 line is `[0],[1],...,[11],` with `_`-separated sub-sections: task
//! and parent thread ids, start/end/scheduled times (ns, CLOCK_REALTIME),
//! topdown slots/metrics/dropped uops at begin and end, then per end
//! (begin, end): the number of events, CPU and NUMA node, and the counter
//! readings. The 2023 layout adds an integer prefix, a name, a
//! configuration index and constants.

mod import;
mod log;

pub use import::{address_of, import_mtmc, MtmcOptions, MtmcStats, PidSource};
pub use log::{parse_line, Extra, Layout, Task, MAX_LINE};
