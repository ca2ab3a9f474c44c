//! Turn sampled addresses into function, source file and line.
//!
//! A profile says which module each sample hit and where the module was
//! mapped; this crate finds the module's ELF file (and its separate debug
//! file), translates the address into an ELF virtual address, and names the
//! function (`.symtab`, else `.dynsym`, demangled), the source line and the
//! inline chain (DWARF). Kernel addresses go through kallsyms. Nothing is
//! shelled out: `object` reads ELF, `addr2line`/`gimli` read DWARF.
//!
//! How files are found, the three address translations with their formulas,
//! what is cached and what is reported when something is missing are in
//! `docs/SYMBOLS.md`.
//!
//! perf's symbol files for JIT code (`/tmp/perf-<pid>.map`,
//! [`is_perf_map`]) are a module's symbols when its path is one, read as
//! untrusted input ([`JitMaps`]: regular files of this user or root,
//! opened without blocking or following links, bounded in bytes and lines,
//! [`MapLimit`]).
//!
//! Compressed sections (`SHF_COMPRESSED` zlib or zstd, `.zdebug_*`) are
//! decompressed as streams, within what their compressed size can justify
//! and at most 1 GiB; one beyond is left out with a [`Warning`]
//! ([`ModuleInfo::warnings`], [`unwind::Unwinder::take_warnings`]).
//!
//! [`unwind`] turns samples that carry user registers and a stack copy
//! (perf's `--call-graph dwarf`) into call chains with the modules' DWARF
//! CFI, finding and placing the files as the symbolizer does.
//!
//! The crate knows nothing of TB5: the caller (the query layer
//! `tbrw-query`, the perf import, the collector) picks the module of each
//! sample (with the bind engine), describes it as a [`ModuleSpec`] and asks
//! for [`Symbolizer::symbolize`].
//!
//! **One path per item.** The front is at the crate root; three modules are
//! namespaces of their own, each item public there only: [`unwind`] (the
//! unwinder and its registers), [`stored`] (the stored symbols' text:
//! `stored::encode`, `stored::decode`) and [`image`] (an ELF image read from
//! memory).
//!
//! # Example
//!
//! What `tbrw report --by function|line|address` and `tbrw annotate` do with
//! it, with the addresses a profile would give:
//!
//! ```no_run
//! use std::collections::HashMap;
//! use tbrw_symbols::{BuildId, Config, KernelSymbols, Mapping, ModuleSpec, Symbolizer};
//!
//! let config = Config {
//!     // `--symfs DIR`: the profiled machine's files, copied here.
//!     symfs: None,
//!     // `--search-path DIR` (repeatable): for labels that are base names.
//!     search_paths: vec!["/opt/target/lib".into()],
//!     // `--kallsyms FILE`, else this machine's `/proc/kallsyms`.
//!     kernel: KernelSymbols::Proc,
//!     // `debug_dirs` defaults to /usr/lib/debug; demangling and DWARF are on.
//!     ..Config::default()
//! };
//! let mut symbolizer = Symbolizer::new(config);
//!
//! // One `ModuleSpec` per module record. A TB5 module written through the C
//! // API records a load base in `module_load_address`:
//! let libc = symbolizer.add_module(
//!     ModuleSpec::new("/usr/lib/x86_64-linux-gnu/libc.so.6", Mapping::LoadBase { load_base: 0x7f3a_1c00_0000 })
//!         .with_build_id(BuildId::from_hex("a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1").unwrap()),
//! );
//! // The ELF sampler's VM maps start at the executable segment, and their
//! // labels may be base names (found through `search_paths`):
//! let app = symbolizer.add_module(ModuleSpec::new("app", Mapping::ExecSegment { map_start: 0x5555_5555_5000 }));
//! // perf-style maps carry the file offset they map:
//! let libm = symbolizer.add_module(ModuleSpec::new(
//!     "/usr/lib/x86_64-linux-gnu/libm.so.6",
//!     Mapping::FileOffset { map_start: 0x7f3a_1d01_0000, pgoff: 0x10000 },
//! ));
//! // Modules flagged as kernel (`TBRW_MODULE_GLOBAL_LOAD`) share one id:
//! let kernel = symbolizer.kernel();
//!
//! // One warning per module whose symbols are missing, with the full reason.
//! for (name, id) in [("libc.so.6", libc), ("app", app), ("libm.so.6", libm)] {
//!     if let Err(why) = symbolizer.module_info(id) {
//!         eprintln!("warning: {name}: {why}");
//!     }
//! }
//!
//! let samples = [(Some(app), 0x5555_5555_5139), (Some(libc), 0x7f3a_1c09_8a10), (Some(kernel), 0xffff_ffff_8100_0000), (None, 0x1000)];
//! let mut by_function: HashMap<String, u64> = HashMap::new();
//! let mut by_line: HashMap<String, u64> = HashMap::new();
//! for (module, pc) in samples {
//!     let s = match module {
//!         Some(id) => symbolizer.symbolize(id, pc),
//!         None => symbolizer.unmapped(), // "[no module]"
//!     };
//!     // `--by function`: the demangled name, or `[unknown in libfoo.so: no symbols]`.
//!     *by_function.entry(s.function_label()).or_default() += 1;
//!     // `--by line`: `file:line` of the address itself.
//!     *by_line.entry(s.line_label()).or_default() += 1;
//!     // `--by address` and `annotate`: the ELF address, the function and
//!     // offset, each inlined level with its source position.
//!     println!("{pc:#x} -> {:?} {s}", s.vaddr);
//!     for frame in s.inlined() {
//!         println!("    inlined {} at {:?}", frame.function.as_deref().unwrap_or("??"), frame.location);
//!     }
//! }
//! ```
#![deny(missing_docs)]

mod demangle;
mod dwarf;
mod elf;
mod find;
mod frame;
mod function_index;
mod ids;
pub mod image;
mod kallsyms;
mod mapping;
mod perf_map;
mod plt;
mod recent;
mod sections;
pub mod stored;
mod symbolizer;
mod symtab;
pub mod unwind;
mod warning;

pub use demangle::{demangle, demangle_full};
pub use elf::{BuildId, ElfKind, Layout, Segment};
pub use frame::{Frame, SourceLocation, Symbolized, Unknown};
pub use function_index::{FunctionIndex, IndexedSymbol, ModuleIndex};
pub use mapping::Mapping;
pub use perf_map::{is_perf_map, JitMaps, MapLimit};
pub use recent::RecentSymbols;
pub use sections::{MAX_DECOMPRESSED, ZLIB_MAX_RATIO, ZSTD_MAX_RATIO};
pub use symbolizer::{Config, KernelSymbols, ModuleId, ModuleInfo, ModuleSpec, SymbolRef, Symbolizer};
pub use symtab::SymbolSource;
pub use warning::{SectionProblem, Warning};
