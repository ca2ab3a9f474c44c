//! A TB5 file's modules handed to the symbolizer (`tbrw-symbols`): the
//! command line's symbol options, which [`Mapping`] each module record gets
//! (the rule, [`mapping_rule`], is documented in docs/SYMBOLS.md, "In the
//! reports"), which modules' addresses all name alike (their files cannot
//! be used: [`FileSymbols::uniform`]), and the warnings about module files
//! that cannot be symbolized: noted as they are met and handed over at the
//! end as [`Warning`]s, one per kind ("10,000 modules' files not found,
//! e.g. ..."), or one per module when [`SymbolOptions::verbose`]. Reports (`crate::report::functions`)
//! and `tbrw annotate` go through it; it imports no report.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use tbrw::{Module, ModuleFlags, Tb5File};
/// The symbolizer's configuration ([`SymbolOptions::config`], [`FileSymbols::with_config`]).
pub use tbrw_symbols::Config;
use tbrw_symbols::{
    BuildId, FunctionIndex, JitMaps, KernelSymbols, Mapping, ModuleId, ModuleIndex, ModuleSpec, SymbolRef, Symbolized,
    Symbolizer,
};

use crate::error::QueryError;
use crate::warning::Warning;
use crate::warning::{UnusableModule, UnusableModules};

/// Where to look for the modules' files and debug information
/// (`--symfs`, `--debug-dir`, `--search-path`, `--kallsyms`), and whether
/// to trust perf maps of other users (`--trust-jit-maps`).
#[derive(Clone, Debug, Default)]
pub struct SymbolOptions {
    /// A root prefixed to every module path, like perf's `--symfs`.
    pub symfs: Option<PathBuf>,
    /// Directories of separate debug files, searched before `/usr/lib/debug`.
    pub debug_dirs: Vec<PathBuf>,
    /// Directories searched for a module by its file name.
    pub search_paths: Vec<PathBuf>,
    /// A kallsyms file saved from the profiled machine (default: this
    /// machine's `/proc/kallsyms`).
    pub kallsyms: Option<PathBuf>,
    /// No inlined functions as frames of stacks (perf's `--no-inline`):
    /// by default a frame in inlined code is its function, then each
    /// function inlined there, outermost first (from DWARF).
    pub no_inline: bool,
    /// Use perf maps (JIT code) whoever owns them, and through a link
    /// ([`tbrw_symbols::JitMaps::trust`]); default: only this user's or
    /// root's regular files, as perf.
    pub trust_jit_maps: bool,
    /// One [`Warning::ModuleUnusable`] per module whose file cannot be
    /// symbolized, not one summary per kind (`--verbose`).
    pub verbose: bool,
    /// How function names are demangled (`--demangle`).
    pub demangle: Demangle,
}

/// How function names are demangled, in every report and export.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Demangle {
    /// As perf report shows them: C++ functions without their parameters
    /// and return type (`Accum<32ul>::sum`), Rust without the hash.
    #[default]
    Short,
    /// With the whole C++ signature, as `c++filt` prints it
    /// (`Accum<32ul>::sum(unsigned long)`).
    Full,
    /// As the symbol tables spell them (perf's `--no-demangle`).
    None,
}

impl SymbolOptions {
    /// The symbolizer's configuration: the given debug directories, then
    /// `/usr/lib/debug` as gdb and perf search it.
    pub fn config(&self) -> Config {
        let mut debug_dirs = self.debug_dirs.clone();
        debug_dirs.extend(Config::default().debug_dirs);
        Config {
            symfs: self.symfs.clone(),
            debug_dirs,
            search_paths: self.search_paths.clone(),
            kernel: self.kallsyms.clone().map_or(KernelSymbols::Proc, KernelSymbols::File),
            jit_maps: JitMaps { trust: self.trust_jit_maps, ..JitMaps::default() },
            demangle: self.demangle != Demangle::None,
            signatures: self.demangle == Demangle::Full,
            ..Config::default()
        }
    }
}

pub use tbrw_schema::module_notes::ModuleNote;

/// Whether the file is a `tbrw import sampler` result: a stream whose
/// user-defined section is the import's `sampler layout=… magic=…` line (or
/// the `sampler magic=…` line of imports made before the layouts were told
/// apart).
pub fn is_sampler_import(file: &Tb5File) -> bool {
    (0..file.stream_count()).any(|n| {
        file.stream(n)
            .and_then(|s| s.user_defined())
            .is_ok_and(|u| u.is_some_and(|b| b.starts_with(b"sampler magic=") || b.starts_with(b"sampler layout=")))
    })
}

