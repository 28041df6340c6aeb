//! Round trips: what is written is what is read, through every kind of read (full scan,
//! projection, row range, `take`), with pages from tiny to large, any writer and reader batch
//! sizes, and I/O settings down to a one-byte budget. The truth is always the table that was
//! written (sliced, projected or `take`n with `arrow_select`).

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::nz;
use common::round_trip::{check_all_reads, round_trip_case};
use looseleaf::ByteCount;
use looseleaf::io::IoDepth;

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int64Array, NullArray, RecordBatch,
    RecordBatchOptions,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use common::assertions::{assert_batch_sizes, assert_batches_equal};
use common::files::write_file;
use common::reads::read_to_end;
use common::runtime;
use looseleaf::{Error, FileReader, IoOptions};
use looseleaf_testing::generate::{
    self, ColumnGen, ValueMode, all_flat_types, random_array, random_schema, random_table, split_randomly,
};
use proptest::prelude::*;

fn flat_case(seed: u64, num_rows: usize, page_size: u64, max_input_batch: usize, batch_size: usize) {
    round_trip_case(seed, num_rows, page_size, max_input_batch, batch_size, |rng, num_rows| {
        let schema = random_schema(rng, 8);
        random_table(rng, &schema, num_rows)
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(28))]

    #[test]
    fn random_files_round_trip(
        seed in any::<u64>(),
        num_rows in prop_oneof![1 => Just(0usize), 2 => 1usize..20, 7 => 20usize..3000],
        page_size in prop_oneof![64u64..=512, 513u64..=8192, 8193u64..=65536],
        max_input_batch in prop_oneof![1usize..=3, 4usize..=300, 301usize..=4000],
        batch_size in prop_oneof![1usize..=3, 4usize..=500, 501usize..=5000],
    ) {
        flat_case(seed, num_rows, page_size, max_input_batch, batch_size);
    }
}

/// Every flat type, nullable (with each null probability) and not, in one file of many pages.
#[test]
fn every_flat_type_round_trips() {
    let mut rng = common::rng(7);
    let mut fields = Vec::new();
    let mut gens = Vec::new();
    for (i, data_type) in all_flat_types().into_iter().enumerate() {
        let modes = [ValueMode::Random, ValueMode::Small, ValueMode::Constant];
        fields.push(Field::new(format!("n{i}"), data_type.clone(), true));
        gens.push(ColumnGen { null_probability: [0.0, 0.01, 0.5, 1.0][i % 4], mode: modes[i % 3] });
        if data_type != DataType::Null {
            fields.push(Field::new(format!("v{i}"), data_type, false));
            gens.push(ColumnGen { null_probability: 0.0, mode: ValueMode::Random });
        }
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let num_rows = 1000;
    let columns: Vec<ArrayRef> =
        schema.fields().iter().zip(&gens).map(|(f, g)| random_array(&mut rng, f.data_type(), num_rows, *g)).collect();
    let table = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let inputs = split_randomly(&mut rng, &table, 333);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all_types.leaf");
    runtime().block_on(async {
        write_file(&path, &schema, &inputs, 300).await;
        let reader = FileReader::open_path(&path).await.unwrap();
        let metadata = reader.metadata().await.unwrap();
        assert!(metadata.columns.iter().filter(|c| c.data_type != DataType::Null).all(|c| !c.pages.is_empty()));
        assert!(metadata.columns.iter().any(|c| c.pages.len() > 10), "expected columns of many pages");
        for batch_size in [1, 97, 1000] {
            check_all_reads(&mut rng, &reader, &table, batch_size).await;
        }
        // The same through a one-byte budget at an I/O depth of one: every read bypasses it.
        let read = reader.read().with_batch_size(nz(64)).with_io_options(IoOptions {
            depth: IoDepth::Fixed(nz(1)),
            buffer: ByteCount(1),
            ..IoOptions::LOCAL
        });
        let out = read_to_end(read).await.unwrap();
        assert_batches_equal(&out.concat(), &table, "one-byte budget");
        assert!(out.stats.bypassed_reads > 0);
        assert_eq!(out.stats.bypassed_reads, out.stats.reads);
    });
}

/// A file without rows: written with no batch, or with an empty one.
#[test]
fn zero_row_file() {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
        Field::new("n", DataType::Null, true),
        Field::new("b", DataType::Boolean, true),
    ]));
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        for (name, batches) in [("none.leaf", vec![]), ("empty.leaf", vec![RecordBatch::new_empty(schema.clone())])] {
            let path = dir.path().join(name);
            let finished = write_file(&path, &schema, &batches, 1024).await;
            assert_eq!(finished.num_rows, 0);
            let reader = FileReader::open_path(&path).await.unwrap();
            assert_eq!(reader.num_rows(), 0);
            assert_eq!(reader.schema(), &schema);
            let metadata = reader.metadata().await.unwrap();
            assert_eq!(metadata.columns.len(), 4);
            assert!(metadata.columns.iter().all(|c| c.pages.is_empty()));

            let out = read_to_end(reader.read()).await.unwrap();
            assert_eq!(out.schema, schema);
            assert!(out.batches.is_empty());
            assert_eq!(out.stats.reads, 0);
            let out = read_to_end(reader.read().with_row_range(0..0).with_columns(vec!["s".into()])).await.unwrap();
            assert!(out.batches.is_empty());
            assert!(reader.read().plan().await.unwrap().requests.is_empty());

            let taken = reader.take(&[], None).await.unwrap();
            assert_eq!(taken, RecordBatch::new_empty(schema.clone()));
            assert!(matches!(reader.take(&[0], None).await, Err(Error::InvalidArgument { .. })));
            assert!(matches!(
                read_to_end(reader.read().with_row_range(0..1)).await,
                Err(Error::InvalidArgument { .. })
            ));
        }
    });
}

