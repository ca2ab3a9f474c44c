//! `tbrw_reader IN.tb5 OUT.dat [--force]`: dumps a TB5 file to OUT.dat and,
//! beside it, `<IN.tb5 file name>.dat` holding the data sections (docs/DAT.md).
use tbrw_examples::cmdline::{check_output, same_file, InOut, Program};
use tbrw_examples::dat::{data_path, tb5_to_dat};

const PROGRAM: Program = Program {
    name: "tbrw_reader",
    help: "usage: tbrw_reader IN.tb5 OUT.dat [--force]

Dumps every section of IN.tb5 but the data into OUT.dat, and the data
sections into <IN.tb5 file name>.dat beside OUT.dat (docs/DAT.md).
tbrw_writer makes a TB5 file from the two.

  -f, --force  replace OUT.dat and the data file if they exist
  -h, --help   this text
",
};

fn main() {
    let InOut { input, output, force } = InOut::parse(&PROGRAM, std::env::args().skip(1));
    let data = data_path(&input, &output);
    if same_file(&output, &data) {
        PROGRAM.fail(format_args!(
            "{} is where the data file of {} goes: name the dump differently",
            output.display(),
            input.display()
        ));
    }
    for out in [&output, &data] {
        if let Err(e) = check_output(out, &[&input], force) {
            PROGRAM.fail(e);
        }
    }
    match tb5_to_dat(&input, &output) {
        Ok(data) => PROGRAM.say(format_args!("wrote {} and {}", output.display(), data.display())),
        Err(e) => PROGRAM.fail(e),
    }
}
