//! A section's bytes as the DWARF reader and the unwinder use them: a
//! range of the file's mapping, or, for a compressed section
//! (`SHF_COMPRESSED` with zlib or zstd, or the older `.zdebug_*` form), a
//! buffer decompressed as a stream within what the file can justify
//! ([`bound`]): a 16 KiB file whose header claims a 3 GiB section costs
//! nothing. A section beyond the bound, or whose compressed bytes do not
//! give the size its header claims, is skipped with a [`SectionProblem`]
//! the caller turns into a [`crate::Warning`] (docs/SYMBOLS.md,
//! "Compressed sections").

use std::fmt;
use std::io::Read;
use std::ops::Range;

use object::{CompressionFormat, ObjectSection};

/// The most a zlib (deflate) stream can expand: 1032 times, a 258-byte
/// match coded in about two bits (zlib's technical notes). No valid
/// section claims more than this times its compressed size.
pub const ZLIB_MAX_RATIO: u64 = 1032;

/// The most a zstd frame can expand: 32768 times, an RLE block (a 3-byte
/// block header and the byte) giving the largest block, 128 KiB (RFC
/// 8878, 3.1.1.2); every other block kind takes more bytes for as much.
pub const ZSTD_MAX_RATIO: u64 = 32768;

/// The most one decompressed section may take, whatever its compressed
/// size: 1 GiB. Real `.debug_info` sections of the largest programs stay
/// below it; a section beyond it is skipped, not held.
pub const MAX_DECOMPRESSED: u64 = 1 << 30;

/// The first buffer of a decompression; it grows with the data itself,
/// never to a size only the header claims.
const FIRST_BUFFER: usize = 1 << 20;

/// Why a section was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SectionProblem {
    /// Its header claims more bytes than the file can justify: more than
    /// its compressed bytes can expand to, or more than
    /// [`MAX_DECOMPRESSED`].
    TooLarge {
        /// `zlib` or `zstd`.
        format: &'static str,
        /// The compressed bytes in the file.
        compressed: u64,
        /// The uncompressed size its header claims.
        claimed: u64,
        /// The most it may take: the compressed bytes times the format's
        /// largest ratio ([`ZLIB_MAX_RATIO`], [`ZSTD_MAX_RATIO`]), at most
        /// [`MAX_DECOMPRESSED`].
        bound: u64,
    },
    /// Its compression header or compressed bytes are damaged (an unknown
    /// format, data that does not decompress to the size claimed).
    Damaged(String),
}

impl fmt::Display for SectionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SectionProblem::TooLarge { format, compressed, claimed, bound } => {
                write!(f, "its header claims {claimed} bytes from {compressed} bytes of {format}, more than ")?;
                if *bound < MAX_DECOMPRESSED {
                    write!(f, "{format} can expand them to ({bound} bytes)")
                } else {
                    write!(f, "the {MAX_DECOMPRESSED} bytes a decompressed section may take")
                }
            }
            SectionProblem::Damaged(why) => f.write_str(why),
        }
    }
}

/// The most a section of `compressed` bytes of `format` may decompress
/// to: its size times the format's largest ratio, and at most
/// [`MAX_DECOMPRESSED`].
pub fn bound(format: CompressionFormat, compressed: u64) -> u64 {
    let ratio = match format {
        CompressionFormat::Zstandard => ZSTD_MAX_RATIO,
        _ => ZLIB_MAX_RATIO,
    };
    compressed.saturating_mul(ratio).min(MAX_DECOMPRESSED)
}

/// A section's bytes.
pub(crate) enum SectionData {
    /// Stored as they are: this range of the file's bytes.
    InPlace(Range<usize>),
    /// Decompressed.
    Owned(Vec<u8>),
}

