//! `tbrw export pprof`: a sample stream as Google's profile.proto
//! (`github.com/google/pprof/proto/profile.proto`), gzip-compressed. The
//! message types are declared here with `prost`'s derive macros (no protoc
//! at build time). Samples are aggregated per stack and label set (pid,
//! tid, cpu), so the profile grows with distinct stacks, not samples.

use std::collections::HashMap;
use std::io::Write;

use tbrw::Tb5File;

use crate::error::ExportError;
use tbrw_query::names;
use tbrw_query::stacks::{stacks, Frame, Keep, Names, ViewOptions};

/// `Profile`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each value of a sample is.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// The mappings (modules).
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// The locations (distinct addresses).
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// The functions.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string; `string_table[0]` is "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Frames to drop (a regular expression's string index).
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// Frames to keep.
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// When the profile was taken, ns since the Unix epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long it took, ns.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What the period counts.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// Events between samples.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-text comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The sample type shown by default (string index of its type).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// `ValueType`: a type and its unit (string indices).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    /// E.g. "samples".
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// E.g. "count".
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The stack, innermost location first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// `Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Its key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// A string value (string index).
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// A numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// The numeric value's unit (string index).
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// `Mapping`: a module.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// Its id (from 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The load address.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// The end, exclusive.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// The file offset mapped at `memory_start`.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The file (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// The build id as hex (string index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Whether locations in it have function names.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// Whether they have file names.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Whether they have line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Whether they have inlined frames.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// `Location`: a distinct address.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Its id (from 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its mapping (0: none).
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The address.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Its functions (one, when symbols name it).
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Whether several functions were folded into one.
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// `Line`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    /// The function.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// The source line (0: unknown).
    #[prost(int64, tag = "2")]
    pub line: i64,
    /// The column (0: unknown).
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// `Function`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    /// Its id (from 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Its name as the system knows it (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Its source file (string index).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// Its first line.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

/// The string table under construction.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

