//! Building and running C test programs against this workspace's
//! `libtbrw`, shared by the C tests of `tbrw-sys` and `examples`
//! (included with `#[path]`). Programs are compiled with the system C
//! compiler (`-std=c11 -Wall -Wextra -Werror`), as C++17, or statically
//! linked, and can be run under valgrind when it is installed.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// target/<profile>, from where the test binary lives (target/<profile>/deps/...).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(Path::parent).expect("target/<profile>/deps").to_owned()
}

/// Builds `libtbrw.so` / `libtbrw.a` (cargo test does not build cdylibs) and returns their folder.
pub fn library() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = profile_dir();
        let cargo = option_env!("CARGO").unwrap_or("cargo");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "tbrw-sys"]).current_dir(root());
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let out = cmd.output().expect("run cargo");
        assert!(out.status.success(), "building libtbrw failed:\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(dir.join("libtbrw.so").exists() && dir.join("libtbrw.a").exists(), "no libtbrw in {}", dir.display());
        dir
    })
}

/// How to build a program.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lang {
    /// C11, linked against libtbrw.so.
    C,
    /// The same source as C++17.
    Cxx,
    /// C11, linked against libtbrw.a.
    CStatic,
    /// C11 with AddressSanitizer, LeakSanitizer and UBSan (errors abort),
    /// linked against libtbrw.so; the sanitizers' allocator also sees the
    /// library's allocations, so leaks in it are reported.
    CSanitized,
    /// C11 linked to no TBRW library: the program loads one with `dlopen`
    /// (this project's `libtbrw.so` or Intel's), so that neither one's
    /// symbols interpose on the other's.
    CDlopen,
}

/// Compiles `src` (with `tbrw-sys/include` and the source's folder on the
/// include path) and returns the executable. Each (source, language) is
/// compiled once per test process; the compiler writes a private file that
/// is renamed into place, so a test running the program never meets a
/// half-written executable ("Text file busy") while another test compiles.
pub fn compile(src: &Path, lang: Lang) -> PathBuf {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    type Slot = Arc<OnceLock<PathBuf>>;
    static BUILT: OnceLock<Mutex<HashMap<(PathBuf, String), Slot>>> = OnceLock::new();
    let slot = {
        let mut built = BUILT.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        built.entry((src.to_owned(), format!("{lang:?}"))).or_default().clone()
    };
    slot.get_or_init(|| compile_uncached(src, lang)).clone()
}

fn compile_uncached(src: &Path, lang: Lang) -> PathBuf {
    let lib = library();
    let out_dir = lib.join("c-tests");
    std::fs::create_dir_all(&out_dir).unwrap();
    let name = src.file_stem().unwrap().to_string_lossy().into_owned();
    let suffix = match lang {
        Lang::C => "",
        Lang::Cxx => "-cxx",
        Lang::CStatic => "-static",
        Lang::CSanitized => "-asan",
        Lang::CDlopen => "-dlopen",
    };
    let parent = src.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    let exe = out_dir.join(format!("{parent}-{name}{suffix}"));
    let staging = out_dir.join(format!(".{parent}-{name}{suffix}.{}", std::process::id()));
    let mut cmd = match lang {
        Lang::Cxx => {
            let mut c = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()));
            c.args(["-x", "c++", "-std=c++17"]);
            c
        }
        _ => {
            let mut c = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
            c.arg("-std=c11");
            c
        }
    };
    cmd.args(["-Wall", "-Wextra", "-Werror", "-g", "-pthread", "-D_GNU_SOURCE"])
        .arg("-I")
        .arg(root().join("tbrw-sys/include"))
        .arg("-I")
        .arg(src.parent().unwrap())
        .arg(src)
        .arg("-o")
        .arg(&staging);
    if lang == Lang::CSanitized {
        cmd.args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]);
    }
    if lang == Lang::CDlopen {
        cmd.arg("-ldl");
    } else if lang == Lang::CStatic {
        // A Rust staticlib needs these system libraries (`--print native-static-libs`).
        cmd.arg(lib.join("libtbrw.a")).args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"]);
    } else {
        cmd.arg("-L").arg(lib).arg("-ltbrw").arg(format!("-Wl,-rpath,{}", lib.display()));
    }
    let out = cmd.output().expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling {} ({lang:?}) failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&staging, &exe).expect("move the compiled program into place");
    exe
}

/// Runs a program that must succeed; returns its output.
pub fn run(exe: &Path, args: &[&str]) -> Output {
    let out = Command::new(exe).args(args).output().expect("run C program");
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether the C compiler can build and run a sanitized program (its
/// runtime libraries are installed, and the environment allows ASan's
/// memory layout).
pub fn sanitizers_available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tbrw-asan-probe-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let src = dir.join("probe.c");
        let exe = dir.join("probe");
        let ok = std::fs::write(&src, "int main(void) { return 0; }\n").is_ok()
            && Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
                .args(["-fsanitize=address,undefined"])
                .arg(&src)
                .arg("-o")
                .arg(&exe)
                .output()
                .is_ok_and(|o| o.status.success())
            && Command::new(&exe).output().is_ok_and(|o| o.status.success());
        let _ = std::fs::remove_dir_all(&dir);
        ok
    })
}

/// Compiles `src` with the sanitizers and runs it (skipped, with a note,
/// when the compiler has no sanitizer runtime).
pub fn run_sanitized(src: &Path, args: &[&str]) -> Option<Output> {
    if !sanitizers_available() {
        eprintln!("no sanitizer runtime: skipping the sanitized run of {}", src.display());
        return None;
    }
    let exe = compile(src, Lang::CSanitized);
    let out = Command::new(&exe)
        .args(args)
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=98")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .output()
        .expect("run sanitized program");
    assert!(
        out.status.success(),
        "{} {args:?} under ASan/UBSan failed ({}):\nstderr:\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(out)
}

/// Whether valgrind can be run.
pub fn valgrind_available() -> bool {
    Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Runs under valgrind: no memory error, no definite or indirect leak.
pub fn run_valgrind(exe: &Path, args: &[&str]) {
    if !valgrind_available() {
        eprintln!("valgrind is not installed: skipping the memory check of {}", exe.display());
        return;
    }
    let out = Command::new("valgrind")
        .args([
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
            "--show-leak-kinds=definite,indirect",
            "--quiet",
        ])
        .arg(exe)
        .args(args)
        .output()
        .expect("run valgrind");
    assert!(
        out.status.success(),
        "valgrind {} {args:?} ({}):\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