/// The bytes of `section` of a file of `file_len` bytes; `Ok(None)` when
/// it has none in the file (`SHT_NOBITS`) or its range lies outside it.
pub(crate) fn section_data(
    section: &object::Section<'_, '_>,
    file_len: usize,
) -> Result<Option<SectionData>, SectionProblem> {
    let compressed = section.compressed_data().map_err(|e| SectionProblem::Damaged(e.to_string()))?;
    if compressed.format == CompressionFormat::None {
        let Some((offset, size)) = section.file_range() else { return Ok(None) };
        let start = usize::try_from(offset).ok();
        let end = start.and_then(|s| s.checked_add(usize::try_from(size).ok()?));
        return Ok(match (start, end) {
            (Some(start), Some(end)) if end <= file_len => Some(SectionData::InPlace(start..end)),
            _ => None,
        });
    }
    let format = match compressed.format {
        CompressionFormat::Zlib => "zlib",
        CompressionFormat::Zstandard => "zstd",
        other => return Err(SectionProblem::Damaged(format!("compressed in an unknown format ({other:?})"))),
    };
    let data = compressed.data;
    let claimed = compressed.uncompressed_size;
    let bound = bound(compressed.format, data.len() as u64);
    if claimed > bound {
        return Err(SectionProblem::TooLarge { format, compressed: data.len() as u64, claimed, bound });
    }
    // `claimed <= MAX_DECOMPRESSED`, which fits a `usize` of 64 bits.
    let claimed = usize::try_from(claimed).map_err(|_| SectionProblem::Damaged("too large here".into()))?;
    let out = match compressed.format {
        CompressionFormat::Zstandard => unzstd(data, claimed),
        _ => inflate(data, claimed),
    }
    .map_err(|e| SectionProblem::Damaged(format!("its {format} data is damaged: {e}")))?;
    if out.len() != claimed {
        let got = if out.len() > claimed { "more".to_owned() } else { out.len().to_string() };
        return Err(SectionProblem::Damaged(format!(
            "its {format} data gives {got} bytes, not the {claimed} its header claims"
        )));
    }
    Ok(Some(SectionData::Owned(out)))
}

/// A buffer for `claimed` bytes, growing as data comes.
fn buffer(claimed: usize) -> Vec<u8> {
    Vec::with_capacity(claimed.min(FIRST_BUFFER))
}

/// zlib `data` decompressed, at most `claimed + 1` bytes (one more tells
/// a stream longer than claimed).
fn inflate(data: &[u8], claimed: usize) -> std::io::Result<Vec<u8>> {
    let mut out = buffer(claimed);
    flate2::read::ZlibDecoder::new(data).take(claimed as u64 + 1).read_to_end(&mut out)?;
    out.shrink_to_fit();
    Ok(out)
}

/// zstd `data` (one frame or several, as libzstd writes and reads them)
/// decompressed, at most `claimed + 1` bytes. A frame's window is its
/// decoder's history buffer: allowed up to what the section could need
/// (`claimed`) or 8 MiB (zstd's levels up to 19 use no more), whichever
/// is larger, and never past ruzstd's default bound.
fn unzstd(data: &[u8], claimed: usize) -> std::io::Result<Vec<u8>> {
    let window =
        (claimed as u64).next_power_of_two().max(8 << 20).min(ruzstd::decoding::FrameDecoder::new().max_window_size());
    let mut out = buffer(claimed);
    let mut src = data;
    while !src.is_empty() && out.len() <= claimed {
        let decoder = ruzstd::decoding::StreamingDecoder::new_with_max_window_size(&mut src, window)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
        let room = (claimed + 1 - out.len()) as u64;
        decoder.take(room).read_to_end(&mut out)?;
    }
    out.shrink_to_fit();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn bounds_follow_the_formats_ratios_and_the_cap() {
        assert_eq!(bound(CompressionFormat::Zlib, 16 << 10), (16 << 10) * 1032);
        assert_eq!(bound(CompressionFormat::Zstandard, 1 << 10), 32 << 20);
        assert_eq!(bound(CompressionFormat::Zlib, 4 << 20), MAX_DECOMPRESSED);
        assert_eq!(bound(CompressionFormat::Zlib, u64::MAX), MAX_DECOMPRESSED);
        // zlib at its best on zeros stays within the ratio the bound allows.
        let zeros = vec![0u8; 8 << 20];
        let z = zlib(&zeros);
        assert!(zeros.len() as u64 <= bound(CompressionFormat::Zlib, z.len() as u64), "{}", z.len());
    }

    #[test]
    fn streams_give_exactly_what_they_claim_or_fail() {
        let text: Vec<u8> = (0..400_000u32).map(|i| (i % 251) as u8 ^ (i >> 10) as u8).collect();
        let z = zlib(&text);
        assert_eq!(inflate(&z, text.len()).unwrap(), text);
        // Claimed shorter than the data: one byte more is read, no more.
        assert_eq!(inflate(&z, 10).unwrap().len(), 11);
        // Cut short: an error or fewer bytes, never a panic.
        assert!(inflate(&z[..z.len() / 2], text.len()).map_or(true, |o| o.len() < text.len()));
        assert!(unzstd(b"not a zstd frame", 100).is_err());
    }
}
