//! What the reader asks of storage: how much it holds at once (the byte budget and its bypass),
//! in what order it reads (lowest top-level row first, across columns), and whether the I/O
//! plan of a read is the I/O the read makes.
//!
//! Reads are observed through a [`RecordingReader`] and mapped back to columns and pages with
//! [`FileLayout`], which parses the file with the format module alone.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::nz;
use looseleaf::ByteCount;
use looseleaf::io::IoDepth;

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{
    ArrayRef, FixedSizeBinaryArray, Float64Array, Int8Array, Int32Array, Int64Array, RecordBatch, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use common::assertions::{assert_batch_sizes, assert_batches_equal};
use common::files::write_file_plain;
use common::layout::FileLayout;
use common::readers::{RecordingReader, subtract_reads};
use common::reads::read_to_end;
use futures::StreamExt;
use looseleaf::io::{CoalesceOptions, RequestKind};
use looseleaf::{FileReader, IoOptions, ReadBuilder, RowSelection};
use looseleaf_testing::generate::random_table;
use rand::Rng;
use rand::seq::SliceRandom;

const MIB: u64 = 1024 * 1024;

/// A file of three fixed-width columns (Int64, Float64, Int32) of `num_rows` rows, and the
/// table written to it.
async fn numeric_file(path: &Path, num_rows: usize, page_size: u64) -> RecordBatch {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, false),
        Field::new("k", DataType::Int32, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values((0..num_rows as i64).map(|i| i * 7 - 3))),
        Arc::new(Float64Array::from_iter_values((0..num_rows).map(|i| i as f64 * 0.25))),
        Arc::new(Int32Array::from_iter_values((0..num_rows as i32).map(|i| i.wrapping_mul(2_654_435)))),
    ];
    let table = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let batches: Vec<RecordBatch> =
        (0..num_rows).step_by(50_000).map(|start| table.slice(start, 50_000.min(num_rows - start))).collect();
    write_file_plain(path, &schema, &batches, page_size).await;
    table
}

/// The largest page of each column, in bytes.
fn max_page_bytes(layout: &FileLayout) -> Vec<u64> {
    layout
        .columns
        .iter()
        .map(|pages| pages.iter().map(|p| p.buffers.iter().map(|b| b.end - b.start).sum::<u64>()).max().unwrap_or(0))
        .collect()
}