/// A file whose columns are all of the null type: no page has a buffer, so nothing is read.
#[test]
fn null_type_only_file() {
    let schema: SchemaRef =
        Arc::new(Schema::new(vec![Field::new("x", DataType::Null, true), Field::new("y", DataType::Null, true)]));
    let num_rows = 2500;
    let table = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(NullArray::new(num_rows)), Arc::new(NullArray::new(num_rows))],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nulls.leaf");
    runtime().block_on(async {
        let mut rng = common::rng(3);
        let inputs = split_randomly(&mut rng, &table, 700);
        write_file(&path, &schema, &inputs, 64).await;
        let reader = FileReader::open_path(&path).await.unwrap();
        let out = read_to_end(reader.read().with_batch_size(nz(1000))).await.unwrap();
        assert_batch_sizes(&out.batches, 1000, num_rows, "null columns");
        assert_batches_equal(&out.concat(), &table, "null columns");
        assert_eq!((out.stats.reads, out.stats.bytes_read), (0, 0));
        let plan = reader.read().plan().await.unwrap();
        assert_eq!(plan.total().bytes, 0);
        check_all_reads(&mut rng, &reader, &table, 333).await;
    });
}

/// A file of 3,000 columns, whose metadata does not fit the bytes read on open, with and
/// without rows; read whole and through a projection.
#[test]
fn wide_files() {
    let num_columns = 3000;
    let schema: SchemaRef = Arc::new(Schema::new(
        (0..num_columns).map(|i| Field::new(format!("column_{i}"), DataType::Int64, true)).collect::<Vec<_>>(),
    ));
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        for num_rows in [0usize, 3] {
            let columns: Vec<ArrayRef> = (0..num_columns)
                .map(|c| {
                    Arc::new(Int64Array::from_iter((0..num_rows).map(|r| (r % 2 == 0).then_some((c * 10 + r) as i64))))
                        as ArrayRef
                })
                .collect();
            let options = RecordBatchOptions::new().with_row_count(Some(num_rows));
            let table = RecordBatch::try_new_with_options(schema.clone(), columns, &options).unwrap();
            let path = dir.path().join(format!("wide_{num_rows}.leaf"));
            write_file(&path, &schema, std::slice::from_ref(&table), 1 << 20).await;
            assert!(std::fs::metadata(&path).unwrap().len() > 64 * 1024, "the metadata should not fit the open read");

            let reader = FileReader::open_path(&path).await.unwrap();
            let names = vec!["column_2999".to_string(), "column_0".to_string(), "column_1500".to_string()];
            let out = read_to_end(reader.read().with_columns(names.clone())).await.unwrap();
            let expected = table.project(&[2999, 0, 1500]).unwrap();
            assert_batches_equal(&out.concat(), &expected, &format!("projection of a wide file of {num_rows} rows"));
            let taken = reader.take(&vec![0; num_rows.min(1)], Some(&names)).await.unwrap();
            assert_eq!(taken.num_rows(), num_rows.min(1));

            // A fresh reader, so that a full read loads every column's metadata at once.
            let reader = FileReader::open_path(&path).await.unwrap();
            let out = read_to_end(reader.read()).await.unwrap();
            assert_batches_equal(&out.concat(), &table, &format!("wide file of {num_rows} rows"));
            assert_eq!(reader.metadata().await.unwrap().columns.len(), num_columns);
        }
    });
}

