//! Nested types: structs, lists, large lists, maps and fixed-size lists, nested up to four
//! levels, round trip through every kind of read (scan, projection of top-level fields and of
//! nested paths, row ranges, `take`); lists read through the whole-page shortcut make no
//! indirect I/O, lists read in part do, with exact priorities; tiny budgets do not deadlock;
//! damaged offsets and inconsistent nested schemas give errors.
//!
//! The truth is always the arrays that were written (sliced, projected with
//! [`common::expected::narrow`], or taken row by row with `arrow_select`), never another output
//! of the reader.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::expected::{expected_projection, rows_of};
use common::nz;
use common::round_trip::{check_all_reads, round_trip_case};
use looseleaf::ByteCount;
use looseleaf::io::IoDepth;

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use common::assertions::assert_batches_equal;
use common::files::{write_file, write_file_plain};
use common::layout::FileLayout;
use common::readers::RecordingReader;
use common::reads::read_to_end;
use common::runtime;
use looseleaf::io::CoalesceOptions;
use looseleaf::{FileReader, IoOptions, RowSelection};
use looseleaf_testing::generate::{NestedLimits, random_nested_schema, random_nested_table, split_randomly};
use proptest::prelude::*;
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

fn nested_case(seed: u64, num_rows: usize, page_size: u64, max_input_batch: usize, batch_size: usize) {
    round_trip_case(seed, num_rows, page_size, max_input_batch, batch_size, |rng, num_rows| {
        let schema = random_nested_schema(rng, 4, NestedLimits::default());
        random_nested_table(rng, &schema, num_rows)
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_nested_files_round_trip(
        seed in any::<u64>(),
        num_rows in prop_oneof![1 => Just(0usize), 2 => 1usize..20, 7 => 20usize..1500],
        page_size in prop_oneof![64u64..=512, 513u64..=8192, 8193u64..=65536],
        max_input_batch in prop_oneof![1usize..=3, 4usize..=300, 301usize..=2000],
        batch_size in prop_oneof![1usize..=3, 4usize..=300, 301usize..=2000],
    ) {
        nested_case(seed, num_rows, page_size, max_input_batch, batch_size);
    }
}

/// Fixed-size lists of every kind the format distinguishes, with pages where some items are
/// null next to pages where none is (which a plain page of wider values stores differently), read
/// in batches that span pages.
#[test]
fn fixed_size_lists_of_every_shape() {
    use arrow_array::{FixedSizeListArray, Int32Array, StringArray};
    use arrow_buffer::NullBuffer;
    use arrow_schema::{DataType, Field};
    let num_rows = 600usize;
    let mut columns: Vec<(Field, ArrayRef)> = Vec::new();
    for dimension in [0i32, 1, 3, 5] {
        let d = dimension as usize;
        // Items null only in rows 100..110 and 400..403: most pages have no null item.
        let item_nulls = NullBuffer::from(
            (0..num_rows * d)
                .map(|i| !(100..110).contains(&(i / d.max(1))) && !(400..403).contains(&(i / d.max(1))))
                .collect::<Vec<bool>>(),
        );
        let ints = Int32Array::new((0..(num_rows * d) as i32).collect(), Some(item_nulls.clone()));
        let strings =
            StringArray::from_iter((0..num_rows * d).map(|i| item_nulls.is_valid(i).then(|| format!("s{i}"))));
        let list_nulls = NullBuffer::from((0..num_rows).map(|r| r % 7 != 3).collect::<Vec<bool>>());
        for (name, item, values) in [
            ("ints", DataType::Int32, Arc::new(ints) as ArrayRef),
            ("strings", DataType::Utf8, Arc::new(strings) as ArrayRef),
        ] {
            let item = Arc::new(Field::new("item", item, true));
            for nulls in [None, Some(list_nulls.clone())] {
                let array = FixedSizeListArray::try_new_with_length(
                    item.clone(),
                    dimension,
                    values.clone(),
                    nulls.clone(),
                    num_rows,
                )
                .unwrap();
                let field =
                    Field::new(format!("{name}_{d}_{}", nulls.is_some()), array.data_type().clone(), nulls.is_some());
                columns.push((field, Arc::new(array)));
            }
        }
    }
    let schema: SchemaRef = Arc::new(Schema::new(columns.iter().map(|(f, _)| f.clone()).collect::<Vec<_>>()));
    let table = RecordBatch::try_new(schema.clone(), columns.into_iter().map(|(_, a)| a).collect()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixed_size_lists.leaf");
    runtime().block_on(async {
        write_file(&path, &schema, std::slice::from_ref(&table), 256).await;
        let reader = FileReader::open_path(&path).await.unwrap();
        if std::env::var("SHOWMETA").is_ok() {
            for c in reader.metadata().await.unwrap().columns {
                println!(
                    "{} {}: {:?}",
                    c.column,
                    c.field,
                    c.pages.iter().map(|p| (p.num_rows, p.encoding.clone())).collect::<Vec<_>>()
                );
            }
        }
        let mut rng = common::rng(99);
        for batch_size in [1, 77, 600] {
            check_all_reads(&mut rng, &reader, &table, batch_size).await;
        }
    });
}

/// Arrow lets a field that is not nullable hold nulls where its parent is null; a struct or
/// fixed-size list that is not nullable has no validity column to keep them in, while its
/// non-nullable children keep theirs. Such arrays round trip (equal wherever the parent is
/// valid, which is what Arrow equality compares), through every kind of read.
#[test]
fn non_nullable_fields_with_nulls_under_null_parents_round_trip() {
    use arrow_array::{FixedSizeListArray, Int32Array, Int64Array, ListArray, StructArray};
    use arrow_buffer::{NullBuffer, OffsetBuffer};
    use arrow_schema::{DataType, Field, Fields};
    let num_rows = 500usize;
    let outer_nulls = NullBuffer::from((0..num_rows).map(|r| r % 3 != 0).collect::<Vec<bool>>());
    // Null where the outer struct is, every other time.
    let middle_nulls = NullBuffer::from((0..num_rows).map(|r| r % 6 != 0).collect::<Vec<bool>>());
    let item = Arc::new(Field::new("item", DataType::Int64, false));
    let list = ListArray::try_new(
        item.clone(),
        OffsetBuffer::from_lengths((0..num_rows).map(|r| r % 4)),
        Arc::new(Int64Array::from_iter_values(0..(0..num_rows).map(|r| r % 4).sum::<usize>() as i64)),
        Some(middle_nulls.clone()),
    )
    .unwrap();
    let x = Int32Array::new((0..num_rows as i32).collect(), Some(middle_nulls.clone()));
    let middle_fields = Fields::from(vec![
        Field::new("list", list.data_type().clone(), false),
        Field::new("x", DataType::Int32, false),
    ]);
    let middle =
        StructArray::try_new(middle_fields.clone(), vec![Arc::new(list), Arc::new(x)], Some(middle_nulls.clone()))
            .unwrap();
    // A fixed-size list of structs that is not nullable, null (with its items) where the outer
    // struct is.
    let pair_fields = Fields::from(vec![Field::new("a", DataType::Int32, true)]);
    let pair_nulls = middle_nulls.expand(2);
    let pairs_items = StructArray::try_new(
        pair_fields.clone(),
        vec![Arc::new(Int32Array::from_iter_values(0..2 * num_rows as i32))],
        Some(pair_nulls),
    )
    .unwrap();
    let pair_item = Arc::new(Field::new("item", DataType::Struct(pair_fields), false));
    let pairs = FixedSizeListArray::try_new(pair_item, 2, Arc::new(pairs_items), Some(middle_nulls)).unwrap();
    let outer_fields = Fields::from(vec![
        Field::new("middle", DataType::Struct(middle_fields), false),
        Field::new("pairs", pairs.data_type().clone(), false),
    ]);
    let outer = StructArray::try_new(outer_fields, vec![Arc::new(middle), Arc::new(pairs)], Some(outer_nulls)).unwrap();
    let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new("outer", outer.data_type().clone(), true)]));
    let table = RecordBatch::try_new(schema.clone(), vec![Arc::new(outer)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("masked_nulls.leaf");
    runtime().block_on(async {
        write_file(&path, &schema, std::slice::from_ref(&table), 200).await;
        let reader = FileReader::open_path(&path).await.unwrap();
        let mut rng = common::rng(13);
        for batch_size in [1, 64, 500] {
            check_all_reads(&mut rng, &reader, &table, batch_size).await;
        }
        // Projections that leave out the children that imply the nulls of `middle` (and of
        // `pairs`, whose item is never null where the list is valid).
        for (path, chain) in
            [("outer.middle.list", vec![0, 0]), ("outer.middle.x", vec![0, 1]), ("outer.pairs.a", vec![1, 0, 0])]
        {
            let expected = expected_projection(&table, &vec![(path.to_string(), 0, chain)]);
            let out =
                read_to_end(reader.read().with_columns(vec![path.to_string()]).with_batch_size(nz(77))).await.unwrap();
            assert_batches_equal(&out.concat(), &expected, path);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// I/O behaviour

/// Items per list in [`list_and_values_file`].
const ITEMS_PER_LIST: u64 = 4;

/// A file of a non-nullable `list<int64>` column `l` of four items a row and an `int64` column
/// `x`, cut into pages of 1 KiB, and the table written to it. Columns: 0 = `l`'s offsets, 1 =
/// its items, 2 = `x`.
async fn list_and_values_file(path: &std::path::Path, num_rows: usize) -> RecordBatch {
    use arrow_array::{Int64Array, ListArray};
    use arrow_buffer::OffsetBuffer;
    use arrow_schema::{DataType, Field};
    let item = Arc::new(Field::new("item", DataType::Int64, false));
    let items = Int64Array::from_iter_values(0..num_rows as i64 * ITEMS_PER_LIST as i64);
    let lists = ListArray::try_new(
        item.clone(),
        OffsetBuffer::from_lengths(vec![ITEMS_PER_LIST as usize; num_rows]),
        Arc::new(items),
        None,
    )
    .unwrap();
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("l", DataType::List(item), false),
        Field::new("x", DataType::Int64, false),
    ]));
    let x = Int64Array::from_iter_values((0..num_rows as i64).map(|i| i * 3));
    let table = RecordBatch::try_new(schema.clone(), vec![Arc::new(lists), Arc::new(x)]).unwrap();
    write_file_plain(path, &schema, std::slice::from_ref(&table), 1024).await;
    table
}

/// Checks that no read of `x` serving a row at least `margin` rows after a row served by an
/// indirect item read of `l` was issued before that item read. `reads` are in the order
/// issued; `selected` are the rows read and `partial` the row ranges of the offsets pages read
/// in part (whose items are read indirectly).
fn assert_items_not_starved(
    layout: &FileLayout,
    reads: &[std::ops::Range<u64>],
    selected: &[u64],
    partial: &[std::ops::Range<u64>],
    margin: u64,
    what: &str,
) -> usize {
    // Each read as (column, lowest selected row it serves).
    let served: Vec<(u32, Option<u64>)> = reads
        .iter()
        .map(|read| {
            let (column, index) = layout.page_of(read).unwrap_or_else(|| panic!("{what}: read {read:?} outside pages"));
            let page = &layout.columns[column as usize][index];
            let row = match column {
                // Items: the rows whose lists hold them, if those lists are in a partial page.
                1 => {
                    let rows =
                        page.first_row / ITEMS_PER_LIST..(page.first_row + page.num_rows).div_ceil(ITEMS_PER_LIST);
                    selected.iter().copied().find(|r| rows.contains(r) && partial.iter().any(|p| p.contains(r)))
                }
                2 => selected.iter().copied().find(|r| (page.first_row..page.first_row + page.num_rows).contains(r)),
                _ => None,
            };
            (column, row)
        })
        .collect();
    let mut indirect_items = 0;
    for (i, (column, row)) in served.iter().enumerate() {
        let (1, Some(row)) = (column, row) else { continue };
        indirect_items += 1;
        let starved: Vec<(usize, u64)> = served[..i]
            .iter()
            .enumerate()
            .filter_map(|(j, (c, r))| match (c, r) {
                (2, Some(r)) if *r >= row + margin => Some((j, *r)),
                _ => None,
            })
            .collect();
        assert!(
            starved.is_empty(),
            "{what}: the item read {i} serving row {row} was issued after reads of x for later rows \
             (read index, row): {starved:?}; all reads as (column, row): {served:?}"
        );
    }
    indirect_items
}

/// Priority works for indirect I/O: the items of lists read in part are found only once their
/// offsets are read, when the I/O queue is already full of reads of other columns for later
/// rows. They are requested with the exact top-level row they serve, so they go ahead of those.
///
/// The argument, and why it is robust: the I/O depth is one and every read takes 3 ms, so the
/// scheduling loop (which never waits) has queued every direct read of the read — offsets,
/// whole pages' items and `x` — long before the first read completes. When the offsets of a
/// partly read page arrive, the read issued next is the head of that queue (the lowest row),
/// and the indirect step then submits the items at the row of their lists, below everything
/// queued for later rows. So at most a read or two can pass between the offsets and their
/// items, while a read of `x` for rows `margin` (four `x` pages) later sits behind twenty or
/// more reads in the queue: only an item request queued at a later row (a wrong priority),
/// or a step held up for the time of twenty reads, would let it go first (this is the case that
/// tells a right priority from a wrong one). With a budget of about one page the queue stays
/// full because the budget holds back later rows; the same order must hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item_reads_of_partly_read_lists_go_before_later_rows() {
    use common::readers::SlowReader;
    use looseleaf::io::LocalFileReader;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lists.leaf");
    let num_rows = 2048u64;
    let table = list_and_values_file(&path, num_rows as usize).await;
    let layout = FileLayout::parse(&std::fs::read(&path).unwrap());
    let x_page_rows = layout.columns[2][0].num_rows;
    assert!(layout.columns.iter().all(|pages| pages.len() >= 16), "small pages expected: {layout:?}");
    let margin = 4 * x_page_rows;

    // Where the selections start: the middle of the second offsets page.
    let page = &layout.columns[0][1];
    let start = page.first_row + page.num_rows / 2 + 5;
    let scattered: Vec<u64> = vec![start, start + 1, start + 300, 1000, 1001, num_rows - 100, num_rows - 1];
    // Budgets of about one page of what each selection reads: whole pages for the range, a few
    // values (plain values and offsets are read in exact ranges) for the scattered rows.
    let selections = [
        ("row range", RowSelection::range(start..num_rows), 1536),
        ("scattered rows", RowSelection::from_sorted_indices(&scattered), 24),
    ];
    for (selection_name, selection, small_budget) in selections {
        let selected: Vec<u64> = selection.ranges().iter().flat_map(|r| r.clone()).collect();
        // The offsets pages read in part.
        let partial: Vec<std::ops::Range<u64>> = layout.columns[0]
            .iter()
            .map(|p| p.first_row..p.first_row + p.num_rows)
            .filter(|rows| {
                let n = selected.iter().filter(|r| rows.contains(r)).count() as u64;
                n > 0 && n < rows.end - rows.start
            })
            .collect();
        for (budget_name, buffer_bytes) in [("a deep queue", 1 << 30), ("a small budget", small_budget)] {
            let what = format!("{selection_name} with {budget_name}");
            let recording = RecordingReader::new(SlowReader::new(
                Arc::new(LocalFileReader::open(&path).unwrap()),
                std::time::Duration::from_millis(3),
            ));
            let reader = FileReader::open(recording.clone()).await.unwrap();
            reader.metadata().await.unwrap();
            recording.clear();
            let io = IoOptions {
                depth: IoDepth::Fixed(nz(1)),
                buffer: ByteCount(buffer_bytes),
                coalesce: CoalesceOptions { gap: ByteCount(0), max_read: ByteCount(1 << 20) },
                ..IoOptions::LOCAL
            };
            let read = reader.read().with_selection(selection.clone()).with_io_options(io).with_batch_size(nz(64));
            let out = tokio::time::timeout(Duration::from_secs(60), read_to_end(read)).await.expect("hung").unwrap();
            assert_batches_equal(&out.concat(), &rows_of(&table, &selected), &what);
            assert!(out.stats.indirect_requests > 0, "{what}: {:?}", out.stats);
            let checked = assert_items_not_starved(&layout, &recording.reads(), &selected, &partial, margin, &what);
            assert!(checked >= 2, "{what}: expected item reads of partly read pages, found {checked}");
            if buffer_bytes < 1 << 20 {
                assert!(out.stats.bypassed_reads > 0, "{what}: the budget should have been full: {:?}", out.stats);
            }
        }
    }
}

/// A table of list columns of every shape (lists of strings, of lists, of structs holding
/// lists, large lists, maps, fixed-size lists of lists), random lengths and nulls.
fn list_table(rng: &mut StdRng, num_rows: usize) -> RecordBatch {
    use arrow_schema::{DataType, Field, Fields};
    let item = |data_type: DataType, nullable: bool| Arc::new(Field::new("item", data_type, nullable));
    let point = Fields::from(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("inner", DataType::List(item(DataType::Int16, true)), true),
    ]);
    let entries = Field::new(
        "entries",
        DataType::Struct(
            vec![
                Field::new("key", DataType::Utf8, false),
                Field::new("value", DataType::List(item(DataType::Int32, true)), true),
            ]
            .into(),
        ),
        false,
    );
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("ints", DataType::List(item(DataType::Int32, true)), true),
        Field::new("strings", DataType::List(item(DataType::Utf8, true)), true),
        Field::new("nested", DataType::List(item(DataType::List(item(DataType::Int64, false)), true)), false),
        Field::new("structs", DataType::List(item(DataType::Struct(point), true)), true),
        Field::new("large", DataType::LargeList(item(DataType::Utf8View, true)), true),
        Field::new("map", DataType::Map(Arc::new(entries), false), true),
        Field::new("fixed", DataType::FixedSizeList(item(DataType::List(item(DataType::Int32, true)), true), 3), true),
    ]));
    random_nested_table(rng, &schema, num_rows)
}

