//! A [`Content`] written as Intel's sections: the strings first (so that
//! every string field can hold its offset), then the global sections, the
//! streams' sections, the stream tables (a chain, each table naming the
//! next) and the global table (docs/FORMAT.md, "Intel's layout"). The
//! caller writes the file header that names the global table.

use std::convert::Infallible;

use super::content::own_text;
use super::content::{Content, Globals, Records, StreamContent};
use super::emit::{entry, table_bytes, Emitter, Str, Strings};
use crate::format::intel::codec;
use crate::format::intel::raw::{
    DescEntryRaw, EventRaw, PrivateInfoRaw, Raw, SectionTb6Raw, StreamInfoRaw, MODULE_RECORD_SIZE,
};
use crate::format::intel::{
    section_type as st, GLOBAL_TABLE_SIZE, STREAM_FLAGS_TAG, STREAM_FLAG_TIME_ORDERED, STREAM_TABLE_SIZE, TABLE_SLACK,
};
use crate::model::descriptor::{desc_type, DescEntry};
use crate::model::error::Result;
use crate::model::strings::{MapStrings, StringId};

/// What the encoder placed, for the legacy sections.
pub(crate) struct Placed {
    /// The global sections, their strings now output ids.
    pub(crate) globals: Globals<'static>,
    /// The data section of stream 0 and its descriptor.
    pub(crate) stream0: Option<Stream0Placed>,
    /// Stream 0's information, its strings output ids.
    pub(crate) stream0_info: Option<crate::model::stream::StreamInfo<StringId>>,
    /// The texts placed.
    pub(crate) strings: Strings,
}

/// The entries of the sections written.
pub(crate) struct Sections {
    /// The global sections' entries.
    pub(crate) globals: Vec<SectionTb6Raw>,
    /// Each stream's sections' entries, for its table.
    pub(crate) streams: Vec<Vec<SectionTb6Raw>>,
    /// The entries of the sections replacing some of an existing stream's.
    pub(crate) edits: Vec<(u32, Vec<SectionTb6Raw>)>,
    pub(crate) placed: Placed,
}

/// Where stream 0's records went.
pub(crate) struct Stream0Placed {
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) count: u64,
    pub(crate) record_size: u32,
    pub(crate) descriptor: Vec<DescEntry<StringId>>,
}

fn collect<T: MapStrings<StringId, Output<StringId> = T> + Clone>(v: &T, ids: &mut Vec<StringId>) {
    let _ = v.clone().map_strings(&mut |id| {
        ids.push(id);
        Ok::<StringId, Infallible>(id)
    });
}

/// The string ids a content holds.
fn all_ids(c: &Content<'_>) -> Vec<StringId> {
    let mut ids = Vec::new();
    let g = &c.globals;
    if let Some(s) = &g.software {
        collect(s, &mut ids);
    }
    if let Some((p, t)) = &g.processes {
        p.iter().for_each(|x| collect(x, &mut ids));
        t.iter().for_each(|x| collect(x, &mut ids));
    }
    if let Some(m) = &g.modules {
        m.iter().for_each(|x| collect(x, &mut ids));
    }
    for s in &c.streams {
        stream_ids(s, &mut ids);
    }
    ids
}

/// The global descriptor (0x2E, Intel's global section 7): how Intel's
/// reader finds the module records (without it its module enumeration
/// hands out none).
fn module_descriptor(c: &mut Content<'_>) -> Vec<DescEntry<StringId>> {
    vec![
        c.field(desc_type::DESCRIPTOR_ID, 0, 0, "DescriptorID"),
        c.field(desc_type::MODULE_RECORD, 0, MODULE_RECORD_SIZE as u32, "ModuleRecord"),
    ]
}

