//! The packed data binds section (kind 0x305, docs/FORMAT.md "Bind
//! sections"): what `dobind` stores per record instead of a 24-byte
//! `DATA_BIND_STRUCT`.
//!
//! An 8-byte head (module index width, thread index width, six zero bytes),
//! then per record the module index and the thread index, little-endian,
//! each in its width (1, 2, 4 or 8 bytes). A module index of all ones is
//! "no module". The process index is not stored: it is the thread's, which
//! the thread binds section holds. The widths are the narrowest that hold
//! the file's module count (plus the "no module" value) and the number of
//! threads the bind made. The thread count is known only at the end of the
//! bind, so [`Packer`] packs as the bind goes in the thread width the
//! threads so far need, and widens what it holds when a thread index
//! outgrows it (at most three times: 1, 2, 4, 8 bytes).

use tbrw_bind::{DataBind, UNKNOWN_MODULE};

/// Bytes of the head.
pub(crate) const HEAD_SIZE: usize = 8;

/// `$run::<M, T>($args)` with `M` and `T` the module and thread index
/// widths of `$widths` as constants: the loops over packed entries are
/// written once, generic over the widths, and monomorphised for each of
/// the 16 pairs, so that each index is one load or store of a known size.
macro_rules! with_widths {
    ($widths:expr, $run:ident($($arg:expr),*)) => {
        match ($widths.module, $widths.thread) {
            (1, 1) => $run::<1, 1>($($arg),*),
            (1, 2) => $run::<1, 2>($($arg),*),
            (1, 4) => $run::<1, 4>($($arg),*),
            (1, 8) => $run::<1, 8>($($arg),*),
            (2, 1) => $run::<2, 1>($($arg),*),
            (2, 2) => $run::<2, 2>($($arg),*),
            (2, 4) => $run::<2, 4>($($arg),*),
            (2, 8) => $run::<2, 8>($($arg),*),
            (4, 1) => $run::<4, 1>($($arg),*),
            (4, 2) => $run::<4, 2>($($arg),*),
            (4, 4) => $run::<4, 4>($($arg),*),
            (4, 8) => $run::<4, 8>($($arg),*),
            (8, 1) => $run::<8, 1>($($arg),*),
            (8, 2) => $run::<8, 2>($($arg),*),
            (8, 4) => $run::<8, 4>($($arg),*),
            (8, 8) => $run::<8, 8>($($arg),*),
            (m, t) => unreachable!("Widths are made with 1, 2, 4 or 8 bytes only, not {m} and {t}"),
        }
    };
}
pub(crate) use with_widths;

/// (module index, thread index) of a packed entry of widths `M` and `T`
/// (`entry` holds exactly `M + T` bytes), the module's all-ones "no
/// module" read as [`UNKNOWN_MODULE`]: the loops over packed entries,
/// monomorphised by [`with_widths`], read each entry with this.
#[inline(always)]
pub(crate) fn entry_at<const M: usize, const T: usize>(entry: &[u8]) -> (u64, u64) {
    let (mut m, mut t) = ([0u8; 8], [0u8; 8]);
    m[..M].copy_from_slice(&entry[..M]);
    t[..T].copy_from_slice(&entry[M..M + T]);
    let no_module = if M == 8 { u64::MAX } else { (1u64 << (8 * M)) - 1 };
    let m = u64::from_le_bytes(m);
    (if m == no_module { UNKNOWN_MODULE } else { m }, u64::from_le_bytes(t))
}

/// The index widths of a packed data binds section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Widths {
    pub(crate) module: usize,
    pub(crate) thread: usize,
}

/// The narrowest of 1, 2, 4, 8 bytes that holds every value below `limit`.
fn width_below(limit: u64) -> usize {
    [1usize, 2, 4].into_iter().find(|&w| limit <= 1u64 << (8 * w)).unwrap_or(8)
}

impl Widths {
    /// The widths for `modules` modules and `threads` threads (a bind's
    /// thread indexes are below its thread count).
    pub(crate) fn for_modules_and_threads(modules: u64, threads: u64) -> Widths {
        Widths { module: width_below(modules.saturating_add(1)), thread: width_below(threads) }
    }

    /// Bytes per record.
    pub(crate) fn entry_size(self) -> usize {
        self.module + self.thread
    }

    /// The head that starts the section.
    pub(crate) fn head(self) -> [u8; HEAD_SIZE] {
        let mut h = [0u8; HEAD_SIZE];
        h[0] = self.module as u8;
        h[1] = self.thread as u8;
        h
    }