/// A full scan of list columns takes the whole-page shortcut everywhere, nested lists
/// included: every items page is scheduled from the page metadata in the scheduling loop, with
/// no offsets-then-items round trip, so the plan holds no indirect request and lists every read
/// the scan makes, exactly. (A full scan wants every row of every page, strings included, so
/// no string page is read in part; the pages are kept under
/// [`SMALL_PAGE`](looseleaf::encodings::physical::binary::SMALL_PAGE) anyway, so that string
/// pages partly covered by a run of list pages would be read whole too.)
///
/// A few rows of large pages of lists, on the other hand, need the offsets first: the plan and
/// the counters both show indirect requests, and the reads the plan could not list (the items)
/// stay within its upper bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_scans_of_lists_make_no_indirect_requests_and_takes_do() {
    use arrow_array::UInt64Array;
    use looseleaf::io::RequestKind;
    let dir = tempfile::tempdir().unwrap();
    let mut rng = common::rng(31);
    for (name, num_rows, page_size) in [("small pages", 3000, 4096u64), ("large pages", 20_000, 64 * 1024)] {
        let table = list_table(&mut rng, num_rows);
        let path = dir.path().join(format!("{}.leaf", name.replace(' ', "_")));
        write_file(&path, &table.schema(), std::slice::from_ref(&table), page_size).await;
        let layout = FileLayout::parse(&std::fs::read(&path).unwrap());
        assert!(layout.columns.iter().all(|pages| !pages.is_empty()));
        let recording = RecordingReader::open_path(&path);
        let reader = FileReader::open(recording.clone()).await.unwrap();
        reader.metadata().await.unwrap();

        for batch_size in [100, 5000] {
            let what = format!("{name}, full scan in batches of {batch_size}");
            let read = reader.read().with_batch_size(nz(batch_size));
            let plan = read.clone().plan().await.unwrap();
            assert_eq!(plan.total().indirect_requests, 0, "{what}: the plan has indirect requests");
            recording.clear();
            let out = read_to_end(read).await.unwrap();
            assert_batches_equal(&out.concat(), &table, &what);
            assert_eq!(out.stats.indirect_requests, 0, "{what}: {:?}", out.stats);
            let direct: Vec<std::ops::Range<u64>> = plan.requests.iter().flat_map(|r| r.reads.clone()).collect();
            let recorded = recording.reads();
            let unplanned = common::readers::subtract_reads(&recorded, &direct, &what);
            assert!(unplanned.is_empty(), "{what}: reads the plan does not list: {unplanned:?}");
            assert_eq!(recorded.len(), direct.len(), "{what}");
            assert_eq!(out.stats.requests, plan.requests.len() as u64, "{what}: {:?}", out.stats);
            // Every byte of every page is read, once (items pages shared by two list pages too).
            let all: Vec<u32> = (0..layout.columns.len() as u32).collect();
            assert_eq!(out.stats.bytes_read, plan.total().read_bytes, "{what}: {:?}", out.stats);
            assert!(out.stats.bytes_read >= layout.buffer_bytes(&all), "{what}: {:?}", out.stats);
            let mut sorted = recorded.clone();
            sorted.sort_by_key(|r| (r.start, r.end));
            let overlaps: Vec<_> = sorted.windows(2).filter(|w| w[1].start < w[0].end).collect();
            assert!(overlaps.is_empty(), "{what}: bytes read twice: {overlaps:?}");
        }

        // A few scattered rows: their pages of lists are read in part, so their items come
        // through indirect steps.
        let mut indices: Vec<u64> = (0..8).map(|_| rng.random_range(0..num_rows as u64)).collect();
        indices.sort_unstable();
        indices.dedup();
        let selection = RowSelection::from_sorted_indices(&indices);
        let what = format!("{name}, rows {indices:?}");
        let plan = reader.read().with_selection(selection.clone()).plan().await.unwrap();
        assert!(plan.total().indirect_requests > 0, "{what}: the plan has no indirect request");
        assert!(plan.requests.iter().all(|r| r.kind == RequestKind::Direct || r.reads.is_empty()));
        recording.clear();
        let out = read_to_end(reader.read().with_selection(selection)).await.unwrap();
        assert_batches_equal(&out.concat(), &rows_of(&table, &indices), &what);
        assert!(out.stats.indirect_requests > 0, "{what}: {:?}", out.stats);
        let direct: Vec<std::ops::Range<u64>> = plan.requests.iter().flat_map(|r| r.reads.clone()).collect();
        let indirect = common::readers::subtract_reads(&recording.reads(), &direct, &what);
        assert!(!indirect.is_empty(), "{what}: no read beyond the plan's direct ones");
        let indirect_bytes: u64 = indirect.iter().map(|r| r.end - r.start).sum();
        assert!(
            indirect_bytes <= plan.total().indirect_max_bytes,
            "{what}: {indirect_bytes} indirect bytes read, the plan bounds them by {}",
            plan.total().indirect_max_bytes
        );

        // The same rows through `take`, unsorted and repeated.
        let mut shuffled: Vec<u64> = indices.iter().chain(&indices[..2]).copied().collect();
        shuffled.shuffle(&mut rng);
        let taken = reader.take(&shuffled, None).await.unwrap();
        assert_batches_equal(&taken, &rows_of(&table, &shuffled), &format!("{name}, take {shuffled:?}"));
        let positions = UInt64Array::from(shuffled.clone());
        assert_batches_equal(&taken, &arrow_select::take::take_record_batch(&table, &positions).unwrap(), "take");
    }
}

