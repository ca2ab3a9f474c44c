//! What a walk keeps of each frame, and the names of the frames kept: the
//! one place a frame's address becomes what an answer shows.
//!
//! [`Resolution`] decides, frame by frame, what a walk's [`StackTree`]
//! keeps ([`Detail`]): every address (pprof, Parquet, a flame graph by
//! address), the module alone (a flame graph by process and module: no
//! function is ever resolved), or the function (the default flame graph,
//! Firefox, `report --children`): there, a module whose file cannot be used
//! here (not found, not ELF, another build; and frames in no module) names
//! every address alike, so its addresses become the module's one frame
//! (its load address) with no state per address. [`Names`] then names each
//! distinct frame kept once: its function (and with lines its source line)
//! through the file's symbolizer, and, unless `--no-inline`, the functions
//! DWARF says are inlined at its address ([`Names::inlined`]), which every
//! stack output shows as frames inside it (perf's `--inline`).
//!
//! Imports `file_symbols` and `tree`.

use std::sync::Arc;

use tbrw::{Module, Tb5File};

use super::tree::{NodeId, StackTree};
use super::Frame;
use crate::error::QueryError;
use crate::file_symbols::{FileSymbols, SymbolOptions};

/// What a walk keeps of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Its module and address.
    Address,
    /// What names its function: the address, except in a module whose
    /// addresses all name alike (its file cannot be used, or no module):
    /// there the module's one frame.
    Function,
    /// Its module only (its load address; 0 without a module); a frame in
    /// the module of its caller is the caller's frame.
    Module,
}

/// Per module record, whether its addresses all name alike.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Uniform {
    Unknown,
    Yes,
    No,
}

/// What a walk keeps of each frame ([`Detail`]), asking the symbolizer of
/// a [`Names`] whether a module's file can be used (once per module).
pub struct Resolution<'n> {
    detail: Detail,
    symbols: Option<&'n mut FileSymbols>,
    /// Per module record, its load address.
    loads: Vec<u64>,
    uniform: Vec<Uniform>,
    /// Per module record + 1 (0: no module), the outermost node of its one
    /// frame ([`NO_NODE`]: none yet): a sampled address alone in such a
    /// module is found without a hash. For the one tree a resolution is
    /// used with.
    module_nodes: Vec<NodeId>,
}

/// "No node yet" in [`Resolution`]'s `module_nodes`.
const NO_NODE: NodeId = NodeId::MAX;

impl Resolution<'static> {
    /// Every frame kept whole.
    pub fn addresses() -> Resolution<'static> {
        Resolution {
            detail: Detail::Address,
            symbols: None,
            loads: Vec::new(),
            uniform: Vec::new(),
            module_nodes: Vec::new(),
        }
    }

    /// Each frame's module only, with the module table's load addresses.
    pub fn modules(modules: &[Module]) -> Resolution<'static> {
        Resolution {
            detail: Detail::Module,
            symbols: None,
            loads: modules.iter().map(|m| m.load_address).collect(),
            uniform: Vec::new(),
            module_nodes: Vec::new(),
        }
    }
}

