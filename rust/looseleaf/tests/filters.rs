//! Filtered reads: for random data and random predicates, every read with a filter returns
//! exactly the rows a row-by-row evaluation of the predicate keeps (three-valued logic written
//! out here, independent of the engine's kernels), and zones are skipped without losing rows.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use common::files::write_file_with;
use common::reads::read_to_end;
use common::runtime;
use looseleaf::filter::{CompareOp, Predicate};
use looseleaf::io::IoDepth;
use looseleaf::{ByteCount, FileReader, FileWriter, IoOptions, WriterOptions};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Rows: `k` ascending int64 with nulls, `v` random int32, `f` float64 with NaN and -0.0,
/// `s` short strings.
fn table(rng: &mut StdRng, rows: usize) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int32, true),
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let null = |rng: &mut StdRng| rng.random_bool(0.1);
    let k: Int64Array = (0..rows as i64).map(|i| (!null(rng)).then_some(i * 3)).collect();
    let v: Int32Array = (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(-50..50))).collect();
    let f: Float64Array = (0..rows)
        .map(|_| {
            (!null(rng)).then(|| match rng.random_range(0..10) {
                0 => f64::NAN,
                1 => -0.0,
                _ => rng.random_range(-10.0..10.0),
            })
        })
        .collect();
    let s: StringArray = (0..rows).map(|_| (!null(rng)).then(|| format!("s{}", rng.random_range(0..30)))).collect();
    RecordBatch::try_new(schema, vec![Arc::new(k), Arc::new(v), Arc::new(f), Arc::new(s)]).unwrap()
}