/// A one-byte budget at an I/O depth of one, over data nested four deep (lists of structs of
/// lists of lists, maps of lists, fixed-size lists of lists): every read goes past the budget,
/// through the priority bypass or because the decoder waits for it, and every read completes —
/// scans, row ranges starting inside pages (indirect I/O at every level of lists) and `take`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_byte_budgets_do_not_deadlock_on_deep_nesting() {
    use arrow_schema::{DataType, Field, Fields};
    let item = |data_type: DataType, nullable: bool| Arc::new(Field::new("item", data_type, nullable));
    let inner = Fields::from(vec![
        Field::new("grid", DataType::List(item(DataType::List(item(DataType::Int32, true)), true)), true),
        Field::new("tags", DataType::FixedSizeList(item(DataType::List(item(DataType::Utf8, true)), true), 2), false),
        Field::new(
            "attrs",
            DataType::Map(
                Arc::new(Field::new(
                    "entries",
                    DataType::Struct(
                        vec![
                            Field::new("key", DataType::Utf8, false),
                            Field::new("value", DataType::LargeList(item(DataType::Float64, true)), true),
                        ]
                        .into(),
                    ),
                    false,
                )),
                false,
            ),
            true,
        ),
    ]);
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("deep", DataType::List(item(DataType::Struct(inner), true)), true),
        Field::new("words", DataType::List(item(DataType::List(item(DataType::Utf8, false)), true)), true),
    ]));
    let mut rng = common::rng(47);
    let table = random_nested_table(&mut rng, &schema, 2000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.leaf");
    write_file(&path, &schema, &split_randomly(&mut rng, &table, 300), 512).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    let io = IoOptions { depth: IoDepth::Fixed(nz(1)), buffer: ByteCount(1), ..IoOptions::LOCAL };
    let reads = [
        ("full scan", RowSelection::range(0..2000), 64),
        ("rows inside pages", RowSelection::range(333..1777), 100),
        ("scattered rows", RowSelection::from_sorted_indices(&[1, 2, 500, 501, 1500, 1999]), 4),
    ];
    for (what, selection, batch_size) in reads {
        let read = reader.read().with_selection(selection.clone()).with_io_options(io).with_batch_size(nz(batch_size));
        let out = tokio::time::timeout(Duration::from_secs(60), read_to_end(read))
            .await
            .unwrap_or_else(|_| panic!("{what}: the read deadlocked"))
            .unwrap();
        let rows: Vec<u64> = selection.ranges().iter().flat_map(|r| r.clone()).collect();
        assert_batches_equal(&out.concat(), &rows_of(&table, &rows), what);
        let stats = out.stats;
        assert!(stats.bypassed_reads + stats.urgent_reads > 0, "{what}: {stats:?}");
        assert_eq!(stats.bypassed_reads, stats.reads, "{what}: every read exceeds a one-byte budget: {stats:?}");
        if what != "full scan" {
            assert!(stats.indirect_requests > 0, "{what}: {stats:?}");
        }
    }
    let indices = [1999, 0, 1000, 0, 1001, 7];
    let taken = tokio::time::timeout(Duration::from_secs(60), reader.take(&indices, None))
        .await
        .expect("take deadlocked")
        .unwrap();
    assert_batches_equal(&taken, &rows_of(&table, &indices), "take");
}

