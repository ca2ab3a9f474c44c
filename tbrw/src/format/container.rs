//! The container rules, used by both the reader and the writer: the header
//! (magic, versions, checksum), the two commit slots (sealing and choosing
//! one), the directory and its entries (ranges, counts), and the layout of a
//! string block. docs/FORMAT.md describes the same rules in prose.

use std::path::Path;

use super::kind::SectionKind;
use super::raw::{DataBindRaw, DirEntryRaw, FileHeaderRaw, PidRaw, Raw, SlotRaw, StringBlockRaw, TidRaw};
use crate::model::error::{Error, Location, Result};
use crate::model::section::{BindSection, SectionRef, StreamSection};

/// The file magic: `\x89TB5\r\n\x1a\n`, so that text-mode mangling and
/// truncation to 7 bits are detected at the first byte.
pub(crate) const MAGIC: [u8; 8] = *b"\x89TB5\r\n\x1a\n";
/// The format version this library writes (= the lowest TB5 sample file
/// version the TBRW API supports, 0x10).
pub(crate) const FORMAT_VERSION: u32 = 16;
/// The lowest format version this library reads.
pub(crate) const MIN_FORMAT_VERSION: u32 = 16;
/// Size of the file header including both commit slots.
pub(crate) const HEADER_SIZE: u64 = 128;
/// Offset of commit slot A; slot B follows.
pub(crate) const SLOT_OFFSET: [u64; 2] = [64, 96];
/// Every section starts at a multiple of this.
pub(crate) const SECTION_ALIGN: u64 = 8;
/// `stream` of a directory entry that belongs to no stream.
pub(crate) const NO_STREAM: u32 = u32::MAX;
/// Directory entry flag of a data section: the writer read the time of
/// every record as it was added ([`crate::RecordLayout::time_at`]) and no
/// record's is below its predecessor's, so readers may seek by time.
pub(crate) const FLAG_TIME_ORDERED: u16 = 1;

/// The header checksum covers bytes `0..60`; the checksum itself follows.
const HEADER_CRC_END: usize = 60;
/// A slot's checksum covers its bytes `0..28`; the checksum itself follows.
const SLOT_CRC_END: usize = 28;
/// Bytes per entry of the module and thread bind sections (a `u64` process index).
const PID_INDEX_SIZE: usize = 8;

/// `x` rounded up to the next section start.
pub(crate) fn align(x: u64) -> u64 {
    x.div_ceil(SECTION_ALIGN) * SECTION_ALIGN
}

/// Whether a stored checksum matches. Fuzzing builds (`--cfg fuzzing`)
/// accept any, so the fuzzer reaches the decoders behind the checksums
/// instead of spending every input on a mismatch.
pub(crate) fn crc_matches(stored: u32, computed: u32) -> bool {
    cfg!(fuzzing) || stored == computed
}