/// A file eight times the budget, read by a consumer that stops for a while: the reader holds at
/// most the budget, and reads everything once in the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_stay_within_the_byte_budget_with_a_slow_consumer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("budget.leaf");
    let budget = MIB;
    let table = numeric_file(&path, 420_000, 128 * 1024).await; // 20 bytes a row: 8.4 MB
    let layout = FileLayout::parse(&std::fs::read(&path).unwrap());
    let data_bytes = layout.buffer_bytes(&[0, 1, 2]);
    let num_pages: usize = layout.columns.iter().map(|c| c.len()).sum();
    assert!(data_bytes >= 8 * budget, "the file ({data_bytes} bytes of pages) should be much larger than the budget");

    let reader = FileReader::open_path(&path).await.unwrap();
    let io = IoOptions { depth: IoDepth::Fixed(nz(4)), buffer: ByteCount(budget), ..IoOptions::LOCAL };
    let batch_size = 1024;
    // Two batches decoded at once: the first ones need only the first page of each column.
    let read = reader.read().with_batch_size(nz(batch_size)).with_io_options(io).with_decode_parallelism(nz(2));
    let mut stream = read.stream().await.unwrap();
    let mut batches = vec![stream.next().await.unwrap().unwrap()];

    // The consumer pauses: the reader fills the budget (waiting for it to get at least half
    // way, however slow the machine)...
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while stream.io_stats().bytes_read < budget / 2 {
        assert!(tokio::time::Instant::now() < deadline, "{:?}: the reader does not read ahead", stream.io_stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // ...and stops there, however long the consumer stays away.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let paused = stream.io_stats();
    // What was read is what is buffered (at most the budget) plus the first page of each
    // column, which the first batch took.
    let first_pages: u64 = max_page_bytes(&layout).iter().sum();
    assert!(paused.bytes_read <= budget + first_pages, "{paused:?}: read past the budget while the consumer was away");
    assert!(paused.reads < num_pages as u64 / 2, "{paused:?}");

    // Then it reads on, slowly.
    while let Some(batch) = stream.next().await {
        batches.push(batch.unwrap());
        if batches.len() % 64 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let stats = stream.io_stats();
    assert_batch_sizes(&batches, batch_size, table.num_rows(), "slow consumer");
    let schema = table.schema();
    assert_batches_equal(&arrow_select::concat::concat_batches(&schema, &batches).unwrap(), &table, "slow consumer");

    // Every page is smaller than the budget shared by the three columns, and pages are issued
    // in row order, so the head of the queue is never tied with the oldest buffered read when
    // the budget is full: the bypass is never taken and the budget is never exceeded.
    assert_eq!(stats.bypassed_reads, 0, "{stats:?}");
    assert!(stats.peak_reserved_bytes <= budget, "{stats:?}: peak over the budget of {budget}");
    assert!(stats.peak_reserved_bytes >= budget / 2, "{stats:?}: the budget was never used");
    // Each page is one buffer and one read (no validity, smaller than the largest read).
    assert_eq!(stats.bytes_read, data_bytes, "{stats:?}");
    assert_eq!(stats.reads, num_pages as u64, "{stats:?}");
    assert_eq!(stats.requests, num_pages as u64, "{stats:?}");
}

/// Dropping a read part way stops its I/O: queued reads are discarded and nothing more is
/// scheduled, so a reader that stops early does not read the rest of the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_read_stops_its_io() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("drop.leaf");
    numeric_file(&path, 420_000, 64 * 1024).await;
    let layout = FileLayout::parse(&std::fs::read(&path).unwrap());
    let data_bytes = layout.buffer_bytes(&[0, 1, 2]);

    let reader = FileReader::open_path(&path).await.unwrap();
    let io = IoOptions { depth: IoDepth::Fixed(nz(2)), buffer: ByteCount(512 * 1024), ..IoOptions::LOCAL };
    let mut stream = reader.read().with_batch_size(nz(1024)).with_io_options(io).stream().await.unwrap();
    stream.next().await.unwrap().unwrap();
    let counters = stream.stats();
    drop(stream);
    // Let the reads in flight land, then check nothing else followed.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stats = counters.io_stats();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(counters.io_stats(), stats, "reads went on after the stream was dropped");
    // What was read before the drop depends on how far decoding got meanwhile; far from all.
    assert!(stats.bytes_read < data_bytes / 2, "{stats:?}: read {} of {data_bytes} bytes", stats.bytes_read);
    assert_eq!(counters.reserved_bytes(), 0, "the dropped read still holds budget");
}

/// A budget smaller than one page: every read goes over it through the bypass, the read still
/// completes, and what is held never exceeds the pages of the lowest row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_smaller_than_a_page_is_bypassed_by_the_lowest_rows_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small_budget.leaf");
    let table = numeric_file(&path, 100_000, 128 * 1024).await;
    let layout = FileLayout::parse(&std::fs::read(&path).unwrap());
    let budget = 32 * 1024;
    let reader = FileReader::open_path(&path).await.unwrap();
    let io = IoOptions { depth: IoDepth::Fixed(nz(8)), buffer: ByteCount(budget), ..IoOptions::LOCAL };
    let mut stream = reader.read().with_batch_size(nz(5000)).with_io_options(io).stream().await.unwrap();
    let mut batches = Vec::new();
    let read_all = async {
        while let Some(batch) = stream.next().await {
            batches.push(batch.unwrap());
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read_all).await.expect("the read deadlocked");
    let stats = stream.io_stats();
    assert_batches_equal(
        &arrow_select::concat::concat_batches(&table.schema(), &batches).unwrap(),
        &table,
        "small budget",
    );
    let num_pages: u64 = layout.columns.iter().map(|c| c.len() as u64).sum();
    // Pages larger than their column's share of the budget are read in parts (of 64 KiB at
    // least, still more than the budget): each page once, some in two reads.
    assert!(stats.reads >= num_pages && stats.reads <= 2 * num_pages, "{stats:?}");
    // Only the last page of a column can be small enough to fit.
    assert!(stats.bypassed_reads >= num_pages - 3, "{stats:?}");
    // A page's reservation lasts until the batches cut from it are decoded, and reads go over
    // the budget only for the rows being decoded (the lowest buffered, or the pages a decoder
    // waits for): at most the two pages of each column a batch spans at a page boundary.
    let bound = budget + 2 * max_page_bytes(&layout).iter().sum::<u64>();
    assert!(stats.peak_reserved_bytes <= bound, "{stats:?}: peak over {bound}");
}

/// Pages far larger than a column's share of the budget (1,000 columns of 1 MiB pages under 16
/// MiB are the case in the field) are loaded in parts: a slow consumer's reader holds about its
/// budget plus a part of each column, not a page of each, and every row comes back right —
/// bit-packed, ALP, nullable and fixed-size-list (of ALP-RD floats) columns in parts, dictionary
/// strings whole beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_larger_than_their_share_of_the_budget_are_read_in_parts() {
    use arrow_array::{FixedSizeListArray, Float32Array, StringArray};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parts.leaf");
    let num_rows = 300_000usize;
    let mut rng = common::rng(11);
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("packed", DataType::Int64, false),
        Field::new("float", DataType::Float64, false),
        Field::new("nullable", DataType::Int32, true),
        Field::new("vector", DataType::FixedSizeList(item.clone(), 4), false),
        Field::new("label", DataType::Utf8, false),
    ]));
    let vector = Float32Array::from_iter_values((0..num_rows * 4).map(|_| rng.random::<f32>()));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values((0..num_rows).map(|_| rng.random_range(0..1i64 << 40)))),
        Arc::new(Float64Array::from_iter_values(
            (0..num_rows).map(|_| f64::from(rng.random_range(0..100_000u32)) / 100.0),
        )),
        Arc::new(Int32Array::from_iter((0..num_rows).map(|_| rng.random_bool(0.8).then(|| rng.random::<i32>())))),
        Arc::new(FixedSizeListArray::new(item, 4, Arc::new(vector), None)),
        Arc::new(StringArray::from_iter_values((0..num_rows).map(|i| format!("label {}", i % 50)))),
    ];
    let table = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let batches: Vec<RecordBatch> =
        (0..num_rows).step_by(60_000).map(|start| table.slice(start, 60_000.min(num_rows - start))).collect();
    common::files::write_file(&path, &schema, &batches, 8 * MIB).await;
    let layout = FileLayout::parse(&std::fs::read(&path).unwrap());
    let num_pages: u64 = layout.columns.iter().map(|c| c.len() as u64).sum();
    let largest: u64 = max_page_bytes(&layout).iter().sum();
    let budget = MIB;
    assert!(largest > 4 * budget, "pages of {largest} bytes should not fit the budget");

    let reader = FileReader::open_path(&path).await.unwrap();
    let io = IoOptions { depth: IoDepth::Fixed(nz(4)), buffer: ByteCount(budget), ..IoOptions::LOCAL };
    let read = reader.read().with_batch_size(nz(4096)).with_io_options(io).with_decode_parallelism(nz(1));
    let plan = read.clone().plan().await.unwrap();
    let mut stream = read.stream().await.unwrap();
    let mut got = Vec::new();
    while let Some(batch) = stream.next().await {
        got.push(batch.unwrap());
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let stats = stream.io_stats();
    assert_batches_equal(&arrow_select::concat::concat_batches(&schema, &got).unwrap(), &table, "read in parts");
    assert!(stats.reads > 2 * num_pages, "pages were read in parts: {stats:?}");
    // The scheduling loop alone plans the parts.
    assert_eq!(stats.requests, plan.requests.len() as u64, "{stats:?}");
    // The budget, and at most two parts (of 64 KiB, a bit-packed block over) of each column
    // read in parts beside the string pages read whole.
    let strings = max_page_bytes(&layout)[4];
    let bound = budget + 2 * (4 * (64 * 1024 + 8 * 1024) + strings);
    assert!(stats.peak_reserved_bytes <= bound, "{stats:?}: peak over {bound} (whole pages: {largest})");
}

