//! `tbrw export flamegraph`: a sample stream as folded stacks (one line per
//! distinct stack, `frame;frame;... count`) and as an interactive SVG flame
//! graph drawn by `inferno`. Frames, outermost first, follow `--by`:
//! process, thread, then per frame of the call chain (the sampled address
//! alone without one) a module frame where the chain enters another module,
//! the function when the module's symbols name it, the address when asked.
//! The walk keeps of each frame only what those need (`--by process,module`
//! resolves no function, and a module whose file is not here is one frame),
//! and the lines are made from the trees of stacks and labels in the order
//! of their text, one at a time (`--folded` writes each as it is made).

use std::collections::HashMap;
use std::io::Write;
use tbrw_schema::Progress;

use tbrw::Tb5File;

use crate::error::{ExportError, Nothing};
use tbrw_query::names::{self, clean};
use tbrw_query::stacks::{
    stacks, Detail, Frame, IdMap, Keep, Labels, Names, NodeId, Resolution, Stacks, ViewOptions, LEVELS,
};
use tbrw_query::{By, Weight};

/// The flame graph's options beyond the filters.
#[derive(Clone, Debug)]
pub struct FlameOptions {
    /// The frames each stack gets, outermost first: process, thread, module,
    /// function, address.
    pub by: Vec<By>,
    /// Folded-stack text instead of the SVG.
    pub folded: bool,
    /// The SVG's title (default: the file and stream).
    pub title: Option<String>,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions { by: vec![By::Process, By::Module, By::Function], folded: false, title: None }
    }
}

/// The folded stacks of the stream: (stack, count) sorted by stack. The
/// count is the samples, the cputime in ns, or the energy in µJ (`--weight`).
pub fn folded(
    file: &Tb5File,
    opts: &ViewOptions,
    fopts: &FlameOptions,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
) -> Result<Vec<(String, u64)>, ExportError> {
    let mut lines = Vec::new();
    for_each_line(file, opts, fopts, warn, progress, &mut |stack, n| {
        lines.push((stack.to_owned(), n));
        Ok(())
    })?;
    Ok(lines)
}

/// Checks `--by`.
fn check_levels(fopts: &FlameOptions) -> Result<(), ExportError> {
    if fopts.by.is_empty() {
        return Err(ExportError::FrameKinds { given: None, kinds: LEVELS.to_vec() });
    }
    if let Some(b) = fopts.by.iter().find(|b| !LEVELS.contains(b)) {
        return Err(ExportError::FrameKinds { given: Some(*b), kinds: LEVELS.to_vec() });
    }
    Ok(())
}

/// The folded stacks of the stream, each line (its stack and count) given
/// to `each` in the order of their text, as they are made: what the flame
/// graph holds is the stacks' tree of frames and the tree of their labels,
/// never the lines (a stream of 647 distinct stacks 65,535 frames deep
/// folds into 400 MB of text, made a line at a time). Returns the lines.
pub(crate) fn for_each_line(
    file: &Tb5File,
    opts: &ViewOptions,
    fopts: &FlameOptions,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
    each: &mut dyn FnMut(&str, u64) -> std::io::Result<()>,
) -> Result<usize, ExportError> {
    check_levels(fopts)?;
    let has = |b: By| fopts.by.contains(&b);
    let keep = Keep { process: has(By::Process), thread: has(By::Thread), cpu: false };
    let modules = tbrw_query::stream::modules(file)?;
    let mut names = Names::new(file, &modules, has(By::Function).then_some(&opts.symbols))?;
    // What a frame needs to be: its address, its function, or its module.
    let detail = match (has(By::Address), has(By::Function)) {
        (true, _) => Detail::Address,
        (false, true) => Detail::Function,
        (false, false) => Detail::Module,
    };
    let mut res = match detail {
        Detail::Module => Resolution::modules(&modules),
        d => names.resolution(d),
    };
    let mut st = stacks(file, opts, keep, &mut res, "a flame graph", progress)?;
    drop(res);
    let info = std::mem::take(&mut st.info);
    let mut tree = LabelTree::new(fopts, &info);
    for ((set, stack), totals) in st.iter() {
        let count = match opts.query.weight {
            Weight::Samples => totals.samples,
            Weight::Cputime => totals.weight.round() as u64,
            Weight::Energy => (totals.weight * 1e6).round() as u64,
        };
        if count > 0 {
            let node = tree.stack(&st, set, stack, &mut names);
            tree.counts[node as usize] += count;
        }
    }
    names.take_warnings(warn);
    // The lines need the labels only.
    drop(st);
    tree.done = IdMap::default();
    let io = |e: std::io::Error| ExportError::write("flame graph", e);
    tree.write_sorted(each).map_err(io)
}

