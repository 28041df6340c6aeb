//! The fuzzing harness of the reader: [`read_every_way`] takes arbitrary bytes as a whole
//! looseleaf file, opens it from memory and reads it through every read path, with default and
//! with tiny batch sizes and I/O budgets.
//!
//! Any outcome other than data or a proper [`looseleaf::Error`] is a *finding*, reported by a
//! panic (which the libFuzzer target turns into an abort, and the regression test into a
//! failure):
//!
//! - a panic anywhere in the reader, including its background tasks (those surface as
//!   [`Error::Internal`], which is therefore a finding too, except for a refused allocation);
//! - a read that does not finish within [`TIME_LIMIT`] (a hang);
//! - an error that does not name the file;
//! - a successful read that returns arrays Arrow does not consider valid, batches larger than
//!   asked, or a number of rows other than asked (a silent truncation);
//! - an allocation larger than the cap of [`alloc::GuardedAllocator`] that the reader cannot
//!   take back as an error (the binaries install it; an infallible allocation refused aborts).
//!
//! Reads of files claiming many rows stop after [`MAX_ROWS`] rows (dropping the stream, which
//! exercises cancellation): a file may legitimately claim more rows than can be read in the
//! time an input gets.
//!
//! A file that opens is then read as a **dataset** of two copies of itself (stored in the
//! process's `memory://` store): the full scan, a take across both files, a filtered read, the
//! row count and the plan, each checked as above, errors naming one of the copies.
//!
//! The input is opened from memory with `looseleaf_testing::MemoryReader`, the in-memory reader
//! of the core crate's integration tests too. [`seeds`] makes the seed corpus: small valid files
//! of every encoding, compression and type, drawn with the integration tests' generator
//! (`looseleaf_testing::generate`).

pub mod alloc;
pub mod seeds;

use std::num::NonZeroUsize;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, Scalar};
use arrow_schema::{DataType, SchemaRef};
use bytes::Bytes;
use futures::StreamExt;
use looseleaf::dataset::{Dataset, DatasetOptions, DatasetSource};
use looseleaf::filter::{CompareOp, Predicate};
use looseleaf::format::schema::is_variable_width;
use looseleaf::io::{IoDepth, RangeReader};
use looseleaf::{
    ByteCount, Error, FileReader, IoOptions, Location, ReadBuilder, ReadOptions, RowSelection, StorageOptions,
};
use looseleaf_testing::MemoryReader;

/// The location the input is opened as; every error must name it.
pub const LOCATION: &str = "memory://fuzz-input.leaf";

/// The directory of the dataset's copies of the input (`memory://`); errors of dataset reads
/// must name a file in it.
pub const DATASET_LOCATION: &str = "memory://fuzz-dataset/";

/// How long reading one input every way may take before it counts as a hang. The files are a
/// few KiB: a release build reads one every way in milliseconds, a debug build in well under a
/// second.
pub const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Rows a read consumes at most before dropping its stream.
pub const MAX_ROWS: usize = 2_000;

/// Batches a read consumes at most before dropping its stream (reads in batches of one row).
pub const MAX_BATCHES: usize = 300;

/// The runtime every input is read on (one for the process: starting threads for each input
/// would cost more than reading it).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => panic!("cannot start the runtime: {e}"),
    })
}

/// Opens `data` as a looseleaf file and reads it every way; panics on a finding (see the crate
/// documentation). Returns whether the file opened.
pub fn read_every_way(data: &[u8]) -> bool {
    let data = Bytes::copy_from_slice(data);
    runtime().block_on(async move {
        match tokio::time::timeout(TIME_LIMIT, read_all_ways(data)).await {
            Ok(opened) => opened,
            Err(_) => panic!("finding: reading the input every way took more than {TIME_LIMIT:?} (a hang)"),
        }
    })
}