/// With an I/O depth of one, reads are issued exactly in the order of the top-level rows they
/// serve, across columns whose pages hold very different numbers of rows (ties go to the
/// schema's column order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_issued_in_top_level_row_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("order.leaf");
    let num_rows = 4000;
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("narrow", DataType::Int8, false),
        Field::new("mid", DataType::Int64, false),
        Field::new("wide", DataType::FixedSizeBinary(256), false),
    ]));
    let wide: Vec<Vec<u8>> = (0..num_rows).map(|i| vec![(i % 251) as u8; 256]).collect();
    let table = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int8Array::from_iter_values((0..num_rows).map(|i| (i % 100) as i8))),
            Arc::new(Int64Array::from_iter_values((0..num_rows as i64).map(|i| i * i))),
            Arc::new(FixedSizeBinaryArray::try_from_iter(wide.iter()).unwrap()),
        ],
    )
    .unwrap();
    write_file_plain(&path, &schema, std::slice::from_ref(&table), 1024).await;
    let layout = FileLayout::parse(&std::fs::read(&path).unwrap());
    let page_counts: Vec<usize> = layout.columns.iter().map(|c| c.len()).collect();
    assert!(page_counts[0] < page_counts[1] && page_counts[1] < page_counts[2], "page counts {page_counts:?}");

    let recording = RecordingReader::open_path(&path);
    let reader = FileReader::open(recording.clone()).await.unwrap();
    reader.metadata().await.unwrap();
    let io = IoOptions {
        depth: IoDepth::Fixed(nz(1)),
        coalesce: CoalesceOptions { gap: ByteCount(0), max_read: ByteCount(1 << 30) },
        ..IoOptions::LOCAL
    };

    for rows in [0..num_rows as u64, 1500..2601, 3999..4000] {
        recording.clear();
        let read = reader.read().with_row_range(rows.clone()).with_io_options(io).with_batch_size(nz(100));
        let out = read_to_end(read).await.unwrap();
        let expected_table = table.slice(rows.start as usize, (rows.end - rows.start) as usize);
        assert_batches_equal(&out.concat(), &expected_table, &format!("rows {rows:?}"));

        // Each read, as (top-level row it serves, column, page).
        let issued: Vec<(u64, u32, usize)> = recording
            .reads()
            .iter()
            .map(|read| {
                let (column, page) = layout.page_of(read).unwrap_or_else(|| panic!("read {read:?} is not in a page"));
                let first_row = layout.columns[column as usize][page].first_row;
                (first_row.max(rows.start), column, page)
            })
            .collect();
        // What the design asks for: every page holding selected rows, lowest row first, ties in
        // column order.
        let mut expected: Vec<(u64, u32, usize)> = layout
            .columns
            .iter()
            .enumerate()
            .flat_map(|(column, pages)| {
                pages.iter().enumerate().filter_map(move |(index, page)| {
                    let page_rows = page.first_row..page.first_row + page.num_rows;
                    (page_rows.start < rows.end && page_rows.end > rows.start).then_some((
                        page_rows.start.max(rows.start),
                        column as u32,
                        index,
                    ))
                })
            })
            .collect();
        expected.sort();
        assert_eq!(issued, expected, "rows {rows:?}: reads out of row order");
        if rows.end - rows.start > 1000 {
            let columns: Vec<u32> = issued.iter().map(|(_, c, _)| *c).collect();
            assert!(!columns.is_sorted(), "rows {rows:?}: the columns' reads should interleave");
        }
    }
}

