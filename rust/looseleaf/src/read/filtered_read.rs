//! Filtered reads: three stages, each reading less than the last would have.
//!
//! 1. **Zones** ([`crate::filter::prune`]): the zone maps of the filter columns (or their
//!    pages' statistics) rule out the zones of rows no row of which can match. Only the filter
//!    columns' zone maps are read.
//! 2. **Filter columns**: the filter columns of the remaining rows are read and the predicate
//!    evaluated exactly ([`crate::filter::evaluate`]). A filter column that only a range test
//!    reads comes back as that test's result, run by its decoder on the stored pages
//!    ([`crate::filter::range_test::push_range_tests`]); if the read returns it (local files
//!    only: see [`CHEAP_REQUEST_GAP`]), stage 3 reads its values.
//! 3. **Other columns**: the rest of the projection, for the matching rows only, read either as
//!    a scan of the rows stage 2 looked at, decoding only the matching rows where the pages'
//!    encodings can ([`crate::encodings::PageDecoder::decode_selected`]), or as a `take` of the
//!    matching rows,
//!    whichever the planner says reads less: both are planned with the scheduling loop against a
//!    [`PlanningIo`](crate::io::PlanningIo), each read costed as its bytes plus a fixed cost per
//!    storage request (the coalescing gap of the storage, times [`REQUEST_COST_GAPS`]).
//!
//! When the zone maps vouch for most of the rows stage 1 leaves ([`ONE_PASS_SHARE`]: zones
//! where no value can make the predicate false and its columns have no nulls, a range of a
//! sorted column), stages 2 and 3 are one: every column of those rows is read at once and each
//! batch filtered ([`run_one_pass`]).
//!
//! Stages 2 and 3 go through the rows in chunks (at most [`MAX_CHUNK_ROWS`] rows, fewer when
//! the filter columns are wide), so that memory holds one chunk's filter columns, not the
//! file's; the next chunk's stage 2 runs while this chunk's stage 3 does. Every stage reads
//! through one [`IoScheduler`](crate::io::IoScheduler), so the read keeps to one I/O buffer
//! and depth, its requests ordered by row across stages, and `io_stats` counts them all.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder};
use arrow_schema::{DataType, FieldRef, Schema, SchemaRef};
use arrow_select::coalesce::BatchCoalescer;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::read_builder::ReadBuilder;
use super::record_batch_stream::{ReadStats, RecordBatchStream};
use crate::error::{Error, Result, ensure};
use crate::filter::evaluate::{FilterColumns, evaluate};
use crate::filter::prune::candidate_rows;
use crate::filter::range_test::{RangeTest, push_range_tests};
use crate::filter::{BoundPredicate, ZoneCounts};
use crate::io::IoPlan;
use crate::read::metrics::ReadMetrics;
use crate::read::projection::{decimal64_type, widen_decimal64};
use crate::selection::RowSelection;

/// Most rows of one chunk of stages 2 and 3.
pub const MAX_CHUNK_ROWS: u64 = 1 << 20;
/// Stored bytes of filter columns a chunk aims at (its row count is cut to fit), at most a
/// quarter of the read's I/O buffer: a chunk's filter columns are held while its other columns
/// are read.
const CHUNK_FILTER_BYTES: u64 = 32 << 20;
/// A storage request costs as much as reading this many coalescing gaps of bytes.
pub const REQUEST_COST_GAPS: u64 = 8;
/// Above this share of matching rows, stage 3 scans without planning a take: a take of one
/// row in eight reads nearly every block anyway.
const DENSE_SHARE: f64 = 0.125;
/// Where requests are cheap (see [`CHEAP_REQUEST_GAP`]), bytes cost little next to decoding, and
/// the planner's bytes leave out what decides: a take spends about as long on each row taken
/// (finding its page, block and value) as copying this many bytes, a scan that decodes the
/// selected rows about as long on each row of the chunk as this many. Measured on lineitem's
/// `l_orderkey, l_extendedprice, l_comment` (local file, warm): a take beats the scan at 1% of
/// the rows (24 against 28 ms), the scan beats it from 3% (33 against 40 ms; at 10% 42 against
/// 71 ms); with these costs the planner switches near 2%.
const TAKE_ROW_COST: u64 = 400;
/// What a scan costs per row of its chunk, in bytes, where requests are cheap (see
/// [`TAKE_ROW_COST`]).
const SCAN_ROW_COST: u64 = 8;
/// Share of the rows left after stage 1 that the zone maps say all match, above which the read
/// is made in one pass (see [`run_one_pass`]).
const ONE_PASS_SHARE: f64 = 0.5;
/// Coalescing gap of storage (bytes) at or below which a request costs about as little as a
/// copy from memory: that of local files (`IoOptions::LOCAL`). There, a filter column the read
/// returns is range-tested on its stored pages in stage 2 and its values read again in stage 3
/// for the matching rows alone: reading its pages twice costs less than decoding every
/// candidate row (TPC-H Q6, returning `l_discount`: 16.4 -> 13.9 ms in a warm process). On an
/// object store it would double the column's requests, so its values are read in stage 2.
const CHEAP_REQUEST_GAP: u64 = crate::io::IoOptions::LOCAL.coalesce.gap.get();
/// Rows of the blocks a take decodes whole (log2): the FastLanes block of the integer encodings.
const TAKE_BLOCK_BITS: u32 = 10;