/// Checks that `error` is a proper error: not internal (a bug or a caught panic; a refused
/// allocation is allowed: the capped allocator refuses what a hostile size asks), naming the
/// file.
#[track_caller]
fn check_error(error: &Error, what: &str) {
    if let Error::Internal(message) = error
        && !message.contains("cannot allocate")
    {
        panic!("finding: {what}: internal error (a bug, or a panic in a reader task): {error}");
    }
    let named = if what.starts_with("dataset") { DATASET_LOCATION } else { LOCATION };
    if !error.to_string().contains(named) {
        panic!("finding: {what}: the error does not name the file: {error}");
    }
}

/// The outcome of a read, checked: data, or a proper error.
#[track_caller]
fn checked<T>(result: looseleaf::Result<T>, what: &str) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(error) => {
            check_error(&error, what);
            None
        }
    }
}

/// Checks one batch of a read: the read's schema, at most `batch_size` rows, valid arrays.
fn check_batch(batch: &RecordBatch, schema: &SchemaRef, batch_size: Option<usize>, what: &str) {
    if batch.schema() != *schema {
        panic!("finding: {what}: a batch of schema {:?} in a read of {:?}", batch.schema(), schema);
    }
    if let Some(size) = batch_size
        && batch.num_rows() > size
    {
        panic!("finding: {what}: a batch of {} rows in a read of batches of {size}", batch.num_rows());
    }
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        if let Err(e) = column.to_data().validate_full() {
            panic!("finding: {what}: column {:?} is not a valid Arrow array: {e}", field.name());
        }
        if !field.is_nullable() && column.logical_null_count() > 0 && !matches!(field.data_type(), DataType::Null) {
            panic!("finding: {what}: non-nullable column {:?} returned nulls", field.name());
        }
    }
}

/// Runs `read` and consumes its batches (up to [`MAX_ROWS`] rows or [`MAX_BATCHES`] batches),
/// checking each; `expected_rows` is the number of rows the read must return if it succeeds.
async fn drain(read: ReadBuilder, batch_size: Option<usize>, expected_rows: u64, what: &str) {
    let Some(mut stream) = checked(read.stream().await, what) else { return };
    let schema = stream.schema().clone();
    let (mut rows, mut batches) = (0u64, 0usize);
    while let Some(batch) = stream.next().await {
        let Some(batch) = checked(batch, what) else { return };
        check_batch(&batch, &schema, batch_size, what);
        rows += batch.num_rows() as u64;
        batches += 1;
        if rows >= MAX_ROWS as u64 || batches >= MAX_BATCHES {
            // Dropping the stream part way is a read path too (cancellation).
            return;
        }
    }
    if rows != expected_rows {
        panic!("finding: {what}: {rows} rows returned of the {expected_rows} asked");
    }
}

/// Runs a filtered read to the end (up to [`MAX_BATCHES`] batches), checking each batch.
async fn filtered(read: ReadBuilder, what: &str) {
    let Some(mut stream) = checked(read.stream().await, what) else { return };
    let schema = stream.schema().clone();
    let mut batches = 0;
    while let Some(batch) = stream.next().await {
        let Some(batch) = checked(batch, what) else { return };
        check_batch(&batch, &schema, None, what);
        batches += 1;
        if batches >= MAX_BATCHES {
            return;
        }
    }
}

/// A non-zero count.
fn nz(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN)
}

/// Read options of a tiny I/O budget: one read in flight, `buffer` bytes of I/O buffer, one
/// batch decoded at a time.
fn tight(buffer: u64) -> ReadOptions {
    ReadOptions {
        io_depth: Some(IoDepth::Fixed(NonZeroUsize::MIN)),
        io_buffer: Some(ByteCount(buffer)),
        decode_parallelism: Some(NonZeroUsize::MIN),
        ..ReadOptions::default()
    }
}

/// Opens `data` and reads it every way. Returns whether it opened.
async fn read_all_ways(data: Bytes) -> bool {
    let opened = read_file_all_ways(data.clone()).await;
    if opened {
        read_as_dataset(data).await;
    }
    opened
}