/// A projection may name a column twice; each occurrence is read.
#[test]
fn projection_may_repeat_a_column() {
    let schema: SchemaRef =
        Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true), Field::new("s", DataType::Utf8, true)]));
    let mut rng = common::rng(11);
    let table = random_table(&mut rng, &schema, 500);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repeat.leaf");
    runtime().block_on(async {
        write_file(&path, &schema, std::slice::from_ref(&table), 256).await;
        let reader = FileReader::open_path(&path).await.unwrap();
        let names = vec!["s".to_string(), "a".to_string(), "s".to_string()];
        let out = read_to_end(reader.read().with_columns(names).with_row_range(17..433).with_batch_size(nz(50)))
            .await
            .unwrap();
        let expected = table.slice(17, 416).project(&[1, 0, 1]).unwrap();
        assert_batches_equal(&out.concat(), &expected, "repeated column");
    });
}

/// Values larger than the page size: each page holds one row.
#[test]
fn values_larger_than_a_page() {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("s", DataType::LargeUtf8, true),
        Field::new("f", DataType::FixedSizeBinary(200), false),
    ]));
    let mut rng = common::rng(5);
    let table = random_table(&mut rng, &schema, 300);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large_values.leaf");
    runtime().block_on(async {
        write_file(&path, &schema, std::slice::from_ref(&table), 16).await;
        let reader = FileReader::open_path(&path).await.unwrap();
        let metadata = reader.metadata().await.unwrap();
        assert!(
            metadata.columns[1].pages.iter().all(|p| p.num_rows == 1),
            "one row a page when a row exceeds the page"
        );
        check_all_reads(&mut rng, &reader, &table, 7).await;
    });
}

