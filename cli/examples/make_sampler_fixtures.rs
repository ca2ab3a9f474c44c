//! Writes the example sampler profiles of `examples/data/sampler/` (or of
//! the folder given): `cargo run -p tbrw-cli --example make_sampler_fixtures
//! [-- DIR]`. What they hold is in that folder's README.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = std::env::args_os().nth(1).map_or_else(|| PathBuf::from("examples/data/sampler"), PathBuf::from);
    std::fs::create_dir_all(&dir)?;
    for (name, bytes) in tbrw_elf_profile::fixtures::files() {
        let path = dir.join(name);
        std::fs::write(&path, &bytes)?;
        println!("{}: {} bytes", path.display(), bytes.len());
    }
    Ok(())
}