/// Counters of a filtered read, shared by its stages.
#[derive(Debug, Default)]
pub struct FilterStats {
    zones_total: AtomicU64,
    zones_skipped: AtomicU64,
    candidate_rows: AtomicU64,
    rows_matched: AtomicU64,
    chunks_scanned: AtomicU64,
    chunks_taken: AtomicU64,
    one_pass: AtomicU64,
}

/// A snapshot of a filtered read's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterCounts {
    /// Zones of rows looked at by stage 1.
    pub zones_total: u64,
    /// Of which ruled out by their statistics.
    pub zones_skipped: u64,
    /// Rows stage 2 read the filter columns of.
    pub candidate_rows: u64,
    /// Rows that matched.
    pub rows_matched: u64,
    /// Chunks whose other columns were scanned.
    pub chunks_scanned: u64,
    /// Chunks whose other columns were read by a take of the matching rows.
    pub chunks_taken: u64,
    /// Whether the read was made in one pass (see `run_one_pass`).
    pub one_pass: bool,
}

impl FilterCounts {
    /// Adds `other`'s counts to these (a read made in one pass if any part was).
    pub fn merge(&mut self, other: &FilterCounts) {
        self.zones_total += other.zones_total;
        self.zones_skipped += other.zones_skipped;
        self.candidate_rows += other.candidate_rows;
        self.rows_matched += other.rows_matched;
        self.chunks_scanned += other.chunks_scanned;
        self.chunks_taken += other.chunks_taken;
        self.one_pass |= other.one_pass;
    }
}

impl FilterStats {
    /// The counters so far.
    pub fn snapshot(&self) -> FilterCounts {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        FilterCounts {
            zones_total: get(&self.zones_total),
            zones_skipped: get(&self.zones_skipped),
            candidate_rows: get(&self.candidate_rows),
            rows_matched: get(&self.rows_matched),
            chunks_scanned: get(&self.chunks_scanned),
            chunks_taken: get(&self.chunks_taken),
            one_pass: get(&self.one_pass) > 0,
        }
    }
}

/// What a filtered read would do, from metadata and zone maps alone.
#[derive(Debug, Clone)]
pub struct FilteredPlan {
    /// Zones looked at and ruled out.
    pub zones: ZoneCounts,
    /// Rows whose filter columns stage 2 reads.
    pub candidate_rows: u64,
    /// The I/O of stage 2 (the filter columns of those rows). Stage 3 depends on what matches.
    pub filter_columns: IoPlan,
}

/// Where each output column comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A filter column read in stage 2 for its values, by position among the returned ones
    /// (`Setup::returned_filters`).
    Filter(usize),
    /// Another column (read in stage 3), by position among them.
    Other(usize),
}

/// Everything the stages share.
struct Setup {
    predicate: Arc<BoundPredicate>,
    /// The predicate stage 2 evaluates: `predicate` with its range tests on columns that only
    /// one range test reads run by the decoders of those columns (`range_tests`), which return
    /// booleans. Those of them the read returns are read again in stage 3, where the filter
    /// passed.
    tested_predicate: Arc<BoundPredicate>,
    range_tests: Vec<(String, RangeTest)>,
    /// Filter fields: schema indices and names.
    filter_fields: Vec<usize>,
    filter_names: Vec<String>,
    /// The columns stage 3 reads: the read's other columns, and its range-tested filter columns.
    other_names: Vec<String>,
    /// Whether every other column is of a flat fixed-width type (see [`rows_to_take`]).
    others_fixed_width: bool,
    sources: Vec<Source>,
    /// The filter columns (positions among them) whose stage-2 values the read returns: the
    /// filter side of stage 3 keeps only these.
    returned_filters: Vec<usize>,
    /// The read's schema.
    schema: SchemaRef,
    /// The schema the stages work in: the filter columns' decimals of up to 18 digits at their
    /// native width (`Decimal64`), compared and filtered so and widened only in the batches
    /// returned; the other columns' as the read returns them, decoded so in stage 3.
    working: SchemaRef,
    candidates: RowSelection,
    zones: ZoneCounts,
    chunk_rows: u64,
    batch_size: usize,
    /// Sub-reads start from this: no columns, rows or filter set, the read's options.
    base: ReadBuilder,
}

