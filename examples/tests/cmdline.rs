//! The Rust example binaries as a newcomer meets them: `--help`, bad
//! arguments, a closed pipe, and outputs that exist or are inputs.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn sample() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample.tb5"))
}

fn run(exe: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new(exe).args(args.iter().map(|a| a.as_ref())).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

const BINS: [(&str, &str); 4] = [
    ("print_tb5", env!("CARGO_BIN_EXE_print_tb5")),
    ("tbrw_reader", env!("CARGO_BIN_EXE_tbrw_reader")),
    ("tbrw_writer", env!("CARGO_BIN_EXE_tbrw_writer")),
    ("make_sample", env!("CARGO_BIN_EXE_make_sample")),
];

#[test]
fn help_is_printed_on_stdout_with_exit_0() {
    for (name, exe) in BINS {
        for flag in ["--help", "-h"] {
            let o = run(exe, &[&flag]);
            assert_eq!(o.status.code(), Some(0), "{name} {flag}");
            let text = String::from_utf8(o.stdout).unwrap();
            assert!(text.starts_with(&format!("usage: {name} ")), "{name}: {text}");
            assert!(text.contains("--help"), "{name}: {text}");
            assert!(o.stderr.is_empty(), "{name}");
        }
    }
}

#[test]
fn bad_arguments_give_a_reason_and_exit_2() {
    let p = sample();
    let cases: [(&str, Vec<&dyn AsRef<std::ffi::OsStr>>, &str); 7] = [
        (BINS[0].1, vec![&p, &"--records", &"x"], "print_tb5: --records takes a number or 'all', not 'x'"),
        (BINS[0].1, vec![&p, &"--records"], "print_tb5: --records takes a number or 'all'"),
        (BINS[0].1, vec![&p, &"--jsn"], "print_tb5: unknown option '--jsn'"),
        (BINS[0].1, vec![], "print_tb5: no file given"),
        (BINS[1].1, vec![&p], "tbrw_reader: two paths expected, got 1"),
        (BINS[2].1, vec![&"a", &"b", &"c"], "tbrw_writer: two paths expected, got 3: 'c' is one too many"),
        (BINS[3].1, vec![&"--frce"], "make_sample: unknown option '--frce'"),
    ];
    for (exe, args, reason) in cases {
        let o = run(exe, &args);
        assert_eq!(o.status.code(), Some(2), "{reason}");
        let err = stderr(&o);
        let mut lines = err.lines();
        assert_eq!(lines.next(), Some(reason));
        assert!(lines.next().is_some_and(|l| l.starts_with("usage: ")), "{err}");
        assert!(o.stdout.is_empty());
    }
}

/// Reads a little of the output, closes the pipe, and expects a quiet exit 0.
fn ends_quietly_on_a_closed_pipe(args: &[&str]) {
    let mut child =
        Command::new(BINS[0].1).arg(sample()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut head = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // The rest (hundreds of KiB, more than a pipe holds) meets a closed pipe.
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    assert_eq!(stderr(&o), "", "{args:?}");
}

#[test]
fn a_closed_pipe_ends_print_tb5_quietly() {
    ends_quietly_on_a_closed_pipe(&["--records", "all"]);
    ends_quietly_on_a_closed_pipe(&["--json", "--records", "all"]);
}

fn bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn outputs_are_replaced_only_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let (dat, data, new) = (tmp.path().join("s.dat"), tmp.path().join("sample.tb5.dat"), tmp.path().join("new.tb5"));
    let (reader, writer) = (BINS[1].1, BINS[2].1);
    assert!(run(reader, &[&sample(), &dat]).status.success());

    // The dump exists: refused, and nothing is touched.
    std::fs::write(&dat, b"keep").unwrap();
    let o = run(reader, &[&sample(), &dat]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), format!("tbrw_reader: {} exists: give --force to replace it\n", dat.display()));
    assert_eq!(bytes(&dat), b"keep");
    // Only the data file exists: refused too, naming it.
    std::fs::remove_file(&dat).unwrap();
    let o = run(reader, &[&sample(), &dat]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&*data.to_string_lossy()), "{}", stderr(&o));
    assert!(!dat.exists());
    for force in ["--force", "-f"] {
        assert!(run(reader, &[&sample(), &dat, &force]).status.success(), "{force}");
    }

    assert!(run(writer, &[&dat, &new]).status.success());
    std::fs::write(&new, b"keep").unwrap();
    let o = run(writer, &[&dat, &new]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), format!("tbrw_writer: {} exists: give --force to replace it\n", new.display()));
    assert_eq!(bytes(&new), b"keep");
    let o = run(writer, &[&"--force", &dat, &new]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = |p: &Path| run(BINS[0].1, &[&p, &"--records", &"all"]).stdout;
    assert_eq!(printed(&new), printed(&sample()));
}