/// A predicate with its own evaluator.
#[derive(Debug, Clone)]
enum P {
    Int(&'static str, CompareOp, i64),
    Float(CompareOp, f64),
    Str(CompareOp, String),
    In(Vec<i32>),
    IsNull(&'static str),
    IsNotNull(&'static str),
    And(Box<P>, Box<P>),
    Or(Box<P>, Box<P>),
    Not(Box<P>),
}

fn holds<T: PartialOrd>(op: CompareOp, a: T, b: T) -> bool {
    match op {
        CompareOp::Eq => a == b,
        CompareOp::NotEq => a != b,
        CompareOp::Lt => a < b,
        CompareOp::LtEq => a <= b,
        CompareOp::Gt => a > b,
        CompareOp::GtEq => a >= b,
    }
}

impl P {
    fn predicate(&self) -> Predicate {
        let col = |c: &str| vec![c.to_string()];
        match self {
            P::Int(c, op, v) => {
                Predicate::Compare { column: col(c), op: *op, value: Arc::new(Int64Array::from(vec![*v])) }
            }
            P::Float(op, v) => {
                Predicate::Compare { column: col("f"), op: *op, value: Arc::new(Float64Array::from(vec![*v])) }
            }
            P::Str(op, v) => {
                Predicate::Compare { column: col("s"), op: *op, value: Arc::new(StringArray::from(vec![v.as_str()])) }
            }
            P::In(values) => Predicate::In {
                column: col("v"),
                values: Arc::new(Int32Array::from(values.clone())),
                nulls: Default::default(),
            },
            P::IsNull(c) => Predicate::IsNull(col(c)),
            P::IsNotNull(c) => Predicate::IsNotNull(col(c)),
            P::And(a, b) => a.predicate().and(b.predicate()),
            P::Or(a, b) => a.predicate().or(b.predicate()),
            P::Not(a) => a.predicate().not(),
        }
    }

    fn eval(&self, t: &RecordBatch, row: usize) -> Option<bool> {
        let int = |c: &str| {
            let a = t.column_by_name(c).unwrap();
            a.is_valid(row).then(|| match a.data_type() {
                DataType::Int64 => a.as_any().downcast_ref::<Int64Array>().unwrap().value(row),
                _ => a.as_any().downcast_ref::<Int32Array>().unwrap().value(row) as i64,
            })
        };
        match self {
            P::Int(c, op, v) => int(c).map(|x| holds(*op, x, *v)),
            P::Float(op, v) => {
                let a = t.column_by_name("f").unwrap().as_any().downcast_ref::<Float64Array>().unwrap();
                a.is_valid(row).then(|| holds(*op, a.value(row), *v))
            }
            P::Str(op, v) => {
                let a = t.column_by_name("s").unwrap().as_any().downcast_ref::<StringArray>().unwrap();
                a.is_valid(row).then(|| holds(*op, a.value(row), v.as_str()))
            }
            // Arrow's default: a null is in no set without nulls (false, not null).
            P::In(values) => Some(int("v").is_some_and(|x| values.contains(&(x as i32)))),
            P::IsNull(c) => Some(t.column_by_name(c).unwrap().is_null(row)),
            P::IsNotNull(c) => Some(t.column_by_name(c).unwrap().is_valid(row)),
            P::And(a, b) => match (a.eval(t, row), b.eval(t, row)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            P::Or(a, b) => match (a.eval(t, row), b.eval(t, row)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            P::Not(a) => a.eval(t, row).map(|x| !x),
        }
    }
}

fn random_op(rng: &mut StdRng) -> CompareOp {
    [CompareOp::Eq, CompareOp::NotEq, CompareOp::Lt, CompareOp::LtEq, CompareOp::Gt, CompareOp::GtEq]
        [rng.random_range(0..6)]
}

fn random_predicate(rng: &mut StdRng, rows: usize, depth: u32) -> P {
    match rng.random_range(0..if depth == 0 { 6 } else { 10 }) {
        0 => P::Int("k", random_op(rng), rng.random_range(-5..(rows as i64 * 3 + 5))),
        1 => P::Int("v", random_op(rng), rng.random_range(-60..60)),
        2 => P::Float(random_op(rng), [0.0, -0.0, 1.5, f64::NAN, -3.0][rng.random_range(0..5)]),
        3 => P::Str(random_op(rng), format!("s{}", rng.random_range(0..35))),
        4 => P::In((0..rng.random_range(0..4)).map(|_| rng.random_range(-50..50)).collect()),
        5 if rng.random_bool(0.5) => P::IsNull(["k", "v", "f", "s"][rng.random_range(0..4)]),
        5 => P::IsNotNull(["k", "v", "f", "s"][rng.random_range(0..4)]),
        6 => P::And(Box::new(random_predicate(rng, rows, depth - 1)), Box::new(random_predicate(rng, rows, depth - 1))),
        7 => P::Or(Box::new(random_predicate(rng, rows, depth - 1)), Box::new(random_predicate(rng, rows, depth - 1))),
        // Spark's form: a column's null test beside its comparison, in one conjunction.
        8 => {
            let column = ["k", "v"][rng.random_range(0..2)];
            let compared = P::Int(column, random_op(rng), rng.random_range(-60..60));
            let tested = P::And(Box::new(P::IsNotNull(column)), Box::new(compared));
            P::And(Box::new(tested), Box::new(random_predicate(rng, rows, depth - 1)))
        }
        _ => P::Not(Box::new(random_predicate(rng, rows, depth - 1))),
    }
}

/// The rows of `t` (projected to `columns`) where `p` is true.
fn expected(t: &RecordBatch, p: &P, rows: impl Iterator<Item = usize>, columns: &[&str]) -> RecordBatch {
    let kept: Vec<u64> = rows.filter(|&r| p.eval(t, r) == Some(true)).map(|r| r as u64).collect();
    let projected = t.project(&columns.iter().map(|c| t.schema().index_of(c).unwrap()).collect::<Vec<_>>()).unwrap();
    arrow_select::take::take_record_batch(&projected, &UInt64Array::from(kept)).unwrap()
}

fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(schema, batches).unwrap()
}

fn filter_case(seed: u64, rows: usize, zone_rows: u64, page_size: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let t = table(&mut rng, rows);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.leaf");
    let options = WriterOptions::default().with_page_size(page_size).with_zone_map_rows(zone_rows);
    runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), options));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    for _ in 0..16 {
        let p = random_predicate(&mut rng, rows, 2);
        let predicate = p.predicate();
        let projections: [&[&str]; 3] = [&["k", "v", "f", "s"], &["s", "k"], &["v"]];
        for columns in projections {
            let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
            let batch_size = rng.random_range(1..200);
            let read = file
                .read()
                .with_columns(names.clone())
                .with_filter(predicate.clone())
                .with_batch_size(common::nz(batch_size));
            let out = runtime().block_on(read_to_end(read)).unwrap();
            let want = expected(&t, &p, 0..rows, columns);
            assert_eq!(concat(&out.schema, &out.batches), want, "scan of {columns:?} with {p:?}");
            assert!(out.batches.iter().all(|b| b.num_rows() <= batch_size), "batches larger than the batch size");
            // A budget of one byte and one read in flight: the stages share one I/O scheduler
            // (stage 2 of the next chunk runs while stage 3 of this one does); no deadlock.
            let tight = IoOptions { depth: IoDepth::Fixed(common::nz(1)), buffer: ByteCount(1), ..IoOptions::LOCAL };
            let read = file.read().with_columns(names.clone()).with_filter(predicate.clone()).with_io_options(tight);
            let out = runtime().block_on(read_to_end(read)).unwrap();
            assert_eq!(concat(&out.schema, &out.batches), want, "one-byte budget, {columns:?} with {p:?}");
            // A range of rows.
            let start = rng.random_range(0..=rows);
            let end = rng.random_range(start..=rows);
            let read = file
                .read()
                .with_columns(names.clone())
                .with_row_range(start as u64..end as u64)
                .with_filter(predicate.clone());
            let out = runtime().block_on(read_to_end(read)).unwrap();
            assert_eq!(
                concat(&out.schema, &out.batches),
                expected(&t, &p, start..end, columns),
                "range {start}..{end} with {p:?}"
            );
            // A take in any order, with repeats.
            if rows > 0 {
                let indices: Vec<u64> =
                    (0..rng.random_range(0..50)).map(|_| rng.random_range(0..rows as u64)).collect();
                let read = file.read().with_columns(names).with_filter(predicate.clone());
                let got = runtime().block_on(read.take(&indices)).unwrap();
                let want = expected(&t, &p, indices.iter().map(|i| *i as usize), columns);
                assert_eq!(got, want, "take {indices:?} with {p:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn filtered_reads_keep_exactly_the_matching_rows(
        seed in any::<u64>(),
        rows in prop_oneof![1 => Just(0usize), 2 => 1usize..50, 5 => 50usize..3000],
        zone_rows in prop_oneof![Just(0u64), 1u64..8, 8u64..300],
        page_size in prop_oneof![256u64..2048, Just(1u64 << 20)],
    ) {
        filter_case(seed, rows, zone_rows, page_size);
    }
}

#[test]
fn zones_are_skipped_on_sorted_data_and_counted() {
    let mut rng = StdRng::seed_from_u64(7);
    let t = table(&mut rng, 20_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sorted.leaf");
    let options = WriterOptions::default().with_zone_map_rows(1000);
    runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), options));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    // k = 3 * row: rows 5000..5100.
    let p = P::And(Box::new(P::Int("k", CompareOp::GtEq, 15_000)), Box::new(P::Int("k", CompareOp::Lt, 15_300)));
    let read = file.read().with_filter(p.predicate());
    let mut stream = runtime().block_on(read.clone().stream()).unwrap();
    let batches: Vec<RecordBatch> = runtime().block_on(futures::TryStreamExt::try_collect(&mut stream)).unwrap();
    let counts = stream.filter_stats().unwrap();
    // The stages' decoding counts as the read's.
    let timings = stream.timings();
    assert!(timings.batches > 0 && timings.decoding > std::time::Duration::ZERO, "{timings:?}");
    assert_eq!(concat(stream.schema(), &batches), expected(&t, &p, 0..20_000, &["k", "v", "f", "s"]));
    assert_eq!((counts.zones_total, counts.zones_skipped), (20, 19), "{counts:?}");
    assert_eq!(counts.candidate_rows, 1000);
    let plan = runtime().block_on(read.filter_plan()).unwrap();
    assert_eq!((plan.zones.skipped, plan.candidate_rows), (19, 1000));
    // A file without zone maps is filtered by its pages' statistics, still exactly.
    let path = dir.path().join("no_zones.leaf");
    let options = WriterOptions::default().with_zone_map_rows(0).with_page_size(4096);
    runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), options));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    let out = runtime().block_on(read_to_end(file.read().with_filter(p.predicate()))).unwrap();
    assert_eq!(concat(&out.schema, &out.batches), expected(&t, &p, 0..20_000, &["k", "v", "f", "s"]));
}