async fn setup(builder: &ReadBuilder) -> Result<Setup> {
    let file = builder.file();
    let predicate = builder.filter().ok_or_else(|| Error::internal("a filtered read without a filter"))?;
    let predicate = BoundPredicate::bind(predicate, file.schema().fields())?.into_filter();
    let rows = builder.selection()?;
    let filter_fields = predicate.fields();
    let filter_names: Vec<String> = filter_fields.iter().map(|&f| file.schema().field(f).name().clone()).collect();
    let zones = file.column_zones(&filter_fields).await?;
    let (candidates, counts) = candidate_rows(&predicate, &zones, &rows);
    let (_, schema) = builder.output_fields().await?;
    let output_names: Vec<String> = match builder.columns() {
        Some(columns) => columns.to_vec(),
        None => file.schema().fields().iter().map(|f| f.name().clone()).collect(),
    };
    let dictionary_columns = builder.resolved_options().dictionary_columns.unwrap_or_default();
    // Only columns read as their plain values: a dictionary-typed column's decoder returns keys
    // and values, which a range test does not read.
    // A tested column the read returns is read again in stage 3, only where the filter passed:
    // only where requests are cheap, since its pages are then read twice.
    let retest_returned = builder.io_options().coalesce.gap.get() <= CHEAP_REQUEST_GAP;
    let (tested_predicate, tests) = push_range_tests(&predicate, |column| {
        let field = file.schema().field(column.field);
        column.is_top_level()
            && (retest_returned || !output_names.contains(field.name()))
            && !dictionary_columns.contains(field.name())
            && !matches!(field.data_type(), DataType::Dictionary(..))
    });
    let range_tests: Vec<(String, RangeTest)> =
        tests.into_iter().map(|(field, test)| (file.schema().field(field).name().clone(), test)).collect();
    let mut other_names = Vec::new();
    let mut returned_filters = Vec::new();
    let sources: Vec<Source> = output_names
        .iter()
        .map(|name| match filter_names.iter().position(|f| f == name) {
            Some(i) if !range_tests.iter().any(|(tested, _)| tested == name) => {
                let k = returned_filters.iter().position(|&r| r == i).unwrap_or(returned_filters.len());
                if k == returned_filters.len() {
                    returned_filters.push(i);
                }
                Source::Filter(k)
            }
            _ => {
                other_names.push(name.clone());
                Source::Other(other_names.len() - 1)
            }
        })
        .collect();
    let others_fixed_width = schema.fields().iter().zip(&sources).all(|(field, source)| {
        matches!(source, Source::Filter(_))
            || (field.data_type().is_primitive() || field.data_type() == &DataType::Boolean)
    });
    // Chunks sized so that the filter columns of one stay near CHUNK_FILTER_BYTES, or a quarter
    // of the I/O buffer if that is less.
    let columns: Vec<u32> =
        filter_fields.iter().filter_map(|&f| file.field_columns().get(f)).flat_map(|t| t.columns()).collect();
    let pages = file.load_columns(&columns).await?;
    let filter_bytes: u64 = pages.values().map(|c| c.num_bytes()).sum();
    let row_bytes = (filter_bytes / file.num_rows().max(1)).max(1);
    let target = CHUNK_FILTER_BYTES.min(builder.io_options().buffer.get() / 4);
    let chunk_rows = (target / row_bytes).clamp(8192, MAX_CHUNK_ROWS);
    let options = builder.resolved_options();
    let batch_size = options.batch_size.unwrap_or(options.default_batch_size()).get();
    // Sub-reads record into the read's trace (their batches are the read's, not the caller's:
    // see `ReadBuilder::stream`).
    let base = ReadBuilder::new(file.clone())
        .with_options(builder.resolved_options())
        .with_trace_option(builder.trace().cloned());
    let base = match builder.explicit_io_options() {
        Some(io) => base.with_io_options(io),
        None => base,
    };
    let working = working_schema(&schema, |i| matches!(sources[i], Source::Filter(_)));
    Ok(Setup {
        predicate: Arc::new(predicate),
        tested_predicate: Arc::new(tested_predicate),
        range_tests,
        filter_fields,
        filter_names,
        other_names,
        others_fixed_width,
        sources,
        returned_filters,
        schema,
        working,
        candidates,
        zones: counts,
        chunk_rows,
        batch_size,
        base,
    })
}

