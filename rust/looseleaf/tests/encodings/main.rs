//! Lightweight encodings, compression, statistics and dictionary reads, checked against the data
//! that was written (never against another output of the reader):
//!
//! 1. round trips of every encoding, forced per column and per file and chosen automatically,
//!    over every read path (full scans, row ranges, `take`, a one-byte I/O budget), with the
//!    edge cases of each encoding;
//! 2. forcing an encoding that cannot store a page fails at write time and leaves no file;
//! 3. dictionary arrays in and out;
//! 4. LZ4 and Zstandard pages, damaged compressed bytes and hostile decompressed sizes;
//! 5. per-page statistics, computed again here from each page's rows;
//! 6. hostile encoding trees (metadata edited with valid checksums, or page bytes edited): an
//!    error or data, never a panic or a hang;
//! 7. a golden file of the metadata of a small table, so that format changes are deliberate.
//!
//! This file holds what the suites share: writing a table, reading it every way and comparing
//! with what was written ([`check_reads`], [`assert_same`]), the encodings of a file's pages
//! ([`encoded_as`]), forced encoding policies ([`forced`], [`forced_flat`]), and reads of damaged
//! files ([`read_damaged`]). The values are drawn by the shared generator
//! (`looseleaf_testing::generate`, its shapes above all); which of them each encoding stores when
//! forced is [`columns`].

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;
use common::assertions::{assert_batch_sizes, assert_batches_equal};
use common::files::wait_for_entries;
use common::layout::column_metadata;
use common::reads::{read_to_end, with_random_settings};
use common::rewrite::rewrite_metadata;
use common::{nz, runtime};

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, UInt32Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, Int64Array, PrimitiveArray, RecordBatch,
    RecordBatchOptions, StringArray, UInt32Array, UInt64Array,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow_select::take::{take, take_record_batch};
use looseleaf::format::proto::encoding::Kind;
use looseleaf::format::proto::{Encoding, PageMetadata};
use looseleaf::io::IoDepth;
use looseleaf::{
    ByteCount, Compression, EncodingKind, EncodingPolicy, Error, FileReader, FileWriter, FinishedFile, IoOptions,
    RowSelection, StatValue, WriterOptions,
};
use looseleaf_testing::MemoryReader;
use looseleaf_testing::generate::{
    BYTES_TYPES, BytesShape, ColumnGen, FloatShape, INT_SHAPES, IntShape, ValueMode, all_flat_types, bool_array,
    bytes_array, bytes_values, dictionary_array, dictionary_values, encoded_types, float_array, int_array, int_bounds,
    int_layout, int_types, int_values, is_utf8, other_fixed_types, random_array, random_validity, shaped_array,
    split_randomly, text,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, RngCore};

mod columns;
mod compression;
mod dictionaries;
mod forcing;
mod golden;
mod hostile;
mod round_trips;
mod statistics;

use columns::columns_for;

// ---------------------------------------------------------------------------------------------
// Largest allocation, to check that hostile sizes are not allocated

#[global_allocator]
static ALLOCATOR: common::alloc::GuardedAllocator = common::alloc::GuardedAllocator::new(1 << 30);

/// No test of this binary allocates more than this at once; a hostile size allocated as claimed
/// would (or would be refused, failing the test).
const MAX_EXPECTED_ALLOCATION: usize = 256 << 20;

// ---------------------------------------------------------------------------------------------
// Harness

const MIB: u64 = 1 << 20;

fn schema_of(columns: &[(String, ArrayRef)]) -> SchemaRef {
    Arc::new(Schema::new(
        columns.iter().map(|(name, array)| Field::new(name, array.data_type().clone(), true)).collect::<Vec<_>>(),
    ))
}

fn table_of(columns: &[(String, ArrayRef)]) -> RecordBatch {
    let num_rows = columns.first().map_or(0, |(_, a)| a.len());
    let options = RecordBatchOptions::new().with_row_count(Some(num_rows));
    RecordBatch::try_new_with_options(schema_of(columns), columns.iter().map(|(_, a)| a.clone()).collect(), &options)
        .unwrap()
}

/// Writes `batches`, returning the writer's errors instead of panicking.
async fn try_write(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    options: WriterOptions,
) -> looseleaf::Result<FinishedFile> {
    let mut writer = FileWriter::create_path(path, schema.clone(), options).await?;
    for batch in batches {
        writer.write(batch).await?;
    }
    writer.finish().await
}

async fn write_table(path: &Path, table: &RecordBatch, options: WriterOptions) {
    try_write(path, &table.schema(), std::slice::from_ref(table), options).await.unwrap();
}

fn random_batch_size(rng: &mut StdRng) -> usize {
    match rng.random_range(0..4) {
        0 => rng.random_range(1..=3),
        1 => rng.random_range(4..=300),
        2 => rng.random_range(301..=5000),
        _ => 100_000,
    }
}

