//! Crash points: named steps of a commit where a test build can be killed
//! on request, so that the kill tests can stop a writer between any two
//! writes, links, renames or removals and check what is left. Two
//! counters, armed by two environment variables, because a command reaches
//! both kinds and one number must name one point: the file points of
//! [`crate::work_file`] and of the writers built on it
//! (`TBRW_TEST_CRASH_AT`), and the points of folder outputs
//! (`TBRW_TEST_CLI_CRASH_AT`, [`crate::folder`]).
//!
//! With `VAR=k` in the environment, the `k`-th point of that kind the
//! process reaches (the first is number 1) kills it with `SIGKILL`, after
//! printing `tbrw crash point k: NAME` to stderr. Builds without debug
//! assertions (release) have none. Imports nothing of this crate.

#[cfg(debug_assertions)]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(debug_assertions)]
use std::sync::OnceLock;

/// The environment variable that arms the file points ([`crash_point`]).
pub const FILE_POINTS: &str = "TBRW_TEST_CRASH_AT";
/// The environment variable that arms the folder points
/// ([`folder_crash_point`]).
pub const FOLDER_POINTS: &str = "TBRW_TEST_CLI_CRASH_AT";

/// One kind of crash point: the variable that arms it and the count of
/// points reached.
#[cfg(debug_assertions)]
struct Points {
    var: &'static str,
    at: OnceLock<Option<u64>>,
    reached: AtomicU64,
}

#[cfg(debug_assertions)]
impl Points {
    const fn new(var: &'static str) -> Points {
        Points { var, at: OnceLock::new(), reached: AtomicU64::new(0) }
    }

    fn reach(&self, name: &str) {
        let at = self.at.get_or_init(|| std::env::var(self.var).ok().and_then(|v| v.parse().ok()));
        let Some(at) = *at else { return };
        let n = self.reached.fetch_add(1, Ordering::SeqCst) + 1;
        if n == at {
            eprintln!("tbrw crash point {n}: {name}");
            // SAFETY: kill(2) of this process with a constant signal; no memory is passed.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
    }
}

#[cfg(debug_assertions)]
static FILES: Points = Points::new(FILE_POINTS);
#[cfg(debug_assertions)]
static FOLDERS: Points = Points::new(FOLDER_POINTS);

/// A file point (after each write, truncation, link and rename of a
/// commit): kills a test build armed with [`FILE_POINTS`] there.
#[cfg(debug_assertions)]
pub fn crash_point(name: &str) {
    FILES.reach(name);
}

/// A folder point (after each file a folder output writes, each rename
/// and each removal): kills a test build armed with [`FOLDER_POINTS`].
#[cfg(debug_assertions)]
pub fn folder_crash_point(name: &str) {
    FOLDERS.reach(name);
}

/// Release builds: no crash points.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn crash_point(_name: &str) {}

/// Release builds: no crash points.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn folder_crash_point(_name: &str) {}
