//! A dataset folder of Parquet runs: checks before any work (a new folder,
//! one replaced, or runs added; never an input), run ids, the layout (one
//! folder per run, `host=H/run=R/TABLE.parquet`), and putting a complete
//! export in place by the folder rule of `tbrw_output::folder`: built in a
//! work folder beside the dataset; a new dataset renamed into place, a
//! replaced one exchanged with the old one in one step, each added run one
//! folder renamed into the dataset, so that no reader ever sees part of a
//! run. Imports the rest of `parquet` and `folder` (the export's files).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use tbrw_schema::Progress;

use tbrw_output::crash::folder_crash_point as crash_point;
use tbrw_output::folder::{exists_error, folder_target, lock_folder, rename_noreplace, FolderTarget, WorkFolder};
use tbrw_output::OutputError;
use tbrw_query::file_symbols::SymbolOptions;

use super::partition_value;
use crate::error::ExportError;

/// The file that marks a folder as a dataset of this exporter (engines skip
/// names starting with `_`).
pub const MARKER: &str = "_tbrw_dataset.json";
/// What the marker holds: the layout's version, checked by `--append`.
/// Version 2: one folder per run, every table's file in it (version 1 had
/// one folder per table, which a run could not be added to in one step).
pub const MARKER_TEXT: &str = "{\"format\":\"tbrw-parquet\",\"version\":2}\n";

