//! Compressed sections (`SHF_COMPRESSED` zlib and zstd, the older
//! `.zdebug_*`): decompressed as streams into the same lines as the
//! uncompressed file, and a section whose header claims more than its
//! compressed bytes can give (a 3 GiB `.debug_line` or `.eh_frame` in a
//! small file) skipped with a warning, never allocated. The test binary
//! counts its heap: each case's peak is checked, and a single allocation
//! over 512 MiB is refused outright (so that a regression fails here
//! rather than taking the machine's memory).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use object::{Object, ObjectSection};
use tbrw_symbols::unwind::{Arch, Unwinder};
use tbrw_symbols::{Config, KernelSymbols, Mapping, ModuleSpec, SectionProblem, Symbolizer, Warning};

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The largest single allocation given.
const REFUSED: usize = 512 << 20;

// SAFETY: every call is passed to the system allocator unchanged, or
// refused with a null pointer (which callers must handle).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > REFUSED {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout, as given.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: allocated by `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > REFUSED {
            return std::ptr::null_mut();
        }
        // SAFETY: as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            NOW.fetch_sub(layout.size(), Ordering::Relaxed);
            let now = NOW.fetch_add(new_size, Ordering::Relaxed) + new_size;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// One test at a time: the peak is the process's.
static SERIAL: Mutex<()> = Mutex::new(());

/// The heap `f` takes at its peak beyond what was held before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = NOW.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// The most a case may take: the fixture's few KiB decompressed, the
/// tables, and room.
const SMALL: usize = 32 << 20;

const SHF_COMPRESSED: u64 = 0x800;
const GIB3: u64 = 3 << 30;

fn rd(b: &[u8], at: usize, n: usize) -> u64 {
    b[at..at + n].iter().rev().fold(0, |a, &x| (a << 8) | u64::from(x))
}

fn wr(b: &mut [u8], at: usize, n: usize, v: u64) {
    b[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
}

/// `elf` (64-bit little-endian) with section `name` replaced by `contents`
/// (appended at the end of the file) and `flags` added to its flags.
fn replace_section(elf: &[u8], name: &str, contents: &[u8], flags: u64) -> Vec<u8> {
    let index = object::File::parse(elf).unwrap().section_by_name(name).unwrap().index().0;
    let mut out = elf.to_vec();
    out.resize(out.len().next_multiple_of(8), 0);
    let at = out.len() as u64;
    out.extend_from_slice(contents);
    let sh = rd(&out, 0x28, 8) as usize + index * rd(&out, 0x3a, 2) as usize;
    let old_flags = rd(&out, sh + 8, 8);
    wr(&mut out, sh + 8, 8, old_flags | flags);
    wr(&mut out, sh + 24, 8, at);
    wr(&mut out, sh + 32, 8, contents.len() as u64);
    wr(&mut out, sh + 48, 8, 8);
    out
}

/// Section `name` of `elf` compressed with `format` (1 zlib, 2 zstd)
/// behind an ELF64 compression header claiming `claimed` bytes (`None`:
/// its true size), in place of the uncompressed one.
fn compressed(elf: &[u8], name: &str, format: u32, claimed: Option<u64>) -> Vec<u8> {
    let file = object::File::parse(elf).unwrap();
    let plain = file.section_by_name(name).unwrap().data().unwrap().to_vec();
    let data = match format {
        1 => {
            use std::io::Write;
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(&plain).unwrap();
            e.finish().unwrap()
        }
        _ => ruzstd::encoding::compress_to_vec(&plain[..], ruzstd::encoding::CompressionLevel::Fastest),
    };
    let mut contents = Vec::new();
    contents.extend_from_slice(&format.to_le_bytes());
    contents.extend_from_slice(&0u32.to_le_bytes());
    contents.extend_from_slice(&claimed.unwrap_or(plain.len() as u64).to_le_bytes());
    contents.extend_from_slice(&1u64.to_le_bytes());
    contents.extend_from_slice(&data);
    replace_section(elf, name, &contents, SHF_COMPRESSED)
}

fn config() -> Config {
    Config { kernel: KernelSymbols::Off, ..Config::default() }
}

/// The fixture built in `dir` (`None` without `cc`).
fn fixture(dir: &Path, flags: &[&str]) -> Option<(Vec<u8>, u64)> {
    let flags: Vec<&str> = ["-DWITH_MAIN"].iter().chain(flags).copied().collect();
    let path = common::build(dir, "fixture", &flags)?;
    let (work, size) = common::symbol(&path, "work");
    Some((std::fs::read(&path).unwrap(), work + size / 2))
}

/// Symbolizes `pc` of the ELF file `bytes` (written to `dir/name`) with
/// lines: (the line of `pc`, the function, the module's warnings).
fn lines_of(dir: &Path, name: &str, bytes: &[u8], pc: u64) -> (Option<u32>, Option<String>, Vec<Warning>) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let mut s = Symbolizer::new(config());
    let id = s.add_module(ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: 0 }));
    let warnings = s.module_info(id).unwrap().warnings;
    let r = s.symbolize(id, pc);
    (r.location().and_then(|l| l.line), r.function.as_deref().map(str::to_owned), warnings)
}