/// A filter column of a dictionary type that the read does not return: compared on its values
/// (with nulls), whichever way its pages are stored.
#[test]
fn dictionary_typed_filter_columns_not_returned() {
    use arrow_array::DictionaryArray;
    use arrow_array::types::Int32Type;
    use looseleaf::encodings::policy::{EncodingKind, EncodingPolicy};

    let rows = 5000;
    let keys = Int32Array::from((0..rows).map(|i| (i % 7 != 3).then_some(i % 5)).collect::<Vec<_>>());
    let values = Int64Array::from(vec![10, 20, 30, 40, 50]);
    let dictionary = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values)).unwrap();
    let v = Int64Array::from((0..rows as i64).collect::<Vec<_>>());
    let schema = Arc::new(Schema::new(vec![
        Field::new("d", dictionary.data_type().clone(), true),
        Field::new("v", DataType::Int64, false),
    ]));
    let t = RecordBatch::try_new(schema.clone(), vec![Arc::new(dictionary.clone()), Arc::new(v)]).unwrap();
    let int = |v: i64| -> ArrayRef { Arc::new(Int64Array::from(vec![v])) };
    let cmp = |op, c| Predicate::Compare { column: vec!["d".into()], op, value: int(c) };
    let predicate = cmp(CompareOp::GtEq, 20).and(cmp(CompareOp::Lt, 45));
    // Keys 1..=3 are the values 20, 30 and 40.
    let want: Vec<i64> = (0..rows as usize)
        .filter(|&i| dictionary.keys().is_valid(i) && (1..=3).contains(&dictionary.keys().value(i)))
        .map(|i| i as i64)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for (name, policy) in [
        ("chosen", EncodingPolicy::default()),
        ("plain", EncodingPolicy::plain_only()),
        ("dictionary", EncodingPolicy { force: Some(EncodingKind::Dictionary), ..EncodingPolicy::default() }),
    ] {
        let path = dir.path().join(format!("{name}.leaf"));
        let options = WriterOptions::default().with_page_size(4096).with_encoding_policy("d", policy);
        runtime().block_on(write_file_with(&path, &schema, std::slice::from_ref(&t), options));
        let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
        let read = file.read().with_columns(vec!["v".into()]).with_filter(predicate.clone());
        let out = runtime().block_on(read_to_end(read)).unwrap();
        let got = concat(&out.schema, &out.batches);
        let got: Vec<i64> = got.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn bad_filters_are_clear_errors() {
    let mut rng = StdRng::seed_from_u64(1);
    let t = table(&mut rng, 10);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.leaf");
    runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), WriterOptions::default()));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    let unknown = Predicate::IsNull(vec!["nope".into()]);
    let e = runtime().block_on(read_to_end(file.read().with_filter(unknown))).unwrap_err().to_string();
    assert!(e.contains("nope") && e.contains("t.leaf"), "{e}");
    let mismatched: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
    let p = Predicate::Compare { column: vec!["k".into()], op: CompareOp::Eq, value: mismatched };
    let e = runtime().block_on(read_to_end(file.read().with_filter(p))).unwrap_err().to_string();
    assert!(e.contains("cannot compare column \"k\""), "{e}");
}

