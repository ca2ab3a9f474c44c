//! The dump test's tools, shared by `tbrw-sys/tests/intel_dump.rs` and
//! `cli/tests/intel_written.rs` (included with `#[path]`, beside
//! `c_build.rs`): `tbrw-sys/tests/intel/tbrw_dump.c` run through a
//! library, and the comparison of Intel's dump with ours.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::c_build::{compile, library, Lang};

pub fn source(name: &str) -> PathBuf {
    crate::c_build::root().join("tbrw-sys/tests/intel").join(name)
}

/// Intel's `libamplxe_tbrw_3.19.so`, from `TBRW_INTEL_LIB`.
pub fn intel_lib(test: &str) -> Option<PathBuf> {
    match std::env::var_os("TBRW_INTEL_LIB").map(PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        _ => {
            eprintln!("{test}: TBRW_INTEL_LIB does not name Intel's libamplxe_tbrw_3.19.so: skipped");
            None
        }
    }
}

/// This project's `libtbrw.so`, built.
pub fn ours() -> PathBuf {
    library().join("libtbrw.so")
}

/// What `tbrw_dump LIBRARY FILE` prints (it must succeed). Each run has a
/// temporary folder of its own: Intel's library keeps work files in
/// `$TMPDIR` under names two processes started together can share.
pub fn dump(lib: &Path, file: &Path) -> String {
    let exe = compile(&source("tbrw_dump.c"), Lang::CDlopen);
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(&exe).arg(lib).arg(file).env("TMPDIR", tmp.path()).output().expect("run tbrw_dump");
    assert!(
        out.status.success(),
        "tbrw_dump {} {} failed ({}):\n{}",
        lib.display(),
        file.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the dump is text")
}

/// The lines of stream `n`'s block of a dump.
pub fn stream_block(lines: &[&str], n: usize) -> Option<(usize, usize)> {
    let head = format!("stream {n}:");
    let start = lines.iter().position(|l| *l == head)?;
    let end = lines[start + 1..].iter().position(|l| l.starts_with("stream ")).map_or(lines.len(), |k| start + 1 + k);
    Some((start, end))
}

/// The records a data line announces and the record lines after it.
pub fn data_of<'a>(block: &[&'a str]) -> Option<(u64, Vec<&'a str>)> {
    let at = block.iter().position(|l| l.starts_with(" data: "))?;
    let bytes = block[at].strip_prefix(" data: ")?.split(' ').next()?.parse().ok()?;
    let records = block[at + 1..].iter().take_while(|l| l.starts_with("  ")).copied().collect();
    Some((bytes, records))
}

/// Whether line `i` of Intel's dump is a cpu whose `native` Intel's
/// reader derived from its first architecture, as it does in a file whose
/// version info states a sample file version below 22 (it takes the
/// system from the legacy `vtsa_sys_info` section there, which has no
/// `native`: x86 gives 1, Intel 64 gives 5, docs/FORMAT.md), and
/// everything else on the line is ours.
fn native_from_arch(il: &[&str], i: usize, ours: &str) -> bool {
    let version = il.iter().find_map(|l| l.strip_prefix("version info: ")?.split("file=").nth(1)?.parse::<u32>().ok());
    let field = |l: &str, key: &str| l.split(' ').find_map(|w| w.strip_prefix(key)).map(str::to_string);
    let arch = il.get(i + 1).and_then(|l| field(l.trim_start(), "type="));
    let (Some(native), Some(arch)) = (field(il[i], "native="), arch) else { return false };
    let without = |l: &str| l.split(' ').filter(|w| !w.starts_with("native=")).collect::<Vec<_>>().join(" ");
    version.is_some_and(|v| v < 22)
        && il[i].starts_with("  cpu number=")
        && native == arch
        && without(il[i]) == without(ours)
}

/// Compares Intel's dump with ours: equal, but for Intel's misread of a
/// stream of type 2, 3 or 8 in a file whose stream 0 holds legacy sample
/// records (there Intel's records are stream 0's count of that stream's
/// records, of which ours, what was written, are the first), and for a
/// cpu's `native` in a file stating a version below 22
/// ([`native_from_arch`]).
pub fn assert_same(intel: &str, ours: &str, what: &str) -> usize {
    if intel == ours {
        return 0;
    }
    let (il, ol): (Vec<&str>, Vec<&str>) = (intel.lines().collect(), ours.lines().collect());
    let legacy0 = il.iter().any(|l| l.contains(" type=0x1 subtype=") && l.starts_with("  entry offset="));
    let records0 = stream_block(&il, 0).and_then(|(s, e)| data_of(&il[s..e])).map_or(0, |(_, r)| r.len() as u64);
    let (mut i, mut o, mut misread) = (0, 0, 0);
    while i < il.len() || o < ol.len() {
        let n = il.get(i).and_then(|l| l.strip_prefix("stream ")?.strip_suffix(':')?.parse::<usize>().ok());
        if let (Some(n), true) = (n, il.get(i) == ol.get(o)) {
            let (is, ie) = stream_block(&il, n).unwrap();
            let (os, oe) = stream_block(&ol, n).unwrap();
            if il[is..ie] != ol[os..oe] {
                let misread_type =
                    il[is..ie].iter().any(|l| [" type=2 ", " type=3 ", " type=8 "].iter().any(|t| l.contains(t)));
                let (ib, ir) = data_of(&il[is..ie]).unwrap_or_default();
                let (ob, or) = data_of(&ol[os..oe]).unwrap_or_default();
                let size = if or.is_empty() { 0 } else { ob / or.len() as u64 };
                assert!(
                    legacy0 && misread_type && size > 0 && ib == records0 * size && ir.starts_with(&or),
                    "{what}: stream {n} differs, and not as Intel's known misread:\nIntel's:\n{}\nours:\n{}",
                    il[is..ie].join("\n"),
                    ol[os..oe].join("\n")
                );
                // Everything but the records is the same.
                let strip = |b: &[&str]| {
                    b.iter()
                        .filter(|l| !l.starts_with("  ") && !l.starts_with(" data: "))
                        .map(|l| l.to_string())
                        .collect::<Vec<_>>()
                };
                assert_eq!(strip(&il[is..ie]), strip(&ol[os..oe]), "{what}: stream {n}");
                misread += 1;
            }
            i = ie;
            o = oe;
            continue;
        }
        if !(i < il.len() && o < ol.len() && native_from_arch(&il, i, ol[o])) {
            assert_eq!(il.get(i), ol.get(o), "{what}: line {} of Intel's dump, {} of ours", i + 1, o + 1);
        }
        i += 1;
        o += 1;
    }
    misread
}