/// How a module record's load address is read, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MappingRule {
    /// `TBRW_MODULE_GLOBAL_LOAD`: a kernel module, absolute addresses looked up in kallsyms.
    Kernel,
    /// The module's file is a perf map (`/tmp/perf-<pid>.map`, what a perf
    /// import names JIT code by, as perf does): its symbols have absolute
    /// addresses, whatever file offset the mapping recorded.
    PerfMap,
    /// A file offset is recorded for it ([`ModuleNote::offset`]): the load
    /// address is where that offset was mapped.
    FileOffset(u64),
    /// A sampler import: the load address is a VM map's start, which the
    /// ELF sampler records at the executable segment.
    ExecSegment,
    /// Anything else (modules written through the C API): the load address
    /// is the load base.
    LoadBase,
}

/// The rule for one module record, first match wins: kernel flag, a perf
/// map, a recorded file offset, a sampler import, else the load base.
pub fn mapping_rule(module: &Module, note: Option<&ModuleNote>, sampler_import: bool) -> MappingRule {
    if module.flags.contains(ModuleFlags::GLOBAL_LOAD) {
        MappingRule::Kernel
    } else if module.path.as_deref().or(module.name.as_deref()).is_some_and(tbrw_symbols::is_perf_map) {
        MappingRule::PerfMap
    } else if let Some(pgoff) = note.and_then(|n| n.offset) {
        MappingRule::FileOffset(pgoff)
    } else if sampler_import {
        MappingRule::ExecSegment
    } else {
        MappingRule::LoadBase
    }
}

/// The symbolizer for one TB5 file's module table, with the warnings it owes.
pub struct FileSymbols {
    symbolizer: Symbolizer,
    /// Why the file's stored symbols could not be used, said with the
    /// first warning there is room for.
    stored_problem: Option<String>,
    /// What a module whose file cannot be used means for the caller.
    unusable: &'static str,
    /// Per module record: its symbolizer id and the label to warn with.
    modules: Vec<(ModuleId, String)>,
    /// Labels already checked, so that a file mapped in many processes
    /// gets one warning.
    checked: HashSet<String>,
    /// Per module record, whether its label was checked (no string hash per address).
    warned: Vec<bool>,
    /// The module files that cannot be symbolized, per kind of reason
    /// (in the order first met): label and reason.
    unusable_files: Vec<(&'static str, Vec<(String, tbrw_symbols::Unknown)>)>,
    /// Why stored symbols could not be used, when said.
    stored_said: Option<String>,
    /// What was left out of module files that are used (a perf map cut at
    /// its bound, a section past its size bound), in the order met.
    partial_files: Vec<tbrw_symbols::Warning>,
    /// A line per module file, not per kind.
    verbose: bool,
}

impl FileSymbols {
    /// Registers every module of `modules` (the file's module table, in order).
    /// Nothing is read until a sample of a module is symbolized.
    pub fn new(file: &Tb5File, modules: &[Module], opts: &SymbolOptions) -> Result<FileSymbols, QueryError> {
        FileSymbols::with_config(file, modules, opts.config())
    }

