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

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;
use common::nz;
use looseleaf::ByteCount;
use looseleaf::io::IoDepth;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, UInt32Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, DictionaryArray, FixedSizeListArray, Int64Array,
    LargeBinaryArray, LargeStringArray, PrimitiveArray, RecordBatch, RecordBatchOptions, StringArray, StringViewArray,
    UInt64Array, make_array,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Field, IntervalUnit, Schema, SchemaRef, TimeUnit};
use arrow_select::take::{take, take_record_batch};
use common::{
    ColumnGen, MemoryReader, ValueMode, all_flat_types, assert_batch_sizes, assert_batches_equal, column_metadata,
    random_array, read_to_end, rewrite_metadata, runtime, split_randomly, wait_for_entries, with_random_settings,
};
use looseleaf::format::proto::encoding::Kind;
use looseleaf::format::proto::{Encoding, PageMetadata};
use looseleaf::{
    Compression, EncodingKind, EncodingPolicy, Error, FileReader, FileWriter, FinishedFile, IoOptions, RowSelection,
    StatValue, WriterOptions,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, RngCore};

mod compression;
mod dictionaries;
mod forcing;
mod golden;
mod hostile;
mod round_trips;
mod statistics;

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

// ---------------------------------------------------------------------------------------------
// Generators

/// Types stored as integers (the integer encodings apply).
fn int_types() -> Vec<DataType> {
    use DataType::*;
    vec![
        Int8,
        Int16,
        Int32,
        Int64,
        UInt8,
        UInt16,
        UInt32,
        UInt64,
        Date32,
        Date64,
        Time32(TimeUnit::Millisecond),
        Time64(TimeUnit::Nanosecond),
        Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Duration(TimeUnit::Second),
        Interval(IntervalUnit::YearMonth),
        Decimal32(9, 2),
        Decimal64(18, 3),
        Decimal128(38, 5),
    ]
}

/// Width in bytes and signedness of an integer type.
fn int_layout(data_type: &DataType) -> (usize, bool) {
    let width = data_type.primitive_width().unwrap();
    let signed = !matches!(data_type, DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64);
    (width, signed)
}

/// Smallest and largest value of an integer type.
fn int_bounds(data_type: &DataType) -> (i128, i128) {
    let (width, signed) = int_layout(data_type);
    let bits = width as u32 * 8;
    match (bits, signed) {
        (128, _) => (i128::MIN, i128::MAX),
        (_, true) => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
        (_, false) => (0, (1i128 << bits) - 1),
    }
}

/// How integer values are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IntShape {
    /// Uniform over the type.
    Random,
    /// The type's extremes (and random values): the widest bit width.
    Extremes,
    /// A range of 200 somewhere in the type.
    Small,
    /// Within 1000 of the smallest value (most negative for signed types).
    NearMin,
    /// Within 1000 of the largest value (`u64::MAX`, `i128::MAX`...).
    NearMax,
    /// Non-decreasing, small steps (duplicates included).
    Sorted,
    /// Non-decreasing across the whole type, extremes included.
    SortedWide,
    /// Non-increasing.
    Reverse,
    /// Runs of up to 300 equal values.
    Runs,
    /// One value.
    Constant,
}

const INT_SHAPES: [IntShape; 10] = [
    IntShape::Random,
    IntShape::Extremes,
    IntShape::Small,
    IntShape::NearMin,
    IntShape::NearMax,
    IntShape::Sorted,
    IntShape::SortedWide,
    IntShape::Reverse,
    IntShape::Runs,
    IntShape::Constant,
];

