//! [`FileReader`]: opening a file and reading it (scan, projection, row ranges, `take`, plans).
//!
//! Opening reads the end of the file once (64 KiB, which holds the tail, the footer and the
//! column table of most files) and parses only the footer. The metadata of a column is read and
//! decoded the first time a read needs it, so reading 10 columns of a 10,000-column file costs
//! in proportion to the 10.
//!
//! A read ([`ReadBuilder`]) wires the three loops of the design together: field schedulers and
//! the scheduling loop on a blocking task, an [`IoScheduler`] for the reads, and a
//! [`DecodeBatchStream`] the caller polls.

use std::collections::HashMap;
use std::ops::Range;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use arrow_array::{RecordBatch, UInt64Array};
use arrow_schema::{DataType, Schema, SchemaRef};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt, TryStreamExt};

use crate::decoder::{DecodeBatchStream, ReadMetrics, ReadTimings};
use crate::encodings::statistics::{StatValue, decode_bound};
use crate::error::{Error, Result, bail, ensure};
use crate::format::proto::{ColumnMetadata, Compression, Footer};
use crate::format::schema::{FieldColumns, schema_from_proto};
use crate::format::{self, ColumnEntry, FileTail, TAIL_LEN};
use crate::io::{
    CoalesceOptions, EncodingsIo, IoOptions, IoPlan, IoScheduler, IoStats, LocalFileReader, PlanningIo, RangeReader,
    coalesce_ranges,
};
use crate::scheduler::{
    ColumnJob, ColumnPages, FieldScheduler, ReadContext, RowPriority, RowSelection, field_scheduler,
    run_scheduling_loop,
};

/// How many bytes at the end of the file are read on open.
const OPEN_READ_BYTES: u64 = 64 * 1024;

/// Default (and most) rows per output batch when the read does not set a batch size.
pub const DEFAULT_BATCH_SIZE: usize = 8192;

/// Bytes a default batch aims at: rows wider than `DEFAULT_BATCH_BYTES / DEFAULT_BATCH_SIZE`
/// (embeddings, say) get fewer rows per batch, so a batch stays well within a page and rarely
/// has to be copied together from two.
pub const DEFAULT_BATCH_BYTES: u64 = 2 * 1024 * 1024;

/// An open looseleaf file. Cheap to clone; safe to read from several tasks at once.
#[derive(Clone)]
pub struct FileReader {
    inner: Arc<FileInner>,
}

struct FileInner {
    reader: Arc<dyn RangeReader>,
    tail: FileTail,
    schema: SchemaRef,
    fields: Vec<FieldColumns>,
    num_rows: u64,
    created_by: String,
    /// The bytes read on open and where they start in the file.
    suffix: Bytes,
    suffix_start: u64,
    /// Column metadata decoded so far.
    columns: Vec<OnceLock<Arc<ColumnPages>>>,
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader")
            .field("location", &self.location())
            .field("num_rows", &self.num_rows())
            .field("num_columns", &self.num_columns())
            .finish()
    }
}

impl FileReader {
    /// Opens the file behind `reader`.
    ///
    /// # Errors
    /// [`Error::Io`] if the storage fails, [`Error::Corrupt`] if the file is not a finished
    /// looseleaf file, [`Error::Unsupported`] for another major version or unknown types.
    pub async fn open(reader: Arc<dyn RangeReader>) -> Result<Self> {
        let location = reader.location().to_string();
        Self::open_inner(reader).await.map_err(|e| e.with_location(&location))
    }

    /// Opens a local file.
    pub async fn open_path(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::open(Arc::new(LocalFileReader::open(path)?)).await
    }