    /// The same with a symbolizer configuration of the caller's (DWARF off, say).
    pub fn with_config(file: &Tb5File, modules: &[Module], config: Config) -> Result<FileSymbols, QueryError> {
        let notes = match file.user_defined_global()? {
            Some(b) => tbrw_schema::module_notes::decode(&String::from_utf8_lossy(b)),
            None => HashMap::new(),
        };
        let sampler_import = is_sampler_import(file);
        let mut symbolizer = Symbolizer::new(config);
        let modules: Vec<(ModuleId, String)> = modules
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let note = notes.get(&(i as u64));
                let label = m.path.clone().or_else(|| m.name.clone()).unwrap_or_else(|| format!("[module {i}]"));
                let mapping = match mapping_rule(m, note, sampler_import) {
                    MappingRule::Kernel => return (symbolizer.kernel(), "[kernel]".to_owned()),
                    // The map's layout is the whole address space at 0.
                    MappingRule::PerfMap => Mapping::LoadBase { load_base: 0 },
                    MappingRule::FileOffset(pgoff) => Mapping::FileOffset { map_start: m.load_address, pgoff },
                    MappingRule::ExecSegment => Mapping::ExecSegment { map_start: m.load_address },
                    MappingRule::LoadBase => Mapping::LoadBase { load_base: m.load_address },
                };
                let mut spec = ModuleSpec::new(label.clone(), mapping);
                if let Some(id) = note.and_then(|n| n.build_id.as_deref()).map(|b| BuildId(b.to_vec())) {
                    spec = spec.with_build_id(id);
                }
                (symbolizer.add_module(spec), label)
            })
            .collect();
        let warned = vec![false; modules.len()];
        // Symbols `tbrw symbolize` stored stand in for files missing here.
        let stored_problem = match file.stored_symbols() {
            Ok(None) => None,
            Ok(Some(bytes)) => match tbrw_symbols::stored::decode(bytes) {
                Ok(files) => {
                    symbolizer.add_stored(files);
                    None
                }
                Err(why) => Some(format!("{}: stored symbols: {why}", file.path().display())),
            },
            Err(e) => Some(e.to_string()),
        };
        let unusable = "its samples are reported unresolved";
        Ok(FileSymbols {
            symbolizer,
            stored_problem,
            unusable,
            modules,
            checked: HashSet::new(),
            warned,
            unusable_files: Vec::new(),
            stored_said: None,
            partial_files: Vec::new(),
            verbose: false,
        })
    }

    /// The same, writing a warning line per module file that cannot be
    /// symbolized rather than one per kind when `verbose`.
    pub fn verbose(self, verbose: bool) -> FileSymbols {
        FileSymbols { verbose, ..self }
    }

    /// Symbolizes `pc` of module record `module` (`None`: no module covers
    /// it). The first time a module's file is used, it is noted for
    /// [`FileSymbols::take_warnings`] when it cannot be symbolized (never
    /// an error).
    pub fn symbolize(&mut self, module: Option<u64>, pc: u64) -> Arc<Symbolized> {
        match self.module_id(module) {
            Some(id) => self.symbolizer.symbolize(id, pc),
            None => self.symbolizer.unmapped(),
        }
    }

    /// [`FileSymbols::symbolize`] without keeping the result in the
    /// symbolizer's cache: for callers that ask each distinct address once
    /// (reports by address), so that they hold nothing per address.
    pub fn symbolize_once(&mut self, module: Option<u64>, pc: u64) -> Arc<Symbolized> {
        match self.module_id(module) {
            Some(id) => self.symbolizer.symbolize_uncached(id, pc),
            None => self.symbolizer.unmapped(),
        }
    }

    /// Whether every address of module record `module` symbolizes alike:
    /// its file (or stored symbols, or kallsyms for the kernel) cannot be
    /// used here, so each of its addresses is the module's one unknown
    /// function. Reads the module's files now; no warning. `false` for a
    /// record not in the file.
    pub fn uniform(&mut self, module: u64) -> bool {
        let Some((id, _)) = usize::try_from(module).ok().and_then(|m| self.modules.get(m)) else { return false };
        self.symbolizer.uniform(*id).is_some()
    }

    /// What the warning about a module whose file cannot be used says it
    /// means (default: "its samples are reported unresolved").
    pub fn set_unusable_note(&mut self, note: &'static str) {
        self.unusable = note;
    }

    /// Notes for [`FileSymbols::take_warnings`], once per module file,
    /// when `module`'s file cannot be symbolized: for samples counted
    /// through [`FileSymbols::function_index`] (and for the stored symbols'
    /// problem, if any).
    pub fn note_used(&mut self, module: Option<u64>) {
        self.module_id(module);
    }

    /// The function-symbol lookups of the module records marked `true` in
    /// `modules` (found and parsed now, without warnings), for threads
    /// counting per function; see [`tbrw_symbols::FunctionIndex`].
    pub fn function_index(&mut self, modules: &[bool]) -> ModuleFunctions {
        let ids: Vec<ModuleId> = self.modules.iter().map(|(id, _)| *id).collect();
        let wanted = ids.iter().zip(modules).filter(|(_, &w)| w).map(|(id, _)| *id);
        ModuleFunctions { index: self.symbolizer.function_index(wanted), ids }
    }

    /// What `tbrw symbolize` stores for `symbols` (see
    /// [`Symbolizer::stored_files`]).
    pub fn stored_files(&self, symbols: impl IntoIterator<Item = SymbolRef>) -> Vec<tbrw_symbols::stored::StoredFile> {
        self.symbolizer.stored_files(symbols)
    }

    /// Whether module record `module` can be symbolized: its file (or the
    /// symbols stored for it, or kallsyms for the kernel) found, naming
    /// functions. Reads the files now; no warning.
    pub fn can_symbolize(&mut self, module: u64) -> bool {
        self.module_info(module).is_some_and(|i| i.is_ok_and(|i| i.symbol_count > 0))
    }

    /// What was found for module record `module` (its files read now), or
    /// why nothing usable was; `None` for a record not in the file. No warning.
    pub fn module_info(&mut self, module: u64) -> Option<Result<tbrw_symbols::ModuleInfo, tbrw_symbols::Unknown>> {
        let (id, _) = self.modules.get(usize::try_from(module).ok()?)?;
        Some(self.symbolizer.module_info(*id))
    }

    /// The name of a symbol a [`ModuleFunctions`] gave.
    pub fn symbol_name(&self, symbol: SymbolRef) -> Option<&str> {
        self.symbolizer.symbol_name(symbol)
    }

    fn module_id(&mut self, module: Option<u64>) -> Option<ModuleId> {
        if let Some(why) = self.stored_problem.take() {
            self.stored_said = Some(why);
        }
        let i = usize::try_from(module?).ok()?;
        let (id, label) = self.modules.get(i)?;
        if !self.warned[i] {
            if !self.checked.contains(label) {
                match self.symbolizer.module_info(*id) {
                    Err(why) => {
                        let kind = why.summary();
                        let at = match self.unusable_files.iter().position(|(k, _)| *k == kind) {
                            Some(at) => at,
                            None => {
                                self.unusable_files.push((kind, Vec::new()));
                                self.unusable_files.len() - 1
                            }
                        };
                        self.unusable_files[at].1.push((label.clone(), why));
                    }
                    // Parts of a usable file that were left out (a perf map
                    // cut at its bound, a section past its size bound).
                    Ok(info) => self.partial_files.extend(info.warnings.iter().cloned()),
                }
                self.checked.insert(label.clone());
            }
            self.warned[i] = true;
        }
        Some(*id)
    }

    /// Hands the warnings noted so far to `warn`, and forgets them:
    /// stored symbols that could not be read; then per kind of reason a
    /// module file cannot be symbolized (file not found, another build,
    /// ...) one [`Warning`], naming the file and why when it is the only
    /// one of its kind, else a summary of them all
    /// ([`Warning::ModulesUnusable`]: `10,000 modules' files not found,
    /// e.g. libN.so, ...`); with [`FileSymbols::verbose`], one per file;
    /// then the files used in part.
    pub fn take_warnings(&mut self, warn: &mut Vec<Warning>) {
        if let Some(problem) = self.stored_said.take() {
            warn.push(Warning::StoredSymbols { problem });
        }
        for (kind, mut files) in std::mem::take(&mut self.unusable_files) {
            files.sort_by(|a, b| a.0.cmp(&b.0));
            let effect = self.unusable;
            let mut modules = files.into_iter().map(|(module, why)| UnusableModule { module, why, effect });
            if self.verbose || modules.len() == 1 {
                warn.extend(modules.map(Warning::ModuleUnusable));
                continue;
            }
            warn.push(Warning::ModulesUnusable(UnusableModules { kind, modules: modules.by_ref().collect(), effect }));
        }
        warn.extend(std::mem::take(&mut self.partial_files).into_iter().map(Warning::Symbols));
    }
}

