//! The seed corpus: small valid files (a few KiB each, so that mutations stay effective) made
//! with the public writer API from tables drawn by the shared generator
//! (`looseleaf_testing::generate`, the one the integration tests draw with). They cover every
//! encoding (forced per column through [`WriterOptions::with_encoding_policy`], as
//! `rust/looseleaf/tests/encodings/` does, on values of the shapes that encoding is built for),
//! both compressions, nested types, dictionary arrays, nulls and an empty file. Pages are small so
//! that most columns have several.
//!
//! Each seed draws from a generator of its own, seeded with [`SEED`] and the seed's name, so
//! that the seeds are the same files on every run (for the `rand` that `fuzz/Cargo.lock` pins;
//! the fuzzer and the regression test read the same corpus), and changing one seed leaves the
//! others as they were.
//!
//! Nothing here depends on the byte layout of the format: the seeds are whatever the writer
//! makes of these tables, so they follow the format as it changes.

use std::sync::Arc;

use arrow_array::types::{Int8Type, Int16Type, Int32Type};
use arrow_array::{ArrayRef, RecordBatch, new_null_array};
use arrow_schema::{DataType, Field, Fields, IntervalUnit, Schema, TimeUnit};
use looseleaf::{Compression, EncodingKind, EncodingPolicy, FileWriter, WriterOptions};
use looseleaf_testing::generate::{
    self, BytesShape, ColumnGen, FloatShape, IntShape, StdRng, ValueMode, bytes_array, bytes_values, dictionary_array,
    dictionary_values, float_array, int_array, int_bounds, int_values, is_utf8, random_array, random_nested_array,
    random_nulls,
};

/// One seed: a name (the file name, without extension) and the file's bytes.
#[derive(Debug, Clone)]
pub struct Seed {
    /// What the seed covers, as a file name.
    pub name: &'static str,
    /// The whole file.
    pub bytes: Vec<u8>,
}

/// Where the seeds' generators start (with the hash of each seed's name): another value makes
/// other files.
pub const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

const ROWS: usize = 64;
/// Small pages: several per column.
const PAGE_SIZE: u64 = 400;

fn forced(kind: EncodingKind) -> EncodingPolicy {
    EncodingPolicy { force: Some(kind), forbid: Default::default() }
}

fn plain() -> WriterOptions {
    WriterOptions::default().with_page_size(PAGE_SIZE).with_default_encoding_policy(EncodingPolicy::plain_only())
}

fn auto() -> WriterOptions {
    WriterOptions::default().with_page_size(PAGE_SIZE)
}

/// A table of `(name, array, nullable)` columns.
fn batch(columns: Vec<(&str, ArrayRef, bool)>) -> RecordBatch {
    let fields: Vec<Field> =
        columns.iter().map(|(name, array, nullable)| Field::new(*name, array.data_type().clone(), *nullable)).collect();
    let arrays: Vec<ArrayRef> = columns.into_iter().map(|(_, array, _)| array).collect();
    match RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays) {
        Ok(batch) => batch,
        Err(e) => panic!("a seed table is not valid: {e}"),
    }
}

/// `n` values of a flat type, each null with probability `nulls`, drawn as `mode` says.
fn flat(rng: &mut StdRng, data_type: DataType, n: usize, nulls: f64, mode: ValueMode) -> ArrayRef {
    random_array(rng, &data_type, n, ColumnGen { null_probability: nulls, mode })
}

/// `n` values of a nested type (a nullable column: nulls, list lengths and slicing as the
/// generator draws them, at every depth).
fn nested(rng: &mut StdRng, data_type: DataType, n: usize) -> ArrayRef {
    random_nested_array(rng, &Field::new("column", data_type, true), n, None)
}

/// `n` integers of `shape` within `bounds` (inclusive), each null with probability `nulls`.
fn ints(
    rng: &mut StdRng,
    data_type: DataType,
    n: usize,
    shape: IntShape,
    bounds: (i128, i128),
    nulls: f64,
) -> ArrayRef {
    let values = int_values(rng, n, shape, bounds);
    int_array(&data_type, &values, random_nulls(rng, n, nulls))
}

/// `n` floats of `shape`, each null with probability `nulls`.
fn floats(rng: &mut StdRng, data_type: DataType, n: usize, shape: FloatShape, nulls: f64) -> ArrayRef {
    let nulls = random_nulls(rng, n, nulls);
    float_array(rng, &data_type, n, shape, nulls)
}