/// `schema` with the decimals of up to 18 digits of the columns `narrow` picks (by position) as
/// `Decimal64`: the schema a filtered read's stages work in.
fn working_schema(schema: &SchemaRef, narrow: impl Fn(usize) -> bool) -> SchemaRef {
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| match decimal64_type(field.data_type()).filter(|_| narrow(i)) {
            Some(narrow) => Arc::new(field.as_ref().clone().with_data_type(narrow)),
            None => field.clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// The stage-2 read of `setup`'s filter columns, their decimals at their native width.
fn filter_read(base: &ReadBuilder, setup: &Setup) -> ReadBuilder {
    sub_read(base, &setup.filter_names).with_decimal64(setup.filter_names.clone())
}

/// A sub-read of `columns`: the read's options, its dictionary columns among `columns`.
fn sub_read(base: &ReadBuilder, columns: &[String]) -> ReadBuilder {
    let mut options = base.resolved_options();
    if let Some(dictionary) = options.dictionary_columns.take() {
        let kept: Vec<String> = dictionary.into_iter().filter(|d| columns.contains(d)).collect();
        options.dictionary_columns = (!kept.is_empty()).then_some(kept);
    }
    base.clone().with_options(options).with_columns(columns.to_vec())
}

/// Starts a filtered read (see the module documentation).
pub(crate) async fn filtered_stream(builder: ReadBuilder) -> Result<RecordBatchStream> {
    let mut setup = setup(&builder).await?;
    // The stages' timings add up to the read's.
    let metrics = Arc::new(ReadMetrics::default());
    setup.base = setup.base.clone().with_metrics(metrics.clone());
    // Every stage reads at most the candidate rows.
    let io = builder.new_io_scheduler(builder.is_sparse(setup.candidates.num_rows()));
    let stats = Arc::new(FilterStats::default());
    stats.zones_total.store(setup.zones.total, Ordering::Relaxed);
    stats.zones_skipped.store(setup.zones.skipped, Ordering::Relaxed);
    stats.candidate_rows.store(setup.candidates.num_rows(), Ordering::Relaxed);
    let schema = setup.schema.clone();
    // Two batches in flight: the consumer's and the next.
    let (sender, receiver) = mpsc::channel(2);
    let task = tokio::spawn(run(setup, io.clone(), stats.clone(), sender.clone()));
    // Every error names the file, those of assembling batches from what the file holds too.
    let location = builder.file().location().to_string();
    let batches = futures::stream::unfold((receiver, AbortOnDrop(task)), |(mut receiver, task)| async move {
        receiver.recv().await.map(|batch| (batch, (receiver, task)))
    })
    .map(move |batch| batch.map_err(|e| e.with_location(&location)))
    .boxed();
    drop(sender);
    Ok(RecordBatchStream::new(schema, batches, ReadStats::of_read(io, metrics, Some(stats))))
}

/// Stops the stages when the stream is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn run(
    setup: Setup,
    io: crate::io::IoScheduler,
    stats: Arc<FilterStats>,
    sender: mpsc::Sender<Result<RecordBatch>>,
) {
    if let Err(error) = run_chunks(&setup, io, &stats, &sender).await {
        let _ = sender.send(Err(error)).await;
    }
}

async fn run_chunks(
    setup: &Setup,
    io: crate::io::IoScheduler,
    stats: &FilterStats,
    sender: &mpsc::Sender<Result<RecordBatch>>,
) -> Result<()> {
    let base = setup.base.clone().with_io_scheduler(io);
    let certain = setup.zones.certain_rows as f64;
    let read_columns = setup.filter_names.len() + setup.other_names.len();
    if read_columns > 0
        && setup.candidates.num_rows() > 0
        && certain >= ONE_PASS_SHARE * setup.candidates.num_rows() as f64
    {
        stats.one_pass.store(1, Ordering::Relaxed);
        return run_one_pass(setup, &base, stats, sender).await;
    }
    let mut chunks = split(&setup.candidates, setup.chunk_rows);
    let start_stage2 = |chunk: RowSelection| {
        let read = filter_read(&base, setup).with_selection(chunk.clone()).with_range_tests(setup.range_tests.clone());
        let (predicate, fields) = (setup.tested_predicate.clone(), setup.filter_fields.clone());
        tokio::spawn(evaluate_chunk(read, chunk, predicate, fields))
    };
    let mut output = Output::new(setup.working.clone(), setup.schema.clone(), setup.batch_size);
    // Each chunk's stage 2 starts while the chunk before goes through stage 3.
    let mut next = chunks.next().map(|chunk| (chunk.clone(), start_stage2(chunk)));
    while let Some((chunk, handle)) = next.take() {
        let chunk = &chunk;
        let evaluated = handle.await.map_err(|e| Error::internal(format!("a filter task failed: {e}")))??;
        next = chunks.next().map(|chunk| (chunk.clone(), start_stage2(chunk)));
        stats.rows_matched.fetch_add(evaluated.matched, Ordering::Relaxed);
        if evaluated.matched == 0 {
            continue;
        }
        if setup.other_names.is_empty() {
            for (batch, mask) in &evaluated.batches {
                output.push(assemble(setup, &batch.project(&setup.returned_filters)?, None)?, Some(mask))?;
            }
        } else if let Some(indices) = rows_to_take(setup, &base, chunk, &evaluated).await? {
            stats.chunks_taken.fetch_add(1, Ordering::Relaxed);
            let others = sub_read(&base, &setup.other_names).take_unfiltered(&indices).await?;
            let (filter_side, _) = evaluated.kept(&setup.returned_filters)?;
            output.push(assemble(setup, &filter_side, Some(&others))?, None)?;
        } else {
            // The other columns decoded only where the filter passed: the scan's batches hold
            // the matching rows alone, in order, as the filter side below.
            stats.chunks_scanned.fetch_add(1, Ordering::Relaxed);
            let (filter_side, matching) = evaluated.kept(&setup.returned_filters)?;
            let mut stream = sub_read(&base, &setup.other_names)
                .with_selection(chunk.clone())
                .with_selected_rows(matching)
                .stream_unfiltered()
                .await?;
            let mut at = 0;
            while let Some(others) = stream.next().await {
                let others = others?;
                let rows = others.num_rows();
                if rows == 0 {
                    continue;
                }
                ensure!(at + rows <= filter_side.num_rows(), internal, "a filtered read's stages disagree on rows");
                output.push(assemble(setup, &filter_side.slice(at, rows), Some(&others))?, None)?;
                at += rows;
                output.send_completed(sender).await?;
            }
            ensure!(at == filter_side.num_rows(), internal, "a filtered read's stages disagree on rows");
        }
        output.send_completed(sender).await?;
    }
    output.finish(sender).await
}

/// A filtered read in one pass, when the zone maps say most rows left match anyway (a range of
/// a sorted column): every column of the rows left is read at once and each batch filtered, so
/// no stage waits for another.
async fn run_one_pass(
    setup: &Setup,
    base: &ReadBuilder,
    stats: &FilterStats,
    sender: &mpsc::Sender<Result<RecordBatch>>,
) -> Result<()> {
    // Every filter column read for its values (none is range tested here), then the other
    // columns returned that are not among them.
    let mut columns = setup.filter_names.clone();
    columns.extend(setup.other_names.iter().filter(|name| !setup.filter_names.contains(name)).cloned());
    let outputs: Vec<usize> = setup
        .sources
        .iter()
        .map(|source| match source {
            Source::Filter(k) => setup.returned_filters.get(*k).copied(),
            Source::Other(i) => setup.other_names.get(*i).and_then(|name| columns.iter().position(|c| c == name)),
        })
        .collect::<Option<_>>()
        .ok_or_else(|| Error::internal("an output column was not read"))?;
    let filters = setup.filter_names.len();
    let mut stream = sub_read(base, &columns)
        .with_decimal64(setup.filter_names.clone())
        .with_selection(setup.candidates.clone())
        .stream_unfiltered()
        .await?;
    // Returned columns read as filter columns are narrow; the others as the read returns them.
    let working = working_schema(&setup.schema, |i| outputs[i] < filters);
    let mut output = Output::new(working.clone(), setup.schema.clone(), setup.batch_size);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let filter_columns: FilterColumns =
            setup.filter_fields.iter().copied().zip(&batch.columns()[..filters]).collect();
        let mask = evaluate(&setup.predicate, &filter_columns, batch.num_rows())?;
        stats.rows_matched.fetch_add(mask.count_set_bits() as u64, Ordering::Relaxed);
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        let returned = outputs.iter().map(|&i| batch.column(i).clone()).collect();
        let returned = RecordBatch::try_new_with_options(working.clone(), returned, &options)?;
        output.push(returned, Some(&mask))?;
        output.send_completed(sender).await?;
    }
    output.finish(sender).await
}

