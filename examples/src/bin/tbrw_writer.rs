//! `tbrw_writer IN.dat NEW.tb5 [--force]`: writes a TB5 file from a
//! `tbrw_reader` dump.
use tbrw_examples::cmdline::{check_output, InOut, Program};
use tbrw_examples::dat::{dat_to_tb5, data_file_of};

const PROGRAM: Program = Program {
    name: "tbrw_writer",
    help: "usage: tbrw_writer IN.dat NEW.tb5 [--force]

Writes NEW.tb5 from a tbrw_reader dump: IN.dat and the data file it names
(beside it), section by section through the writing API.

  -f, --force  replace NEW.tb5 if it exists
  -h, --help   this text
",
};

fn main() {
    let InOut { input, output, force } = InOut::parse(&PROGRAM, std::env::args().skip(1));
    // A dump whose header cannot be read names no data file; dat_to_tb5
    // reports why before it creates anything.
    let data = data_file_of(&input).ok();
    let inputs: Vec<&std::path::Path> = std::iter::once(input.as_path()).chain(data.as_deref()).collect();
    if let Err(e) = check_output(&output, &inputs, force) {
        PROGRAM.fail(e);
    }
    match dat_to_tb5(&input, &output) {
        Ok(()) => PROGRAM.say(format_args!("wrote {}", output.display())),
        Err(e) => PROGRAM.fail(e),
    }
}
