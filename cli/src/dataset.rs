//! The dataset folder of `tbrw export parquet`: checks before any work
//! (`--force`, `--append`, never an input), the staging folder everything is
//! written to first, run ids, hive-style partition paths
//! (`TABLE/host=H/run=R/TABLE.parquet`), and putting a complete export in
//! place (or removing it when the export fails).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::commands::ParquetOptions;
use crate::error::CliError;
use crate::output::DirFolder;

/// The file that marks a folder as a dataset of this exporter (engines skip
/// names starting with `_`).
pub const MARKER: &str = "_tbrw_dataset.json";
/// What the marker holds: the layout's version, checked by `--append`.
pub const MARKER_TEXT: &str = "{\"format\":\"tbrw-parquet\",\"version\":1}\n";
/// The prefix of staging folders inside a dataset (`--append`).
const PARTIAL: &str = "_tbrw-partial-";

/// What to do with an existing output folder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// The folder must not exist, or be empty.
    #[default]
    New,
    /// Replace a dataset this exporter wrote (or an empty folder).
    Force,
    /// Add runs to a dataset this exporter wrote (created if missing).
    Append,
}

pub use tbrw_export::parquet::partition_value;

/// The tables of a dataset (their folders).
const TABLES: [&str; 8] = ["samples", "intervals", "modules", "processes", "threads", "events", "functions", "runs"];

/// One exported run.
#[derive(Clone, Debug)]
pub struct Run {
    /// The TB5 file.
    pub file: PathBuf,
    /// Its host partition value.
    pub host: String,
    /// Its run id.
    pub run: String,
    /// Rows in `samples`.
    pub samples: u64,
    /// Rows in `intervals`.
    pub intervals: u64,
    /// Rows in `functions`.
    pub functions: u64,
}

/// Exports `files` to the dataset `dir`. `progress` gets records done in the
/// file being exported; symbolizer warnings go to `warn`. Nothing is left in
/// `dir` (nor next to it) when it fails.
pub fn export_parquet(
    files: &[PathBuf],
    dir: &Path,
    opts: &ParquetOptions,
    progress: &mut dyn FnMut(u64),
    warn: &mut dyn std::io::Write,
) -> Result<Vec<Run>, CliError> {
    if files.is_empty() {
        return Err(CliError::msg("no TB5 file to export"));
    }
    for f in files {
        crate::output::check_input(f, "a TB5 file")?;
    }
    check(dir, files, opts.mode)?;
    tbrw_export::parquet::sort_chunk()?;
    // Every file is opened and checked before anything is written.
    let opened: Vec<tbrw::Tb5File> = files.iter().map(|f| crate::output::open(f)).collect::<Result<_, _>>()?;
    let mut staging = Staging::create(dir, opts.mode)?;
    let mut runs = Vec::new();
    for (path, file) in files.iter().zip(&opened) {
        let recorded = tbrw_export::parquet::host_name(file)?;
        let host_name = opts.hostname.clone().or(recorded);
        let host = partition_value(host_name.as_deref().unwrap_or(""));
        let stem = path.file_stem().map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
        let run = staging.run_id(&host, &stem);
        let source = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string();
        let source = tbrw_export::parquet::RunSource {
            source_file: &source,
            source_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            host_name: host_name.as_deref(),
            host: &host,
            run: &run,
        };
        let mut folder = staging.folder()?;
        let rows = tbrw_export::parquet::export_run(file, &source, &mut folder, opts.symbols.as_ref(), progress, warn)?;
        runs.push(Run {
            file: path.clone(),
            host,
            run,
            samples: rows.samples,
            intervals: rows.intervals,
            functions: rows.functions,
        });
    }
    staging.commit()?;
    Ok(runs)
}

/// Whether `dir` holds the marker of a dataset.
fn is_dataset(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
}

fn plain_io(p: &Path, e: std::io::Error) -> CliError {
    CliError::msg(format!("{}: {e}", p.display()))
}