/// Compares what was read with what was written: Arrow equality, and the bits of every float
/// (NaN payloads, the sign of zero).
#[track_caller]
fn assert_same(actual: &RecordBatch, expected: &RecordBatch, what: &str) {
    assert_batches_equal(actual, expected, what);
    for (i, field) in expected.schema().fields().iter().enumerate() {
        let width = match field.data_type() {
            DataType::Float16 => 2,
            DataType::Float32 => 4,
            DataType::Float64 => 8,
            _ => continue,
        };
        let (a, e) = (actual.column(i), expected.column(i));
        let (a_bytes, e_bytes) = (value_bytes(a, width), value_bytes(e, width));
        for row in (0..e.len()).filter(|r| e.is_valid(*r)) {
            assert_eq!(
                a_bytes[row * width..(row + 1) * width],
                e_bytes[row * width..(row + 1) * width],
                "{what}: column {:?} row {row}: float bits differ",
                field.name()
            );
        }
    }
}

/// The value bytes of the rows of a fixed-width array (from its offset).
fn value_bytes(array: &ArrayRef, width: usize) -> Vec<u8> {
    let data = array.to_data();
    data.buffers()[0].as_slice()[data.offset() * width..(data.offset() + data.len()) * width].to_vec()
}

/// Reads `table`'s file every way and compares with `table`: a full scan, row ranges, `take`
/// of unsorted repeated rows, and reads under a one-byte I/O budget, with random batch sizes
/// and I/O settings.
async fn check_reads(rng: &mut StdRng, reader: &FileReader, table: &RecordBatch, what: &str) {
    let n = table.num_rows();
    assert_eq!(reader.num_rows(), n as u64, "{what}: row count");

    let batch_size = random_batch_size(rng);
    let read = with_random_settings(rng, reader.read().with_batch_size(nz(batch_size)));
    let out = read_to_end(read).await.unwrap_or_else(|e| panic!("{what}: full scan failed: {e}"));
    assert_batch_sizes(&out.batches, batch_size, n, what);
    assert_same(&out.concat(), table, &format!("{what}: full scan in batches of {batch_size}"));

    for _ in 0..3 {
        let start = rng.random_range(0..=n);
        let end = rng.random_range(start..=n);
        let batch_size = random_batch_size(rng);
        let read = with_random_settings(
            rng,
            reader.read().with_row_range(start as u64..end as u64).with_batch_size(nz(batch_size)),
        );
        let out = read_to_end(read).await.unwrap_or_else(|e| panic!("{what}: rows {start}..{end} failed: {e}"));
        assert_same(&out.concat(), &table.slice(start, end - start), &format!("{what}: rows {start}..{end}"));
    }

    if n > 0 {
        let mut indices: Vec<u64> = (0..rng.random_range(1..=30)).map(|_| rng.random_range(0..n as u64)).collect();
        indices.extend_from_slice(&indices.clone()[..indices.len().min(3)]);
        indices.push(n as u64 - 1);
        indices.shuffle(rng);
        let taken = reader.take(&indices, None).await.unwrap_or_else(|e| panic!("{what}: take failed: {e}"));
        let expected = take_record_batch(table, &UInt64Array::from(indices.clone())).unwrap();
        assert_same(&taken, &expected, &format!("{what}: take {indices:?}"));
    }

    let tiny = IoOptions { depth: IoDepth::Fixed(nz(1)), buffer: ByteCount(1), ..IoOptions::LOCAL };
    let batch_size = random_batch_size(rng);
    let out = read_to_end(reader.read().with_io_options(tiny).with_batch_size(nz(batch_size)))
        .await
        .unwrap_or_else(|e| panic!("{what}: scan with a one-byte budget failed: {e}"));
    assert_same(&out.concat(), table, &format!("{what}: scan with a one-byte budget"));
    let start = n / 3;
    let out = read_to_end(reader.read().with_io_options(tiny).with_row_range(start as u64..n as u64))
        .await
        .unwrap_or_else(|e| panic!("{what}: range with a one-byte budget failed: {e}"));
    assert_same(&out.concat(), &table.slice(start, n - start), &format!("{what}: range with a one-byte budget"));
}

/// The encoding of each page of each column, as `describe` prints it, by field name.
async fn page_encodings(reader: &FileReader) -> Vec<(String, Vec<String>)> {
    let metadata = reader.metadata().await.unwrap();
    metadata.columns.iter().map(|c| (c.field.clone(), c.pages.iter().map(|p| p.encoding.clone()).collect())).collect()
}

/// The encoding of a page's values, below its validity.
fn values_encoding(describe: &str) -> &str {
    describe.strip_prefix("nullable(").and_then(|s| s.strip_suffix(')')).unwrap_or(describe)
}

