//! How a sampled address becomes an ELF virtual address: the three ways a
//! profile can describe where a module was mapped ([`Mapping`]), each turned
//! into a `p_vaddr`-relative address with the file's [`Layout`]. Pure
//! arithmetic: no I/O.

use crate::elf::{ElfKind, Layout, Segment};

/// The page size assumed when a program header is aligned down to the page
/// the kernel mapped it from.
const PAGE: u64 = 4096;

/// Where a module sat in the address space, as the profile recorded it. The
/// caller picks the variant that matches its source; docs/SYMBOLS.md has the
/// formulas with examples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mapping {
    /// The map starts where the executable (`PF_X`) `PT_LOAD` segment was
    /// mapped: the ELF sampler's VM maps. `vaddr = pc − map_start + p_vaddr`
    /// of the first executable segment, `p_vaddr` taken page-aligned as the
    /// map start is (a no-op for the page-aligned code segments linkers make).
    ExecSegment {
        /// The start of the map.
        map_start: u64,
    },
    /// A perf-style mapping: the map's start and the file offset it maps
    /// (`pgoff`, from `/proc/PID/maps` or `PERF_RECORD_MMAP2`).
    /// `vaddr = pc − map_start + pgoff − (p_offset − p_vaddr)` of the segment
    /// holding `pgoff`.
    FileOffset {
        /// The start of the map.
        map_start: u64,
        /// The file offset mapped at `map_start`.
        pgoff: u64,
    },
    /// A load base: where the file's lowest `PT_LOAD` segment (page-aligned)
    /// was mapped, as TB5 modules written through the C API record it in
    /// `module_load_address`. `ET_DYN`: `vaddr = pc − load_base +` the lowest
    /// segment's page-aligned `p_vaddr` (0 for almost every library and PIE).
    /// `ET_EXEC` is never relocated, so `vaddr = pc` whatever the base says.
    LoadBase {
        /// The load base.
        load_base: u64,
    },
}

impl Mapping {
    /// The ELF virtual address of `pc`, or `None` when `pc` lies below the
    /// map, the arithmetic overflows, no segment fits the mapping, or the
    /// result is outside every `PT_LOAD` segment.
    pub fn to_vaddr(&self, pc: u64, layout: &Layout) -> Option<u64> {
        let vaddr = match *self {
            Mapping::ExecSegment { map_start } => {
                let seg = layout.segments.iter().find(|s| s.executable)?;
                (seg.vaddr & !(PAGE - 1)).checked_add(pc.checked_sub(map_start)?)?
            }
            Mapping::FileOffset { map_start, pgoff } => {
                let file_offset = pgoff.checked_add(pc.checked_sub(map_start)?)?;
                if !layout.offsets_known {
                    // Only a debug file is at hand: its `p_offset`s are not the
                    // binary's. Samples land in code, so take the map to be
                    // the executable segment's.
                    return Mapping::ExecSegment { map_start }.to_vaddr(pc, layout);
                }
                let seg = segment_for_offset(&layout.segments, file_offset, pgoff)?;
                let v = i128::from(file_offset) - i128::from(seg.offset) + i128::from(seg.vaddr);
                u64::try_from(v).ok()?
            }
            Mapping::LoadBase { load_base } => match layout.kind {
                ElfKind::Executable => pc,
                ElfKind::Dynamic | ElfKind::Other => {
                    let lowest = layout.segments.iter().map(|s| s.vaddr).min()?;
                    (lowest & !(PAGE - 1)).checked_add(pc.checked_sub(load_base)?)?
                }
            },
        };
        layout.contains(vaddr).then_some(vaddr)
    }
}

/// A run of sampled addresses that [`Mapping::to_vaddr`] moves by one
/// shift: the code segment of a mapped module. A lookup inside it is a
/// subtraction and one compare, where `to_vaddr` searches the segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CodeSpan {
    /// The first sampled address of the run.
    pc: u64,
    /// Its length in bytes (at least 1).
    len: u64,
    /// The ELF virtual address of `pc`.
    vaddr: u64,
}