/// Checks the output folder and the inputs before any work: a file at
/// `dir` is refused; an existing non-empty folder needs `Force` (and is
/// replaced only when it is a dataset of this exporter) or `Append` (only
/// to such a dataset); `Force` never replaces a folder holding an input.
pub fn check(dir: &Path, inputs: &[PathBuf], mode: Mode) -> Result<(), CliError> {
    let p = dir.display();
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = match dir.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            return match std::fs::metadata(parent) {
                Ok(m) if m.is_dir() => Ok(()),
                Ok(_) => Err(CliError::msg(format!("{p}: {} is not a folder", parent.display()))),
                Err(e) => Err(CliError::msg(format!("{p}: folder {}: {e}", parent.display()))),
            };
        }
        Err(e) => return Err(plain_io(dir, e)),
    };
    if !meta.is_dir() {
        return Err(CliError::msg(format!("{p}: is a file, not a folder: -o names the dataset folder to write")));
    }
    let empty = std::fs::read_dir(dir).map_err(|e| plain_io(dir, e))?.next().is_none();
    match mode {
        _ if empty => Ok(()),
        Mode::New => {
            Err(CliError::msg(format!("{p}: exists: add --append to add runs to it, or --force (-f) to replace it")))
        }
        Mode::Append | Mode::Force if !is_dataset(dir) => Err(CliError::msg(format!(
            "{p}: is not a dataset of tbrw export parquet (no {MARKER}): neither --append nor --force writes into it"
        ))),
        Mode::Append => {
            let text = std::fs::read_to_string(dir.join(MARKER)).map_err(|e| plain_io(&dir.join(MARKER), e))?;
            if text != MARKER_TEXT {
                return Err(CliError::msg(format!(
                    "{}: a dataset of another layout version ({}): --append cannot add to it",
                    dir.join(MARKER).display(),
                    text.trim()
                )));
            }
            Ok(())
        }
        Mode::Force => {
            let root = dir.canonicalize().map_err(|e| plain_io(dir, e))?;
            for i in inputs {
                if i.canonicalize().is_ok_and(|c| c.starts_with(&root)) {
                    return Err(CliError::msg(format!(
                        "{p}: holds the input {}: give another output folder (not even --force replaces an input)",
                        i.display()
                    )));
                }
            }
            Ok(())
        }
    }
}

/// An export under way: everything goes to a staging folder, which
/// [`Staging::commit`] puts in place; dropped without a commit, it is removed.
pub struct Staging {
    dir: PathBuf,
    staging: PathBuf,
    mode: Mode,
    /// (host, run) partitions of this export.
    partitions: Vec<(String, String)>,
    /// Tables written (folder names).
    tables: HashSet<&'static str>,
    committed: bool,
}

/// Whether process `pid` is alive (a staging folder of a dead export is left over).
fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

