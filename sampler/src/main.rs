//! `sampler [options] [--] <command> [arguments]`: see `sampler --help`.

fn main() -> std::process::ExitCode {
    sampler::cli::run(std::env::args_os())
}