/// Whether a page's values are stored with `kind` at the top of their encoding tree.
fn encoded_as(describe: &str, kind: EncodingKind) -> bool {
    let values = values_encoding(describe);
    match kind {
        EncodingKind::Plain => {
            ["plain(", "bitmap", "binary(", "fixed_size_list("].iter().any(|p| values.starts_with(p))
        }
        EncodingKind::Constant => values == "constant",
        EncodingKind::Bitpacked => values.starts_with("bitpacked("),
        EncodingKind::Delta => values.starts_with("delta("),
        EncodingKind::Rle => values.starts_with("rle("),
        EncodingKind::Dictionary => values.starts_with("dictionary("),
        EncodingKind::Fsst => values.starts_with("fsst("),
        EncodingKind::AlpRd => values.starts_with("alp_rd("),
        EncodingKind::Alp => values.starts_with("alp("),
        EncodingKind::OnPair => values.starts_with("onpair("),
    }
}

fn forced(kind: EncodingKind) -> EncodingPolicy {
    EncodingPolicy { force: Some(kind), forbid: Default::default() }
}

/// Forces `kind` and forbids every other encoding below it, so that the children of the forced
/// node (run ends, dictionary indices, FSST codes' offsets...) are plain bytes a test can edit.
fn forced_flat(kind: EncodingKind) -> EncodingPolicy {
    use EncodingKind::*;
    let forbid = [Constant, Bitpacked, Delta, Rle, Dictionary, Fsst, AlpRd, Alp, OnPair]
        .into_iter()
        .filter(|k| *k != kind)
        .collect();
    EncodingPolicy { force: Some(kind), forbid }
}

// Damaged files: the harness the compression and hostile suites share.

/// Runs `read` in a task of its own with a time limit: a panic or a hang fails the test with
/// `what`, an error is returned.
async fn guarded<T: Send + 'static>(
    what: &str,
    read: impl std::future::Future<Output = looseleaf::Result<T>> + Send + 'static,
) -> Outcome<T> {
    match tokio::time::timeout(Duration::from_secs(60), tokio::spawn(read)).await {
        Err(_) => Outcome::Hung,
        Ok(Err(join)) => Outcome::Panicked(format!("{what}: {join}")),
        Ok(Ok(Err(Error::Internal(message)))) if message.contains("panicked") => Outcome::TaskPanicked(message),
        Ok(Ok(result)) => Outcome::Done(result),
    }
}

/// How a read of a damaged file ended.
#[derive(Debug)]
enum Outcome<T> {
    /// With data or an error.
    Done(looseleaf::Result<T>),
    /// The read panicked.
    Panicked(String),
    /// A task of the reader panicked: the read returned the panic as an internal error.
    TaskPanicked(String),
    /// The read did not end within a minute.
    Hung,
}

/// Opens the file in `bytes` and reads it whole, a row range of it, and some rows by `take`;
/// returns the full read.
async fn read_everything(bytes: Vec<u8>, location: String) -> looseleaf::Result<RecordBatch> {
    let reader = FileReader::open(Arc::new(MemoryReader::new(bytes, location))).await?;
    let all = read_to_end(reader.read().with_batch_size(nz(500))).await?.concat();
    let n = reader.num_rows();
    if n > 2 {
        read_to_end(reader.read().with_row_range(1..n - 1).with_batch_size(nz(333))).await?;
        let tiny = IoOptions { depth: IoDepth::Fixed(nz(1)), buffer: ByteCount(1), ..IoOptions::LOCAL };
        read_to_end(reader.read().with_row_range(n / 2..n).with_io_options(tiny)).await?;
        reader.take(&[n - 1, 0, n / 2, n / 2 + 1, 3], None).await?;
    }
    Ok(all)
}

/// Reads a damaged file every way: an error (not a caught panic) or data of the right shape.
/// Returns the error, if any.
async fn read_damaged(bytes: Vec<u8>, rows: usize, what: &str) -> Option<Error> {
    let location = format!("memory://{}.leaf", what.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    match guarded(what, read_everything(bytes, location.clone())).await {
        Outcome::Done(Ok(batch)) => {
            assert_eq!(batch.num_rows(), rows, "{what}: read {} rows, not {rows}", batch.num_rows());
            None
        }
        Outcome::Done(Err(e)) => {
            assert!(!matches!(e, Error::Internal(_)), "{what}: internal error: {e}");
            assert!(e.to_string().contains(&location), "{what}: the error does not name the file: {e}");
            Some(e)
        }
        Outcome::Panicked(message) | Outcome::TaskPanicked(message) => panic!("{what}: the read panicked: {message}"),
        Outcome::Hung => panic!("{what}: the read hung"),
    }
}
