//! Writes the hostile inputs of the importers' memory and time bounds
//! (docs/IMPORT.md, "Bounds") into a folder, for `scripts/hostile-inputs.sh`
//! to import each under `/usr/bin/time -v`. Every one is small or sparse on
//! disk and claims, or holds, far more than an importer may keep:
//!
//! | file | what it is |
//! |---|---|
//! | `threads.prof.bz2` | a bzip2 sampler profile (size unknown) whose one sample claims 10^8 threads, 100,000 of them present |
//! | `maps.prof.bz2` | a bzip2 sampler profile whose header announces 7,000,000 VM maps |
//! | `commas.log` | an MTMC log of one 100 MB line of commas |
//! | `number.log` | an MTMC log whose one line is a 100 MB number |
//! | `header.txt` | a winIDEA export whose header line is 100 MB |
//! | `contexts.txt` | a winIDEA export of 160,000 contexts with a statistics block each |
//! | `columns.txt` | a winIDEA export of 20,000 statistics columns by 100 rows |
//! | `sparse.txt` + `sparse.BIN` | a winIDEA export with a 24 GiB `.BIN` that is all holes after its first entry |
//!
//! Usage: `cargo run --release -p tbrw-cli --example hostile_inputs DIR`

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use tbrw_elf_profile::{write_profile, Format, FullSample, Layout, Magic, ProfileHeader, ThreadSample, VmMap};

fn bzip2(bytes: &[u8]) -> Vec<u8> {
    let mut z = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    z.write_all(bytes).expect("compress in memory");
    z.finish().expect("compress in memory")
}

/// One sample of 100,000 threads in the README layout, its count patched to 10^8.
fn threads_profile() -> Vec<u8> {
    let maps = vec![VmMap { address: 0x55d0_0000_0000, size: 0x10_0000, label: "app".into() }];
    let threads = vec![ThreadSample { tid: 77, pc: 0x55d0_0000_1010, cputime: 5 }; 100_000];
    let samples = vec![FullSample::with_value(0, 0.0, threads)];
    let header = ProfileHeader { magic: Magic::Current, wall_us: 1, latency_us: 1, samples: 1, maps: 1, killed: false };
    let mut b = Vec::new();
    write_profile(&mut b, &Format::new(Layout::Readme), &header, &maps, &samples).expect("write in memory");
    // The README layout: a 32-byte header, 272-byte maps, then the sample's
    // 8-byte head and its thread count.
    let at = 32 + 272 + 8;
    assert_eq!(b[at..at + 4], 100_000u32.to_le_bytes(), "the thread count is where the layout puts it");
    b[at..at + 4].copy_from_slice(&100_000_000u32.to_le_bytes());
    b
}

fn maps_profile() -> Vec<u8> {
    let mut b = vec![0u8; 32];
    b[0] = 1;
    b[28..32].copy_from_slice(&7_000_000u32.to_le_bytes());
    b.resize(4 << 20, 0);
    b
}

fn repeated(path: &Path, head: &[u8], byte: u8, len: usize, tail: &[u8]) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    f.write_all(head)?;
    let chunk = vec![byte; 1 << 20];
    for _ in 0..len >> 20 {
        f.write_all(&chunk)?;
    }
    f.write_all(tail)?;
    f.flush()
}

fn winidea_header() -> String {
    "* INFO %TOTAL_TIME%\n100\n\n* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n00000000,main,\n\n".to_owned()
}

fn main() -> std::io::Result<()> {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: hostile_inputs DIR");
        std::process::exit(2);
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("threads.prof.bz2"), bzip2(&threads_profile()))?;
    std::fs::write(dir.join("maps.prof.bz2"), bzip2(&maps_profile()))?;
    repeated(&dir.join("commas.log"), b"", b',', 100 << 20, b"\n")?;
    repeated(&dir.join("number.log"), b"", b'7', 100 << 20, b"\n")?;
    repeated(&dir.join("header.txt"), b"* INFO %", b'T', 100 << 20, b"%\n100\n")?;

    let mut t = winidea_header();
    t.push_str("* CONTEXTS %HANDLE%,%NAME%\n");
    let contexts = 160_000;
    for i in 0..contexts {
        writeln!(t, "{i:08X},ctx{i}").expect("to a String");
    }
    for i in 0..contexts {
        writeln!(t, "\n* STATISTICS(Functions) CONTEXT(ctx{i}) %HANDLE%,%VALUE%,%COUNT%\n00000000,,0")
            .expect("to a String");
    }
    std::fs::write(dir.join("contexts.txt"), t)?;

    let cols = 20_000;
    let mut t = winidea_header();
    t.push_str("* STATISTICS(Functions) %HANDLE%,%VALUE%,%COUNT%");
    for i in 0..cols {
        write!(t, ",%T.X{i}%").expect("to a String");
    }
    t.push('\n');
    for _ in 0..100 {
        t.push_str("00000000,,0");
        t.push_str(&",1".repeat(cols));
        t.push('\n');
    }
    std::fs::write(dir.join("columns.txt"), t)?;

    std::fs::write(dir.join("sparse.txt"), winidea_header())?;
    let mut f = std::fs::File::create(dir.join("sparse.BIN"))?;
    let mut first = [0u8; 24];
    first[4..8].copy_from_slice(&9u32.to_le_bytes());
    f.write_all(&first)?;
    f.set_len(24 << 30)?;
    println!("hostile inputs written to {}", dir.display());
    Ok(())
}
