//! Where an export that writes several files puts them ([`Folder`]): a
//! folder output being built (`tbrw_output::folder::WorkFolder`, published
//! whole once complete), or, for tests and library users, [`MemoryFolder`].
//! The exports never see a path.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// A set of files an export writes.
pub trait Folder {
    /// Creates the file `name`, a relative `/`-separated path (its folders
    /// are made as needed). Writing is done when the writer is dropped,
    /// or flushed.
    fn create(&mut self, name: &str) -> io::Result<Box<dyn Write + Send>>;
}

/// The files of a folder output being built beside its target.
impl Folder for tbrw_output::folder::WorkFolder {
    fn create(&mut self, name: &str) -> io::Result<Box<dyn Write + Send>> {
        Ok(Box::new(self.create_file(name)?))
    }
}

/// Files kept in memory, by name.
#[derive(Clone, Debug, Default)]
pub struct MemoryFolder {
    files: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
}

impl MemoryFolder {
    /// An empty folder.
    pub fn new() -> MemoryFolder {
        MemoryFolder::default()
    }

    /// The files written so far, by name.
    pub fn files(&self) -> BTreeMap<String, Vec<u8>> {
        self.files.lock().map(|f| f.clone()).unwrap_or_default()
    }
}

impl Folder for MemoryFolder {
    fn create(&mut self, name: &str) -> io::Result<Box<dyn Write + Send>> {
        let mut files = self.files.lock().map_err(|_| io::Error::other("a writer panicked"))?;
        files.insert(name.to_owned(), Vec::new());
        Ok(Box::new(MemoryFile { files: Arc::clone(&self.files), name: name.to_owned() }))
    }
}

/// A file of a [`MemoryFolder`].
struct MemoryFile {
    files: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
    name: String,
}

impl Write for MemoryFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut files = self.files.lock().map_err(|_| io::Error::other("a writer panicked"))?;
        files.entry(self.name.clone()).or_default().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_files_hold_what_was_written() {
        let mut f = MemoryFolder::new();
        let mut a = f.create("t/a.csv").unwrap();
        let mut b = f.create("b.csv").unwrap();
        a.write_all(b"1,").unwrap();
        b.write_all(b"x").unwrap();
        a.write_all(b"2").unwrap();
        drop((a, b));
        let files = f.files();
        assert_eq!(files["t/a.csv"], b"1,2");
        assert_eq!(files["b.csv"], b"x");
    }
}