    async fn open_inner(reader: Arc<dyn RangeReader>) -> Result<Self> {
        let (suffix, file_size) = reader.get_suffix(OPEN_READ_BYTES).await?;
        ensure!(
            suffix.len() as u64 == file_size.min(OPEN_READ_BYTES),
            corrupt,
            "the end of the file could not be read ({} of {} bytes came back)",
            suffix.len(),
            file_size.min(OPEN_READ_BYTES)
        );
        ensure!(file_size > 0, corrupt, "the file is empty");
        let suffix_start = file_size - suffix.len() as u64;
        let tail_bytes = suffix.slice(suffix.len().saturating_sub(TAIL_LEN as usize)..);
        let tail = FileTail::parse(&tail_bytes, file_size)?;

        let footer_bytes = if tail.footer_offset >= suffix_start {
            let start = (tail.footer_offset - suffix_start) as usize;
            suffix.slice(start..start + tail.footer_length as usize)
        } else {
            reader.get_range(tail.footer_range()).await?
        };
        let footer: Footer = format::decode_checked(&footer_bytes, tail.footer_crc, "footer")?;
        let (schema, fields) = schema_from_proto(&footer.fields, &footer.metadata, tail.num_columns)?;
        let columns = (0..tail.num_columns).map(|_| OnceLock::new()).collect();
        Ok(Self {
            inner: Arc::new(FileInner {
                reader,
                tail,
                schema,
                fields,
                num_rows: footer.num_rows,
                created_by: footer.created_by,
                suffix,
                suffix_start,
                columns,
            }),
        })
    }