/// Reads `data` as a dataset of two copies of it (see the crate documentation).
async fn read_as_dataset(data: Bytes) {
    let storage = StorageOptions::new();
    let copies = [format!("{DATASET_LOCATION}part-0.leaf"), format!("{DATASET_LOCATION}part-1.leaf")];
    for copy in &copies {
        let stored = match Location::parse(copy) {
            Ok(location) => location.write_all(data.clone(), &storage).await,
            Err(e) => Err(e),
        };
        if let Err(e) = stored {
            panic!("cannot store the dataset's copy {copy}: {e}");
        }
    }
    let source = DatasetSource::Files(copies.to_vec());
    let Some(dataset) = checked(Dataset::open(source, DatasetOptions::default()).await, "dataset open") else {
        return;
    };
    let schema = dataset.schema().clone();
    let rows = dataset.num_rows();
    if let Some(stream) = checked(dataset.read().with_batch_size(nz(5)).stream().await, "dataset scan") {
        let mut stream = stream.take(MAX_BATCHES);
        let mut seen = 0u64;
        let mut batches = 0;
        while let Some(batch) = stream.next().await {
            let Some(batch) = checked(batch, "dataset scan") else { return };
            check_batch(&batch, &schema, Some(5), "dataset scan");
            seen += batch.num_rows() as u64;
            batches += 1;
        }
        if batches < MAX_BATCHES && seen != rows {
            panic!("finding: dataset scan: {seen} rows returned of the {rows} asked");
        }
    }
    checked(dataset.read().count_rows().await, "dataset count");
    checked(dataset.read().plan().await, "dataset plan");
    if rows > 0 {
        let indices = [rows - 1, 0, rows / 2, rows / 2 - 1.min(rows / 2)];
        if let Some(batch) = checked(dataset.read().take(&indices).await, "dataset take") {
            check_batch(&batch, &batch.schema(), None, "dataset take");
            if batch.num_rows() != indices.len() {
                panic!("finding: dataset take: {} rows returned for {} indices", batch.num_rows(), indices.len());
            }
        }
    }
    if let Some(first) = schema.fields().first() {
        let column = vec![first.name().clone()];
        let predicate = Predicate::IsNotNull(column.clone()).or(Predicate::IsNull(column).not());
        let read = dataset.read().with_filter(predicate).with_options(tight(1));
        if let Some(stream) = checked(read.stream().await, "dataset filtered read") {
            let mut stream = stream.take(MAX_BATCHES);
            while let Some(batch) = stream.next().await {
                let Some(batch) = checked(batch, "dataset filtered read") else { return };
                check_batch(&batch, &schema, None, "dataset filtered read");
            }
        }
    }
}

