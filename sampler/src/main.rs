//! `sampler [options] -- <command> [arguments]`: see `sampler --help`.

fn main() {
    std::process::exit(sampler::cli::main(std::env::args_os().collect()));
}