    /// The file's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.inner.schema
    }

    /// Number of rows.
    pub fn num_rows(&self) -> u64 {
        self.inner.num_rows
    }

    /// Number of columns (a nested field may have several).
    pub fn num_columns(&self) -> u32 {
        self.inner.tail.num_columns
    }

    /// The file's location.
    pub fn location(&self) -> &str {
        self.inner.reader.location()
    }

    /// The software that wrote the file.
    pub fn created_by(&self) -> &str {
        &self.inner.created_by
    }

    /// The I/O settings reads use unless told otherwise (they depend on the storage).
    pub fn io_defaults(&self) -> IoOptions {
        self.inner.reader.io_defaults()
    }

    /// The fields and the columns that store them.
    pub fn field_columns(&self) -> &[FieldColumns] {
        &self.inner.fields
    }

    /// A read of the whole file, to narrow down with the builder's methods.
    pub fn read(&self) -> ReadBuilder {
        ReadBuilder::new(self.clone())
    }

    /// Reads the rows at `indices` (any order, repeats allowed) and returns them in that order.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index out of range or an unknown column.
    pub async fn take(&self, indices: &[u64], columns: Option<&[String]>) -> Result<RecordBatch> {
        if let Some(bad) = indices.iter().find(|i| **i >= self.num_rows()) {
            return Err(Error::InvalidArgument(format!(
                "row index {bad} is out of range for {} with {} rows",
                self.location(),
                self.num_rows()
            )));
        }
        let mut sorted = indices.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut read = self.read().with_selection(RowSelection::from_sorted_indices(&sorted));
        read = read.with_batch_size(sorted.len().max(1));
        if let Some(columns) = columns {
            read = read.with_columns(columns.to_vec());
        }
        let mut stream = read.stream().await?;
        let schema = stream.schema().clone();
        let batches: Vec<RecordBatch> = (&mut stream).try_collect().await?;
        let batch = arrow_select::concat::concat_batches(&schema, &batches)?;
        if sorted.len() == indices.len() && sorted.as_slice() == indices {
            return Ok(batch);
        }
        let positions: UInt64Array =
            indices.iter().map(|i| sorted.partition_point(|s| s < i) as u64).collect::<Vec<_>>().into();
        Ok(arrow_select::take::take_record_batch(&batch, &positions)?)
    }

    /// A description of every column and page (reads all column metadata).
    pub async fn metadata(&self) -> Result<FileMetadata> {
        let all: Vec<u32> = (0..self.num_columns()).collect();
        let pages = self.load_columns(&all).await?;
        let mut columns = Vec::with_capacity(pages.len());
        for tree in &self.inner.fields {
            describe_columns(tree, "", &pages, &mut columns);
        }
        columns.sort_by_key(|c| c.column);
        Ok(FileMetadata {
            location: self.location().to_string(),
            num_rows: self.num_rows(),
            created_by: self.inner.created_by.clone(),
            format_version: (self.inner.tail.major, self.inner.tail.minor),
            columns,
        })
    }

    /// Decoded metadata of `columns`, reading what is not cached yet in as few reads as
    /// possible.
    async fn load_columns(&self, columns: &[u32]) -> Result<HashMap<u32, Arc<ColumnPages>>> {
        let inner = &self.inner;
        let mut out = HashMap::new();
        let mut missing = Vec::new();
        for &column in columns {
            let slot = inner
                .columns
                .get(column as usize)
                .ok_or_else(|| Error::Internal(format!("column {column} out of range")))?;
            match slot.get() {
                Some(pages) => {
                    out.insert(column, pages.clone());
                }
                None => missing.push(column),
            }
        }
        if missing.is_empty() {
            return Ok(out);
        }
        missing.sort_unstable();
        missing.dedup();
        let metadata_end = inner.tail.table_offset;
        let entry_ranges: Vec<_> = missing.iter().map(|c| inner.tail.column_entry_range(*c)).collect();
        let entries = self
            .read_metadata(&entry_ranges)
            .await?
            .iter()
            .map(|bytes| ColumnEntry::parse(bytes, metadata_end))
            .collect::<Result<Vec<_>>>()?;
        let blocks = self.read_metadata(&entries.iter().map(|e| e.range()).collect::<Vec<_>>()).await?;
        for ((column, entry), bytes) in missing.into_iter().zip(entries).zip(blocks) {
            let metadata: ColumnMetadata =
                format::decode_checked(&bytes, entry.crc, &format!("metadata of column {column}"))?;
            let pages = Arc::new(ColumnPages::try_new(column, metadata, metadata_end)?);
            let pages = inner.columns[column as usize].get_or_init(|| pages).clone();
            out.insert(column, pages);
        }
        Ok(out)
    }

    /// Reads metadata ranges, from the bytes read on open where they hold them.
    async fn read_metadata(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let inner = &self.inner;
        let outside: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < inner.suffix_start).cloned().collect();
        let reads = coalesce_ranges(&outside, CoalesceOptions { gap: 64 * 1024, max_read: u64::MAX });
        let loaded = futures::future::try_join_all(reads.iter().map(|r| inner.reader.get_range(r.clone()))).await?;
        ranges
            .iter()
            .map(|range| {
                // The block of a column without pages is empty: `coalesce_ranges` makes no read
                // for it, and it needs none.
                if range.is_empty() {
                    return Ok(Bytes::new());
                }
                let (base, bytes) = if range.start >= inner.suffix_start {
                    (inner.suffix_start, &inner.suffix)
                } else {
                    let i = reads.partition_point(|read| read.end <= range.start);
                    match (reads.get(i), loaded.get(i)) {
                        (Some(read), Some(bytes)) if read.start <= range.start => (read.start, bytes),
                        _ => bail!(internal, "metadata range {range:?} of {} was not read", self.location()),
                    }
                };
                let start = (range.start - base) as usize;
                let end = (range.end - base) as usize;
                ensure!(end <= bytes.len(), corrupt, "metadata range {range:?} lies past the end of the file");
                Ok(bytes.slice(start..end))
            })
            .collect()
    }

    /// Builds the field schedulers of `fields` (top-level fields, possibly narrowed), and
    /// returns them with the average stored bytes of a row of those fields.
    async fn field_schedulers(&self, fields: &[FieldColumns]) -> Result<(Vec<Arc<dyn FieldScheduler>>, u64)> {
        let columns: Vec<u32> = fields.iter().flat_map(|f| f.columns()).collect();
        let pages = self.load_columns(&columns).await?;
        let bytes: u64 = columns.iter().filter_map(|c| pages.get(c)).map(|c| c.num_bytes()).sum();
        let row_bytes = bytes / self.num_rows().max(1);
        let schedulers =
            fields.iter().map(|tree| field_scheduler(tree, &pages, self.num_rows())).collect::<Result<_>>()?;
        Ok((schedulers, row_bytes))
    }

    /// The column trees of the projected fields, in the requested order.
    fn project(&self, columns: Option<&[String]>) -> Result<Vec<FieldColumns>> {
        match columns {
            None => Ok(self.inner.fields.clone()),
            Some(paths) => crate::projection::project(&self.inner.fields, paths),
        }
    }
}

