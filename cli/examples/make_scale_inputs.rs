//! The scale inputs of issues #38 and #40 (`cli/benches/support/scale_inputs.rs`):
//!
//! ```sh
//! # A file from another machine: 10,000 modules whose files are not here,
//! # 5 M samples at random addresses inside them.
//! cargo run --release -p tbrw-cli --example make_scale_inputs -- other-machine 5000000 remote.tb5
//! # 20 M samples over 5 M distinct addresses.
//! cargo run --release -p tbrw-cli --example make_scale_inputs -- other-machine 20000000 remote20.tb5 5000000
//! # 647 samples on distinct stacks 65,535 frames deep (811 KB), in
//! # /opt/remote/deep (or the program named after the depth).
//! cargo run --release -p tbrw-cli --example make_scale_inputs -- deep-stacks 647 deep.tb5 65535
//! ```

#[allow(dead_code)]
#[path = "../benches/support/scale_inputs.rs"]
mod scale_inputs;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    let (kind, Some(samples), Some(out)) = (args.first().map(String::as_str), number(1), args.get(2)) else {
        eprintln!(
            "usage: make_scale_inputs other-machine SAMPLES OUT.tb5 [DISTINCT] | deep-stacks SAMPLES OUT.tb5 DEPTH [PROGRAM]"
        );
        std::process::exit(2);
    };
    let path = std::path::Path::new(out);
    let written = match kind {
        Some("other-machine") => scale_inputs::other_machine(path, samples, number(3)),
        Some("deep-stacks") => {
            let program = args.get(4).map_or("/opt/remote/deep", String::as_str);
            scale_inputs::deep_stacks(path, samples, number(3).unwrap_or(65_535) as usize, program)
        }
        _ => {
            eprintln!("make_scale_inputs: the kinds are other-machine and deep-stacks");
            std::process::exit(2);
        }
    };
    if let Err(e) = written {
        eprintln!("make_scale_inputs: {out}: {e}");
        std::process::exit(1);
    }
    println!("{out}: {} bytes", std::fs::metadata(path).map_or(0, |m| m.len()));
}