/// A file with validity, strings (indirect I/O when read partially), booleans, the null type
/// and views.
async fn mixed_file(path: &Path, num_rows: usize, page_size: u64) -> RecordBatch {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("lb", DataType::LargeBinary, false),
        Field::new("f", DataType::Boolean, true),
        Field::new("n", DataType::Null, true),
        Field::new("v", DataType::Utf8View, false),
    ]));
    let mut rng = common::rng(42);
    let table = random_table(&mut rng, &schema, num_rows);
    write_file_plain(path, &schema, std::slice::from_ref(&table), page_size).await;
    table
}

/// The first selected row at or after `start`, in sorted ranges.
fn first_selected_from(selection: &[Range<u64>], page: Range<u64>) -> Option<u64> {
    selection.iter().find(|r| r.end > page.start && r.start < page.end).map(|r| r.start.max(page.start))
}

struct PlanCheck<'a> {
    recording: &'a RecordingReader,
    layout: &'a FileLayout,
    table: &'a RecordBatch,
}

impl PlanCheck<'_> {
    /// Plans `read`, runs it, and checks that the direct reads of the plan are exactly the reads
    /// made (apart from the indirect ones, which must be string data of pages the plan has an
    /// indirect request for, within its upper bound). `selection` is the read's rows,
    /// `columns` its columns as indices into the file's schema.
    async fn check(&self, read: ReadBuilder, selection: &RowSelection, columns: &[usize], what: &str) {
        let selection = selection.ranges();
        let plan = read.clone().plan().await.unwrap();
        self.recording.clear();
        let out = read_to_end(read).await.unwrap();
        let recorded = self.recording.reads();

        let expected = self.expected(selection, columns);
        assert_batches_equal(&out.concat(), &expected, what);

        let direct: Vec<Range<u64>> =
            plan.requests.iter().filter(|r| r.kind == RequestKind::Direct).flat_map(|r| r.reads.clone()).collect();
        let indirect = self.check_reads(&plan, &recorded, selection, what);
        let stats = out.stats;
        assert_eq!(stats.requests, plan.requests.len() as u64, "{what}: {stats:?}");
        assert_eq!(stats.indirect_requests, plan.total().indirect_requests, "{what}: {stats:?}");
        assert_eq!(stats.reads, recorded.len() as u64, "{what}: {stats:?}");
        assert_eq!(stats.reads, (direct.len() + indirect.len()) as u64, "{what}: {stats:?}");
        assert_eq!(stats.bytes_read, recorded.iter().map(|r| r.end - r.start).sum::<u64>(), "{what}: {stats:?}");
        assert_eq!(plan.total().reads, direct.len() as u64, "{what}");
        // The plan's bytes are the bytes requested: ranges of one request may overlap (two
        // rows' validity bits in one byte), which a read fetches once.
        let direct_bytes: u64 = direct.iter().map(|r| r.end - r.start).sum();
        assert!(
            plan.total().bytes >= direct_bytes,
            "{what}: {} bytes planned, {direct_bytes} read",
            plan.total().bytes
        );
        assert_eq!(plan.total().read_bytes, direct_bytes, "{what}");
        let indirect_bytes: u64 = indirect.iter().map(|r| r.end - r.start).sum();
        assert_eq!(stats.bytes_read, direct_bytes + indirect_bytes, "{what}: {stats:?}");
    }

    /// Checks `recorded` against the plan and returns the indirect reads.
    fn check_reads(
        &self,
        plan: &looseleaf::IoPlan,
        recorded: &[Range<u64>],
        selection: &[Range<u64>],
        what: &str,
    ) -> Vec<Range<u64>> {
        let direct: Vec<Range<u64>> =
            plan.requests.iter().filter(|r| r.kind == RequestKind::Direct).flat_map(|r| r.reads.clone()).collect();
        let indirect = subtract_reads(recorded, &direct, what);
        let planned_indirect: Vec<_> = plan.requests.iter().filter(|r| r.kind == RequestKind::Indirect).collect();
        for read in &indirect {
            let (column, index) =
                self.layout.page_of(read).unwrap_or_else(|| panic!("{what}: read {read:?} outside pages"));
            let page = &self.layout.columns[column as usize][index];
            assert!(
                page.data_buffers.iter().any(|b| read.start >= b.start && read.end <= b.end),
                "{what}: unplanned read {read:?} is not string data"
            );
            let priority = first_selected_from(selection, page.first_row..page.first_row + page.num_rows).unwrap();
            assert!(
                planned_indirect.iter().any(|r| r.column == column && r.priority.0 == priority),
                "{what}: indirect read {read:?} of column {column} at row {priority} has no planned indirect request"
            );
        }
        let indirect_bytes: u64 = indirect.iter().map(|r| r.end - r.start).sum();
        let bound: u64 = planned_indirect.iter().map(|r| r.bytes).sum();
        assert!(indirect_bytes <= bound, "{what}: indirect reads of {indirect_bytes} bytes, planned at most {bound}");
        indirect
    }

    fn expected(&self, selection: &[Range<u64>], columns: &[usize]) -> RecordBatch {
        let rows: Vec<u64> = selection.iter().flat_map(|r| r.clone()).collect();
        let taken = arrow_select::take::take_record_batch(self.table, &UInt64Array::from(rows)).unwrap();
        taken.project(columns).unwrap()
    }
}