impl Resolution<'_> {
    /// The detail kept.
    pub fn detail(&self) -> Detail {
        self.detail
    }

    /// Whether all of `module`'s addresses name alike: no module, or one
    /// whose file cannot be used (asked once per module).
    fn uniform(&mut self, module: Option<u64>) -> bool {
        let Some(m) = module.and_then(|m| usize::try_from(m).ok()) else { return true };
        let Some(symbols) = self.symbols.as_deref_mut() else { return true };
        if m >= self.uniform.len() {
            self.uniform.resize(m + 1, Uniform::Unknown);
        }
        if self.uniform[m] == Uniform::Unknown {
            self.uniform[m] = if symbols.uniform(m as u64) { Uniform::Yes } else { Uniform::No };
        }
        self.uniform[m] == Uniform::Yes
    }

    /// The module's one frame.
    fn module_frame(&self, module: Option<u64>) -> Frame {
        let load = module.and_then(|m| self.loads.get(usize::try_from(m).ok()?)).copied().unwrap_or(0);
        Frame { module, pc: load }
    }

    /// When every frame of `module` is kept as the module's one frame
    /// (by module; by function where its addresses all name alike), that
    /// frame's address.
    pub fn collapsed(&mut self, module: Option<u64>) -> Option<u64> {
        let one = match self.detail {
            Detail::Address => false,
            Detail::Module => true,
            Detail::Function => self.uniform(module),
        };
        one.then(|| self.module_frame(module).pc)
    }

    /// What is kept of `f`.
    pub fn keep(&mut self, f: Frame) -> Frame {
        let whole = match self.detail {
            Detail::Address => true,
            Detail::Module => false,
            Detail::Function => !self.uniform(f.module),
        };
        if whole {
            f
        } else {
            self.module_frame(f.module)
        }
    }

    /// The node of `f` (kept as [`Resolution::keep`] says) called from
    /// `parent` in `tree`; by module, a frame of its caller's module is the
    /// caller's node. One resolution serves one tree.
    pub fn push(&mut self, tree: &mut StackTree, parent: Option<NodeId>, f: Frame) -> Result<NodeId, QueryError> {
        // Outermost in a module kept as its one frame, met before: its
        // node, with no question asked (a sampled address alone, the
        // whole walk of a file whose modules' files are elsewhere).
        let slot = f.module.map_or(0, |m| usize::try_from(m).map_or(usize::MAX, |m| m.saturating_add(1)));
        if parent.is_none() {
            if let Some(&node) = self.module_nodes.get(slot).filter(|&&n| n != NO_NODE) {
                return Ok(node);
            }
        }
        let kept = self.keep(f);
        if parent.is_none() && (kept != f || self.detail == Detail::Module) {
            // The module's one frame, outermost: its node by the module.
            if slot < self.loads.len() + 1 {
                if slot >= self.module_nodes.len() {
                    self.module_nodes.resize(self.loads.len() + 1, NO_NODE);
                }
                if self.module_nodes[slot] == NO_NODE {
                    self.module_nodes[slot] = tree.push(None, kept)?;
                }
                return Ok(self.module_nodes[slot]);
            }
        }
        if let (Detail::Module, Some(p)) = (self.detail, parent) {
            if tree.node_frame(p) == kept {
                return Ok(p);
            }
        }
        tree.push(parent, kept)
    }

    /// The stack of `frames` (innermost first), kept: its innermost node.
    pub fn intern(&mut self, tree: &mut StackTree, frames: &[Frame]) -> Result<Option<NodeId>, QueryError> {
        let mut at = None;
        for &f in frames.iter().rev() {
            at = Some(self.push(tree, at, f)?);
        }
        Ok(at)
    }
}

/// The functions inlined at the address `s` symbolizes, outermost first,
/// with their source positions (DWARF's inline chain; those without a
/// name left out): what [`Names::inline_frames`] gives unless
/// `--no-inline`, for callers that hold a symbolizer of their own.
pub fn inline_frames(s: &tbrw_symbols::Symbolized) -> Vec<Inlined> {
    s.inline_chain()
        .filter_map(|f| Some(Inlined { function: f.function.clone()?, location: f.location.clone() }))
        .collect()
}

/// Function names of addresses (and, made [`Names::with_lines`], their
/// source lines), through the file's symbolizer, which keeps a result per
/// distinct address of a module whose file it read, and one per module
/// whose file it could not.
pub struct Names {
    symbols: Option<FileSymbols>,
    /// Whether DWARF is read (for source lines or inline chains).
    lines: bool,
    /// Whether the inline chains are asked for (not `--no-inline`).
    inline: bool,
    modules: Vec<u64>,
    /// Per module record, whether its addresses all name alike (asked once).
    uniform: Vec<Uniform>,
}

/// What [`Names`] knows of an address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Named {
    /// The function holding it, from the symbol tables: the name `tbrw
    /// report --by function` gives its samples.
    pub function: Option<Arc<str>>,
    /// Its source file and line, as `tbrw report --by line` gives them
    /// (only from [`Names::with_lines`]).
    pub location: Option<tbrw_symbols::SourceLocation>,
}

/// A function inlined at an address, as [`Names::inline_frames`] gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inlined {
    /// Its name, as `--demangle` shows names.
    pub function: Arc<str>,
    /// The source position in it: the address's own for the innermost,
    /// else the call site of the next function inlined into it.
    pub location: Option<tbrw_symbols::SourceLocation>,
}

impl Names {
    /// A symbolizer for the file's modules; `None` leaves every function unknown.
    /// DWARF is read for the inline chains unless `no_inline` says not to.
    pub fn new(file: &Tb5File, modules: &[Module], symbols: Option<&SymbolOptions>) -> Result<Names, QueryError> {
        let inline = symbols.is_some_and(|o| !o.no_inline);
        let symbols = match symbols {
            Some(o) => {
                // Function names from the symbol tables; DWARF only for
                // the inline chains.
                let config = tbrw_symbols::Config { lines: inline, ..o.config() };
                Some(FileSymbols::with_config(file, modules, config)?.verbose(o.verbose))
            }
            None => None,
        };
        Ok(Names {
            symbols,
            lines: inline,
            inline,
            modules: modules.iter().map(|m| m.load_address).collect(),
            uniform: vec![Uniform::Unknown; modules.len()],
        })
    }

