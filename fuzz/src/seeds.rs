//! The seed corpus: small valid files (a few KiB each, so that mutations stay effective) made
//! with the public writer API, covering every encoding (forced per column through
//! [`WriterOptions::with_encoding_policy`], as `rust/looseleaf/tests/encodings/` does), both
//! compressions, nested types, dictionary arrays, nulls and an empty file. Pages are small so
//! that most columns have several.
//!
//! Nothing here depends on the byte layout of the format: the seeds are whatever the writer
//! makes of these tables, so they follow the format as it changes.

use std::sync::Arc;

use arrow_array::builder::{
    BinaryViewBuilder, FixedSizeBinaryBuilder, FixedSizeListBuilder, Float32Builder, Int16Builder, Int32Builder,
    LargeListBuilder, ListBuilder, MapBuilder, StringBuilder, StringViewBuilder,
};
use arrow_array::types::{Int8Type, Int16Type, Int32Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, Float16Array,
    Float64Array, Int8Array, Int32Array, Int64Array, IntervalMonthDayNanoArray, LargeBinaryArray, LargeStringArray,
    NullArray, RecordBatch, StringArray, StructArray, Time64NanosecondArray, TimestampMicrosecondArray, UInt16Array,
};
use arrow_schema::{DataType, Field, Fields, Schema};
use looseleaf::{Compression, EncodingKind, EncodingPolicy, FileWriter, WriterOptions};

/// One seed: a name (the file name, without extension) and the file's bytes.
#[derive(Debug, Clone)]
pub struct Seed {
    /// What the seed covers, as a file name.
    pub name: &'static str,
    /// The whole file.
    pub bytes: Vec<u8>,
}

/// A small deterministic generator (xorshift), so that the seeds are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True with probability `percent` %.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A short word, sometimes longer than 12 bytes (a view's inline limit), sometimes with
    /// multi-byte characters.
    fn word(&mut self) -> String {
        const PIECES: &[&str] = &["a", "b", "lo", "ose", "leaf", "é", "日本", " ", "-", "z", "🦀", "page"];
        let len = match self.below(10) {
            0 => 0,
            1..=6 => 1 + self.below(4),
            _ => 4 + self.below(8),
        };
        (0..len).map(|_| PIECES[self.below(PIECES.len() as u64) as usize]).collect()
    }
}

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

fn batch(columns: Vec<(&str, ArrayRef, bool)>) -> RecordBatch {
    let fields: Vec<Field> =
        columns.iter().map(|(name, array, nullable)| Field::new(*name, array.data_type().clone(), *nullable)).collect();
    let arrays: Vec<ArrayRef> = columns.into_iter().map(|(_, array, _)| array).collect();
    match RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays) {
        Ok(batch) => batch,
        Err(e) => panic!("a seed table is not valid: {e}"),
    }
}

fn ints(rng: &mut Rng, n: usize, range: u64, nulls: u64) -> Int32Array {
    (0..n).map(|_| (!rng.chance(nulls)).then(|| rng.below(range) as i32 - (range / 3) as i32)).collect()
}

fn longs(rng: &mut Rng, n: usize, range: u64, nulls: u64) -> Int64Array {
    (0..n).map(|_| (!rng.chance(nulls)).then(|| rng.below(range) as i64 - (range / 2) as i64)).collect()
}

fn strings(rng: &mut Rng, n: usize, nulls: u64) -> StringArray {
    (0..n).map(|_| (!rng.chance(nulls)).then(|| rng.word())).collect()
}

fn few_strings(rng: &mut Rng, n: usize, nulls: u64) -> StringArray {
    const WORDS: &[&str] = &["red", "green", "blue", "a much longer value than the others"];
    (0..n).map(|_| (!rng.chance(nulls)).then(|| WORDS[rng.below(4) as usize])).collect()
}

fn floats(rng: &mut Rng, n: usize, nulls: u64) -> Float64Array {
    (0..n).map(|_| (!rng.chance(nulls)).then(|| rng.below(1000) as f64 / 7.0)).collect()
}

fn bools(rng: &mut Rng, n: usize, nulls: u64) -> BooleanArray {
    (0..n).map(|_| (!rng.chance(nulls)).then(|| rng.chance(50))).collect()
}