/// The filter columns of a chunk, batch by batch, with the rows that matched.
struct Evaluated {
    batches: Vec<(RecordBatch, BooleanBuffer)>,
    matched: u64,
}

impl Evaluated {
    /// The matching rows' filter columns at positions `columns` (the others, range tests'
    /// booleans and columns the read does not return, are not copied), and which of the chunk's
    /// rows they are (one bit per row).
    fn kept(&self, columns: &[usize]) -> Result<(RecordBatch, BooleanBuffer)> {
        let rows = self.batches.iter().map(|(batch, _)| batch.num_rows()).sum();
        let mut matching = BooleanBufferBuilder::new(rows);
        let mut kept = Vec::with_capacity(self.batches.len());
        for (batch, mask) in &self.batches {
            matching.append_buffer(mask);
            let mask = BooleanArray::new(mask.clone(), None);
            kept.push(arrow_select::filter::filter_record_batch(&batch.project(columns)?, &mask)?);
        }
        Ok((concat(&kept)?, matching.finish()))
    }

    /// The file rows of `chunk` that matched.
    fn matching_rows(&self, chunk: &RowSelection) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.matched as usize);
        self.visit_matching_rows(chunk, |row| {
            out.push(row);
            ControlFlow::Continue(())
        });
        out
    }

    /// Whether the matching rows fall in at least a quarter of the value blocks of `chunk`
    /// (blocks of `2^TAKE_BLOCK_BITS` rows): decided as soon as they reach a quarter, without
    /// listing them.
    fn touches_a_quarter_of_blocks(&self, chunk: &RowSelection) -> bool {
        let blocks: u64 = chunk
            .ranges()
            .iter()
            .filter(|r| r.end > r.start)
            .map(|r| ((r.end - 1) >> TAKE_BLOCK_BITS) - (r.start >> TAKE_BLOCK_BITS) + 1)
            .sum();
        let (mut touched, mut last) = (0u64, None);
        self.visit_matching_rows(chunk, |row| {
            let block = row >> TAKE_BLOCK_BITS;
            if last != Some(block) {
                touched += 1;
                last = Some(block);
            }
            if touched * 4 >= blocks { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        touched * 4 >= blocks
    }

    /// Calls `visit` with the file rows of `chunk` that matched, in order, until it breaks.
    fn visit_matching_rows(&self, chunk: &RowSelection, mut visit: impl FnMut(u64) -> ControlFlow<()>) {
        // Positions among the chunk's rows, mapped to file rows through its ranges (both in
        // ascending order, so one pass).
        let mut ranges = chunk.ranges().iter();
        let (mut range, mut range_start) = (ranges.next().cloned().unwrap_or(0..0), 0u64);
        let mut offset = 0u64;
        for (batch, mask) in &self.batches {
            for position in mask.set_indices() {
                let position = offset + position as u64;
                while position >= range_start + (range.end - range.start) {
                    range_start += range.end - range.start;
                    match ranges.next() {
                        Some(next) => range = next.clone(),
                        None => return,
                    }
                }
                if visit(range.start + (position - range_start)).is_break() {
                    return;
                }
            }
            offset += batch.num_rows() as u64;
        }
    }
}

async fn evaluate_chunk(
    read: ReadBuilder,
    chunk: RowSelection,
    predicate: Arc<BoundPredicate>,
    fields: Vec<usize>,
) -> Result<Evaluated> {
    let mut matched = 0;
    let mut out = Vec::new();
    let mut evaluate_batch = |batch: RecordBatch| -> Result<()> {
        let columns: FilterColumns = fields.iter().copied().zip(batch.columns()).collect();
        let mask = evaluate(&predicate, &columns, batch.num_rows())?;
        matched += mask.count_set_bits() as u64;
        out.push((batch, mask));
        Ok(())
    };
    if fields.is_empty() {
        // A predicate of constants: one batch of no columns.
        let options = RecordBatchOptions::new().with_row_count(Some(chunk.num_rows() as usize));
        evaluate_batch(RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &options)?)?;
    } else {
        // Each batch evaluated as it comes, while its values are still in the CPU's caches and
        // the decoders go on with the next.
        let mut stream = read.stream_unfiltered().await?;
        while let Some(batch) = stream.next().await {
            evaluate_batch(batch?)?;
        }
    }
    Ok(Evaluated { batches: out, matched })
}

/// The matching rows of `chunk`, if a take of them reads less than a scan of the chunk.
///
/// A take of fixed-width values decodes a block of them (1,024 for the integer encodings) for
/// every block a row is in: once the matching rows touch a quarter of the chunk's blocks, a scan
/// decodes about as much, sequentially, and is taken without planning (the planner counts bytes
/// and requests, not decoding). Strings are taken value by value, so for them the planner
/// decides.
async fn rows_to_take(
    setup: &Setup,
    base: &ReadBuilder,
    chunk: &RowSelection,
    evaluated: &Evaluated,
) -> Result<Option<Vec<u64>>> {
    if evaluated.matched as f64 >= DENSE_SHARE * chunk.num_rows() as f64 {
        return Ok(None);
    }
    if setup.others_fixed_width && evaluated.touches_a_quarter_of_blocks(chunk) {
        return Ok(None);
    }
    let read = sub_read(base, &setup.other_names);
    let request = read.io_options().coalesce.gap.get().max(4096) * REQUEST_COST_GAPS;
    let cost = |plan: &IoPlan| {
        let total = plan.total();
        total.read_bytes + total.reads * request
    };
    let (take_rows, scan_rows) = match read.io_options().coalesce.gap.get() <= CHEAP_REQUEST_GAP {
        true => (evaluated.matched * TAKE_ROW_COST, chunk.num_rows() * SCAN_ROW_COST),
        false => (0, 0),
    };
    let scan = cost(&read.clone().with_selection(chunk.clone()).plan_unfiltered().await?) + scan_rows;
    // Listing the rows and planning a take of many costs about as much as a scan of them:
    // neither is done when the rows alone cost more than the scan.
    if take_rows >= scan {
        return Ok(None);
    }
    let rows = evaluated.matching_rows(chunk);
    let take = cost(&read.with_indices(rows.clone()).plan_unfiltered().await?) + take_rows;
    Ok((take < scan).then_some(rows))
}

/// Splits `selection` into selections of at most `rows` rows, one at a time: a file may claim
/// 2^46 rows in a few hundred bytes (a constant page), so the chunks are never listed ahead.
fn split(selection: &RowSelection, rows: u64) -> Chunks<'_> {
    Chunks { ranges: selection.ranges(), next: 0, start: selection.ranges().first().map_or(0, |r| r.start), rows }
}

