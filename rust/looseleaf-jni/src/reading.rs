//! The read side: the Rust objects behind the JVM's reader handles (an open file, a running
//! scan, an encoded batch) and the dataset listing the driver plans from.
//!
//! Reads of the connector never map files into memory unless the storage options ask for it
//! (`storage.memory_map=true`): a file truncated by another process would end an executor's JVM
//! with `SIGBUS`, where a copying read fails with an error naming the file.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::RecordBatch;
use arrow_ipc::writer::{DictionaryTracker, IpcDataGenerator, IpcWriteContext, IpcWriteOptions};
use arrow_schema::SchemaRef;
use futures::StreamExt;
use looseleaf::aggregate::{AggregateResults, Aggregation, BoundAggregation};
use looseleaf::filter::{Predicate, ZoneCounts};
use looseleaf::{
    ColumnBounds, FileReader, Location, ReadOptions, ReadStats, RecordBatchStream, RowSelection, StorageOptions,
    spark_form,
};

use crate::jvm::JvmThread;
use crate::policy::Failure;

/// Bytes of [`Batch`] bodies alive in this process.
static LIVE_BATCH_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Bytes of batch bodies allocated and not yet freed.
pub fn live_batch_bytes() -> usize {
    LIVE_BATCH_BYTES.load(Ordering::Relaxed)
}

/// `schema` as an IPC schema message.
fn schema_message(schema: &SchemaRef) -> Vec<u8> {
    IpcDataGenerator::default()
        .schema_to_bytes_with_dictionary_tracker(
            schema,
            &mut DictionaryTracker::new(false),
            &IpcWriteOptions::default(),
        )
        .ipc_message
}

/// Storage options from `key=value` lines.
pub(crate) fn storage_options(lines: &[String]) -> Result<StorageOptions, Failure> {
    lines
        .iter()
        .map(|line| line.split_once('=').ok_or_else(|| Failure::invalid("a storage option without '='")))
        .collect()
}

/// Storage options of a read of `location`: `lines`, with local files read by copies unless
/// they say otherwise (see the module documentation).
fn read_storage_options(location: &Location, lines: &[String]) -> Result<StorageOptions, Failure> {
    let mut options = storage_options(lines)?;
    if matches!(location, Location::Local(_)) && !options.iter().any(|(key, _)| key == "memory_map") {
        options.insert("memory_map", "false");
    }
    Ok(options)
}

/// Schema metadata key of the dataset's schema file in [`dataset`]'s stream.
const SCHEMA_FILE_KEY: &str = "looseleaf.schema_file";

/// The dataset `location` names (`looseleaf::dataset::Dataset`: its files, with the partition
/// columns of `key=value/` directories), as an Arrow IPC stream of one batch: a `file` column
/// (its data files, in order) then the partition columns (each file's values), the schema
/// file (if any other than the first data file) in the schema's metadata.
pub fn dataset(jvm: &mut JvmThread<'_, '_>, location: &str, options: &[String]) -> Result<Vec<u8>, Failure> {
    use looseleaf::dataset::{Dataset, DatasetOptions, DatasetSource};
    let parsed = Location::parse(location)?;
    let storage = read_storage_options(&parsed, options)?;
    // Only a directory has a schema file (a glob or a file does not resolve as one).
    let schema_file = jvm.wait(looseleaf::dataset::resolve(&parsed, &storage))?.ok().and_then(|d| d.schema_file);
    let opening =
        Dataset::open(DatasetSource::Uri(location.to_owned()), DatasetOptions { storage, ..DatasetOptions::default() });
    let dataset = jvm.wait(opening)??;
    let partitions = dataset.file_partitions()?;
    let files: Vec<&str> = dataset.files().iter().map(|f| f.reader.location()).collect();
    let mut fields = vec![std::sync::Arc::new(arrow_schema::Field::new("file", arrow_schema::DataType::Utf8, false))];
    fields.extend(partitions.schema().fields().iter().cloned());
    let mut columns: Vec<arrow_array::ArrayRef> = vec![std::sync::Arc::new(arrow_array::StringArray::from(files))];
    columns.extend(partitions.columns().iter().cloned());
    let metadata: std::collections::HashMap<String, String> =
        schema_file.map(|f| [(SCHEMA_FILE_KEY.to_owned(), f)].into()).unwrap_or_default();
    let schema = std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(fields, metadata));
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(partitions.num_rows()));
    let batch = RecordBatch::try_new_with_options(schema.clone(), columns, &options)
        .map_err(|e| Failure::new(format!("{location}: {e}")))?;
    let encode = || -> Result<Vec<u8>, arrow_schema::ArrowError> {
        let mut writer = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &schema)?;
        writer.write(&batch)?;
        writer.into_inner()
    };
    encode().map_err(|e| Failure::new(format!("{location}: encoding the dataset's files: {e}")))
}

