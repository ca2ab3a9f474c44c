//! MTMC task streams: [`task_report`] is `tbrw report --by task` (every
//! task's duration, counter deltas and topdown, totals per thread and
//! core), [`topdown()`] the profiler's own topdown arithmetic (the private
//! modules `report` and `topdown`; their items are here). The records are
//! decoded by `tbrw_schema::mtmc`, the one decoder of their layout.

mod report;
mod topdown;

pub use report::{task_figures, task_report, write_task_text};
pub use topdown::{topdown, NoTopdown, Sums, Topdown, LEVEL1, LEVEL2};
