//! A function symbol table sorted by address, built once per ELF file from
//! `.symtab` or `.dynsym`, and looked up by binary search.

use std::sync::{Arc, OnceLock};

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

use crate::demangle::{demangle, may_be_mangled};
use crate::elf::is_code;

/// Which ELF table the function names come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolSource {
    /// `.symtab` (all functions, including static ones).
    Symtab,
    /// `.dynsym` (exported functions only: a stripped file).
    Dynsym,
    /// The symbols stored with the profile (`tbrw symbolize`): the file
    /// itself could not be used.
    Stored,
}

/// Function symbols of one file, sorted by address, one per address. The
/// starts are searched on their own (8 bytes a symbol): a lookup's cache
/// misses are the search's, and a table of thousands then stays in cache.
pub(crate) struct SymbolTable {
    starts: Vec<u64>,
    /// Exclusive ends: `start + st_size`, or for a size-0 symbol the next
    /// symbol's start or the end of its section, whichever comes first.
    ends: Vec<u64>,
    raw_names: NameList,
    /// Demangled names, made on first use and shared by every address of the
    /// function (so reports can group by pointer-equal names).
    names: Vec<OnceLock<Arc<str>>>,
}

/// The names of a table as one text and where each ends: one allocation a
/// table instead of one a name (a report reads and drops the tables of
/// every module it names, tens of thousands of names).
#[derive(Default)]
struct NameList {
    text: String,
    ends: Vec<usize>,
}

impl NameList {
    fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    fn get(&self, index: usize) -> Option<&str> {
        let start = match index.checked_sub(1) {
            Some(before) => *self.ends.get(before)?,
            None => 0,
        };
        self.text.get(start..*self.ends.get(index)?)
    }
}

/// Bytes of code per entry of a [`Jump`] table.
const JUMP_GRANULE: u64 = 32;

/// Per 32-byte granule of a symbol table's address span, one 4-byte entry.
/// A *resolved* entry ([`JUMP_RESOLVED`]) answers every address of the
/// granule with one load and a compare: a symbol index and a split offset,
/// the symbol covering the granule below the split and the next one from
/// it on. One symbol covering the granule whole, none starting inside it
/// (functions longer than a few granules), has the split past the granule;
/// a granule one symbol's start splits in two (the symbol before covers up
/// to it, that symbol covers the rest: small functions packed back to
/// back) has it at that start. Any other granule's entry is how many
/// symbols start at or below its first byte, where a lookup starts and
/// steps over the few symbols that start inside it. Either way no search of
/// the whole table (a chain of cache misses on large tables), and the two
/// resolved kinds take the same path, with no branch between them.
pub(crate) struct Jump {
    base: u64,
    entries: Vec<u32>,
}

/// The flag of a resolved [`Jump`] entry: the low [`RESOLVED_INDEX_BITS`]
/// bits are a symbol index, the 6 above the split's offset in the granule
/// (up to 32: past it).
const JUMP_RESOLVED: u32 = 1 << 31;

/// Bits of a resolved entry's symbol index.
const RESOLVED_INDEX_BITS: u32 = 25;

/// How far back a lookup walks past a sized symbol that does not cover the
/// address, to find an enclosing one (nested or overlapping symbols, as in
/// hand-written assembly). Bounded so a lookup stays O(log n).
const OVERLAP_WALK: usize = 16;

