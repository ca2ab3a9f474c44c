//! The [`Symbolizer`]: modules registered by the caller ([`ModuleSpec`],
//! [`ModuleId`]), each file found and parsed once, and results cached per
//! (file, virtual address).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::demangle::Names;
use crate::dwarf::Dwarf;
use crate::elf::{BuildId, ElfFile};
use crate::find::{locate, Located};
use crate::frame::{Symbolized, Unknown};
use crate::function_index::{FunctionIndex, IndexedFile, IndexedModule, JUMP_GRANULES};
pub use crate::ids::{ModuleId, SymbolRef};
use crate::kallsyms::Kallsyms;
use crate::mapping::Mapping;
use crate::perf_map::{JitMaps, PerfMap};
use crate::plt::plt_entries;
use crate::recent::RecentSymbols;
use crate::stored::{StoredFile, StoredSymbol};
use crate::symtab::{SymbolSource, SymbolTable};
use crate::warning::Warning;

/// Where kernel symbols come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelSymbols {
    /// `/proc/kallsyms` of this machine (right only when the profile was
    /// taken on this machine and boot).
    Proc,
    /// A kallsyms file saved from the profiled machine.
    File(PathBuf),
    /// None: kernel addresses show as `[kernel]`.
    Off,
}

/// Where and how to look for symbols.
#[derive(Clone, Debug)]
pub struct Config {
    /// A root prefixed to every module path and debug directory, like perf's
    /// `--symfs`: the profiled system's files copied to this machine.
    pub symfs: Option<PathBuf>,
    /// Directories of separate debug files (`.build-id/xx/yyyy.debug`, and the
    /// `.gnu_debuglink` name under the directory plus the binary's own
    /// directory). Default: `/usr/lib/debug`, as gdb and perf.
    pub debug_dirs: Vec<PathBuf>,
    /// Directories searched for a module by its file name, for profiles whose
    /// labels are base names or paths of another machine.
    pub search_paths: Vec<PathBuf>,
    /// Where kernel symbols come from. Default: [`KernelSymbols::Proc`].
    pub kernel: KernelSymbols,
    /// Demangle Rust and C++ names. Default: on.
    pub demangle: bool,
    /// Demangled C++ names with their whole signature (parameters, and the
    /// return type of a template function), as `c++filt` prints them.
    /// Default: off, as perf report shows them (`Accum<32ul>::sum`).
    pub signatures: bool,
    /// Read DWARF for source lines and inline chains. Default: on. Off, only
    /// symbol tables are read (faster on huge debug files).
    pub lines: bool,
    /// Which perf maps (JIT code) are trusted, and how much of one is read.
    pub jit_maps: JitMaps,
}

impl Config {
    /// How names are shown.
    pub(crate) fn names(&self) -> Names {
        match (self.demangle, self.signatures) {
            (false, _) => Names::Raw,
            (true, false) => Names::Short,
            (true, true) => Names::Full,
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            symfs: None,
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            search_paths: Vec::new(),
            kernel: KernelSymbols::Proc,
            demangle: true,
            signatures: false,
            lines: true,
            jit_maps: JitMaps::default(),
        }
    }
}

/// A module as the profile describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleSpec {
    /// The path (or base name) the profile recorded: a TB5 `module_path`, a
    /// sampler VM map label, a perf mmap file name.
    pub path: String,
    /// The build id the profile recorded, if any: a file with another build
    /// id is rejected ([`Unknown::BuildIdMismatch`]).
    pub build_id: Option<BuildId>,
    /// Where it was mapped.
    pub mapping: Mapping,
}

impl ModuleSpec {
    /// A module at `path` mapped as `mapping`, without a build id.
    pub fn new(path: impl Into<String>, mapping: Mapping) -> ModuleSpec {
        ModuleSpec { path: path.into(), build_id: None, mapping }
    }

    /// The same with the recorded build id.
    pub fn with_build_id(self, build_id: BuildId) -> ModuleSpec {
        ModuleSpec { build_id: Some(build_id), ..self }
    }
}