fn int_values(rng: &mut StdRng, len: usize, shape: IntShape, (lo, hi): (i128, i128)) -> Vec<i128> {
    let any = |rng: &mut StdRng| {
        if lo == i128::MIN && hi == i128::MAX { rng.random::<i128>() } else { rng.random_range(lo..=hi) }
    };
    let near = |rng: &mut StdRng, from: i128, to: i128| {
        let from = from.clamp(lo, hi);
        rng.random_range(from..=to.clamp(from, hi))
    };
    match shape {
        IntShape::Random => (0..len).map(|_| any(rng)).collect(),
        IntShape::Extremes => {
            let mut out: Vec<i128> = (0..len)
                .map(|i| match i % 4 {
                    0 => lo,
                    1 => hi,
                    2 => *[lo + 1, hi - 1, 0.clamp(lo, hi), (-1).clamp(lo, hi)].choose(rng).unwrap(),
                    _ => any(rng),
                })
                .collect();
            out.shuffle(rng);
            out
        }
        IntShape::Small => {
            let base = near(rng, lo, hi.saturating_sub(200));
            (0..len).map(|_| base + rng.random_range(0..200)).collect()
        }
        IntShape::NearMin => (0..len).map(|_| near(rng, lo, lo.saturating_add(1000))).collect(),
        IntShape::NearMax => (0..len).map(|_| near(rng, hi.saturating_sub(1000), hi)).collect(),
        IntShape::Sorted => {
            let mut value = near(rng, lo, hi.saturating_sub(6 * len as i128));
            (0..len)
                .map(|_| {
                    value = value.saturating_add(rng.random_range(0..=5)).min(hi);
                    value
                })
                .collect()
        }
        IntShape::SortedWide => {
            let mut out: Vec<i128> = (0..len).map(|_| any(rng)).collect();
            if len >= 2 {
                out[0] = lo;
                out[1] = hi;
            }
            out.sort_unstable();
            out
        }
        IntShape::Reverse => {
            let mut out = int_values(rng, len, IntShape::Sorted, (lo, hi));
            out.reverse();
            out
        }
        IntShape::Runs => {
            let mut out = Vec::with_capacity(len);
            while out.len() < len {
                let value = any(rng);
                let run = rng.random_range(1..=300).min(len - out.len());
                out.extend(std::iter::repeat_n(value, run));
            }
            out
        }
        IntShape::Constant => vec![any(rng); len],
    }
}

/// An array of `data_type` (any fixed-width type) from its value bytes.
fn fixed_array(data_type: &DataType, len: usize, bytes: Vec<u8>, nulls: Option<NullBuffer>) -> ArrayRef {
    let data = ArrayDataBuilder::new(data_type.clone())
        .len(len)
        .add_buffer(Buffer::from_vec(bytes))
        .nulls(nulls)
        .align_buffers(true)
        .build()
        .unwrap();
    make_array(data)
}

/// An array of an integer type holding `values` (truncated to the type's width).
fn int_array(data_type: &DataType, values: &[i128], nulls: Option<NullBuffer>) -> ArrayRef {
    let (width, _) = int_layout(data_type);
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()[..width].to_vec()).collect();
    fixed_array(data_type, values.len(), bytes, nulls)
}

/// Null patterns: none, sparse, dense, all, or a block of nulls spanning whole pages.
fn random_validity(rng: &mut StdRng, len: usize) -> Option<NullBuffer> {
    let valid: Vec<bool> = match rng.random_range(0..6) {
        0 | 1 => return None,
        2 => (0..len).map(|_| !rng.random_bool(0.02)).collect(),
        3 => (0..len).map(|_| !rng.random_bool(0.6)).collect(),
        4 => vec![false; len],
        _ => (0..len).map(|i| !(len / 4..len * 3 / 4).contains(&i) && !rng.random_bool(0.1)).collect(),
    };
    let nulls = NullBuffer::from(valid);
    (nulls.null_count() > 0).then_some(nulls)
}

/// Bit patterns of special floats of `width` bytes: NaNs (quiet, signalling, negative), both
/// zeros, both infinities, the smallest subnormal, the largest finite value, one.
fn special_floats(width: usize) -> Vec<u64> {
    match width {
        2 => vec![0x7e00, 0x7c01, 0xfe00, 0x8000, 0, 0x7c00, 0xfc00, 1, 0x7bff, 0x3c00],
        4 => vec![
            0x7fc0_0000,
            0x7f80_0001,
            0xffc0_0000,
            0x8000_0000,
            0,
            0x7f80_0000,
            0xff80_0000,
            1,
            0x7f7f_ffff,
            0x3f80_0000,
        ],
        _ => vec![
            0x7ff8_0000_0000_0000,
            0x7ff0_0000_0000_0001,
            0xfff8_0000_0000_0000,
            0x8000_0000_0000_0000,
            0,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            1,
            0x7fef_ffff_ffff_ffff,
            0x3ff0_0000_0000_0000,
        ],
    }
}