/// The files of a [`dataset`] stream (`partitions`, as [`dataset`] made it) that `filter` does
/// not rule out by their partition values (`looseleaf::filter::partition_rules_out`), by
/// index. `filter` is the core's JSON form, its constants typed values in the tree.
pub fn kept_files(partitions: &[u8], filter: &str) -> Result<Vec<i64>, Failure> {
    use arrow_array::{Array, ArrayRef};
    let filter = Predicate::from_json(filter, &[])?;
    let reader = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(partitions), None)
        .map_err(|e| Failure::new(format!("a dataset stream that does not decode: {e}")))?;
    let mut kept = Vec::new();
    let mut index = 0i64;
    for batch in reader {
        let batch = batch.map_err(|e| Failure::new(format!("a dataset stream that does not decode: {e}")))?;
        let fields: arrow_schema::Fields = batch.schema().fields().iter().skip(1).cloned().collect();
        for row in 0..batch.num_rows() {
            let values: Vec<ArrayRef> = batch.columns().iter().skip(1).map(|c| c.slice(row, 1)).collect();
            if !looseleaf::filter::partition_rules_out(&filter, &fields, &values)? {
                kept.push(index);
            }
            index += 1;
        }
    }
    Ok(kept)
}

/// Read options from `name=value` lines (Spark's spellings, see `looseleaf::read_option_name`).
pub fn read_options(lines: &[String]) -> Result<ReadOptions, Failure> {
    let pairs = lines
        .iter()
        .map(|line| {
            line.split_once('=').ok_or_else(|| Failure::invalid(format!("a read option without '=': {line:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReadOptions::from_text(pairs)?)
}

/// A filter in the core's JSON form (`None` for an empty request).
fn filter(json: &str) -> Result<Option<Predicate>, Failure> {
    if json.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(Predicate::from_json(json, &[])?))
}

/// An open file.
pub struct Reader {
    reader: FileReader,
    /// The Arrow schema Spark reads, as an IPC schema message.
    schema_message: Result<Vec<u8>, String>,
}

impl Reader {
    /// Opens `location` with `options` (`key=value` lines).
    pub fn open(jvm: &mut JvmThread<'_, '_>, location: &str, options: &[String]) -> Result<Self, Failure> {
        let location = Location::parse(location)?;
        let options = read_storage_options(&location, options)?;
        let reader = jvm.wait(FileReader::open_location(&location, &options))??;
        let schema_message = spark_form::schema(reader.schema())
            .map(|schema| schema_message(&schema))
            .map_err(|e| e.with_location(reader.location()).to_string());
        Ok(Self { reader, schema_message })
    }

    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        self.reader.num_rows()
    }

    /// The schema message, or why Spark cannot read the file.
    pub fn schema_message(&self) -> Result<Vec<u8>, Failure> {
        self.schema_message.clone().map_err(Failure::new)
    }

    /// The bounds of a column from its statistics (see `FileReader::column_bounds`).
    pub fn column_bounds(&self, jvm: &mut JvmThread<'_, '_>, column: &str) -> Result<Option<ColumnBounds>, Failure> {
        Ok(jvm.wait(self.reader.column_bounds(column))??)
    }

    /// The row ranges whose zones `filter` (the core's JSON form) does not rule out (see
    /// `FileReader::rows_matching_statistics`).
    pub fn matching_rows(&self, jvm: &mut JvmThread<'_, '_>, filter_json: &str) -> Result<Vec<Range<u64>>, Failure> {
        let Some(filter) = filter(filter_json)? else { return Ok(vec![0..self.reader.num_rows()]) };
        let all = RowSelection::all(self.reader.num_rows());
        let (selection, _) = jvm.wait(self.reader.rows_matching_statistics(&filter, &all))??;
        Ok(selection.ranges().to_vec())
    }

    /// Bytes a read of `columns` fetches.
    pub fn projected_bytes(&self, jvm: &mut JvmThread<'_, '_>, columns: Option<Vec<String>>) -> Result<u64, Failure> {
        let read = match columns {
            Some(columns) => self.reader.read().with_columns(columns),
            None => self.reader.read(),
        };
        Ok(jvm.wait(read.plan())??.total().bytes)
    }

    /// Starts a read of `rows` with `options`, less the zones `filter_json` rules out, and only
    /// the rows where `row_filter_json` is true (a filter the core evaluates exactly).
    pub fn scan(
        &self,
        jvm: &mut JvmThread<'_, '_>,
        columns: Option<Vec<String>>,
        rows: Range<u64>,
        options: ReadOptions,
        filter_json: &str,
        row_filter_json: &str,
    ) -> Result<Scan, Failure> {
        self.schema_message()?;
        let filter = filter(filter_json)?;
        let row_filter = self::filter(row_filter_json)?;
        RowSelection::try_range(rows.clone(), self.reader.num_rows())?;
        let mut selection = RowSelection::range(rows.clone());
        let mut read = self.reader.read().with_options(options);
        if let Some(columns) = columns {
            read = read.with_columns(columns);
        }
        let mut skipped = Skipped::default();
        if let Some(filter) = &filter {
            let (kept, zones) = jvm.wait(self.reader.rows_matching_statistics(filter, &selection))??;
            selection = kept;
            // What the filter spared: its zones ruled out, the range's rows outside the kept
            // ones, and the requests (a page each, mostly) a read of the whole range would make.
            let all = jvm.wait(read.clone().with_row_range(rows.clone()).plan())??.total().requests;
            let kept = jvm.wait(read.clone().with_selection(selection.clone()).plan())??.total().requests;
            skipped =
                Skipped { zones, rows: (rows.end - rows.start) - selection.num_rows(), requests: all - kept.min(all) };
        }
        if let Some(row_filter) = row_filter {
            read = read.with_filter(row_filter);
        }
        let stream = jvm.wait(read.with_selection(selection).stream())??;
        let spark_schema = spark_form::schema(stream.schema()).map_err(|e| e.with_location(self.reader.location()))?;
        Ok(Scan {
            stats: stream.stats(),
            batches: Batches::Read(stream),
            schema_message: schema_message(&spark_schema),
            spark_schema,
            location: self.reader.location().to_owned(),
            skipped,
            generator: IpcDataGenerator::default(),
            dictionaries: DictionaryTracker::new(false),
            options: IpcWriteOptions::default(),
            context: IpcWriteContext::default(),
        })
    }
}

impl Reader {
    /// The aggregation `request` (the JSON form of `looseleaf::aggregate::Aggregation`) bound
    /// to this file, and the Arrow form Spark reads of its partial results.
    fn bind_aggregation(&self, request: &str) -> Result<(BoundAggregation, SchemaRef), Failure> {
        let location = self.reader.location();
        let bound = Aggregation::from_json(request)
            .and_then(|a| a.bind(self.reader.schema()))
            .map_err(|e| e.with_location(location))?;
        let spark_schema = spark_form::schema(bound.schema()).map_err(|e| e.with_location(location))?;
        Ok((bound, spark_schema))
    }

    /// The schema of an aggregation's partial results (an IPC schema message), or the core's
    /// error if it does not compute the aggregation (the connector then leaves it to Spark).
    pub fn aggregate_schema(&self, request: &str) -> Result<Vec<u8>, Failure> {
        Ok(schema_message(&self.bind_aggregation(request)?.1))
    }
}

/// Rows below which a range of a final aggregation is not cut into pieces read concurrently
/// (a read's own setup costs more than the rows'; see [`pieces`]).
const MIN_PIECE_ROWS: u64 = 1 << 17;

/// `ranges` cut into pieces read concurrently, about `parallelism` in all, each range's count
/// in proportion to its rows and none of fewer than [`MIN_PIECE_ROWS`] rows: one task's final
/// aggregation uses the runtime's threads as the tasks of a partial one would.
fn pieces<F: Copy>(ranges: &[(F, Range<u64>)], parallelism: u64) -> Vec<(F, Range<u64>)> {
    // In 128 bits: row counts come from files' metadata, and products of them must not wrap.
    let total: u128 = ranges.iter().map(|(_, rows)| u128::from(rows.end - rows.start)).sum::<u128>().max(1);
    let mut out = Vec::new();
    for (file, rows) in ranges {
        let len = u128::from(rows.end - rows.start);
        let wanted = (len * u128::from(parallelism)).div_ceil(total).min(len / u128::from(MIN_PIECE_ROWS)).max(1);
        // Offsets below `len`, so they fit the range's `u64` bounds.
        let at = |i: u128| rows.start + (len * i / wanted) as u64;
        out.extend((0..wanted).map(|i| (*file, at(i)..at(i + 1))));
    }
    out
}

/// Starts an aggregation (the JSON form of `looseleaf::aggregate::Aggregation`) of the rows of
/// one or more files (`ranges`: each file with its rows; files of one schema): a scan whose one
/// batch is the results, partial or final as the request asks. For final results the ranges are
/// read in [`pieces`], concurrently (`BoundAggregation::aggregate_concurrently`).
pub fn aggregate(
    jvm: &mut JvmThread<'_, '_>,
    ranges: &[(&Reader, Range<u64>)],
    request: &str,
    options: ReadOptions,
) -> Result<Scan, Failure> {
    let Some(((first, _), others)) = ranges.split_first() else {
        return Err(Failure::invalid("aggregate: no file to read"));
    };
    let (bound, spark_schema) = first.bind_aggregation(request)?;
    for (reader, rows) in ranges {
        RowSelection::try_range(rows.clone(), reader.reader.num_rows())?;
    }
    let ranges = match bound.results() {
        AggregateResults::Final => {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
            pieces(ranges, threads)
        }
        AggregateResults::Partial => ranges.to_vec(),
    };
    let stats = ReadStats::default();
    let mut streams = Vec::with_capacity(ranges.len());
    for (reader, rows) in &ranges {
        // Each file binds the request itself: its columns must give the same results.
        let (own, _) = reader.bind_aggregation(request)?;
        if own.schema() != bound.schema() {
            return Err(Failure::invalid(format!(
                "aggregate: {} and {} give results of different types: {} and {}",
                first.reader.location(),
                reader.reader.location(),
                bound.schema(),
                own.schema()
            )));
        }
        let read = own.prepare(reader.reader.read().with_options(options.clone()).with_row_range(rows.clone()));
        let stream = jvm.wait(read.stream())??;
        stats.add(&stream.stats());
        streams.push(stream);
    }
    let location = match others.len() {
        0 => first.reader.location().to_owned(),
        n => format!("{} and {n} other file(s)", first.reader.location()),
    };
    Ok(Scan {
        stats,
        batches: Batches::Aggregate { bound, streams },
        schema_message: schema_message(&spark_schema),
        spark_schema,
        location,
        skipped: Skipped::default(),
        generator: IpcDataGenerator::default(),
        dictionaries: DictionaryTracker::new(false),
        options: IpcWriteOptions::default(),
        context: IpcWriteContext::default(),
    })
}

/// What a scan hands out.
enum Batches {
    /// The batches of a read.
    Read(RecordBatchStream),
    /// An aggregation's results, one batch computed from the reads when first asked (no reads
    /// left after).
    Aggregate { bound: BoundAggregation, streams: Vec<RecordBatchStream> },
}

/// What a scan's filter spared it, before it started.
#[derive(Debug, Clone, Copy, Default)]
struct Skipped {
    zones: ZoneCounts,
    rows: u64,
    requests: u64,
}

/// A running read, encoding each batch as an IPC message.
pub struct Scan {
    batches: Batches,
    stats: ReadStats,
    /// The schema of the batches, as an IPC schema message.
    pub schema_message: Vec<u8>,
    /// The Arrow form Spark reads of the stream's batches.
    spark_schema: SchemaRef,
    location: String,
    skipped: Skipped,
    generator: IpcDataGenerator,
    dictionaries: DictionaryTracker,
    options: IpcWriteOptions,
    context: IpcWriteContext,
}

impl Scan {
    /// The read's counters so far, as the `name=value` lines Java's `ScanMetrics` reads.
    pub fn metrics(&self) -> String {
        let io = self.stats.io_stats();
        let timings = self.stats.timings();
        [
            ("bytesRead", io.bytes_read),
            ("reads", io.reads),
            ("requests", io.requests),
            ("retries", io.retries),
            ("zonesSkipped", self.skipped.zones.skipped),
            ("rowsSkipped", self.skipped.rows),
            ("pagesSkipped", self.skipped.requests),
            ("decodeNanos", timings.decoding.as_nanos() as u64),
            ("ioWaitNanos", timings.waiting_for_io.as_nanos() as u64),
        ]
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("\n")
    }

    /// The next batch, `None` at the end.
    pub fn next(&mut self, jvm: &mut JvmThread<'_, '_>) -> Result<Option<Batch>, Failure> {
        let batch = match &mut self.batches {
            Batches::Read(stream) => jvm.wait(stream.next())?.transpose()?,
            Batches::Aggregate { bound, streams } if !streams.is_empty() => {
                Some(jvm.wait(bound.aggregate_concurrently(std::mem::take(streams)))??)
            }
            Batches::Aggregate { .. } => None,
        };
        let Some(batch) = batch else {
            return Ok(None);
        };
        let batch = spark_form::batch(&batch, &self.spark_schema).map_err(|e| e.with_location(&self.location))?;
        self.encode(&batch).map(Some)
    }

    fn encode(&mut self, batch: &RecordBatch) -> Result<Batch, Failure> {
        let (dictionaries, encoded) = self
            .generator
            .encode(batch, &mut self.dictionaries, &self.options, &mut self.context)
            .map_err(|e| Failure::new(format!("encoding a batch for the JVM: {e}")))?;
        if !dictionaries.is_empty() {
            return Err(Failure::new("dictionary-encoded batches do not cross to the JVM"));
        }
        Ok(Batch::new(encoded.ipc_message, encoded.arrow_data))
    }
}

/// One encoded batch: an IPC `RecordBatch` message header and its body.
pub struct Batch {
    /// The flatbuffer `Message`.
    pub header: Vec<u8>,
    /// The body the message's buffers point into.
    pub body: Vec<u8>,
}

impl Batch {
    fn new(header: Vec<u8>, body: Vec<u8>) -> Self {
        LIVE_BATCH_BYTES.fetch_add(body.len(), Ordering::Relaxed);
        Self { header, body }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        LIVE_BATCH_BYTES.fetch_sub(self.body.len(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::{MIN_PIECE_ROWS, pieces};

    /// Pieces cover each range exactly, in order, about `parallelism` in all, none too small.
    #[test]
    fn pieces_cover_the_ranges_in_proportion() {
        let big = 10 * MIN_PIECE_ROWS;
        // The ranges (a file's number and its rows), the parallelism, the pieces wanted.
        type Case = (Vec<(u8, std::ops::Range<u64>)>, u64, usize);
        let cases: Vec<Case> = vec![
            (vec![(0, 0..big)], 2, 2),
            (vec![(0, 0..big), (1, 5..big + 5)], 2, 2),
            (vec![(0, 0..big), (1, 0..big / 3)], 4, 5),
            (vec![(0, 0..MIN_PIECE_ROWS + 1)], 8, 1),
            (vec![(0, 7..7)], 2, 1),
            // A file's claim of rows must not overflow the arithmetic.
            (vec![(0, 0..u64::MAX), (1, 0..u64::MAX / 2)], 3, 4),
        ];
        for (ranges, parallelism, count) in cases {
            let out = pieces(&ranges, parallelism);
            assert_eq!(out.len(), count, "{ranges:?}");
            for (file, rows) in &ranges {
                let mine: Vec<_> = out.iter().filter(|(f, _)| f == file).map(|(_, r)| r.clone()).collect();
                assert_eq!(mine.first().map(|r| r.start), Some(rows.start));
                assert_eq!(mine.last().map(|r| r.end), Some(rows.end));
                assert!(mine.windows(2).all(|w| w[0].end == w[1].start));
                assert!(mine.len() == 1 || mine.iter().all(|r| r.end - r.start >= MIN_PIECE_ROWS));
            }
        }
    }
}
