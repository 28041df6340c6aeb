//! Traces of reads ([`Trace`]): a traced read records every request its plan predicts, each
//! read's moments in order, every batch it hands out, and exports Chrome trace JSON with its
//! lanes — for scans, ranges, takes and filtered reads.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder};
use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, Scalar, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use common::files::write_file;
use common::nz;
use common::reads::read_to_end;
use looseleaf::filter::{CompareOp, Predicate};
use looseleaf::trace::{Lane, TraceSnapshot};
use looseleaf::{ByteCount, FileReader, IoOptions, IoPlan, ReadBuilder, Trace};

const ROWS: usize = 20_000;

/// Ints, strings, a list column and a small int column to filter on, in pages of 16 KiB.
async fn mixed_file(path: &Path) -> RecordBatch {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
        Field::new("l", DataType::List(Arc::new(Field::new("item", DataType::Int32, true))), true),
        Field::new("k", DataType::Int32, false),
    ]));
    let mut lists = ListBuilder::new(Int32Builder::new());
    for i in 0..ROWS {
        if i % 11 == 0 {
            lists.append_null();
        } else {
            for j in 0..(i % 5) {
                lists.values().append_value((i * 3 + j) as i32);
            }
            lists.append(true);
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values((0..ROWS as i64).map(|i| i * 31 + 7))),
        Arc::new(StringArray::from_iter(
            (0..ROWS).map(|i| (i % 7 != 0).then(|| format!("row {i} {}", "x".repeat(i % 13)))),
        )),
        Arc::new(lists.finish()),
        Arc::new(Int32Array::from_iter_values((0..ROWS).map(|i| ((i * 7919) % 100) as i32))),
    ];
    let table = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let batches: Vec<RecordBatch> = (0..ROWS).step_by(4096).map(|s| table.slice(s, 4096.min(ROWS - s))).collect();
    write_file(path, &schema, &batches, 16 * 1024).await;
    table
}

/// A small buffer and depth, so that the budget and its bypass show.
fn io() -> IoOptions {
    IoOptions { buffer: ByteCount::kib(64), ..IoOptions::LOCAL }
}

fn sorted(mut reads: Vec<Range<u64>>) -> Vec<(u64, u64)> {
    reads.sort_by_key(|r| (r.start, r.end));
    reads.into_iter().map(|r| (r.start, r.end)).collect()
}

fn direct_plan_reads(plan: &IoPlan, columns: Option<&BTreeSet<u32>>) -> Vec<(u64, u64)> {
    sorted(
        plan.requests
            .iter()
            .filter(|r| r.known() && columns.is_none_or(|c| c.contains(&r.column)))
            .flat_map(|r| r.reads.clone())
            .collect(),
    )
}

fn direct_traced_reads(trace: &TraceSnapshot, columns: Option<&BTreeSet<u32>>) -> Vec<(u64, u64)> {
    sorted(
        trace
            .reads
            .iter()
            .filter(|r| r.known && columns.is_none_or(|c| c.contains(&r.column)))
            .map(|r| r.range.clone())
            .collect(),
    )
}