fn describe_columns(
    tree: &FieldColumns,
    prefix: &str,
    pages: &HashMap<u32, Arc<ColumnPages>>,
    out: &mut Vec<ColumnSummary>,
) {
    let path = if prefix.is_empty() { tree.field.name().clone() } else { format!("{prefix}.{}", tree.field.name()) };
    if let Some(column) = tree.column.and_then(|c| pages.get(&c)) {
        out.push(ColumnSummary {
            column: column.column,
            field: path.clone(),
            data_type: tree.field.data_type().clone(),
            pages: column
                .pages
                .iter()
                .map(|p| PageSummary {
                    num_rows: p.num_rows,
                    encoding: crate::encodings::physical::describe(p.encoding.as_ref()),
                    buffer_sizes: p.buffers.iter().map(|b| b.size).collect(),
                    compression: Compression::try_from(p.compression).unwrap_or(Compression::None),
                    null_count: p.statistics.as_ref().map(|s| s.null_count),
                    min: p
                        .statistics
                        .as_ref()
                        .and_then(|s| s.min.as_deref())
                        .and_then(|b| decode_bound(b, tree.field.data_type())),
                    max: p
                        .statistics
                        .as_ref()
                        .and_then(|s| s.max.as_deref())
                        .and_then(|b| decode_bound(b, tree.field.data_type())),
                })
                .collect(),
        });
    }
    for child in &tree.children {
        describe_columns(child, &path, pages, out);
    }
}

/// A description of a file's columns and pages.
#[derive(Debug, Clone, PartialEq)]
pub struct FileMetadata {
    /// The file.
    pub location: String,
    /// Number of rows.
    pub num_rows: u64,
    /// The software that wrote it.
    pub created_by: String,
    /// Format version (major, minor).
    pub format_version: (u16, u16),
    /// The columns, in column order.
    pub columns: Vec<ColumnSummary>,
}

/// A description of one column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSummary {
    /// The column's number.
    pub column: u32,
    /// Dotted path of the field it stores.
    pub field: String,
    /// The field's type.
    pub data_type: DataType,
    /// Its pages.
    pub pages: Vec<PageSummary>,
}

/// A description of one page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageSummary {
    /// Number of values.
    pub num_rows: u64,
    /// The encoding tree, as text.
    pub encoding: String,
    /// Size of each buffer in bytes (as stored).
    pub buffer_sizes: Vec<u64>,
    /// General-purpose compression of the page.
    pub compression: Compression,
    /// Null count, if statistics were written.
    pub null_count: Option<u64>,
    /// Smallest non-null value, if known.
    pub min: Option<StatValue>,
    /// Largest non-null value, if known.
    pub max: Option<StatValue>,
}

/// Describes a read of a [`FileReader`]; see [`FileReader::read`].
#[derive(Clone)]
pub struct ReadBuilder {
    file: FileReader,
    columns: Option<Vec<String>>,
    selection: Option<RowSelection>,
    /// Rows per batch; `None` for the default (see [`ReadBuilder::with_batch_size`]).
    batch_size: Option<usize>,
    io: Option<IoOptions>,
    decode_parallelism: Option<usize>,
    /// A row range given backwards, reported when the read starts.
    inverted_range: Option<Range<u64>>,
    /// Top-level columns to return as dictionary arrays.
    dictionary_columns: Vec<String>,
}

impl ReadBuilder {
    fn new(file: FileReader) -> Self {
        Self {
            file,
            columns: None,
            selection: None,
            batch_size: None,
            io: None,
            decode_parallelism: None,
            inverted_range: None,
            dictionary_columns: Vec::new(),
        }
    }

    /// Reads only these top-level columns, in this order.
    pub fn with_columns(self, columns: Vec<String>) -> Self {
        Self { columns: Some(columns), ..self }
    }

    /// Returns these top-level columns (of flat types) as `DictionaryArray`s: dictionary-encoded
    /// pages keep their dictionary without materialising the values, other pages are
    /// dictionary-encoded as they are read. The keys are the narrowest of `Int8`, `Int16` and
    /// `Int32` that can index both the largest dictionary among the column's pages and a whole
    /// batch of distinct values, so they are known before the read. Columns written from
    /// dictionary arrays are returned as dictionaries anyway, with the keys they were written with.
    pub fn with_dictionary_columns(self, columns: Vec<String>) -> Self {
        Self { dictionary_columns: columns, ..self }
    }

