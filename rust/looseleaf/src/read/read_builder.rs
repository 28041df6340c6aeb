//! [`ReadBuilder`]: what a read returns and how, and the wiring of its three loops.
//!
//! [`ReadBuilder::stream`] resolves the projection, the rows and the options, builds the field
//! schedulers, starts each field (column jobs on one side, [`FieldPages`] on the other), and
//! connects the loops: the [scheduling loop](super::scheduling_loop) on a blocking thread, an
//! [`IoScheduler`] between it and storage, and a [`DecodeBatchStream`] the caller polls.
//! [`ReadBuilder::plan`] runs only the scheduling loop, against a [`PlanningIo`].
//!
//! A read given a [`Trace`] ([`ReadBuilder::with_trace`]) hands it to each loop (through the
//! [`ReadContext`], the [`IoScheduler`] and the [`DecodeBatchStream`]) and records the batches
//! handed out to its caller: those of [`stream`](ReadBuilder::stream), or the one batch of
//! [`take`](ReadBuilder::take). Sub-reads (a `take`'s steps, a filtered read's stages) record
//! their loops, never their batches, so a trace's batches are the caller's.

use std::num::NonZeroUsize;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, FieldRef, Schema, SchemaRef};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt, TryStreamExt};

use super::batch_plan::{BatchPlan, column_spans};
use super::decode_stream::{DecodeBatchStream, compact, concat_steps, gather_rows, steps_in_flight};
use super::field_decoder::field_decoder;
use super::field_scheduler::RowPriority;
use super::file_reader::{FileReader, RowBytes};
use super::filtered_read::{FilterCounts, FilterStats, FilteredPlan};
use super::metrics::{ReadMetrics, ReadTimings};
use super::pages::ReadContext;
use super::scheduling_loop::{ColumnJob, run_scheduling_loop};
use crate::error::{Result, bail, ensure};
use crate::filter::Predicate;
use crate::format::schema::{FieldColumns, Layout};
use crate::io::{EncodingsIo, IoBudget, IoOptions, IoPlan, IoScheduler, IoStats, PlanningIo};
use crate::options::{DEFAULT_BATCH_BYTES, DEFAULT_BATCH_MAX_BYTES, ReadOptions};
use crate::selection::RowSelection;
use crate::trace::{SpanKind, Trace, TraceInfo};

/// Which rows a read wants, as given (checked against the file when the read starts).
#[derive(Debug, Clone)]
enum Rows {
    All,
    Range(Range<u64>),
    Indices(Vec<u64>),
    Selection(RowSelection),
}

/// Describes a read of a [`FileReader`]; see [`FileReader::read`].
///
/// What is read: [`with_columns`](Self::with_columns) and the rows
/// ([`with_row_range`](Self::with_row_range), [`with_indices`](Self::with_indices),
/// [`with_selection`](Self::with_selection)). How: [`ReadOptions`] (over the reader's own), or
/// a whole [`IoOptions`] with [`with_io_options`](Self::with_io_options). Nothing is checked
/// until the read starts; every error names the file.
#[derive(Clone)]
pub struct ReadBuilder {
    file: FileReader,
    columns: Option<Vec<String>>,
    rows: Rows,
    options: ReadOptions,
    /// Replaces the storage's I/O settings (coalescing included) when set.
    io: Option<IoOptions>,
    /// Only the rows where this is true are returned.
    filter: Option<Predicate>,
    /// The I/O scheduler to read through, when the read is a part of a larger one (a filtered
    /// read's stages share one, and so its counters and buffer); a read of its own otherwise.
    io_scheduler: Option<IoScheduler>,
    /// Where the read records its events, if it is traced.
    trace: Option<Trace>,
}

impl ReadBuilder {
    pub(crate) fn new(file: FileReader) -> Self {
        Self {
            file,
            columns: None,
            rows: Rows::All,
            options: ReadOptions::default(),
            io: None,
            filter: None,
            io_scheduler: None,
            trace: None,
        }
    }

    /// Reads only these columns, in this order: top-level names, or dotted paths into structs
    /// and list items (see `docs/format.md`, projections).
    pub fn with_columns(self, columns: Vec<String>) -> Self {
        Self { columns: Some(columns), ..self }
    }