#[test]
fn an_input_is_never_the_output_even_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let tb5 = tmp.path().join("in.tb5");
    std::fs::copy(sample(), &tb5).unwrap();
    let original = bytes(&tb5);
    let (reader, writer) = (BINS[1].1, BINS[2].1);
    let refused = |o: Output, path: &Path| {
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&*path.to_string_lossy()), "{err}");
    };

    // The dump over the TB5 input, by its name and by another name for it.
    refused(run(reader, &[&tb5, &tb5, &"--force"]), &tb5);
    let other = tmp.path().join("sub/../in.tb5");
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    refused(run(reader, &[&tb5, &other, &"--force"]), &other);
    // The dump where its own data file goes.
    let data = tmp.path().join("in.tb5.dat");
    refused(run(reader, &[&tb5, &data, &"--force"]), &data);
    assert!(!data.exists());
    assert_eq!(bytes(&tb5), original);

    // The new TB5 file over the dump, or over the data file the dump names.
    let dat = tmp.path().join("in.dat");
    assert!(run(reader, &[&tb5, &dat]).status.success());
    let (dump, data_bytes) = (bytes(&dat), bytes(&data));
    refused(run(writer, &[&dat, &dat, &"-f"]), &dat);
    refused(run(writer, &[&dat, &data, &"-f"]), &data);
    #[cfg(unix)]
    {
        let link = tmp.path().join("link.tb5");
        std::os::unix::fs::symlink(&data, &link).unwrap();
        refused(run(writer, &[&dat, &link, &"-f"]), &link);
    }
    assert_eq!(bytes(&dat), dump);
    assert_eq!(bytes(&data), data_bytes);
}

/// Links at the outputs: the dump and the data file written beside it each
/// replace the link at their name, never the file it names, and a dangling
/// one never makes a file where it points (docs/FORMAT.md, "Output paths";
/// before: both were written through the links).
#[test]
fn links_at_the_outputs_are_replaced_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let (dat, data) = (tmp.path().join("s.dat"), tmp.path().join("sample.tb5.dat"));
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let nowhere = tmp.path().join("made-through-the-link");
    std::os::unix::fs::symlink(&victim, &dat).unwrap();
    std::os::unix::fs::symlink(&nowhere, &data).unwrap();
    let reader = BINS[1].1;
    let o = run(reader, &[&sample(), &dat]);
    assert_eq!(o.status.code(), Some(1), "a link is a name taken: --force replaces it");
    let o = run(reader, &[&sample(), &dat, &"--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for p in [&dat, &data] {
        assert!(std::fs::symlink_metadata(p).unwrap().file_type().is_file(), "{}", p.display());
    }
    assert_eq!(bytes(&victim), b"precious");
    assert!(!nowhere.exists());
    let new = tmp.path().join("new.tb5");
    assert!(run(BINS[2].1, &[&dat, &new]).status.success());
    let printed = |p: &Path| run(BINS[0].1, &[&p, &"--records", &"all"]).stdout;
    assert_eq!(printed(&new), printed(&sample()));
}
