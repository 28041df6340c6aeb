//! Memory soak tests: the peak memory of reads, counted by the allocator itself (live bytes, see
//! `common::alloc`), against the reader's promise (`docs/architecture.md`, "Memory"):
//!
//! > peak ≤ budget + pages the decoders wait for past it + the batches in flight + a constant
//!
//! where the pages the decoders wait for past the budget are at most two pages of each
//! projected column (the rows being decoded straddle at most one page boundary), or two parts
//! of it where the read loads pages in parts (case d), and only matter when the budget is
//! smaller than those pages; with a shared budget, each read adds its
//! own (see `IoBudget`). Each case reads a file much larger than its budget, for a bounded time,
//! and compares every row with the data written. The cases share the process's allocator
//! counters, so they run one at a time.
//!
//! What the constant covers, measured: the read's list of selected pages (about a hundred bytes
//! per page of the projection, built when the read starts), the I/O queue (at most 64 queued
//! reads, or four per read in flight, each with its page's scheduled decoder: about a kilobyte
//! each), the decoders' and channels' state (a few hundred bytes per projected column), the
//! tasks of the runtime, and the transient buffers of decoding one page (a decompressed page
//! is counted in the budget, but its bytes are assembled once before). The metadata of the
//! projected columns, cached by the reader, is loaded before the measurements start.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::builder::{Int32Builder, ListBuilder};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use common::alloc::{self, GuardedAllocator};
use common::assertions::assert_batches_equal;
use common::files::write_file_with;
use common::nz;
use futures::StreamExt;
use looseleaf::format::proto::ColumnMetadata;
use looseleaf::io::IoDepth;
use looseleaf::{ByteCount, Compression, FileReader, IoBudget, IoOptions, ReadBuilder, WriterOptions};
use rand::Rng;

#[global_allocator]
static ALLOCATOR: GuardedAllocator = GuardedAllocator::new(1 << 32);

/// The cases measure the process's memory: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// The constant of the bound (see the module documentation): the largest measured was about
/// a third of it (a 1,000-column read's decoder state included).
const CONSTANT: u64 = MIB;

/// Batches decoded at once in every case.
const PARALLELISM: usize = 2;

fn io(budget: u64, depth: usize) -> IoOptions {
    IoOptions { depth: IoDepth::Fixed(nz(depth)), buffer: ByteCount(budget), ..IoOptions::LOCAL }
}

/// A table of an id, a float, a string and a list of ints per row.
fn mixed_table(rows: usize, seed: u64) -> RecordBatch {
    let mut rng = common::rng(seed);
    let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"];
    let mut tags = ListBuilder::new(Int32Builder::new());
    for _ in 0..rows {
        for _ in 0..rng.random_range(0..4) {
            tags.values().append_value(rng.random_range(0..1000));
        }
        tags.append(rng.random_bool(0.9));
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..rows as i64)),
        Arc::new(Float64Array::from_iter_values((0..rows).map(|_| rng.random::<f64>()))),
        Arc::new(StringArray::from_iter_values(
            (0..rows).map(|i| format!("{}-{}", words[i % words.len()], rng.random_range(0..1_000_000))),
        )),
        Arc::new(tags.finish()),
    ];
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("tags", columns[3].data_type().clone(), true),
    ]));
    RecordBatch::try_new(schema, columns).unwrap()
}

/// The bytes the decoders of a read of `columns` (all if `None`) of the file at `path` may
/// wait for past the budget: two of the largest pages of each column (stored bytes, plus
/// decompressed bytes for compressed pages, as the reservation counts them).
fn pages_past_the_budget(path: &Path, columns: Option<std::ops::Range<usize>>) -> u64 {
    let metadata: Vec<ColumnMetadata> = common::layout::column_metadata(&std::fs::read(path).unwrap());
    let columns = columns.unwrap_or(0..metadata.len());
    let largest = |column: &ColumnMetadata| {
        column
            .pages
            .iter()
            .map(|page| {
                let stored: u64 = page.buffers.iter().map(|b| b.size).sum();
                let decompressed: u64 =
                    if page.compression != 0 { page.buffers.iter().map(|b| b.uncompressed_size).sum() } else { 0 };
                stored + decompressed
            })
            .max()
            .unwrap_or(0)
    };
    2 * metadata[columns].iter().map(largest).sum::<u64>()
}