/// The chunks of [`split`], made as they are asked for.
struct Chunks<'a> {
    ranges: &'a [Range<u64>],
    /// The range the next chunk starts in, and the row it starts at.
    next: usize,
    start: u64,
    rows: u64,
}

impl Iterator for Chunks<'_> {
    type Item = RowSelection;

    fn next(&mut self) -> Option<RowSelection> {
        let mut current: Vec<Range<u64>> = Vec::new();
        let mut count = 0;
        while count < self.rows {
            let Some(range) = self.ranges.get(self.next) else { break };
            let start = self.start.max(range.start);
            let end = range.end.min(start + (self.rows - count));
            if start < end {
                current.push(start..end);
                count += end - start;
            }
            if end >= range.end {
                self.next += 1;
                self.start = self.ranges.get(self.next).map_or(0, |r| r.start);
            } else {
                self.start = end;
            }
        }
        (!current.is_empty()).then(|| RowSelection::from_sorted_ranges(current))
    }
}

fn concat(batches: &[RecordBatch]) -> Result<RecordBatch> {
    match batches {
        [] => Err(Error::internal("nothing to concatenate")),
        [one] => Ok(one.clone()),
        [first, ..] if first.num_columns() == 0 => {
            let rows = batches.iter().map(|b| b.num_rows()).sum();
            let options = RecordBatchOptions::new().with_row_count(Some(rows));
            Ok(RecordBatch::try_new_with_options(first.schema(), vec![], &options)?)
        }
        [first, ..] => Ok(arrow_select::concat::concat_batches(&first.schema(), batches)?),
    }
}