/// What was found for a module ([`Symbolizer::module_info`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    /// The file that places the module (its program headers).
    pub file: PathBuf,
    /// The separate debug file used, if any.
    pub debug_file: Option<PathBuf>,
    /// The build id of `file`.
    pub build_id: Option<BuildId>,
    /// The table function names come from (`None`: no function symbols).
    pub symbols: Option<SymbolSource>,
    /// How many function symbols that table holds.
    pub symbol_count: usize,
    /// Whether DWARF line information is available.
    pub dwarf: bool,
    /// What was used only in part (a perf map cut at its bound, a
    /// compressed DWARF section left out): for a warning each. DWARF is
    /// read for this answer when the configuration reads lines.
    pub warnings: Vec<Warning>,
}

/// Results by (file, ELF address), hashed with the workspace's one
/// hasher for ids (rustc-hash's: SipHash's DoS resistance buys nothing for
/// addresses and costs a third of a lookup).
type Cache = rustc_hash::FxHashMap<(u32, u64), Arc<Symbolized>>;

/// The cache key's file number for kernel addresses.
const KERNEL_FILE: u32 = u32::MAX;

enum Slot {
    User { file: u32, mapping: Mapping },
    Kernel,
}

/// One distinct (path, build id): modules mapped in several processes share it.
struct FileSlot {
    label: Arc<str>,
    build_id: Option<BuildId>,
    state: Option<Result<Loaded, Arc<Symbolized>>>,
    /// The [`SymbolRef`] ordinal of the file's first symbol, given when
    /// [`Symbolizer::function_symbol`] first finds one of its symbols.
    first_ordinal: Option<u32>,
}

struct Loaded {
    main: ElfFile,
    debug: Option<ElfFile>,
    symtab: Option<(Arc<SymbolTable>, SymbolSource, Arc<Path>)>,
    /// Whether `symtab` names functions of the file's own, not only its
    /// PLT stubs: without, an address with no symbol is [`Unknown::NoSymbols`].
    own_symbols: bool,
    /// Parsed on the first lookup: `None` before, `Some(None)` when there is
    /// no DWARF or it did not parse.
    dwarf: Option<Option<(Dwarf, Arc<Path>)>>,
    /// Returned for addresses the mapping puts outside the file.
    outside: Arc<Symbolized>,
    /// What was used only in part ([`ModuleInfo::warnings`]).
    warnings: Vec<Warning>,
}

struct KernelSlot {
    label: Arc<str>,
    state: Result<(Kallsyms, Arc<Path>), Arc<Symbolized>>,
}

/// Turns (module, address) pairs into [`Symbolized`] results.
///
/// Files are found and parsed on the first address of their module, once per
/// run however many modules (processes) map them; results are cached per
/// (file, ELF virtual address), so repeated addresses cost one hash lookup.
pub struct Symbolizer {
    config: Config,
    modules: Vec<Slot>,
    files: Vec<FileSlot>,
    file_index: HashMap<(Arc<str>, Option<BuildId>), u32>,
    kernel: Option<(ModuleId, Option<KernelSlot>)>,
    cache: Cache,
    unmapped: Arc<Symbolized>,
    /// The symbols [`Symbolizer::function_symbol`] found lately, with the
    /// address ranges they cover: counts per function ask for addresses
    /// of a few hot functions over and over.
    recent: RecentSymbols,
    /// Symbol ordinals given so far (see [`SymbolRef::ordinal`]).
    ordinals: u32,
    /// The files given ordinals, in the order given (so by first ordinal).
    ordinal_files: Vec<u32>,
    /// Symbols stored with the profile, standing in for files that cannot
    /// be used here ([`Symbolizer::add_stored`]).
    stored: StoredFiles,
}

/// Stored symbols by the (label, build id) a module spec names a file by.
type StoredFiles = HashMap<(String, Option<BuildId>), StoredFile>;

