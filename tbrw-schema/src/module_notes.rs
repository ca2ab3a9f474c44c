//! What a collector knows about a module beyond `TBRW_MODULE`, kept in the
//! file's user-defined global section, one line per module:
//!
//! ```text
//! module notes
//! module 0 offset=0x1000 build_id=9f86d081884c7d65
//! module 3 offset=0x0
//! ```
//!
//! `offset` is the file offset mapped at the module's load address (perf's
//! and `/proc/PID/maps`' `pgoff`: what a symbolizer needs to turn an
//! address into the file's), `build_id` the GNU build id of the file that
//! was mapped, in hex. Lines of other shapes are not about modules and are
//! passed over, so the section can hold other text. This is the one
//! writer ([`encode`]) and the one reader ([`decode`]): the perf import and
//! the collector write it, the symbol layer reads it.

use std::collections::HashMap;
use std::fmt::Write as _;

/// The first line [`encode`] writes.
pub const HEADING: &str = "module notes";

/// One module's note.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleNote {
    /// The file offset mapped at the module's load address.
    pub offset: Option<u64>,
    /// The build id of the file that was mapped.
    pub build_id: Option<Vec<u8>>,
}

impl ModuleNote {
    /// Whether the note says nothing (such notes are not written).
    pub fn is_empty(&self) -> bool {
        self.offset.is_none() && self.build_id.as_ref().is_none_or(|b| b.is_empty())
    }
}

/// The section's text for `notes` (module index, note), in the order
/// given; empty notes are left out.
pub fn encode<'a>(notes: impl IntoIterator<Item = (u64, &'a ModuleNote)>) -> String {
    let mut s = format!("{HEADING}\n");
    for (index, note) in notes {
        if note.is_empty() {
            continue;
        }
        let _ = write!(s, "module {index}");
        if let Some(o) = note.offset {
            let _ = write!(s, " offset={o:#x}");
        }
        if let Some(b) = note.build_id.as_deref().filter(|b| !b.is_empty()) {
            let _ = write!(s, " build_id={}", hex(b));
        }
        s.push('\n');
    }
    s
}

/// The notes of a section's text, by module index. Unknown keys, lines of
/// other shapes and values that do not parse are passed over.
pub fn decode(text: &str) -> HashMap<u64, ModuleNote> {
    let mut notes = HashMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some("module"), Some(index)) = (words.next(), words.next()) else { continue };
        let Ok(index) = index.parse::<u64>() else { continue };
        let mut note = ModuleNote::default();
        for kv in words {
            match kv.split_once('=') {
                Some(("offset", v)) => note.offset = v.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok()),
                Some(("build_id", v)) => note.build_id = unhex(v),
                _ => {}
            }
        }
        if !note.is_empty() {
            notes.insert(index, note);
        }
    }
    notes
}

/// Bytes as lowercase hex.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 * b.len());
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// Hex as bytes (`None`: odd length or not hex).
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn notes_of_the_collector_and_of_a_perf_import() {
        let n = decode(
            "sampler module file offsets\nmodule 0 offset=0x1000\nmodule 2 offset=0x0 build_id=0a0b\nmodule x offset=0x1\n",
        );
        assert_eq!(n.len(), 2);
        assert_eq!(n[&0], ModuleNote { offset: Some(0x1000), build_id: None });
        assert_eq!(n[&2], ModuleNote { offset: Some(0), build_id: Some(vec![0x0a, 0x0b]) });
    }

    proptest! {
        /// What is written reads back, empty notes left out.
        #[test]
        fn notes_read_back(notes in proptest::collection::vec((proptest::option::of(any::<u64>()), proptest::option::of(proptest::collection::vec(any::<u8>(), 0..24))), 0..20)) {
            let notes: Vec<(u64, ModuleNote)> = notes
                .into_iter()
                .enumerate()
                .map(|(i, (offset, build_id))| (i as u64 * 3, ModuleNote { offset, build_id }))
                .collect();
            let back = decode(&encode(notes.iter().map(|(i, n)| (*i, n))));
            let want: HashMap<u64, ModuleNote> = notes
                .into_iter()
                .filter(|(_, n)| !n.is_empty())
                .map(|(i, mut n)| {
                    n.build_id = n.build_id.filter(|b| !b.is_empty());
                    (i, n)
                })
                .collect();
            prop_assert_eq!(back, want);
        }
    }
}