// ---------------------------------------------------------------------------------------------
// Bad input

/// A small nested file of many pages and the table written to it. Columns: `ints` 0 (offsets)
/// 1 (items); `point` 2 (validity) 3 (`x`) 4 (`tags` offsets) 5 (`tags` items); `emb` 6 (one
/// column of vectors); `pairs` (not nullable: no column) 7 (item validity) 8 (`a`) 9 (`b`); `m`
/// 10 (offsets) 11 (keys) 12 (values).
async fn nested_sample(dir: &std::path::Path) -> (Vec<u8>, RecordBatch) {
    use arrow_schema::{DataType, Field};
    let item = |data_type: DataType, nullable: bool| Arc::new(Field::new("item", data_type, nullable));
    let point = DataType::Struct(
        vec![
            Field::new("x", DataType::Int32, false),
            Field::new("tags", DataType::List(item(DataType::Utf8, true)), true),
        ]
        .into(),
    );
    let pair =
        DataType::Struct(vec![Field::new("a", DataType::Int64, true), Field::new("b", DataType::Utf8, true)].into());
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("ints", DataType::List(item(DataType::Int32, true)), true),
        Field::new("point", point, true),
        Field::new("emb", DataType::FixedSizeList(item(DataType::Float32, false), 4), true),
        Field::new("pairs", DataType::FixedSizeList(item(pair, true), 2), false),
        Field::new_map(
            "m",
            "entries",
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Int32, true),
            false,
            true,
        ),
    ]));
    let mut rng = common::rng(5);
    let table = random_nested_table(&mut rng, &schema, 400);
    let path = dir.join("nested_sample.leaf");
    write_file(&path, &schema, &split_randomly(&mut rng, &table, 150), 256).await;
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(FileLayout::parse(&bytes).columns.len(), 13);
    (bytes, table)
}

