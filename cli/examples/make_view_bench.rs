//! A large sampler import for timing the viewer exports (docs/EXPORT.md):
//! `cargo run -p tbrw-cli --example make_view_bench -- SAMPLES OUT.tb5`
//! writes a sampler profile of SAMPLES samples of 4 threads each (so 4 x
//! SAMPLES TB5 records) over 64 modules, the addresses drawn from 512 per
//! module (32,768 distinct locations, as a real program's hot code has
//! thousands, not millions), and imports it into OUT.tb5.

use std::io::{BufWriter, Write};

use tbrw_elf_profile::{write_header, write_sample, Header, Magic, Sample, ThreadSample, VmMap};
use tbrw_import::elf_profile::{import_profile, ImportOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(samples), Some(out)) = (args.first().and_then(|a| a.parse::<u64>().ok()), args.get(1)) else {
        eprintln!("usage: make_view_bench SAMPLES OUT.tb5");
        std::process::exit(2);
    };
    let maps: Vec<VmMap> = (0..64u64)
        .map(|i| VmMap { address: 0x7f00_0000_0000 + i * 0x10_0000, size: 0x8_0000, label: format!("lib{i}.so") })
        .collect();
    let dir = tempfile::tempdir_in(std::path::Path::new(out).parent().unwrap_or(std::path::Path::new("."))).unwrap();
    let profile = dir.path().join("profile.bin");
    {
        let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&profile).unwrap());
        write_header(&mut w, &Header { magic: Magic::Current, wall_time: 1, cpu_time: 1, samples, maps: maps.clone() })
            .unwrap();
        let mut s = Sample { value: 0.0, threads: vec![ThreadSample { tid: 0, pc: 0, cputime: 0 }; 4] };
        for i in 0..samples {
            s.value = (i % 1000) as f64 * 0.001;
            for (t, th) in s.threads.iter_mut().enumerate() {
                th.tid = 100 + t as u32;
                let k = (i * 7919 + t as u64 * 104_729) % (64 * 512);
                th.pc = 0x7f00_0000_0000 + (k / 512) * 0x10_0000 + (k % 512) * 64;
                th.cputime = i * 1000;
            }
            write_sample(&mut w, &s).unwrap();
        }
        w.flush().unwrap();
    }
    let mut w = tbrw::Tb5Writer::create(out).unwrap();
    let input = std::fs::File::open(&profile).unwrap();
    let input_name = profile.display().to_string();
    let stats = import_profile(input, &input_name, &mut w, &ImportOptions::default(), &Default::default(), ()).unwrap();
    w.close().unwrap();
    println!("{out}: {} samples, {} records", stats.samples, stats.records);
}