impl Symbolizer {
    /// A symbolizer with no modules yet.
    pub fn new(config: Config) -> Symbolizer {
        Symbolizer {
            config,
            modules: Vec::new(),
            files: Vec::new(),
            file_index: HashMap::new(),
            kernel: None,
            cache: Cache::default(),
            unmapped: Arc::new(Symbolized::missing(None, None, Unknown::NoModule)),
            recent: RecentSymbols::default(),
            ordinals: 0,
            ordinal_files: Vec::new(),
            stored: HashMap::new(),
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Registers a module. Nothing is read until an address of it is
    /// symbolized (or [`Symbolizer::module_info`] is asked).
    pub fn add_module(&mut self, spec: ModuleSpec) -> ModuleId {
        let label: Arc<str> = Arc::from(spec.path);
        let key = (label.clone(), spec.build_id.clone());
        let file = match self.file_index.get(&key) {
            Some(&f) => f,
            None => {
                let f = self.files.len() as u32;
                self.files.push(FileSlot { label, build_id: spec.build_id, state: None, first_ordinal: None });
                self.file_index.insert(key, f);
                f
            }
        };
        self.push(Slot::User { file, mapping: spec.mapping })
    }

    /// The kernel, whose addresses are looked up in kallsyms (the same id
    /// every call).
    pub fn kernel(&mut self) -> ModuleId {
        if let Some((id, _)) = &self.kernel {
            return *id;
        }
        let id = self.push(Slot::Kernel);
        self.kernel = Some((id, None));
        id
    }

    fn push(&mut self, slot: Slot) -> ModuleId {
        let id = ModuleId(u32::try_from(self.modules.len()).expect("fewer than 2^32 modules"));
        self.modules.push(slot);
        id
    }

    /// The result for an address that lies in no module: `[no module]`.
    pub fn unmapped(&self) -> Arc<Symbolized> {
        self.unmapped.clone()
    }

    /// Number of (file, address) results cached.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// Finds and parses the module's files if not done yet, and says what was
    /// found, or why nothing usable was (for a warning per module).
    ///
    /// # Panics
    /// When `id` comes from another symbolizer with more modules.
    pub fn module_info(&mut self, id: ModuleId) -> Result<ModuleInfo, Unknown> {
        match self.modules[id.0 as usize] {
            Slot::Kernel => {
                let k = self.load_kernel();
                match &k.state {
                    Ok((syms, path)) => Ok(ModuleInfo {
                        file: path.to_path_buf(),
                        debug_file: None,
                        build_id: None,
                        symbols: None,
                        symbol_count: syms.len(),
                        dwarf: false,
                        warnings: Vec::new(),
                    }),
                    Err(s) => Err(s.unknown.clone().unwrap_or(Unknown::NoSymbols)),
                }
            }
            Slot::User { file, .. } => {
                let lines = self.config.lines;
                match self.load(file) {
                    Ok(l) => {
                        if lines {
                            // Its warnings belong to this answer.
                            l.load_dwarf();
                        }
                        let dwarf = lines && l.dwarf_file().is_some();
                        Ok(ModuleInfo {
                            file: l.main.path.to_path_buf(),
                            debug_file: l.debug.as_ref().map(|d| d.path.to_path_buf()),
                            build_id: l.main.build_id.clone(),
                            symbols: l.symtab.as_ref().map(|s| s.1),
                            symbol_count: l.symtab.as_ref().map_or(0, |s| s.0.len()),
                            dwarf,
                            warnings: l.warnings.clone(),
                        })
                    }
                    Err(s) => Err(s.unknown.clone().unwrap_or(Unknown::NoSymbols)),
                }
            }
        }
    }

    /// Symbolizes address `pc` of module `id`.
    ///
    /// Never fails: what could not be found is in [`Symbolized::unknown`].
    ///
    /// # Panics
    /// When `id` comes from another symbolizer with more modules.
    pub fn symbolize(&mut self, id: ModuleId, pc: u64) -> Arc<Symbolized> {
        let (file, mapping) = match self.modules[id.0 as usize] {
            Slot::Kernel => return self.symbolize_kernel(pc),
            Slot::User { file, mapping } => (file, mapping),
        };
        let config = &self.config;
        let stored = &self.stored;
        let slot = &mut self.files[file as usize];
        let loaded = match slot.state.get_or_insert_with(|| load(&slot.label, slot.build_id.as_ref(), config, stored)) {
            Ok(l) => l,
            Err(failed) => return failed.clone(),
        };
        let Some(vaddr) = mapping.to_vaddr(pc, &loaded.main.layout) else { return loaded.outside.clone() };
        if let Some(hit) = self.cache.get(&(file, vaddr)) {
            return hit.clone();
        }
        let result = Arc::new(loaded.lookup(&slot.label, vaddr, config));
        self.cache.insert((file, vaddr), result.clone());
        result
    }

    /// [`Symbolizer::symbolize`] without keeping the result: for callers
    /// that ask each distinct address once (a report by address), so that
    /// the symbolizer holds nothing per address for them. Kernel addresses
    /// are cached as by `symbolize`.
    ///
    /// # Panics
    /// When `id` comes from another symbolizer with more modules.
    pub fn symbolize_uncached(&mut self, id: ModuleId, pc: u64) -> Arc<Symbolized> {
        let (file, mapping) = match self.modules[id.0 as usize] {
            Slot::Kernel => return self.symbolize_kernel(pc),
            Slot::User { file, mapping } => (file, mapping),
        };
        let config = &self.config;
        let stored = &self.stored;
        let slot = &mut self.files[file as usize];
        let loaded = match slot.state.get_or_insert_with(|| load(&slot.label, slot.build_id.as_ref(), config, stored)) {
            Ok(l) => l,
            Err(failed) => return failed.clone(),
        };
        let Some(vaddr) = mapping.to_vaddr(pc, &loaded.main.layout) else { return loaded.outside.clone() };
        if let Some(hit) = self.cache.get(&(file, vaddr)) {
            return hit.clone();
        }
        Arc::new(loaded.lookup(&slot.label, vaddr, config))
    }

    /// When every address of module `id` symbolizes alike, that one result:
    /// its file (or the symbols stored for it, or kallsyms for the kernel)
    /// cannot be used here. Finds and parses the module's files if not done
    /// yet. `None` when its addresses can be told apart.
    ///
    /// # Panics
    /// When `id` comes from another symbolizer with more modules.
    pub fn uniform(&mut self, id: ModuleId) -> Option<Arc<Symbolized>> {
        match self.modules[id.0 as usize] {
            Slot::Kernel => self.load_kernel().state.as_ref().err().cloned(),
            Slot::User { file, .. } => self.load(file).as_ref().err().cloned(),
        }
    }

    /// The function symbol holding address `pc` of module `id`, as a
    /// [`SymbolRef`] (equal for every address of one symbol of one file),
    /// without building or caching a [`Symbolized`]: what a count per
    /// function needs for each of many distinct addresses. `None` where
    /// [`Symbolizer::symbolize`] would find no symbol-table function (the
    /// kernel, a file that cannot be used, an address outside its segments
    /// or between symbols); ask `symbolize` for why.
    ///
    /// # Panics
    /// When `id` comes from another symbolizer with more modules.
    pub fn function_symbol(&mut self, id: ModuleId, pc: u64) -> Option<SymbolRef> {
        let Slot::User { file, mapping } = self.modules[id.0 as usize] else { return None };
        // Fields, not `self.load`: `recent` is used beside the file.
        let config = &self.config;
        let stored = &self.stored;
        let slot = &mut self.files[file as usize];
        let loaded = slot
            .state
            .get_or_insert_with(|| load(&slot.label, slot.build_id.as_ref(), config, stored))
            .as_ref()
            .ok()?;
        let vaddr = mapping.to_vaddr(pc, &loaded.main.layout)?;
        let (table, _, _) = loaded.symtab.as_ref()?;
        let first = first_ordinal(&mut slot.first_ordinal, &mut self.ordinals, &mut self.ordinal_files, file, table)?;
        self.recent.symbol(file, table, first, vaddr).map(SymbolRef)
    }

    /// Symbols stored with the profile (`tbrw symbolize`): each stands in
    /// for the file of its label and build id when that file cannot be
    /// found or used here. Give them before the first lookup.
    pub fn add_stored(&mut self, files: impl IntoIterator<Item = StoredFile>) {
        for f in files {
            self.stored.insert((f.label.clone(), f.build_id.clone()), f);
        }
    }

    /// What [`Symbolizer::add_stored`] takes back for `symbols` (ones this
    /// symbolizer gave): per file, its label and build id as the modules
    /// named it, its layout, and those symbols, files and symbols in the
    /// order first given.
    pub fn stored_files(&self, symbols: impl IntoIterator<Item = SymbolRef>) -> Vec<StoredFile> {
        let mut wanted: Vec<u32> = symbols.into_iter().map(|s| s.0).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut out: Vec<StoredFile> = Vec::new();
        let mut current = None;
        for ordinal in wanted {
            let Some((file, loaded, index)) = self.symbol_at(ordinal) else { continue };
            let Some((start, end, name)) = loaded.symtab.as_ref().and_then(|(t, _, _)| t.entry(index)) else {
                continue;
            };
            let slot = &self.files[file as usize];
            if current != Some(file) {
                current = Some(file);
                out.push(StoredFile {
                    label: slot.label.to_string(),
                    build_id: slot.build_id.clone(),
                    layout: loaded.main.layout.clone(),
                    symbols: Vec::new(),
                });
            }
            if let Some(f) = out.last_mut() {
                f.symbols.push(StoredSymbol { start, end, name: name.to_owned() });
            }
        }
        out
    }

    /// The name of a symbol [`Symbolizer::function_symbol`] (or a
    /// [`FunctionIndex`] of this symbolizer) gave, demangled when the
    /// configuration says so. Borrowed from the symbol table: a report by
    /// function names tens of thousands of symbols once each, and most
    /// names (C's) are their own demangled form.
    pub fn symbol_name(&self, symbol: SymbolRef) -> Option<&str> {
        let (_, loaded, index) = self.symbol_at(symbol.0)?;
        let (table, _, _) = loaded.symtab.as_ref()?;
        (index < table.len()).then(|| table.name_str(index, self.config.names()))
    }

    /// The file number, loaded file and table index of symbol `ordinal`.
    fn symbol_at(&self, ordinal: u32) -> Option<(u32, &Loaded, usize)> {
        let at = self.ordinal_files.partition_point(|&f| self.files[f as usize].first_ordinal <= Some(ordinal));
        let file = *self.ordinal_files.get(at.checked_sub(1)?)?;
        let slot = &self.files[file as usize];
        let loaded = slot.state.as_ref()?.as_ref().ok()?;
        Some((file, loaded, (ordinal - slot.first_ordinal?) as usize))
    }

    /// Finds and parses the files of `modules` not read yet, and snapshots
    /// their symbol tables for lookups from several threads. Other
    /// modules' addresses are [`crate::IndexedSymbol::NotIndexed`] there.
    ///
    /// # Panics
    /// When an id comes from another symbolizer with more modules.
    pub fn function_index(&mut self, modules: impl IntoIterator<Item = ModuleId>) -> FunctionIndex {
        let modules: Vec<ModuleId> = modules.into_iter().collect();
        self.load_all(&modules);
        let mut index = FunctionIndex {
            modules: (0..self.modules.len()).map(|_| IndexedModule::NotIndexed).collect(),
            files: (0..self.files.len()).map(|_| None).collect(),
        };
        for id in modules {
            let Slot::User { file, mapping } = self.modules[id.index()] else {
                index.modules[id.index()] = IndexedModule::NoSymbols;
                continue;
            };
            let config = &self.config;
            let stored = &self.stored;
            let slot = &mut self.files[file as usize];
            let state = slot.state.get_or_insert_with(|| load(&slot.label, slot.build_id.as_ref(), config, stored));
            // The code span of a usable module (`None`: not usable).
            let usable = match state.as_ref().ok().and_then(|l| Some((l, l.symtab.as_ref()?))) {
                Some((loaded, (table, _, _))) => {
                    first_ordinal(&mut slot.first_ordinal, &mut self.ordinals, &mut self.ordinal_files, file, table)
                        .map(|first_ordinal| {
                            index.files[file as usize].get_or_insert_with(|| IndexedFile {
                                layout: loaded.main.layout.clone(),
                                table: table.clone(),
                                jump: table.jump(JUMP_GRANULES.min(64 * table.len() as u64 + 4096)),
                                first_ordinal,
                            });
                            mapping.code_span(&loaded.main.layout)
                        })
                }
                None => None,
            };
            index.modules[id.index()] = match usable {
                Some(code) => IndexedModule::User { file, mapping, code },
                None if state.is_err() => IndexedModule::Uniform,
                None => IndexedModule::NoSymbols,
            };
        }
        index
    }

    /// Finds and parses the files of `modules` not read yet, on up to 8
    /// threads: reading tens of symbol tables is most of what a first report
    /// by function costs beyond counting.
    fn load_all(&mut self, modules: &[ModuleId]) {
        let mut todo: Vec<u32> = modules
            .iter()
            .filter_map(|id| match self.modules.get(id.index())? {
                Slot::User { file, .. } if self.files[*file as usize].state.is_none() => Some(*file),
                _ => None,
            })
            .collect();
        todo.sort_unstable();
        todo.dedup();
        // Asked once per process: on Linux the answer reads cgroup files.
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let threads = cores.min(8).min(todo.len());
        if threads < 2 {
            return;
        }
        let jobs: Vec<(u32, Arc<str>, Option<BuildId>)> = todo
            .iter()
            .map(|&f| (f, self.files[f as usize].label.clone(), self.files[f as usize].build_id.clone()))
            .collect();
        let (config, stored, jobs) = (&self.config, &self.stored, &jobs);
        let loaded: Vec<(u32, Result<Loaded, Arc<Symbolized>>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    scope.spawn(move || {
                        jobs.iter()
                            .skip(t)
                            .step_by(threads)
                            .map(|(f, label, build_id)| (*f, load(label, build_id.as_ref(), config, stored)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        });
        for (f, state) in loaded {
            self.files[f as usize].state = Some(state);
        }
    }

    fn load(&mut self, file: u32) -> &mut Result<Loaded, Arc<Symbolized>> {
        let config = &self.config;
        let stored = &self.stored;
        let slot = &mut self.files[file as usize];
        slot.state.get_or_insert_with(|| load(&slot.label, slot.build_id.as_ref(), config, stored))
    }

    fn load_kernel(&mut self) -> &KernelSlot {
        let (_, slot) = self.kernel.as_mut().expect("a kernel slot exists before it is loaded");
        slot.get_or_insert_with(|| {
            let label: Arc<str> = Arc::from("[kernel]");
            let read = |p: &Path| {
                let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
                Ok((Kallsyms::parse(&text)?, Arc::from(p)))
            };
            let found = match &self.config.kernel {
                KernelSymbols::Off => Err("kernel symbols are turned off".to_owned()),
                KernelSymbols::Proc => read(Path::new("/proc/kallsyms")),
                KernelSymbols::File(p) => read(p),
            };
            let state = found
                .map_err(|reason| Arc::new(Symbolized::missing(Some(label.clone()), None, Unknown::Kernel { reason })));
            KernelSlot { label, state }
        })
    }

    fn symbolize_kernel(&mut self, pc: u64) -> Arc<Symbolized> {
        if let Some(hit) = self.cache.get(&(KERNEL_FILE, pc)) {
            return hit.clone();
        }
        let k = self.load_kernel();
        let result = match &k.state {
            Err(failed) => return failed.clone(),
            Ok((syms, path)) => match syms.lookup(pc) {
                Some((name, offset)) => Symbolized {
                    module: Some(k.label.clone()),
                    vaddr: Some(pc),
                    file_used: Some(path.clone()),
                    function: Some(name),
                    offset: Some(offset),
                    frames: Vec::new(),
                    unknown: None,
                },
                None => Symbolized::missing(Some(k.label.clone()), Some(pc), Unknown::NoSymbolAt),
            },
        };
        let result = Arc::new(result);
        self.cache.insert((KERNEL_FILE, pc), result.clone());
        result
    }
}

/// The first [`SymbolRef`] ordinal of file `file` (whose table is
/// `table`), giving it the next `table.len()` ordinals if it has none yet;
/// `None` when they would overflow.
fn first_ordinal(
    given: &mut Option<u32>,
    ordinals: &mut u32,
    ordinal_files: &mut Vec<u32>,
    file: u32,
    table: &SymbolTable,
) -> Option<u32> {
    if let Some(first) = *given {
        return Some(first);
    }
    let first = *ordinals;
    *ordinals = u32::try_from(table.len()).ok().and_then(|n| first.checked_add(n))?;
    ordinal_files.push(file);
    Some(*given.insert(first))
}

/// Finds and parses one file: its symbol table now, its DWARF on first use.
fn load(
    label: &Arc<str>,
    build_id: Option<&BuildId>,
    config: &Config,
    stored: &StoredFiles,
) -> Result<Loaded, Arc<Symbolized>> {
    if crate::perf_map::is_perf_map(label) {
        return match crate::perf_map::load(label, config) {
            Ok((path, map)) => Ok(Loaded::perf_map(label, path, map)),
            // As for an ELF file: the symbols stored with the profile
            // stand in for a map file that is not here.
            Err(why) => match stored.get(&(label.to_string(), build_id.cloned())) {
                Some(f) => Ok(Loaded::stored(label, f)),
                None => Err(Arc::new(Symbolized::missing(Some(label.clone()), None, why))),
            },
        };
    }
    let Located { main, debug } = match locate(label, build_id, config) {
        Ok(found) => found,
        // The file cannot be used here: the symbols stored with the profile
        // for this (label, build id) stand in for it.
        Err(why) => match stored.get(&(label.to_string(), build_id.cloned())) {
            Some(f) => return Ok(Loaded::stored(label, f)),
            None => return Err(Arc::new(Symbolized::missing(Some(label.clone()), None, why))),
        },
    };
    // PLT stubs are named from the binary itself (a debug file's `.plt` has
    // no bytes), into whichever table names the functions.
    let plt = main.object().map(|obj| plt_entries(&obj)).unwrap_or_default();
    // The fullest table first: a debug file's `.symtab`, the file's own, and
    // only then the exported `.dynsym` of a stripped file.
    let mut symtab = None;
    let sources = [(debug.as_ref(), false), (Some(&main), false), (Some(&main), true)];
    for (file, dynamic) in sources {
        let Some(file) = file else { continue };
        let Some(obj) = file.object() else { continue };
        let (table, own) = SymbolTable::from_object(&obj, dynamic, &plt, config.demangle);
        if own > 0 {
            let source = if dynamic { SymbolSource::Dynsym } else { SymbolSource::Symtab };
            symtab = Some((Arc::new(table), source, file.path.clone()));
            break;
        }
    }
    let own_symbols = symtab.is_some();
    if symtab.is_none() && !plt.is_empty() {
        // No function of its own is named, but its PLT stubs are (their
        // names come from `.dynsym`).
        if let Some(obj) = main.object() {
            let (table, _) = SymbolTable::from_object(&obj, true, &plt, config.demangle);
            symtab = Some((Arc::new(table), SymbolSource::Dynsym, main.path.clone()));
        }
    }
    let outside = Arc::new(Symbolized::missing(Some(label.clone()), None, Unknown::OutsideSegments));
    Ok(Loaded { main, debug, symtab, own_symbols, dwarf: None, outside, warnings: Vec::new() })
}

impl Loaded {
    /// A file known from its stored symbols only (no DWARF).
    fn stored(label: &Arc<str>, f: &StoredFile) -> Loaded {
        let main = ElfFile::stored(label, f.layout.clone(), f.build_id.clone());
        let path = main.path.clone();
        let table = SymbolTable::from_stored(&f.symbols);
        let outside = Arc::new(Symbolized::missing(Some(label.clone()), None, Unknown::OutsideSegments));
        let symtab = (table.len() > 0).then(|| (Arc::new(table), SymbolSource::Stored, path));
        let own_symbols = symtab.is_some();
        Loaded { main, debug: None, symtab, own_symbols, dwarf: Some(None), outside, warnings: Vec::new() }
    }

    /// A perf map's symbols (JIT code): absolute addresses, no DWARF.
    fn perf_map(label: &Arc<str>, path: PathBuf, map: PerfMap) -> Loaded {
        let warnings = match map.cut {
            Some(limit) => vec![Warning::PerfMapCut { path: path.clone(), limit, symbols: map.len() }],
            None => Vec::new(),
        };
        let mut main = ElfFile::stored(label, crate::perf_map::layout(), None);
        main.path = Arc::from(path);
        let table = SymbolTable::from_perf_map(map.into_table());
        let outside = Arc::new(Symbolized::missing(Some(label.clone()), None, Unknown::OutsideSegments));
        let symtab = (table.len() > 0).then(|| (Arc::new(table), SymbolSource::PerfMap, main.path.clone()));
        let own_symbols = symtab.is_some();
        Loaded { main, debug: None, symtab, own_symbols, dwarf: Some(None), outside, warnings }
    }

    /// Parses the DWARF if not done yet (its warnings kept).
    fn load_dwarf(&mut self) {
        if self.dwarf.is_none() {
            let mut warnings = Vec::new();
            let parsed =
                self.dwarf_file().and_then(|f| Dwarf::load(f, &mut warnings).ok().map(|d| (d, f.path.clone())));
            self.warnings.extend(warnings);
            self.dwarf = Some(parsed);
        }
    }

    fn dwarf_file(&self) -> Option<&ElfFile> {
        self.debug.iter().chain(std::iter::once(&self.main)).find(|f| f.has_dwarf)
    }

    fn lookup(&mut self, label: &Arc<str>, vaddr: u64, config: &Config) -> Symbolized {
        let symbol = self.symtab.as_ref().and_then(|(t, _, path)| {
            let (index, offset) = t.lookup(vaddr)?;
            Some((t.name(index, config.names()), offset, path.clone()))
        });
        let mut frames = Vec::new();
        let mut dwarf_path = None;
        if config.lines {
            self.load_dwarf();
            if let Some(Some((dwarf, path))) = &mut self.dwarf {
                frames = dwarf.frames(vaddr, config.names());
                if !frames.is_empty() {
                    dwarf_path = Some(path.clone());
                }
            }
        }
        let (function, offset, file_used) = match symbol {
            Some((name, offset, path)) => (Some(name), Some(offset), Some(path)),
            None => (frames.last().and_then(|f| f.function.clone()), None, dwarf_path.clone()),
        };
        let unknown = match (&function, self.own_symbols, self.dwarf_file()) {
            (Some(_), _, _) => None,
            (None, false, None) => Some(Unknown::NoSymbols),
            (None, _, _) => Some(Unknown::NoSymbolAt),
        };
        Symbolized {
            module: Some(label.clone()),
            vaddr: Some(vaddr),
            file_used: file_used.or(dwarf_path).or_else(|| Some(self.main.path.clone())),
            function,
            offset,
            frames,
            unknown,
        }
    }
}