    /// Reads only the rows of `range` (an error at the start of the read if `range.start >
    /// range.end` or the range runs past the last row).
    pub fn with_row_range(self, range: Range<u64>) -> Self {
        Self { rows: Rows::Range(range), ..self }
    }

    /// Reads only the rows at `indices` (any order, repeats allowed), in ascending order, once
    /// each. [`take`](Self::take) returns them in the order given.
    pub fn with_indices(self, indices: Vec<u64>) -> Self {
        Self { rows: Rows::Indices(indices), ..self }
    }

    /// Reads only the rows of `selection`.
    pub fn with_selection(self, selection: RowSelection) -> Self {
        Self { rows: Rows::Selection(selection), ..self }
    }

    /// Sets the options of this read (unset ones fall back on the reader's).
    pub fn with_options(self, options: ReadOptions) -> Self {
        Self { options, ..self }
    }

    /// Rows per output batch; see [`ReadOptions::batch_size`].
    pub fn with_batch_size(mut self, rows: NonZeroUsize) -> Self {
        self.options.batch_size = Some(rows);
        self
    }

    /// Returns these top-level columns (of flat types) as `DictionaryArray`s: dictionary-encoded
    /// pages keep their dictionary without materialising the values, other pages are
    /// dictionary-encoded as they are read. The keys are the narrowest of `Int8`, `Int16` and
    /// `Int32` that can index both the largest dictionary among the column's pages and a whole
    /// batch of distinct values, so they are known before the read. Columns written from
    /// dictionary arrays are returned as dictionaries anyway, with the keys they were written with.
    pub fn with_dictionary_columns(mut self, columns: Vec<String>) -> Self {
        self.options.dictionary_columns = Some(columns);
        self
    }

    /// Returns strings and binaries as `Utf8View`/`BinaryView`; see [`ReadOptions::string_view`].
    pub fn with_string_view(mut self, views: bool) -> Self {
        self.options.string_view = Some(views);
        self
    }

    /// Decode threads the read keeps busy (one batch more than this is decoded at once);
    /// default: the number of CPUs.
    pub fn with_decode_parallelism(mut self, parallelism: NonZeroUsize) -> Self {
        self.options.decode_parallelism = Some(parallelism);
        self
    }

    /// Replaces the storage's I/O settings (depth, buffer and coalescing) for this read; the
    /// options' `io_depth` and `io_buffer` still apply on top.
    pub fn with_io_options(self, io: IoOptions) -> Self {
        Self { io: Some(io), ..self }
    }

    /// Shares `budget` (bytes and reads in flight) with the other reads given it, on top of
    /// this read's own buffer and depth; see [`ReadOptions::io_budget`].
    pub fn with_io_budget(mut self, budget: IoBudget) -> Self {
        self.options.io_budget = Some(budget);
        self
    }

    /// Returns only the rows where `predicate` is true (see [`Predicate`]): rows are ruled out
    /// by zone statistics, then by the filter columns, before the other columns are read (see
    /// `read/filtered_read.rs`). With [`take`](Self::take), the rows at the indices that match.
    pub fn with_filter(self, predicate: Predicate) -> Self {
        Self { filter: Some(predicate), ..self }
    }

    /// Records the read in `trace`: its I/O requests and reads, its scheduling loop, its decode
    /// tasks and the batches it hands out (see [`Trace`]). Every kind of read is traced: scans,
    /// ranges, selections, `take` and filtered reads (all their stages, in one trace). A read
    /// without a trace pays one `Option` check per event it would have recorded.
    pub fn with_trace(self, trace: Trace) -> Self {
        Self { trace: Some(trace), ..self }
    }