impl CodeSpan {
    /// The ELF virtual address of `pc`, when `pc` is in the run: what
    /// [`Mapping::to_vaddr`] gives there.
    #[inline]
    pub(crate) fn vaddr(&self, pc: u64) -> Option<u64> {
        let off = pc.wrapping_sub(self.pc);
        (off < self.len).then(|| self.vaddr + off)
    }

    /// How far the run is moved from its ELF virtual addresses
    /// (`pc − vaddr`), when that is not negative: what a loader calls the
    /// module's bias, the address of ELF virtual address 0.
    pub(crate) fn bias(&self) -> Option<u64> {
        self.pc.checked_sub(self.vaddr)
    }
}

impl Mapping {
    /// The run of sampled addresses that this mapping sends into the first
    /// executable segment of `layout` by one shift (`None` when there is
    /// no such segment, or the arithmetic would overflow). Every address in
    /// it gets the same answer from [`CodeSpan::vaddr`] as from
    /// [`Mapping::to_vaddr`]; addresses outside it take `to_vaddr`.
    pub(crate) fn code_span(&self, layout: &Layout) -> Option<CodeSpan> {
        let seg = layout.segments.iter().find(|s| s.executable)?;
        // vaddr = page(seg) + pc − map_start for pc ≥ map_start, kept to
        // the segment's memory image (which `Layout::contains` accepts).
        let shifted = |map_start: u64, page: u64| {
            Some(CodeSpan {
                pc: map_start.checked_add(seg.vaddr.checked_sub(page)?)?,
                len: seg.memsz,
                vaddr: seg.vaddr,
            })
        };
        let span = match *self {
            Mapping::ExecSegment { map_start } => shifted(map_start, seg.vaddr & !(PAGE - 1))?,
            Mapping::FileOffset { map_start, .. } if !layout.offsets_known => {
                return Mapping::ExecSegment { map_start }.code_span(layout);
            }
            Mapping::FileOffset { map_start, pgoff } => {
                // Offsets in this segment's file range resolve to it (the
                // executable segments are tried first, in order), at or above
                // `pgoff` (pc ≥ map_start), within its memory image.
                let lo = seg.offset.max(pgoff);
                let hi = seg.offset.checked_add(seg.filesz.min(seg.memsz))?;
                CodeSpan {
                    pc: map_start.checked_add(lo.checked_sub(pgoff)?)?,
                    len: hi.checked_sub(lo)?,
                    vaddr: seg.vaddr.checked_add(lo - seg.offset)?,
                }
            }
            Mapping::LoadBase { .. } if layout.kind == ElfKind::Executable => {
                CodeSpan { pc: seg.vaddr, len: seg.memsz, vaddr: seg.vaddr }
            }
            Mapping::LoadBase { load_base } => {
                let lowest = layout.segments.iter().map(|s| s.vaddr).min()?;
                shifted(load_base, lowest & !(PAGE - 1))?
            }
        };
        // Both ends must stay in range for the shift to hold throughout.
        span.pc.checked_add(span.len)?;
        span.vaddr.checked_add(span.len)?;
        (span.len > 0).then_some(span)
    }
}