/// Runs `read` to the end, comparing each batch with `expected` as it comes and dropping it;
/// the consumer sleeps `pause` after each batch. Returns the largest batch's memory.
async fn consume(read: ReadBuilder, expected: &RecordBatch, pause: Duration, what: &str) -> u64 {
    let mut stream = read.stream().await.unwrap();
    let mut offset = 0;
    let mut largest = 0;
    while let Some(batch) = stream.next().await {
        let batch = batch.unwrap();
        largest = largest.max(batch.get_array_memory_size() as u64);
        assert_batches_equal(&batch, &expected.slice(offset, batch.num_rows()), what);
        offset += batch.num_rows();
        drop(batch);
        tokio::time::sleep(pause).await;
    }
    assert_eq!(offset, expected.num_rows(), "{what}");
    largest
}

/// `num_columns` columns `c0, c1, ...` of `rows` random values, int64 and float64 in turn.
fn random_numbers(rows: usize, num_columns: usize, seed: u64) -> RecordBatch {
    let mut rng = common::rng(seed);
    let types = [DataType::Int64, DataType::Float64];
    let fields: Vec<Field> =
        (0..num_columns).map(|i| Field::new(format!("c{i}"), types[i % 2].clone(), false)).collect();
    let columns: Vec<ArrayRef> = (0..num_columns)
        .map(|i| -> ArrayRef {
            if i % 2 == 0 {
                Arc::new(Int64Array::from_iter_values((0..rows).map(|_| rng.random::<i64>())))
            } else {
                Arc::new(Float64Array::from_iter_values((0..rows).map(|_| rng.random::<f64>())))
            }
        })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// The batches in flight of a stream: those decoded and waiting their turn, the one being
/// put together from its steps, and the one its consumer holds.
fn batches_in_flight(largest: u64) -> u64 {
    (PARALLELISM as u64 + 2) * largest
}

/// (a) A slow consumer over a compressed file more than ten times the budget: the read pauses
/// at the budget however long the consumer stays away, and its peak stays within the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_over_a_file_ten_times_the_budget() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slow.leaf");
    let table = mixed_table(400_000, 1);
    let options = WriterOptions::default().with_page_size(64 * KIB).with_compression(Compression::Lz4, 0);
    let finished = write_file_with(&path, &table.schema(), std::slice::from_ref(&table), options).await;
    let budget = 512 * KIB;
    assert!(finished.num_bytes >= 10 * budget, "the file ({} bytes) is not ten budgets", finished.num_bytes);
    let reader = FileReader::open_path(&path).await.unwrap();
    reader.read().plan().await.unwrap(); // caches the metadata
    let past = pages_past_the_budget(&path, None);

    let base = alloc::reset_peak();
    let read =
        reader.read().with_batch_size(nz(1000)).with_io_options(io(budget, 4)).with_decode_parallelism(nz(PARALLELISM));
    let mut stream = read.stream().await.unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert_batches_equal(&first, &table.slice(0, first.num_rows()), "first batch");
    let mut offset = first.num_rows();
    let mut largest = first.get_array_memory_size() as u64;
    drop(first);
    // The consumer goes away: the read fills the budget and stops there (however slow the
    // machine: it is given half a minute to stop, and checked to have stopped far from the end).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut paused = stream.io_stats();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = stream.io_stats();
        if now.bytes_read == paused.bytes_read {
            break;
        }
        assert!(Instant::now() < deadline, "{now:?}: the read does not pause while the consumer is away");
        paused = now;
    }
    assert!(paused.bytes_read < finished.num_bytes / 2, "{paused:?}");
    // Then it reads slowly to the end.
    while let Some(batch) = stream.next().await {
        let batch = batch.unwrap();
        largest = largest.max(batch.get_array_memory_size() as u64);
        assert_batches_equal(&batch, &table.slice(offset, batch.num_rows()), "slow consumer");
        offset += batch.num_rows();
        drop(batch);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(offset, table.num_rows());
    let stats = stream.io_stats();
    drop(stream);
    let peak = alloc::peak_live_bytes() as u64 - base as u64;
    let bound = budget + past + batches_in_flight(largest) + CONSTANT;
    eprintln!(
        "(a) {} B file, budget {budget} B: peak {peak} B live ({} B reserved); bound {bound} B \
         (pages past the budget {past}, largest batch {largest})",
        finished.num_bytes, stats.peak_reserved_bytes
    );
    assert!(stats.peak_reserved_bytes <= budget + past, "{stats:?}");
    assert!(peak <= bound, "peak {peak} B over the bound {bound} B");
}