    /// The read's trace, if it is traced.
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref()
    }

    /// Sets (or, with `None`, removes) the read's trace.
    pub(crate) fn with_trace_option(self, trace: Option<Trace>) -> Self {
        Self { trace, ..self }
    }

    /// Reads through `io` instead of an I/O scheduler of its own.
    pub(crate) fn with_io_scheduler(self, io: IoScheduler) -> Self {
        Self { io_scheduler: Some(io), ..self }
    }

    pub(crate) fn file(&self) -> &FileReader {
        &self.file
    }

    pub(crate) fn columns(&self) -> Option<&[String]> {
        self.columns.as_deref()
    }

    /// Whether the read has a filter.
    pub fn has_filter(&self) -> bool {
        self.filter.is_some()
    }

    pub(crate) fn filter(&self) -> Option<&Predicate> {
        self.filter.as_ref()
    }

    /// The I/O settings the read was given in place of the storage's, if any.
    pub(crate) fn explicit_io_options(&self) -> Option<IoOptions> {
        self.io
    }

    /// The options of the read: its own, then the reader's.
    pub(crate) fn resolved_options(&self) -> ReadOptions {
        self.options.or(self.file.options())
    }

    /// The I/O settings of the read.
    pub(crate) fn io_options(&self) -> IoOptions {
        let storage = self.io.unwrap_or_else(|| self.file.io_defaults());
        self.resolved_options().io_options(storage)
    }

    /// The rows of the read, checked against the file.
    pub(crate) fn selection(&self) -> Result<RowSelection> {
        let num_rows = self.file.num_rows();
        match &self.rows {
            Rows::All => Ok(RowSelection::all(num_rows)),
            Rows::Range(range) => RowSelection::try_range(range.clone(), num_rows),
            Rows::Indices(indices) => RowSelection::try_from_indices(indices, num_rows),
            Rows::Selection(selection) => {
                selection.check_bounds(num_rows)?;
                Ok(selection.clone())
            }
        }
    }

    /// The column trees of the fields the read returns, dictionary columns applied, and its
    /// schema.
    pub(crate) async fn output_fields(&self) -> Result<(Vec<FieldColumns>, SchemaRef)> {
        let file = &self.file;
        let options = self.resolved_options();
        let mut fields = file.project(self.columns.as_deref())?;
        for name in options.dictionary_columns.iter().flatten() {
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
                let batch_rows = options.batch_size.unwrap_or(options.default_batch_size()).get() as u64;
                tree.field = as_dictionary(&tree.field, largest.max(batch_rows))?;
            }
            ensure!(found, invalid, "dictionary_columns: {name:?} is not among the columns read");
        }
        if options.string_view == Some(true) {
            fields.iter_mut().for_each(with_string_views);
        }
        let schema = Arc::new(Schema::new_with_metadata(
            fields.iter().map(|f| f.field.clone()).collect::<Vec<_>>(),
            file.schema().metadata().clone(),
        ));
        Ok((fields, schema))
    }

    /// Builds the schedulers and decoders of the read.
    async fn start(&self) -> Result<StartedRead> {
        let file = &self.file;
        let options = self.resolved_options();
        let selection = Arc::new(self.selection()?);
        let (fields, schema) = self.output_fields().await?;
        let (schedulers, row_bytes) = file.field_schedulers(&fields).await?;
        let mut context =
            ReadContext::new(file.location(), options.verify_checksums.unwrap_or(crate::format::VERIFY_CHECKSUMS));
        context.trace = self.trace.clone();
        let top_level = Arc::new(RowPriority::TopLevel);
        let mut jobs = Vec::new();
        let mut decoders = Vec::new();
        for scheduler in schedulers {
            let (field_jobs, pages) = scheduler.start(&selection, &top_level, &context)?;
            jobs.extend(field_jobs);
            decoders.push(field_decoder(pages, &context));
        }
        let parallelism = options
            .decode_parallelism
            .unwrap_or_else(|| std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN));
        let batch_size = options.batch_size.unwrap_or_else(|| {
            default_batch_size(row_bytes, selection.num_rows(), parallelism, options.default_batch_size())
        });
        // Each step's pages get an equal share of the buffer with the steps decoded meanwhile,
        // so that the pages the decoders wait for fit in it (see `BatchPlan`): the read's own
        // buffer, or its share of a shared budget (among the reads using it) if smaller.
        let buffer = self.io_options().buffer.get();
        let buffer = options
            .shared_budget()
            .map_or(buffer, |shared| buffer.min(shared.bytes().get() / (shared.active_reads() as u64 + 1)));
        let allowance = buffer / (steps_in_flight(parallelism) as u64 + 1);
        let columns: Vec<u32> = fields.iter().flat_map(|f| f.columns()).collect();
        let spans = column_spans(&fields, &file.load_columns(&columns).await?);
        let plan = BatchPlan::cut(&selection, &spans, batch_size.get() as u64, allowance);
        let stream = DecodeBatchStream::new(schema.clone(), decoders, plan, context.metrics.clone())
            .with_trace(self.trace.clone());
        let sparse = self.is_sparse(selection.num_rows());
        Ok(StartedRead { schema, jobs, stream, context, parallelism, sparse })
    }

    /// Starts the read and returns its stream of batches.
    ///
    /// Must be called (and the stream polled) inside a tokio runtime.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for rows out of range or an
    /// unknown column; errors of the file's metadata; each names the file.
    pub async fn stream(self) -> Result<RecordBatchStream> {
        let consumer = self.trace.clone().map(ConsumerTrace::new);
        let mut stream = if self.filter.is_some() {
            let location = self.file.location().to_string();
            Box::pin(super::filtered_read::filtered_stream(self)).await.map_err(|e| e.with_location(&location))?
        } else {
            self.launch(true).await?
        };
        stream.consumer = consumer;
        Ok(stream)
    }

    /// [`stream`](Self::stream) without the filter.
    pub(crate) async fn stream_unfiltered(self) -> Result<RecordBatchStream> {
        self.launch(true).await
    }

    /// Starts the read: its batches put back together from the steps of its plan if
    /// `whole_batches`, else each step as a batch of its own.
    async fn launch(self, whole_batches: bool) -> Result<RecordBatchStream> {
        let location = self.file.location().to_string();
        let started = self.start().await.map_err(|e| e.with_location(&location))?;
        let io = match &self.io_scheduler {
            Some(io) => io.clone(),
            None => self.new_io_scheduler(started.sparse),
        };
        let io_dyn: Arc<dyn EncodingsIo> = Arc::new(io.clone());
        let StartedRead { schema, jobs, stream, context, parallelism, .. } = started;
        let metrics = context.metrics.clone();
        // The scheduling loop never waits for I/O but may run for a while on a large file: it
        // gets a thread of its own rather than holding up a runtime worker.
        tokio::task::spawn_blocking(move || run_scheduling_loop(jobs, &io_dyn, &context));
        // Assembling a batch can fail on what the file says (a field declared non-nullable
        // whose pages hold nulls): such errors name the file too.
        let runtime = tokio::runtime::Handle::current();
        let batches = if whole_batches {
            stream.into_stream(parallelism, runtime)
        } else {
            stream.into_steps(parallelism, runtime).map_ok(|(batch, _)| batch).boxed()
        };
        let batches = batches.map_err(move |e| e.with_location(&location)).boxed();
        Ok(RecordBatchStream { schema, batches, io, metrics, filter: None, consumer: None })
    }

    /// Whether a read of `rows` rows of the file is sparse (see [`SPARSE_READ`]).
    pub(crate) fn is_sparse(&self, rows: u64) -> bool {
        rows.saturating_mul(SPARSE_READ) <= self.file.num_rows()
    }

    /// An I/O scheduler with the read's settings, reading through the storage's reader for
    /// sparse reads if `sparse`.
    pub(crate) fn new_io_scheduler(&self, sparse: bool) -> IoScheduler {
        let budget = self.resolved_options().shared_budget();
        let io = self.io_options();
        if let Some(trace) = &self.trace {
            let depth = match io.depth {
                crate::io::IoDepth::Fixed(n) => n.to_string(),
                crate::io::IoDepth::Adaptive { min, max } => format!("auto({min}..{max})"),
            };
            trace.set_info(TraceInfo {
                location: Some(self.file.location().to_string()),
                io_buffer_bytes: Some(io.buffer.get()),
                io_depth: Some(depth),
            });
        }
        let reader = self.file.range_reader();
        let reader = if sparse { reader.sparse_reader().unwrap_or_else(|| reader.clone()) } else { reader.clone() };
        IoScheduler::with_trace(reader, io, budget, self.trace.clone())
    }

    /// Reads the rows at `indices` (any order, repeats allowed) and returns them in that order,
    /// as one batch: the sorted, distinct rows are read once, in steps of at most the read's
    /// batch size whose pages fit in a share of the I/O buffer (so that a take, too, keeps to
    /// the buffer however many rows and columns it reads; see
    /// [`BatchPlan`](super::batch_plan::BatchPlan)), then put together and reordered.
    ///
    /// # Errors
    /// As [`stream`](Self::stream); an index out of range is an
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming it.
    pub async fn take(self, indices: &[u64]) -> Result<RecordBatch> {
        let traced = self.trace.clone().map(|trace| {
            let start = trace.now();
            (trace, start)
        });
        let batch = if self.filter.is_some() {
            let location = self.file.location().to_string();
            Box::pin(super::filtered_read::filtered_take(self, indices))
                .await
                .map_err(|e| e.with_location(&location))?
        } else {
            self.take_unfiltered(indices).await?
        };
        if let Some((trace, start)) = traced {
            let (rows, bytes) = (batch.num_rows() as u64, batch.get_array_memory_size() as u64);
            trace.span(SpanKind::Batch { index: 0, rows, bytes }, start);
        }
        Ok(batch)
    }

    /// [`take`](Self::take) without the filter.
    pub(crate) async fn take_unfiltered(self, indices: &[u64]) -> Result<RecordBatch> {
        let location = self.file.location().to_string();
        let selection =
            RowSelection::try_from_indices(indices, self.file.num_rows()).map_err(|e| e.with_location(&location))?;
        let mut stream = self.with_selection(selection).launch(false).await?;
        let schema = stream.schema().clone();
        // Every step but the last is compacted as the next comes (see `compact`): kept until
        // the end, a step cut from its pages would keep them alive past their reservation of
        // the I/O buffer. The last is compacted only if nothing below copies it anyway
        // (concatenating or gathering), so that a take touches its rows' memory as few times
        // as it can (a process's first read pays a page fault for every fresh 4 KiB).
        let mut steps = Vec::new();
        let mut last: Option<RecordBatch> = None;
        while let Some(step) = stream.next().await {
            if let Some(previous) = last.replace(step?) {
                steps.push(compact(&previous)?);
            }
        }
        let mut sorted = indices.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.as_slice() == indices {
            return match (steps.is_empty(), last) {
                (true, Some(only)) => compact(&only),
                (_, last) => {
                    steps.extend(last);
                    concat_steps(&schema, &steps)
                }
            };
        }
        steps.extend(last);
        // Each wanted row as (step, row within it), in the order asked: the rows are gathered
        // from the steps in one pass, without concatenating them first.
        let starts: Vec<usize> = steps
            .iter()
            .scan(0, |start, step| {
                let at = *start;
                *start += step.num_rows();
                Some(at)
            })
            .collect();
        let rows: Vec<(usize, usize)> = indices
            .iter()
            .map(|i| {
                let position = sorted.partition_point(|s| s < i);
                let step = starts.partition_point(|s| *s <= position).saturating_sub(1);
                (step, position - starts.get(step).copied().unwrap_or(0))
            })
            .collect();
        gather_rows(&schema, &steps, &rows)
    }

    /// What a filtered read would do before it reads data: zones ruled out by the statistics,
    /// the rows left, and the exact I/O of reading their filter columns (stage 3 depends on
    /// which rows match).
    ///
    /// # Errors
    /// As [`stream`](Self::stream); [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// if the read has no filter.
    pub async fn filter_plan(self) -> Result<FilteredPlan> {
        let location = self.file.location().to_string();
        ensure!(self.filter.is_some(), invalid, "{location}: filter_plan of a read without a filter");
        Box::pin(super::filtered_read::filtered_plan(self)).await.map_err(|e| e.with_location(&location))
    }

    /// Runs only the scheduling loop and returns the I/O the read would make (for a filtered
    /// read: of its filter columns, see [`filter_plan`](Self::filter_plan)).
    ///
    /// # Errors
    /// As [`stream`](Self::stream).
    pub async fn plan(self) -> Result<IoPlan> {
        let location = self.file.location().to_string();
        if self.filter.is_some() {
            let plan =
                Box::pin(super::filtered_read::filtered_plan(self)).await.map_err(|e| e.with_location(&location))?;
            return Ok(plan.filter_columns);
        }
        self.plan_unfiltered().await
    }

    /// [`plan`](Self::plan) without the filter.
    pub(crate) async fn plan_unfiltered(self) -> Result<IoPlan> {
        let location = self.file.location().to_string();
        // A plan is not a part of the read: a filtered read planning its stage 3 records only
        // what it reads.
        let read = self.with_trace_option(None);
        let StartedRead { jobs, context, stream, .. } = read.start().await.map_err(|e| e.with_location(&location))?;
        let planner = Arc::new(PlanningIo::new(read.io_options().coalesce));
        let io: Arc<dyn EncodingsIo> = planner.clone();
        // The decoders stay alive while the loop runs: jobs stop scheduling once theirs is gone.
        run_scheduling_loop(jobs, &io, &context)?;
        drop(stream);
        Ok(planner.plan())
    }
}