#[test]
fn ranges_the_zone_maps_vouch_for_are_read_in_one_pass() {
    let mut rng = StdRng::seed_from_u64(3);
    let mut t = table(&mut rng, 20_000);
    // `k` without nulls: zones wholly inside the range are certain to match.
    let k: ArrayRef = Arc::new(Int64Array::from_iter_values(0..20_000));
    t = RecordBatch::try_new(t.schema(), vec![k, t.column(1).clone(), t.column(2).clone(), t.column(3).clone()])
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one_pass.leaf");
    let options = WriterOptions::default().with_zone_map_rows(1000);
    runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), options));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    let p = P::And(
        Box::new(P::Int("k", CompareOp::GtEq, 1500)),
        Box::new(P::And(Box::new(P::Int("k", CompareOp::Lt, 15_000)), Box::new(P::Int("v", CompareOp::Gt, 0)))),
    );
    for columns in [&["s", "f"][..], &["k", "v", "s"][..]] {
        let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        let read = file.read().with_columns(names).with_filter(p.predicate()).with_batch_size(common::nz(333));
        let mut stream = runtime().block_on(read.stream()).unwrap();
        let batches: Vec<RecordBatch> = runtime().block_on(futures::TryStreamExt::try_collect(&mut stream)).unwrap();
        let counts = stream.filter_stats().unwrap();
        assert_eq!(concat(stream.schema(), &batches), expected(&t, &p, 0..20_000, columns));
        // The `k` range makes 13 of its 14 zones certain; `v` has no bounds that vouch, but
        // one pass is chosen on `k`'s zones only when the whole predicate is certain: it is not
        // here (v > 0), so the chunked stages run.
        assert_eq!(counts.candidate_rows, 14_000, "{counts:?}");
        assert!(!counts.one_pass, "{counts:?}");
    }
    // Certain everywhere it is not ruled out: one pass.
    let p = P::And(Box::new(P::Int("k", CompareOp::GtEq, 1500)), Box::new(P::Int("k", CompareOp::Lt, 15_000)));
    let read = file.read().with_columns(vec!["s".into(), "v".into()]).with_filter(p.predicate());
    let mut stream = runtime().block_on(read.stream()).unwrap();
    let batches: Vec<RecordBatch> = runtime().block_on(futures::TryStreamExt::try_collect(&mut stream)).unwrap();
    let counts = stream.filter_stats().unwrap();
    assert_eq!(concat(stream.schema(), &batches), expected(&t, &p, 0..20_000, &["s", "v"]));
    assert!(counts.one_pass, "{counts:?}");
    assert_eq!((counts.chunks_scanned, counts.chunks_taken, counts.rows_matched), (0, 0, 13_500), "{counts:?}");
}