/// Function-symbol lookups by module record, shared by threads (see
/// [`FileSymbols::function_index`]).
pub struct ModuleFunctions {
    index: FunctionIndex,
    ids: Vec<ModuleId>,
}

impl ModuleFunctions {
    /// The lookups of module record `module` (`None`: a record not in the
    /// file, whose addresses have no symbol).
    #[inline]
    pub fn module(&self, module: u64) -> Option<ModuleIndex<'_>> {
        let id = *self.ids.get(usize::try_from(module).ok()?)?;
        Some(self.index.module(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_order() {
        let user = Module::default();
        let kernel = Module { flags: ModuleFlags::GLOBAL_LOAD, ..Module::default() };
        let note = ModuleNote { offset: Some(0x2000), build_id: None };
        assert_eq!(mapping_rule(&kernel, Some(&note), true), MappingRule::Kernel);
        assert_eq!(mapping_rule(&user, Some(&note), true), MappingRule::FileOffset(0x2000));
        assert_eq!(mapping_rule(&user, None, true), MappingRule::ExecSegment);
        assert_eq!(mapping_rule(&user, Some(&ModuleNote::default()), false), MappingRule::LoadBase);
        let jit = Module { path: Some("/tmp/perf-77.map".into()), ..Module::default() };
        assert_eq!(mapping_rule(&jit, Some(&note), false), MappingRule::PerfMap);
        assert_eq!(mapping_rule(&Module { flags: ModuleFlags::GLOBAL_LOAD, ..jit }, None, false), MappingRule::Kernel);
    }
}