/// English-like text that FSST compresses: at least 1 KiB per page (see `forcing.rs`).
fn text(rng: &mut Rng, n: usize) -> Vec<String> {
    const WORDS: &[&str] =
        &["the ", "quick ", "brown ", "fox ", "jumps ", "over ", "lazy ", "dog ", "looseleaf ", "columnar ", "page "];
    (0..n).map(|_| (0..3 + rng.below(5)).map(|_| WORDS[rng.below(WORDS.len() as u64) as usize]).collect()).collect()
}

fn list_of_ints(rng: &mut Rng, n: usize) -> ArrayRef {
    let mut builder = ListBuilder::new(Int32Builder::new());
    for _ in 0..n {
        if rng.chance(15) {
            builder.append(false);
            continue;
        }
        for _ in 0..rng.below(4) {
            builder.values().append_option((!rng.chance(10)).then(|| rng.below(100) as i32));
        }
        builder.append(true);
    }
    Arc::new(builder.finish())
}

fn large_list_of_strings(rng: &mut Rng, n: usize) -> ArrayRef {
    let mut builder = LargeListBuilder::new(StringBuilder::new());
    for _ in 0..n {
        if rng.chance(10) {
            builder.append(false);
            continue;
        }
        for _ in 0..rng.below(3) {
            builder.values().append_option((!rng.chance(10)).then(|| rng.word()));
        }
        builder.append(true);
    }
    Arc::new(builder.finish())
}

fn list_of_lists(rng: &mut Rng, n: usize) -> ArrayRef {
    let mut builder = ListBuilder::new(ListBuilder::new(Int16Builder::new()));
    for _ in 0..n {
        for _ in 0..rng.below(3) {
            let inner = builder.values();
            for _ in 0..rng.below(3) {
                inner.values().append_value(rng.below(500) as i16);
            }
            inner.append(!rng.chance(10));
        }
        builder.append(!rng.chance(10));
    }
    Arc::new(builder.finish())
}

fn fixed_size_floats(rng: &mut Rng, n: usize) -> ArrayRef {
    let mut builder = FixedSizeListBuilder::new(Float32Builder::new(), 4);
    for _ in 0..n {
        let valid = !rng.chance(10);
        for _ in 0..4 {
            builder.values().append_option((!rng.chance(5)).then(|| rng.below(100) as f32 / 3.0));
        }
        builder.append(valid);
    }
    Arc::new(builder.finish())
}

fn fixed_size_strings(rng: &mut Rng, n: usize) -> ArrayRef {
    let mut builder = FixedSizeListBuilder::new(StringBuilder::new(), 2);
    for _ in 0..n {
        let valid = !rng.chance(10);
        for _ in 0..2 {
            builder.values().append_option((!rng.chance(10)).then(|| rng.word()));
        }
        builder.append(valid);
    }
    Arc::new(builder.finish())
}

fn fixed_binary(rng: &mut Rng, n: usize, width: i32, nulls: u64) -> ArrayRef {
    let mut builder = FixedSizeBinaryBuilder::new(width);
    for _ in 0..n {
        if rng.chance(nulls) {
            builder.append_null();
        } else {
            let value: Vec<u8> = (0..width).map(|_| rng.below(4) as u8).collect();
            if let Err(e) = builder.append_value(value) {
                panic!("fixed-size binary: {e}");
            }
        }
    }
    Arc::new(builder.finish())
}

fn struct_column(rng: &mut Rng, n: usize) -> ArrayRef {
    let inner_fields = Fields::from(vec![Field::new(
        "d",
        DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))),
        true,
    )]);
    let inner = StructArray::new(
        inner_fields.clone(),
        vec![list_of_ints(rng, n)],
        Some((0..n).map(|_| !rng.chance(10)).collect::<Vec<bool>>().into()),
    );
    let fields = Fields::from(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Utf8, true),
        Field::new("c", DataType::Struct(inner_fields), true),
    ]);
    let columns: Vec<ArrayRef> = vec![Arc::new(ints(rng, n, 50, 10)), Arc::new(strings(rng, n, 10)), Arc::new(inner)];
    Arc::new(StructArray::new(fields, columns, Some((0..n).map(|_| !rng.chance(10)).collect::<Vec<bool>>().into())))
}

