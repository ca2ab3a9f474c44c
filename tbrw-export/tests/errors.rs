//! The exports' errors are typed: a failed write keeps the writer's
//! `io::Error` (its kind) as the source, and errors about the options are
//! variants a caller matches, phrased without any command line's options.
#![cfg(all(feature = "flamegraph", feature = "pprof", feature = "firefox"))]

use std::error::Error as _;
use std::io::{self, ErrorKind, Write};

use tbrw_export::flamegraph::{self, FlameOptions};
use tbrw_export::{firefox, pprof, ExportError};
use tbrw_query::stacks::ViewOptions;
use tbrw_query::By;

const PERF: &str = "../cli/tests/data/matrix/perf.tb5";

/// A writer that takes `room` bytes, then fails as a full disk does.
struct Full {
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.room == 0 {
            return Err(io::Error::from(ErrorKind::StorageFull));
        }
        let n = buf.len().min(self.room);
        self.room -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The `io::Error` in `e`'s chain of sources, if any.
fn io_kind(e: &ExportError) -> Option<ErrorKind> {
    let mut at: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(x) = at {
        if let Some(io) = x.downcast_ref::<io::Error>() {
            return Some(io.kind());
        }
        at = x.source();
    }
    None
}

fn assert_full(e: ExportError, what: &str) {
    assert_eq!(io_kind(&e), Some(ErrorKind::StorageFull), "{what}: {e} ({e:?})");
    match &e {
        ExportError::Write { source, .. } => assert_eq!(source.kind(), ErrorKind::StorageFull),
        other => panic!("{what}: not a write error: {other:?}"),
    }
    assert!(e.source().is_some(), "{what}: the io::Error is the source");
}

#[test]
fn a_full_disk_reaches_the_caller_as_its_io_error() {
    let file = tbrw::Tb5File::open(PERF).unwrap();
    let opts = ViewOptions::default();
    for room in [0, 100] {
        let e = pprof::write(&file, &opts, &mut Full { room }, &mut Vec::new(), &mut |_| {}).unwrap_err();
        assert_full(e, "pprof");
        let e = firefox::write(&file, &opts, &mut Full { room }, &mut Vec::new(), &mut |_| {}).unwrap_err();
        assert_full(e, "firefox");
        for folded in [false, true] {
            let fopts = FlameOptions { folded, ..FlameOptions::default() };
            let e =
                flamegraph::write(&file, &opts, &fopts, &mut Full { room }, &mut Vec::new(), &mut |_| {}).unwrap_err();
            assert_full(e, if folded { "folded stacks" } else { "flame graph" });
        }
    }
}

#[test]
fn errors_about_options_are_variants_without_command_line_options() {
    let file = tbrw::Tb5File::open(PERF).unwrap();
    let opts = ViewOptions::default();
    let write = |fopts: &FlameOptions| {
        flamegraph::write(&file, &opts, fopts, &mut Vec::new(), &mut Vec::new(), &mut |_| {}).unwrap_err()
    };
    let e = write(&FlameOptions { by: Vec::new(), ..FlameOptions::default() });
    assert!(matches!(&e, ExportError::FrameKinds { given: None, kinds } if kinds.contains(&By::Function)), "{e:?}");
    assert!(!e.to_string().contains("--"), "{e}");

    let e = write(&FlameOptions { by: vec![By::Line], ..FlameOptions::default() });
    assert!(matches!(&e, ExportError::FrameKinds { given: Some(By::Line), .. }), "{e:?}");
    assert!(!e.to_string().contains("--"), "{e}");
}