/// What every trace of a completed read must satisfy, whatever the read.
fn check_trace(trace: &TraceSnapshot, rows: u64, reads: u64, what: &str) {
    assert!(!trace.reads.is_empty(), "{what}: no reads traced");
    for read in &trace.reads {
        let issued = read.issued.unwrap_or_else(|| panic!("{what}: {read:?} never issued"));
        let completed = read.completed.unwrap_or_else(|| panic!("{what}: {read:?} never completed"));
        assert!(read.queued <= issued && issued <= completed, "{what}: {read:?} out of order");
        assert!(!read.failed, "{what}: {read:?}");
    }
    assert_eq!(trace.reads.len() as u64, reads, "{what}: traced reads against the scheduler's count");
    assert_eq!(trace.batches().map(|(rows, _)| rows).sum::<u64>(), rows, "{what}: rows handed out");
    let lanes: BTreeSet<Lane> = trace.spans.iter().map(|s| s.kind.lane()).collect();
    for lane in [Lane::Scheduling, Lane::Decode, Lane::DecodeLoop, Lane::Consumer] {
        assert!(lanes.contains(&lane), "{what}: no {lane:?} span in {lanes:?}");
    }
    assert!(trace.spans.iter().all(|s| s.start <= s.end), "{what}");
    assert!(!trace.budget.is_empty(), "{what}: no budget samples");
    assert_eq!(trace.budget.last().map(|b| b.reads_in_flight), Some(0), "{what}: reads left in flight");

    let json: serde_json::Value = serde_json::from_str(&trace.to_chrome_json()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let thread_names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    for lane in ["scheduling", "decode loop", "decode (thread", "consumer"] {
        assert!(thread_names.iter().any(|n| n.starts_with(lane)), "{what}: no lane {lane} in {thread_names:?}");
    }
    let begins = events.iter().filter(|e| e["ph"] == "b" && e["cat"] == "io").count();
    let ends = events.iter().filter(|e| e["ph"] == "e" && e["cat"] == "io").count();
    assert_eq!((begins, ends), (trace.reads.len(), trace.reads.len()), "{what}: one async slice per read");
    assert!(events.iter().any(|e| e["ph"] == "C" && e["name"] == "I/O buffer (bytes)"), "{what}");
    assert!(events.iter().filter(|e| e["ph"] == "X").all(|e| e["dur"].as_u64().is_some()), "{what}");
}

/// Indirect requests are made exactly when the plan has indirect steps, for rows at or after
/// the first of them. (A plan lists one step per page of lists whose items are read; the step
/// then requests each page of items those lists reach, so the counts differ.)
fn check_indirect(trace: &TraceSnapshot, plan: &IoPlan, what: &str) {
    let planned: Vec<u64> = plan.requests.iter().filter(|r| !r.known()).map(|r| r.priority.0).collect();
    let traced: Vec<u64> = trace.reads.iter().filter(|r| !r.known).map(|r| r.priority).collect();
    assert_eq!(planned.is_empty(), traced.is_empty(), "{what}: planned {planned:?}, traced {traced:?}");
    let first = planned.iter().min().copied().unwrap_or(0);
    assert!(traced.iter().all(|&p| p >= first), "{what}: planned {planned:?}, traced {traced:?}");
}

/// Runs `read` traced to the end; returns the trace, the rows read and the scheduler's reads.
async fn traced_stream(read: ReadBuilder) -> (TraceSnapshot, u64, u64) {
    let trace = Trace::new();
    let out = read_to_end(read.with_trace(trace.clone())).await.unwrap();
    let rows = out.batches.iter().map(|b| b.num_rows() as u64).sum();
    (trace.snapshot(), rows, out.stats.reads)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_has_every_request_the_plan_predicts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.leaf");
    mixed_file(&path).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    reader.metadata().await.unwrap();
    let read = || reader.read().with_io_options(io()).with_batch_size(nz(1000));

    // A scan.
    let plan = read().plan().await.unwrap();
    assert!(plan.requests.len() > 8, "several pages per column: {}", plan.requests.len());
    let (trace, rows, reads) = traced_stream(read()).await;
    assert_eq!(rows, ROWS as u64);
    check_trace(&trace, rows, reads, "scan");
    assert_eq!(direct_traced_reads(&trace, None), direct_plan_reads(&plan, None), "scan");
    assert!(trace.reads.iter().any(|r| r.bypassed), "a 64 KiB buffer is passed by the reads of the lowest rows");
    assert_eq!(trace.info.io_buffer_bytes, Some(64 * 1024));

    // A range of a projection.
    let ranged = || read().with_row_range(3_333..12_345).with_columns(vec!["s".into(), "l".into()]);
    let plan = ranged().plan().await.unwrap();
    let (trace, rows, reads) = traced_stream(ranged()).await;
    assert_eq!(rows, 12_345 - 3_333);
    check_trace(&trace, rows, reads, "range");
    assert_eq!(direct_traced_reads(&trace, None), direct_plan_reads(&plan, None), "range");
    check_indirect(&trace, &plan, "range");

    // A take, unsorted with repeats.
    let indices: Vec<u64> = (0..300u64).map(|i| (i * 7_777 + 13) % ROWS as u64).chain([5, 5, 19_999]).collect();
    let plan = read().with_indices(indices.clone()).plan().await.unwrap();
    let trace = Trace::new();
    let scheduler_reads = {
        let taken = read().with_trace(trace.clone()).take(&indices).await.unwrap();
        assert_eq!(taken.num_rows(), indices.len());
        trace.snapshot().reads.len() as u64
    };
    let snapshot = trace.snapshot();
    check_trace(&snapshot, indices.len() as u64, scheduler_reads, "take");
    assert_eq!(direct_traced_reads(&snapshot, None), direct_plan_reads(&plan, None), "take");
    check_indirect(&snapshot, &plan, "take");

    // A filtered read: its stage 2 reads exactly the filter plan's requests, and its stage 3
    // (which depends on what matched) only the other columns. (A filter column the read
    // returned would be read in stage 3 too, for its values where the filter passed.)
    let predicate =
        || Predicate::compare("k", CompareOp::Lt, Scalar::new(Arc::new(Int32Array::from(vec![30])) as ArrayRef));
    let others = vec!["id".to_string(), "s".to_string(), "l".to_string()];
    let filtered = || read().with_columns(others.clone()).with_filter(predicate());
    let plan = filtered().filter_plan().await.unwrap();
    let filter_columns: BTreeSet<u32> = plan.filter_columns.requests.iter().map(|r| r.column).collect();
    assert!(!filter_columns.is_empty());
    let (trace, rows, reads) = traced_stream(filtered()).await;
    let expected = (0..ROWS).filter(|i| (i * 7919) % 100 < 30).count() as u64;
    assert_eq!(rows, expected);
    check_trace(&trace, rows, reads, "filtered");
    assert_eq!(
        direct_traced_reads(&trace, Some(&filter_columns)),
        direct_plan_reads(&plan.filter_columns, None),
        "filtered: stage 2"
    );
    let per_column: HashMap<u32, usize> = trace.reads.iter().fold(HashMap::new(), |mut m, r| {
        *m.entry(r.column).or_default() += 1;
        m
    });
    assert!(per_column.len() > filter_columns.len(), "filtered: stage 3 reads the other columns: {per_column:?}");
}

/// A read without a trace records nothing anywhere, and a plan never records into a trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_record_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.leaf");
    mixed_file(&path).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    let trace = Trace::new();
    reader.read().with_trace(trace.clone()).plan().await.unwrap();
    let snapshot = trace.snapshot();
    assert!(snapshot.reads.is_empty() && snapshot.spans.is_empty(), "{snapshot:?}");
    let out = read_to_end(reader.read()).await.unwrap();
    assert_eq!(out.batches.iter().map(|b| b.num_rows()).sum::<usize>(), ROWS);
}
