//! The front of the crate: a report asked with the grouping given once
//! ([`report::run`]), [`report::report`] for every grouping a sample
//! count has (function too), and errors a caller matches by variant,
//! phrased without any command line's options.

use tbrw_query::file_symbols::SymbolOptions;
use tbrw_query::report::{self, By, Key, ReportOptions};
use tbrw_query::tbrw::Tb5File;
use tbrw_query::{Query, QueryError};

const COLLECTOR: &str = "../cli/tests/data/matrix/collector.tb5";
/// Legacy PC samples: no call stacks, no MTMC tasks.
const LEGACY: &str = "../examples/data/sample.tb5";

fn run(file: &Tb5File, by: &[By]) -> report::Report {
    report::run(file, &Query::default(), by, None, &SymbolOptions::default(), &mut std::io::sink(), &mut |_| {})
        .unwrap()
}

#[test]
fn report_report_groups_by_function_as_run_does() {
    let file = Tb5File::open(COLLECTOR).unwrap();
    for by in [By::Function, By::Line, By::Address] {
        let opts = ReportOptions { by, ..ReportOptions::default() };
        let r = report::report(&file, &opts, &mut |_| {}).unwrap();
        let want = run(&file, &[by]);
        assert_eq!(r.rows, want.rows, "{by:?}");
        assert_eq!(r.by, by);
    }
    // The crate's front example: the top function by CPU time.
    let query = Query { weight: tbrw_query::Weight::Cputime, ..Query::default() };
    let opts = ReportOptions { query, by: By::Function, top: Some(1) };
    let r = report::report(&file, &opts, &mut |_| {}).unwrap();
    assert_eq!(r.rows[0].key.to_string(), "__sincos_fma");
}

#[test]
fn run_takes_the_grouping_once() {
    let file = Tb5File::open(COLLECTOR).unwrap();
    let both = run(&file, &[By::Module, By::Function]);
    assert_eq!(both.by, By::Combined);
    assert!(both.rows.iter().all(|r| matches!(r.key, Key::Combined { .. })), "{:?}", both.rows[0].key);
    assert_eq!(run(&file, &[]).rows, run(&file, &[By::Auto]).rows, "no grouping is auto");
    let query = Query::default();
    let top = report::run(
        &file,
        &query,
        &[By::Function],
        Some(2),
        &SymbolOptions::default(),
        &mut std::io::sink(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(top.rows, run(&file, &[By::Function]).rows[..2]);
}

#[test]
fn errors_are_variants_that_name_no_option() {
    let file = Tb5File::open(LEGACY).unwrap();
    let opts = ReportOptions::default();
    let symbols = SymbolOptions::default();
    let e = report::children::report(&file, &opts, &[By::Function], &symbols, &mut std::io::sink(), &mut |_| {})
        .unwrap_err();
    assert!(matches!(&e, QueryError::NoCallStacks { stream: 0, .. }), "{e:?}");
    assert!(!e.to_string().contains("--"), "{e}");
    let e = tbrw_query::tasks::task_report(&file, 0, None).unwrap_err();
    assert!(matches!(&e, QueryError::NotTaskStream { stream: 0, .. }), "{e:?}");
    assert!(!e.to_string().contains("--"), "{e}");
}
