//! Golden outputs of print_tb5 on the shipped sample.tb5, and the sample
//! itself: it is what the generator makes.
//!
//! When the output changes on purpose, rewrite the expected files with
//! `TBRW_BLESS=1 cargo test -p tbrw-examples --test golden`.

use std::path::PathBuf;

use tbrw_examples::print::{print_file, Options, Records};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sample() -> PathBuf {
    dir().join("data/sample.tb5")
}

fn check_golden(name: &str, got: &str) {
    let path = dir().join("tests/golden").join(name);
    if std::env::var_os("TBRW_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing: run with TBRW_BLESS=1", path.display()));
    if want != got {
        let line = want
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(got.lines().count()));
        panic!(
            "{} differs from the output at line {}:\n  expected: {:?}\n  got:      {:?}\n(rewrite with TBRW_BLESS=1 if the change is intended)",
            path.display(),
            line + 1,
            want.lines().nth(line),
            got.lines().nth(line)
        );
    }
}

fn print(opts: Options) -> String {
    let mut out = Vec::new();
    print_file(&sample(), opts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn text_output_matches_the_golden_file() {
    check_golden("sample.txt", &print(Options::default()));
}

#[test]
fn json_output_matches_the_golden_file() {
    check_golden("sample.json", &print(Options { json: true, records: Records::First(3) }));
}

#[test]
fn all_records_are_printed_with_all() {
    let text = print(Options { json: false, records: Records::All });
    assert!(text.contains("  record 2999: "));
    assert!(text.contains("  record 199: "));
    assert!(!text.contains("  record 3000: "));
    let json = print(Options { json: true, records: Records::All });
    assert_eq!(json.matches("\"index\":2999").count(), 1);
}

#[test]
fn the_shipped_sample_is_what_the_generator_makes() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("sample.tb5");
    tbrw_examples::sample::write_sample(&p).unwrap();
    assert!(
        std::fs::read(&p).unwrap() == std::fs::read(sample()).unwrap(),
        "regenerate with: cargo run -p tbrw-examples --bin make_sample"
    );
    assert!(std::fs::metadata(sample()).unwrap().len() < 1 << 20);
}

#[test]
fn the_sample_is_realistic() {
    let f = tbrw::Tb5File::open(sample()).unwrap();
    f.verify().unwrap();
    assert_eq!(f.stream_count(), 2);
    let m = tbrw::bind::bind_in_memory(&f, 0).unwrap();
    assert_eq!(m.len(), 3000);
    // 4 processes (the kernel's pid 0, and three), every one with samples in its own modules.
    assert_eq!(m.tables.processes.len(), 4);
    let known = m.to_vec().iter().filter(|d| d.module_index != tbrw::UNKNOWN_MODULE).count();
    assert!(known > 2800, "{known}");
}

/// Names a file holds reach print_tb5's text escaped and quoted (quotes
/// inside escaped too), one line each; the JSON keeps them exact.
#[test]
fn names_with_control_characters_are_printed_escaped() {
    use tbrw::*;
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("names.tb5");
    let mut w = Tb5Writer::create(&p).unwrap();
    w.write_hardware(&System::default()).unwrap();
    let os = Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() };
    w.write_software(&Software { host: None, os: Some(os), application: None }).unwrap();
    w.write_version_info(&VersionInfo {
        sampling_driver_version: UNKNOWN_DRIVER_VERSION,
        bind_version: 0,
        sample_file_version: MIN_SAMPLE_FILE_VERSION,
    })
    .unwrap();
    w.write_modules(&[Module {
        associated_pid: 7,
        flags: ModuleFlags::LOADED | ModuleFlags::IS_EXE,
        length: 0x1000,
        unload_tsc: NEVER_UNLOADED,
        path: Some("/bin/a\x1b[2Jb".into()),
        name: Some("say \"hi\"\n".into()),
        ..Default::default()
    }])
    .unwrap();
    let tid = Tid { associated_pid: 7, id: 7, name: Some("t\x1b]0;x\x07".into()), ..Default::default() };
    w.write_process_threads(&[Pid { id: 7, ..Default::default() }], &[tid]).unwrap();
    let mut st = w
        .stream(0)
        .unwrap()
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
        .unwrap()
        .data_descriptor(&legacy_descriptor())
        .unwrap();
    st.events(&[Event { id: 0, name: Some("ev\u{9b}2J".into()), ..Default::default() }]).unwrap();
    st.data().unwrap().done().unwrap();
    st.finish().unwrap();
    w.close().unwrap();
    let mut out = Vec::new();
    print_file(&p, Options::default(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(!text.chars().any(|c| c != '\n' && tbrw::text::needs_escape(c)), "{text:?}");
    for want in
        ["path=\"/bin/a\\x1b[2Jb\"", "name=\"say \\\"hi\\\"\\n\"", "name=\"t\\x1b]0;x\\x07\"", "name=\"ev\\u{9b}2J\""]
    {
        assert!(text.contains(want), "{want} in {text}");
    }
    let mut out = Vec::new();
    print_file(&p, Options { json: true, ..Options::default() }, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert!(v.to_string().contains("\\u001b[2J"), "{v}");
}
