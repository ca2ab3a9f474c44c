//! Storing the symbols `tbrw symbolize` resolved (section kind 0x0400,
//! docs/FORMAT.md): opaque bytes here, replacing the file's earlier ones.
//! What the bytes hold is the symbolizer's (`tbrw_symbols::stored`).

use crate::format::container::NO_STREAM;
use crate::format::kind::SectionKind;
use crate::model::error::{Error, Result};

use super::engine::Engine;
use super::output::{Part, Pending};
use super::sink::SectionSink;
use super::writer::Tb5Writer;

impl Engine {
    /// Stores `bytes` as the file's stored symbols, in place of any stored
    /// before (committed or in this session), when the writer closes.
    pub fn store_symbols(&mut self, bytes: &[u8]) -> Result<()> {
        let mode = self.mode();
        let Some(out) = self.output_mut() else {
            return Err(Error::InvalidAccess { mode, what: "storing symbols in a file opened read-only" });
        };
        out.remove(|kind, _| kind == SectionKind::StoredSymbols);
        out.remove_committed(SectionKind::StoredSymbols, NO_STREAM);
        let mut sink = SectionSink::memory();
        out.write(&mut sink, bytes)?;
        out.submit(Pending::new(SectionKind::StoredSymbols, NO_STREAM, vec![Part::Sink(sink)], 1))
    }
}

impl Tb5Writer {
    /// Stores the symbols `tbrw symbolize` resolved (see
    /// [`Engine::store_symbols`]).
    pub fn store_symbols(&mut self, bytes: &[u8]) -> Result<()> {
        self.engine_mut().store_symbols(bytes)
    }
}

#[cfg(test)]
mod tests {
    use crate::read::Tb5File;
    use crate::write::writer::Tb5Writer;

    #[test]
    fn stored_symbols_are_replaced_and_survive_other_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.tb5");
        let mut w = Tb5Writer::create(&path).unwrap();
        w.write_user_defined_global(b"user's own").unwrap();
        w.close().unwrap();
        assert_eq!(Tb5File::open(&path).unwrap().stored_symbols().unwrap(), None);
        for text in [&b"first"[..], b"second, longer"] {
            let mut w = Tb5Writer::append(&path).unwrap();
            w.store_symbols(b"dropped: replaced in the same session").unwrap();
            w.store_symbols(text).unwrap();
            w.close().unwrap();
            let f = Tb5File::open(&path).unwrap();
            assert_eq!(f.stored_symbols().unwrap(), Some(text));
            assert_eq!(f.user_defined_global().unwrap(), Some(&b"user's own"[..]));
        }
        // An append that does not touch them keeps them.
        let w = Tb5Writer::append(&path).unwrap();
        w.close().unwrap();
        assert_eq!(Tb5File::open(&path).unwrap().stored_symbols().unwrap(), Some(&b"second, longer"[..]));
    }
}