/// Stage 3 takes the matching rows of a string column when they are few, and scans (decoding
/// only the matching rows) when they are many: on a local file a take costs more per row than
/// the bytes it saves once about one row in fifty matches.
#[test]
fn stage_three_takes_few_rows_and_scans_many() {
    let mut rng = StdRng::seed_from_u64(9);
    let rows = 200_000;
    let t = table(&mut rng, rows);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("takes.leaf");
    runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), WriterOptions::default()));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    // 100 rows at the start (`k` ascending) against about 9% of the rows spread over the file.
    let few = P::Int("k", CompareOp::Lt, 300);
    let many = P::Int("v", CompareOp::Lt, -40);
    for (p, taken) in [(few, true), (many, false)] {
        let read = file.read().with_columns(vec!["s".into()]).with_filter(p.predicate());
        let mut stream = runtime().block_on(read.stream()).unwrap();
        let batches: Vec<RecordBatch> = runtime().block_on(futures::TryStreamExt::try_collect(&mut stream)).unwrap();
        let counts = stream.filter_stats().unwrap();
        assert_eq!(concat(stream.schema(), &batches), expected(&t, &p, 0..rows, &["s"]), "{p:?}");
        assert_eq!((counts.chunks_taken > 0, counts.chunks_scanned > 0), (taken, !taken), "{p:?}: {counts:?}");
    }
}