impl SymbolTable {
    /// Function symbols of `.dynsym` (`dynamic`) or `.symtab`.
    pub(crate) fn from_object(obj: &object::File<'_>, dynamic: bool) -> SymbolTable {
        // (is code, address, end) per section index, read once.
        let sections: Vec<(bool, u64, u64)> = {
            let mut v = Vec::new();
            for s in obj.sections() {
                let i = s.index().0;
                if v.len() <= i {
                    v.resize(i + 1, (false, 0, 0));
                }
                v[i] = (is_code(&s), s.address(), s.address().saturating_add(s.size()));
            }
            v
        };
        // (addr, rank, leading underscores, name, size, section end): the
        // sort's order, a total one (rank orders duplicates).
        let mut raw: Vec<(u64, u8, usize, &str, u64, u64)> = Vec::new();
        let symbols = if dynamic { obj.dynamic_symbols() } else { obj.symbols() };
        for sym in symbols {
            if !sym.is_definition() || !matches!(sym.kind(), SymbolKind::Text | SymbolKind::Unknown) {
                continue;
            }
            let Some(index) = sym.section_index() else { continue };
            let Some(&(true, _, sec_end)) = sections.get(index.0) else { continue };
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let rank = u8::from(sym.size() == 0) * 4
                + if sym.is_global() {
                    0
                } else if sym.is_weak() {
                    1
                } else {
                    2
                };
            let underscores = name.bytes().take_while(|&c| c == b'_').count();
            raw.push((sym.address(), rank, underscores, name, sym.size(), sec_end));
        }
        // Several names often share an address (aliases, weak/global pairs):
        // keep the sized, most global, least underscored one, like perf.
        raw.sort_unstable_by(|a, b| {
            (a.0, a.1, a.2, a.3.len(), a.3, a.4, a.5).cmp(&(b.0, b.1, b.2, b.3.len(), b.3, b.4, b.5))
        });
        raw.dedup_by_key(|r| r.0);
        let mut starts = Vec::with_capacity(raw.len());
        let mut ends = Vec::with_capacity(raw.len());
        let mut raw_names = NameList::default();
        for (i, &(addr, _, _, name, size, sec_end)) in raw.iter().enumerate() {
            let end = if size > 0 {
                addr.saturating_add(size)
            } else {
                let next = raw.get(i + 1).map_or(u64::MAX, |r| r.0);
                next.min(sec_end).max(addr)
            };
            starts.push(addr);
            ends.push(end);
            raw_names.push(name);
        }
        let names = (0..starts.len()).map(|_| OnceLock::new()).collect();
        SymbolTable { starts, ends, raw_names, names }
    }

    /// Function symbols stored with a profile ([`crate::stored`]), kept
    /// as [`SymbolTable::from_object`] keeps a file's.
    pub(crate) fn from_stored(symbols: &[crate::stored::StoredSymbol]) -> SymbolTable {
        let mut sorted: Vec<&crate::stored::StoredSymbol> = symbols.iter().filter(|s| s.end > s.start).collect();
        sorted.sort_by_key(|s| s.start);
        sorted.dedup_by_key(|s| s.start);
        SymbolTable {
            starts: sorted.iter().map(|s| s.start).collect(),
            ends: sorted.iter().map(|s| s.end).collect(),
            raw_names: {
                let mut names = NameList::default();
                for s in &sorted {
                    names.push(&s.name);
                }
                names
            },
            names: sorted.iter().map(|_| OnceLock::new()).collect(),
        }
    }

    /// Symbol `index`: its start, end and name as the table spells it.
    pub(crate) fn entry(&self, index: usize) -> Option<(u64, u64, &str)> {
        Some((*self.starts.get(index)?, self.ends[index], self.raw_names.get(index)?))
    }

    /// Number of function symbols kept.
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The symbol covering `vaddr`, as (index, offset from its start).
    pub(crate) fn lookup(&self, vaddr: u64) -> Option<(usize, u64)> {
        self.lookup_range(vaddr).map(|(i, _)| (i, vaddr - self.starts[i]))
    }

    /// The symbol covering `vaddr` and the addresses around it that
    /// [`SymbolTable::lookup`] gives the same symbol for: those with the
    /// same last start at or below them, below the symbol's end, and above
    /// the end of every later-starting symbol the search passed over.
    pub(crate) fn lookup_range(&self, vaddr: u64) -> Option<(usize, std::ops::Range<u64>)> {
        self.lookup_range_from(vaddr, self.starts.partition_point(|&s| s <= vaddr))
    }

