//! `print_tb5 --json`: the document's shapes as serde types, built from a
//! [`Tb5File`], and the writer that streams them with serde_json's compact
//! formatter (one line, then a newline).
//!
//! Strings are escaped by serde_json; byte blocks are lowercase hex strings;
//! a missing section or string is `null`. The stream list and each stream's
//! records are produced while they are written ([`Lazy`]), so that
//! `--records all` never holds a whole stream's records in memory.
//!
//! The document's serde shapes are in `shapes`, their building from the
//! file in `build`; this module writes them.

mod build;
mod shapes;

use std::io::Write;

use tbrw::*;

use crate::print::{Options, PrintError, R};
use build::*;
use shapes::*;

/// Writes the document for `file` to `out`, one line.
pub(crate) fn print_json(file: &Tb5File, opts: Options, out: &mut dyn Write) -> R {
    let modules: Vec<Module<StringId>> = match file.modules()? {
        None => Vec::new(),
        Some(mt) => mt.iter().collect::<Result<_>>()?,
    };
    let failed = Failed::default();
    let written = {
        let doc = document(file, &modules, opts, &failed)?;
        serde_json::to_writer(&mut *out, &doc)
    };
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    // The only errors left are the output's (serde_json gives back the io::Error).
    written.map_err(|e| PrintError::Io(e.into()))?;
    writeln!(out)?;
    Ok(())
}

fn document<'a>(file: &'a Tb5File, modules: &'a [Module<StringId>], opts: Options, failed: &'a Failed) -> R<Doc<'a>> {
    let s = |id| file.string_opt(id);
    let software = match file.software()? {
        None => None,
        Some(sw) => Some(SoftwareJson {
            host: match &sw.host {
                None => None,
                Some(h) => Some(HostJson { ip_address: s(h.ip_address)?, name: s(h.name)?, reserved: h.reserved }),
            },
            os: match &sw.os {
                None => None,
                Some(o) => Some(OsJson {
                    platform: o.platform,
                    major: o.major,
                    minor: o.minor,
                    build: o.build,
                    extra: o.extra,
                    name: s(o.name)?,
                    name_extra: s(o.name_extra)?,
                }),
            },
            application: sw.application.as_ref().map(|a| ApplicationJson {
                page_size: a.page_size,
                alloc_granularity: a.alloc_granularity,
                min_app_addr: a.min_app_addr,
                max_app_addr: a.max_app_addr,
                reserved: a.reserved,
            }),
        }),
    };
    let processes = match file.processes()? {
        None => None,
        Some(pt) => Some(ProcessesJson {
            processes: pt
                .pids()
                .map(|p| {
                    Ok(PidJson {
                        id: p.id,
                        flags: p.flags.bits(),
                        event_when: p.event_when,
                        path: s(p.path)?,
                        name: s(p.name)?,
                        reserved: p.reserved,
                        reserved_for_legacy: p.reserved_for_legacy,
                        reserved1: p.reserved1,
                    })
                })
                .collect::<Result<_>>()?,
            threads: pt
                .tids()
                .map(|t| {
                    Ok(TidJson {
                        id: t.id,
                        associated_pid: t.associated_pid,
                        flags: t.flags.bits(),
                        event_when: t.event_when,
                        name: s(t.name)?,
                        reserved_for_legacy: t.reserved_for_legacy,
                        reserved: t.reserved,
                    })
                })
                .collect::<Result<_>>()?,
        }),
    };
    let module_list = match file.modules()? {
        None => None,
        Some(_) => Some(modules.iter().map(|m| module_json(file, m)).collect::<Result<_>>()?),
    };
    Ok(Doc {
        streams: file.stream_count(),
        hardware: file.hardware()?.map(|sys| sys.nodes.iter().map(node_json).collect()),
        software,
        version_info: file.version_info()?.map(|v| VersionJson {
            sampling_driver_version: v.sampling_driver_version,
            bind_version: v.bind_version,
            sample_file_version: v.sample_file_version,
        }),
        processes,
        modules: module_list,
        user_defined: file.user_defined_global()?.map(Hex),
        stream_list: Lazy {
            len: file.stream_count().into(),
            item: Box::new(move |n| stream_json(file, n as u32, modules, opts, failed)),
            failed,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::shapes::Field;
    use super::*;
    use crate::print::Records;

    #[test]
    fn hex_and_repeated_names_are_written_as_given() {
        let f = Fields(vec![
            ("a".into(), Field::Int(1)),
            ("a".into(), Field::Bytes(Hex(&[0, 0xab, 0xff]))),
            ("q\"\\\n\u{1}é".into(), Field::Int(2)),
        ]);
        assert_eq!(serde_json::to_string(&f).unwrap(), r#"{"a":1,"a":"00abff","q\"\\\n\u0001é":2}"#);
    }

    #[test]
    fn an_item_error_is_kept_as_itself() {
        let failed = Failed::default();
        let lazy = Lazy {
            len: 3,
            item: Box::new(|i| {
                if i < 2 {
                    Ok(i)
                } else {
                    Err(PrintError::Tb5(Error::InvalidStream { stream: 7, why: "x".into() }))
                }
            }),
            failed: &failed,
        };
        let mut out = Vec::new();
        assert!(serde_json::to_writer(&mut out, &lazy).is_err());
        assert_eq!(out, b"[0,1");
        drop(lazy);
        assert!(matches!(failed.into_inner(), Some(PrintError::Tb5(Error::InvalidStream { stream: 7, .. }))));
    }

    /// A stream with a 3-byte field and a control character in a name, and
    /// a stream without a data section.
    #[test]
    fn odd_fields_and_a_stream_without_data() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("odd.tb5");
        let mut w = Tb5Writer::create(&p).unwrap();
        let mut s0 = w
            .stream(0)
            .unwrap()
            .info(&StreamInfo { stream_type: stream_type::CUSTOM, ..Default::default() })
            .unwrap()
            .data_descriptor(&[
                DescEntry { desc_type: 0x4001, data_size: 3, name: Some("rgb\u{7}".into()), ..Default::default() },
                DescEntry { desc_type: 0x4002, data_size: 1, ..Default::default() },
            ])
            .unwrap();
        let mut data = s0.data().unwrap();
        data.add(&[1, 2, 0xfe, 9]).unwrap();
        data.done().unwrap();
        s0.finish().unwrap();
        let s1 = w
            .stream(1)
            .unwrap()
            .info(&StreamInfo { stream_type: stream_type::CUSTOM, ..Default::default() })
            .unwrap()
            .data_descriptor(&[DescEntry { desc_type: 0x4001, data_size: 4, ..Default::default() }])
            .unwrap();
        s1.finish().unwrap();
        w.close().unwrap();

        let mut out = Vec::new();
        let opts = Options { json: true, records: Records::All };
        print_json(&Tb5File::open(&p).unwrap(), opts, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("]}\n") && text.lines().count() == 1, "{text}");
        assert!(
            text.contains(r#""record_count":1,"records":[{"index":0,"fields":{"rgb\u0007":"0102fe","0x4002":9}}]}"#),
            "{text}"
        );
        // Stream 1 has no records: Intel's layout (the default) has no data
        // section of no bytes, and a stream with a descriptor reads as one of
        // no records (docs/FORMAT.md, "What Intel's layout cannot hold").
        assert!(text.contains(r#""record_count":0,"records":[]}]}"#), "{text}");
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["stream_list"].as_array().unwrap().len(), 2);
    }
}
