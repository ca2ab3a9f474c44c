//! `print_tb5 FILE.tb5 [--json] [--records N|all]`: prints every section.
use std::io::Write;

use tbrw_examples::cmdline::Program;
use tbrw_examples::print::{print_file, Options, PrintError, Records};

const PROGRAM: Program = Program {
    name: "print_tb5",
    help: "usage: print_tb5 FILE.tb5 [--json] [--records N|all]

Prints every section of a TB5 file: the global sections, then each stream's
info, events, descriptor and its first records (bound to their module,
process and thread when the stream can be bound).

  --json           one JSON document instead of text
  --records N|all  records shown per stream (default 5)
  -h, --help       this text
",
};

fn main() {
    let mut opts = Options::default();
    let mut path = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => opts.json = true,
            "--records" => {
                opts.records = match args.next() {
                    Some(v) if v == "all" => Records::All,
                    Some(v) => match v.parse() {
                        Ok(n) => Records::First(n),
                        Err(_) => PROGRAM.bad_usage(&format!("--records takes a number or 'all', not '{v}'")),
                    },
                    None => PROGRAM.bad_usage("--records takes a number or 'all'"),
                }
            }
            "-h" | "--help" => PROGRAM.help(),
            _ if a.starts_with('-') && a.len() > 1 => PROGRAM.bad_usage(&format!("unknown option '{a}'")),
            _ if path.is_none() => path = Some(a),
            _ => PROGRAM.bad_usage(&format!("one file expected: '{a}' is one too many")),
        }
    }
    let Some(path) = path else { PROGRAM.bad_usage("no file given") };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let printed = print_file(std::path::Path::new(&path), opts, &mut out);
    match printed {
        Ok(()) => PROGRAM.exit_after_output(out.flush(), 0),
        Err(PrintError::Io(e)) => {
            // What is still buffered cannot be written either: drop it unflushed.
            let _ = out.into_parts();
            PROGRAM.exit_after_output(Err(e), 1)
        }
        Err(e) => {
            let flushed = out.flush();
            drop(out);
            if let Err(f) = flushed {
                PROGRAM.exit_after_output(Err(f), 1);
            }
            PROGRAM.fail(e)
        }
    }
}