/// Takes of a file large enough that their page reads are served from the mapping of the whole
/// file (`MappedSparseReader`: cached ranges of 16 KiB and more, on Linux), of flat and nested
/// columns in 64 KiB pages, with the file in the page cache and evicted from it (the reads then
/// copy): the rows asked for, in the order asked, repeats included.
#[test]
fn takes_of_large_pages_round_trip_cached_or_not() {
    let mut rng = common::rng(11);
    let schema = generate::random_nested_schema(&mut rng, 6, generate::NestedLimits::default());
    let flat = random_schema(&mut rng, 6);
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.extend(flat.fields().iter().enumerate().map(|(i, f)| f.as_ref().clone().with_name(format!("flat{i}"))));
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let num_rows = 40_000;
    let table = generate::random_nested_table(&mut rng, &schema, num_rows);
    let inputs = split_randomly(&mut rng, &table, 5000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large_pages.leaf");
    runtime().block_on(async {
        write_file(&path, &schema, &inputs, 64 * 1024).await;
        for evicted in [false, true] {
            if evicted {
                common::files::evict_from_page_cache(&path);
            }
            let reader = FileReader::open_path(&path).await.unwrap();
            // One row in 50 (a sparse read), unsorted, with a repeat.
            let mut indices: Vec<u64> =
                (0..800).map(|_| rand::Rng::random_range(&mut rng, 0..num_rows as u64)).collect();
            indices.push(indices[0]);
            let taken = reader.take(&indices, None).await.unwrap();
            assert_batches_equal(&taken, &common::expected::rows_of(&table, &indices), &format!("evicted {evicted}"));
        }
    });
}

/// Embedding-like vectors (fixed-size lists of floats, encoded ALP-RD) in small pages: batches
/// that span pages are decoded into one buffer (`PageDecoder::decode_into`), and takes, row
/// ranges and scans in batches that cut pages anywhere return the rows written, for float32
/// and float64, with and without nulls (which take the piece-by-piece path).
#[test]
fn vectors_read_across_pages_round_trip() {
    let mut rng = common::rng(23);
    let num_rows = 6_000;
    let dir = tempfile::tempdir().unwrap();
    for (item, nullable) in [(DataType::Float32, false), (DataType::Float64, false), (DataType::Float32, true)] {
        let dimension: i32 = 24;
        let field = Arc::new(Field::new("v", item.clone(), false));
        let values: Vec<f64> = (0..num_rows * dimension as usize)
            .map(|_| (0..12).map(|_| rand::Rng::random_range(&mut rng, 0.0..1.0)).sum::<f64>() - 6.0)
            .collect();
        let values: ArrayRef = match item {
            DataType::Float32 => Arc::new(Float32Array::from_iter_values(values.iter().map(|v| *v as f32))),
            _ => Arc::new(Float64Array::from(values)),
        };
        let nulls = nullable.then(|| (0..num_rows).map(|i| i % 7 != 3).collect::<NullBuffer>());
        let vectors = FixedSizeListArray::new(field, dimension, values, nulls);
        let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new("v", vectors.data_type().clone(), nullable)]));
        let table = RecordBatch::try_new(schema.clone(), vec![Arc::new(vectors)]).unwrap();
        let path = dir.path().join(format!("vectors_{item}_{nullable}.leaf"));
        runtime().block_on(async {
            write_file(&path, &schema, &split_randomly(&mut rng, &table, 2000), 32 * 1024).await;
            let reader = FileReader::open_path(&path).await.unwrap();
            let metadata = reader.metadata().await.unwrap();
            let pages = &metadata.columns[0].pages;
            assert!(pages.len() > 10, "{} pages", pages.len());
            let alp_rd = pages.iter().filter(|p| p.encoding.contains("alp_rd")).count();
            assert!(alp_rd * 2 > pages.len(), "{:?}", pages.iter().map(|p| &p.encoding).collect::<Vec<_>>());
            let what = format!("{item}, nullable {nullable}");
            let mut indices: Vec<u64> =
                (0..700).map(|_| rand::Rng::random_range(&mut rng, 0..num_rows as u64)).collect();
            indices.extend([0, num_rows as u64 - 1, indices[5]]);
            let taken = reader.take(&indices, None).await.unwrap();
            assert_batches_equal(&taken, &common::expected::rows_of(&table, &indices), &format!("take, {what}"));
            let range = reader.read().with_row_range(1234..4321).with_batch_size(nz(1000));
            let out = read_to_end(range).await.unwrap().concat();
            assert_batches_equal(&out, &table.slice(1234, 4321 - 1234), &format!("row range, {what}"));
            let out = read_to_end(reader.read().with_batch_size(nz(777))).await.unwrap().concat();
            assert_batches_equal(&out, &table, &format!("scan, {what}"));
        });
    }
}
