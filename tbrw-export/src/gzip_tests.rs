//! Tests of [`super::PipedGzip`]: one gzip member whatever the workers,
//! and a failing output an error of its own kind.

use super::*;
use std::io::Read;

/// The bytes of the first gzip member of `bytes`, and what follows it.
fn gunzip(bytes: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut d = flate2::read::GzDecoder::new(bytes);
    d.read_to_end(&mut out).unwrap();
    let rest = d.into_inner().len();
    (out, rest)
}

fn sample(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8 ^ (i >> 12) as u8).collect()
}

fn piped(input: &[u8], workers: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = PipedGzip::with_workers(&mut out, Compression::new(LEVEL), workers);
    // Odd write sizes, as a serializer's.
    for part in input.chunks(7919) {
        w.write_all(part).unwrap();
    }
    w.finish().unwrap();
    out
}

#[test]
fn the_output_is_one_member_whatever_the_workers() {
    for len in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 12_345] {
        let input = sample(len);
        let one = piped(&input, 1);
        // The same bytes on any number of workers, or none.
        for workers in [0, 2, 3] {
            assert_eq!(piped(&input, workers), one, "{len} bytes, {workers} workers");
        }
        let (text, rest) = gunzip(&one);
        assert_eq!(text, input, "{len} bytes");
        assert_eq!(rest, 0, "{len} bytes: one member, nothing after it");
        // The header a GzEncoder at the same level writes.
        let mut plain = flate2::write::GzEncoder::new(Vec::new(), Compression::new(LEVEL));
        plain.write_all(&input).unwrap();
        assert_eq!(one[..10], plain.finish().unwrap()[..10]);
        // The trailer: CRC-32 and length of the whole input.
        let n = one.len();
        assert_eq!(one[n - 8..n - 4], crc32fast::hash(&input).to_le_bytes());
        assert_eq!(one[n - 4..], (len as u32).to_le_bytes());
    }
}

#[test]
fn the_blocks_compress_about_as_one_stream_does() {
    // Text like a profile's: numbers that repeat, in no short period (a
    // block of a text with a period of a few KiB compresses to a few KiB,
    // where the block's fresh window is most of the size).
    let input: Vec<u8> = (0..6 * CHUNK / 4)
        .flat_map(|i: usize| format!("{},", i.wrapping_mul(2_654_435_761) % 9_973).into_bytes())
        .collect();
    let blocks = piped(&input, 2).len();
    let mut plain = flate2::write::GzEncoder::new(Vec::new(), Compression::new(LEVEL));
    plain.write_all(&input).unwrap();
    let whole = plain.finish().unwrap().len();
    assert!(blocks <= whole + whole / 50, "{blocks} bytes in blocks against {whole} in one stream");
}

/// The system's gzip reads the member, when there is one.
#[test]
fn gzip_itself_reads_it() {
    let input = sample(3 * CHUNK + 17);
    let bytes = piped(&input, 2);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.gz");
    std::fs::write(&path, &bytes).unwrap();
    let Ok(out) = std::process::Command::new("gzip").arg("-dc").arg(&path).output() else { return };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, input);
}

struct Full(usize);
impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0 == 0 {
            return Err(io::Error::from(io::ErrorKind::StorageFull));
        }
        let n = buf.len().min(self.0);
        self.0 -= n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_output_is_an_error_of_its_own_kind() {
    let input = sample(8 * CHUNK);
    for workers in [0, 2] {
        let mut out = Full(100_000);
        let mut w = PipedGzip::with_workers(&mut out, Compression::new(LEVEL), workers);
        let err = input
            .chunks(65_536)
            .try_for_each(|part| w.write_all(part))
            .err()
            .or_else(|| w.finish().err())
            .expect("a full disk is an error");
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    }
}
