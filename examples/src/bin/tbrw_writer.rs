//! `tbrw_writer IN.dat NEW.tb5`: writes a TB5 file from a `tbrw_reader` dump.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dat, tb5] = args.as_slice() else {
        eprintln!("usage: tbrw_writer IN.dat NEW.tb5");
        std::process::exit(2);
    };
    match tbrw_examples::dat::dat_to_tb5(dat.as_ref(), tb5.as_ref()) {
        Ok(()) => println!("wrote {tb5}"),
        Err(e) => {
            eprintln!("tbrw_writer: {e}");
            std::process::exit(1);
        }
    }
}
