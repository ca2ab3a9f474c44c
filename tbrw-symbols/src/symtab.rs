//! A function symbol table sorted by address, built once per ELF file from
//! `.symtab` or `.dynsym`, and looked up by binary search.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use object::elf::{SymbolBind, STB_GLOBAL, STB_WEAK, STT_FUNC, STT_GNU_IFUNC, STT_NOTYPE};
use object::{Architecture, Object, ObjectSection, ObjectSymbol, SymbolFlags};

use crate::demangle::{demangle, may_be_mangled, shown, Names};
use crate::elf::is_code;
use crate::plt::PltEntry;

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
    /// A perf map (`/tmp/perf-<pid>.map`): the symbols a JIT wrote for its
    /// code ([`crate::JitMaps`]).
    PerfMap,
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
/// every module it names, tens of thousands of names). Names are in table
/// order, or, for a perf map, in the map's line order with `order` giving
/// each table entry's name (the text is not copied into address order).
#[derive(Default)]
pub(crate) struct NameList {
    text: String,
    ends: Vec<usize>,
    /// Per table entry, the number of its name; empty: the names are in
    /// table order.
    order: Vec<u32>,
}

impl NameList {
    pub(crate) fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    /// Name number `n`, in the order pushed.
    pub(crate) fn pushed(&self, n: usize) -> Option<&str> {
        let start = match n.checked_sub(1) {
            Some(before) => *self.ends.get(before)?,
            None => 0,
        };
        self.text.get(start..*self.ends.get(n)?)
    }

    /// Gives table entry `i` the name pushed as number `order[i]`.
    pub(crate) fn set_order(&mut self, order: Vec<u32>) {
        self.order = order;
    }

    /// Frees what pushing left unused.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }

    fn get(&self, index: usize) -> Option<&str> {
        match self.order.is_empty() {
            true => self.pushed(index),
            false => self.pushed(*self.order.get(index)? as usize),
        }
    }
}

/// A function symbol read from a table (or a named PLT stub), before the
/// symbols of one address are narrowed to one.
struct Candidate<'a> {
    addr: u64,
    size: u64,
    /// The end of its section (where a size-0 symbol stops at the latest).
    sec_end: u64,
    name: &'a str,
    bind: SymbolBind,
    plt: bool,
}

/// Whether perf, of two function symbols `a` and `b` at one address (`a`
/// first in table order), keeps `b`. perf's rule (`choose_best_symbol` in
/// `tools/perf/util/symbol.c`, applied by `symbols__fixup_duplicate` to
/// each address's symbols in table order, the one kept so far against the
/// next), first difference wins:
///
/// 1. a symbol with a size over a size-0 one;
/// 2. a non-weak symbol over a weak one (a local one beats a weak one);
/// 3. a global (`STB_GLOBAL`) symbol over a non-global one;
/// 4. fewer leading underscores;
/// 5. the longer name;
/// 6. else the first, unless its name starts with `SyS` or `compat_SyS`
///    (kernel syscall aliases).
///
/// The names compared are the ones shown: demangled when `demangle_names`.
fn perf_prefers(a: &Candidate<'_>, b: &Candidate<'_>, demangle_names: bool) -> bool {
    let rank = |c: &Candidate<'_>| (c.size > 0, c.bind != STB_WEAK, c.bind == STB_GLOBAL);
    let (ra, rb) = (rank(a), rank(b));
    if ra != rb {
        return rb > ra;
    }
    let shown = |name| -> Cow<'_, str> {
        if demangle_names && may_be_mangled(name) {
            demangle(name)
        } else {
            Cow::Borrowed(name)
        }
    };
    let (na, nb) = (shown(a.name), shown(b.name));
    let underscores = |n: &str| n.bytes().take_while(|&c| c == b'_').count();
    match underscores(&na).cmp(&underscores(&nb)) {
        Ordering::Less => false,
        Ordering::Greater => true,
        Ordering::Equal => match na.len().cmp(&nb.len()) {
            Ordering::Greater => false,
            Ordering::Less => true,
            Ordering::Equal => na.starts_with("SyS") || na.starts_with("compat_SyS"),
        },
    }
}

/// The symbols of `raw` (in table order, PLT stubs last) sorted by
/// address, one per address: of several, the one perf keeps
/// ([`perf_prefers`]); a PLT stub only where no symbol starts.
fn one_per_address<'a>(mut raw: Vec<Candidate<'a>>, demangle_names: bool) -> Vec<Candidate<'a>> {
    // Stable: the symbols of one address stay in table order, the order
    // perf compares them in.
    raw.sort_by_key(|c| c.addr);
    let mut kept: Vec<Candidate<'a>> = Vec::with_capacity(raw.len());
    for c in raw {
        match kept.last_mut() {
            Some(best) if best.addr == c.addr => {
                if !c.plt && (best.plt || perf_prefers(best, &c, demangle_names)) {
                    *best = c;
                }
            }
            _ => kept.push(c),
        }
    }
    kept
}