/// The segment of a pc at `file_offset` in a map of file offset `pgoff`:
/// the one whose file range holds `file_offset` (executable ones first, as
/// samples hit code), else the one holding `pgoff`, else one whose first page
/// holds `pgoff` (a segment whose `p_offset` is not page-aligned is mapped
/// from the page below it).
fn segment_for_offset(segments: &[Segment], file_offset: u64, pgoff: u64) -> Option<&Segment> {
    let holds = |at: u64| move |s: &&Segment| at >= s.offset && at - s.offset < s.filesz.max(1);
    let page_of = |s: &&Segment| {
        let align = if s.align.is_power_of_two() { s.align.max(PAGE) } else { PAGE };
        pgoff >= s.offset & !(align - 1) && pgoff < s.offset.saturating_add(s.filesz.max(1))
    };
    let exec = || segments.iter().filter(|s| s.executable);
    exec()
        .find(holds(file_offset))
        .or_else(|| segments.iter().find(holds(file_offset)))
        .or_else(|| exec().find(holds(pgoff)))
        .or_else(|| segments.iter().find(holds(pgoff)))
        .or_else(|| exec().find(page_of))
        .or_else(|| segments.iter().find(page_of))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(vaddr: u64, offset: u64, size: u64, executable: bool) -> Segment {
        Segment { vaddr, memsz: size, offset, filesz: size, align: 0x1000, executable }
    }

    /// A typical PIE: r--, r-x, r--, rw- segments.
    fn pie() -> Layout {
        Layout {
            kind: ElfKind::Dynamic,
            offsets_known: true,
            segments: vec![
                seg(0, 0, 0x628, false),
                seg(0x1000, 0x1000, 0x1b5, true),
                seg(0x2000, 0x2000, 0x10c, false),
                seg(0x3db8, 0x2db8, 0x258, false),
            ],
        }
    }

    #[test]
    fn exec_segment_start() {
        let m = Mapping::ExecSegment { map_start: 0x5555_5555_5000 };
        assert_eq!(m.to_vaddr(0x5555_5555_5139, &pie()), Some(0x1139));
        assert_eq!(m.to_vaddr(0x5555_5555_4fff, &pie()), None, "below the map");
    }

    #[test]
    fn file_offset() {
        let m = Mapping::FileOffset { map_start: 0x7f00_0000_1000, pgoff: 0x1000 };
        assert_eq!(m.to_vaddr(0x7f00_0000_1139, &pie()), Some(0x1139));
        // Without `-z separate-code` the first page holds both the code and
        // the start of the data segment: the executable one is meant.
        let old = Layout {
            kind: ElfKind::Dynamic,
            offsets_known: true,
            segments: vec![seg(0, 0, 0x8d4, true), seg(0x20_0db8, 0xdb8, 0x258, false)],
        };
        let text = Mapping::FileOffset { map_start: 0x7f00_0000_0000, pgoff: 0 };
        assert_eq!(text.to_vaddr(0x7f00_0000_0500, &old), Some(0x500));
        // A map of the data segment's page (p_offset 0xdb8 lies in page 0 too,
        // but page 0 is taken by the code): a later page is unambiguous.
        let data_only = Layout {
            kind: ElfKind::Dynamic,
            offsets_known: true,
            segments: vec![seg(0x20_1db8, 0x1db8, 0x258, false)],
        };
        let data = Mapping::FileOffset { map_start: 0x7f00_0020_1000, pgoff: 0x1000 };
        assert_eq!(data.to_vaddr(0x7f00_0020_1dc0, &data_only), Some(0x20_1dc0));
    }

    #[test]
    fn file_offset_of_an_unaligned_code_segment() {
        // lld and rustc binaries: code at p_offset 0x7e060, p_vaddr 0x7f060;
        // /proc/PID/maps shows the map from file page 0x7e000 at base + 0x7f000.
        let rust = Layout {
            kind: ElfKind::Dynamic,
            offsets_known: true,
            segments: vec![seg(0, 0, 0x7e054, false), seg(0x7f060, 0x7e060, 0x15c960, true)],
        };
        let m = Mapping::FileOffset { map_start: 0x5600_0007_f000, pgoff: 0x7e000 };
        assert_eq!(m.to_vaddr(0x5600_0009_4a91, &rust), Some(0x94a91));
    }

    #[test]
    fn file_offset_with_a_debug_file_only() {
        // `--only-keep-debug` zeroes the offsets: the map is taken to be the code's.
        let debug = Layout {
            kind: ElfKind::Dynamic,
            offsets_known: false,
            segments: vec![seg(0, 0, 0x420, false), Segment { filesz: 0, ..seg(0x1000, 0, 0x109, true) }],
        };
        let m = Mapping::FileOffset { map_start: 0x7f00_0000_1000, pgoff: 0x1000 };
        assert_eq!(m.to_vaddr(0x7f00_0000_1010, &debug), Some(0x1010));
    }

    #[test]
    fn load_base() {
        let m = Mapping::LoadBase { load_base: 0x7f00_0000_0000 };
        assert_eq!(m.to_vaddr(0x7f00_0000_1139, &pie()), Some(0x1139));
        let exec = Layout {
            kind: ElfKind::Executable,
            offsets_known: true,
            segments: vec![seg(0x40_1000, 0x1000, 0x200, true)],
        };
        assert_eq!(m.to_vaddr(0x40_1010, &exec), Some(0x40_1010), "ET_EXEC ignores the base");
        assert_eq!(m.to_vaddr(0x7f00_0000_9000, &pie()), None, "past every segment");
    }

    fn any_segment() -> impl proptest::strategy::Strategy<Value = Segment> {
        use proptest::prelude::*;
        // Small values, so mappings, segments and samples meet often; a
        // few huge ones, for the overflow checks.
        let at = prop_oneof![4 => 0u64..0x6000, 1 => (u64::MAX - 0x6000)..=u64::MAX];
        (at.clone(), at, 0u64..0x3000, 0u64..0x3000, prop_oneof![Just(0x1000u64), Just(0), Just(3)], any::<bool>())
            .prop_map(|(vaddr, offset, memsz, filesz, align, executable)| Segment {
                vaddr,
                memsz,
                offset,
                filesz,
                align,
                executable,
            })
    }

    proptest::proptest! {
        /// Inside a code span, the shift gives what `to_vaddr` gives, for
        /// every kind of mapping and file; a span exists for the usual ones.
        #[test]
        fn a_code_span_agrees_with_to_vaddr(
            segments in proptest::collection::vec(any_segment(), 0..4),
            kind in 0u8..3,
            offsets_known: bool,
            (variant, start, pgoff) in (0u8..3, 0u64..0x8000, 0u64..0x6000),
            probes in proptest::collection::vec(0u64..0x10000, 1..40),
        ) {
            let kind = [ElfKind::Executable, ElfKind::Dynamic, ElfKind::Other][kind as usize];
            let layout = Layout { kind, segments, offsets_known };
            let m = match variant {
                0 => Mapping::ExecSegment { map_start: start },
                1 => Mapping::FileOffset { map_start: start, pgoff },
                _ => Mapping::LoadBase { load_base: start },
            };
            if let Some(span) = m.code_span(&layout) {
                let ends = [span.pc, span.pc + span.len - 1, span.pc.wrapping_sub(1), span.pc + span.len];
                for pc in probes.iter().map(|p| span.pc.wrapping_add(p % (span.len + 2)).wrapping_sub(1)).chain(ends) {
                    if let Some(v) = span.vaddr(pc) {
                        proptest::prop_assert_eq!(m.to_vaddr(pc, &layout), Some(v), "pc {:#x} in {:?}", pc, span);
                    }
                }
            }
        }
    }

    #[test]
    fn code_spans_of_the_usual_mappings() {
        let pie = pie();
        let span = Mapping::ExecSegment { map_start: 0x5555_5555_5000 }.code_span(&pie).unwrap();
        assert_eq!((span.vaddr(0x5555_5555_5000), span.vaddr(0x5555_5555_51b5)), (Some(0x1000), None));
        let span = Mapping::FileOffset { map_start: 0x7f00_0000_1000, pgoff: 0x1000 }.code_span(&pie).unwrap();
        assert_eq!(span.vaddr(0x7f00_0000_1139), Some(0x1139));
        let span = Mapping::LoadBase { load_base: 0x7f00_0000_0000 }.code_span(&pie).unwrap();
        assert_eq!((span.vaddr(0x7f00_0000_1139), span.vaddr(0x7f00_0000_0fff)), (Some(0x1139), None));
        let data_only = Layout { segments: vec![seg(0, 0, 0x628, false)], ..pie };
        assert_eq!(Mapping::LoadBase { load_base: 0 }.code_span(&data_only), None);
    }
}
