//! The situations in which readers of this design have hung (Lance's among them), each run
//! under a timeout and checked against the data written: a budget smaller than one page, a
//! budget of one byte, many requests at the same priority, list items that need indirect reads
//! while the budget is full, many reads and many files at once, a slow consumer, reads sharing
//! one budget of one byte (consumed one after the other, or at once), reads consumed on a thread
//! running `Runtime::block_on` while pages still arrive. A hang fails the test (it never blocks
//! the suite), wrong data fails it too.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::nz;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use common::assertions::assert_batches_equal;
use common::files::write_file;
use futures::{StreamExt, TryStreamExt};
use looseleaf::io::IoDepth;
use looseleaf::{ByteCount, FileReader, IoBudget, IoOptions, ReadBuilder};
use looseleaf_testing::generate::{self, NestedLimits, random_nested_table, random_table};
use rand::Rng;
use rand::seq::SliceRandom;

/// I/O options with a byte budget of `bytes` and a fixed depth.
fn budget(bytes: u64, depth: usize) -> IoOptions {
    IoOptions { depth: IoDepth::Fixed(nz(depth)), buffer: ByteCount(bytes), ..IoOptions::LOCAL }
}

async fn within<T>(what: &str, read: impl Future<Output = T>) -> T {
    common::run::within_deadline(what, common::run::HANG, read).await
}

/// Reads to the end, the consumer pausing after each batch when `slow`.
async fn scan(read: ReadBuilder, slow: bool) -> RecordBatch {
    let mut stream = read.stream().await.unwrap();
    let schema = stream.schema().clone();
    let mut batches = Vec::new();
    while let Some(batch) = stream.next().await {
        batches.push(batch.unwrap());
        if slow {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

/// A file of lists of strings, structs of lists and maps (items read through indirect I/O),
/// with small pages, and the table written.
async fn nested_file(path: &Path, seed: u64, rows: usize) -> RecordBatch {
    let mut rng = common::rng(seed);
    let limits = NestedLimits { max_depth: 3, ..NestedLimits::default() };
    let fields: Vec<Field> =
        (0..6).map(|i| generate::random_nested_field(&mut rng, &format!("c{i}"), limits)).collect();
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let table = random_nested_table(&mut rng, &schema, rows);
    write_file(path, &schema, std::slice::from_ref(&table), 4 * 1024).await;
    table
}

/// Budgets of one byte and of less than a page, with a slow consumer, over nested data whose
/// list items need indirect reads while the budget is full: scans, ranges and takes finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_budgets_finish_every_read_of_nested_data() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..4 {
        let path = dir.path().join(format!("nested-{seed}.leaf"));
        let table = nested_file(&path, 100 + seed, 3000).await;
        let reader = FileReader::open_path(&path).await.unwrap();
        for (bytes, depth) in [(1, 1), (1, 8), (1024, 2), (3000, 16)] {
            let what = format!("seed {seed}, budget {bytes} B, depth {depth}");
            let read = reader.read().with_batch_size(nz(257)).with_io_options(budget(bytes, depth));
            let all = within(&what, scan(read, seed % 2 == 0)).await;
            assert_batches_equal(&all, &table, &what);

            let read = reader.read().with_row_range(1000..2100).with_io_options(budget(bytes, depth));
            let range = within(&what, scan(read, false)).await;
            assert_batches_equal(&range, &table.slice(1000, 1100), &what);

            let mut rng = common::rng(seed);
            let indices: Vec<u64> = (0..200).map(|_| rng.random_range(0..3000)).collect();
            let read = reader.read().with_io_options(budget(bytes, depth));
            let taken = within(&what, read.take(&indices)).await.unwrap();
            let expected =
                arrow_select::take::take_record_batch(&table, &arrow_array::UInt64Array::from(indices.clone()))
                    .unwrap();
            assert_batches_equal(&taken, &expected, &what);
        }
    }
}

/// Many requests at the same priority: a take of the same row of 300 columns (every request
/// serves row 0's neighbourhood), and a scan of them, with a budget smaller than one page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_requests_at_one_priority_finish() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = common::rng(7);
    let types = [DataType::Int64, DataType::Utf8, DataType::Float32, DataType::Binary];
    let fields: Vec<Field> = (0..300).map(|i| Field::new(format!("f{i}"), types[i % 4].clone(), true)).collect();
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let table = random_table(&mut rng, &schema, 2000);
    let path = dir.path().join("wide.leaf");
    write_file(&path, &schema, std::slice::from_ref(&table), 2 * 1024).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    for depth in [1, 4, 64] {
        let what = format!("300 columns, depth {depth}");
        let read = reader.read().with_io_options(budget(100, depth));
        let taken = within(&what, read.take(&[0, 0, 1, 1999, 0])).await.unwrap();
        let expected =
            arrow_select::take::take_record_batch(&table, &arrow_array::UInt64Array::from(vec![0u64, 0, 1, 1999, 0]))
                .unwrap();
        assert_batches_equal(&taken, &expected, &what);
        let read = reader.read().with_batch_size(nz(1)).with_io_options(budget(100, depth));
        let first = within(&what, async {
            let mut stream = read.stream().await.unwrap();
            let batch = stream.next().await.unwrap().unwrap();
            drop(stream); // dropped with every column's requests in flight
            batch
        })
        .await;
        assert_batches_equal(&first, &table.slice(0, 1), &what);
        let all = within(&what, scan(reader.read().with_io_options(budget(100, depth)), false)).await;
        assert_batches_equal(&all, &table, &what);
    }
}

