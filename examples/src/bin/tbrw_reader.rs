//! `tbrw_reader IN.tb5 OUT.dat`: dumps a TB5 file to OUT.dat and, beside
//! it, `<IN.tb5 file name>.dat` holding the data sections (docs/DAT.md).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tb5, dat] = args.as_slice() else {
        eprintln!("usage: tbrw_reader IN.tb5 OUT.dat");
        std::process::exit(2);
    };
    match tbrw_examples::dat::tb5_to_dat(tb5.as_ref(), dat.as_ref()) {
        Ok(data) => println!("wrote {dat} and {}", data.display()),
        Err(e) => {
            eprintln!("tbrw_reader: {e}");
            std::process::exit(1);
        }
    }
}