/// `tree` with its strings and binaries, at any depth, read as views. Dictionaries keep their
/// value type (a dictionary column is already without copies of its values).
fn with_string_views(tree: &mut FieldColumns) {
    fn view_type(data_type: &DataType) -> DataType {
        match data_type {
            DataType::Utf8 | DataType::LargeUtf8 => DataType::Utf8View,
            DataType::Binary | DataType::LargeBinary => DataType::BinaryView,
            DataType::List(item) => DataType::List(view_field(item)),
            DataType::LargeList(item) => DataType::LargeList(view_field(item)),
            DataType::FixedSizeList(item, size) => DataType::FixedSizeList(view_field(item), *size),
            DataType::Map(entries, sorted) => DataType::Map(view_field(entries), *sorted),
            DataType::Struct(fields) => DataType::Struct(fields.iter().map(view_field).collect()),
            other => other.clone(),
        }
    }
    fn view_field(field: &FieldRef) -> FieldRef {
        Arc::new(field.as_ref().clone().with_data_type(view_type(field.data_type())))
    }
    tree.field = view_field(&tree.field);
    tree.children.iter_mut().for_each(with_string_views);
}

/// `field` with its flat type read as a dictionary with the narrowest signed keys (the Arrow
/// convention) that index `max_values` values.
fn as_dictionary(field: &FieldRef, max_values: u64) -> Result<FieldRef> {
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
            if Layout::of(value).ok() == Some(Layout::Leaf)
                && !matches!(value, DataType::FixedSizeList(..) | DataType::Null) =>
        {
            DataType::Dictionary(Box::new(key), Box::new(value.clone()))
        }
        other => bail!(
            invalid,
            "dictionary_columns: column {:?} of type {other} cannot be read as a dictionary",
            field.name()
        ),
    };
    Ok(Arc::new(field.as_ref().clone().with_data_type(dictionary)))
}

