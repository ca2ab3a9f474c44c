//! `make_sample [OUT.tb5]`: writes `examples/data/sample.tb5` (or the path
//! given), deterministically. Replacing the shipped sample is its purpose,
//! so it overwrites without asking.
use tbrw_examples::cmdline::Program;

const PROGRAM: Program = Program {
    name: "make_sample",
    help: "usage: make_sample [OUT.tb5]

Writes the shipped sample file (default examples/data/sample.tb5, from the
repository root), byte for byte the same each time; replaces OUT.tb5.

  -h, --help  this text
",
};

fn main() {
    let mut path = None;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "-h" | "--help" => PROGRAM.help(),
            _ if a.starts_with('-') && a.len() > 1 => PROGRAM.bad_usage(&format!("unknown option '{a}'")),
            _ if path.is_none() => path = Some(a),
            _ => PROGRAM.bad_usage(&format!("one path expected: '{a}' is one too many")),
        }
    }
    let path = path.unwrap_or_else(|| "examples/data/sample.tb5".into());
    if let Err(e) = tbrw_examples::sample::write_sample(std::path::Path::new(&path)) {
        PROGRAM.fail(e);
    }
}