/// ARM and AArch64 mapping symbols (`$a`, `$d`, `$t`, `$x`, alone or with
/// a `.suffix`): they mark code and data inside functions, name none.
fn is_arm_mapping_symbol(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2 && b[0] == b'$' && b"adtx".contains(&b[1]) && (b.len() == 2 || b[2] == b'.')
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
    /// Function symbols of `.dynsym` (`dynamic`) or `.symtab`, and the
    /// named PLT stubs `plt` (where no symbol starts). Of several symbols
    /// at one address the one perf keeps is kept ([`perf_prefers`]),
    /// comparing the demangled names when `demangle_names` is set, as perf
    /// compares the names it shows. Also says how many of the symbols
    /// kept are the table's own (not PLT stubs).
    pub(crate) fn from_object(
        obj: &object::File<'_>,
        dynamic: bool,
        plt: &[PltEntry],
        demangle_names: bool,
    ) -> (SymbolTable, usize) {
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
        let arm = matches!(obj.architecture(), Architecture::Aarch64 | Architecture::Arm);
        let mut raw: Vec<Candidate<'_>> = Vec::new();
        let symbols = if dynamic { obj.dynamic_symbols() } else { obj.symbols() };
        for sym in symbols {
            // As perf reads a table: functions (`STT_FUNC`, `STT_GNU_IFUNC`)
            // and labels (`STT_NOTYPE`, of any size) defined in a code
            // section. (`object`'s `is_definition` leaves out IFUNCs and
            // size-0 labels.)
            let SymbolFlags::Elf { st_info, .. } = sym.flags() else { continue };
            if !matches!(st_info.st_type(), STT_FUNC | STT_GNU_IFUNC | STT_NOTYPE) {
                continue;
            }
            // Only symbols of a regular section have an index here.
            let Some(index) = sym.section_index() else { continue };
            let Some(&(true, _, sec_end)) = sections.get(index.0) else { continue };
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() || (arm && is_arm_mapping_symbol(name)) {
                continue;
            }
            let bind = st_info.st_bind();
            raw.push(Candidate { addr: sym.address(), size: sym.size(), sec_end, name, bind, plt: false });
        }
        let mut kept = one_per_address(raw, demangle_names);
        let own = kept.len();
        // The stubs, named now that the functions an IFUNC stub names are known.
        let plt_names: Vec<String> = plt
            .iter()
            .map(|e| {
                e.name(|at| {
                    let i = kept.binary_search_by_key(&at, |c| c.addr).ok()?;
                    Some(kept[i].name.to_owned())
                })
            })
            .collect();
        let mut raw: Vec<Candidate<'_>> = kept;
        for (e, name) in plt.iter().zip(&plt_names) {
            let end = e.start.saturating_add(e.size);
            raw.push(Candidate { addr: e.start, size: e.size, sec_end: end, name, bind: STB_GLOBAL, plt: true });
        }
        kept = one_per_address(raw, demangle_names);
        let mut starts = Vec::with_capacity(kept.len());
        let mut ends = Vec::with_capacity(kept.len());
        let mut raw_names = NameList::default();
        for (i, c) in kept.iter().enumerate() {
            let end = if c.size > 0 {
                c.addr.saturating_add(c.size)
            } else {
                let next = kept.get(i + 1).map_or(u64::MAX, |r| r.addr);
                next.min(c.sec_end).max(c.addr)
            };
            starts.push(c.addr);
            ends.push(end);
            raw_names.push(c.name);
        }
        let names = (0..starts.len()).map(|_| OnceLock::new()).collect();
        (SymbolTable { starts, ends, raw_names, names }, own)
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

    /// A perf map's symbols: starts (sorted, distinct), ends and names.
    pub(crate) fn from_perf_map((starts, ends, raw_names): (Vec<u64>, Vec<u64>, NameList)) -> SymbolTable {
        let names = starts.iter().map(|_| OnceLock::new()).collect();
        SymbolTable { starts, ends, raw_names, names }
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

    /// The name of symbol `index` shown as `names` says, as
    /// [`SymbolTable::name`] gives it, without making a shared copy of a
    /// name that demangling leaves as it is.
    pub(crate) fn name_str(&self, index: usize, names: Names) -> &str {
        let raw = self.raw_names.get(index).unwrap_or_default();
        if names != Names::Raw && may_be_mangled(raw) {
            self.names[index].get_or_init(|| Arc::from(shown(raw, names)))
        } else {
            raw
        }
    }

    /// The name of symbol `index` shown as `names` says.
    pub(crate) fn name(&self, index: usize, names: Names) -> Arc<str> {
        self.names[index].get_or_init(|| Arc::from(shown(self.raw_names.get(index).unwrap_or_default(), names))).clone()
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

    /// The name kept of symbols at one address, given as (name, size,
    /// binding) in table order.
    fn kept(symbols: &[(&str, u64, SymbolBind)], demangle_names: bool) -> String {
        let raw = symbols
            .iter()
            .map(|&(name, size, bind)| Candidate { addr: 0x100, size, sec_end: 0x1000, name, bind, plt: false })
            .collect();
        let kept = one_per_address(raw, demangle_names);
        assert_eq!(kept.len(), 1);
        kept[0].name.to_owned()
    }

    #[test]
    fn aliases_are_narrowed_as_perf_does() {
        use object::elf::{STB_GNU_UNIQUE, STB_LOCAL};
        let (g, w, l) = (STB_GLOBAL, STB_WEAK, STB_LOCAL);
        // glibc 2.36's `.symtab` (libc6-dbg), in table order: weak loses
        // to local and global, then global wins, then the longer name.
        assert_eq!(kept(&[("__GI__IO_puts", 405, l), ("puts", 405, w), ("_IO_puts", 405, g)], true), "_IO_puts");
        assert_eq!(kept(&[("__brk", 52, l), ("brk", 52, w)], true), "__brk");
        let fstatat = [
            ("__fstatat", 42, l),
            ("__GI___fstatat", 42, l),
            ("__GI___fstatat64", 42, l),
            ("__fstatat64", 42, l),
            ("fstatat64", 42, w),
            ("fstatat", 42, w),
        ];
        assert_eq!(kept(&fstatat, true), "__GI___fstatat64");
        // `.dynsym` of the same library: global over weak.
        assert_eq!(kept(&[("puts", 405, w), ("_IO_puts", 405, g)], true), "_IO_puts");
        // A size first, before any binding.
        assert_eq!(kept(&[("a", 0, g), ("b", 8, l)], true), "b");
        assert_eq!(kept(&[("b", 8, w), ("a", 0, g)], true), "b");
        // A unique symbol is not global: the local-like side.
        assert_eq!(kept(&[("u", 8, STB_GNU_UNIQUE), ("__g", 8, g)], true), "__g");
        assert_eq!(kept(&[("u", 8, STB_GNU_UNIQUE), ("w", 8, w)], true), "u");
        // Fewer underscores, then the longer name, then the first...
        assert_eq!(kept(&[("__x", 8, g), ("_yy", 8, g)], true), "_yy");
        assert_eq!(kept(&[("ab", 8, g), ("abc", 8, g)], true), "abc");
        assert_eq!(kept(&[("abc", 8, g), ("xyz", 8, g)], true), "abc");
        // ...but not a kernel `SyS` alias.
        assert_eq!(kept(&[("SyS_read", 8, g), ("sys_read", 8, g)], true), "sys_read");
        assert_eq!(kept(&[("compat_SyS_x", 8, g), ("compat_sys_x", 8, g)], true), "compat_sys_x");
        // Names compare as shown: demangled as perf shows it, `foo::bar`
        // has no underscore and 8 bytes; raw, `_ZN3foo3barEv` has one.
        assert_eq!(kept(&[("foo_bar", 8, g), ("_ZN3foo3barEv", 8, g)], true), "_ZN3foo3barEv");
        assert_eq!(kept(&[("foo_bar", 8, g), ("_ZN3foo3barEv", 8, g)], false), "foo_bar");
    }

    #[test]
    fn plt_stubs_fill_addresses_no_symbol_starts_at() {
        let c = |addr, name, plt| Candidate { addr, size: 16, sec_end: addr + 16, name, bind: STB_GLOBAL, plt };
        let kept = one_per_address(vec![c(0x20, "f", false), c(0x10, "sin@plt", true), c(0x20, "g@plt", true)], true);
        let names: Vec<(u64, &str)> = kept.iter().map(|c| (c.addr, c.name)).collect();
        assert_eq!(names, vec![(0x10, "sin@plt"), (0x20, "f")]);
        assert!(is_arm_mapping_symbol("$x") && is_arm_mapping_symbol("$d.12") && !is_arm_mapping_symbol("$xyz"));
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
