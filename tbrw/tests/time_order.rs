//! The data section's "time order" flag (docs/FORMAT.md, "Directory"): set
//! by the writer when no record's time goes below its predecessor's,
//! whatever pieces the records arrive in, and checked by `verify`.

use tbrw::*;

fn descs(size: u32) -> Vec<DescEntry> {
    vec![
        DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() },
        DescEntry { desc_type: desc_type::TIME_STAMP, data_size: size, ..Default::default() },
    ]
}

fn record(ip: u64, t: u64, size: u32) -> Vec<u8> {
    let mut r = ip.to_le_bytes().to_vec();
    r.extend_from_slice(&t.to_le_bytes()[..size as usize]);
    r
}

/// Writes `times` as records (in pieces: whole records, one field at a
/// time, or all at once through a reader), returns the flag read back.
fn flag(times: &[u64], size: u32, how: u8) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tb5");
    let mut w = Tb5Writer::create(&path).unwrap();
    let mut s = w.stream(0).unwrap().info(&StreamInfo::default()).unwrap().data_descriptor(&descs(size)).unwrap();
    {
        let mut d = s.data().unwrap();
        let all: Vec<u8> = times.iter().flat_map(|&t| record(7, t, size)).collect();
        match how {
            0 => times.iter().for_each(|&t| d.add(&record(7, t, size)).unwrap()),
            1 => times.iter().for_each(|&t| {
                let r = record(7, t, size);
                d.add(&r[..8]).unwrap();
                d.add(&r[8..]).unwrap();
            }),
            _ => {
                // Chunks that cut the time field: a reader of 5 bytes a read.
                struct Fives<'a>(&'a [u8]);
                impl std::io::Read for Fives<'_> {
                    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                        let n = self.0.len().min(5).min(buf.len());
                        buf[..n].copy_from_slice(&self.0[..n]);
                        self.0 = &self.0[n..];
                        Ok(n)
                    }
                }
                d.add_from_reader(&mut Fives(&all)).unwrap();
            }
        }
        d.done().unwrap();
    }
    s.finish().unwrap();
    w.close().unwrap();
    let f = Tb5File::open(&path).unwrap();
    let ordered = f.stream(0).unwrap().data().unwrap().unwrap().time_ordered();
    assert_eq!(f.stream(0).unwrap().data().unwrap().unwrap().len(), times.len() as u64);
    ordered
}

#[test]
fn the_writer_marks_records_in_time_order_in_any_pieces() {
    for how in 0..3 {
        for size in [4, 8] {
            assert!(flag(&[1, 2, 2, 5, 1 << 30], size, how), "{how} {size}");
            assert!(!flag(&[1, 3, 2, 5], size, how), "{how} {size}");
            assert!(!flag(&[1, 2, 3, 4, 5, 6, 0], size, how), "{how} {size}");
            assert!(flag(&[9], size, how), "{how} {size}");
        }
    }
    // A big time in the high bytes going back in the low ones only.
    assert!(!flag(&[0x1_0000_0000, 0xFFFF_FFFF], 8, 2));
}
