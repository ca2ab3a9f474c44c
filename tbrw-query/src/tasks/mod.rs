//! MTMC task streams: [`report`] is `tbrw report --by task` (every task's
//! duration, counter deltas and topdown, totals per thread and core),
//! [`mod@topdown`] the profiler's own topdown arithmetic. The records are
//! decoded by `tbrw_schema::mtmc`, the one decoder of their layout.

pub mod report;
pub mod topdown;

pub use report::{task_report, write_task_text};
pub use topdown::{topdown, NoTopdown, Sums, Topdown, LEVEL1, LEVEL2};