/// The stream's profile. Warnings (modules without symbols) go to `warn`.
pub fn profile(
    file: &Tb5File,
    opts: &ViewOptions,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Profile, ExportError> {
    let st = stacks(file, opts, Keep { process: true, thread: true, cpu: true }, "pprof", progress)?;
    let info = &st.info;
    let mut strings = Strings::new();
    let mut p = Profile::default();
    let value_type = |s: &mut Strings, t: &str, u: &str| ValueType { r#type: s.get(t), unit: s.get(u) };
    p.sample_type.push(value_type(&mut strings, "samples", "count"));
    let weighted = opts.query.weight != tbrw_query::report::Weight::Samples;
    if weighted {
        let (t, u) = match opts.query.weight {
            tbrw_query::report::Weight::Energy => ("energy", "nanojoules"),
            _ => ("cpu", "nanoseconds"),
        };
        p.sample_type.push(value_type(&mut strings, t, u));
    }
    if info.has_period {
        p.sample_type.push(value_type(&mut strings, "events", "count"));
    }
    p.default_sample_type = p.sample_type.last().map_or(0, |v| v.r#type);

    // Mappings: the modules, with what the collector noted about them.
    let notes = match file.user_defined_global()? {
        Some(b) => tbrw_import::module_notes::decode(&String::from_utf8_lossy(b)),
        None => HashMap::new(),
    };
    let mut function_names = Names::new(file, &info.modules, Some(&opts.symbols))?;
    let mut used: Vec<bool> = vec![false; info.modules.len()];
    for k in st.stacks.keys() {
        for f in k.frames.iter() {
            if let Some(u) = f.module.and_then(|m| used.get_mut(m as usize)) {
                *u = true;
            }
        }
    }
    let mut mapping_of: HashMap<u64, u64> = HashMap::new();
    for (i, m) in info.modules.iter().enumerate() {
        if !used[i] {
            continue;
        }
        let note = notes.get(&(i as u64));
        let file_name = m.path.clone().unwrap_or_else(|| names::module_label(m));
        let build_id = note.and_then(|n| n.build_id.as_deref()).map(tbrw_import::module_notes::hex).unwrap_or_default();
        let id = p.mapping.len() as u64 + 1;
        mapping_of.insert(i as u64, id);
        p.mapping.push(Mapping {
            id,
            memory_start: m.load_address,
            memory_limit: m.load_address.saturating_add(m.length),
            file_offset: note.and_then(|n| n.offset).unwrap_or(0),
            filename: strings.get(&file_name),
            build_id: strings.get(&build_id),
            has_functions: false,
            has_filenames: false,
            has_line_numbers: false,
            has_inline_frames: false,
        });
    }

    // Locations and functions, in a stable order.
    let mut keys: Vec<_> = st.stacks.iter().collect();
    keys.sort_by(|a, b| a.0.cmp(b.0));
    let mut location_of: HashMap<Frame, u64> = HashMap::new();
    let mut function_of: HashMap<(String, i64), u64> = HashMap::new();
    let pid_key = strings.get("pid");
    let tid_key = strings.get("tid");
    let cpu_key = strings.get("cpu");
    let thread_key = strings.get("thread");
    for (key, totals) in keys {
        let mut ids = Vec::with_capacity(key.frames.len());
        for f in key.frames.iter() {
            let id = match location_of.get(f) {
                Some(&id) => id,
                None => {
                    let id = p.location.len() as u64 + 1;
                    let mapping_id = f.module.and_then(|m| mapping_of.get(&m).copied()).unwrap_or(0);
                    let mut line = Vec::new();
                    // Every location has a function: its name, or the one
                    // spelling of an unknown one (`[liba.so]`, `[unknown]`).
                    let module = f.module.and_then(|m| info.modules.get(m as usize));
                    let named = function_names.function(*f, warn);
                    let func: Option<std::sync::Arc<str>> = named
                        .clone()
                        .or_else(|| Some(names::unknown_function(module.map(names::module_label).as_deref()).into()));
                    if let Some(func) = func {
                        let filename =
                            mapping_id.checked_sub(1).and_then(|i| p.mapping.get(i as usize)).map_or(0, |m| m.filename);
                        let n = function_of.len() as u64 + 1;
                        let fid = *function_of.entry((func.to_string(), filename)).or_insert(n);
                        if fid == n {
                            let name = strings.get(&func);
                            p.function.push(Function { id: fid, name, system_name: name, filename: 0, start_line: 0 });
                        }
                        if let (Some(m), Some(_)) =
                            (mapping_id.checked_sub(1).and_then(|i| p.mapping.get_mut(i as usize)), &named)
                        {
                            m.has_functions = true;
                        }
                        line.push(Line { function_id: fid, line: 0, column: 0 });
                    }
                    p.location.push(Location { id, mapping_id, address: f.pc, line, is_folded: false });
                    location_of.insert(*f, id);
                    id
                }
            };
            ids.push(id);
        }
        let pid = info.processes.get(&key.process).map_or(0, |p| p.pid);
        let thread = info.threads.get(&key.thread).cloned().unwrap_or_default();
        let mut label = vec![
            Label { key: pid_key, str: 0, num: i64::from(pid), num_unit: 0 },
            Label { key: tid_key, str: 0, num: i64::from(thread.tid), num_unit: 0 },
        ];
        if let Some(name) = &thread.name {
            let v = strings.get(name);
            label.push(Label { key: thread_key, str: v, num: 0, num_unit: 0 });
        }
        if let Some(c) = key.cpu {
            label.push(Label { key: cpu_key, str: 0, num: i64::from(c), num_unit: 0 });
        }
        let mut value = vec![totals.samples as i64];
        if weighted {
            let scale = if opts.query.weight == tbrw_query::report::Weight::Energy { 1e9 } else { 1.0 };
            value.push((totals.weight * scale).round() as i64);
        }
        if info.has_period {
            value.push(totals.period as i64);
        }
        p.sample.push(Sample { location_id: ids, value, label });
    }
    if let (Some(tf), Some((a, z))) = (&info.time, info.time_range) {
        if tf.nanos {
            if tf.realtime {
                p.time_nanos = a as i64;
            }
            p.duration_nanos = (z - a) as i64;
        }
    }
    // The file's name, not the path it was read from: the same file gives
    // the same profile wherever it lies.
    let name =
        file.path().file_name().map_or_else(|| file.path().display().to_string(), |f| f.to_string_lossy().into());
    let comment = format!("{name}, stream {}", opts.query.stream);
    let c = strings.get(&comment);
    p.comment.push(c);
    if let Some(m) = info.chains {
        let c = strings.get(&format!("call chains from stream {m}"));
        p.comment.push(c);
    }
    p.string_table = strings.table;
    Ok(p)
}

/// Writes the stream's profile, gzip-compressed; returns it too.
pub fn write(
    file: &Tb5File,
    opts: &ViewOptions,
    out: &mut dyn Write,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Profile, ExportError> {
    use prost::Message;
    let p = profile(file, opts, warn, progress)?;
    let bytes = p.encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&bytes)
        .and_then(|()| gz.finish().map(drop))
        .map_err(|e| ExportError::msg(format!("writing the profile: {e}")))?;
    Ok(p)
}
