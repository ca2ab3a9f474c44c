//! `make install` end to end: installs into a temporary PREFIX, builds a C
//! program with nothing but `pkg-config --cflags --libs tbrw` and runs it
//! with no `LD_LIBRARY_PATH`, so it can only find the installed library.
//! Skipped, with a note, where make, pkg-config or a C compiler is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROGRAM: &str = r#"
#include <stdio.h>
#include <tbrw.h>

int main(void) {
    TBRW_U32 major = 0, minor = 0;
    if (TBRW_get_version(&major, &minor) != TBRW_SUCCESS) return 1;
    wchar_t wide[8];
    TBRW_U32 size = 8;
    if (TBRW_convert_utf8_to_wcs("\xc3\xa9t\xc3\xa9", wide, &size) != TBRW_SUCCESS) return 2;
    if (size != 4 || wide[0] != 0xe9 || wide[1] != L't' || wide[3] != 0) return 3;
    printf("installed tbrw %u.%u\n", major, minor);
    return 0;
}
"#;

fn available(tool: &str, version_arg: &str) -> bool {
    let found = Command::new(tool).arg(version_arg).output().is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("{tool} is not installed: skipping the install test");
    }
    found
}

fn ok(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `target/<profile>`, from where this test binary lives (`target/<profile>/deps/...`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_owned()
}

fn link_target(p: &Path) -> String {
    std::fs::read_link(p).unwrap_or_else(|e| panic!("{} is not a link: {e}", p.display())).display().to_string()
}

#[test]
fn installed_library_builds_and_runs_a_program_through_pkg_config() {
    if !(available("make", "--version") && available("pkg-config", "--version") && available("cc", "--version")) {
        return;
    }
    let prefix = tempfile::tempdir().unwrap();
    let prefix = prefix.path();
    // The profile this test was built with: its library is (re)built by the
    // install and shares the test build's artifacts, so no release build.
    let profile = profile_dir();
    let cargo = std::env::var("CARGO").ok().or(option_env!("CARGO").map(String::from)).unwrap_or("cargo".into());
    ok(
        Command::new("make")
            .arg("-C")
            .arg(env!("CARGO_MANIFEST_DIR"))
            .arg("install")
            .arg(format!("PREFIX={}", prefix.display()))
            .arg(format!("PROFILE={}", profile.file_name().unwrap().to_str().unwrap()))
            .arg(format!("CARGO={cargo}"))
            .env("CARGO_TARGET_DIR", profile.parent().unwrap())
            .output()
            .unwrap(),
        "make install",
    );

    let lib = prefix.join("lib");
    let version = env!("CARGO_PKG_VERSION");
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    assert!(lib.join(format!("libtbrw.so.{version}")).symlink_metadata().unwrap().is_file());
    assert_eq!(link_target(&lib.join(format!("libtbrw.so.{major}"))), format!("libtbrw.so.{version}"));
    assert_eq!(link_target(&lib.join("libtbrw.so")), format!("libtbrw.so.{major}"));
    assert!(lib.join("libtbrw.a").is_file());
    for h in ["tbrw.h", "tbrw_types.h", "samprec_shared.h"] {
        assert!(prefix.join("include").join(h).is_file(), "{h} not installed");
    }

    let pc_path = lib.join("pkgconfig");
    let flags = ok(
        Command::new("pkg-config")
            .args(["--cflags", "--libs", "tbrw"])
            .env("PKG_CONFIG_PATH", &pc_path)
            .output()
            .unwrap(),
        "pkg-config",
    );
    let flags = String::from_utf8(flags.stdout).unwrap();
    let prefix_s = prefix.to_str().unwrap();
    assert!(flags.contains(&format!("-I{prefix_s}/include")), "{flags}");
    assert!(flags.contains(&format!("-Wl,-rpath,{prefix_s}/lib")), "{flags}");

    let src = prefix.join("prog.c");
    let exe = prefix.join("prog");
    std::fs::write(&src, PROGRAM).unwrap();
    ok(
        Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .args(flags.split_whitespace())
            .output()
            .unwrap(),
        "cc",
    );
    // cargo puts target/<profile> on LD_LIBRARY_PATH, where libtbrw.so.0 also is.
    let run = ok(Command::new(&exe).env_remove("LD_LIBRARY_PATH").output().unwrap(), "the installed program");
    assert_eq!(String::from_utf8(run.stdout).unwrap(), "installed tbrw 2.3\n");

    ok(
        Command::new("make")
            .arg("-C")
            .arg(env!("CARGO_MANIFEST_DIR"))
            .arg("uninstall")
            .arg(format!("PREFIX={}", prefix.display()))
            .output()
            .unwrap(),
        "make uninstall",
    );
    let left: Vec<_> = walk(prefix).into_iter().filter(|p| p.is_file() || p.is_symlink()).collect();
    assert_eq!(left, [exe, src], "uninstall left files behind");
}

/// Every path under `dir`, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out.sort();
    out
}