/// `n` strings or binaries of `shape`, each null with probability `nulls`.
fn bytes(rng: &mut StdRng, data_type: DataType, n: usize, shape: BytesShape, nulls: f64) -> ArrayRef {
    let values = bytes_values(rng, n, shape, is_utf8(&data_type));
    bytes_array(&data_type, &values, random_nulls(rng, n, nulls).as_ref())
}

fn item(data_type: DataType) -> Arc<Field> {
    Arc::new(Field::new_list_field(data_type, true))
}

fn list(data_type: DataType) -> DataType {
    DataType::List(item(data_type))
}

fn struct_of(fields: &[(&str, DataType)]) -> DataType {
    DataType::Struct(
        fields.iter().map(|(name, data_type)| Field::new(*name, data_type.clone(), true)).collect::<Fields>(),
    )
}

/// A map of non-null `key`s to nullable `value`s.
fn map_of(key: DataType, value: DataType) -> DataType {
    let entries = Fields::from(vec![Field::new("key", key, false), Field::new("value", value, true)]);
    DataType::Map(Arc::new(Field::new("entries", DataType::Struct(entries), false)), false)
}

/// Every seed, written now.
///
/// # Errors
/// An error of the writer (a seed that cannot be written is a bug of this list, or of the writer).
pub async fn all() -> looseleaf::Result<Vec<Seed>> {
    let mut out = Vec::new();
    for (name, table, options) in tables() {
        out.push(Seed { name, bytes: write(&table, options).await.map_err(|e| with_seed(e, name))? });
    }
    Ok(out)
}

fn with_seed(error: looseleaf::Error, name: &str) -> looseleaf::Error {
    looseleaf::Error::internal(format!("seed {name}: {error}"))
}

/// `table` written with `options`, in memory.
async fn write(table: &RecordBatch, options: WriterOptions) -> looseleaf::Result<Vec<u8>> {
    use object_store::ObjectStoreExt;
    let store = Arc::new(object_store::memory::InMemory::new());
    let path = object_store::path::Path::from("seed.leaf");
    let mut writer = FileWriter::try_new(store.clone(), &path, table.schema(), options).await?;
    // Two input batches: the writer's page boundaries need not follow them.
    let half = table.num_rows() / 2;
    writer.write(&table.slice(0, half)).await?;
    writer.write(&table.slice(half, table.num_rows() - half)).await?;
    writer.finish().await?;
    let io = |e: object_store::Error| looseleaf::Error::io("memory://seed.leaf", e);
    let bytes = store.get(&path).await.map_err(io)?.bytes().await.map_err(io)?;
    Ok(bytes.to_vec())
}

/// The generator of the seed `name`: one of its own, so that changing a seed leaves the others'
/// files as they were.
fn rng_for(name: &str) -> StdRng {
    // FNV-1a: a hash of the name that stays the same across runs and Rust versions.
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    generate::rng(SEED ^ hash)
}