/// How float values are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FloatShape {
    /// Any bit pattern.
    RandomBits,
    /// Special values mixed with random ones.
    Specials,
    /// Runs of special values.
    Runs,
    /// One special value (NaN, -0.0...).
    Constant,
    /// Standard normal values (embeddings), with a few random bit patterns among them.
    Normal,
    /// Decimals (prices with 0 to 3 digits after the point), with a few specials among them.
    Decimals,
}

fn float_array(
    rng: &mut StdRng,
    data_type: &DataType,
    len: usize,
    shape: FloatShape,
    nulls: Option<NullBuffer>,
) -> ArrayRef {
    let width = data_type.primitive_width().unwrap();
    let specials = special_floats(width);
    let constant = *specials.choose(rng).unwrap();
    let mut bits: Vec<u64> = Vec::with_capacity(len);
    while bits.len() < len {
        match shape {
            FloatShape::RandomBits => bits.push(rng.random()),
            FloatShape::Specials => {
                bits.push(if rng.random_bool(0.5) { *specials.choose(rng).unwrap() } else { rng.random() })
            }
            FloatShape::Runs => {
                let value = *specials.choose(rng).unwrap();
                bits.extend(std::iter::repeat_n(value, rng.random_range(1..=200)));
            }
            FloatShape::Constant => bits.push(constant),
            FloatShape::Normal if rng.random_bool(0.002) => bits.push(rng.random()),
            FloatShape::Decimals if rng.random_bool(0.01) => bits.push(*specials.choose(rng).unwrap()),
            FloatShape::Decimals => {
                let digits = rng.random_range(0..=3);
                let x = rng.random_range(-100_000i64..1_000_000) as f64 / 10f64.powi(digits);
                bits.push(match width {
                    2 => half::f16::from_f64(x).to_bits() as u64,
                    4 => (x as f32).to_bits() as u64,
                    _ => x.to_bits(),
                });
            }
            FloatShape::Normal => {
                // Box-Muller.
                let (u, v): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random());
                let x = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                bits.push(match width {
                    2 => half::f16::from_f64(x).to_bits() as u64,
                    4 => (x as f32).to_bits() as u64,
                    _ => x.to_bits(),
                });
            }
        }
    }
    bits.truncate(len);
    let bytes = bits.iter().flat_map(|b| b.to_le_bytes()[..width].to_vec()).collect();
    fixed_array(data_type, len, bytes, nulls)
}

const WORDS: &[&str] = &[
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "looseleaf",
    "column",
    "page",
    "encoding",
    "packing",
    "dictionary",
    "string",
    "symbol",
    "table",
    "value",
    "été",
    "日本",
    "🦀",
    "naïve",
    "",
];

/// Text of at least `len` bytes made of common words (what FSST compresses well).
fn text(rng: &mut StdRng, len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        out.push_str(WORDS.choose(rng).unwrap());
        out.push(' ');
    }
    out
}

/// How string and binary values are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BytesShape {
    /// Random lengths and contents (non-UTF-8 bytes for binaries).
    Random,
    /// A handful of distinct values.
    FewDistinct,
    /// Text, compressible.
    Text,
    /// Mostly empty values.
    Empty,
    /// Text with a few values longer than `long` bytes.
    Long(usize),
    /// Text, and values holding every byte value (every character below 128 and some above
    /// for strings): FSST escapes.
    AllBytes,
    /// Runs of equal values.
    Runs,
    /// One value.
    Constant,
}