/// Opens `data` as one file and reads it every way. Returns whether it opened.
async fn read_file_all_ways(data: Bytes) -> bool {
    let reader: Arc<dyn RangeReader> = Arc::new(MemoryReader::new(data, LOCATION));
    let Some(file) = checked(FileReader::open(reader).await, "open") else { return false };
    let num_rows = file.num_rows();
    let schema = file.schema().clone();
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();

    // Metadata, statistics and plans: every column's pages described, bounds, predicates.
    checked(file.metadata().await, "metadata");
    for name in names.iter().take(8) {
        checked(file.column_bounds(name).await, "column bounds");
    }
    // Null tests of any column, comparisons of integer-ordered ones: filters that bind.
    let parts: Vec<Predicate> = schema
        .fields()
        .iter()
        .take(4)
        .flat_map(|field| {
            let column = vec![field.name().clone()];
            let integer = field.data_type().is_integer() || field.data_type().is_temporal();
            let zero = Scalar::new(Arc::new(Int64Array::from(vec![0])) as ArrayRef);
            [
                Some(Predicate::IsNotNull(column.clone())),
                integer.then(|| Predicate::compare(field.name(), CompareOp::Gt, zero)),
            ]
        })
        .flatten()
        .collect();
    let filter = Predicate::And(parts);
    if let Some((selection, _)) =
        checked(file.rows_matching_statistics(&filter, &RowSelection::all(num_rows)).await, "statistics")
    {
        let rows = selection.num_rows();
        drain(file.read().with_selection(selection), None, rows, "rows matching statistics").await;
    }
    checked(file.read().plan().await, "plan of a full scan");

    // Full scans: defaults; batches of one row in a one-byte I/O buffer; batches of 7 rows in
    // 4 KiB with object store settings (coalescing far ranges, adaptive depth).
    let all = num_rows;
    drain(file.read(), None, all, "full scan").await;
    drain(file.read().with_options(tight(1)).with_batch_size(nz(1)), Some(1), all, "full scan, 1-byte budget").await;
    drain(
        file.read()
            .with_io_options(IoOptions::OBJECT_STORE)
            .with_options(ReadOptions { io_buffer: Some(ByteCount(4096)), ..ReadOptions::default() })
            .with_batch_size(nz(7)),
        Some(7),
        all,
        "full scan, 4 KiB budget, object store settings",
    )
    .await;

    // Projections: the top-level columns in reverse order (a repeat included), every other one;
    // the nested leaf paths (dotted), alone and with a top-level column.
    let mut reversed: Vec<String> = names.iter().rev().cloned().collect();
    if let Some(first) = names.first() {
        reversed.push(first.clone());
    }
    drain(file.read().with_columns(reversed).with_batch_size(nz(3)), Some(3), all, "projection, reversed").await;
    let every_other: Vec<String> = names.iter().step_by(2).cloned().collect();
    drain(file.read().with_columns(every_other.clone()), None, all, "projection, every other").await;
    let mut nested: Vec<String> = file.column_paths().into_values().filter(|p| p.contains('.')).collect();
    nested.sort();
    nested.truncate(8);
    if !nested.is_empty() {
        drain(file.read().with_columns(nested.clone()).with_batch_size(nz(5)), Some(5), all, "nested paths").await;
        let mut mixed = nested.clone();
        mixed.truncate(2);
        mixed.extend(names.last().cloned());
        drain(
            file.read().with_columns(mixed).with_options(tight(1)).with_batch_size(nz(2)),
            Some(2),
            all,
            "nested paths and a column, 1-byte budget",
        )
        .await;
    }

    // Row ranges: most of the file, one row in the middle, the last row, an empty range.
    let mut ranges = vec![0..0];
    if num_rows > 0 {
        ranges.extend([1.min(num_rows)..num_rows - 1.min(num_rows - 1), num_rows / 2..num_rows / 2 + 1]);
        ranges.push(num_rows - 1..num_rows);
    }
    for (i, range) in ranges.into_iter().enumerate() {
        let rows = range.end - range.start;
        let read = file.read().with_row_range(range);
        match i % 2 {
            0 => drain(read.with_batch_size(nz(4)), Some(4), rows, "row range").await,
            _ => drain(read.with_options(tight(1)).with_batch_size(nz(1)), Some(1), rows, "row range, 1-byte").await,
        }
    }

    // Scattered rows (a selection), and takes: sorted, unsorted with repeats, of every column
    // and of a projection, with defaults and a tiny budget.
    if num_rows > 0 {
        let last = num_rows - 1;
        let mut sorted: Vec<u64> = vec![0, 1, 2, last / 3, last / 2, last / 2 + 1, last - 1, last];
        sorted.retain(|i| *i <= last);
        sorted.sort_unstable();
        sorted.dedup();
        let rows = sorted.len() as u64;
        drain(
            file.read().with_selection(RowSelection::from_sorted_indices(&sorted)).with_batch_size(nz(2)),
            Some(2),
            rows,
            "scattered rows",
        )
        .await;
        let unsorted: Vec<u64> = [last, 0, last / 2, last / 2, last, 1.min(last), last / 3, 0].to_vec();
        for (indices, what) in [(&sorted, "take, sorted"), (&unsorted, "take, unsorted with repeats")] {
            take(file.read(), indices, what).await;
            take(file.read().with_options(tight(1)).with_batch_size(nz(1)), indices, what).await;
            take(file.read().with_columns(every_other.clone()), indices, what).await;
        }
        if !nested.is_empty() {
            take(file.read().with_columns(nested.clone()), &unsorted, "take of nested paths").await;
        }
    }

    // Filtered reads: zone maps (or page statistics) rule zones out, the filter column is
    // evaluated, the others read by a scan or a take. A damaged zone map may drop rows, so
    // only the batches are checked, not their count.
    if let Some(first) = schema.fields().first() {
        let column = vec![first.name().clone()];
        let predicate = Predicate::IsNotNull(column.clone()).or(Predicate::IsNull(column).not());
        filtered(file.read().with_filter(predicate.clone()), "filtered read").await;
        filtered(file.read().with_filter(predicate.clone()).with_options(tight(1)), "filtered read, 1-byte budget")
            .await;
        if num_rows > 0 {
            let what = "filtered take";
            if let Some(batch) = checked(file.read().with_filter(predicate).take(&[num_rows - 1, 0]).await, what) {
                check_batch(&batch, &batch.schema(), None, what);
            }
        }
    }

    // Dictionary-preserving reads of the string, binary and dictionary columns.
    let dictionary_columns: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| {
            is_variable_width(f.data_type())
                || matches!(f.data_type(), DataType::FixedSizeBinary(_) | DataType::Dictionary(..))
        })
        .map(|f| f.name().clone())
        .collect();
    if !dictionary_columns.is_empty() {
        let read = || file.read().with_columns(dictionary_columns.clone());
        drain(read().with_dictionary_columns(dictionary_columns.clone()), None, all, "dictionary columns").await;
        drain(
            read().with_dictionary_columns(dictionary_columns.clone()).with_options(tight(1)).with_batch_size(nz(3)),
            Some(3),
            all,
            "dictionary columns, 1-byte budget",
        )
        .await;
        if num_rows > 0 {
            let range = num_rows / 2..num_rows;
            let rows = range.end - range.start;
            let read = read().with_row_range(range).with_dictionary_columns(dictionary_columns.clone());
            drain(read.with_batch_size(nz(2)), Some(2), rows, "dictionary columns, row range").await;
            let read = file.read().with_columns(dictionary_columns.clone());
            take(read.with_dictionary_columns(dictionary_columns), &[num_rows - 1, 0], "dictionary take").await;
        }
    }

    // Strings and binaries, at any depth, as views over the decoded bytes (arrays built
    // without Arrow's validation, so `check_batch`'s full validation is the test).
    drain(file.read().with_string_view(true), None, all, "string views").await;
    drain(
        file.read().with_string_view(true).with_options(tight(1)).with_batch_size(nz(3)),
        Some(3),
        all,
        "string views, 1-byte budget",
    )
    .await;
    if num_rows > 0 {
        let indices = [num_rows - 1, 0, num_rows / 2];
        take(file.read().with_string_view(true), &indices, "take of string views").await;
    }
    true
}

/// Takes `indices` with `read` and checks the result (one row per index, valid arrays).
async fn take(read: ReadBuilder, indices: &[u64], what: &str) {
    let Some(batch) = checked(read.take(indices).await, what) else { return };
    check_batch(&batch, &batch.schema(), None, what);
    if batch.num_rows() != indices.len() {
        panic!("finding: {what}: {} rows returned for {} indices", batch.num_rows(), indices.len());
    }
}

/// Writes every seed into `dir` (created if missing) as `NAME.leaf`; returns how many.
///
/// # Errors
/// A message naming the seed or the file that could not be written.
pub fn write_seeds(dir: &std::path::Path) -> Result<usize, String> {
    let seeds = runtime().block_on(seeds::all()).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for seed in &seeds {
        let path = dir.join(format!("{}.leaf", seed.name));
        std::fs::write(&path, &seed.bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(seeds.len())
}
