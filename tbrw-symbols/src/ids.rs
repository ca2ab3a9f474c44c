//! The ids the symbolizer hands out and its index reads: a registered
//! module ([`ModuleId`]) and a function symbol ([`SymbolRef`]). A leaf:
//! imports nothing of the crate, so the symbolizer and the function index
//! both take them from here.

/// A module registered with [`Symbolizer::add_module`](crate::Symbolizer::add_module) or [`Symbolizer::kernel`](crate::Symbolizer::kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleId(pub(crate) u32);

impl ModuleId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// One function symbol of one file (see [`Symbolizer::function_symbol`](crate::Symbolizer::function_symbol)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SymbolRef(pub(crate) u32);

impl SymbolRef {
    /// The symbol of an [ordinal](SymbolRef::ordinal) (one of this
    /// symbolizer's, or [`Symbolizer::symbol_name`](crate::Symbolizer::symbol_name) gives `None`).
    pub fn from_ordinal(ordinal: u32) -> SymbolRef {
        SymbolRef(ordinal)
    }

    /// A dense number for the symbol: the symbols of the files a
    /// symbolizer has looked up are numbered from 0, file after file, so
    /// counts per symbol can be kept in a vector indexed by this.
    pub fn ordinal(self) -> usize {
        self.0 as usize
    }
}
