//! Gives `libtbrw.so` its soname. The soname is the file name itself, so a
//! program linked against `target/<profile>/libtbrw.so` finds it again at
//! run time without a versioned symlink.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtbrw.so");
}
