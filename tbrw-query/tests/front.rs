//! The front of the crate: a report asked with one [`ReportOptions`]
//! (the query, the grouping given once, the rows, self or children) to
//! [`report::run`] or [`report::answer`], for every grouping (function
//! too) and perf's inclusive view, and errors a caller matches by variant,
//! phrased without any command line's options.

use tbrw_query::report::{self, Key, ReportOptions};
use tbrw_query::tbrw::Tb5File;
use tbrw_query::By;
use tbrw_query::{Query, QueryError};

const COLLECTOR: &str = "../cli/tests/data/matrix/collector.tb5";
/// A perf recording of the same program with its call stacks.
const STACKS: &str = "../cli/tests/data/matrix/perf-stacks.tb5";
/// Legacy PC samples: no call stacks, no MTMC tasks.
const LEGACY: &str = "../examples/data/sample.tb5";

fn run(file: &Tb5File, opts: &ReportOptions) -> Result<report::Report, QueryError> {
    report::run(file, opts, &mut Vec::new(), &mut |_| {})
}

fn by(file: &Tb5File, by: &[By]) -> report::Report {
    run(file, &ReportOptions::new(Query::default(), by)).unwrap()
}

#[test]
fn run_and_answer_give_one_report_for_every_grouping() {
    let file = Tb5File::open(COLLECTOR).unwrap();
    for b in [By::Module, By::Process, By::Thread, By::Function, By::Line, By::Address] {
        let opts = ReportOptions::new(Query::default(), &[b]);
        let r = run(&file, &opts).unwrap();
        assert_eq!(r.by, b);
        let answered = report::answer(&file, &opts, &mut Vec::new(), &mut |_| {}).unwrap().into_report();
        assert_eq!(answered, r, "{b:?}");
    }
    // The crate's front example: the top function by CPU time.
    let query = Query { weight: tbrw_query::Weight::Cputime, ..Query::default() };
    let r = run(&file, &ReportOptions::new(query, &[By::Function]).top(Some(1))).unwrap();
    assert_eq!(r.rows[0].key.to_string(), "__sincos_fma");
}

#[test]
fn run_takes_the_grouping_once() {
    let file = Tb5File::open(COLLECTOR).unwrap();
    let both = by(&file, &[By::Module, By::Function]);
    assert_eq!(both.by, By::Combined);
    assert!(both.rows.iter().all(|r| matches!(r.key, Key::Combined { .. })), "{:?}", both.rows[0].key);
    assert_eq!(by(&file, &[]).rows, by(&file, &[By::Auto]).rows, "no grouping is auto");
    let top = run(&file, &ReportOptions::new(Query::default(), &[By::Function]).top(Some(2))).unwrap();
    assert_eq!(top.rows, by(&file, &[By::Function]).rows[..2]);
}

#[test]
fn children_is_an_option_of_the_same_call() {
    let file = Tb5File::open(STACKS).unwrap();
    let self_only = by(&file, &[By::Function]);
    let inclusive = run(&file, &ReportOptions::new(Query::default(), &[By::Function]).children(true)).unwrap();
    assert!(inclusive.rows.iter().all(|r| r.children.is_some()));
    assert!(self_only.rows.iter().all(|r| r.children.is_none()));
    // Auto means by function here; the self figures are `--by function`'s.
    let auto = run(&file, &ReportOptions::default().children(true)).unwrap();
    assert_eq!(auto.rows, inclusive.rows);
    // As perf's: a thread's start is in most stacks but never sampled.
    let start = inclusive.rows.iter().find(|r| r.key.to_string() == "start_thread").unwrap();
    assert_eq!((start.samples, start.children.as_ref().unwrap().samples), (0, 172));
    let leaf = inclusive.rows.iter().find(|r| r.key.to_string() == "__sincos_fma").unwrap();
    let leaf_self = self_only.rows.iter().find(|r| r.key.to_string() == "__sincos_fma").unwrap();
    assert_eq!(leaf.samples, leaf_self.samples);
}

#[test]
fn errors_are_variants_that_name_no_option() {
    let file = Tb5File::open(LEGACY).unwrap();
    let e = run(&file, &ReportOptions::new(Query::default(), &[By::Function]).children(true)).unwrap_err();
    assert!(matches!(&e, QueryError::NoCallStacks { stream: 0, .. }), "{e:?}");
    assert!(!e.to_string().contains("--"), "{e}");
    let e = tbrw_query::tasks::task_report(&file, 0, None).unwrap_err();
    assert!(matches!(&e, QueryError::NotTaskStream { stream: 0, .. }), "{e:?}");
    assert!(!e.to_string().contains("--"), "{e}");
}

/// A caller's own progress type: the one trait every library crate takes.
struct Last(u64);

impl tbrw_query::Progress for Last {
    fn done(&mut self, so_far: u64) {
        self.0 = so_far;
    }
}

#[test]
fn progress_is_the_one_trait_of_the_libraries() {
    let file = Tb5File::open(COLLECTOR).unwrap();
    let mut last = Last(0);
    let r =
        report::run(&file, &ReportOptions::new(Query::default(), &[By::Module]), &mut Vec::new(), &mut last).unwrap();
    assert_eq!(last.0, r.records, "told every record walked");
    // The importers' trait is the same one.
    fn takes_import_progress(_: impl tbrw_schema::Progress) {}
    takes_import_progress(Last(0));
}

#[test]
fn wrong_requests_are_typed_variants_that_name_no_option() {
    let file = Tb5File::open(COLLECTOR).unwrap();
    let e = run(&file, &ReportOptions::new(Query::default(), &[By::Module]).children(true)).unwrap_err();
    assert!(matches!(&e, QueryError::ChildrenByFunctionOnly { by } if by == &[By::Module]), "{e:?}");
    assert!(!e.to_string().contains("--"), "{e}");
    let e = run(&file, &ReportOptions::new(Query::default(), &[By::Event, By::Function])).unwrap_err();
    assert!(matches!(&e, QueryError::GroupingAlone { by: By::Event }), "{e:?}");
    assert!(!e.to_string().contains("--"), "{e}");
    let e = run(&file, &ReportOptions::new(Query::default(), &[By::Module]).top(Some(0))).unwrap_err();
    assert!(matches!(&e, QueryError::NoRowsAsked { stream: 0, .. }), "{e:?}");
    assert!(!e.to_string().contains("--"), "{e}");
    let e = "5%".parse::<tbrw_query::time::TimeRange>().unwrap_err();
    assert!(matches!(&e, QueryError::BadTimeRange { value: None, .. }), "{e:?}");
    let e = "1x..".parse::<tbrw_query::time::TimeRange>().unwrap_err();
    assert!(matches!(&e, QueryError::BadTimeRange { value: Some(v), .. } if v == "1x"), "{e:?}");
}