/// The table (drawn from its generator) and writer options of every seed.
fn tables() -> Vec<(&'static str, RecordBatch, WriterOptions)> {
    use DataType::*;
    use ValueMode::{Constant, Random, Small};
    let n = ROWS;
    let mut seeds = Vec::new();
    let mut push = |name: &'static str, table: &dyn Fn(&mut StdRng) -> RecordBatch, options: WriterOptions| {
        seeds.push((name, table(&mut rng_for(name)), options));
    };

    push(
        "plain",
        &|rng| {
            batch(vec![
                ("i", flat(rng, Int32, n, 0.0, Random), false),
                ("f", flat(rng, Float64, n, 0.0, Random), false),
                ("b", flat(rng, Boolean, n, 0.0, Random), false),
                ("s", flat(rng, Utf8, n, 0.0, Random), false),
            ])
        },
        plain(),
    );
    push(
        "nullable",
        &|rng| {
            batch(vec![
                ("i", flat(rng, Int64, n, 0.3, Random), true),
                ("s", flat(rng, Utf8, n, 0.3, Random), true),
                ("b", flat(rng, Boolean, n, 0.3, Random), true),
                ("fsb", flat(rng, FixedSizeBinary(3), n, 0.3, Small), true),
            ])
        },
        plain(),
    );
    push(
        "all_null",
        &|_| {
            batch(vec![
                ("i", new_null_array(&Int32, n), true),
                ("s", new_null_array(&Utf8, n), true),
                ("n", new_null_array(&Null, n), true),
                ("l", new_null_array(&list(Int32), n), true),
            ])
        },
        auto(),
    );
    push(
        "binary",
        &|rng| {
            batch(vec![
                ("bin", flat(rng, Binary, n, 0.1, Random), true),
                ("large_bin", flat(rng, LargeBinary, n, 0.1, Small), true),
                ("large_str", flat(rng, LargeUtf8, n, 0.0, Random), false),
                ("str_view", flat(rng, Utf8View, n, 0.1, Random), true),
                ("bin_view", flat(rng, BinaryView, n, 0.1, Small), true),
                ("fsb", flat(rng, FixedSizeBinary(5), n, 0.0, Small), false),
            ])
        },
        plain(),
    );
    push(
        "lists",
        &|rng| {
            batch(vec![
                ("ints", nested(rng, list(Int32), n), true),
                ("strings", nested(rng, LargeList(item(Utf8)), n), true),
                ("nested", nested(rng, list(list(Int16)), n), true),
            ])
        },
        plain(),
    );
    push(
        "fixed_size_lists",
        &|rng| {
            batch(vec![
                ("vectors", nested(rng, FixedSizeList(item(Float32), 4), n), true),
                ("pairs", nested(rng, FixedSizeList(item(Utf8), 2), n), true),
            ])
        },
        plain(),
    );
    push(
        "bitpacked",
        &|rng| {
            batch(vec![
                ("v", ints(rng, Int64, n, IntShape::Small, (-500, 500), 0.0), false),
                ("w", ints(rng, UInt16, n, IntShape::NearMin, int_bounds(&UInt16), 0.05), true),
            ])
        },
        auto()
            .with_encoding_policy("v", forced(EncodingKind::Bitpacked))
            .with_encoding_policy("w", forced(EncodingKind::Bitpacked)),
    );
    push(
        "delta",
        &|rng| {
            batch(vec![
                ("v", ints(rng, Int64, n, IntShape::Sorted, (-100, 4000), 0.0), false),
                ("s", flat(rng, Utf8, n, 0.0, Random), false),
            ])
        },
        auto().with_encoding_policy("v", forced(EncodingKind::Delta)),
    );
    push(
        "constant",
        &|rng| {
            batch(vec![
                ("v", flat(rng, Int32, n, 0.0, Constant), false),
                ("s", flat(rng, Utf8, n, 0.0, Constant), false),
                ("f", flat(rng, Float64, n, 0.1, Constant), true),
            ])
        },
        auto()
            .with_encoding_policy("v", forced(EncodingKind::Constant))
            .with_encoding_policy("s", forced(EncodingKind::Constant))
            .with_encoding_policy("f", forced(EncodingKind::Constant)),
    );
    push(
        "rle",
        &|rng| {
            batch(vec![
                ("v", flat(rng, Int32, n, 0.0, Small), false),
                ("f", floats(rng, Float64, n, FloatShape::Runs, 0.0), false),
            ])
        },
        auto()
            .with_encoding_policy("v", forced(EncodingKind::Rle))
            .with_encoding_policy("f", forced(EncodingKind::Rle)),
    );
    push(
        "dictionary",
        &|rng| {
            batch(vec![
                ("v", bytes(rng, Utf8, n, BytesShape::FewDistinct, 0.1), true),
                ("i", flat(rng, Int64, n, 0.0, Small), false),
            ])
        },
        auto()
            .with_encoding_policy("v", forced(EncodingKind::Dictionary))
            .with_encoding_policy("i", forced(EncodingKind::Dictionary)),
    );
    // Text: FSST stores only pages of at least 1 KiB of strings, so these columns have one page.
    let text_rows = 40;
    push(
        "fsst",
        &|rng| {
            let text = bytes_values(rng, text_rows, BytesShape::Text, true);
            batch(vec![
                ("v", bytes_array(&Utf8, &text, None), false),
                ("b", bytes_array(&LargeBinary, &text, None), false),
            ])
        },
        WriterOptions::default()
            .with_encoding_policy("v", forced(EncodingKind::Fsst))
            .with_encoding_policy("b", forced(EncodingKind::Fsst)),
    );
    push(
        "onpair",
        &|rng| {
            let text = bytes_values(rng, text_rows, BytesShape::Text, true);
            let nulls = random_nulls(rng, text_rows, 0.1);
            batch(vec![
                ("v", bytes_array(&Utf8, &text, nulls.as_ref()), true),
                ("b", bytes_array(&LargeBinary, &text, None), false),
            ])
        },
        // Nulls in "v"; "b" with 64-bit offsets.
        WriterOptions::default()
            .with_encoding_policy("v", forced(EncodingKind::OnPair))
            .with_encoding_policy("b", forced(EncodingKind::OnPair)),
    );
    push(
        "alp_rd",
        &|rng| {
            batch(vec![
                ("f", floats(rng, Float64, n, FloatShape::Normal, 0.1), true),
                ("g", floats(rng, Float32, n, FloatShape::Specials, 0.0), false),
            ])
        },
        // Normal values (embeddings) with nulls under a nullable node in "f"; exceptions (the
        // special values and random bit patterns) in "g".
        WriterOptions::default()
            .with_encoding_policy("f", forced(EncodingKind::AlpRd))
            .with_encoding_policy("g", forced(EncodingKind::AlpRd)),
    );
    push(
        "alp",
        &|rng| {
            batch(vec![
                ("f", floats(rng, Float64, n, FloatShape::Decimals, 0.15), true),
                ("g", floats(rng, Float32, n, FloatShape::Decimals, 0.0), false),
            ])
        },
        // Decimals with a few special values among them (ALP's exceptions); nulls in "f".
        WriterOptions::default()
            .with_encoding_policy("f", forced(EncodingKind::Alp))
            .with_encoding_policy("g", forced(EncodingKind::Alp)),
    );
    let mixed = |rng: &mut StdRng| {
        batch(vec![
            ("i", flat(rng, Int32, n, 0.1, Small), true),
            ("s", flat(rng, Utf8, n, 0.1, Small), true),
            ("l", nested(rng, list(Int32), n), true),
        ])
    };
    push("lz4", &mixed, auto().with_compression(Compression::Lz4, 0));
    push("zstd", &mixed, auto().with_compression(Compression::Zstd, 3));
    push("zstd_plain", &mixed, plain().with_compression(Compression::Zstd, 1).with_page_size(1024));
    push(
        "structs",
        &|rng| {
            let inner = struct_of(&[("d", list(Int32))]);
            batch(vec![
                ("st", nested(rng, struct_of(&[("a", Int32), ("b", Utf8), ("c", inner)]), n), true),
                ("ls", nested(rng, list(struct_of(&[("x", Int32), ("y", Utf8)])), n), true),
            ])
        },
        auto(),
    );
    push(
        "map",
        &|rng| {
            batch(vec![("m", nested(rng, map_of(Utf8, Int32), n), true), ("k", flat(rng, Int64, n, 0.0, Small), false)])
        },
        auto(),
    );
    // Lists of structs holding lists, maps of lists, fixed-size lists of lists: three levels of
    // list offsets, and the fixed-size list layout of variable-width items.
    let deep_nesting = |rng: &mut StdRng| {
        let n = n / 2;
        batch(vec![
            ("structs", nested(rng, list(struct_of(&[("a", Int32), ("inner", list(Int16))])), n), true),
            ("map", nested(rng, map_of(Utf8, list(Int32)), n), true),
            ("fixed", nested(rng, FixedSizeList(item(list(Int32)), 3), n), true),
        ])
    };
    push("deep_nesting", &deep_nesting, auto().with_page_size(300));
    push("deep_nesting_plain", &deep_nesting, plain().with_page_size(200));
    push(
        "dictionary_arrays",
        &|rng| {
            batch(vec![
                ("d8", dictionary_array::<Int8Type>(rng, n, dictionary_values(&Utf8, 0, 3)), true),
                ("d16", dictionary_array::<Int16Type>(rng, n, dictionary_values(&Int64, 0, 4)), true),
                ("d32", dictionary_array::<Int32Type>(rng, n, dictionary_values(&Binary, 0, 2)), true),
            ])
        },
        auto(),
    );
    push(
        "types",
        &|rng| {
            let n = 40;
            batch(vec![
                ("date", flat(rng, Date32, n, 0.2, Random), true),
                ("ts", flat(rng, Timestamp(TimeUnit::Microsecond, Some("UTC".into())), n, 0.0, Random), false),
                ("t64", flat(rng, Time64(TimeUnit::Nanosecond), n, 0.0, Random), false),
                ("dec", flat(rng, Decimal128(20, 3), n, 0.2, Random), true),
                ("half", flat(rng, Float16, n, 0.0, Random), false),
                ("interval", flat(rng, Interval(IntervalUnit::MonthDayNano), n, 0.0, Random), false),
            ])
        },
        auto(),
    );
    push(
        "empty",
        &|rng| batch(vec![("i", flat(rng, Int32, 0, 0.0, Random), true), ("l", nested(rng, list(Int32), 0), true)]),
        auto(),
    );
    push(
        "no_statistics",
        &|rng| {
            batch(vec![("i", flat(rng, Int32, n, 0.05, Small), true), ("s", flat(rng, Utf8, n, 0.05, Random), true)])
        },
        auto().with_statistics(false),
    );
    seeds
}
