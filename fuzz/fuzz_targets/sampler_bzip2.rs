//! Feeds arbitrary bytes to `tbrw import sampler` as a bzip2-compressed
//! profile: the size is then unknown, so the importer must bound what it
//! keeps (threads of a sample, VM maps) by what it has read, not by the
//! counts in the bytes. The input is compressed here so that the fuzzer's
//! mutations land in the profile, not in the compressed stream; odd-length
//! inputs are also fed raw, as a damaged `.bz2`. Errors are expected; a
//! panic, an abort or an outsized allocation is a bug.
#![no_main]

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tb5::Tb5Writer;
use tbrw_import::elf_profile::{import_profile, ImportOptions};

fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() { shm.to_owned() } else { std::env::temp_dir() };
        let dir = base.join(format!("tbrw-fuzz-bz2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        dir
    })
}

/// Imports `bytes` (from memory: the bzip2 magic sends it through the
/// read-once path) into a writer that is dropped, so nothing is written.
fn import(dir: &Path, bytes: &[u8]) {
    let Ok(mut w) = Tb5Writer::create(dir.join("out.tb5")) else { return };
    let _ =
        import_profile(Cursor::new(bytes), "in.prof.bz2", &mut w, &ImportOptions::default(), &Default::default(), ());
}

fuzz_target!(|data: &[u8]| {
    let dir = scratch();
    let mut z = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    if z.write_all(data).is_ok() {
        if let Ok(compressed) = z.finish() {
            import(dir, &compressed);
        }
    }
    if data.len() % 2 == 1 {
        let mut raw = b"BZh9".to_vec();
        raw.extend_from_slice(data);
        import(dir, &raw);
    }
});