fn bytes_values(rng: &mut StdRng, len: usize, shape: BytesShape, utf8: bool) -> Vec<Vec<u8>> {
    let random_value = |rng: &mut StdRng| -> Vec<u8> {
        let n = *[0usize, 1, 5, 12, 13, 40, 300].choose(rng).unwrap();
        if utf8 {
            text(rng, n).into_bytes()
        } else {
            let mut out = vec![0u8; n];
            rng.fill_bytes(&mut out);
            out
        }
    };
    let every_byte = |rng: &mut StdRng| -> Vec<u8> {
        if utf8 {
            let mut chars: Vec<char> =
                (0u8..128).map(char::from).chain(['é', 'ß', '日', '🦀', '\u{7ff}', '\u{ffff}']).collect();
            chars.shuffle(rng);
            chars.into_iter().collect::<String>().into_bytes()
        } else {
            let mut bytes: Vec<u8> = (0..=255).collect();
            bytes.shuffle(rng);
            bytes
        }
    };
    match shape {
        BytesShape::Random => (0..len).map(|_| random_value(rng)).collect(),
        BytesShape::FewDistinct => {
            let pool: Vec<Vec<u8>> = (0..rng.random_range(1..=8)).map(|_| random_value(rng)).collect();
            (0..len).map(|_| pool.choose(rng).unwrap().clone()).collect()
        }
        BytesShape::Text => (0..len)
            .map(|_| {
                let n = rng.random_range(0..120);
                text(rng, n).into_bytes()
            })
            .collect(),
        BytesShape::Empty => (0..len).map(|_| if rng.random_bool(0.9) { vec![] } else { random_value(rng) }).collect(),
        BytesShape::Long(long) => (0..len)
            .map(|i| {
                let n = if i % 37 == 3 { long + rng.random_range(1..100) } else { rng.random_range(0..80) };
                text(rng, n).into_bytes()
            })
            .collect(),
        BytesShape::AllBytes => (0..len)
            .map(|i| {
                if i % 25 == 0 {
                    every_byte(rng)
                } else {
                    let n = rng.random_range(20..200);
                    text(rng, n).into_bytes()
                }
            })
            .collect(),
        BytesShape::Runs => {
            let mut out = Vec::with_capacity(len);
            while out.len() < len {
                let value = random_value(rng);
                let run = rng.random_range(1..=300).min(len - out.len());
                out.extend(std::iter::repeat_n(value, run));
            }
            out
        }
        BytesShape::Constant => vec![random_value(rng); len],
    }
}

fn is_utf8(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// A string or binary array of `data_type`.
fn bytes_array(data_type: &DataType, values: &[Vec<u8>], nulls: Option<&NullBuffer>) -> ArrayRef {
    let valid = |i: usize| nulls.is_none_or(|n| n.is_valid(i));
    let strings = || values.iter().enumerate().map(|(i, v)| valid(i).then(|| std::str::from_utf8(v).unwrap()));
    let binaries = || values.iter().enumerate().map(|(i, v)| valid(i).then_some(v.as_slice()));
    match data_type {
        DataType::Utf8 => Arc::new(StringArray::from_iter(strings())),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from_iter(strings())),
        DataType::Utf8View => Arc::new(StringViewArray::from_iter(strings())),
        DataType::Binary => Arc::new(BinaryArray::from_iter(binaries())),
        DataType::LargeBinary => Arc::new(LargeBinaryArray::from_iter(binaries())),
        DataType::BinaryView => Arc::new(BinaryViewArray::from_iter(binaries())),
        other => panic!("not a string type: {other}"),
    }
}

const BYTES_TYPES: [DataType; 6] = [
    DataType::Utf8,
    DataType::LargeUtf8,
    DataType::Utf8View,
    DataType::Binary,
    DataType::LargeBinary,
    DataType::BinaryView,
];

fn bool_array(rng: &mut StdRng, len: usize, shape: u8, nulls: Option<NullBuffer>) -> ArrayRef {
    let values: Vec<bool> = match shape % 4 {
        0 => vec![true; len],
        1 => vec![false; len],
        2 => (0..len).map(|_| rng.random_bool(0.5)).collect(),
        _ => (0..len).map(|i| (i / 700) % 2 == 0).collect(),
    };
    Arc::new(BooleanArray::new(BooleanBuffer::from(values), nulls))
}

