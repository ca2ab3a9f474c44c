//! [`FunctionIndex`]: a read-only snapshot of the symbol tables of some
//! modules of a [`crate::Symbolizer`], shared by threads that each count a
//! part of a profile per function. Holds tables and mappings only: no
//! DWARF, no results, nothing found or parsed after the snapshot.

use std::sync::Arc;

use crate::elf::Layout;
use crate::ids::{ModuleId, SymbolRef};
use crate::mapping::{CodeSpan, Mapping};
use crate::recent::RecentSymbols;
use crate::symtab::{Jump, SymbolTable};

/// What [`FunctionIndex::function_symbol`] says of an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexedSymbol {
    /// The function symbol holding the address: the same [`SymbolRef`] as
    /// [`crate::Symbolizer::function_symbol`] gives.
    Found(SymbolRef),
    /// Where `Symbolizer::function_symbol` gives `None`: no symbol-table
    /// function (ask `Symbolizer::symbolize` why).
    NoSymbol,
    /// The module was not in the snapshot: ask the symbolizer.
    NotIndexed,
}

pub(crate) struct IndexedFile {
    pub(crate) layout: Layout,
    pub(crate) table: Arc<SymbolTable>,
    /// For tables whose span has at most [`JUMP_GRANULES`] granules.
    pub(crate) jump: Option<Jump>,
    pub(crate) first_ordinal: u32,
}

/// Files whose code spans more (128 MiB), or more than 64 granules a
/// symbol (2 KiB of code per function: sparse tables, crafted ones among
/// them, would cost memory out of proportion to the file), are searched
/// through the recent ranges and the binary search: a jump table takes 4
/// bytes a granule.
pub(crate) const JUMP_GRANULES: u64 = 1 << 22;

pub(crate) enum IndexedModule {
    NotIndexed,
    /// The kernel, or a file with no function symbols.
    NoSymbols,
    /// A file that cannot be used here: every address symbolizes alike.
    Uniform,
    User {
        file: u32,
        mapping: Mapping,
        /// Where `mapping` is one shift (the code segment): most samples.
        code: Option<CodeSpan>,
    },
}

/// The function-symbol lookups of [`crate::Symbolizer::function_symbol`]
/// for the modules given to [`crate::Symbolizer::function_index`], without
/// the symbolizer: it is `Sync`, so several threads can look up at once,
/// each with its own [`RecentSymbols`].
pub struct FunctionIndex {
    pub(crate) modules: Vec<IndexedModule>,
    /// Per file number of the symbolizer; `None` for files not indexed.
    pub(crate) files: Vec<Option<IndexedFile>>,
}

impl FunctionIndex {
    /// The function symbol holding address `pc` of module `id`.
    pub fn function_symbol(&self, id: ModuleId, pc: u64, recent: &mut RecentSymbols) -> IndexedSymbol {
        self.module(id).function_symbol(pc, recent)
    }

    /// The lookups of module `id`, found once for a run of its samples.
    #[inline]
    pub fn module(&self, id: ModuleId) -> ModuleIndex<'_> {
        ModuleIndex(match self.modules.get(id.index()) {
            Some(&IndexedModule::User { file, ref mapping, code }) => match self.files.get(file as usize) {
                Some(Some(f)) => Lookup::User { file, f, mapping, code },
                _ => Lookup::NoSymbol,
            },
            Some(IndexedModule::NoSymbols) => Lookup::NoSymbol,
            Some(IndexedModule::Uniform) => Lookup::Uniform,
            Some(IndexedModule::NotIndexed) | None => Lookup::NotIndexed,
        })
    }
}

/// The function-symbol lookups of one module of a [`FunctionIndex`]
/// ([`FunctionIndex::module`]): a caller with samples grouped by module
/// finds the module's file and mapping once, and its lookups stay in one
/// file's tables.
#[derive(Clone, Copy)]
pub struct ModuleIndex<'a>(Lookup<'a>);

#[derive(Clone, Copy)]
enum Lookup<'a> {
    User { file: u32, f: &'a IndexedFile, mapping: &'a Mapping, code: Option<CodeSpan> },
    NoSymbol,
    Uniform,
    NotIndexed,
}

impl ModuleIndex<'_> {
    /// Whether every address of the module symbolizes alike (its file
    /// cannot be used here: [`crate::Symbolizer::uniform`]), so that a
    /// count by function needs no more than one entry for all of them.
    #[inline]
    pub fn is_uniform(&self) -> bool {
        matches!(self.0, Lookup::Uniform)
    }

    /// The function symbol holding address `pc` of the module: what
    /// [`FunctionIndex::function_symbol`] gives.
    #[inline]
    pub fn function_symbol(&self, pc: u64, recent: &mut RecentSymbols) -> IndexedSymbol {
        let (file, f, mapping, code) = match self.0 {
            Lookup::User { file, f, mapping, code } => (file, f, mapping, code),
            Lookup::NoSymbol | Lookup::Uniform => return IndexedSymbol::NoSymbol,
            Lookup::NotIndexed => return IndexedSymbol::NotIndexed,
        };
        let Some(vaddr) = code.and_then(|c| c.vaddr(pc)).or_else(|| mapping.to_vaddr(pc, &f.layout)) else {
            return IndexedSymbol::NoSymbol;
        };
        if let Some(jump) = &f.jump {
            // One entry, or a step or two from it: no cache needed.
            return match f.table.lookup_jump(jump, vaddr) {
                Some(index) => IndexedSymbol::Found(SymbolRef::from_ordinal(f.first_ordinal + index as u32)),
                None => IndexedSymbol::NoSymbol,
            };
        }
        match recent.symbol(file, &f.table, f.first_ordinal, vaddr) {
            Some(ordinal) => IndexedSymbol::Found(SymbolRef::from_ordinal(ordinal)),
            None => IndexedSymbol::NoSymbol,
        }
    }
}