/// Writes the checksum of `bytes[..end]` into `bytes[end..end + 4]`.
fn seal(mut bytes: Vec<u8>, end: usize) -> Vec<u8> {
    let crc = crc32fast::hash(&bytes[..end]);
    bytes[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    bytes
}

/// The first [`HEADER_SIZE`] bytes of a new file: the sealed header and two
/// empty commit slots.
pub(crate) fn new_header() -> Vec<u8> {
    let header = FileHeaderRaw {
        magic: MAGIC,
        format_version: FORMAT_VERSION,
        min_reader_version: MIN_FORMAT_VERSION,
        header_size: HEADER_SIZE as u32,
        flags: 0,
        reserved: [0; 9],
        crc: 0,
    };
    let mut bytes = seal(header.encode(), HEADER_CRC_END);
    bytes.resize(HEADER_SIZE as usize, 0);
    bytes
}

/// The sealed bytes of the commit slot of a directory of `entries` entries
/// written at `dir_offset`.
pub(crate) fn commit_slot(generation: u64, dir_offset: u64, dir: &[u8], entries: u32) -> Result<Vec<u8>> {
    let slot = SlotRaw {
        generation,
        dir_offset,
        dir_length: u32::try_from(dir.len()).map_err(|_| Error::bad("directory larger than 4 GiB"))?,
        dir_entries: entries,
        dir_crc: crc32fast::hash(dir),
        crc: 0,
    };
    Ok(seal(slot.encode(), SLOT_CRC_END))
}

fn header_at(path: &Path, offset: u64) -> Location {
    Location { file: path.to_owned(), section: SectionRef::Header, record: None, offset }
}

/// Checks the header: magic, checksum, versions and size.
pub(crate) fn check_header(path: &Path, bytes: &[u8]) -> Result<()> {
    let len = bytes.len() as u64;
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        let what = if bytes.len() < MAGIC.len() {
            format!("the file is {} bytes long, too short for the magic", bytes.len())
        } else {
            format!("magic is {:02x?}, expected {:02x?}", &bytes[..MAGIC.len()], MAGIC)
        };
        return Err(Error::NotTb5 { path: path.to_owned(), what });
    }
    if len < HEADER_SIZE {
        return Err(Error::malformed(
            header_at(path, len),
            format!("the file ends at byte {len}, inside the {HEADER_SIZE}-byte header"),
        ));
    }
    let header =
        FileHeaderRaw::decode(bytes).ok_or_else(|| Error::malformed(header_at(path, 0), "undecodable header"))?;
    let computed = crc32fast::hash(&bytes[..HEADER_CRC_END]);
    if !crc_matches(header.crc, computed) {
        return Err(Error::Checksum { at: Box::new(header_at(path, 0)), stored: header.crc, computed });
    }
    if header.format_version < MIN_FORMAT_VERSION || header.min_reader_version > FORMAT_VERSION {
        return Err(Error::IncompatibleVersion {
            path: path.to_owned(),
            found: header.format_version,
            min: MIN_FORMAT_VERSION,
            max: FORMAT_VERSION,
        });
    }
    if u64::from(header.header_size) != HEADER_SIZE {
        return Err(Error::malformed(
            header_at(path, 16),
            format!("header size {} is not {HEADER_SIZE}", header.header_size),
        ));
    }
    Ok(())
}

/// The commits whose slot is completely written, newest first, each with
/// the slot that holds it (0 = A, 1 = B). A torn slot (bad slot checksum)
/// is what an interrupted commit leaves, or what a reader sees of a slot
/// being written: it is skipped. `head` holds the header and both slots,
/// and must be the caller's own copy, not a view of a file that can change
/// meanwhile: each slot is decoded and checksummed from the same bytes, so
/// a slot rewritten while it is read is torn here, never a mix of two
/// commits that passes the check.
pub(crate) fn commit_slots(path: &Path, head: &[u8]) -> Result<Vec<(SlotRaw, usize)>> {
    let mut slots = Vec::with_capacity(2);
    for (i, at) in SLOT_OFFSET.into_iter().enumerate() {
        let Some(bytes) = head.get(at as usize..at as usize + SlotRaw::SIZE) else { continue };
        let s = SlotRaw::decode(bytes).unwrap_or_default();
        if s.generation == 0 || !crc_matches(s.crc, crc32fast::hash(&bytes[..SLOT_CRC_END])) {
            continue;
        }
        slots.push((s, i));
    }
    slots.sort_by_key(|(s, _)| std::cmp::Reverse(s.generation));
    if slots.is_empty() {
        return Err(Error::malformed(
            header_at(path, SLOT_OFFSET[0]),
            "no complete commit: both commit slots are empty or torn",
        ));
    }
    Ok(slots)
}

/// The directory bytes the slot in `slot_index` points at, checked against
/// `bytes` (the file as mapped) and the slot's checksum. A commit writes
/// its directory before the slot that points at it, so for a slot read
/// before `bytes` were sized this fails only when writes were lost (a power
/// loss, damage): the reader then falls back to the older commit.
pub(crate) fn directory_bytes<'a>(path: &Path, bytes: &'a [u8], slot: &SlotRaw, slot_index: usize) -> Result<&'a [u8]> {
    let len = bytes.len() as u64;
    let at = header_at(path, SLOT_OFFSET[slot_index]);
    let dir_end = slot.dir_offset.checked_add(u64::from(slot.dir_length));
    if slot.dir_offset < HEADER_SIZE || dir_end.is_none_or(|e| e > len) {
        return Err(Error::malformed(
            at,
            format!(
                "directory at byte {} ({} bytes) lies outside the {len}-byte file",
                slot.dir_offset, slot.dir_length
            ),
        ));
    }
    if u64::from(slot.dir_length) != u64::from(slot.dir_entries) * DirEntryRaw::SIZE as u64 {
        return Err(Error::malformed(
            at,
            format!("directory of {} bytes cannot hold {} entries", slot.dir_length, slot.dir_entries),
        ));
    }
    let dir = &bytes[slot.dir_offset as usize..(slot.dir_offset + u64::from(slot.dir_length)) as usize];
    let computed = crc32fast::hash(dir);
    if !crc_matches(slot.dir_crc, computed) {
        return Err(Error::Checksum {
            at: Box::new(Location { section: SectionRef::Directory, offset: slot.dir_offset, ..header_at(path, 0) }),
            stored: slot.dir_crc,
            computed,
        });
    }
    Ok(dir)
}

