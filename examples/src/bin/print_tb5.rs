//! `print_tb5 FILE.tb5 [--json] [--records N|all]`: prints every section.
use std::io::Write;

use tbrw_examples::print::{print_file, Options, Records};

fn usage() -> ! {
    eprintln!("usage: print_tb5 FILE.tb5 [--json] [--records N|all]");
    std::process::exit(2);
}

fn main() {
    let mut opts = Options::default();
    let mut path = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => opts.json = true,
            "--records" => {
                opts.records = match args.next().as_deref() {
                    Some("all") => Records::All,
                    Some(n) => Records::First(n.parse().unwrap_or_else(|_| usage())),
                    None => usage(),
                }
            }
            "-h" | "--help" => usage(),
            _ if path.is_none() => path = Some(a),
            _ => usage(),
        }
    }
    let path = path.unwrap_or_else(|| usage());
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let r = print_file(std::path::Path::new(&path), opts, &mut out);
    let r = r.and_then(|()| out.flush().map_err(Into::into));
    if let Err(e) = r {
        drop(out);
        eprintln!("print_tb5: {e}");
        std::process::exit(1);
    }
}