/// Sixteen concurrent reads of one file (scans, ranges and takes) and reads of 24 files at
/// once, each with a one-byte budget, all on one two-thread runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_reads_and_many_files_at_once_finish() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.leaf");
    let table = Arc::new(nested_file(&path, 5, 2000).await);
    let reader = Arc::new(FileReader::open_path(&path).await.unwrap());
    let mut tasks = Vec::new();
    for i in 0..16u64 {
        let (reader, table) = (reader.clone(), table.clone());
        tasks.push(tokio::spawn(async move {
            let io = budget(1, 1 + (i as usize % 4));
            match i % 3 {
                0 => assert_batches_equal(&scan(reader.read().with_io_options(io), i % 2 == 0).await, &table, "scan"),
                1 => {
                    let start = i * 100;
                    let read = reader.read().with_row_range(start..start + 500).with_io_options(io);
                    assert_batches_equal(&scan(read, false).await, &table.slice(start as usize, 500), "range");
                }
                _ => {
                    let mut indices: Vec<u64> = (0..2000).step_by(7).collect();
                    indices.shuffle(&mut common::rng(i));
                    let taken = reader.read().with_io_options(io).take(&indices).await.unwrap();
                    let expected =
                        arrow_select::take::take_record_batch(&table, &arrow_array::UInt64Array::from(indices))
                            .unwrap();
                    assert_batches_equal(&taken, &expected, "take");
                }
            }
        }));
    }
    within("16 concurrent reads", async {
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await;

    let mut files = Vec::new();
    for i in 0..24 {
        let path = dir.path().join(format!("many-{i}.leaf"));
        files.push((path.clone(), nested_file(&path, 200 + i, 300).await));
    }
    let reads = files.into_iter().map(|(path, table)| {
        tokio::spawn(async move {
            let reader = FileReader::open_path(&path).await.unwrap();
            let all = scan(reader.read().with_batch_size(nz(64)).with_io_options(budget(1, 2)), true).await;
            assert_batches_equal(&all, &table, &path.display().to_string());
        })
    });
    let reads: Vec<_> = reads.collect();
    within("24 files at once", async {
        for read in reads {
            read.await.unwrap();
        }
    })
    .await;
}

/// Reads sharing one budget of one byte and a shared depth of one: eight streams started
/// together and consumed one after the other (the streams not being consumed hold what they
/// read meanwhile, which no other read may wait for), then sixteen scans, ranges and takes of
/// nested data at once. Each finishes on its own bypass and urgency.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_sharing_a_one_byte_budget_finish() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared-budget.leaf");
    let table = Arc::new(nested_file(&path, 9, 2000).await);
    let reader = Arc::new(FileReader::open_path(&path).await.unwrap());
    let shared = IoBudget::new(ByteCount(1), Some(nz(1)));
    let mut streams = Vec::new();
    for _ in 0..8 {
        let read = reader.read().with_batch_size(nz(100)).with_io_budget(shared.clone());
        streams.push(read.stream().await.unwrap());
    }
    within("eight streams consumed in turn", async {
        for mut stream in streams {
            let schema = stream.schema().clone();
            let batches: Vec<RecordBatch> = (&mut stream).try_collect().await.unwrap();
            let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
            assert_batches_equal(&all, &table, "in turn");
        }
    })
    .await;

    let tasks: Vec<_> = (0..16u64)
        .map(|i| {
            let (reader, table, shared) = (reader.clone(), table.clone(), shared.clone());
            tokio::spawn(async move {
                let read = reader.read().with_io_budget(shared).with_io_options(budget(1 << 20, 4));
                match i % 3 {
                    0 => assert_batches_equal(&scan(read, i % 2 == 0).await, &table, "scan"),
                    1 => {
                        let start = i * 100;
                        let read = read.with_row_range(start..start + 500);
                        assert_batches_equal(&scan(read, false).await, &table.slice(start as usize, 500), "range");
                    }
                    _ => {
                        let mut indices: Vec<u64> = (0..2000).step_by(7).collect();
                        indices.shuffle(&mut common::rng(i));
                        let taken = read.take(&indices).await.unwrap();
                        let expected =
                            arrow_select::take::take_record_batch(&table, &arrow_array::UInt64Array::from(indices))
                                .unwrap();
                        assert_batches_equal(&taken, &expected, "take");
                    }
                }
            })
        })
        .collect();
    within("sixteen reads sharing a budget of one byte", async {
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await;
    // A read's last buffers may be released by its tasks just after its result is handed
    // out (the run that failed here under load saw 3,880 bytes still reserved): the budget
    // must come back within moments, not at once.
    let mut stats = shared.stats();
    for _ in 0..500 {
        if (stats.reserved_bytes, stats.in_flight) == (0, 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        stats = shared.stats();
    }
    assert_eq!((stats.reserved_bytes, stats.in_flight), (0, 0), "{stats:?}");
    assert_eq!(stats.peak_in_flight, 1, "{stats:?}");
}

/// Reads consumed on a thread running `Runtime::block_on` (as tests and the Python bindings
/// consume them) while the scheduling loop is still sending pages: columns of every flat type
/// in small pages, read again and again. Decoders that took pages with tokio's `try_recv` could
/// park that thread in the middle of a send and swallow a wake-up meant for `block_on`; about
/// one such read in a hundred then waited forever for pages that had arrived.
#[test]
fn reads_consumed_by_block_on_lose_no_wake_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = common::rng(11);
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (i, data_type) in generate::all_flat_types().into_iter().enumerate() {
        let null_probability = [0.0, 0.01, 0.5][i % 3];
        let column = generate::ColumnGen { null_probability, mode: generate::ValueMode::Random };
        columns.push(generate::random_array(&mut rng, &data_type, 1000, column));
        fields.push(Field::new(format!("f{i}"), data_type, true));
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let table = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let path = dir.path().join("small-pages.leaf");
    let runtime = common::runtime();
    let reader = runtime.block_on(async {
        write_file(&path, &schema, std::slice::from_ref(&table), 300).await;
        FileReader::open_path(&path).await.unwrap()
    });
    // Taking pages with `try_recv`, 1,000 reads hung at the 4th with two decode threads, at the
    // 164th with one.
    for attempt in 0..400 {
        let what = format!("read {attempt}");
        let parallelism = nz(1 + attempt % 2);
        let read = reader.read().with_row_range(53..756).with_batch_size(nz(1000)).with_decode_parallelism(parallelism);
        let out = runtime.block_on(within(&what, scan(read, false)));
        assert_batches_equal(&out, &table.slice(53, 703), &what);
    }
}