/// Batches each decode thread gets at least, when the read is large enough (see
/// [`default_batch_size`]).
const MIN_BATCHES_PER_THREAD: u64 = 4;

/// Rows below which a default batch is not split further for parallelism.
const MIN_SPLIT_ROWS: u64 = 8192;

/// The default batch size of a read of `rows` rows of `row_bytes` stored bytes, decoded
/// `parallelism` batches at once: as many rows as fit in [`DEFAULT_BATCH_BYTES`] of the widest
/// column and in [`DEFAULT_BATCH_MAX_BYTES`] of the whole row, at most `most`, and few enough
/// that every decode thread gets [`MIN_BATCHES_PER_THREAD`] batches (down to
/// [`MIN_SPLIT_ROWS`] rows). A short read in large batches leaves threads idle: the
/// embeddings projection (`id, caption`, 100,000 rows) made three batches for two threads, the
/// third decoded alone (4.3–4.6 ms against 3.7–3.9 ms in eight batches).
fn default_batch_size(row_bytes: RowBytes, rows: u64, parallelism: NonZeroUsize, most: NonZeroUsize) -> NonZeroUsize {
    let share = rows.div_ceil(MIN_BATCHES_PER_THREAD * parallelism.get() as u64).max(MIN_SPLIT_ROWS);
    let by_column = DEFAULT_BATCH_BYTES.get() / row_bytes.widest_column.max(1);
    let by_row = DEFAULT_BATCH_MAX_BYTES.get() / row_bytes.total.max(1);
    let rows = by_column.min(by_row).min(most.get() as u64).min(share);
    NonZeroUsize::new(rows as usize).unwrap_or(NonZeroUsize::MIN)
}