/// Entry `i` of a directory checked by [`directory_bytes`].
pub(crate) fn dir_entry(dir: &[u8], i: usize) -> DirEntryRaw {
    DirEntryRaw::decode(&dir[i * DirEntryRaw::SIZE..]).unwrap_or_default()
}

/// Bytes per entry of a bind section.
pub(crate) fn bind_entry_size(b: BindSection) -> Option<usize> {
    match b {
        BindSection::Data => Some(DataBindRaw::SIZE),
        BindSection::Modules | BindSection::TidBinds => Some(PID_INDEX_SIZE),
        BindSection::Processes => Some(PidRaw::SIZE),
        BindSection::Threads => Some(TidRaw::SIZE),
        // Its entries' size is in its head (format::packed_bind).
        BindSection::PackedData => None,
    }
}

/// Checks that a directory entry's bytes are an aligned range between the
/// header and the directory at `dir_offset`. Returns what is wrong.
pub(crate) fn check_entry_range(e: &DirEntryRaw, dir_offset: u64) -> Result<(), String> {
    if e.offset < HEADER_SIZE
        || !e.offset.is_multiple_of(SECTION_ALIGN)
        || e.offset.checked_add(e.length).is_none_or(|x| x > dir_offset)
    {
        return Err(format!(
            "section at byte {} ({} bytes) is not an aligned range between the header and the directory",
            e.offset, e.length
        ));
    }
    Ok(())
}