/// "No node" in a [`LabelTree`].
const NONE: u32 = u32::MAX;

/// The flame graph's frames as a tree of labels: each node a label under
/// its parent, equal texts one node (labels hold no `;`, so a folded
/// line's text is its node), with the count of the lines ending there.
struct LabelTree<'a> {
    fopts: &'a FlameOptions,
    info: &'a tbrw_query::stacks::WalkInfo,
    /// Label texts and their numbers.
    texts: Vec<String>,
    numbers: HashMap<String, u32>,
    /// Per node: (parent, label).
    nodes: Vec<(u32, u32)>,
    index: HashMap<(u32, u32), u32>,
    counts: Vec<u64>,
    /// Per (label set, stack node): the label node its frames end at.
    done: IdMap<(u32, NodeId), u32>,
    /// Per label set: the node of its process and thread labels.
    prefix: HashMap<u32, u32>,
    /// Per distinct frame, when functions are asked: its labels'
    /// `label_lists[start..end]`, its function's (or unknown) label and
    /// then each function inlined there, outermost first.
    function_labels: IdMap<u32, (u32, u32)>,
    label_lists: Vec<u32>,
}

impl<'a> LabelTree<'a> {
    fn new(fopts: &'a FlameOptions, info: &'a tbrw_query::stacks::WalkInfo) -> LabelTree<'a> {
        LabelTree {
            fopts,
            info,
            texts: Vec::new(),
            numbers: HashMap::new(),
            nodes: Vec::new(),
            index: HashMap::new(),
            counts: Vec::new(),
            done: IdMap::default(),
            prefix: HashMap::new(),
            function_labels: IdMap::default(),
            label_lists: Vec::new(),
        }
    }

    fn has(&self, b: By) -> bool {
        self.fopts.by.contains(&b)
    }

    fn label(&mut self, text: String) -> u32 {
        if let Some(&n) = self.numbers.get(&text) {
            return n;
        }
        let n = self.texts.len() as u32;
        self.texts.push(text.clone());
        self.numbers.insert(text, n);
        n
    }

    fn child(&mut self, parent: u32, label: u32) -> u32 {
        let next = self.nodes.len() as u32;
        let n = *self.index.entry((parent, label)).or_insert(next);
        if n == next {
            self.nodes.push((parent, label));
            self.counts.push(0);
        }
        n
    }

    fn module_label(&mut self, m: Option<u64>) -> u32 {
        let text = match m.and_then(|m| self.info.modules.get(m as usize)) {
            Some(md) => clean(&names::module_label(md)),
            None => names::NO_MODULE.to_owned(),
        };
        self.label(text)
    }

    /// The process and thread labels' node of a label set (NONE: neither asked).
    fn prefix(&mut self, set: u32, labels: &Labels) -> u32 {
        if let Some(&n) = self.prefix.get(&set) {
            return n;
        }
        let mut at = NONE;
        for b in self.fopts.by.clone() {
            let text = match b {
                By::Process => {
                    let pr = self.info.processes.get(&labels.process).cloned().unwrap_or_default();
                    clean(&names::process_label(pr.pid, pr.name.as_deref()))
                }
                By::Thread => {
                    let t = self.info.threads.get(&labels.thread).cloned().unwrap_or_default();
                    clean(&names::thread_label(t.tid, t.name.as_deref()))
                }
                _ => continue,
            };
            let l = self.label(text);
            at = self.child(at, l);
        }
        self.prefix.insert(set, at);
        at
    }

    /// The labels of stack node `n` (module where the chain enters
    /// another one, function, address, as `--by` asks), under `at`.
    fn frame(&mut self, st: &Stacks, n: NodeId, mut at: u32, names: &mut Names) -> u32 {
        let f = st.tree.node_frame(n);
        let caller = st.tree.parent(n).map(|p| st.tree.node_frame(p).module);
        if self.has(By::Module) && caller != Some(f.module) {
            let l = self.module_label(f.module);
            at = self.child(at, l);
        }
        let id = st.tree.frame_id_of(n);
        if self.has(By::Function) {
            let (start, end) = match self.function_labels.get(&id) {
                Some(&range) => range,
                None => self.function_labels_of(id, f, names),
            };
            for i in start..end {
                at = self.child(at, self.label_lists[i as usize]);
            }
        }
        if self.has(By::Address) {
            let l = self.label(format!("{:#x}", f.pc));
            at = self.child(at, l);
        }
        at
    }

    /// The function labels of distinct frame `id` (`f`), made once: its
    /// function (or unknown) and the functions inlined at it.
    fn function_labels_of(&mut self, id: u32, f: Frame, names: &mut Names) -> (u32, u32) {
        let start = self.label_lists.len() as u32;
        let l = match names.function(f) {
            Some(func) => Some(self.label(clean(&func))),
            // One spelling for a frame without a function: its module in
            // brackets, `[unknown]` without one (none when its address is
            // shown instead).
            None if !self.has(By::Address) => {
                let m = f.module.and_then(|m| self.info.modules.get(m as usize)).map(names::module_label);
                Some(self.label(clean(&names::unknown_function(m.as_deref()))))
            }
            None => None,
        };
        self.label_lists.extend(l);
        for func in names.inlined(f) {
            let l = self.label(clean(&func));
            self.label_lists.push(l);
        }
        let range = (start, self.label_lists.len() as u32);
        self.function_labels.insert(id, range);
        range
    }

    /// The label node of a stack and label set (made if new).
    fn stack(&mut self, st: &Stacks, set: u32, stack: NodeId, names: &mut Names) -> u32 {
        // Out to the first node whose labels are known, then back in.
        let mut path = Vec::new();
        let mut top = None;
        for n in st.tree.path(stack) {
            if let Some(&l) = self.done.get(&(set, n)) {
                top = Some(l);
                break;
            }
            path.push(n);
        }
        let mut at = match top {
            Some(l) => l,
            None => self.prefix(set, &st.labels[set as usize]),
        };
        for &n in path.iter().rev() {
            at = self.frame(st, n, at, names);
            self.done.insert((set, n), at);
        }
        if at == NONE {
            let all = self.label("all".to_owned());
            at = self.child(NONE, all);
        }
        at
    }

    /// Gives each line with a count to `each`, in the order of its text.
    /// A line's text is its node's path: depth first, a node's own line
    /// before its children's, and its children in the order of their
    /// labels where one label is a prefix of another as the texts order
    /// them (`a` < `a1` < `a1;x` < `a;y`: a node's own line at its label,
    /// its children's lines at its label and `;`).
    fn write_sorted(&self, each: &mut dyn FnMut(&str, u64) -> std::io::Result<()>) -> std::io::Result<usize> {
        let mut start = vec![0u32; self.nodes.len() + 2];
        let slot = |p: u32| if p == NONE { 0 } else { p as usize + 1 };
        for &(p, _) in &self.nodes {
            start[slot(p) + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut next = start.clone();
        let mut children = vec![0u32; self.nodes.len()];
        for (i, &(p, _)) in self.nodes.iter().enumerate() {
            children[next[slot(p)] as usize] = i as u32;
            next[slot(p)] += 1;
        }
        drop(next);
        let text = |n: u32| self.texts[self.nodes[n as usize].1 as usize].as_bytes();
        // (node, whether its children's part, its parent's text length).
        let mut todo: Vec<(u32, bool, usize)> = Vec::new();
        let push_children = |todo: &mut Vec<(u32, bool, usize)>, parent: u32, len: usize| {
            let kids = &children[start[slot(parent)] as usize..start[slot(parent) + 1] as usize];
            let mut parts: Vec<(u32, bool)> = kids.iter().flat_map(|&c| [(c, false), (c, true)]).collect();
            let key = |&(c, deep): &(u32, bool)| text(c).iter().chain(if deep { &b";"[..] } else { &b""[..] });
            parts.sort_by(|a, b| key(a).cmp(key(b)));
            todo.extend(parts.into_iter().rev().map(|(c, deep)| (c, deep, len)));
        };
        push_children(&mut todo, NONE, 0);
        let mut path = String::new();
        let mut lines = 0;
        while let Some((n, deep, len)) = todo.pop() {
            path.truncate(len);
            if len > 0 {
                path.push(';');
            }
            path.push_str(&self.texts[self.nodes[n as usize].1 as usize]);
            if deep {
                push_children(&mut todo, n, path.len());
            } else if self.counts[n as usize] > 0 {
                each(&path, self.counts[n as usize])?;
                lines += 1;
            }
        }
        Ok(lines)
    }
}

/// What the flame graph's counts are.
pub(crate) fn count_name(w: Weight) -> &'static str {
    match w {
        Weight::Samples => "samples",
        Weight::Cputime => "ns",
        Weight::Energy => "µJ",
    }
}