/// Opens the file behind `bytes` and reads it whole, then a row range and a few rows (partly
/// read pages: indirect I/O), giving the first error; a hang is a failure.
async fn open_and_read(bytes: Vec<u8>, location: &str) -> looseleaf::Result<RecordBatch> {
    let read = async {
        let file = FileReader::open(Arc::new(looseleaf_testing::MemoryReader::new(bytes, location))).await?;
        let out = read_to_end(file.read().with_batch_size(nz(64))).await?;
        let n = file.num_rows();
        read_to_end(file.read().with_row_range(1..n - 1).with_batch_size(nz(50))).await?;
        file.take(&[n - 1, 0, n / 2, n / 2 + 1, 0], None).await?;
        Ok(out.concat())
    };
    match tokio::time::timeout(Duration::from_secs(30), read).await {
        Ok(result) => result,
        Err(_) => panic!("{location}: a read of a damaged file hung"),
    }
}

/// Checks that `result` is a proper error (not a caught panic or an internal error) naming
/// `location`.
#[track_caller]
fn assert_fails(result: looseleaf::Result<RecordBatch>, location: &str, what: &str) {
    match result {
        Ok(_) => panic!("{what}: expected an error"),
        Err(looseleaf::Error::Internal(message)) => {
            panic!("{what}: internal error (a bug or a caught panic): {message}")
        }
        Err(e) => assert!(e.to_string().contains(location), "{what}: the error does not name {location}: {e}"),
    }
}