    /// Reads only the rows of `range` (an error at the start of the read if `range.start >
    /// range.end` or the range runs past the last row).
    pub fn with_row_range(self, range: Range<u64>) -> Self {
        let inverted = range.start > range.end;
        let builder = self.with_selection(RowSelection::range(range.clone()));
        Self { inverted_range: inverted.then_some(range), ..builder }
    }

    /// Reads only the rows of `selection`.
    pub fn with_selection(self, selection: RowSelection) -> Self {
        Self { selection: Some(selection), ..self }
    }

    /// Rows per output batch (the last batch may be shorter). By default,
    /// [`DEFAULT_BATCH_SIZE`] rows, or fewer when the projected rows are wide: as many as fit in
    /// [`DEFAULT_BATCH_BYTES`] of stored data (at least one).
    pub fn with_batch_size(self, batch_size: usize) -> Self {
        Self { batch_size: Some(batch_size.max(1)), ..self }
    }

    /// I/O depth, byte budget and coalescing; default: what the storage suggests
    /// ([`RangeReader::io_defaults`]).
    pub fn with_io_options(self, io: IoOptions) -> Self {
        Self { io: Some(io), ..self }
    }

    /// How many batches are decoded at once; default: the number of CPUs.
    pub fn with_decode_parallelism(self, parallelism: usize) -> Self {
        Self { decode_parallelism: Some(parallelism.max(1)), ..self }
    }

    fn io_options(&self) -> IoOptions {
        self.io.unwrap_or_else(|| self.file.inner.reader.io_defaults())
    }

    /// Builds the schedulers and decoders of the read.
    async fn start(&self) -> Result<StartedRead> {
        let file = &self.file;
        if let Some(range) = &self.inverted_range {
            return Err(Error::InvalidArgument(format!("row range {range:?} ends before it starts")));
        }
        let selection = self.selection.clone().unwrap_or_else(|| RowSelection::all(file.num_rows()));
        selection.check_bounds(file.num_rows())?;
        let mut fields = file.project(self.columns.as_deref())?;
        for name in &self.dictionary_columns {
            let mut found = false;
            for tree in fields.iter_mut().filter(|t| t.field.name() == name) {
                found = true;
                // A batch's dictionary is one page's dictionary, or the values its rows use
                // (pages merged or plain pages encoded as read): never more values than the
                // larger of the two.
                let pages = file.load_columns(&tree.columns()).await?;
                let largest = pages
                    .values()
                    .flat_map(|column| &column.pages)
                    .map(|page| crate::encodings::physical::largest_dictionary(page.encoding.as_ref()))
                    .max()
                    .unwrap_or(0);
                let batch_rows = self.batch_size.map_or(DEFAULT_BATCH_SIZE as u64, |rows| rows as u64);
                tree.field = as_dictionary(&tree.field, largest.max(batch_rows))?;
            }
            ensure!(found, invalid, "dictionary column {name:?} is not among the columns read");
        }
        let schema = Arc::new(Schema::new_with_metadata(
            fields.iter().map(|f| f.field.clone()).collect::<Vec<_>>(),
            file.schema().metadata().clone(),
        ));
        let (schedulers, row_bytes) = file.field_schedulers(&fields).await?;
        let context = ReadContext::new(file.location());
        let selection = Arc::new(selection);
        let top_level = Arc::new(RowPriority::TopLevel);
        let mut jobs = Vec::new();
        let mut decoders = Vec::new();
        for scheduler in schedulers {
            let (field_jobs, decoder) = scheduler.start(&selection, &top_level, &context)?;
            jobs.extend(field_jobs);
            decoders.push(decoder);
        }
        let batch_size = match self.batch_size {
            Some(rows) => rows as u64,
            None => default_batch_size(row_bytes),
        };
        let stream =
            DecodeBatchStream::new(schema.clone(), decoders, selection.num_rows(), batch_size, context.metrics.clone());
        Ok(StartedRead { schema, jobs, stream, context })
    }