struct StartedRead {
    schema: SchemaRef,
    jobs: Vec<Box<dyn ColumnJob>>,
    stream: DecodeBatchStream,
    context: ReadContext,
    parallelism: NonZeroUsize,
    /// Whether the read keeps few of the file's rows (see [`SPARSE_READ`]).
    sparse: bool,
}

/// A read of at most one row in this many of the file's is *sparse*: the pages it reads whole
/// serve a few rows each, and it reads through
/// [`RangeReader::sparse_reader`](crate::io::RangeReader::sparse_reader). A take of 1,000
/// of the 300-column table's 50,000 rows reads every page whole and was 1.06-1.07x slower with
/// each large read mapped on its own (see `LocalFileReader::with_memory_map`), as a scan's are.
const SPARSE_READ: u64 = 8;

/// The batches of a read, in row order.
pub struct RecordBatchStream {
    pub(crate) schema: SchemaRef,
    pub(crate) batches: BoxStream<'static, Result<RecordBatch>>,
    pub(crate) io: IoScheduler,
    pub(crate) metrics: Arc<ReadMetrics>,
    /// A filtered read's counters.
    pub(crate) filter: Option<Arc<FilterStats>>,
    /// Records the batches handed out, if the read is traced (set by [`ReadBuilder::stream`]
    /// only: the streams of sub-reads hand their batches to the read, not to its caller).
    pub(crate) consumer: Option<ConsumerTrace>,
}

