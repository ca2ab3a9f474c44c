//! Where Intel's layout stores a stream's bind: three streams of their own
//! (docs/FORMAT.md, "Binds"), as VTune's driver and Intel's `TBRW_dobind`
//! write them:
//!
//! - type 4 (`TBRW_BIND_DATA_INFORMATION_STREAM`), commented `"bind version
//!   05 bound to data stream 0000"`: per record of the bound stream, its
//!   module, process and thread index (u64 each), an OS index (u32) and 4
//!   bytes of padding;
//! - type 5 (`..._MODULE_...`): per module, its process index (u64);
//! - type 7 (`..._TID_...`): per thread, its process index (u64).
//!
//! The indexes are into the file's own process, thread and module tables.
//! The data bind names its stream in its comment (decimal); its module
//! binds are the last type-5 stream before it, its thread binds the first
//! type-7 stream after it (the order both writers append them in).

use std::path::Path;

use super::{decode, IntelEntry, IntelIndex};
use crate::model::section::StreamSection;
use crate::model::stream::stream_type;

/// The three bind streams of a bound stream.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IntelBindStreams {
    /// The bind data stream's index and data section.
    pub(crate) data_stream: u32,
    pub(crate) data: Option<IntelEntry>,
    pub(crate) modules: Option<IntelEntry>,
    pub(crate) threads: Option<IntelEntry>,
}

/// The comment that makes a type-4 stream the bind of data stream `n`.
const BOUND_TO: &str = " bound to data stream ";

/// The stream a bind data stream's comment names.
fn bound_stream(comment: &str) -> Option<u32> {
    let at = comment.find(BOUND_TO)?;
    comment[at + BOUND_TO.len()..].trim().parse().ok()
}

/// The bind streams of stream `n`, if it is bound. A stream whose
/// information or comment does not read is not a bind stream.
pub(crate) fn find(path: &Path, bytes: &[u8], index: &IntelIndex, n: u32) -> Option<IntelBindStreams> {
    let kind_of = |s: usize| -> Option<(u32, Option<String>)> {
        let e = index.streams.get(s)?.get(StreamSection::StreamInfo)?;
        let info = decode::stream_info(path, bytes, e, s as u32).ok()?;
        let comment = decode::string_at(path, bytes, info.comment).ok().map(str::to_owned);
        Some((info.stream_type, comment))
    };
    let kinds: Vec<Option<(u32, Option<String>)>> = (0..index.streams.len()).map(kind_of).collect();
    let data_stream = kinds.iter().position(
        |k| matches!(k, Some((t, Some(c))) if *t == stream_type::BIND_DATA_INFORMATION && bound_stream(c) == Some(n)),
    )?;
    let is = |s: usize, t: u32| matches!(kinds[s], Some((k, _)) if k == t);
    let modules = (0..data_stream).rev().find(|&s| is(s, stream_type::BIND_MODULE_INFORMATION));
    let threads = (data_stream + 1..kinds.len()).find(|&s| is(s, stream_type::BIND_TID_INFORMATION));
    let data_of = |s: usize| index.streams[s].get(StreamSection::Data).copied();
    Some(IntelBindStreams {
        data_stream: data_stream as u32,
        data: data_of(data_stream),
        modules: modules.and_then(data_of),
        threads: threads.and_then(data_of),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_comment_names_the_bound_stream_in_decimal() {
        assert_eq!(bound_stream("bind version 05 bound to data stream 0000"), Some(0));
        assert_eq!(bound_stream("bind version 05 bound to data stream 0012"), Some(12));
        assert_eq!(bound_stream("bind version 05"), None);
        assert_eq!(bound_stream("bind version 05 bound to data stream x"), None);
    }
}