/// Decimals come back in the type the schema declares whichever way a filtered read goes: its
/// stages compare a decimal filter column at 8 bytes and widen it where it is returned, and
/// decode the other decimal columns at 16 bytes.
#[test]
fn filtered_reads_return_decimals_as_declared_in_one_pass_and_in_stages() {
    let mut rng = StdRng::seed_from_u64(5);
    let rows = 20_000usize;
    let decimal = |values: Vec<Option<i128>>, precision| {
        Arc::new(Decimal128Array::from(values).with_precision_and_scale(precision, 2).unwrap()) as ArrayRef
    };
    // `d` ascending without nulls (its zones vouch for a range), `e` random with nulls.
    let d = decimal((0..rows as i128).map(|i| Some(i * 3 - 9_000)).collect(), 15);
    let e = decimal(
        (0..rows).map(|_| (!rng.random_bool(0.1)).then(|| rng.random_range(-10i128.pow(11)..10i128.pow(11)))).collect(),
        12,
    );
    let s: ArrayRef = Arc::new(StringArray::from_iter_values((0..rows).map(|i| format!("s{}", i % 97))));
    let schema = Arc::new(Schema::new(vec![
        Field::new("d", d.data_type().clone(), false),
        Field::new("e", e.data_type().clone(), true),
        Field::new("s", DataType::Utf8, false),
    ]));
    let t = RecordBatch::try_new(schema.clone(), vec![d.clone(), e.clone(), s]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("decimals.leaf");
    let options = WriterOptions::default().with_zone_map_rows(1000);
    runtime().block_on(write_file_with(&path, &schema, std::slice::from_ref(&t), options));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    let constant =
        |v: i128| Arc::new(Decimal128Array::from(vec![v]).with_precision_and_scale(15, 2).unwrap()) as ArrayRef;
    let compare = |column: &str, op, v| Predicate::Compare { column: vec![column.into()], op, value: constant(v) };
    let in_d = Predicate::And(vec![compare("d", CompareOp::GtEq, 0), compare("d", CompareOp::Lt, 40_000)]);
    let (d, e) =
        (d.as_any().downcast_ref::<Decimal128Array>().unwrap(), e.as_any().downcast_ref::<Decimal128Array>().unwrap());
    let in_d_rows = |r: usize| (0..40_000).contains(&d.value(r));
    let rows_where = |keep: &dyn Fn(usize) -> bool| (0..rows).filter(|&r| keep(r)).map(|r| r as u64).collect();
    let cases: [(Predicate, Vec<u64>, bool); 2] = [
        (in_d.clone(), rows_where(&in_d_rows), true),
        (
            Predicate::And(vec![in_d, compare("e", CompareOp::Gt, 0)]),
            rows_where(&|r| in_d_rows(r) && e.is_valid(r) && e.value(r) > 0),
            false,
        ),
    ];
    for (predicate, kept, one_pass) in cases {
        for columns in [&["d", "e"][..], &["e"][..], &["s", "d"][..], &["e", "d", "s"][..]] {
            let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
            let read = file.read().with_columns(names).with_filter(predicate.clone()).with_batch_size(common::nz(500));
            let mut stream = runtime().block_on(read.stream()).unwrap();
            let batches: Vec<RecordBatch> =
                runtime().block_on(futures::TryStreamExt::try_collect(&mut stream)).unwrap();
            assert_eq!(stream.filter_stats().unwrap().one_pass, one_pass, "{columns:?}");
            let projected =
                t.project(&columns.iter().map(|c| schema.index_of(c).unwrap()).collect::<Vec<_>>()).unwrap();
            let want = arrow_select::take::take_record_batch(&projected, &UInt64Array::from(kept.clone())).unwrap();
            assert_eq!(concat(stream.schema(), &batches), want, "{columns:?} one pass: {one_pass}");
        }
    }
}

// Comparisons of decimals and dates, as the filtered read's stages run them: decimals of up to
// 18 digits at their native width (never widened to compare), the comparisons of one column
// folded into one interval. Checked against an evaluation on the values as `i128`, with every
// encoding the writer can store the column in forced, nulls, and constants at the boundaries
// of the column's range and beyond it.

/// A comparison with a decimal (`d`) or date (`t`) column, the constant as the column's unscaled
/// integer.
#[derive(Debug, Clone)]
enum Q {
    Dec(CompareOp, i128),
    Date(CompareOp, i32),
    And(Vec<Q>),
    Or(Box<Q>, Box<Q>),
    Not(Box<Q>),
}

impl Q {
    fn predicate(&self) -> Predicate {
        match self {
            Q::Dec(op, v) => Predicate::Compare {
                column: vec!["d".into()],
                op: *op,
                value: Arc::new(Decimal128Array::from(vec![*v]).with_precision_and_scale(38, 2).unwrap()),
            },
            Q::Date(op, v) => {
                Predicate::Compare { column: vec!["t".into()], op: *op, value: Arc::new(Date32Array::from(vec![*v])) }
            }
            Q::And(parts) => Predicate::And(parts.iter().map(|p| p.predicate()).collect()),
            Q::Or(a, b) => a.predicate().or(b.predicate()),
            Q::Not(a) => a.predicate().not(),
        }
    }

    fn eval(&self, d: &Decimal128Array, t: &Date32Array, row: usize) -> Option<bool> {
        match self {
            Q::Dec(op, v) => d.is_valid(row).then(|| holds(*op, d.value(row), *v)),
            Q::Date(op, v) => t.is_valid(row).then(|| holds(*op, t.value(row), *v)),
            Q::And(parts) => parts
                .iter()
                .try_fold(Some(true), |acc, p| match (acc, p.eval(d, t, row)) {
                    (Some(false), _) | (_, Some(false)) => Err(()),
                    (Some(true), Some(true)) => Ok(Some(true)),
                    _ => Ok(None),
                })
                .unwrap_or(Some(false)),
            Q::Or(a, b) => match (a.eval(d, t, row), b.eval(d, t, row)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Q::Not(a) => a.eval(d, t, row).map(|x| !x),
        }
    }
}

/// A random predicate: mostly conjunctions of comparisons of one column (an interval, as
/// TPC-H writes `BETWEEN`), the constants near the values, at the column's limits or past them.
fn random_q(rng: &mut StdRng, values: &[i128], limit: i128, depth: u32) -> Q {
    let constant = |rng: &mut StdRng| match rng.random_range(0..6) {
        0 => limit,
        1 => -limit,
        2 => [limit + 1, -limit - 1, limit.saturating_mul(10).saturating_add(7), i64::MAX as i128 + 1]
            [rng.random_range(0..4)],
        _ if !values.is_empty() => values[rng.random_range(0..values.len())].saturating_add(rng.random_range(-1..=1)),
        _ => rng.random_range(-100..100),
    };
    let date = |rng: &mut StdRng| [i32::MIN, i32::MAX, -1, 0][rng.random_range(0..4)].max(rng.random_range(8000..8100));
    match rng.random_range(0..if depth == 0 { 3 } else { 6 }) {
        0 => Q::Dec(random_op(rng), constant(rng)),
        1 => Q::Date(random_op(rng), date(rng)),
        2 => Q::And(
            (0..rng.random_range(1..4))
                .map(|_| match rng.random_bool(0.7) {
                    true => Q::Dec(random_op(rng), constant(rng)),
                    false => Q::Date(random_op(rng), date(rng)),
                })
                .collect(),
        ),
        3 => Q::And((0..rng.random_range(2..4)).map(|_| random_q(rng, values, limit, depth - 1)).collect()),
        4 => {
            Q::Or(Box::new(random_q(rng, values, limit, depth - 1)), Box::new(random_q(rng, values, limit, depth - 1)))
        }
        _ => Q::Not(Box::new(random_q(rng, values, limit, depth - 1))),
    }
}

fn decimal_case(seed: u64, rows: usize, precision: u8, page_size: u64) {
    use looseleaf::{EncodingKind, EncodingPolicy};
    let mut rng = StdRng::seed_from_u64(seed);
    let limit = 10i128.pow(precision as u32) - 1;
    // Values in a narrow band (bit-packed in few bits), or over the whole range of the precision.
    let center = rng.random_range(-limit..=limit);
    let spread = [3i128, 1000, limit][rng.random_range(0..3)];
    let values: Vec<i128> = (0..rows)
        .map(|_| match rng.random_range(0..20) {
            0 => limit,
            1 => -limit,
            _ => center.saturating_add(rng.random_range(-spread..=spread)).clamp(-limit, limit),
        })
        .collect();
    let null = |rng: &mut StdRng| rng.random_bool(0.15);
    let d: Decimal128Array = values
        .iter()
        .map(|v| (!null(&mut rng)).then_some(*v))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(precision, 2)
        .unwrap();
    let t: Date32Array = (0..rows).map(|_| (!null(&mut rng)).then(|| rng.random_range(8000..8100))).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("d", d.data_type().clone(), true),
        Field::new("t", DataType::Date32, true),
        Field::new("i", DataType::Int64, false),
    ]));
    let i: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows as i64));
    let table = RecordBatch::try_new(schema.clone(), vec![Arc::new(d.clone()), Arc::new(t.clone()), i]).unwrap();
    let forced = |kind| EncodingPolicy { force: Some(kind), ..EncodingPolicy::default() };
    let policies = [
        ("chosen", EncodingPolicy::default()),
        ("plain", EncodingPolicy::plain_only()),
        ("bitpacked", forced(EncodingKind::Bitpacked)),
        ("dictionary", forced(EncodingKind::Dictionary)),
        ("rle", forced(EncodingKind::Rle)),
        ("delta", forced(EncodingKind::Delta)),
        ("constant", forced(EncodingKind::Constant)),
    ];
    let predicates: Vec<Q> = (0..12).map(|_| random_q(&mut rng, &values, limit, 2)).collect();
    let mut written = Vec::new();
    for (name, policy) in policies {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.leaf");
        let options = WriterOptions::default().with_page_size(page_size).with_encoding_policy("d", policy);
        let write = async {
            let mut writer = FileWriter::create_path(&path, schema.clone(), options).await?;
            writer.write(&table).await?;
            writer.finish().await
        };
        match runtime().block_on(write) {
            Ok(_) => written.push(name),
            // An encoding that cannot store these values (a constant of varied ones, deltas of
            // 16-byte values): nothing to read.
            Err(looseleaf::Error::InvalidArgument { .. }) => continue,
            Err(other) => panic!("writing with {name}: {other}"),
        }
        let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
        for q in &predicates {
            let predicate = q.predicate();
            let keep = |rows: &mut dyn Iterator<Item = usize>| -> Vec<u64> {
                rows.filter(|&r| q.eval(&d, &t, r) == Some(true)).map(|r| r as u64).collect()
            };
            for columns in [&["d", "t"][..], &["i"][..], &["t", "i", "d"][..]] {
                let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
                let projected = table.project(&columns.iter().map(|c| schema.index_of(c).unwrap()).collect::<Vec<_>>());
                let want = |rows: Vec<u64>| {
                    arrow_select::take::take_record_batch(projected.as_ref().unwrap(), &UInt64Array::from(rows))
                        .unwrap()
                };
                let read = file
                    .read()
                    .with_columns(names.clone())
                    .with_filter(predicate.clone())
                    .with_batch_size(common::nz(rng.random_range(1..300)));
                let out = runtime().block_on(read_to_end(read)).unwrap();
                let got = concat(&out.schema, &out.batches);
                assert_eq!(got, want(keep(&mut (0..rows))), "{name}: scan of {columns:?} with {q:?}");
                let start = rng.random_range(0..=rows);
                let end = rng.random_range(start..=rows);
                let read = file
                    .read()
                    .with_columns(names.clone())
                    .with_row_range(start as u64..end as u64)
                    .with_filter(predicate.clone());
                let out = runtime().block_on(read_to_end(read)).unwrap();
                let got = concat(&out.schema, &out.batches);
                assert_eq!(got, want(keep(&mut (start..end))), "{name}: rows {start}..{end} of {columns:?} with {q:?}");
                if rows > 0 {
                    let indices: Vec<u64> =
                        (0..rng.random_range(0..40)).map(|_| rng.random_range(0..rows as u64)).collect();
                    let got = runtime()
                        .block_on(file.read().with_columns(names).with_filter(predicate.clone()).take(&indices))
                        .unwrap();
                    let kept = keep(&mut indices.iter().map(|i| *i as usize));
                    let kept_in_order: Vec<u64> = indices.iter().copied().filter(|i| kept.contains(i)).collect();
                    assert_eq!(got, want(kept_in_order), "{name}: take of {columns:?} with {q:?}");
                }
            }
        }
    }
    assert!(written.contains(&"plain") && written.contains(&"chosen"), "only {written:?} could be written");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    #[test]
    fn decimal_and_date_comparisons_are_exact_on_every_encoding(
        seed in any::<u64>(),
        rows in prop_oneof![1 => Just(0usize), 2 => 1usize..50, 5 => 50usize..3000],
        precision in prop_oneof![Just(9u8), Just(15u8), Just(18u8), Just(20u8), Just(38u8)],
        page_size in prop_oneof![256u64..4096, Just(1u64 << 20)],
    ) {
        decimal_case(seed, rows, precision, page_size);
    }
}