#[test]
fn compressed_line_tables_give_the_uncompressed_lines() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some((elf, pc)) = fixture(dir.path(), &[]) else { return };
    let (want, function, warnings) = lines_of(dir.path(), "plain", &elf, pc);
    assert!(want.is_some() && warnings.is_empty(), "{want:?} {warnings:?}");
    for (format, name) in [(1, "zlib"), (2, "zstd")] {
        let mut bytes = elf.clone();
        for section in [".debug_line", ".debug_info", ".debug_abbrev", ".debug_str"] {
            bytes = compressed(&bytes, section, format, None);
        }
        let (got, peak) = peak_of(|| lines_of(dir.path(), name, &bytes, pc));
        assert_eq!(got, (want, function.clone(), vec![]), "{name}");
        assert!(peak < SMALL, "{name}: {peak} bytes");
    }
}

#[test]
fn a_line_table_claiming_3_gib_is_skipped_with_a_warning() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some((elf, pc)) = fixture(dir.path(), &[]) else { return };
    for (format, name) in [(1, "zlib"), (2, "zstd")] {
        let bytes = compressed(&elf, ".debug_line", format, Some(GIB3));
        let ((line, function, warnings), peak) = peak_of(|| lines_of(dir.path(), name, &bytes, pc));
        // The function still comes from the symbol table; the line is unknown.
        assert_eq!((line, function.as_deref()), (None, Some("work")), "{name}");
        assert!(peak < SMALL, "{name}: {peak} bytes");
        match &warnings[..] {
            [w @ Warning::SectionSkipped {
                section,
                problem: SectionProblem::TooLarge { claimed, format: f, .. },
                ..
            }] => {
                assert_eq!((section.as_str(), *claimed, *f), (".debug_line", GIB3, name));
                assert!(w.to_string().contains("section .debug_line skipped"), "{w}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn a_gnu_zdebug_section_claiming_3_gib_is_skipped_with_a_warning() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some((mut elf, pc)) = fixture(dir.path(), &["-gz=zlib-gnu"]) else { return };
    let file = object::File::parse(&*elf).unwrap();
    let Some((offset, _)) = file.section_by_name(".zdebug_line").and_then(|s| s.file_range()) else {
        return eprintln!("note: skipped: this toolchain writes no .zdebug_line with -gz=zlib-gnu");
    };
    drop(file);
    // "ZLIB", then the uncompressed size, big-endian.
    let at = offset as usize;
    assert_eq!(&elf[at..at + 4], b"ZLIB");
    elf[at + 4..at + 12].copy_from_slice(&GIB3.to_be_bytes());
    let ((line, _, warnings), peak) = peak_of(|| lines_of(dir.path(), "zdebug", &elf, pc));
    assert_eq!(line, None);
    assert!(peak < SMALL, "{peak} bytes");
    assert!(
        matches!(&warnings[..], [Warning::SectionSkipped { section, .. }] if section == ".zdebug_line"),
        "{warnings:?}"
    );
}

#[test]
fn past_the_absolute_cap_a_section_is_skipped_whatever_its_ratio() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some((elf, pc)) = fixture(dir.path(), &[]) else { return };
    // 2 MiB of zlib may expand to 2 GiB: the header's 1.5 GiB is within
    // the ratio, but past the 1 GiB any section may take.
    let mut contents = vec![0u8; 24 + (2 << 20)];
    wr(&mut contents, 0, 4, 1);
    wr(&mut contents, 8, 8, 3 << 29);
    let bytes = replace_section(&elf, ".debug_line", &contents, SHF_COMPRESSED);
    let ((line, _, warnings), peak) = peak_of(|| lines_of(dir.path(), "capped", &bytes, pc));
    assert_eq!(line, None);
    assert!(peak < SMALL, "{peak} bytes");
    match &warnings[..] {
        [Warning::SectionSkipped { problem: SectionProblem::TooLarge { bound, .. }, .. }] => {
            assert_eq!(*bound, tbrw_symbols::MAX_DECOMPRESSED)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_section_giving_less_than_it_claims_is_skipped_as_damaged() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some((elf, pc)) = fixture(dir.path(), &[]) else { return };
    let plain = object::File::parse(&*elf).unwrap().section_by_name(".debug_line").unwrap().size();
    // Within the ratio, but its data gives fewer bytes than claimed.
    let bytes = compressed(&elf, ".debug_line", 1, Some(plain * 4));
    let ((line, _, warnings), peak) = peak_of(|| lines_of(dir.path(), "short", &bytes, pc));
    assert_eq!(line, None);
    assert!(peak < SMALL, "{peak} bytes");
    assert!(
        matches!(&warnings[..], [Warning::SectionSkipped { problem: SectionProblem::Damaged(_), .. }]),
        "{warnings:?}"
    );
}

#[test]
fn an_eh_frame_claiming_3_gib_is_skipped_by_the_unwinder_with_a_warning() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(arch) = Arch::native() else { return eprintln!("note: skipped: no unwinder for this machine") };
    let dir = tempfile::tempdir().unwrap();
    let Some((elf, _)) = fixture(dir.path(), &[]) else { return };
    let path = dir.path().join("eh");
    std::fs::write(&path, compressed(&elf, ".eh_frame", 1, Some(GIB3))).unwrap();
    let spec = ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: 0x5555_0000_0000 });
    let mut unwinder = Unwinder::new(arch, config());
    let (added, peak) = peak_of(|| unwinder.add_module(1, &spec, 0x5555_0000_0000..0x5555_0001_0000));
    assert!(added.is_ok(), "{added:?}");
    assert!(peak < SMALL, "{peak} bytes");
    let warnings = unwinder.take_warnings();
    assert!(
        matches!(&warnings[..], [Warning::SectionSkipped { section, problem: SectionProblem::TooLarge { .. }, .. }] if section == ".eh_frame"),
        "{warnings:?}"
    );
    // Said once: the file is read once.
    assert!(unwinder.take_warnings().is_empty());
}
