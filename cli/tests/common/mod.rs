//! Test support: realistic sampler profiles, and a strict checker of
//! VTune's "CSV file with external data" format.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;

use tbrw_elf_profile::{write_header, write_sample, Header, Magic, Sample, ThreadSample, VmMap};

pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// VM maps of a typical small program: its ELF segments, libc, heap, stack, vdso.
pub fn maps() -> Vec<VmMap> {
    let m = |a: u64, s: u64, l: &str| VmMap { address: a, size: s, label: l.into() };
    vec![
        m(0x55d0_0000_0000, 0x1000, "/usr/local/bin/prog"),
        m(0x55d0_0000_1000, 0x6000, "/usr/local/bin/prog"),
        m(0x55d0_0000_7000, 0x2000, "/usr/local/bin/prog"),
        m(0x55d0_0100_0000, 0x21000, "[heap]"),
        m(0x7f3a_0000_0000, 0x28000, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        m(0x7f3a_0002_8000, 0x195000, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        m(0x7f3a_0040_0000, 0x1000, "/usr/lib/x86_64-linux-gnu/libm.so.6"),
        m(0x7ffd_1234_0000, 0x21000, "[stack]"),
        m(0x7ffd_1237_0000, 0x2000, "[vdso]"),
        m(0x7ffd_1238_0000, 0x1000, ""),
    ]
}

/// A profile of `samples` samples with 1-3 threads each; returns the bytes
/// and, per VM map index, how many (sample, thread) pcs fall in it (the
/// reference the import's binding must agree with), plus those in no map.
pub fn profile(magic: Magic, samples: u64, seed: u64) -> (Vec<u8>, Vec<u64>, u64) {
    let maps = maps();
    let mut rng = Rng(seed | 1);
    let mut out = Vec::new();
    write_header(&mut out, &Header { magic, wall_time: 123_456_789, cpu_time: 4_321, samples, maps: maps.clone() })
        .unwrap();
    let mut per_map = vec![0u64; maps.len()];
    let mut none = 0;
    let mut cputime = [0u64; 3];
    for i in 0..samples {
        let n = 1 + rng.below(3) as usize;
        let mut s = Sample { value: 0.25 + (i % 100) as f64 / 64.0, threads: Vec::new() };
        for (t, ct) in cputime.iter_mut().enumerate().take(n) {
            let pc = if rng.below(20) == 0 {
                0x1000 + rng.below(0x1000) // no map
            } else {
                let m = &maps[rng.below(maps.len() as u64) as usize];
                m.address + rng.below(m.size)
            };
            match maps.iter().position(|m| m.address <= pc && pc < m.address + m.size) {
                Some(k) => per_map[k] += 1,
                None => none += 1,
            }
            *ct += 1000 + rng.below(100);
            s.threads.push(ThreadSample { tid: 7000 + t as u32, pc, cputime: *ct });
        }
        write_sample(&mut out, &s).unwrap();
    }
    (out, per_map, none)
}

pub fn bzip2(bytes: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A `.UTC` cell as VTune documents it, date-and-time text
/// (`2013-08-28 01:02:03.0004`: a fraction of any number of digits, or
/// none), parsed strictly to nanoseconds since the Unix epoch.
pub fn parse_utc(s: &str) -> Option<u64> {
    let (date, time) = s.split_once(' ')?;
    let d: Vec<&str> = date.split('-').collect();
    let (hms, frac) = match time.split_once('.') {
        Some((a, f)) => (a, Some(f)),
        None => (time, None),
    };
    let t: Vec<&str> = hms.split(':').collect();
    let digits = |x: &str, n: usize| x.len() == n && x.bytes().all(|b| b.is_ascii_digit());
    if d.len() != 3 || t.len() != 3 || !digits(d[0], 4) || !digits(d[1], 2) || !digits(d[2], 2) {
        return None;
    }
    if !t.iter().all(|x| digits(x, 2)) {
        return None;
    }
    let (y, m, day): (u64, u64, u64) = (d[0].parse().ok()?, d[1].parse().ok()?, d[2].parse().ok()?);
    let (hh, mm, ss): (u64, u64, u64) = (t[0].parse().ok()?, t[1].parse().ok()?, t[2].parse().ok()?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if y < 1970
        || !(1..=12).contains(&m)
        || day == 0
        || day > month_days[m as usize - 1]
        || hh > 23
        || mm > 59
        || ss > 59
    {
        return None;
    }
    let mut ns = 0u64;
    if let Some(f) = frac {
        if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        ns = f.parse::<u64>().ok()? * 10u64.pow(9 - f.len() as u32);
    }
    // Days since the epoch, counted by hand (no shared code with the exporter).
    let mut days = 0u64;
    for yy in 1970..y {
        days += if (yy % 4 == 0 && yy % 100 != 0) || yy % 400 == 0 { 366 } else { 365 };
    }
    days += month_days[..m as usize - 1].iter().sum::<u64>() + day - 1;
    Some(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1_000_000_000) + ns)
}

/// Checks one CSV file against VTune's external-data format, strictly:
/// the file name, the header, one value per column on every row, time
/// stamps as the clock's suffix says (UTC as date-and-time text, the
/// other clocks as integers), intervals that do not end before they
/// start, and `.COUNT` columns that are cumulative: never decreasing, in
/// time order, for each pid and tid the rows have. Returns the number of data rows.
pub fn check_vtune_csv(path: &Path) -> usize {
    let name = path.file_name().unwrap().to_str().unwrap();
    let stem = name.strip_suffix(".csv").unwrap_or_else(|| panic!("{name}: not a .csv file"));
    let (_user, host) = stem.rsplit_once("-hostname-").unwrap_or_else(|| panic!("{name}: no -hostname- in the name"));
    assert!(!host.is_empty() && !host.contains('/'), "{name}: bad host name");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "{name}: last line not terminated");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_else(|| panic!("{name}: empty")).split(',').collect();
    let clocks = ["QPC", "CLOCK_MONOTONIC_RAW", "RDTSC", "UTC"];
    let interval = header[0] == "name";
    let mut optional_from;
    let clock;
    let mut counts = Vec::new();
    if interval {
        assert!(header.len() >= 3, "{name}: interval header too short");
        clock = header[1].strip_prefix("start_tsc.").unwrap_or_else(|| panic!("{name}: column 2 is {:?}", header[1]));
        assert!(clocks.contains(&clock), "{name}: clock {clock:?}");
        assert_eq!(header[2], "end_tsc", "{name}");
        optional_from = 3;
    } else {
        clock = header[0].strip_prefix("tsc.").unwrap_or_else(|| panic!("{name}: column 1 is {:?}", header[0]));
        assert!(clocks.contains(&clock), "{name}: clock {clock:?}");
        optional_from = 1;
        while optional_from < header.len() && header[optional_from] != "pid" && header[optional_from] != "tid" {
            let c = header[optional_from];
            let (counter, kind) = c.rsplit_once('.').unwrap_or_else(|| panic!("{name}: counter column {c:?}"));
            assert!(!counter.is_empty() && (kind == "COUNT" || kind == "INST"), "{name}: counter column {c:?}");
            assert!(!counter.contains(','), "{name}");
            if kind == "COUNT" {
                counts.push(optional_from);
            }
            optional_from += 1;
        }
        assert!(optional_from > 1, "{name}: no counter column");
    }
    let rest = &header[optional_from..];
    assert!(
        rest.is_empty() || rest == ["pid"] || rest == ["tid"] || rest == ["pid", "tid"],
        "{name}: trailing columns {rest:?}"
    );
    // The last time and counts of each (pid, tid).
    let mut last: std::collections::HashMap<Vec<String>, (u64, Vec<f64>)> = std::collections::HashMap::new();
    let mut rows = 0;
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{name}: row {} has {} cells", i + 1, cells.len());
        let time = |s: &str, what: &str| -> u64 {
            let v = if clock == "UTC" { parse_utc(s) } else { s.parse::<u64>().ok() };
            v.unwrap_or_else(|| panic!("{name}: row {}: {what} {s:?} is no {clock} time stamp", i + 1))
        };
        if interval {
            assert!(!cells[0].is_empty(), "{name}: row {}: empty name", i + 1);
            let (s, e) = (time(cells[1], "start"), time(cells[2], "end"));
            assert!(e >= s, "{name}: row {}: ends before it starts", i + 1);
        } else {
            let t = time(cells[0], "tsc");
            for c in &cells[1..optional_from] {
                assert!(
                    c.is_empty() || c.parse::<f64>().is_ok_and(f64::is_finite),
                    "{name}: row {}: value {c:?}",
                    i + 1
                );
            }
            if !counts.is_empty() {
                let key: Vec<String> = cells[optional_from..].iter().map(|c| c.to_string()).collect();
                let now: Vec<f64> = counts.iter().map(|&k| cells[k].parse::<f64>().unwrap_or(f64::NAN)).collect();
                if let Some((t0, before)) = last.get(&key) {
                    assert!(t >= *t0, "{name}: row {}: time goes back in a cumulative table", i + 1);
                    for (k, (a, b)) in before.iter().zip(&now).enumerate() {
                        assert!(
                            b.is_nan() || a.is_nan() || b >= a,
                            "{name}: row {}: {} decreases ({a} to {b}): not cumulative",
                            i + 1,
                            header[counts[k]]
                        );
                    }
                }
                last.insert(key, (t, now));
            }
        }
        for c in &cells[optional_from..] {
            assert!(c.is_empty() || c.parse::<u32>().is_ok(), "{name}: row {}: pid/tid {c:?}", i + 1);
        }
        rows += 1;
    }
    rows
}

/// What [`export_vtune_csv`] wrote: the library's report with the files as paths.
#[derive(Debug)]
pub struct CsvExported {
    /// The files written, in `dir`.
    pub files: Vec<std::path::PathBuf>,
    /// Streams not exported, with the reason.
    pub skipped: Vec<(u32, String)>,
    /// Interval records left out, per stream.
    pub unended: Vec<(u32, u64)>,
    /// Counter readings left out, per stream.
    pub decreasing: Vec<(u32, u64)>,
}

/// The files of an export written into a folder on disk.
struct DiskFolder(std::path::PathBuf);

impl tbrw_export::Folder for DiskFolder {
    fn create(&mut self, name: &str) -> std::io::Result<Box<dyn Write + Send>> {
        let p = self.0.join(name);
        std::fs::create_dir_all(p.parent().unwrap())?;
        Ok(Box::new(std::fs::File::create(p)?))
    }
}

/// `tbrw_export::vtune_csv::export_vtune_csv` of the TB5 file `file` into
/// the folder `dir` (created), as `tbrw export vtune-csv` does it.
pub fn export_vtune_csv(
    file: &Path,
    dir: &Path,
    opts: &tbrw_export::vtune_csv::CsvOptions,
) -> Result<CsvExported, tbrw_export::ExportError> {
    let f = tbrw::Tb5File::open(file)?;
    let r = tbrw_export::vtune_csv::export_vtune_csv(&f, &mut DiskFolder(dir.to_path_buf()), opts)?;
    Ok(CsvExported {
        files: r.files.iter().map(|n| dir.join(n)).collect(),
        skipped: r.skipped,
        unended: r.unended,
        decreasing: r.decreasing,
    })
}

/// `tbrw_export::elf_profile::export_profile` of stream `stream` of the TB5
/// file `file` into the file `out`; the samples written.
pub fn export_profile(
    file: &Path,
    stream: u32,
    out: &Path,
    layout: Option<tbrw_import::elf_profile::Layout>,
) -> Result<u64, tbrw_export::ExportError> {
    let f = tbrw::Tb5File::open(file)?;
    let mut bytes = Vec::new();
    let n = tbrw_export::elf_profile::export_profile(&f, stream, layout, &mut bytes)?;
    std::fs::write(out, bytes).map_err(|e| tbrw_export::ExportError::write("profile", e))?;
    Ok(n)
}

/// Imports the MTMC log at `log` into a new TB5 file at `out`, as `tbrw
/// import mtmc` does: the importer reads the opened file, named by its path.
pub fn import_mtmc_file(
    log: &Path,
    out: &Path,
    opts: &tbrw_import::mtmc::MtmcOptions,
) -> Result<tbrw_import::mtmc::MtmcStats, tbrw_import::ImportError> {
    let name = log.display().to_string();
    let input = std::fs::File::open(log).map_err(|e| tbrw_import::ImportError::io(&name, e))?;
    let mut w = tbrw::Tb5Writer::create(out)?;
    let stats = tbrw_import::mtmc::import_mtmc(input, &name, &mut w, opts, ())?;
    w.close()?;
    Ok(stats)
}

/// Imports the winIDEA export at `text` (with the `.BIN` at `bin`) into a
/// new TB5 file at `out`, as `tbrw import winidea` does.
pub fn import_winidea_file(
    text: &Path,
    bin: Option<&Path>,
    version: Option<tbrw_import::winidea::BinVersion>,
    out: &Path,
    check: bool,
) -> Result<tbrw_import::winidea::WinIdeaStats, tbrw_import::ImportError> {
    use tbrw_import::{winidea, ImportError};
    let name = text.display().to_string();
    let input = std::fs::File::open(text).map_err(|e| ImportError::io(&name, e))?;
    let bin_name = bin.map(|b| b.display().to_string()).unwrap_or_default();
    let mut bin_file = match bin {
        Some(b) => Some(std::fs::File::open(b).map_err(|e| ImportError::io(&bin_name, e))?),
        None => None,
    };
    let bin = bin_file.as_mut().map(|f| winidea::BinInput { input: f, name: &bin_name });
    let mut w = tbrw::Tb5Writer::create(out)?;
    let opts = winidea::WinIdeaOptions { bin_version: version, check };
    let stats = winidea::import_winidea(input, &name, bin, &mut w, &opts)?;
    w.close()?;
    Ok(stats)
}

/// Imports the sampler profile at `profile` into a new TB5 file at `out`,
/// as `tbrw import sampler` does for a file.
pub fn import_profile_file(
    profile: &Path,
    out: &Path,
    opts: &tbrw_import::elf_profile::ImportOptions,
    popts: &tbrw_import::elf_profile::ProfileOptions,
) -> Result<tbrw_import::elf_profile::ImportStats, tbrw_import::ImportError> {
    let name = profile.display().to_string();
    let input = std::fs::File::open(profile).map_err(|e| tbrw_import::ImportError::io(&name, e))?;
    let mut w = tbrw::Tb5Writer::create(out)?;
    let stats = tbrw_import::elf_profile::import_profile(input, &name, &mut w, opts, popts, ())?;
    w.close()?;
    Ok(stats)
}