/// The output batch of rows that have `filter_side` filter columns and `others` other columns.
fn assemble(setup: &Setup, filter_side: &RecordBatch, others: Option<&RecordBatch>) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = setup
        .sources
        .iter()
        .map(|source| match source {
            Source::Filter(i) => Ok(filter_side.column(*i).clone()),
            Source::Other(i) => {
                others.map(|o| o.column(*i).clone()).ok_or_else(|| Error::internal("an output column was not read"))
            }
        })
        .collect::<Result<_>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(filter_side.num_rows()));
    Ok(RecordBatch::try_new_with_options(setup.working.clone(), columns, &options)?)
}

/// The read's output: batches of the matching rows, coalesced to the batch size (in the
/// working schema), then brought to the read's schema.
struct Output {
    coalescer: Option<BatchCoalescer>,
    /// For a projection of no columns: rows matched not yet handed out.
    pending_rows: usize,
    schema: SchemaRef,
    batch_size: usize,
    ready: Vec<RecordBatch>,
}

impl Output {
    fn new(working: SchemaRef, schema: SchemaRef, batch_size: usize) -> Self {
        let coalescer = (!working.fields().is_empty()).then(|| BatchCoalescer::new(working, batch_size));
        Self { coalescer, pending_rows: 0, schema, batch_size, ready: Vec::new() }
    }

    /// `batch` (of the working schema) in the read's schema.
    fn in_read_schema(&self, batch: RecordBatch) -> Result<RecordBatch> {
        if batch.schema() == self.schema {
            return Ok(batch);
        }
        let columns = batch
            .columns()
            .iter()
            .zip(self.schema.fields())
            .map(|(column, field)| widen_decimal64(column, field.data_type()))
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?)
    }

    fn push(&mut self, batch: RecordBatch, mask: Option<&BooleanBuffer>) -> Result<()> {
        match &mut self.coalescer {
            // A batch whose rows all match goes out as it is, without a copy (the rows inside a
            // range of a sorted column): one of between half and all the batch size when nothing
            // is waiting before it; a full one always, the rows waiting before it sent first as a
            // shorter batch (else one partial batch at a range's start would have every batch
            // after it copied).
            Some(coalescer)
                if batch.num_rows() <= self.batch_size
                    && mask.is_none_or(|m| m.count_set_bits() == batch.num_rows())
                    && (batch.num_rows() == self.batch_size
                        || (coalescer.get_buffered_rows() == 0 && 2 * batch.num_rows() >= self.batch_size)) =>
            {
                coalescer.finish_buffered_batch()?;
                while let Some(done) = coalescer.next_completed_batch() {
                    self.ready.push(done);
                }
                self.ready.push(batch);
            }
            Some(coalescer) => {
                match mask {
                    Some(mask) => coalescer.push_batch_with_filter(batch, &BooleanArray::new(mask.clone(), None))?,
                    None => coalescer.push_batch(batch)?,
                }
                while let Some(done) = coalescer.next_completed_batch() {
                    self.ready.push(done);
                }
            }
            None => {
                self.pending_rows += mask.map_or(batch.num_rows(), |m| m.count_set_bits());
                while self.pending_rows >= self.batch_size {
                    self.pending_rows -= self.batch_size;
                    self.ready.push(self.empty_batch(self.batch_size)?);
                }
            }
        }
        Ok(())
    }

    fn empty_batch(&self, rows: usize) -> Result<RecordBatch> {
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), vec![], &options)?)
    }

    async fn send_completed(&mut self, sender: &mpsc::Sender<Result<RecordBatch>>) -> Result<()> {
        for batch in std::mem::take(&mut self.ready) {
            let batch = self.in_read_schema(batch)?;
            if sender.send(Ok(batch)).await.is_err() {
                // The stream was dropped: nothing more to do.
                return Err(Error::internal("the filtered read's consumer is gone"));
            }
        }
        Ok(())
    }

    async fn finish(mut self, sender: &mpsc::Sender<Result<RecordBatch>>) -> Result<()> {
        match &mut self.coalescer {
            Some(coalescer) => {
                coalescer.finish_buffered_batch()?;
                while let Some(done) = coalescer.next_completed_batch() {
                    self.ready.push(done);
                }
            }
            None if self.pending_rows > 0 => {
                let last = self.empty_batch(self.pending_rows)?;
                self.ready.push(last);
            }
            None => {}
        }
        self.send_completed(sender).await
    }
}

