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
//! The streams' roles (binds, and this project's stack tables and stored
//! symbols, custom streams named by their comment) are found once, when
//! the file is opened ([`roles`]).
//! The data bind names its stream in its comment (decimal); its module
//! binds are the last type-5 stream before it, its thread binds the first
//! type-7 stream after it (the order both writers append them in).

use std::path::Path;

use super::{decode, IntelEntry, IntelIndex};
use crate::format::intel::{stack_table_of, SYMBOLS_COMMENT};
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

/// What a stream of an Intel file holds, as its type and comment say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Records of its own (or a stream whose information does not read).
    Data,
    /// The bind data stream of data stream `n` (type 4).
    BindData(u32),
    /// Module binds (type 5).
    BindModules,
    /// Thread binds (type 7).
    BindThreads,
    /// This project's stack table of data stream `n` (docs/FORMAT.md,
    /// "This project's sections in Intel's layout").
    StackTable(u32),
    /// This project's stored symbols.
    Symbols,
}

/// The role of every stream of `index` (a stream whose information or
/// comment does not read has none but [`Role::Data`]).
pub(crate) fn roles(path: &Path, bytes: &[u8], index: &IntelIndex) -> Vec<Role> {
    (0..index.streams.len())
        .map(|s| {
            let Some(e) = index.streams[s].get(StreamSection::StreamInfo) else { return Role::Data };
            let Ok(info) = decode::stream_info(path, bytes, e, s as u32) else { return Role::Data };
            let comment = || decode::string_at(path, bytes, info.comment).ok();
            match info.stream_type {
                stream_type::BIND_DATA_INFORMATION => {
                    comment().and_then(bound_stream).map_or(Role::Data, Role::BindData)
                }
                stream_type::BIND_MODULE_INFORMATION => Role::BindModules,
                stream_type::BIND_TID_INFORMATION => Role::BindThreads,
                stream_type::CUSTOM => match comment() {
                    Some(c) if c == SYMBOLS_COMMENT => Role::Symbols,
                    Some(c) => stack_table_of(c).map_or(Role::Data, Role::StackTable),
                    None => Role::Data,
                },
                _ => Role::Data,
            }
        })
        .collect()
}

/// The bind streams of stream `n`, if it is bound.
pub(crate) fn find(index: &IntelIndex, n: u32) -> Option<IntelBindStreams> {
    let roles = &index.roles;
    let data_stream = roles.iter().position(|r| *r == Role::BindData(n))?;
    let modules = (0..data_stream).rev().find(|&s| roles[s] == Role::BindModules);
    let threads = (data_stream + 1..roles.len()).find(|&s| roles[s] == Role::BindThreads);
    let data_of = |s: usize| index.streams[s].get(StreamSection::Data).copied();
    Some(IntelBindStreams {
        data_stream: data_stream as u32,
        data: data_of(data_stream),
        modules: modules.and_then(data_of),
        threads: threads.and_then(data_of),
    })
}

/// The last stream of `index` in role `r`.
pub(crate) fn stream_in(index: &IntelIndex, r: Role) -> Option<u32> {
    index.roles.iter().rposition(|x| *x == r).map(|s| s as u32)
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
