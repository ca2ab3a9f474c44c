//! Writes `examples/data/sample.tb5` (or the path given): deterministic.
fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "examples/data/sample.tb5".into());
    if let Err(e) = tbrw_examples::sample::write_sample(std::path::Path::new(&path)) {
        eprintln!("make_sample: {e}");
        std::process::exit(1);
    }
}