/// The consumer's side of a traced read: each batch from the moment it was asked for.
pub(crate) struct ConsumerTrace {
    trace: Trace,
    /// When the batch being waited for was first asked for.
    asked: Option<u64>,
    /// Batches handed out.
    batches: u64,
}

impl ConsumerTrace {
    fn new(trace: Trace) -> Self {
        Self { trace, asked: None, batches: 0 }
    }
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

    /// A filtered read's counters: zones ruled out, rows matched, how the other columns were
    /// read (`None` for a read without a filter).
    pub fn filter_stats(&self) -> Option<FilterCounts> {
        self.filter.as_ref().map(|f| f.snapshot())
    }

    /// A filtered read's counters (a handle that outlives the stream).
    pub fn filter_counters(&self) -> Option<Arc<FilterStats>> {
        self.filter.clone()
    }

    /// The read's I/O scheduler (a handle that outlives the stream, for its counters).
    pub fn io_scheduler(&self) -> &IoScheduler {
        &self.io
    }
}

impl Stream for RecordBatchStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(consumer) = &mut this.consumer else { return this.batches.poll_next_unpin(cx) };
        let asked = *consumer.asked.get_or_insert_with(|| consumer.trace.now());
        let polled = this.batches.poll_next_unpin(cx);
        if let Poll::Ready(ready) = &polled {
            consumer.asked = None;
            if let Some(Ok(batch)) = ready {
                let (rows, bytes) = (batch.num_rows() as u64, batch.get_array_memory_size() as u64);
                consumer.trace.span(SpanKind::Batch { index: consumer.batches, rows, bytes }, asked);
                consumer.batches += 1;
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_batches_fit_their_bytes_and_give_every_thread_work() {
        let two = NonZeroUsize::new(2).unwrap();
        let most = crate::options::DEFAULT_BATCH_SIZE;
        let one_column = |bytes| RowBytes { total: bytes, widest_column: bytes };
        let size = |row_bytes, rows| default_batch_size(row_bytes, rows, two, most).get();
        // A long read of narrow rows: the most rows a batch takes.
        assert_eq!(size(one_column(8), 10_000_000), most.get());
        // A wide column: as many rows as fit in a column's batch bytes.
        assert_eq!(size(one_column(3_000), 10_000_000), (DEFAULT_BATCH_BYTES.get() / 3_000) as usize);
        let embeddings = RowBytes { total: 3_010, widest_column: 3_000 };
        assert_eq!(size(embeddings, 10_000_000), (DEFAULT_BATCH_BYTES.get() / 3_000) as usize);
        // Many narrow columns: bounded by the row's bytes only, not by a column's.
        let wide = RowBytes { total: 3_000, widest_column: 8 };
        assert_eq!(size(wide, 10_000_000), (DEFAULT_BATCH_MAX_BYTES.get() / 3_000) as usize);
        let wider = RowBytes { total: 60_000, widest_column: 8 };
        assert_eq!(size(wider, 10_000_000), (DEFAULT_BATCH_MAX_BYTES.get() / 60_000) as usize);
        // A short read: four batches per thread, not fewer than the split floor.
        assert_eq!(size(one_column(62), 100_000), 12_500);
        assert_eq!(size(wide, 100_000), 12_500);
        assert_eq!(size(one_column(62), 20_000), MIN_SPLIT_ROWS as usize);
        assert_eq!(size(one_column(1), 1), MIN_SPLIT_ROWS as usize);
        assert_eq!(default_batch_size(one_column(u64::MAX), 5, two, most).get(), 1);
    }
}