    /// Starts the read and returns its stream of batches.
    ///
    /// Must be called (and the stream polled) inside a tokio runtime.
    pub async fn stream(self) -> Result<RecordBatchStream> {
        let location = self.file.location().to_string();
        let started = self.start().await.map_err(|e| e.with_location(&location))?;
        let io = IoScheduler::new(self.file.inner.reader.clone(), self.io_options());
        let io_dyn: Arc<dyn EncodingsIo> = Arc::new(io.clone());
        let StartedRead { schema, jobs, stream, context } = started;
        let metrics = context.metrics.clone();
        // The scheduling loop never waits for I/O but may run for a while on a large file: it
        // gets a thread of its own rather than holding up a runtime worker.
        tokio::task::spawn_blocking(move || run_scheduling_loop(jobs, &io_dyn, &context));
        let parallelism = self
            .decode_parallelism
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2));
        // Assembling a batch can fail on what the file says (a field declared non-nullable
        // whose pages hold nulls): such errors name the file too.
        let batches = stream
            .into_stream(parallelism, tokio::runtime::Handle::current())
            .map_err(move |e| e.with_location(&location))
            .boxed();
        Ok(RecordBatchStream { schema, batches, io, metrics })
    }

    /// Runs only the scheduling loop and returns the I/O the read would make.
    pub async fn plan(self) -> Result<IoPlan> {
        let location = self.file.location().to_string();
        let StartedRead { jobs, context, stream, .. } = self.start().await.map_err(|e| e.with_location(&location))?;
        let planner = Arc::new(PlanningIo::new(self.io_options().coalesce));
        let io: Arc<dyn EncodingsIo> = planner.clone();
        // The decoders stay alive while the loop runs: jobs stop scheduling once theirs is gone.
        run_scheduling_loop(jobs, &io, &context)?;
        drop(stream);
        Ok(planner.plan())
    }
}

/// `field` with its flat type read as a dictionary with the narrowest signed keys (the Arrow
/// convention) that index `max_values` values.
fn as_dictionary(field: &arrow_schema::FieldRef, max_values: u64) -> Result<arrow_schema::FieldRef> {
    let key = if max_values <= i8::MAX as u64 + 1 {
        DataType::Int8
    } else if max_values <= i16::MAX as u64 + 1 {
        DataType::Int16
    } else {
        DataType::Int32
    };
    let data_type = field.data_type();
    let dictionary = match data_type {
        DataType::Dictionary(..) => return Ok(field.clone()),
        value
            if crate::format::schema::Layout::of(value).ok() == Some(crate::format::schema::Layout::Leaf)
                && !matches!(value, DataType::FixedSizeList(..) | DataType::Null) =>
        {
            DataType::Dictionary(Box::new(key), Box::new(value.clone()))
        }
        other => bail!(invalid, "column {:?} of type {other} cannot be read as a dictionary", field.name()),
    };
    Ok(Arc::new(field.as_ref().clone().with_data_type(dictionary)))
}

/// The default batch size for rows of `row_bytes` stored bytes.
fn default_batch_size(row_bytes: u64) -> u64 {
    (DEFAULT_BATCH_BYTES / row_bytes.max(1)).clamp(1, DEFAULT_BATCH_SIZE as u64)
}

struct StartedRead {
    schema: SchemaRef,
    jobs: Vec<Box<dyn ColumnJob>>,
    stream: DecodeBatchStream,
    context: ReadContext,
}

/// The batches of a read, in row order.
pub struct RecordBatchStream {
    schema: SchemaRef,
    batches: BoxStream<'static, Result<RecordBatch>>,
    io: IoScheduler,
    metrics: Arc<ReadMetrics>,
}

impl RecordBatchStream {
    /// The schema of the batches.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The read's I/O counters so far.
    pub fn io_stats(&self) -> IoStats {
        self.io.stats()
    }

    /// Where the read's time went so far: scheduling, waiting for I/O, decoding.
    pub fn timings(&self) -> ReadTimings {
        self.metrics.snapshot()
    }

    /// The read's timings (a handle that outlives the stream).
    pub fn metrics(&self) -> &Arc<ReadMetrics> {
        &self.metrics
    }

    /// The read's I/O scheduler (a handle that outlives the stream, for its counters).
    pub fn io_scheduler(&self) -> &IoScheduler {
        &self.io
    }
}

impl Stream for RecordBatchStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.batches.poll_next_unpin(cx)
    }
}