    /// [`SymbolTable::lookup_range`] given `upto`, the number of symbols
    /// starting at or below `vaddr`.
    fn lookup_range_from(&self, vaddr: u64, upto: usize) -> Option<(usize, std::ops::Range<u64>)> {
        let i = (upto.saturating_sub(OVERLAP_WALK)..upto).rev().find(|&i| vaddr < self.ends[i])?;
        let passed = self.ends[i + 1..upto].iter().copied().max().unwrap_or(0);
        let lo = self.starts[upto - 1].max(passed);
        let hi = self.starts.get(upto).copied().unwrap_or(u64::MAX).min(self.ends[i]);
        Some((i, lo..hi))
    }

    /// A [`Jump`] table over the table's address span, when that span has
    /// at most `max_granules` granules.
    pub(crate) fn jump(&self, max_granules: u64) -> Option<Jump> {
        let base = *self.starts.first()? & !(JUMP_GRANULE - 1);
        let end = self.ends.iter().copied().max()?;
        let granules = (end - base).div_ceil(JUMP_GRANULE);
        if granules > max_granules {
            return None;
        }
        if self.starts.len() >= JUMP_RESOLVED as usize {
            return None;
        }
        let mut entries = Vec::with_capacity(granules as usize);
        let mut i = 0usize;
        for g in 0..granules {
            let at = base + g * JUMP_GRANULE;
            while i < self.starts.len() && self.starts[i] <= at {
                i += 1;
            }
            // Every address of the granule has `i` symbols at or below it
            // and is below the last one's end: [`SymbolTable::lookup_jump`]'s
            // first answer, for the whole granule.
            let last = JUMP_GRANULE - 1;
            let whole = i > 0 && self.starts.get(i).is_none_or(|&s| s > at + last) && self.ends[i - 1] > at + last;
            // Or: one symbol starts inside, the one before covers up to it and
            // it covers the rest: below the split the last symbol at or below
            // an address is `i - 1` and covers it, from it on `i` does.
            let split = !whole
                && i > 0
                && self.starts.get(i).is_some_and(|&s| s <= at + last && self.ends[i - 1] >= s)
                && self.starts.get(i + 1).is_none_or(|&s| s > at + last)
                && self.ends[i] > at + last;
            let offset = match (whole, split) {
                (true, _) => Some(JUMP_GRANULE as u32),
                (_, true) => Some((self.starts[i] - at) as u32),
                _ => None,
            };
            entries.push(match offset {
                Some(offset) if i - 1 < 1 << RESOLVED_INDEX_BITS => {
                    (i - 1) as u32 | offset << RESOLVED_INDEX_BITS | JUMP_RESOLVED
                }
                _ => i as u32,
            });
        }
        Some(Jump { base, entries })
    }

    /// The index [`SymbolTable::lookup`] gives, through `jump` (made by
    /// this table's [`SymbolTable::jump`]): a step or two from the
    /// granule's first symbol instead of a binary search, and no walk back
    /// when the last symbol starting at or below `vaddr` covers it (the
    /// walk's first step).
    #[inline]
    pub(crate) fn lookup_jump(&self, jump: &Jump, vaddr: u64) -> Option<usize> {
        let g = vaddr.checked_sub(jump.base)? / JUMP_GRANULE;
        let Some(&entry) = usize::try_from(g).ok().and_then(|g| jump.entries.get(g)) else {
            return self.lookup_range(vaddr).map(|(i, _)| i);
        };
        if entry & JUMP_RESOLVED != 0 {
            let index = (entry & ((1 << RESOLVED_INDEX_BITS) - 1)) as usize;
            let split = u64::from((entry & !JUMP_RESOLVED) >> RESOLVED_INDEX_BITS);
            return Some(index + usize::from(vaddr % JUMP_GRANULE >= split));
        }
        let mut upto = entry as usize;
        while self.starts.get(upto).is_some_and(|&s| s <= vaddr) {
            upto += 1;
        }
        match upto.checked_sub(1) {
            Some(last) if vaddr < self.ends[last] => Some(last),
            _ => self.lookup_range_from(vaddr, upto).map(|(i, _)| i),
        }
    }

