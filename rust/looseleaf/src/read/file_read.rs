//! A read of one file (`ReadBuilder<FileReader>`): the wiring of its three loops.
//!
//! [`ReadBuilder::stream`] resolves the projection, the rows and the options, builds the field
//! schedulers, starts each field (column jobs on one side, [`FieldPages`](super::pages::FieldPages)
//! on the other), and connects the loops: the [scheduling loop](super::scheduling_loop) on a
//! blocking thread, an [`IoScheduler`] between it and storage, and a [`DecodeBatchStream`] the
//! caller polls. [`ReadBuilder::plan`] runs only the scheduling loop, against a [`PlanningIo`].
//! A read with a filter goes through the three stages of `filtered_read.rs`; a `take` through
//! `take.rs`.
//!
//! A read given a [`Trace`] hands it to each loop (through the [`ReadContext`], the
//! [`IoScheduler`] and the [`DecodeBatchStream`]) and records the batches handed out to its
//! caller: those of `stream`, or the one batch of `take`. Sub-reads (a `take`'s steps, a
//! filtered read's stages) record their loops, never their batches, so a trace's batches are the
//! caller's.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::{StreamExt, TryStreamExt};

use super::batch_plan::{BatchPlan, column_spans, default_batch_size};
use super::decode_stream::{DecodeBatchStream, steps_in_flight};
use super::field_decoder::{field_decoder, tested_field_decoder};
use super::field_scheduler::{ColumnPages, MIN_PAGE_PART_BYTES, RowPriority};
use super::file_reader::FileReader;
use super::filtered_read::FilteredPlan;
use super::pages::ReadContext;
use super::projection::{as_dictionary, with_decimal64, with_string_views};
use super::read_builder::{ReadBuilder, ReadSource};
use super::record_batch_stream::{ConsumerTrace, ReadStats, RecordBatchStream};
use super::scheduling_loop::{ColumnJob, run_scheduling_loop};
use crate::error::{Result, ensure};
use crate::format::schema::FieldColumns;
use crate::io::{EncodingsIo, IoDepth, IoOptions, IoPlan, IoScheduler, PlanningIo};
use crate::options::ReadOptions;
use crate::selection::RowSelection;
use crate::trace::TraceInfo;

/// A read of at most one row in this many of the file's is *sparse*: the pages it reads whole
/// serve a few rows each, and it reads through
/// [`RangeReader::sparse_reader`](crate::io::RangeReader::sparse_reader). A take of 1,000
/// of the 300-column table's 50,000 rows reads every page whole and was 1.06-1.07x slower with
/// each large read mapped on its own (see `LocalFileReader::with_memory_map`), as a scan's are.
const SPARSE_READ: u64 = 8;

/// The loops of a read, built and not yet running.
struct StartedRead {
    schema: SchemaRef,
    jobs: Vec<Box<dyn ColumnJob>>,
    stream: DecodeBatchStream,
    context: ReadContext,
    parallelism: NonZeroUsize,
    /// Whether the read keeps few of the file's rows (see [`SPARSE_READ`]).
    sparse: bool,
}

impl ReadBuilder<FileReader> {
    pub(crate) fn file(&self) -> &FileReader {
        &self.source
    }

    /// The options of the read: its own, then the reader's.
    pub(crate) fn resolved_options(&self) -> ReadOptions {
        self.options.or(self.source.options())
    }

    /// The I/O settings of the read.
    pub(crate) fn io_options(&self) -> IoOptions {
        let storage = self.io.unwrap_or_else(|| self.source.io_defaults());
        self.resolved_options().io_options(storage)
    }

    /// The rows of the read, checked against the file.
    pub(crate) fn selection(&self) -> Result<RowSelection> {
        self.rows.selection(self.source.num_rows())
    }

    /// The column trees of the fields the read returns, dictionary columns applied, and its
    /// schema.
    pub(crate) async fn output_fields(&self) -> Result<(Vec<FieldColumns>, SchemaRef)> {
        let file = &self.source;
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
        fields.iter_mut().filter(|f| self.decimal64.contains(f.field.name())).for_each(with_decimal64);
        // A tested column's decoder returns booleans; its column tree keeps the stored type,
        // which its pages are scheduled and decoded by.
        let schema = Arc::new(Schema::new_with_metadata(
            fields
                .iter()
                .map(|f| match self.range_test(f.field.name()) {
                    Some(_) => Arc::new(Field::new(f.field.name(), DataType::Boolean, true)),
                    None => f.field.clone(),
                })
                .collect::<Vec<_>>(),
            file.schema().metadata().clone(),
        ));
        Ok((fields, schema))
    }