fn list_of_structs(rng: &mut Rng, n: usize) -> ArrayRef {
    let items = 2 * n;
    let fields = Fields::from(vec![Field::new("x", DataType::Int32, true), Field::new("y", DataType::Utf8, true)]);
    let values = StructArray::new(
        fields.clone(),
        vec![Arc::new(ints(rng, items, 9, 10)), Arc::new(strings(rng, items, 10))],
        Some((0..items).map(|_| !rng.chance(10)).collect::<Vec<bool>>().into()),
    );
    let mut lengths: Vec<usize> = (0..n).map(|_| rng.below(4) as usize).collect();
    let total: usize = lengths.iter().sum();
    if let Some(last) = lengths.last_mut() {
        *last += items - total.min(items);
    }
    let lengths: Vec<usize> = lengths
        .into_iter()
        .scan(items, |left, l| {
            let l = l.min(*left);
            *left -= l;
            Some(l)
        })
        .collect();
    let offsets = arrow_buffer::OffsetBuffer::from_lengths(lengths);
    let field = Arc::new(Field::new_list_field(DataType::Struct(fields), true));
    let nulls: Vec<bool> = (0..n).map(|_| !rng.chance(10)).collect();
    Arc::new(arrow_array::ListArray::new(field, offsets, Arc::new(values), Some(nulls.into())))
}

fn map_column(rng: &mut Rng, n: usize) -> ArrayRef {
    let mut builder = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    for _ in 0..n {
        for _ in 0..rng.below(3) {
            builder.keys().append_value(rng.word());
            builder.values().append_option((!rng.chance(20)).then(|| rng.below(9) as i32));
        }
        if let Err(e) = builder.append(!rng.chance(10)) {
            panic!("map: {e}");
        }
    }
    Arc::new(builder.finish())
}

fn views(rng: &mut Rng, n: usize) -> (ArrayRef, ArrayRef) {
    let mut strings = StringViewBuilder::new();
    let mut binaries = BinaryViewBuilder::new();
    for _ in 0..n {
        let word = format!("{}{}", rng.word(), if rng.chance(40) { " and something past twelve bytes" } else { "" });
        if rng.chance(10) {
            strings.append_null();
            binaries.append_null();
        } else {
            strings.append_value(&word);
            binaries.append_value(word.as_bytes());
        }
    }
    (Arc::new(strings.finish()), Arc::new(binaries.finish()))
}

/// `values` cut into `n` lists of random lengths (the last takes what is left), some null.
fn list_of(rng: &mut Rng, values: ArrayRef, n: usize) -> arrow_array::ListArray {
    let total = values.len();
    let mut lengths = Vec::with_capacity(n);
    let mut left = total;
    for i in 0..n {
        let len = if i + 1 == n { left } else { (rng.below(4) as usize).min(left) };
        lengths.push(len);
        left -= len;
    }
    let nulls: Vec<bool> = lengths.iter().map(|len| *len > 0 || !rng.chance(20)).collect();
    let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
    arrow_array::ListArray::new(field, arrow_buffer::OffsetBuffer::from_lengths(lengths), values, Some(nulls.into()))
}

/// Lists of structs holding lists, maps of lists, fixed-size lists of lists: three levels of
/// list offsets, and the fixed-size list layout of variable-width items.
fn deep_nesting(rng: &mut Rng, n: usize) -> Vec<(&'static str, ArrayRef, bool)> {
    let inner = list_of(rng, Arc::new(arrow_array::Int16Array::from_iter((0..3 * n).map(|i| Some(i as i16)))), 2 * n);
    let point = Fields::from(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("inner", inner.data_type().clone(), true),
    ]);
    let validity: Vec<bool> = (0..2 * n).map(|_| !rng.chance(10)).collect();
    let points =
        StructArray::new(point, vec![Arc::new(ints(rng, 2 * n, 50, 10)), Arc::new(inner)], Some(validity.into()));
    let structs = list_of(rng, Arc::new(points), n);

    let values = Arc::new(ints(rng, 3 * n, 9, 10));
    let values = list_of(rng, values, 2 * n);
    let keys: StringArray = (0..2 * n).map(|i| Some(format!("k{}", i % 7))).collect();
    let entry_fields = Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", values.data_type().clone(), true),
    ]);
    let entries = StructArray::new(entry_fields.clone(), vec![Arc::new(keys), Arc::new(values)], None);
    let map_lists = list_of(rng, Arc::new(entries), n);
    let (_, offsets, entries, nulls) = map_lists.into_parts();
    let entries = match entries.as_any().downcast_ref::<StructArray>() {
        Some(entries) => entries.clone(),
        None => panic!("map entries are a struct"),
    };
    let entries_field = Arc::new(Field::new("entries", DataType::Struct(entry_fields), false));
    let map = arrow_array::MapArray::new(entries_field, offsets, entries, nulls, false);

    let items = Arc::new(ints(rng, 4 * n, 100, 10));
    let items = list_of(rng, items, 3 * n);
    let item_field = Arc::new(Field::new_list_field(items.data_type().clone(), true));
    let validity: Vec<bool> = (0..n).map(|_| !rng.chance(10)).collect();
    let fixed = arrow_array::FixedSizeListArray::new(item_field, 3, Arc::new(items), Some(validity.into()));
    vec![("structs", Arc::new(structs), true), ("map", Arc::new(map), true), ("fixed", Arc::new(fixed), true)]
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

