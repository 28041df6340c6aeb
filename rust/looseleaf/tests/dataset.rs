//! Datasets of many files: what `DatasetWriter` writes, `Dataset` reads back — every row once,
//! partition values as columns, `take` by dataset row numbers in the order asked, filters on
//! partition columns skipping files — for random data with nulls, checked against the rows
//! written (kept here, independent of the reader).

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch, Scalar, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::{rng, runtime};
use futures::TryStreamExt;
use looseleaf::dataset::{
    Dataset, DatasetOptions, DatasetSource, DatasetWriteOptions, DatasetWriter, ExistingData, FilePlan,
};
use looseleaf::filter::{CompareOp, Predicate};
use looseleaf::{Error, Location};
use rand::Rng;

/// Rows `id` 0.., `k` in a few values (nulls among them), `s` random strings with nulls.
fn table(rows: usize, seed: u64) -> RecordBatch {
    let mut rng = rng(seed);
    let id: Int64Array = (0..rows as i64).map(Some).collect();
    let k: Int32Array = (0..rows).map(|_| (!rng.random_bool(0.1)).then(|| rng.random_range(0..4))).collect();
    let s: StringArray =
        (0..rows).map(|_| (!rng.random_bool(0.2)).then(|| format!("v{}", rng.random_range(0..1000)))).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("k", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(schema, vec![Arc::new(id), Arc::new(k), Arc::new(s)]).unwrap()
}

async fn write(root: &Location, batch: &RecordBatch, options: DatasetWriteOptions) -> Vec<String> {
    let mut writer = DatasetWriter::try_new(root.clone(), batch.schema(), options).await.unwrap();
    for start in (0..batch.num_rows()).step_by(97) {
        writer.write(&batch.slice(start, 97.min(batch.num_rows() - start))).await.unwrap();
    }
    writer.finish().await.unwrap()
}

/// `(id, k, s)` of every row of `batches` of the dataset schema `id, s, k`, sorted by id.
fn rows(batches: &[RecordBatch]) -> Vec<(i64, Option<i32>, Option<String>)> {
    let mut out = Vec::new();
    for batch in batches {
        let id = batch.column_by_name("id").unwrap().as_primitive::<Int64Type>();
        let k = batch.column_by_name("k").unwrap().as_primitive::<arrow_array::types::Int32Type>();
        let s = batch.column_by_name("s").unwrap().as_string::<i32>();
        for i in 0..batch.num_rows() {
            out.push((id.value(i), k.is_valid(i).then(|| k.value(i)), s.is_valid(i).then(|| s.value(i).to_string())));
        }
    }
    out.sort();
    out
}

#[test]
fn partitioned_datasets_read_back_every_row() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::parse(dir.path().to_str().unwrap()).unwrap();
        let batch = table(2_000, 7);
        let options =
            DatasetWriteOptions { partition_by: vec!["k".into()], max_rows_per_file: Some(300), ..Default::default() };
        let written = write(&root, &batch, options).await;
        assert!(written.iter().any(|f| f.contains("k=__HIVE_DEFAULT_PARTITION__/")));

        let source = DatasetSource::Uri(root.to_string());
        let dataset = Dataset::open(source, DatasetOptions::default()).await.unwrap();
        let names: Vec<_> = dataset.schema().fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["id", "s", "k"]);
        assert_eq!(dataset.num_rows(), 2_000);
        assert_eq!(dataset.files().len(), written.len());
        let batches: Vec<RecordBatch> = dataset.read().stream().await.unwrap().try_collect().await.unwrap();
        assert_eq!(rows(&batches), rows(std::slice::from_ref(&batch)));

        // take: dataset row numbers, in the order asked, repeats kept.
        let all = arrow_select::concat::concat_batches(dataset.schema(), &batches).unwrap();
        let mut rng = rng(3);
        let indices: Vec<u64> = (0..300).map(|_| rng.random_range(0..2_000)).collect();
        let taken = dataset.read().take(&indices).await.unwrap();
        let expected =
            arrow_select::take::take_record_batch(&all, &arrow_array::UInt64Array::from(indices.clone())).unwrap();
        assert_eq!(taken, expected);

        // A filter on the partition column reads only its files.
        let two = Scalar::new(Arc::new(Int32Array::from(vec![2])) as ArrayRef);
        let filter = Predicate::compare("k", CompareOp::Eq, two);
        let plan = dataset.read().with_filter(filter.clone()).plan().await.unwrap();
        let read: Vec<_> = plan.files.iter().filter_map(|(name, plan)| plan.as_ref().map(|p| (name, p))).collect();
        assert!(
            !read.is_empty()
                && read.iter().all(|(name, plan)| name.contains("/k=2/") && matches!(plan, FilePlan::Read(_)))
        );
        let stream = dataset.read().with_filter(filter.clone()).stream().await.unwrap();
        let stats = stream.stats();
        let filtered: Vec<RecordBatch> = stream.try_collect().await.unwrap();
        assert_eq!(stats.files_read(), read.len());
        let expected: Vec<_> = rows(std::slice::from_ref(&batch)).into_iter().filter(|r| r.1 == Some(2)).collect();
        assert_eq!(rows(&filtered), expected);
        assert_eq!(dataset.read().with_filter(filter).count_rows().await.unwrap(), expected.len() as u64);

        // Ids of one file's rows: a filter on a file column and a partition column together.
        let small = Scalar::new(Arc::new(Int64Array::from(vec![100])) as ArrayRef);
        let both = Predicate::IsNull(vec!["k".into()]).and(Predicate::compare("id", CompareOp::Lt, small));
        let filtered: Vec<RecordBatch> =
            dataset.read().with_filter(both).stream().await.unwrap().try_collect().await.unwrap();
        let expected: Vec<_> = rows(&[batch]).into_iter().filter(|r| r.1.is_none() && r.0 < 100).collect();
        assert_eq!(rows(&filtered), expected);
    });
}