/// Writes the stream's flame graph, or its folded stacks with `fopts.folded`
/// (a line at a time, as they are made). Returns the number of distinct
/// stacks.
pub fn write(
    file: &Tb5File,
    opts: &ViewOptions,
    fopts: &FlameOptions,
    out: &mut dyn Write,
    warn: &mut Vec<tbrw_query::Warning>,
    progress: &mut dyn Progress,
) -> Result<usize, ExportError> {
    let io = |e: std::io::Error| ExportError::write("flame graph", e);
    let empty = || ExportError::Nothing {
        file: file.path().display().to_string(),
        stream: opts.query.stream,
        why: Nothing::ZeroWeight(opts.query.weight),
    };
    if fopts.folded {
        let mut buffered = std::io::BufWriter::with_capacity(1 << 16, out);
        let n = for_each_line(file, opts, fopts, warn, progress, &mut |stack, n| writeln!(buffered, "{stack} {n}"))?;
        buffered.flush().map_err(io)?;
        if n == 0 {
            return Err(empty());
        }
        return Ok(n);
    }
    // inferno reads every line at once: their text, in one buffer.
    let mut text = String::new();
    let mut ends = Vec::new();
    let n = for_each_line(file, opts, fopts, warn, progress, &mut |stack, n| {
        use std::fmt::Write as _;
        let _ = write!(text, "{stack} {n}");
        ends.push(text.len());
        Ok(())
    })?;
    if n == 0 {
        return Err(empty());
    }
    let title = fopts.title.clone().unwrap_or_else(|| {
        let name =
            file.path().file_name().map_or_else(|| file.path().display().to_string(), |f| f.to_string_lossy().into());
        format!("{name}, stream {}", opts.query.stream)
    });
    let lines = ends.iter().scan(0, |from, &to| {
        let line = &text[*from..to];
        *from = to;
        Some(line)
    });
    svg(lines, title, count_name(opts.query.weight), out)?;
    Ok(n)
}