/// The table and writer options of every seed.
fn tables() -> Vec<(&'static str, RecordBatch, WriterOptions)> {
    let rng = &mut Rng(0x9e37_79b9_7f4a_7c15);
    let n = ROWS;
    let mut seeds = Vec::new();

    seeds.push((
        "plain",
        batch(vec![
            ("i", Arc::new(ints(rng, n, 1 << 20, 0)), false),
            ("f", Arc::new(floats(rng, n, 0)), false),
            ("b", Arc::new(bools(rng, n, 0)), false),
            ("s", Arc::new(strings(rng, n, 0)), false),
        ]),
        plain(),
    ));
    seeds.push((
        "nullable",
        batch(vec![
            ("i", Arc::new(longs(rng, n, 1 << 40, 30)), true),
            ("s", Arc::new(strings(rng, n, 30)), true),
            ("b", Arc::new(bools(rng, n, 30)), true),
            ("fsb", fixed_binary(rng, n, 3, 30), true),
        ]),
        plain(),
    ));
    seeds.push((
        "all_null",
        batch(vec![
            ("i", Arc::new(Int32Array::new_null(n)), true),
            ("s", Arc::new(StringArray::new_null(n)), true),
            ("n", Arc::new(NullArray::new(n)), true),
            (
                "l",
                arrow_array::new_null_array(&DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))), n),
                true,
            ),
        ]),
        auto(),
    ));
    let (string_views, binary_views) = views(rng, n);
    let bins: Vec<Option<Vec<u8>>> =
        (0..n).map(|_| (!rng.chance(10)).then(|| rng.word().into_bytes().into_iter().rev().collect())).collect();
    seeds.push((
        "binary",
        batch(vec![
            ("bin", Arc::new(BinaryArray::from_iter(bins.iter().cloned())), true),
            ("large_bin", Arc::new(LargeBinaryArray::from_iter(bins.iter().cloned())), true),
            ("large_str", Arc::new(LargeStringArray::from_iter((0..n).map(|_| Some(rng.word())))), false),
            ("str_view", string_views, true),
            ("bin_view", binary_views, true),
            ("fsb", fixed_binary(rng, n, 5, 0), false),
        ]),
        plain(),
    ));
    seeds.push((
        "lists",
        batch(vec![
            ("ints", list_of_ints(rng, n), true),
            ("strings", large_list_of_strings(rng, n), true),
            ("nested", list_of_lists(rng, n), true),
        ]),
        plain(),
    ));
    seeds.push((
        "fixed_size_lists",
        batch(vec![("vectors", fixed_size_floats(rng, n), true), ("pairs", fixed_size_strings(rng, n), true)]),
        plain(),
    ));
    seeds.push((
        "bitpacked",
        batch(vec![
            ("v", Arc::new(longs(rng, n, 1000, 0)), false),
            (
                "w",
                Arc::new(UInt16Array::from_iter((0..n).map(|_| (!rng.chance(20)).then(|| rng.below(60) as u16)))),
                true,
            ),
        ]),
        auto()
            .with_encoding_policy("v", forced(EncodingKind::Bitpacked))
            .with_encoding_policy("w", forced(EncodingKind::Bitpacked)),
    ));
    let mut sorted: Vec<i64> = (0..n).map(|_| rng.below(1 << 12) as i64 - 100).collect();
    sorted.sort_unstable();
    seeds.push((
        "delta",
        batch(vec![("v", Arc::new(Int64Array::from(sorted)), false), ("s", Arc::new(strings(rng, n, 0)), false)]),
        auto().with_encoding_policy("v", forced(EncodingKind::Delta)),
    ));
    seeds.push((
        "constant",
        batch(vec![
            ("v", Arc::new(Int32Array::from(vec![7; n])), false),
            ("s", Arc::new(StringArray::from(vec!["same"; n])), false),
            ("f", Arc::new(Float64Array::from(vec![Some(1.5); n])), true),
        ]),
        auto()
            .with_encoding_policy("v", forced(EncodingKind::Constant))
            .with_encoding_policy("s", forced(EncodingKind::Constant))
            .with_encoding_policy("f", forced(EncodingKind::Constant)),
    ));
    let runs = |rng: &mut Rng| -> Vec<i32> {
        let mut out = Vec::new();
        while out.len() < n {
            let value = rng.below(5) as i32;
            out.extend(std::iter::repeat_n(value, 1 + rng.below(20) as usize));
        }
        out.truncate(n);
        out
    };
    let float_runs: Vec<f64> = runs(rng).into_iter().map(|v| v as f64 * 0.25).collect();
    seeds.push((
        "rle",
        batch(vec![
            ("v", Arc::new(Int32Array::from(runs(rng))), false),
            ("f", Arc::new(Float64Array::from(float_runs)), false),
        ]),
        auto()
            .with_encoding_policy("v", forced(EncodingKind::Rle))
            .with_encoding_policy("f", forced(EncodingKind::Rle)),
    ));
    seeds.push((
        "dictionary",
        batch(vec![("v", Arc::new(few_strings(rng, n, 10)), true), ("i", Arc::new(longs(rng, n, 4, 0)), false)]),
        auto()
            .with_encoding_policy("v", forced(EncodingKind::Dictionary))
            .with_encoding_policy("i", forced(EncodingKind::Dictionary)),
    ));
    let words = text(rng, 60);
    seeds.push((
        "fsst",
        batch(vec![
            ("v", Arc::new(StringArray::from_iter_values(&words)), false),
            ("b", Arc::new(LargeBinaryArray::from_iter_values(words.iter().map(|w| w.as_bytes()))), false),
        ]),
        // One page per column: FSST stores only pages of at least 1 KiB of strings.
        WriterOptions::default()
            .with_encoding_policy("v", forced(EncodingKind::Fsst))
            .with_encoding_policy("b", forced(EncodingKind::Fsst)),
    ));
    seeds.push((
        "onpair",
        batch(vec![
            ("v", Arc::new(StringArray::from_iter((0..words.len()).map(|i| (i % 9 != 4).then(|| &words[i])))), true),
            ("b", Arc::new(LargeBinaryArray::from_iter_values(words.iter().map(|w| w.as_bytes()))), false),
        ]),
        // Nulls in "v"; "b" with 64-bit offsets.
        WriterOptions::default()
            .with_encoding_policy("v", forced(EncodingKind::OnPair))
            .with_encoding_policy("b", forced(EncodingKind::OnPair)),
    ));
    seeds.push((
        "alp_rd",
        batch(vec![
            ("f", Arc::new(floats(rng, n, 10)), true),
            (
                "g",
                Arc::new(arrow_array::Float32Array::from_iter_values(
                    (0..n).map(|i| if i % 50 == 3 { 3.0e38 } else { (rng.below(2000) as f32 - 1000.0) / 333.0 }),
                )),
                false,
            ),
        ]),
        // Exceptions in "g" (the large values); "f" has nulls under a nullable node.
        WriterOptions::default()
            .with_encoding_policy("f", forced(EncodingKind::AlpRd))
            .with_encoding_policy("g", forced(EncodingKind::AlpRd)),
    ));
    seeds.push((
        "alp",
        batch(vec![
            (
                "f",
                Arc::new(arrow_array::Float64Array::from_iter((0..n).map(|i| {
                    (i % 7 != 2).then(|| if i % 50 == 3 { f64::NAN } else { rng.below(100_000) as f64 / 100.0 })
                }))),
                true,
            ),
            (
                "g",
                Arc::new(arrow_array::Float32Array::from_iter_values((0..n).map(|_| rng.below(5000) as f32 / 10.0))),
                false,
            ),
        ]),
        // Exceptions (NaN) and nulls in "f"; "g" without either.
        WriterOptions::default()
            .with_encoding_policy("f", forced(EncodingKind::Alp))
            .with_encoding_policy("g", forced(EncodingKind::Alp)),
    ));
    let mixed = |rng: &mut Rng| {
        batch(vec![
            ("i", Arc::new(ints(rng, n, 100, 10)), true),
            ("s", Arc::new(few_strings(rng, n, 10)), true),
            ("l", list_of_ints(rng, n), true),
        ])
    };
    seeds.push(("lz4", mixed(rng), auto().with_compression(Compression::Lz4, 0)));
    seeds.push(("zstd", mixed(rng), auto().with_compression(Compression::Zstd, 3)));
    seeds.push(("zstd_plain", mixed(rng), plain().with_compression(Compression::Zstd, 1).with_page_size(1024)));
    seeds.push((
        "structs",
        batch(vec![("st", struct_column(rng, n), true), ("ls", list_of_structs(rng, n), true)]),
        auto(),
    ));
    seeds.push((
        "map",
        batch(vec![("m", map_column(rng, n), true), ("k", Arc::new(ints(rng, n, 9, 0)), false)]),
        auto(),
    ));
    seeds.push(("deep_nesting", batch(deep_nesting(rng, n / 2)), auto().with_page_size(300)));
    seeds.push(("deep_nesting_plain", batch(deep_nesting(rng, n / 2)), plain().with_page_size(200)));
    let keys8: Int8Array = (0..n).map(|_| (!rng.chance(10)).then(|| rng.below(3) as i8)).collect();
    let keys16: arrow_array::Int16Array = (0..n).map(|_| Some(rng.below(4) as i16)).collect();
    let keys32: Int32Array = (0..n).map(|_| Some(rng.below(2) as i32)).collect();
    seeds.push((
        "dictionary_arrays",
        batch(vec![
            (
                "d8",
                Arc::new(DictionaryArray::<Int8Type>::new(keys8, Arc::new(StringArray::from(vec!["x", "yy", "zzz"])))),
                true,
            ),
            (
                "d16",
                Arc::new(DictionaryArray::<Int16Type>::new(
                    keys16,
                    Arc::new(Int64Array::from(vec![-5, 0, 5, 1 << 40])),
                )),
                false,
            ),
            (
                "d32",
                Arc::new(DictionaryArray::<Int32Type>::new(
                    keys32,
                    Arc::new(BinaryArray::from_iter_values([b"ab".as_slice(), b"\xff\x00"])),
                )),
                false,
            ),
        ]),
        auto(),
    ));
    let m = 40;
    seeds.push((
        "types",
        batch(vec![
            ("date", Arc::new(Date32Array::from_iter((0..m).map(|i| Some(19_000 + i)))), true),
            (
                "ts",
                Arc::new(
                    TimestampMicrosecondArray::from_iter_values((0..m).map(|i| i64::from(i) * 1_000_003))
                        .with_timezone("UTC"),
                ),
                false,
            ),
            ("t64", Arc::new(Time64NanosecondArray::from_iter_values((0..m).map(|i| i64::from(i) * 7))), false),
            (
                "dec",
                Arc::new(
                    Decimal128Array::from_iter((0..m).map(|i| (i % 5 != 0).then_some(i128::from(i) * 10_001)))
                        .with_precision_and_scale(20, 3)
                        .unwrap_or_else(|e| panic!("decimal: {e}")),
                ),
                true,
            ),
            ("half", Arc::new(Float16Array::from_iter_values((0..m).map(|i| half::f16::from_f32(i as f32)))), false),
            (
                "interval",
                Arc::new(IntervalMonthDayNanoArray::from_iter_values(
                    (0..m).map(|i| arrow_buffer::IntervalMonthDayNano::new(i, -i, i64::from(i) << 20)),
                )),
                false,
            ),
        ]),
        auto(),
    ));
    seeds.push((
        "empty",
        batch(vec![("i", Arc::new(Int32Array::from(Vec::<i32>::new())), true), ("l", list_of_ints(rng, 0), true)]),
        auto(),
    ));
    seeds.push((
        "no_statistics",
        batch(vec![("i", Arc::new(ints(rng, n, 300, 5)), true), ("s", Arc::new(strings(rng, n, 5)), true)]),
        auto().with_statistics(false),
    ));
    seeds
}