#[test]
fn files_that_disagree_are_named() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::parse(dir.path().to_str().unwrap()).unwrap();
        // Files another tool put side by side (a directory without a commit log).
        let other = table(10, 2).project(&[0, 2]).unwrap();
        for (name, batch) in [("a.leaf", table(10, 1)), ("b.leaf", other.clone())] {
            let location = root.child(name).unwrap();
            let options = looseleaf::WriterOptions::default();
            let mut writer =
                looseleaf::FileWriter::create_location(&location, batch.schema(), options, &Default::default())
                    .await
                    .unwrap();
            writer.write(&batch).await.unwrap();
            writer.finish().await.unwrap();
        }
        let error = Dataset::open(DatasetSource::Uri(root.to_string()), DatasetOptions::default()).await.unwrap_err();
        assert!(matches!(error, Error::Schema(_)), "{error}");
        // The second file is named, with the first difference.
        let message = error.to_string();
        assert!(
            message.contains("b.leaf: its schema differs from ")
                && message.contains("column 1 is \"k\" there, \"s\" here"),
            "{message}"
        );

        let refused = DatasetWriter::try_new(root.clone(), other.schema(), DatasetWriteOptions::default()).await;
        assert!(matches!(refused, Err(Error::InvalidArgument { .. })));
        // An append must keep the dataset's columns.
        let append = DatasetWriteOptions { existing_data: ExistingData::Append, ..Default::default() };
        let written = tempfile::tempdir().unwrap();
        let written = Location::parse(written.path().to_str().unwrap()).unwrap();
        write(&written, &table(10, 1), DatasetWriteOptions::default()).await;
        let refused = DatasetWriter::try_new(written.clone(), other.schema(), append).await.unwrap_err();
        assert!(
            matches!(refused, Error::Schema(_)) && refused.to_string().contains("column 1 is \"k\" there, \"s\" here"),
            "{refused}"
        );
    });
}

#[test]
fn files_read_ahead_share_one_budget() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::parse(dir.path().to_str().unwrap()).unwrap();
        let page_size = 16 * 1024;
        let options = DatasetWriteOptions {
            max_rows_per_file: Some(20_000),
            writer: looseleaf::WriterOptions::default().with_page_size(page_size),
            ..Default::default()
        };
        let batch = table(200_000, 5);
        write(&root, &batch, options).await;
        let budget = 64 * 1024u64;
        let read = looseleaf::ReadOptions { io_buffer: Some(looseleaf::ByteCount(budget)), ..Default::default() };
        let dataset = Dataset::open(DatasetSource::Uri(root.to_string()), DatasetOptions::default()).await.unwrap();
        assert_eq!(dataset.files().len(), 10);
        let stream = dataset.read().with_options(read).stream().await.unwrap();
        let stats = stream.stats();
        let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
        assert_eq!(rows(&batches), rows(std::slice::from_ref(&batch)));
        // The promise of one read, for the files read ahead together: the shared budget, plus
        // each started file's minimum progress (two pages of each of its 3 columns; a page may
        // pass its target size by up to its last values, counted here as a second page size).
        let bound = budget + looseleaf::dataset::FILES_AHEAD as u64 * 2 * 3 * page_size * 2;
        let peak = stats.io_stats().peak_reserved_bytes;
        assert!(peak <= bound, "peak {peak} > {bound}");
        assert_eq!(stats.files_read(), 10);
    });
}