    /// The widths a section's head states; what is wrong with it otherwise.
    pub(crate) fn from_head(bytes: &[u8]) -> Result<Widths, String> {
        let Some(h) = bytes.get(..HEAD_SIZE) else {
            return Err(format!("{} bytes is shorter than the {HEAD_SIZE}-byte head", bytes.len()));
        };
        let ok = |w: u8| matches!(w, 1 | 2 | 4 | 8);
        if !ok(h[0]) || !ok(h[1]) || h[2..].iter().any(|&b| b != 0) {
            return Err(format!("the head {h:02x?} does not state index widths of 1, 2, 4 or 8 bytes"));
        }
        Ok(Widths { module: usize::from(h[0]), thread: usize::from(h[1]) })
    }

    /// Appends the entries of `binds` to `out`.
    pub(crate) fn encode(self, binds: &[DataBind], out: &mut Vec<u8>) {
        // One loop per pair of widths, so that each entry is two stores of
        // known sizes rather than two copies of a size read at run time.
        fn run<const M: usize, const T: usize>(binds: &[DataBind], out: &mut Vec<u8>) {
            let start = out.len();
            out.resize(start + binds.len() * (M + T), 0);
            for (e, d) in out[start..].chunks_exact_mut(M + T).zip(binds) {
                // UNKNOWN_MODULE is all ones: cut to the width it is the width's all ones.
                e[..M].copy_from_slice(&d.module_index.to_le_bytes()[..M]);
                e[M..].copy_from_slice(&d.tid_index.to_le_bytes()[..T]);
            }
        }
        with_widths!(self, run(binds, out))
    }

    /// (module index, thread index) of the entry at the start of `entry`
    /// (which holds at least [`Widths::entry_size`] bytes).
    #[inline]
    pub(crate) fn decode(self, entry: &[u8]) -> Option<(u64, u64)> {
        let read = |b: &[u8]| {
            let mut x = [0u8; 8];
            x[..b.len()].copy_from_slice(b);
            u64::from_le_bytes(x)
        };
        let m = read(entry.get(..self.module)?);
        let t = read(entry.get(self.module..self.entry_size())?);
        let all_ones = if self.module == 8 { u64::MAX } else { (1u64 << (8 * self.module)) - 1 };
        Some((if m == all_ones { UNKNOWN_MODULE } else { m }, t))
    }
}

/// Packs a bind's entries as they come, in the narrowest thread width
/// their thread indexes need so far ([`Widths`]: the module width is the
/// file's), widening the entries it holds when an index outgrows it.
#[derive(Debug)]
pub(crate) struct Packer {
    widths: Widths,
    bytes: Vec<u8>,
}

impl Packer {
    /// A packer for the binds of a file of `modules` modules, with room for `records` entries.
    pub(crate) fn new(modules: u64, records: u64) -> Packer {
        let widths = Widths::for_modules_and_threads(modules, 1);
        // Reserved for the narrowest entries; a widening reallocates.
        let bytes = Vec::with_capacity(usize::try_from(records).unwrap_or(0).saturating_mul(widths.entry_size()));
        Packer { widths, bytes }
    }

    /// Packs `binds` after the entries so far.
    pub(crate) fn push(&mut self, binds: &[DataBind]) {
        let top = binds.iter().map(|b| b.tid_index).max().unwrap_or(0);
        self.widen_for(top.saturating_add(1));
        self.widths.encode(binds, &mut self.bytes);
    }

    /// An empty packer in `widths` (a part of a bind packed on its own
    /// thread, in the widths of the whole so far).
    pub(crate) fn with_widths(widths: Widths) -> Packer {
        Packer { widths, bytes: Vec::new() }
    }

    /// Empties it (keeping its buffer) to pack in `widths`.
    pub(crate) fn reset(&mut self, widths: Widths) {
        self.widths = widths;
        self.bytes.clear();
    }

    /// The widths it packs in now.
    pub(crate) fn widths(&self) -> Widths {
        self.widths
    }