/// Why a dataset was not written. Nothing is left in the dataset folder
/// (nor next to it) when one is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// No input file was given.
    #[error("no TB5 file to export")]
    NoInput,
    /// The output path was refused, or the output could not be put in place.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// Exporting a run failed.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// An export's file could not be written into the output folder `path`.
    #[error("{}: writing {what}: {}", path.display(), tbrw_output::plain(source))]
    Write {
        /// The dataset folder, as given.
        path: PathBuf,
        /// What was written.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// A table of the output could not be written (`path` is the folder given).
    #[error("{}/{source}", path.display())]
    Table {
        /// The dataset folder, as given.
        path: PathBuf,
        /// The export's error.
        source: ExportError,
    },
    /// The folder exists and holds something, and [`Mode::New`] was asked.
    #[error("{}: exists", path.display())]
    Exists {
        /// The dataset folder.
        path: PathBuf,
    },
    /// The folder holds something that is not a dataset of this exporter.
    #[error("{}: is not a dataset of tbrw export parquet (no {MARKER})", path.display())]
    NotADataset {
        /// The dataset folder.
        path: PathBuf,
    },
    /// The dataset is of another layout version: runs cannot be added.
    #[error("{}: a dataset of another layout version ({marker})", path.display())]
    OtherVersion {
        /// The dataset's marker file.
        path: PathBuf,
        /// What the marker holds.
        marker: String,
    },
    /// The dataset holds one of the inputs: never replaced.
    #[error("{}: holds the input {}: give another output folder", path.display(), input.display())]
    HoldsInput {
        /// The dataset folder.
        path: PathBuf,
        /// The input inside it.
        input: PathBuf,
    },
    /// Another process made a dataset at the path while this export ran.
    #[error("{}: another process made a dataset there while this export ran: nothing written", path.display())]
    MadeMeanwhile {
        /// The dataset folder.
        path: PathBuf,
    },
    /// Another process changed the dataset while this export ran.
    #[error("{}: {why} while this export ran: nothing written", path.display())]
    Changed {
        /// The dataset folder.
        path: PathBuf,
        /// What happened ("no longer a dataset").
        why: String,
    },
    /// An I/O error on the dataset folder.
    #[error("{}: {}", path.display(), tbrw_output::plain(source))]
    Io {
        /// The dataset folder, as given.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

impl DatasetError {
    fn io(path: &Path, source: io::Error) -> DatasetError {
        DatasetError::Io { path: path.to_owned(), source }
    }
}

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

/// One exported run.
#[derive(Clone, Debug)]
pub struct Run {
    /// The TB5 file.
    pub file: PathBuf,
    /// Its host partition value.
    pub host: String,
    /// Its run id.
    pub run: String,
    /// What the run id is made from: the file's stem as a partition value.
    pub stem: String,
    /// Rows in `samples`.
    pub samples: u64,
    /// Rows in `intervals`.
    pub intervals: u64,
    /// Rows in `functions`.
    pub functions: u64,
}

/// What a dataset export is told besides its paths.
#[derive(Clone, Debug, Default)]
pub struct ParquetOptions {
    /// The host of every run (default: each file's own host name).
    pub hostname: Option<String>,
    /// A new folder, one replaced, or runs added.
    pub mode: Mode,
    /// Symbolize samples (the `functions` table and `function_id`), with these options.
    pub symbols: Option<SymbolOptions>,
}

/// Exports `files` to the dataset `dir`. `progress` gets records done in the
/// file being exported; symbolizer warnings go to `warn`. Nothing is left in
/// `dir` (nor next to it) when it fails.
pub fn export_parquet(
    files: &[PathBuf],
    dir: &Path,
    opts: &ParquetOptions,
    progress: &mut dyn Progress,
    warn: &mut Vec<tbrw_query::Warning>,
) -> Result<Vec<Run>, DatasetError> {
    if files.is_empty() {
        return Err(DatasetError::NoInput);
    }
    for f in files {
        tbrw_output::check::check_input(f, "a TB5 file")?;
    }
    let target = check(dir, files, opts.mode)?;
    super::sort_chunk()?;
    // Every file is opened and checked before anything is written.
    let opened: Vec<tbrw::Tb5File> =
        files.iter().map(|f| tbrw::Tb5File::open(f).map_err(ExportError::from)).collect::<Result<_, _>>()?;
    let mut work = WorkFolder::create(&target)?;
    let mut runs: Vec<Run> = Vec::new();
    for (path, file) in files.iter().zip(&opened) {
        let recorded = super::host_name(file)?;
        let host_name = opts.hostname.clone().or(recorded);
        let host = partition_value(host_name.as_deref().unwrap_or(""));
        let stem = partition_value(&path.file_stem().map_or_else(|| "run".into(), |s| s.to_string_lossy()));
        // Unique in this export; an append chooses the final id when it
        // publishes, under the dataset's lock.
        let run = free_id(&stem, |id| runs.iter().any(|r| r.host == host && r.run == id));
        let source = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string();
        let source = super::RunSource {
            source_file: &source,
            source_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            host_name: host_name.as_deref(),
            host: &host,
            run: &run,
        };
        let rows = super::export_run(file, &source, &mut work, opts.symbols.as_ref(), progress, warn)
            .map_err(|e| written(dir, e))?;
        runs.push(Run {
            file: path.clone(),
            host,
            run,
            stem,
            samples: rows.samples,
            intervals: rows.intervals,
            functions: rows.functions,
        });
    }
    let marker = work.out().join(MARKER);
    fs::write(&marker, MARKER_TEXT).map_err(|e| DatasetError::io(dir, e))?;
    crash_point("file written");
    publish(work, &target, opts.mode, &mut runs)?;
    Ok(runs)
}

/// An export's error while it writes into the dataset folder `dir`: a
/// failed write, or a table that could not be written, names the folder
/// given (never the work folder the file is really in); other errors (the
/// input's) are kept as they are.
fn written(dir: &Path, e: ExportError) -> DatasetError {
    match e {
        ExportError::Write { what, source } => DatasetError::Write { path: dir.to_owned(), what, source },
        e @ ExportError::Table { .. } => DatasetError::Table { path: dir.to_owned(), source: e },
        e => e.into(),
    }
}

/// `stem`, else `stem-2`, `stem-3`...: the first that `taken` refuses.
fn free_id(stem: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut id = stem.to_owned();
    let mut k = 2;
    while taken(&id) {
        id = format!("{stem}-{k}");
        k += 1;
    }
    id
}

/// The folder of run `run` of host `host`, relative to the dataset.
fn run_folder(host: &str, run: &str) -> PathBuf {
    Path::new(&format!("host={host}")).join(format!("run={run}"))
}

/// What a folder holds as a dataset.
#[derive(Debug, PartialEq, Eq)]
enum Holds {
    Empty,
    /// A dataset of this exporter; `true` when of this layout version.
    Dataset(bool),
    Other,
}

fn holds(dir: &Path) -> io::Result<Holds> {
    if fs::read_dir(dir)?.next().is_none() {
        return Ok(Holds::Empty);
    }
    match fs::read(dir.join(MARKER)) {
        Ok(text) => Ok(Holds::Dataset(text == MARKER_TEXT.as_bytes())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Holds::Other),
        Err(e) => Err(e),
    }
}

/// Checks the output folder and the inputs before any work: a file at
/// `dir` is refused; an existing non-empty folder needs `Force` (and is
/// replaced only when it is a dataset of this exporter) or `Append` (only
/// to such a dataset, of this layout version); `Force` never replaces a
/// folder holding an input. Removes what killed exports of `dir` left.
pub fn check(dir: &Path, inputs: &[PathBuf], mode: Mode) -> Result<FolderTarget, DatasetError> {
    let target = folder_target(dir, "the dataset folder to write", false)?;
    remove_old_leftovers(&target);
    let real = target.path();
    let held = match fs::metadata(&real) {
        Ok(_) => holds(&real).map_err(|e| DatasetError::io(dir, e))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(target),
        Err(e) => return Err(DatasetError::io(dir, e)),
    };
    let replaced = match (mode, &held) {
        (_, Holds::Empty) => true,
        (Mode::New, _) => return Err(DatasetError::Exists { path: dir.to_owned() }),
        (_, Holds::Other) => return Err(DatasetError::NotADataset { path: dir.to_owned() }),
        (Mode::Append, Holds::Dataset(false)) => {
            let marker = fs::read_to_string(real.join(MARKER)).unwrap_or_default().trim().to_owned();
            return Err(DatasetError::OtherVersion { path: dir.join(MARKER), marker });
        }
        (Mode::Append, Holds::Dataset(true)) => false,
        (Mode::Force, Holds::Dataset(_)) => {
            let root = real.canonicalize().map_err(|e| DatasetError::io(dir, e))?;
            if let Some(i) = inputs.iter().find(|i| i.canonicalize().is_ok_and(|c| c.starts_with(&root))) {
                return Err(DatasetError::HoldsInput { path: dir.to_owned(), input: i.clone() });
            }
            true
        }
    };
    if replaced {
        target.check_not_current()?;
    }
    // Replaced (the folder moves) or added to (run folders made in it): it must be writable.
    tbrw_output::folder::writable(&real).map_err(|e| OutputError::io(dir, "cannot be written", e))?;
    Ok(target)
}

/// Puts a complete export in place. `New` and `Force` (and an `Append` to a
/// folder that is missing or empty) publish the whole folder
/// ([`WorkFolder`]); an `Append` to a dataset renames each run's folder into
/// it under the dataset's lock, choosing the run's final id there.
/// Checked again at that moment: another command may have made, replaced
/// or added to the dataset meanwhile.
fn publish(work: WorkFolder, target: &FolderTarget, mode: Mode, runs: &mut [Run]) -> Result<(), DatasetError> {
    work.sync()?;
    let given = target.given();
    let dir = target.path();
    let io_err = |e| DatasetError::io(given, e);
    // At most a few rounds: a folder made between the look and the rename is looked at again.
    for _ in 0..3 {
        match fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => match work.put_new() {
                Ok(()) => {
                    work.finish();
                    return Ok(());
                }
                Err(e) if exists_error(&e) => continue,
                Err(e) => return Err(io_err(e)),
            },
            Err(e) => return Err(io_err(e)),
            Ok(_) => {}
        }
        let _lock = lock_folder(&dir, given)?;
        let held = holds(&dir).map_err(io_err)?;
        match (mode, held) {
            (Mode::Append, Holds::Dataset(true)) => append_runs(&work, &dir, runs).map_err(io_err)?,
            (_, Holds::Empty) | (Mode::Force, Holds::Dataset(_)) => work.exchange()?,
            (Mode::New, Holds::Dataset(_)) => return Err(DatasetError::MadeMeanwhile { path: given.to_owned() }),
            (_, held) => {
                let why = if held == Holds::Other { "no longer a dataset" } else { "another layout version" };
                return Err(DatasetError::Changed { path: given.to_owned(), why: format!("changed ({why})") });
            }
        }
        work.finish();
        return Ok(());
    }
    let why = "made and removed again by another process".to_owned();
    Err(DatasetError::Changed { path: given.to_owned(), why })
}

/// Adds the runs built in `work` to the dataset `dir` (whose lock the
/// caller holds). A host new to the dataset comes in with its folder, all
/// its runs in one rename; a run of a host already there is one rename of
/// its folder, under the first id free at that moment (`stem`, `stem-2`...),
/// which becomes `run.run`. Each rename is atomic, so a reader never sees
/// part of a run; killed between two, the dataset has some of the runs,
/// each whole. On an error the runs already added are taken out again.
fn append_runs(work: &WorkFolder, dir: &Path, runs: &mut [Run]) -> io::Result<()> {
    let out = work.out();
    let mut done: Vec<(PathBuf, PathBuf)> = Vec::new();
    let r = (|| -> io::Result<()> {
        let mut hosts: Vec<String> = Vec::new();
        for r in runs.iter() {
            if !hosts.contains(&r.host) {
                hosts.push(r.host.clone());
            }
        }
        for host in hosts {
            let (from, to) = (out.join(format!("host={host}")), dir.join(format!("host={host}")));
            // The host's folder, never a link or file of that name: a run is
            // never put through a link planted in the dataset.
            let present = match fs::symlink_metadata(&to) {
                Ok(m) if m.is_dir() => true,
                Ok(m) => {
                    let what = if m.file_type().is_symlink() { "a symbolic link" } else { "not a folder" };
                    return Err(io::Error::other(format!(
                        "host={host} in the dataset is {what}: no run is put through it (remove it, or give \
                         another dataset folder)"
                    )));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                Err(e) => return Err(e),
            };
            if !present {
                match rename_noreplace(&from, &to) {
                    Ok(()) => {
                        crash_point("runs published");
                        done.push((to, from));
                        continue;
                    }
                    Err(e) if exists_error(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            let mut chosen: Vec<String> = Vec::new();
            for r in runs.iter_mut().filter(|r| r.host == host) {
                let from = out.join(run_folder(&host, &r.run));
                loop {
                    let taken = |id: &str| fs::symlink_metadata(to.join(format!("run={id}"))).is_ok();
                    let id = free_id(&r.stem, |id| chosen.iter().any(|c| c == id) || taken(id));
                    let dest = to.join(format!("run={id}"));
                    match rename_noreplace(&from, &dest) {
                        Ok(()) => {
                            crash_point("run published");
                            done.push((dest, from));
                            chosen.push(id.clone());
                            r.run = id;
                            break;
                        }
                        // Taken meanwhile by a writer that ignores the lock: the next one.
                        Err(e) if exists_error(&e) => chosen.push(id),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        fs::File::open(dir)?.sync_all()
    })();
    if r.is_err() {
        for (added, back) in done.iter().rev() {
            let _ = fs::rename(added, back);
        }
    }
    r
}

/// Removes what exports of earlier versions left beside or in `target`
/// when their process is gone (they held no lock: the process id in the
/// name is all there is): staging folders `.NAME.tbrw-partial-PID`, old
/// datasets moved aside `.NAME.tbrw-old-PID`, and `--append`'s
/// `NAME/_tbrw-partial-PID`. An old dataset moved aside by an export killed
/// before it put the new one in place is put back first when nothing is at
/// the target.
fn remove_old_leftovers(target: &FolderTarget) {
    let real = target.path();
    let Some(name) = real.file_name().map(|n| n.to_string_lossy().into_owned()) else { return };
    let parent = tbrw_output::work_file::folder_of(&real);
    let dead = |n: &str, prefix: &str| -> bool {
        n.strip_prefix(prefix)
            .and_then(|pid| pid.parse::<i32>().ok())
            .is_some_and(|pid| pid > 0 && !Path::new("/proc").join(pid.to_string()).exists())
    };
    let (partial, old) = (format!(".{name}.tbrw-partial-"), format!(".{name}.tbrw-old-"));
    let mut left: Vec<(String, PathBuf)> = Vec::new();
    if let Ok(rd) = fs::read_dir(&parent) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if (dead(&n, &partial) || dead(&n, &old)) && e.file_type().is_ok_and(|t| t.is_dir()) {
                left.push((n, e.path()));
            }
        }
    }
    // The old dataset first: put back when the target is missing.
    left.sort_by_key(|(n, _)| !n.starts_with(&old));
    for (n, path) in left {
        if n.starts_with(&old) && fs::symlink_metadata(&real).is_err() && path.join(MARKER).is_file() {
            let _ = rename_noreplace(&path, &real);
        }
        if path.exists() {
            let _ = fs::remove_dir_all(&path);
        }
    }
    if let Ok(rd) = fs::read_dir(&real) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if dead(&n, "_tbrw-partial-") && e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }

    fn run(host: &str, run: &str) -> Run {
        Run {
            file: PathBuf::from(format!("{run}.tb5")),
            host: host.into(),
            run: run.into(),
            stem: run.into(),
            samples: 0,
            intervals: 0,
            functions: 0,
        }
    }

    /// A work folder for `dir` with one staged file per run.
    fn staged(dir: &Path, runs: &[Run]) -> (FolderTarget, WorkFolder) {
        let target = folder_target(dir, "x", false).unwrap();
        let work = WorkFolder::create(&target).unwrap();
        for r in runs {
            let d = work.out().join(run_folder(&r.host, &r.run));
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("runs.parquet"), r.file.to_string_lossy().as_bytes()).unwrap();
        }
        fs::write(work.out().join(MARKER), MARKER_TEXT).unwrap();
        (target, work)
    }

    #[test]
    fn runs_are_added_under_free_ids_and_nothing_is_left_beside() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ds");
        let mut first = [run("h", "a")];
        let (target, work) = staged(&dir, &first);
        publish(work, &target, Mode::New, &mut first).unwrap();
        assert_eq!(names(&dir), ["_tbrw_dataset.json", "host=h"]);
        // Two runs of one stem (a-2 in this export), one of a new host.
        let mut more = [run("h", "a"), run("h", "a-2"), run("g", "a")];
        more[1].stem = "a".into();
        let (target, work) = staged(&dir, &more);
        check(&dir, &[], Mode::Append).unwrap();
        publish(work, &target, Mode::Append, &mut more).unwrap();
        let ids: Vec<&str> = more.iter().map(|r| r.run.as_str()).collect();
        assert_eq!(ids, ["a-2", "a-3", "a"]);
        assert_eq!(names(&dir.join("host=h")), ["run=a", "run=a-2", "run=a-3"]);
        assert_eq!(fs::read(dir.join("host=h/run=a-3/runs.parquet")).unwrap(), b"a-2.tb5");
        assert_eq!(names(&dir.join("host=g")), ["run=a"]);
        assert_eq!(names(t.path()), ["ds"], "the work folders are gone");
    }

    #[test]
    fn force_replaces_only_a_dataset_and_never_an_input() {
        let t = tempfile::tempdir().unwrap();
        let other = t.path().join("other");
        fs::create_dir(&other).unwrap();
        fs::write(other.join("keep.txt"), b"k").unwrap();
        assert!(check(&other, &[], Mode::Force).is_err());
        assert!(check(&other, &[], Mode::Append).is_err());
        fs::write(other.join(MARKER), MARKER_TEXT).unwrap();
        check(&other, &[], Mode::Force).unwrap();
        assert!(check(&other, &[other.join("keep.txt")], Mode::Force).is_err());
        assert!(check(&other.join("keep.txt"), &[], Mode::Force).is_err(), "a file is not a folder");
        // A dataset of layout version 1 is replaced, not added to.
        fs::write(other.join(MARKER), "{\"format\":\"tbrw-parquet\",\"version\":1}\n").unwrap();
        check(&other, &[], Mode::Force).unwrap();
        let e = check(&other, &[], Mode::Append).unwrap_err().to_string();
        assert!(e.contains("another layout version"), "{e}");
    }

    #[test]
    fn leftovers_of_earlier_versions_are_removed_and_a_moved_dataset_put_back() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("pq");
        // A process id that is not running: above the kernel's largest.
        let dead = 4_194_304 + 17;
        let old = t.path().join(format!(".pq.tbrw-old-{dead}"));
        fs::create_dir(&old).unwrap();
        fs::write(old.join(MARKER), "{\"format\":\"tbrw-parquet\",\"version\":1}\n").unwrap();
        fs::create_dir(t.path().join(format!(".pq.tbrw-partial-{dead}"))).unwrap();
        // A live process's staging stays.
        let live = t.path().join(format!(".pq.tbrw-partial-{}", std::process::id()));
        fs::create_dir(&live).unwrap();
        check(&dir, &[], Mode::Force).unwrap();
        assert!(dir.join(MARKER).is_file(), "the old dataset is back");
        fs::create_dir(dir.join(format!("_tbrw-partial-{dead}"))).unwrap();
        check(&dir, &[], Mode::Force).unwrap();
        assert_eq!(names(&dir), [MARKER]);
        assert_eq!(names(t.path()), [format!(".pq.tbrw-partial-{}", std::process::id()), "pq".into()]);
    }
}