    /// The same, reading the modules' DWARF line tables too, for
    /// [`Named::location`].
    pub fn with_lines(file: &Tb5File, modules: &[Module], symbols: &SymbolOptions) -> Result<Names, QueryError> {
        let config = tbrw_symbols::Config { lines: true, ..symbols.config() };
        Ok(Names {
            symbols: Some(FileSymbols::with_config(file, modules, config)?.verbose(symbols.verbose)),
            lines: true,
            inline: !symbols.no_inline,
            modules: modules.iter().map(|m| m.load_address).collect(),
            uniform: vec![Uniform::Unknown; modules.len()],
        })
    }

    /// What a walk keeps of frames to be named here: `detail`, asking this
    /// symbolizer which modules' files can be used.
    pub fn resolution(&mut self, detail: Detail) -> Resolution<'_> {
        Resolution {
            detail,
            symbols: self.symbols.as_mut(),
            loads: self.modules.clone(),
            uniform: Vec::new(),
            module_nodes: Vec::new(),
        }
    }

    /// Whether every address of `module` names alike (`None`: no module;
    /// a module whose file cannot be used; every module without a
    /// symbolizer), asked of the symbolizer once per module: a caller can
    /// then name its addresses from one of them.
    pub fn uniform(&mut self, module: Option<u64>) -> bool {
        let Some(m) = module.and_then(|m| usize::try_from(m).ok()).filter(|&m| m < self.uniform.len()) else {
            return true;
        };
        let Some(symbols) = self.symbols.as_mut() else { return true };
        if self.uniform[m] == Uniform::Unknown {
            self.uniform[m] = if symbols.uniform(m as u64) { Uniform::Yes } else { Uniform::No };
        }
        self.uniform[m] == Uniform::Yes
    }

    /// The function holding `f`'s address, when its module's symbols name it.
    /// A module that cannot be symbolized is noted for
    /// [`Names::take_warnings`].
    pub fn function(&mut self, f: Frame) -> Option<Arc<str>> {
        self.lookup(f).function
    }

    /// What is known of `f`'s address: its function and (with lines) its
    /// source line. As [`Names::function`] for modules that cannot be symbolized.
    pub fn lookup(&mut self, f: Frame) -> Named {
        match self.symbolized(f) {
            Some(s) => self.named(&s),
            None => Named::default(),
        }
    }

    /// What [`Names::lookup`] makes of the symbolizer's result `s`.
    pub fn named(&self, s: &tbrw_symbols::Symbolized) -> Named {
        // With DWARF read, an address no symbol table covers takes its
        // function's name from DWARF (no offset then); the report by
        // function reads symbol tables only, and so does this name.
        let function = s.function.clone().filter(|_| !self.lines || s.offset.is_some());
        Named { function, location: s.location().cloned() }
    }

    /// Whether inline chains are given ([`Names::inlined`]; not `--no-inline`).
    pub fn inline(&self) -> bool {
        self.inline
    }

    /// The functions inlined at `f`'s address, outermost first: frames
    /// of the stack inside its function, as perf's `--inline` shows them
    /// (names as `--demangle` says, spelled as every output spells
    /// them). Empty with `--no-inline`, outside inlined code, or without
    /// DWARF for the address. A caller asks once per distinct frame.
    pub fn inlined(&mut self, f: Frame) -> Vec<Arc<str>> {
        if !self.inline {
            return Vec::new();
        }
        match self.symbolized(f) {
            Some(s) => self.inline_frames(&s).into_iter().map(|i| i.function).collect(),
            None => Vec::new(),
        }
    }

    /// [`Names::inlined`] of the symbolizer's result `s`, with each
    /// inlined function's source position, outermost first.
    pub fn inline_frames(&self, s: &tbrw_symbols::Symbolized) -> Vec<Inlined> {
        if !self.inline {
            return Vec::new();
        }
        inline_frames(s)
    }

    /// The symbolizer's whole result for `f`'s address (`None`: this
    /// `Names` has no symbolizer). As [`Names::function`] for modules that
    /// cannot be symbolized.
    pub fn symbolized(&mut self, f: Frame) -> Option<Arc<tbrw_symbols::Symbolized>> {
        self.symbols.as_mut().map(|s| s.symbolize(f.module, f.pc))
    }

    /// Hands over the warnings about modules that could not be
    /// symbolized: one per kind, or per module when asked (see
    /// [`FileSymbols::take_warnings`]).
    pub fn take_warnings(&mut self, warn: &mut Vec<crate::Warning>) {
        if let Some(s) = self.symbols.as_mut() {
            s.take_warnings(warn);
        }
    }
}