    /// The entries packed so far.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The number of entries packed so far.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len() / self.widths.entry_size()
    }

    /// Appends entries packed elsewhere in `widths` ([`Widths::encode_if_fits`])
    /// if those are the widths it packs in now; returns whether it did.
    pub(crate) fn append_packed(&mut self, widths: Widths, packed: &[u8]) -> bool {
        if widths != self.widths {
            return false;
        }
        self.bytes.extend_from_slice(packed);
        true
    }

    /// Widens the thread width to hold `threads` threads, if it does not yet.
    pub(crate) fn widen_for(&mut self, threads: u64) {
        let want = Widths { thread: width_below(threads).max(self.widths.thread), ..self.widths };
        if want == self.widths {
            return;
        }
        let (old, size) = (self.widths, self.widths.entry_size());
        let mut bytes = Vec::with_capacity(self.bytes.capacity() / size * want.entry_size());
        let binds: Vec<DataBind> = self
            .bytes
            .chunks_exact(size)
            .map(|e| {
                let (module_index, tid_index) = old.decode(e).expect("whole entries");
                DataBind { module_index, pid_index: 0, tid_index }
            })
            .collect();
        want.encode(&binds, &mut bytes);
        self.widths = want;
        self.bytes = bytes;
    }

    /// The widths and the packed entries.
    pub(crate) fn finish(self) -> (Widths, Vec<u8>) {
        (self.widths, self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_are_the_narrowest_that_hold_the_counts() {
        let w = Widths::for_modules_and_threads;
        assert_eq!(w(0, 0), Widths { module: 1, thread: 1 });
        assert_eq!(w(255, 256), Widths { module: 1, thread: 1 });
        assert_eq!(w(256, 257), Widths { module: 2, thread: 2 });
        assert_eq!(w(10_000, 10_000_000), Widths { module: 2, thread: 4 });
        assert_eq!(w(65_535, 65_536), Widths { module: 2, thread: 2 });
        assert_eq!(w(65_536, 1 << 32), Widths { module: 4, thread: 4 });
        assert_eq!(w(300, 40), Widths { module: 2, thread: 1 });
        assert_eq!(w(1 << 32, (1 << 32) + 1), Widths { module: 8, thread: 8 });
    }

    #[test]
    fn entries_round_trip_and_the_head_is_checked() {
        for w in [
            Widths::for_modules_and_threads(3, 3),
            Widths::for_modules_and_threads(300, 70_000),
            Widths::for_modules_and_threads(1 << 40, 1 << 40),
        ] {
            let binds = [
                DataBind { module_index: 2, pid_index: 0, tid_index: 1 },
                DataBind { module_index: UNKNOWN_MODULE, pid_index: 0, tid_index: 2 },
            ];
            let mut out = w.head().to_vec();
            w.encode(&binds, &mut out);
            assert_eq!(Widths::from_head(&out), Ok(w));
            let body = &out[HEAD_SIZE..];
            assert_eq!(body.len(), 2 * w.entry_size());
            for (i, d) in binds.iter().enumerate() {
                assert_eq!(w.decode(&body[i * w.entry_size()..]), Some((d.module_index, d.tid_index)));
            }
        }
        assert!(Widths::from_head(&[3, 1, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(Widths::from_head(&[1, 1, 0, 0, 0, 0, 0, 9]).is_err());
        assert!(Widths::from_head(&[1, 1]).is_err());
    }

    /// A packer fed in pieces gives the entries a one-shot encode in the
    /// final widths gives, whatever thread index comes when.
    #[test]
    fn a_packer_widens_to_the_threads_it_met_and_keeps_every_entry() {
        let bind = |m: u64, t: u64| DataBind { module_index: m, pid_index: 0, tid_index: t };
        let cases: [&[&[DataBind]]; 4] = [
            &[],
            &[&[bind(1, 0), bind(UNKNOWN_MODULE, 3)]],
            &[&[bind(1, 0)], &[bind(2, 255), bind(3, 256)], &[bind(UNKNOWN_MODULE, 7)]],
            &[&[bind(4, 9)], &[bind(2, 70_000)], &[bind(3, 1 << 33), bind(1, 1)]],
        ];
        for pieces in cases {
            let mut p = Packer::new(300, 10);
            for piece in pieces {
                p.push(piece);
            }
            let all: Vec<DataBind> = pieces.iter().flat_map(|x| x.iter().copied()).collect();
            let top = all.iter().map(|b| b.tid_index + 1).max().unwrap_or(1);
            let want = Widths::for_modules_and_threads(300, top);
            let mut bytes = Vec::new();
            want.encode(&all, &mut bytes);
            assert_eq!(p.finish(), (want, bytes), "{pieces:?}");
        }
    }
}