/// Fixed-width types the integer encodings do not handle.
fn other_fixed_types() -> Vec<DataType> {
    vec![
        DataType::FixedSizeBinary(1),
        DataType::FixedSizeBinary(7),
        DataType::FixedSizeBinary(16),
        DataType::Decimal256(76, 3),
        DataType::Interval(IntervalUnit::DayTime),
        DataType::Interval(IntervalUnit::MonthDayNano),
    ]
}

/// A random array of any flat type, drawn in one of the shapes its type has.
fn shaped_array(rng: &mut StdRng, data_type: &DataType, len: usize) -> (String, ArrayRef) {
    let nulls = random_validity(rng, len);
    match data_type {
        DataType::Boolean => {
            let shape = rng.random_range(0..4u8);
            (format!("shape {shape}"), bool_array(rng, len, shape, nulls))
        }
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            let shape = *[
                FloatShape::RandomBits,
                FloatShape::Specials,
                FloatShape::Runs,
                FloatShape::Constant,
                FloatShape::Normal,
                FloatShape::Decimals,
            ]
            .choose(rng)
            .unwrap();
            (format!("{shape:?}"), float_array(rng, data_type, len, shape, nulls))
        }
        t if BYTES_TYPES.contains(t) => {
            let shape = *[
                BytesShape::Random,
                BytesShape::FewDistinct,
                BytesShape::Text,
                BytesShape::Empty,
                BytesShape::Long(3000),
                BytesShape::AllBytes,
                BytesShape::Runs,
                BytesShape::Constant,
            ]
            .choose(rng)
            .unwrap();
            let values = bytes_values(rng, len, shape, is_utf8(t));
            (format!("{shape:?}"), bytes_array(t, &values, nulls.as_ref()))
        }
        t if int_types().contains(t) => {
            let shape = *INT_SHAPES.choose(rng).unwrap();
            let values = int_values(rng, len, shape, int_bounds(t));
            (format!("{shape:?}"), int_array(t, &values, nulls))
        }
        t => {
            let mode = *[ValueMode::Random, ValueMode::Small, ValueMode::Constant].choose(rng).unwrap();
            let null_probability = *[0.0, 0.05, 0.7, 1.0].choose(rng).unwrap();
            (format!("{mode:?}"), random_array(rng, t, len, ColumnGen { null_probability, mode }))
        }
    }
}

/// Every flat type the encodings see.
fn encoded_types() -> Vec<DataType> {
    let mut out = int_types();
    out.extend([DataType::Boolean, DataType::Float16, DataType::Float32, DataType::Float64]);
    out.extend(BYTES_TYPES);
    out.extend(other_fixed_types());
    out
}