/// Damaged list offsets (the data pages have no checksum): an offset made huge (its top byte
/// set) breaks the order of the offsets or their bounds, which a scan must report; every other
/// kind of damage gives values or a proper error, never a panic or a hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_list_offsets_give_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, table) = nested_sample(dir.path()).await;
    let layout = FileLayout::parse(&bytes);
    let mut huge = 0;
    let mut flipped = 0;
    for (column, pages) in layout.columns.iter().enumerate() {
        // The first, a middle and the last page of each list column.
        let chosen = [0, pages.len() / 2, pages.len().saturating_sub(1)];
        for (index, page) in pages.iter().enumerate().filter(|(i, _)| chosen.contains(i)) {
            let Some(offsets) = page.list_offsets.first() else { continue };
            let width = (offsets.end - offsets.start) / (page.num_rows + 1);
            assert!(width == 4 || width == 8, "offsets of {width} bytes");
            // The first, a middle and the last offset.
            for k in [0, page.num_rows / 2, page.num_rows] {
                let at = (offsets.start + k * width + width - 1) as usize;
                let mut damaged = bytes.clone();
                damaged[at] |= 0x80;
                let location = format!("memory://huge-offset-{column}-{index}-{k}.leaf");
                let what = format!("offset {k} of page {index} of column {column} made huge");
                assert_fails(open_and_read(damaged, &location).await, &location, &what);
                huge += 1;
            }
            // The low bit of each offset: off by one, in order or not.
            for k in 0..=page.num_rows {
                let at = (offsets.start + k * width) as usize;
                let mut damaged = bytes.clone();
                damaged[at] ^= 0x01;
                let location = format!("memory://flipped-offset-{column}-{index}-{k}.leaf");
                match open_and_read(damaged, &location).await {
                    Ok(read) => assert_eq!(read.num_rows(), table.num_rows()),
                    Err(e) => {
                        let what = format!("offset {k} of page {index} of column {column} off by one");
                        assert_fails(Err(e), &location, &what);
                    }
                }
                flipped += 1;
            }
        }
    }
    // Three list columns (`ints`, `point.tags`, `m`), three pages each, three offsets each.
    assert!(huge == 3 * 9 && flipped > 100, "{huge} huge offsets, {flipped} flipped");
}

