//! MTMC temporal profiler raw task logs: [`log`] parses a line into a
//! [`Task`], [`import`] writes `tbrw import mtmc LOG -o OUT.tb5` (and reads
//! the records back), [`mod@topdown`] decodes the topdown metrics, [`report`] is
//! `tbrw report --by task`. Mapping and arithmetic: docs/IMPORT.md.
//!
//! A line is `[0],[1],...,[11],` with `_`-separated sub-sections: task and
//! parent thread ids, start/end/scheduled times (ns, CLOCK_REALTIME),
//! topdown slots/metrics at begin and end, then per end (begin, end): the
//! number-of-events, core id and prefix fields and the counter readings.

pub mod import;
pub mod log;
pub mod report;
pub mod topdown;

pub use import::{counters_of, decode, descriptor, import_mtmc, record_size, MtmcStats};
pub use log::{parse_line, Task};
pub use report::{task_report, write_task_text};
pub use topdown::{category_slots, topdown, Topdown, LEVEL1, LEVEL2};