/// Writes the sections of `c` and of `edits` (sections replacing some of
/// an existing stream's); `source` says what a source string id names;
/// `private`: a new file's private section (0x23) too.
pub(crate) fn encode_sections(
    em: &mut Emitter<'_>,
    mut c: Content<'_>,
    edits: Vec<(u32, StreamContent<'_>)>,
    source: &dyn Fn(StringId) -> Result<Str>,
    private: bool,
) -> Result<Sections> {
    let module_desc = c.globals.modules.is_some().then(|| module_descriptor(&mut c));
    let mut ids = all_ids(&c);
    module_desc.iter().flatten().for_each(|x| collect(x, &mut ids));
    for (_, s) in &edits {
        stream_ids(s, &mut ids);
    }
    let mut texts = Vec::new();
    for id in ids {
        if let Str::Text(t) = c.resolve(id, source)? {
            texts.push(t);
        }
    }
    let mut strings = Strings::default();
    strings.place(em, texts)?;
    let own = std::mem::take(&mut c.own_texts);
    let out_id = |id: StringId| -> Result<StringId> {
        match own_text(&own, id) {
            Some(t) => Ok(strings.id(&Str::Text(t.to_owned()))),
            None if id.is_none() => Ok(StringId::NONE),
            None => source(id).map(|s| strings.id(&s)),
        }
    };
    let (globals_out, mut globals) = encode_globals(em, std::mem::take(&mut c.globals), module_desc, &out_id)?;
    if private {
        let mut p = PrivateInfoRaw { major: 3, ..Default::default() };
        p.comment[0][..21].copy_from_slice(b"TBRW code version 3.0");
        globals.insert(0, single(em, st::PRIVATE_INFO, &p.encode())?);
    }
    let mut streams = Vec::with_capacity(c.streams.len());
    let (mut stream0, mut stream0_info) = (None, None);
    for (n, s) in std::mem::take(&mut c.streams).into_iter().enumerate() {
        let (entries, placed, info) = encode_stream(em, n as u32, s, &out_id)?;
        if n == 0 {
            (stream0, stream0_info) = (placed, info);
        }
        streams.push(entries);
    }
    let mut edited = Vec::with_capacity(edits.len());
    for (n, s) in edits {
        edited.push((n, encode_stream(em, n, s, &out_id)?.0));
    }
    Ok(Sections {
        globals,
        streams,
        edits: edited,
        placed: Placed { globals: globals_out, stream0, stream0_info, strings },
    })
}

/// Writes the stream tables (a chain, last table first: each names the
/// next) and the global table holding `globals` and the chain's entry.
/// Returns the global table's entry.
pub(crate) fn write_tables(
    em: &mut Emitter<'_>,
    mut globals: Vec<SectionTb6Raw>,
    streams: Vec<Vec<SectionTb6Raw>>,
) -> Result<SectionTb6Raw> {
    let mut next: Option<SectionTb6Raw> = None;
    for mut entries in streams.into_iter().rev() {
        entries.extend(next.take());
        let at = em.put(&table_bytes(&entries, STREAM_TABLE_SIZE))?;
        em.zeros(TABLE_SLACK)?;
        let len = STREAM_TABLE_SIZE.max(40 * entries.len() as u64);
        next = Some(entry(st::STREAM_TABLE, at, len, 1, len as u32));
    }
    // The chain's entry right after Intel's private section, where Intel's writer puts it.
    if let Some(chain) = next {
        let at = globals.iter().position(|e| e.section_type == st::PRIVATE_INFO).map_or(0, |i| i + 1);
        globals.insert(at, chain);
    }
    let at = em.put(&table_bytes(&globals, GLOBAL_TABLE_SIZE))?;
    em.zeros(TABLE_SLACK)?;
    let len = GLOBAL_TABLE_SIZE.max(40 * globals.len() as u64);
    Ok(entry(st::GLOBAL_TABLE, at, len, 1, len as u32))
}

fn stream_ids(s: &StreamContent<'_>, ids: &mut Vec<StringId>) {
    if let Some(i) = &s.info {
        collect(i, ids);
    }
    s.events.iter().flatten().for_each(|x| collect(x, ids));
    s.descriptor.iter().flatten().for_each(|x| collect(x, ids));
}

/// One structure as a section of its own (`numberEntries` 1, `entryLength` its length).
fn single(em: &mut Emitter<'_>, t: u32, bytes: &[u8]) -> Result<SectionTb6Raw> {
    let at = em.put(bytes)?;
    Ok(entry(t, at, bytes.len() as u64, 1, bytes.len() as u32))
}

/// Bytes of the section of no records: an entry of length 0 is no section
/// to Intel's reader (VTune's placeholder streams), so a table with no
/// records is 8 zero bytes of 0 entries (Intel's reader then hands out an
/// empty table, as this one does).
const EMPTY_TABLE: [u8; 8] = [0; 8];

/// Records of `size` bytes as a section.
fn records(em: &mut Emitter<'_>, t: u32, bytes: &[u8], count: usize, size: usize) -> Result<SectionTb6Raw> {
    let bytes = if bytes.is_empty() { &EMPTY_TABLE[..] } else { bytes };
    let at = em.put(bytes)?;
    Ok(entry(t, at, bytes.len() as u64, count as u64, size as u32))
}

type Mapper<'a> = &'a dyn Fn(StringId) -> Result<StringId>;

fn map<T: MapStrings<StringId>>(v: T, f: Mapper<'_>) -> Result<T::Output<StringId>> {
    v.map_strings(&mut |id| f(id))
}

fn encode_globals(
    em: &mut Emitter<'_>,
    g: Globals<'_>,
    module_desc: Option<Vec<DescEntry<StringId>>>,
    f: Mapper<'_>,
) -> Result<(Globals<'static>, Vec<SectionTb6Raw>)> {
    let mut e = Vec::new();
    let mut out = Globals { system: g.system, version: g.version, ..Default::default() };
    // Bytes of no length cannot be told from no section (see EMPTY_TABLE).
    if let Some(u) = g.user.filter(|u| !u.is_empty()) {
        e.push(single(em, st::USER_GLOBAL, u)?);
    }
    // Intel's reader refuses a system of no nodes (`TBRW_get_system_info`
    // = 80, TBRW_INVALID_STREAM): none is written, and the file has no
    // hardware section (docs/FORMAT.md, "What Intel's layout cannot hold").
    if let Some(s) = out.system.as_ref().filter(|s| !s.nodes.is_empty()) {
        e.push(single(em, st::SYSTEM, &codec::encode_system(s))?);
    }
    if let Some(sw) = g.software {
        let mut sw = map(sw, f)?;
        // Intel's reader gives a host and an application of zeros where a
        // file with a software section has none: they are written so, and
        // read back alike by both libraries.
        sw.host.get_or_insert_with(Default::default);
        sw.application.get_or_insert_with(Default::default);
        if let Some(a) = &sw.application {
            e.push(single(em, st::APPLICATION, &codec::encode_application(a).encode())?);
        }
        if let Some(h) = &sw.host {
            e.push(single(em, st::HOST, &codec::encode_host(h).encode())?);
        }
        if let Some(o) = &sw.os {
            e.push(single(em, st::OS, &codec::encode_os(o).encode())?);
        }
        out.software = Some(sw);
    }
    if let Some(v) = &out.version {
        e.push(single(em, st::VERSION_INFO, &codec::encode_version(v).encode())?);
    }
    if let Some(desc) = module_desc {
        let mut b = Vec::new();
        for d in desc {
            codec::encode_desc(&map(d, f)?).encode_into(&mut b);
        }
        e.push(records(em, st::GLOBAL_DESCRIPTOR, &b, 2, DescEntryRaw::SIZE)?);
    }
    if let Some((pids, tids)) = g.processes {
        let pids: Vec<_> = pids.into_iter().map(|p| map(p, f)).collect::<Result<_>>()?;
        let tids: Vec<_> = tids.into_iter().map(|t| map(t, f)).collect::<Result<_>>()?;
        let mut b = Vec::with_capacity(pids.len() * 48);
        pids.iter().for_each(|p| codec::encode_pid(p).encode_into(&mut b));
        e.push(records(em, st::PIDS, &b, pids.len(), 48)?);
        let mut b = Vec::with_capacity(tids.len() * 40);
        tids.iter().for_each(|t| codec::encode_tid(t).encode_into(&mut b));
        e.push(records(em, st::TIDS, &b, tids.len(), 40)?);
        out.processes = Some((pids, tids));
    }
    if let Some(mods) = g.modules {
        let mods: Vec<_> = mods.into_iter().map(|m| map(m, f)).collect::<Result<_>>()?;
        let mut b = Vec::with_capacity(mods.len() * MODULE_RECORD_SIZE);
        for m in &mods {
            codec::encode_module(m).encode_into(&mut b);
            b.resize(b.len() + MODULE_RECORD_SIZE - crate::format::intel::raw::ModuleRaw::SIZE, 0);
        }
        e.push(records(em, st::MODULES, &b, mods.len(), MODULE_RECORD_SIZE)?);
        out.modules = Some(mods);
    }
    Ok((out, e))
}

type StreamOut = (Vec<SectionTb6Raw>, Option<Stream0Placed>, Option<crate::model::stream::StreamInfo<StringId>>);

/// Writes the sections of stream `n`; returns its table's entries (the
/// link to the next table not among them).
fn encode_stream(em: &mut Emitter<'_>, n: u32, s: StreamContent<'_>, f: Mapper<'_>) -> Result<StreamOut> {
    let mut e = Vec::new();
    let mut info_out = None;
    if let Some(info) = s.info {
        let info = map(info, f)?;
        let mut raw = codec::encode_stream_info(&info);
        if s.data.as_ref().is_some_and(|d| d.time_ordered) {
            raw.reserved[6] = STREAM_FLAGS_TAG | STREAM_FLAG_TIME_ORDERED;
        }
        let mut x = single(em, st::STREAM_INFO, &raw.encode())?;
        x.desc_entry_id = -1;
        debug_assert_eq!(x.length, StreamInfoRaw::SIZE as u64);
        e.push(x);
        info_out = Some(info);
    }
    if let Some(events) = s.events {
        let mut b = Vec::new();
        for ev in &events {
            let ev = map(ev.clone(), f)?;
            codec::encode_event(&ev).encode_into(&mut b);
            for d in &ev.details {
                codec::encode_detail(d).encode_into(&mut b);
            }
        }
        e.push(records(em, st::EVENTS, &b, events.len(), EventRaw::SIZE)?);
    }
    let mut descriptor = Vec::new();
    if let Some(desc) = s.descriptor {
        let mut b = Vec::new();
        for d in desc {
            let d = map(d, f)?;
            codec::encode_desc(&d).encode_into(&mut b);
            descriptor.push(d);
        }
        let mut x = records(em, st::DATA_DESCRIPTOR, &b, descriptor.len(), DescEntryRaw::SIZE)?;
        x.stream_number = n;
        e.push(x);
    }
    if let Some(u) = s.user.filter(|u| u.len() > 0) {
        let len = u.len();
        let at = em.place(u)?;
        e.push(entry(st::USER_STREAM, at, len, 1, len as u32));
    }
    let mut placed = None;
    // A data section of no records is left out, as Intel's writer leaves it out.
    if let Some(Records { bytes, count, record_size, .. }) = s.data.filter(|d| d.bytes.len() > 0) {
        let len = bytes.len();
        let at = em.place(bytes)?;
        let mut x = entry(st::DATA, at, len, count, len.min(u64::from(u32::MAX)) as u32);
        x.stream_number = n;
        e.push(x);
        placed = Some(Stream0Placed { offset: at, len, count, record_size, descriptor });
    }
    Ok((e, placed, info_out))
}
