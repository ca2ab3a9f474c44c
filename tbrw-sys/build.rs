fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtbrw.so.0");
}