/// A `take` with a filter: the rows at `indices` that match, in the order of `indices`.
pub(crate) async fn filtered_take(builder: ReadBuilder, indices: &[u64]) -> Result<RecordBatch> {
    let file = builder.file().clone();
    let predicate = builder.filter().ok_or_else(|| Error::internal("a filtered take without a filter"))?;
    let predicate = BoundPredicate::bind(predicate, file.schema().fields())?;
    let (_, schema) = builder.output_fields().await?;
    let mut names: Vec<String> = match builder.columns() {
        Some(columns) => columns.to_vec(),
        None => file.schema().fields().iter().map(|f| f.name().clone()).collect(),
    };
    let output_len = names.len();
    let fields = predicate.fields();
    let mut positions: HashMap<usize, usize> = HashMap::new();
    for &field in &fields {
        let name = file.schema().field(field).name();
        let position = match names.iter().position(|n| n == name) {
            Some(p) => p,
            None => {
                names.push(name.clone());
                names.len() - 1
            }
        };
        positions.insert(field, position);
    }
    let mut read = ReadBuilder::new(file.clone())
        .with_options(builder.resolved_options())
        .with_trace_option(builder.trace().cloned());
    if let Some(io) = builder.explicit_io_options() {
        read = read.with_io_options(io);
    }
    let batch = sub_read(&read, &names).take_unfiltered(indices).await?;
    let columns: FilterColumns = positions.iter().map(|(field, p)| (*field, batch.column(*p))).collect();
    let mask = evaluate(&predicate, &columns, batch.num_rows())?;
    let kept = arrow_select::filter::filter_record_batch(&batch, &BooleanArray::new(mask, None))?;
    let options = RecordBatchOptions::new().with_row_count(Some(kept.num_rows()));
    Ok(RecordBatch::try_new_with_options(schema, kept.columns()[..output_len].to_vec(), &options)?)
}

/// The plan of a filtered read's first two stages.
pub(crate) async fn filtered_plan(builder: ReadBuilder) -> Result<FilteredPlan> {
    let setup = setup(&builder).await?;
    let filter_columns = if setup.filter_names.is_empty() || setup.candidates.num_rows() == 0 {
        IoPlan::default()
    } else {
        filter_read(&setup.base, &setup).with_selection(setup.candidates.clone()).plan_unfiltered().await?
    };
    Ok(FilteredPlan { zones: setup.zones, candidate_rows: setup.candidates.num_rows(), filter_columns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_rows_map_positions_to_file_rows() {
        let chunk = RowSelection::from_sorted_ranges(vec![10..13, 20..22, 40..45]);
        let batch = |n: usize| {
            RecordBatch::try_new_with_options(
                Arc::new(Schema::empty()),
                vec![],
                &RecordBatchOptions::new().with_row_count(Some(n)),
            )
            .unwrap()
        };
        let bits = |b: &[bool]| BooleanBuffer::from(b.to_vec());
        // Positions 0, 3, 4 | 5, 9 of the chunk's 10 rows, in batches of 4 and 6.
        let evaluated = Evaluated {
            batches: vec![
                (batch(4), bits(&[true, false, false, true])),
                (batch(6), bits(&[true, true, false, false, false, true])),
            ],
            matched: 5,
        };
        assert_eq!(evaluated.matching_rows(&chunk), vec![10, 20, 21, 40, 44]);
    }

    #[test]
    fn blocks_touched_by_matching_rows_are_counted_against_the_chunks() {
        let batch = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(8192)),
        )
        .unwrap();
        let chunk = RowSelection::from_sorted_ranges(vec![0..8192]);
        let evaluated = |rows: &[usize]| {
            let mut bits = vec![false; 8192];
            rows.iter().for_each(|&r| bits[r] = true);
            Evaluated { batches: vec![(batch.clone(), BooleanBuffer::from(bits))], matched: rows.len() as u64 }
        };
        // Eight blocks of 1,024 rows: one touched is an eighth, two a quarter.
        assert!(!evaluated(&[0, 5, 1023]).touches_a_quarter_of_blocks(&chunk));
        assert!(evaluated(&[0, 1024]).touches_a_quarter_of_blocks(&chunk));
        assert!(evaluated(&(0..8192).step_by(7).collect::<Vec<_>>()).touches_a_quarter_of_blocks(&chunk));
        assert!(!evaluated(&[]).touches_a_quarter_of_blocks(&chunk));
        // Rows of a chunk of two ranges map to their file rows' blocks.
        // Four blocks each, eight in all.
        let split = RowSelection::from_sorted_ranges(vec![0..4096, 102_400..106_496]);
        assert!(!evaluated(&[0, 5]).touches_a_quarter_of_blocks(&split));
        assert!(evaluated(&[0, 4096]).touches_a_quarter_of_blocks(&split));
        assert_eq!(evaluated(&[0, 4096]).matching_rows(&split), vec![0, 102_400]);
    }

    #[test]
    fn split_cuts_selections_at_a_row_count() {
        let selection = RowSelection::from_sorted_ranges(vec![0..5, 10..13, 20..30]);
        let chunks: Vec<Vec<Range<u64>>> = split(&selection, 4).map(|c| c.ranges().to_vec()).collect();
        assert_eq!(chunks, vec![vec![0..4], vec![4..5, 10..13], vec![20..24], vec![24..28], vec![28..30]]);
    }
}