/// The plan of a read lists exactly the reads it makes: direct reads one for one, indirect ones
/// (string data of partially read pages) counted and bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_are_exactly_the_reads_made() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.leaf");
    let table = mixed_file(&path, 5000, 2048).await;
    let layout = FileLayout::parse(&std::fs::read(&path).unwrap());
    let recording = RecordingReader::open_path(&path);
    let reader = FileReader::open(recording.clone()).await.unwrap();
    // Load every column's metadata now, so that the reads below are the reads of data only.
    reader.metadata().await.unwrap();
    let check = PlanCheck { recording: &recording, layout: &layout, table: &table };
    let all: Vec<usize> = (0..table.num_columns()).collect();
    let n = table.num_rows() as u64;
    let exact = |io: IoOptions| IoOptions { coalesce: CoalesceOptions { gap: ByteCount(0), ..io.coalesce }, ..io };
    let local = exact(IoOptions::LOCAL);

    check.check(reader.read().with_io_options(local), &RowSelection::range(0..n), &all, "full scan").await;
    let plan = reader.read().plan().await.unwrap();
    assert_eq!(plan.total().indirect_requests, 0, "a full scan reads whole pages: no indirect step");

    let read = reader.read().with_columns(vec!["v".into(), "i".into(), "n".into()]).with_io_options(local);
    check.check(read, &RowSelection::range(0..n), &[5, 0, 4], "projection").await;

    let read = reader.read().with_row_range(1234..3456).with_io_options(local).with_batch_size(nz(100));
    check.check(read, &RowSelection::range(1234..3456), &all, "row range").await;
    let plan = reader.read().with_row_range(1234..3456).plan().await.unwrap();
    // Small string pages are read whole, whatever rows are wanted: a second round trip would
    // cost more than the unwanted bytes.
    assert_eq!(plan.total().indirect_requests, 0, "string pages under SMALL_PAGE bytes are read whole");

    // Reads split into pieces of at most 100 bytes.
    let split = IoOptions {
        depth: IoDepth::Fixed(nz(2)),
        buffer: ByteCount(MIB),
        coalesce: CoalesceOptions { gap: ByteCount(0), max_read: ByteCount(100) },
        ..IoOptions::LOCAL
    };
    let read = reader.read().with_row_range(10..4990).with_io_options(split);
    check.check(read, &RowSelection::range(10..4990), &all, "split reads").await;

    // Scattered rows.
    let mut rng = common::rng(9);
    let mut indices: Vec<u64> = (0..60).map(|_| rng.random_range(0..n)).collect();
    indices.sort_unstable();
    indices.dedup();
    let read = reader.read().with_selection(RowSelection::from_sorted_indices(&indices)).with_io_options(local);
    check.check(read, &RowSelection::from_sorted_indices(&indices), &all, "scattered rows").await;

    // `take` of a few rows, unsorted and repeated, on the string columns of a file of large
    // pages: offsets first, then the data, indirectly.
    let big_path = dir.path().join("plan-big.leaf");
    let big_table = mixed_file(&big_path, 60_000, 512 * 1024).await;
    let big_layout = FileLayout::parse(&std::fs::read(&big_path).unwrap());
    assert!(
        big_layout.columns[1].iter().any(|p| p.num_rows > 0
            && p.data_buffers.iter().map(|b| b.end - b.start).sum::<u64>()
                > looseleaf::encodings::physical::binary::SMALL_PAGE),
        "the big file should have string pages larger than SMALL_PAGE"
    );
    let recording = RecordingReader::open_path(&big_path);
    let reader = FileReader::open(recording.clone()).await.unwrap();
    reader.metadata().await.unwrap();
    let check = PlanCheck { recording: &recording, layout: &big_layout, table: &big_table };
    let n = big_table.num_rows() as u64;
    let mut indices: Vec<u64> = (0..12).map(|_| rng.random_range(0..n)).collect();
    indices.sort_unstable();
    indices.dedup();
    let ranges: Vec<Range<u64>> = RowSelection::from_sorted_indices(&indices).ranges().to_vec();
    let read = reader
        .read()
        .with_selection(RowSelection::from_sorted_indices(&indices))
        .with_columns(vec!["s".into(), "v".into()]);
    let plan = read.plan().await.unwrap();
    assert!(plan.total().indirect_requests > 0, "a few rows of large string pages need an indirect step");
    let mut shuffled: Vec<u64> = indices.iter().chain(&indices[..3]).copied().collect();
    shuffled.shuffle(&mut rng);
    recording.clear();
    let taken = reader.take(&shuffled, Some(&["s".to_string(), "v".to_string()])).await.unwrap();
    let expected = arrow_select::take::take_record_batch(&big_table, &UInt64Array::from(shuffled.clone())).unwrap();
    assert_batches_equal(&taken, &expected.project(&[1, 5]).unwrap(), "take");
    let indirect = check.check_reads(&plan, &recording.reads(), &ranges, "take");
    assert!(!indirect.is_empty(), "take of scattered strings reads their data indirectly");
}