/// One description of a read for files and datasets: a dataset reads row ranges and selections
/// numbered across its files (the same rows as a slice of the whole), counts them, and records
/// every file's loops and its own batches in one trace.
#[test]
fn dataset_reads_take_rows_counts_and_traces_as_file_reads_do() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::parse(dir.path().to_str().unwrap()).unwrap();
        let batch = table(1_000, 11);
        let options = DatasetWriteOptions { max_rows_per_file: Some(170), ..Default::default() };
        let written = write(&root, &batch, options).await;
        assert!(written.len() >= 5);
        let dataset = Dataset::open(DatasetSource::Uri(root.to_string()), DatasetOptions::default()).await.unwrap();
        let all: Vec<RecordBatch> = dataset.read().stream().await.unwrap().try_collect().await.unwrap();
        let all = arrow_select::concat::concat_batches(dataset.schema(), &all).unwrap();
        let mut rng = rng(5);
        for _ in 0..20 {
            let start = rng.random_range(0..1_000u64);
            let len = rng.random_range(0..=1_000 - start);
            let read = dataset.read().with_row_range(start..start + len);
            let batches: Vec<RecordBatch> = read.clone().stream().await.unwrap().try_collect().await.unwrap();
            let got = arrow_select::concat::concat_batches(dataset.schema(), &batches).unwrap();
            assert_eq!(got, all.slice(start as usize, len as usize), "rows {start}..{}", start + len);
            assert_eq!(read.count_rows().await.unwrap(), len);
        }
        // A selection across file boundaries, with a filter on a file column.
        let selection = looseleaf::RowSelection::from_sorted_ranges(vec![3..40, 160..200, 500..501, 990..1_000]);
        let small = Scalar::new(Arc::new(Int64Array::from(vec![600])) as ArrayRef);
        let filter = Predicate::compare("id", CompareOp::Lt, small);
        let read = dataset.read().with_selection(selection.clone()).with_filter(filter);
        let batches: Vec<RecordBatch> = read.clone().stream().await.unwrap().try_collect().await.unwrap();
        let expected: Vec<i64> =
            selection.ranges().iter().flat_map(|r| r.start as i64..r.end as i64).filter(|id| *id < 600).collect();
        assert_eq!(rows(&batches).iter().map(|r| r.0).collect::<Vec<_>>(), expected);
        assert_eq!(read.count_rows().await.unwrap(), expected.len() as u64);
        let past = dataset.read().with_row_range(990..1_001).stream().await.err().unwrap();
        assert!(matches!(past, Error::InvalidArgument { .. }), "{past}");

        // A traced dataset read: its batches as the consumer got them, every file's requests.
        let trace = looseleaf::Trace::new();
        let stream = dataset.read().with_columns(vec!["id".into()]).with_trace(trace.clone()).stream().await.unwrap();
        let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
        let snapshot = trace.snapshot();
        let handed_out = snapshot.spans.iter().filter(|s| matches!(s.kind, looseleaf::trace::SpanKind::Batch { .. }));
        assert_eq!(handed_out.count(), batches.len());
        let files_read: std::collections::BTreeSet<_> = snapshot.reads.iter().map(|r| r.request).collect();
        assert!(files_read.len() >= written.len(), "{} requests for {} files", files_read.len(), written.len());
    });
}

/// A file read counts the rows it would return without reading them, and with a filter by
/// reading the filter's column only.
#[test]
fn file_reads_count_their_rows() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("count.leaf");
        let batch = table(3_000, 2);
        let mut writer = looseleaf::FileWriter::create_path(&path, batch.schema(), Default::default()).await.unwrap();
        writer.write(&batch).await.unwrap();
        writer.finish().await.unwrap();
        let file = looseleaf::FileReader::open_path(&path).await.unwrap();
        assert_eq!(file.read().count_rows().await.unwrap(), 3_000);
        assert_eq!(file.read().with_row_range(10..2_500).count_rows().await.unwrap(), 2_490);
        let two = Scalar::new(Arc::new(Int32Array::from(vec![2])) as ArrayRef);
        let expected = rows(std::slice::from_ref(&batch)).iter().filter(|r| r.1 == Some(2) && r.0 >= 10).count();
        let counted =
            file.read().with_row_range(10..3_000).with_filter(Predicate::compare("k", CompareOp::Eq, two)).count_rows();
        assert_eq!(counted.await.unwrap(), expected as u64);
    });
}