    /// Builds the schedulers and decoders of the read.
    async fn start(&self) -> Result<StartedRead> {
        let file = &self.source;
        let options = self.resolved_options();
        let selection = Arc::new(self.selection()?);
        let (fields, schema) = self.output_fields().await?;
        let (schedulers, row_bytes) = file.field_schedulers(&fields).await?;
        let parallelism = options
            .decode_parallelism
            .unwrap_or_else(|| std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN));
        // Each step's pages get an equal share of the buffer with the steps decoded meanwhile,
        // so that the pages the decoders wait for fit in it (see `BatchPlan`): the read's own
        // buffer, or its share of a shared budget (among the reads using it) if smaller.
        let buffer = self.io_options().buffer.get();
        let buffer = options
            .shared_budget()
            .map_or(buffer, |shared| buffer.min(shared.bytes().get() / (shared.active_reads() as u64 + 1)));
        let allowance = buffer / (steps_in_flight(parallelism) as u64 + 1);
        let columns: Vec<u32> = fields.iter().flat_map(|f| f.columns()).collect();
        let loaded = file.load_columns(&columns).await?;
        let mut context =
            ReadContext::new(file.location(), options.verify_checksums.unwrap_or(crate::format::VERIFY_CHECKSUMS));
        context.trace = self.trace.clone();
        if let Some(metrics) = &self.metrics {
            context.metrics = metrics.clone();
        }
        context.page_part_bytes = page_part_bytes(&loaded, buffer, allowance);
        let top_level = Arc::new(RowPriority::TopLevel);
        let mut jobs = Vec::new();
        let mut decoders = Vec::new();
        for (scheduler, tree) in schedulers.into_iter().zip(&fields) {
            let (field_jobs, pages) = scheduler.start(&selection, &top_level, &context)?;
            jobs.extend(field_jobs);
            decoders.push(match self.range_test(tree.field.name()) {
                Some(test) => tested_field_decoder(pages, test, &context)?,
                None => field_decoder(pages, &context),
            });
        }
        let batch_size = options.batch_size.unwrap_or_else(|| {
            default_batch_size(row_bytes, selection.num_rows(), parallelism, options.default_batch_size())
        });
        let spans = column_spans(&fields, &loaded);
        let plan = BatchPlan::cut(&selection, &spans, batch_size.get() as u64, allowance);
        if let Some(selected) = &self.selected_rows {
            ensure!(
                selected.len() as u64 == selection.num_rows(),
                internal,
                "{} selection bits for a read of {} rows",
                selected.len(),
                selection.num_rows()
            );
        }
        let stream = DecodeBatchStream::new(schema.clone(), decoders, plan, context.metrics.clone())
            .with_trace(self.trace.clone())
            .with_selected(self.selected_rows.clone());
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
        let mut stream = self.stream_part().await?;
        stream.consumer = consumer;
        Ok(stream)
    }

    /// [`stream`](Self::stream) as a part of a larger read (a dataset's): its batches are not
    /// recorded in the trace as handed out, the larger read's are.
    pub(crate) async fn stream_part(self) -> Result<RecordBatchStream> {
        if self.filter.is_some() {
            let location = self.source.location().to_string();
            Box::pin(super::filtered_read::filtered_stream(self)).await.map_err(|e| e.with_location(&location))
        } else {
            self.launch(true).await
        }
    }

    /// [`stream`](Self::stream) without the filter.
    pub(crate) async fn stream_unfiltered(self) -> Result<RecordBatchStream> {
        self.launch(true).await
    }

    /// Starts the read: its batches put back together from the steps of its plan if
    /// `whole_batches`, else each step as a batch of its own.
    pub(crate) async fn launch(self, whole_batches: bool) -> Result<RecordBatchStream> {
        let location = self.source.location().to_string();
        let started = self.start().await.map_err(|e| e.with_location(&location))?;
        let io = match &self.io_scheduler {
            Some(io) => io.clone(),
            None => self.new_io_scheduler(started.sparse),
        };
        let io_dyn: Arc<dyn EncodingsIo> = Arc::new(io.clone());
        let StartedRead { schema, jobs, stream, context, parallelism, .. } = started;
        let stats = ReadStats::of_read(io, context.metrics.clone(), None);
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
        Ok(RecordBatchStream::new(schema, batches, stats))
    }

    /// Whether a read of `rows` rows of the file is sparse (see [`SPARSE_READ`]).
    pub(crate) fn is_sparse(&self, rows: u64) -> bool {
        rows.saturating_mul(SPARSE_READ) <= self.source.num_rows()
    }

    /// An I/O scheduler with the read's settings, reading through the storage's reader for
    /// sparse reads if `sparse`.
    pub(crate) fn new_io_scheduler(&self, sparse: bool) -> IoScheduler {
        let budget = self.resolved_options().shared_budget();
        let io = self.io_options();
        if let Some(trace) = &self.trace {
            let depth = match io.depth {
                IoDepth::Fixed(n) => n.to_string(),
                IoDepth::Adaptive { min, max } => format!("auto({min}..{max})"),
            };
            trace.set_info(TraceInfo {
                location: Some(self.source.location().to_string()),
                io_buffer_bytes: Some(io.buffer.get()),
                io_depth: Some(depth),
            });
        }
        let reader = self.source.range_reader();
        let reader = if sparse { reader.sparse_reader().unwrap_or_else(|| reader.clone()) } else { reader.clone() };
        IoScheduler::with_trace(reader, io, budget, self.trace.clone())
    }

    /// Refuses the read if its whole result cannot fit in the memory the process can still get
    /// ([`check_result_fits`](crate::encodings::limits::check_result_fits)), before it starts:
    /// what a front end that collects a read into one table calls first. A filtered read is not
    /// weighed (how many rows match is not known before it runs); a stream needs no such check.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) naming the file, the rows and the bytes.
    pub async fn check_result_fits(&self) -> Result<()> {
        if self.filter.is_some() {
            return Ok(());
        }
        let location = self.source.location();
        let rows = self.selection().map_err(|e| e.with_location(location))?.num_rows();
        let (_, schema) = self.output_fields().await.map_err(|e| e.with_location(location))?;
        let types = schema.fields().iter().map(|f| f.data_type());
        crate::encodings::limits::check_result_fits(rows, types, "a read").map_err(|e| e.with_location(location))
    }

    /// The number of rows the read returns: without a filter, from the rows asked for alone;
    /// with one, by reading the filter's columns (and no other) and counting the matches.
    ///
    /// # Errors
    /// As [`stream`](Self::stream).
    pub async fn count_rows(self) -> Result<u64> {
        let location = self.source.location().to_string();
        let Some(filter) = &self.filter else {
            return Ok(self.selection().map_err(|e| e.with_location(&location))?.num_rows());
        };
        let counted = filter.columns().first().and_then(|path| path.first()).cloned().into_iter().collect();
        let mut stream = self.with_columns(counted).stream().await?;
        let mut rows = 0u64;
        while let Some(batch) = stream.next().await {
            rows += batch?.num_rows() as u64;
        }
        Ok(rows)
    }

    /// What a filtered read would do before it reads data: zones ruled out by the statistics,
    /// the rows left, and the exact I/O of reading their filter columns (stage 3 depends on
    /// which rows match).
    ///
    /// # Errors
    /// As [`stream`](Self::stream); [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// if the read has no filter.
    pub async fn filter_plan(self) -> Result<FilteredPlan> {
        let location = self.source.location().to_string();
        ensure!(self.filter.is_some(), invalid, "{location}: filter_plan of a read without a filter");
        Box::pin(super::filtered_read::filtered_plan(self)).await.map_err(|e| e.with_location(&location))
    }

    /// Runs only the scheduling loop and returns the I/O the read would make (for a filtered
    /// read: of its filter columns, see [`filter_plan`](Self::filter_plan)).
    ///
    /// # Errors
    /// As [`stream`](Self::stream).
    pub async fn plan(self) -> Result<IoPlan> {
        let location = self.source.location().to_string();
        if self.filter.is_some() {
            let plan =
                Box::pin(super::filtered_read::filtered_plan(self)).await.map_err(|e| e.with_location(&location))?;
            return Ok(plan.filter_columns);
        }
        self.plan_unfiltered().await
    }

    /// [`plan`](Self::plan) without the filter.
    pub(crate) async fn plan_unfiltered(self) -> Result<IoPlan> {
        let location = self.source.location().to_string();
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

impl ReadSource for FileReader {
    fn num_rows(&self) -> u64 {
        FileReader::num_rows(self)
    }

    async fn stream(read: ReadBuilder<Self>) -> Result<RecordBatchStream> {
        read.stream().await
    }

    async fn take(read: ReadBuilder<Self>, indices: Vec<u64>) -> Result<arrow_array::RecordBatch> {
        read.take(&indices).await
    }

    async fn count_rows(read: ReadBuilder<Self>) -> Result<u64> {
        read.count_rows().await
    }

    async fn check_result_fits(read: &ReadBuilder<Self>) -> Result<()> {
        read.check_result_fits().await
    }
}

/// The bytes above which the read's columns load a page in parts
/// ([`ReadContext::page_part_bytes`]): when a page of each column together would not fit the
/// read's `buffer`, each column's share of what one step may hold (`allowance`), at least
/// [`MIN_PAGE_PART_BYTES`]; otherwise pages are loaded whole, as they were written.
fn page_part_bytes(columns: &HashMap<u32, Arc<ColumnPages>>, buffer: u64, allowance: u64) -> Option<u64> {
    let largest = columns.values().map(|c| c.largest_page_bytes()).fold(0u64, u64::saturating_add);
    (largest > buffer).then(|| (allowance / columns.len().max(1) as u64).max(MIN_PAGE_PART_BYTES))
}