/// Rewrites the footer of `bytes` after `edit`, with its checksum and the tail recomputed.
fn with_footer(bytes: &[u8], edit: impl FnOnce(&mut looseleaf::format::proto::Footer)) -> Vec<u8> {
    use looseleaf::format::{FileTail, TAIL_LEN, decode_checked};
    let len = bytes.len();
    let tail = FileTail::parse(&bytes[len - TAIL_LEN as usize..], len as u64).unwrap();
    let range = tail.footer_range();
    let mut footer: looseleaf::format::proto::Footer =
        decode_checked(&bytes[range.start as usize..range.end as usize], tail.footer_crc, "footer").unwrap();
    edit(&mut footer);
    let encoded = prost::Message::encode_to_vec(&footer);
    let tail = FileTail { footer_length: encoded.len() as u32, footer_crc: crc32fast::hash(&encoded), ..tail };
    let mut out = bytes[..range.start as usize].to_vec();
    out.extend_from_slice(&encoded);
    out.extend_from_slice(&tail.to_bytes());
    out
}

/// Footers whose nested schema does not match the columns the file has (with valid checksums,
/// so the damage reaches the schema checks): each is rejected when the file is opened or read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_schemas_inconsistent_with_their_columns_are_rejected() {
    use looseleaf::format::proto::{DataType as ProtoType, Field as ProtoField, Footer, TypeKind};
    let dir = tempfile::tempdir().unwrap();
    let (bytes, table) = nested_sample(dir.path()).await;
    // The unedited footer, rewritten, is read back as written.
    let same = with_footer(&bytes, |_| {});
    assert_eq!(same, bytes);
    assert_batches_equal(&open_and_read(same, "memory://same.leaf").await.unwrap(), &table, "unedited footer");

    fn field<'a>(footer: &'a mut Footer, path: &[usize]) -> &'a mut ProtoField {
        let (first, rest) = path.split_first().unwrap();
        rest.iter().fold(&mut footer.fields[*first], |f, i| &mut f.children[*i])
    }
    fn kind(f: &mut ProtoField, kind: TypeKind) {
        f.data_type.get_or_insert_with(ProtoType::default).kind = kind as i32;
    }
    type Edit = Box<dyn Fn(&mut Footer)>;
    let edits: Vec<(&str, Edit)> = vec![
        ("a nullable struct without its validity column", Box::new(|f| field(f, &[1]).column = None)),
        ("a struct made non-nullable keeping its validity column", Box::new(|f| field(f, &[1]).nullable = false)),
        ("a list item without its column", Box::new(|f| field(f, &[0, 0]).column = None)),
        ("the items of a list of lists in two places", Box::new(|f| field(f, &[1, 1, 0]).column = Some(1))),
        ("a column used twice", Box::new(|f| field(f, &[1, 0]).column = Some(0))),
        ("a column out of range", Box::new(|f| field(f, &[1, 0]).column = Some(13))),
        (
            "the item of a fixed-size list of fixed-width values with a column of its own",
            Box::new(|f| {
                field(f, &[2]).column = None;
                field(f, &[2, 0]).column = Some(6);
            }),
        ),
        (
            "a fixed-size list of structs laid out as one column of values",
            Box::new(|f| {
                field(f, &[3]).column = Some(7);
                field(f, &[3, 0]).column = None;
            }),
        ),
        ("a non-nullable fixed-size list made nullable", Box::new(|f| field(f, &[3]).nullable = true)),
        (
            "a fixed-size list of fixed-width values made one of strings",
            Box::new(|f| kind(field(f, &[2, 0]), TypeKind::Utf8)),
        ),
        (
            "a fixed-size list of fixed-width values made one of empty structs",
            Box::new(|f| {
                let item = field(f, &[2, 0]);
                kind(item, TypeKind::Struct);
                item.nullable = false;
            }),
        ),
        (
            "a fixed-size list of another dimension",
            Box::new(|f| field(f, &[2]).data_type.as_mut().unwrap().fixed_size = 3),
        ),
        (
            "a fixed-size list of structs of another dimension",
            Box::new(|f| field(f, &[3]).data_type.as_mut().unwrap().fixed_size = 3),
        ),
        ("a list made a struct", Box::new(|f| kind(field(f, &[0]), TypeKind::Struct))),
        (
            "a struct made a list",
            Box::new(|f| {
                let point = field(f, &[1]);
                kind(point, TypeKind::List);
                point.children.truncate(1);
            }),
        ),
        ("a list without its item", Box::new(|f| field(f, &[0]).children.clear())),
        (
            "map entries of three fields",
            Box::new(|f| {
                let entries = field(f, &[4, 0]);
                let extra = ProtoField { column: None, ..entries.children[1].clone() };
                entries.children.push(extra);
            }),
        ),
        ("a map with nullable keys", Box::new(|f| field(f, &[4, 0, 0]).nullable = true)),
        ("a map with nullable entries", Box::new(|f| field(f, &[4, 0]).nullable = true)),
        (
            "two columns of different kinds swapped",
            Box::new(|f| {
                field(f, &[0]).column = Some(3);
                field(f, &[1, 0]).column = Some(0);
            }),
        ),
        (
            "list offsets read as a struct's validity",
            Box::new(|f| {
                field(f, &[1]).column = Some(4);
                field(f, &[1, 1]).column = Some(2);
            }),
        ),
    ];
    for (what, edit) in edits {
        let damaged = with_footer(&bytes, |f| edit(f));
        let location = format!("memory://{}.leaf", what.replace(' ', "-"));
        assert_fails(open_and_read(damaged, &location).await, &location, what);
    }
}