/// (b) Sixteen concurrent readers, scans of row ranges and takes, sharing one process-wide
/// budget and depth for a few seconds: the shared depth is never exceeded, and the peak stays
/// within the shared bound (the budget, plus each read's own minimum progress and batches).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_readers_share_one_process_wide_budget() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.leaf");
    let rows = 400_000u64;
    let table = Arc::new(mixed_table(rows as usize, 2));
    let options = WriterOptions::default().with_page_size(32 * KIB);
    let finished = write_file_with(&path, &table.schema(), std::slice::from_ref(&table), options).await;
    let reader = Arc::new(FileReader::open_path(&path).await.unwrap());
    reader.read().plan().await.unwrap();
    let shared = IoBudget::new(ByteCount(MIB), Some(nz(8)));
    assert!(finished.num_bytes >= 4 * shared.bytes().get());
    let past = pages_past_the_budget(&path, None);
    const READERS: u64 = 16;

    IoBudget::set_process_default(Some(shared.clone()));
    let base = alloc::reset_peak();
    let deadline = Instant::now() + Duration::from_secs(4);
    let tasks: Vec<_> = (0..READERS)
        .map(|i| {
            let (reader, table) = (reader.clone(), table.clone());
            tokio::spawn(async move {
                let (mut rounds, mut largest) = (0u64, 0u64);
                let mut rng = common::rng(100 + i);
                // At least one round each, however late the task starts.
                while rounds == 0 || Instant::now() < deadline {
                    rounds += 1;
                    let read = reader.read().with_batch_size(nz(1000)).with_decode_parallelism(nz(PARALLELISM));
                    if i % 2 == 0 {
                        let start = rng.random_range(0..rows - 20_000);
                        let read = read.with_row_range(start..start + 20_000);
                        let expected = table.slice(start as usize, 20_000);
                        largest = largest.max(consume(read, &expected, Duration::from_millis(1), "scan").await);
                    } else {
                        let indices: Vec<u64> = (0..500).map(|_| rng.random_range(0..rows)).collect();
                        let taken = read.take(&indices).await.unwrap();
                        largest = largest.max(taken.get_array_memory_size() as u64);
                        let expected =
                            arrow_select::take::take_record_batch(&table, &UInt64Array::from(indices)).unwrap();
                        assert_batches_equal(&taken, &expected, "take");
                    }
                }
                (rounds, largest)
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    let peak = alloc::peak_live_bytes() as u64 - base as u64;
    IoBudget::set_process_default(None);

    let stats = shared.stats();
    assert_eq!((stats.in_flight, stats.reserved_bytes), (0, 0), "{stats:?}");
    assert!(stats.peak_in_flight <= 8, "{stats:?}");
    // Each read may pass the shared budget by its own minimum progress: the pages its
    // decoders wait for, at most `PARALLELISM + 1` steps of its share of the budget or of the
    // pages of one stretch of rows (at worst its share is the whole budget: reads that start
    // at once each see the others not started yet).
    let largest = results.iter().map(|(_, largest)| *largest).max().unwrap_or(0);
    let per_read = shared.bytes().get() + (PARALLELISM as u64 + 1) * past + batches_in_flight(largest);
    let bound = shared.bytes().get() + READERS * per_read + CONSTANT;
    eprintln!(
        "(b) {} B file, {READERS} readers sharing {} B: peak {peak} B live ({} B reserved, {} of {} reads past \
         the shared budget); bound {bound} B; rounds and largest batch per reader {results:?}",
        finished.num_bytes,
        shared.bytes().get(),
        stats.peak_reserved_bytes,
        stats.bypassed_reads,
        stats.reads
    );
    assert!(peak <= bound, "peak {peak} B over the bound {bound} B");
}

/// (c) 1,000 of a file's 1,100 columns with a budget far smaller than one page of each: the
/// read advances by the pages of one stretch of rows at a time, within the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_column_projection_with_a_small_budget() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.leaf");
    let table = random_numbers(4000, 1100, 3);
    let schema = table.schema();
    let options = WriterOptions::default().with_page_size(8 * KIB);
    let finished = write_file_with(&path, &schema, std::slice::from_ref(&table), options).await;
    let projection = 50..1050;
    let names: Vec<String> = projection.clone().map(|i| format!("c{i}")).collect();
    let projected = table.project(&projection.clone().collect::<Vec<_>>()).unwrap();
    drop(table);
    let reader = FileReader::open_path(&path).await.unwrap();
    reader.read().with_columns(names.clone()).plan().await.unwrap();
    let budget = 256 * KIB;
    let past = pages_past_the_budget(&path, Some(projection));

    let base = alloc::reset_peak();
    let read = reader
        .read()
        .with_columns(names)
        .with_batch_size(nz(500))
        .with_io_options(io(budget, 8))
        .with_decode_parallelism(nz(PARALLELISM));
    let largest = consume(read, &projected, Duration::from_millis(2), "1,000 columns").await;
    let peak = alloc::peak_live_bytes() as u64 - base as u64;
    let bound = budget + past + batches_in_flight(largest) + CONSTANT;
    eprintln!(
        "(c) {} B file, 1,000 columns, budget {budget} B: peak {peak} B live; bound {bound} B (pages past the \
         budget {past}, largest batch {largest})",
        finished.num_bytes
    );
    assert!(peak <= bound, "peak {peak} B over the bound {bound} B");
}

/// (d) 200 columns of 256 KiB pages under a 1 MiB budget: a page of each column is 50 times the
/// budget, and whole pages would let the decoders wait for 100 MiB past it. The pages are read
/// in parts (`field_scheduler::column`, "Pages in parts"), so the read holds at most two parts
/// of each column past the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_far_larger_than_the_budget_are_held_a_part_at_a_time() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide_pages.leaf");
    let num_columns = 200usize;
    let table = random_numbers(32_768, num_columns, 4);
    let schema = table.schema();
    let options = WriterOptions::default().with_page_size(MIB);
    let finished = write_file_with(&path, &schema, std::slice::from_ref(&table), options).await;
    let whole_pages = pages_past_the_budget(&path, None);
    assert!(whole_pages >= 200 * 2 * 200 * KIB, "pages of {whole_pages} B are not far larger than the budget");
    let reader = FileReader::open_path(&path).await.unwrap();
    reader.read().plan().await.unwrap();
    let budget = MIB;

    let base = alloc::reset_peak();
    let read =
        reader.read().with_batch_size(nz(1000)).with_io_options(io(budget, 8)).with_decode_parallelism(nz(PARALLELISM));
    let largest = consume(read, &table, Duration::from_millis(2), "pages in parts").await;
    let peak = alloc::peak_live_bytes() as u64 - base as u64;
    // Two parts of each column: 64 KiB each, rounded up to whole blocks of 1,024 values.
    let parts = 2 * num_columns as u64 * (64 * KIB + 8 * KIB);
    let bound = budget + parts + batches_in_flight(largest) + CONSTANT;
    eprintln!(
        "(d) {} B file, {num_columns} columns of 256 KiB pages, budget {budget} B: peak {peak} B live; bound \
         {bound} B (parts past the budget {parts}, whole pages {whole_pages}, largest batch {largest})",
        finished.num_bytes
    );
    assert!(peak <= bound, "peak {peak} B over the bound {bound} B");
}