/// Checks that a data or bind section's length is its `count` whole
/// entries (other kinds have no fixed entry size). Returns what is wrong.
pub(crate) fn check_entry_count(e: &DirEntryRaw) -> Result<(), String> {
    match SectionKind::from_code(e.kind) {
        SectionKind::Stream(StreamSection::Data)
            if e.record_size == 0 || e.count.checked_mul(u64::from(e.record_size)) != Some(e.length) =>
        {
            Err(format!(
                "data section of {} bytes does not hold {} records of {} bytes",
                e.length, e.count, e.record_size
            ))
        }
        SectionKind::Bind(b) => {
            let Some(size) = bind_entry_size(b) else { return Ok(()) };
            let size = size as u64;
            if e.count.checked_mul(size) != Some(e.length) {
                return Err(format!(
                    "{} of {} bytes does not hold {} entries of {size} bytes",
                    b.name(),
                    e.length,
                    e.count
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Where the parts of one string block lie (absolute file offsets).
#[derive(Clone, Debug)]
pub(crate) struct StringBlockLayout {
    pub(crate) first_id: u64,
    pub(crate) count: u64,
    /// The `count + 1` u32 offsets, relative to the first string byte.
    pub(crate) offsets_at: u64,
    /// The first string byte.
    pub(crate) bytes_at: u64,
    pub(crate) bytes_len: u64,
}

/// The layout of the string block of directory entry `e` in `file`.
/// Returns what is wrong when the head and offsets do not fit the block.
pub(crate) fn string_block(file: &[u8], e: &DirEntryRaw) -> Result<StringBlockLayout, String> {
    let end = e.offset.saturating_add(e.length);
    let head = StringBlockRaw::decode(file.get(e.offset as usize..end as usize).unwrap_or_default())
        .ok_or_else(|| "string block shorter than its head".to_owned())?;
    let offsets_at = e.offset + StringBlockRaw::SIZE as u64;
    let bytes_at = head.count.checked_add(1).and_then(|n| n.checked_mul(4)).and_then(|o| o.checked_add(offsets_at));
    match bytes_at {
        Some(b) if b <= end && head.count == e.count => Ok(StringBlockLayout {
            first_id: head.first_id,
            count: head.count,
            offsets_at,
            bytes_at: b,
            bytes_len: end - b,
        }),
        _ => Err(format!("string block of {} strings does not fit its {} bytes", head.count, e.length)),
    }
}

/// The parts of a string block holding `strings` with ids from `first_id`:
/// the head, the offsets and the UTF-8 bytes.
pub(crate) fn encode_string_block(first_id: u64, strings: &[String]) -> Result<[Vec<u8>; 3]> {
    let mut offsets = Vec::with_capacity((strings.len() + 1) * 4);
    let mut total: u64 = 0;
    offsets.extend_from_slice(&0u32.to_le_bytes());
    for s in strings {
        total += s.len() as u64;
        let o = u32::try_from(total).map_err(|_| Error::bad("more than 4 GiB of new strings in one commit"))?;
        offsets.extend_from_slice(&o.to_le_bytes());
    }
    let mut bytes = Vec::with_capacity(total as usize);
    for s in strings {
        bytes.extend_from_slice(s.as_bytes());
    }
    let head = StringBlockRaw { first_id, count: strings.len() as u64 }.encode();
    Ok([head, offsets, bytes])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_header_passes_the_checks_and_a_flipped_bit_does_not() {
        let p = Path::new("t.tb5");
        let mut h = new_header();
        assert_eq!(h.len() as u64, HEADER_SIZE);
        check_header(p, &h).unwrap();
        h[20] ^= 1;
        assert!(matches!(check_header(p, &h), Err(Error::Checksum { .. })));
        assert!(matches!(check_header(p, b"not tb5"), Err(Error::NotTb5 { .. })));
    }

    #[test]
    fn intact_slots_come_newest_first() {
        let p = Path::new("t.tb5");
        let gens = |b: &[u8]| commit_slots(p, b).map(|v| v.iter().map(|(s, i)| (s.generation, *i)).collect::<Vec<_>>());
        let mut b = new_header();
        assert!(gens(&b).is_err(), "two empty slots");
        b[64..96].copy_from_slice(&commit_slot(3, 128, &[], 0).unwrap());
        b[96..128].copy_from_slice(&commit_slot(2, 128, &[], 0).unwrap());
        assert_eq!(gens(&b).unwrap(), [(3, 0), (2, 1)]);
        b[96..128].copy_from_slice(&commit_slot(4, 128, &[], 0).unwrap());
        assert_eq!(gens(&b).unwrap(), [(4, 1), (3, 0)]);
        b[100] ^= 0xFF; // slot B torn
        assert_eq!(gens(&b).unwrap(), [(3, 0)]);
        assert_eq!(gens(&b[..100]).unwrap(), [(3, 0)], "a short head holds slot A only");
    }

    #[test]
    fn string_blocks_round_trip_through_their_layout() {
        let strings = vec!["ab".to_owned(), String::new(), "xyz".to_owned()];
        let parts = encode_string_block(7, &strings).unwrap();
        let mut file = vec![0u8; 128];
        file.extend(parts.concat());
        let e = DirEntryRaw { offset: 128, length: file.len() as u64 - 128, count: 3, ..Default::default() };
        let l = string_block(&file, &e).unwrap();
        assert_eq!((l.first_id, l.count, l.offsets_at, l.bytes_at, l.bytes_len), (7, 3, 144, 160, 5));
        assert!(string_block(&file, &DirEntryRaw { count: 4, ..e.clone() }).is_err());
    }

    #[test]
    fn entries_outside_the_sections_area_or_of_wrong_length_are_rejected() {
        let ok = DirEntryRaw { offset: 128, length: 16, ..Default::default() };
        assert!(check_entry_range(&ok, 144).is_ok());
        assert!(check_entry_range(&DirEntryRaw { offset: 130, ..ok.clone() }, 200).is_err());
        assert!(check_entry_range(&ok, 143).is_err());
        let data =
            DirEntryRaw { kind: SectionKind::Stream(StreamSection::Data).code(), count: 2, record_size: 8, ..ok };
        assert!(check_entry_count(&data).is_ok());
        assert!(check_entry_count(&DirEntryRaw { count: 3, ..data }).is_err());
    }
}