/// Draws folded stacks (`stack count` lines, in order) as inferno's interactive SVG.
#[cfg(feature = "flamegraph")]
fn svg<'l>(
    lines: impl Iterator<Item = &'l str>,
    title: String,
    count_name: &str,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = tbrw::text::escape(&title).into_owned();
    o.count_name = count_name.to_owned();
    o.deterministic = true;
    inferno::flamegraph::from_lines(&mut o, lines, out).map_err(|e| ExportError::write("flame graph", e))
}

/// Without the `flamegraph` feature there is no SVG, only folded stacks.
#[cfg(not(feature = "flamegraph"))]
fn svg<'l>(_: impl Iterator<Item = &'l str>, _: String, _: &str, _: &mut dyn Write) -> Result<(), ExportError> {
    Err(ExportError::NotBuilt { feature: "flamegraph", what: "draws no flame graph SVG: write folded stacks instead" })
}

/// The flame graph export with its options, as the registry runs it
/// ([`crate::registry::Export`]).
#[derive(Clone, Debug, Default)]
pub struct Flamegraph {
    /// The samples exported.
    pub view: ViewOptions,
    /// The graph's options.
    pub options: FlameOptions,
}

impl crate::registry::Export for Flamegraph {
    fn name(&self) -> &'static str {
        "flamegraph"
    }

    fn export(
        &self,
        file: &Tb5File,
        out: crate::registry::Output<'_>,
        warn: &mut Vec<crate::Warning>,
        progress: &mut dyn Progress,
    ) -> Result<crate::registry::Summary, ExportError> {
        let out = crate::registry::file_of(self.name(), out)?;
        let stacks = write(file, &self.view, &self.options, out, warn, progress)?;
        Ok(crate::registry::Summary { line: format!("{stacks} distinct stacks"), ..Default::default() })
    }
}

/// An interactive SVG flame graph of a sample stream (`--folded`: folded-stack text).
#[cfg(feature = "cli")]
#[derive(clap::Args, Debug)]
pub struct FlamegraphArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub view: crate::cli::ViewArgs,
    /// The frames of each stack, outermost first: a comma list of
    /// process, thread, module, function, address.
    #[arg(long, value_parser = crate::named!(By, LEVELS), value_delimiter = ',', default_value = "process,module,function")]
    pub by: Vec<By>,
    /// Write folded stacks (`frame;frame;... count` lines) instead of the SVG.
    #[arg(long)]
    pub folded: bool,
    /// The SVG's title (default: the file's name and the stream).
    #[arg(long)]
    pub title: Option<String>,
}

#[cfg(feature = "cli")]
impl crate::cli::ExportArgs for FlamegraphArgs {
    fn job(self) -> Result<crate::cli::Job, crate::cli::ArgsError> {
        let options = FlameOptions { by: self.by, folded: self.folded, title: self.title };
        self.view.job(|view| Flamegraph { view, options })
    }
}