impl Staging {
    /// Creates the staging folder for an export to `dir` (after [`check`]).
    pub fn create(dir: &Path, mode: Mode) -> Result<Staging, CliError> {
        let me = std::process::id();
        // Appending to a missing or empty folder makes a new dataset (with its marker).
        let mode = if mode == Mode::Append && !is_dataset(dir) { Mode::New } else { mode };
        let staging = if mode == Mode::Append {
            // Left-over staging folders of killed exports go first.
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if let Some(pid) = n.strip_prefix(PARTIAL).and_then(|x| x.parse::<u32>().ok()) {
                        if !alive(pid) {
                            let _ = std::fs::remove_dir_all(e.path());
                        }
                    }
                }
            }
            dir.join(format!("{PARTIAL}{me}"))
        } else {
            let name = dir.file_name().map_or_else(|| "dataset".into(), |n| n.to_string_lossy().into_owned());
            let parent = match dir.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            parent.join(format!(".{name}.tbrw-partial-{me}"))
        };
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(|e| plain_io(&staging, e))?;
        }
        std::fs::create_dir_all(&staging).map_err(|e| plain_io(&staging, e))?;
        Ok(Staging {
            dir: dir.to_path_buf(),
            staging,
            mode,
            partitions: Vec::new(),
            tables: HashSet::new(),
            committed: false,
        })
    }

    /// A run id for `stem` on `host` not taken in the dataset nor in this
    /// export: the stem (as a partition value), else the stem with `-2`, `-3`...
    pub fn run_id(&mut self, host: &str, stem: &str) -> String {
        let base = partition_value(stem);
        let taken = |r: &str| {
            self.partitions.iter().any(|(h, x)| h == host && x == r)
                || (self.mode == Mode::Append
                    && self.dir.join("runs").join(format!("host={host}")).join(format!("run={r}")).exists())
        };
        let mut id = base.clone();
        let mut k = 2;
        while taken(&id) {
            id = format!("{base}-{k}");
            k += 1;
        }
        self.partitions.push((host.to_owned(), id.clone()));
        id
    }

    /// The staging folder, for the export's files (partitions noted by [`Staging::run_id`]).
    pub fn folder(&mut self) -> Result<DirFolder, CliError> {
        for t in TABLES {
            self.tables.insert(t);
        }
        DirFolder::new(&self.staging)
    }

    /// The file of `table` for partition (`host`, `run`), its folder created.
    #[cfg(test)]
    fn table_file(&mut self, table: &'static str, host: &str, run: &str) -> Result<PathBuf, CliError> {
        let d = self.staging.join(table).join(format!("host={host}")).join(format!("run={run}"));
        std::fs::create_dir_all(&d).map_err(|e| plain_io(&d, e))?;
        self.tables.insert(table);
        Ok(d.join(format!("{table}.parquet")))
    }

    /// Puts the export in place: a new dataset is renamed to `dir` (an old
    /// one, with `--force`, is removed once the new one is there); with
    /// `--append` each new partition folder is renamed into the dataset.
    pub fn commit(mut self) -> Result<(), CliError> {
        match self.mode {
            Mode::New | Mode::Force => {
                std::fs::write(self.staging.join(MARKER), MARKER_TEXT)
                    .map_err(|e| plain_io(&self.staging.join(MARKER), e))?;
                let old = if self.dir.exists() {
                    let mut o = self.staging.clone();
                    o.set_file_name(
                        self.staging.file_name().unwrap_or_default().to_string_lossy().replace("-partial-", "-old-"),
                    );
                    std::fs::rename(&self.dir, &o).map_err(|e| plain_io(&self.dir, e))?;
                    Some(o)
                } else {
                    None
                };
                if let Err(e) = std::fs::rename(&self.staging, &self.dir) {
                    if let Some(o) = &old {
                        let _ = std::fs::rename(o, &self.dir);
                    }
                    return Err(plain_io(&self.dir, e));
                }
                self.committed = true;
                if let Some(o) = old {
                    std::fs::remove_dir_all(&o).map_err(|e| plain_io(&o, e))?;
                }
            }
            Mode::Append => {
                let mut moved: Vec<PathBuf> = Vec::new();
                let mut tables: Vec<&str> = self.tables.iter().copied().collect();
                tables.sort_unstable();
                for t in tables {
                    for (host, run) in &self.partitions {
                        let rel = Path::new(t).join(format!("host={host}")).join(format!("run={run}"));
                        let from = self.staging.join(&rel);
                        if !from.exists() {
                            continue;
                        }
                        let to = self.dir.join(&rel);
                        let r = to
                            .parent()
                            .map_or(Ok(()), std::fs::create_dir_all)
                            .and_then(|()| std::fs::rename(&from, &to));
                        if let Err(e) = r {
                            for m in &moved {
                                let _ = std::fs::remove_dir_all(m);
                            }
                            return Err(plain_io(&to, e));
                        }
                        moved.push(to);
                    }
                }
                self.committed = true;
                std::fs::remove_dir_all(&self.staging).map_err(|e| plain_io(&self.staging, e))?;
            }
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_export_leaves_nothing_and_run_ids_do_not_collide() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ds");
        {
            let mut s = Staging::create(&dir, Mode::New).unwrap();
            assert_eq!(s.run_id("h", "run"), "run");
            assert_eq!(s.run_id("h", "run"), "run-2");
            assert_eq!(s.run_id("g", "run"), "run");
            s.table_file("runs", "h", "run").unwrap();
        }
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0, "the staging folder is gone");
        let mut s = Staging::create(&dir, Mode::New).unwrap();
        let id = s.run_id("h", "run");
        std::fs::write(s.table_file("runs", "h", &id).unwrap(), b"x").unwrap();
        s.commit().unwrap();
        assert!(dir.join("runs/host=h/run=run/runs.parquet").is_file());
        assert!(check(&dir, &[], Mode::New).is_err());
        check(&dir, &[], Mode::Append).unwrap();
        let mut s = Staging::create(&dir, Mode::Append).unwrap();
        assert_eq!(s.run_id("h", "run"), "run-2");
        std::fs::write(s.table_file("runs", "h", "run-2").unwrap(), b"y").unwrap();
        s.commit().unwrap();
        assert!(dir.join("runs/host=h/run=run-2/runs.parquet").is_file());
        assert!(dir.join("runs/host=h/run=run/runs.parquet").is_file());
        let names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert!(!names.iter().any(|n| n.starts_with(PARTIAL)), "{names:?}");
    }

    #[test]
    fn force_replaces_only_a_dataset_and_never_an_input() {
        let t = tempfile::tempdir().unwrap();
        let other = t.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("keep.txt"), b"k").unwrap();
        assert!(check(&other, &[], Mode::Force).is_err());
        assert!(check(&other, &[], Mode::Append).is_err());
        std::fs::write(other.join(MARKER), MARKER_TEXT).unwrap();
        check(&other, &[], Mode::Force).unwrap();
        assert!(check(&other, &[other.join("keep.txt")], Mode::Force).is_err());
        assert!(check(&other.join("keep.txt"), &[], Mode::Force).is_err(), "a file is not a folder");
    }
}
