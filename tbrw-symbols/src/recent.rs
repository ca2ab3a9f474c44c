//! [`RecentSymbols`]: the function-symbol ranges looked up lately, so that a
//! count per function over millions of samples searches a symbol table
//! only for addresses near none seen lately. Holds no names or results.

use std::ops::Range;

use crate::symtab::SymbolTable;

/// Slots of the cache: a power of two. Profiles spend most samples in a few
/// hundred functions; 4,096 slots of 24 bytes stay in a core's L2.
const SLOTS: usize = 16384;

/// Addresses in one granule of this many bytes share a slot: a function's
/// hot loop then takes a slot or two, not one per sampled address.
const GRANULE_BITS: u32 = 5;

#[derive(Clone, Copy)]
struct Slot {
    range: (u64, u64),
    file: u32,
    symbol: u32,
}

const EMPTY: Slot = Slot { range: (1, 0), file: u32::MAX, symbol: 0 };

/// The function symbols found lately and the address ranges they cover:
/// a direct-mapped cache kept by [`crate::Symbolizer`], and one per thread
/// for lookups in a [`crate::FunctionIndex`]. A hit is exact: a slot
/// answers only inside the range the symbol table gave with it.
pub struct RecentSymbols {
    slots: Box<[Slot]>,
}

impl Default for RecentSymbols {
    fn default() -> RecentSymbols {
        RecentSymbols { slots: vec![EMPTY; SLOTS].into_boxed_slice() }
    }
}

impl RecentSymbols {
    fn slot(file: u32, vaddr: u64) -> usize {
        let h = (vaddr >> GRANULE_BITS) ^ u64::from(file).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        // The product's high bits are its best mixed.
        (h.wrapping_mul(0xff51_afd7_ed55_8ccd) >> (64 - SLOTS.trailing_zeros())) as usize
    }

    /// The ordinal of the symbol holding `vaddr` in file `file`, whose
    /// table is `table` and whose symbols' ordinals start at `first`:
    /// remembered, else searched and remembered.
    pub(crate) fn symbol(&mut self, file: u32, table: &SymbolTable, first: u32, vaddr: u64) -> Option<u32> {
        if let Some(ordinal) = self.get(file, vaddr) {
            return Some(ordinal);
        }
        let (index, range) = table.lookup_range(vaddr)?;
        // The table's length fitted in the ordinals when the file got its first.
        let ordinal = first + index as u32;
        self.put(file, vaddr, range, ordinal);
        Some(ordinal)
    }

    /// The symbol (its [`crate::SymbolRef`] ordinal) of file `file`
    /// remembered for `vaddr`.
    fn get(&self, file: u32, vaddr: u64) -> Option<u32> {
        let s = self.slots[Self::slot(file, vaddr)];
        (s.file == file && s.range.0 <= vaddr && vaddr < s.range.1).then_some(s.symbol)
    }

    /// Remembers that every address of `range` of file `file` (which holds
    /// `vaddr`) has symbol `symbol`.
    fn put(&mut self, file: u32, vaddr: u64, range: Range<u64>, symbol: u32) {
        self.slots[Self::slot(file, vaddr)] = Slot { range: (range.start, range.end), file, symbol };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_only_inside_the_range_and_file_it_was_given() {
        let mut r = RecentSymbols::default();
        assert_eq!(r.get(0, 0x1000), None);
        r.put(3, 0x1010, 0x1000..0x1040, 7);
        assert_eq!(r.get(3, 0x1010), Some(7));
        assert_eq!(r.get(3, 0x1000), Some(7));
        assert_eq!(r.get(3, 0x101f), Some(7));
        // The range's next granule has a slot of its own, empty yet.
        assert_eq!(r.get(3, 0x103f), None);
        assert_eq!(r.get(4, 0x1010), None);
        // A later symbol of the same granule replaces it.
        r.put(3, 0x1018, 0x1018..0x101c, 8);
        assert_eq!(r.get(3, 0x1019), Some(8));
        assert_eq!(r.get(3, 0x1010), None);
    }
}