    /// The (demangled when asked) name of symbol `index`, as
    /// [`SymbolTable::name`] gives it, without making a shared copy of a
    /// name that demangling leaves as it is.
    pub(crate) fn name_str(&self, index: usize, demangle_names: bool) -> &str {
        let raw = self.raw_names.get(index).unwrap_or_default();
        if demangle_names && may_be_mangled(raw) {
            self.names[index].get_or_init(|| Arc::from(demangle(raw)))
        } else {
            raw
        }
    }

    /// The (demangled when asked) name of symbol `index`.
    pub(crate) fn name(&self, index: usize, demangle_names: bool) -> Arc<str> {
        self.names[index]
            .get_or_init(|| {
                let raw = self.raw_names.get(index).unwrap_or_default();
                if demangle_names {
                    Arc::from(demangle(raw))
                } else {
                    Arc::from(raw)
                }
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(syms: &[(u64, u64)]) -> SymbolTable {
        SymbolTable {
            starts: syms.iter().map(|s| s.0).collect(),
            ends: syms.iter().map(|s| s.1).collect(),
            raw_names: {
                let mut names = NameList::default();
                for _ in syms {
                    names.push("f");
                }
                names
            },
            names: syms.iter().map(|_| OnceLock::new()).collect(),
        }
    }

    #[test]
    fn every_address_of_a_lookup_range_looks_up_to_the_same_symbol() {
        // Gaps, a symbol nested in another, one overlapping the next, and
        // one inside a symbol that ended before it.
        let t = table(&[(10, 20), (20, 60), (25, 30), (40, 45), (50, 70), (80, 81), (90, 200), (100, 101)]);
        for v in 0..220 {
            match t.lookup_range(v) {
                None => assert_eq!(t.lookup(v), None, "{v}"),
                Some((i, range)) => {
                    assert!(range.contains(&v), "{v} outside its own range {range:?}");
                    assert_eq!(t.lookup(v).map(|x| x.0), Some(i), "{v}");
                    for w in range.start..range.end.min(220) {
                        assert_eq!(t.lookup(w).map(|x| x.0), Some(i), "{w} in the range of {v}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_jump_table_finds_what_the_search_finds() {
        let t = table(&[(10, 20), (20, 60), (25, 30), (40, 45), (50, 70), (80, 81), (90, 200), (100, 101), (130, 131)]);
        let jump = t.jump(1 << 20).unwrap();
        for v in 0..300 {
            assert_eq!(t.lookup_jump(&jump, v), t.lookup(v).map(|x| x.0), "{v}");
        }
        assert!(t.jump(2).is_none(), "a span over the limit has no table");
        assert!(table(&[]).jump(1 << 20).is_none());
    }

    proptest::proptest! {
        /// Any table (gaps, nesting, overlaps, empty symbols), every address
        /// around it: the jump table gives the search's symbol.
        #[test]
        fn a_jump_lookup_equals_the_search(mut syms in proptest::collection::vec((0u64..400, 0u64..120), 1..40)) {
            syms.sort_unstable_by_key(|s| s.0);
            syms.dedup_by_key(|s| s.0);
            let t = table(&syms.iter().map(|&(start, len)| (start, start + len)).collect::<Vec<_>>());
            let jump = t.jump(1 << 20).unwrap();
            for v in 0..600 {
                proptest::prop_assert_eq!(t.lookup_jump(&jump, v), t.lookup(v).map(|x| x.0), "{}", v);
            }
        }
    }
}
