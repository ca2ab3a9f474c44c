//! The tables of `tbrw export parquet` (their columns, docs/PARQUET.md
//! says what each holds) and [`TableWriter`], which turns rows into Arrow
//! batches of [`BATCH_ROWS`] and writes them to a Parquet file as they come
//! (Snappy, dictionary pages on every column, row groups of at most
//! [`ROW_GROUP_ROWS`]): memory stays bounded whatever the number of rows.

use std::io::{BufWriter, Write};
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, Float64Builder, Int32Builder, Int64Builder, ListBuilder, StringBuilder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::ExportError;

/// Rows per Arrow batch handed to the Parquet writer.
pub const BATCH_ROWS: usize = 1 << 16;
/// Rows per Parquet row group at most.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 32-bit signed.
    I32,
    /// 64-bit signed.
    I64,
    /// 64-bit unsigned (addresses).
    U64,
    /// 64-bit float.
    F64,
    /// UTF-8 text.
    Str,
    /// A list of 64-bit signed values.
    ListI64,
}

/// A column: name, type, whether it may be null.
pub type Column = (&'static str, Kind, bool);

/// One value of a row, in column order; `None` is null.
#[derive(Clone, Copy, Debug)]
pub enum V<'a> {
    /// For [`Kind::I32`].
    I32(Option<i32>),
    /// For [`Kind::I64`].
    I64(Option<i64>),
    /// For [`Kind::U64`].
    U64(Option<u64>),
    /// For [`Kind::F64`].
    F64(Option<f64>),
    /// For [`Kind::Str`].
    S(Option<&'a str>),
    /// For [`Kind::ListI64`].
    L(Option<&'a [i64]>),
}

/// `samples`: one row per sample record.
pub const SAMPLES: &[Column] = &[
    ("stream", Kind::I32, false),
    ("record", Kind::I64, false),
    ("time", Kind::I64, false),
    ("time_ns", Kind::I64, true),
    ("clock", Kind::Str, false),
    ("pid", Kind::I64, true),
    ("tid", Kind::I64, true),
    ("cpu", Kind::I32, true),
    ("ip", Kind::U64, true),
    ("module_id", Kind::I32, true),
    ("function_id", Kind::I32, true),
    ("event_id", Kind::I64, true),
    ("cputime_ns", Kind::I64, true),
    ("value", Kind::F64, true),
    ("period", Kind::I64, true),
    ("written", Kind::I64, true),
    ("stack_id", Kind::I32, true),
];

/// `intervals`: one row per interval record (MTMC task, winIDEA call).
pub const INTERVALS: &[Column] = &[
    ("stream", Kind::I32, false),
    ("record", Kind::I64, false),
    ("start", Kind::I64, false),
    ("end", Kind::I64, true),
    ("start_ns", Kind::I64, true),
    ("end_ns", Kind::I64, true),
    ("clock", Kind::Str, false),
    ("duration_ns", Kind::I64, true),
    ("name", Kind::Str, true),
    ("event_id", Kind::I64, true),
    ("pid", Kind::I64, true),
    ("tid", Kind::I64, true),
    ("core", Kind::I32, true),
    ("core_end", Kind::I32, true),
    ("net_ns", Kind::I64, true),
    ("gross_ns", Kind::I64, true),
    ("counter_deltas", Kind::ListI64, true),
    ("slots", Kind::I64, true),
    ("retiring", Kind::F64, true),
    ("bad_speculation", Kind::F64, true),
    ("frontend_bound", Kind::F64, true),
    ("backend_bound", Kind::F64, true),
    ("heavy_operations", Kind::F64, true),
    ("light_operations", Kind::F64, true),
    ("branch_mispredicts", Kind::F64, true),
    ("machine_clears", Kind::F64, true),
    ("fetch_latency", Kind::F64, true),
    ("fetch_bandwidth", Kind::F64, true),
    ("memory_bound", Kind::F64, true),
    ("core_bound", Kind::F64, true),
    ("invalid", Kind::Str, true),
];

/// `runs`: one row per exported file.
pub const RUNS: &[Column] = &[
    ("host_name", Kind::Str, true),
    ("source_file", Kind::Str, false),
    ("source_bytes", Kind::I64, false),
    ("import_kind", Kind::Str, false),
    ("command_line", Kind::Str, true),
    ("start_ns", Kind::I64, true),
    ("end_ns", Kind::I64, true),
    ("first_time_ns", Kind::I64, true),
    ("last_time_ns", Kind::I64, true),
    ("streams", Kind::I32, false),
    ("samples", Kind::I64, false),
    ("intervals", Kind::I64, false),
];

/// `modules`: the run's module table.
pub const MODULES: &[Column] = &[
    ("module_id", Kind::I32, false),
    ("name", Kind::Str, true),
    ("path", Kind::Str, true),
    ("pid", Kind::I64, false),
    ("load_address", Kind::U64, false),
    ("length", Kind::U64, false),
];

/// `processes`: the run's process table.
pub const PROCESSES: &[Column] = &[("pid", Kind::I64, false), ("name", Kind::Str, true), ("path", Kind::Str, true)];

/// `threads`: the run's thread table.
pub const THREADS: &[Column] = &[("tid", Kind::I64, false), ("pid", Kind::I64, false), ("name", Kind::Str, true)];

/// `events`: each stream's events.
pub const EVENTS: &[Column] = &[
    ("stream", Kind::I32, false),
    ("event_id", Kind::I64, false),
    ("name", Kind::Str, true),
    ("sample_after", Kind::I64, false),
];

/// `functions`: the functions samples were symbolized to.
pub const FUNCTIONS: &[Column] =
    &[("function_id", Kind::I32, false), ("module_id", Kind::I32, true), ("name", Kind::Str, false)];

/// `stacks`: the run's call stacks, one row per node of a prefix tree
/// (each distinct stack once, sharing its outer frames with others).
pub const STACKS: &[Column] = &[
    ("stack_id", Kind::I32, false),
    ("parent", Kind::I32, true),
    ("address", Kind::U64, false),
    ("module_id", Kind::I32, true),
    ("function_id", Kind::I32, true),
    ("depth", Kind::I32, false),
    ("inline_depth", Kind::I32, false),
];

fn data_type(k: Kind) -> DataType {
    match k {
        Kind::I32 => DataType::Int32,
        Kind::I64 => DataType::Int64,
        Kind::U64 => DataType::UInt64,
        Kind::F64 => DataType::Float64,
        Kind::Str => DataType::Utf8,
        Kind::ListI64 => DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
    }
}

/// The Arrow schema of a table.
pub fn schema(columns: &[Column]) -> SchemaRef {
    Arc::new(Schema::new(columns.iter().map(|(n, k, null)| Field::new(*n, data_type(*k), *null)).collect::<Vec<_>>()))
}

enum Builder {
    I32(Int32Builder),
    I64(Int64Builder),
    U64(UInt64Builder),
    F64(Float64Builder),
    Str(StringBuilder),
    ListI64(ListBuilder<Int64Builder>),
}

impl Builder {
    fn new(k: Kind) -> Builder {
        match k {
            Kind::I32 => Builder::I32(Int32Builder::with_capacity(BATCH_ROWS)),
            Kind::I64 => Builder::I64(Int64Builder::with_capacity(BATCH_ROWS)),
            Kind::U64 => Builder::U64(UInt64Builder::with_capacity(BATCH_ROWS)),
            Kind::F64 => Builder::F64(Float64Builder::with_capacity(BATCH_ROWS)),
            Kind::Str => Builder::Str(StringBuilder::new()),
            Kind::ListI64 => Builder::ListI64(ListBuilder::new(Int64Builder::new())),
        }
    }

    /// Appends `v`; `false` when its type is not the column's.
    fn push(&mut self, v: V<'_>) -> bool {
        match (self, v) {
            (Builder::I32(b), V::I32(x)) => b.append_option(x),
            (Builder::I64(b), V::I64(x)) => b.append_option(x),
            (Builder::U64(b), V::U64(x)) => b.append_option(x),
            (Builder::F64(b), V::F64(x)) => b.append_option(x),
            (Builder::Str(b), V::S(x)) => b.append_option(x),
            (Builder::ListI64(b), V::L(None)) => b.append_null(),
            (Builder::ListI64(b), V::L(Some(xs))) => {
                b.values().append_slice(xs);
                b.append(true);
            }
            _ => return false,
        }
        true
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::I32(b) => Arc::new(b.finish()),
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::U64(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::ListI64(b) => ArrayBuilder::finish(b),
        }
    }
}

/// One Parquet file of a table, written as rows are pushed.
pub struct TableWriter {
    name: String,
    columns: &'static [Column],
    schema: SchemaRef,
    builders: Vec<Builder>,
    pending: usize,
    rows: u64,
    writer: ArrowWriter<BufWriter<Box<dyn Write + Send>>>,
}

/// A Parquet error on the file `name`.
fn perr(name: &str, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ExportError {
    ExportError::Table { file: name.to_owned(), source: e.into() }
}

impl TableWriter {
    /// A table of `columns` written to `file` (named `name` in messages).
    pub fn new(
        name: &str,
        file: Box<dyn Write + Send>,
        columns: &'static [Column],
    ) -> Result<TableWriter, ExportError> {
        let schema = schema(columns);
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_dictionary_enabled(true)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_created_by(format!("tbrw {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer = ArrowWriter::try_new(BufWriter::with_capacity(1 << 20, file), schema.clone(), Some(props))
            .map_err(|e| perr(name, e))?;
        Ok(TableWriter {
            name: name.to_owned(),
            columns,
            schema,
            builders: columns.iter().map(|(_, k, _)| Builder::new(*k)).collect(),
            pending: 0,
            rows: 0,
            writer,
        })
    }

    /// Appends one row (values in column order).
    pub fn push(&mut self, row: &[V<'_>]) -> Result<(), ExportError> {
        if row.len() != self.builders.len() {
            return Err(perr(&self.name, format!("a row of {} values for {} columns", row.len(), self.builders.len())));
        }
        for (i, (b, v)) in self.builders.iter_mut().zip(row).enumerate() {
            if !b.push(*v) {
                return Err(perr(&self.name, format!("value {v:?} does not fit column {}", self.columns[i].0)));
            }
        }
        self.pending += 1;
        self.rows += 1;
        if self.pending >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        if self.pending == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.builders.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), arrays).map_err(|e| perr(&self.name, e))?;
        self.writer.write(&batch).map_err(|e| perr(&self.name, e))?;
        self.pending = 0;
        Ok(())
    }

    /// Writes what is pending and the file's footer; the rows written.
    pub fn close(mut self) -> Result<u64, ExportError> {
        self.flush()?;
        let name = self.name.clone();
        let rows = self.rows;
        let inner = self.writer.into_inner().map_err(|e| perr(&name, e))?;
        let mut file = inner.into_inner().map_err(|e| perr(&name, e.into_error()))?;
        file.flush().map_err(|e| ExportError::write(&name, e))?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_the_wrong_shape_are_errors_not_panics() {
        let mut folder = crate::folder::MemoryFolder::new();
        let mut create = |name: &str, columns| {
            let file = crate::folder::Folder::create(&mut folder, name).unwrap();
            TableWriter::new(name, file, columns).unwrap()
        };
        let mut w = create("p.parquet", PROCESSES);
        w.push(&[V::I64(Some(1)), V::S(Some("a")), V::S(None)]).unwrap();
        assert!(w.push(&[V::I64(Some(1))]).is_err());
        assert!(w.push(&[V::S(Some("x")), V::S(None), V::S(None)]).is_err());
        let mut w = create("i.parquet", INTERVALS);
        let mut row = vec![V::I64(None); INTERVALS.len()];
        row[0] = V::I32(Some(0));
        row[1] = V::I64(Some(0));
        row[2] = V::I64(Some(5));
        row[6] = V::S(Some("utc"));
        row[8] = V::S(None);
        row[12] = V::I32(None);
        row[13] = V::I32(None);
        row[16] = V::L(Some(&[1, -2]));
        for (i, c) in INTERVALS.iter().enumerate().skip(18) {
            if c.1 == Kind::F64 {
                row[i] = V::F64(None);
            }
        }
        row[30] = V::S(None);
        w.push(&row).unwrap();
        assert_eq!(w.close().unwrap(), 1);
        assert!(!folder.files()["i.parquet"].is_empty());
    }
}
