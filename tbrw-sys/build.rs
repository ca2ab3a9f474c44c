//! Gives `libtbrw.so` the versioned soname `libtbrw.so.<major>`
//! (`libtbrw.so.0`), as an installed library has: `make install` puts
//! `libtbrw.so.<version>` and the links `libtbrw.so.<major>` and
//! `libtbrw.so` in place.
//!
//! A program linked against `target/<profile>/libtbrw.so` records the
//! soname, so at run time it looks for `libtbrw.so.0`: this script makes
//! that link, `libtbrw.so.0 -> libtbrw.so`, in the profile folder, which is
//! what keeps `-Ltarget/release -Wl,-rpath,...` builds working in the tree
//! (and the test harness's builds against `target/<profile>`).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The Makefile names the installed files from the same version.
    let soname = format!("libtbrw.so.{}", env!("CARGO_PKG_VERSION_MAJOR"));
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    match profile_dir() {
        Some(dir) => {
            if let Err(e) = link_soname(&dir, &soname) {
                println!("cargo:warning=could not create {}/{soname}: {e}", dir.display());
            }
        }
        None => println!("cargo:warning=no target/<profile> folder above OUT_DIR: {soname} link not made"),
    }
}

/// `target/[<triple>/]<profile>`: cargo's `OUT_DIR` is
/// `<profile>/build/tbrw-sys-<hash>/out`, and cargo has no variable naming
/// the profile folder itself.
fn profile_dir() -> Option<PathBuf> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR")?);
    let dir = out.ancestors().nth(3)?;
    (out.parent()?.parent()?.file_name()? == "build").then(|| dir.to_owned())
}

/// The link is relative, so it stays right if the target folder moves; it
/// dangles until the first link step of this crate writes `libtbrw.so`.
fn link_soname(dir: &Path, soname: &str) -> std::io::Result<()> {
    let link = dir.join(soname);
    if std::fs::read_link(&link).is_ok_and(|t| t == Path::new("libtbrw.so")) {
        return Ok(());
    }
    match std::fs::remove_file(&link) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::os::unix::fs::symlink("libtbrw.so", &link)
}