/// Columns (named after their type and shape) whose every page `kind` can store when forced.
fn columns_for(rng: &mut StdRng, kind: EncodingKind, len: usize) -> Vec<(String, ArrayRef)> {
    let mut out: Vec<(String, ArrayRef)> = Vec::new();
    let mut push = |name: String, array: ArrayRef| {
        let name = format!("c{}: {name}", out.len());
        out.push((name, array));
    };
    let fixed_width_other = |rng: &mut StdRng, t: &DataType, mode: ValueMode| {
        let null_probability = *[0.0, 0.05, 0.7].choose(rng).unwrap();
        random_array(rng, t, len, ColumnGen { null_probability, mode })
    };
    match kind {
        EncodingKind::Plain => {
            for t in all_flat_types() {
                let (shape, array) = shaped_array(rng, &t, len);
                push(format!("{t} {shape}"), array);
            }
        }
        EncodingKind::Constant => {
            for t in int_types() {
                let values = int_values(rng, len, IntShape::Constant, int_bounds(&t));
                let nulls = random_validity(rng, len);
                push(format!("{t}"), int_array(&t, &values, nulls));
            }
            for t in [DataType::Float16, DataType::Float32, DataType::Float64] {
                let nulls = random_validity(rng, len);
                push(format!("{t}"), float_array(rng, &t, len, FloatShape::Constant, nulls));
            }
            for shape in [0, 1] {
                let nulls = random_validity(rng, len);
                push(format!("bool {shape}"), bool_array(rng, len, shape, nulls));
            }
            for t in BYTES_TYPES {
                let values = bytes_values(rng, len, BytesShape::Constant, is_utf8(&t));
                let nulls = random_validity(rng, len);
                push(format!("{t}"), bytes_array(&t, &values, nulls.as_ref()));
                // Null slots of strings hold empty values: only the valid ones are constant.
                let values = vec![b"R".to_vec(); len];
                let nulls = NullBuffer::from_iter((0..len).map(|i| i % 3 != 0));
                push(format!("{t} with nulls"), bytes_array(&t, &values, Some(&nulls)));
            }
            for t in other_fixed_types() {
                push(format!("{t}"), fixed_width_other(rng, &t, ValueMode::Constant));
            }
        }
        EncodingKind::Bitpacked => {
            for t in int_types() {
                for shape in INT_SHAPES {
                    // 16-byte values are packed in 64-bit lanes: their range must fit.
                    let fits = int_layout(&t).0 < 16
                        || matches!(
                            shape,
                            IntShape::Small
                                | IntShape::NearMin
                                | IntShape::NearMax
                                | IntShape::Sorted
                                | IntShape::Constant
                        );
                    if fits && (shape != IntShape::Constant || rng.random_bool(0.3)) {
                        let values = int_values(rng, len, shape, int_bounds(&t));
                        let nulls = random_validity(rng, len);
                        push(format!("{t} {shape:?}"), int_array(&t, &values, nulls));
                    }
                }
            }
        }
        EncodingKind::Delta => {
            for t in int_types().into_iter().filter(|t| int_layout(t).0 <= 8) {
                for shape in [IntShape::Sorted, IntShape::SortedWide, IntShape::Constant, IntShape::NearMax] {
                    let mut values = int_values(rng, len, shape, int_bounds(&t));
                    values.sort_unstable();
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), int_array(&t, &values, nulls));
                }
            }
        }
        EncodingKind::Rle | EncodingKind::Dictionary => {
            for t in int_types() {
                for shape in [IntShape::Runs, IntShape::Random, IntShape::Small, IntShape::Extremes] {
                    let values = int_values(rng, len, shape, int_bounds(&t));
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), int_array(&t, &values, nulls));
                }
            }
            for t in [DataType::Float16, DataType::Float32, DataType::Float64] {
                for shape in [FloatShape::RandomBits, FloatShape::Specials, FloatShape::Runs] {
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), float_array(rng, &t, len, shape, nulls));
                }
            }
            for t in BYTES_TYPES {
                for shape in [BytesShape::Random, BytesShape::FewDistinct, BytesShape::Runs, BytesShape::Empty] {
                    let values = bytes_values(rng, len, shape, is_utf8(&t));
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), bytes_array(&t, &values, nulls.as_ref()));
                }
            }
            for t in other_fixed_types() {
                for mode in [ValueMode::Random, ValueMode::Small] {
                    push(format!("{t} {mode:?}"), fixed_width_other(rng, &t, mode));
                }
            }
        }
        EncodingKind::AlpRd | EncodingKind::Alp => {
            for t in [DataType::Float32, DataType::Float64] {
                for shape in [
                    FloatShape::Decimals,
                    FloatShape::Normal,
                    FloatShape::RandomBits,
                    FloatShape::Specials,
                    FloatShape::Runs,
                    FloatShape::Constant,
                ] {
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), float_array(rng, &t, len, shape, nulls));
                }
            }
        }
        EncodingKind::Fsst | EncodingKind::OnPair => {
            for t in BYTES_TYPES {
                for shape in [BytesShape::Text, BytesShape::AllBytes, BytesShape::Long(40_000)] {
                    let values = bytes_values(rng, len, shape, is_utf8(&t));
                    // Sparse nulls: a page needs 1 KiB of strings for FSST to take it (see
                    // `forcing_fsst_on_small_pages_fails`).
                    let nulls = NullBuffer::from_iter((0..len).map(|_| !rng.random_bool(0.02)));
                    push(format!("{t} {shape:?}"), bytes_array(&t, &values, Some(&nulls)));
                }
            }
        }
    }
    out
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
