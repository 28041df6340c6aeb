//! Aggregates in the core: for random data (nulls everywhere, every encoding forced, small
//! pages) and random filters and groupings, the partial results of `looseleaf::aggregate`,
//! merged as a query engine merges them, and its final results equal sums, counts and extremes
//! computed row by row here with plain integer arithmetic.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::files::write_file_with;
use common::runtime;
use looseleaf::aggregate::{AggregateFunction, AggregateResults, Aggregation, Arithmetic, ValueExpr};
use looseleaf::encodings::policy::{EncodingKind, EncodingPolicy};
use looseleaf::filter::{CompareOp, Predicate};
use looseleaf::{FileReader, WriterOptions};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn decimal(values: Vec<Option<i128>>, precision: u8, scale: i8) -> Decimal128Array {
    Decimal128Array::from(values).with_precision_and_scale(precision, scale).unwrap()
}

/// Rows: `g` strings of few values, `h` int32 of few values, `price` and `disc`
/// decimal(15,2) (`price` up to its precision when `wide`), `qty` int64, `day` date32.
fn table(rng: &mut StdRng, rows: usize, wide: bool) -> RecordBatch {
    let null = |rng: &mut StdRng| rng.random_bool(0.1);
    let limit = if wide { 10i128.pow(15) - 1 } else { 10_000_000 };
    let g: StringArray = (0..rows).map(|_| (!null(rng)).then(|| ["A", "N", "R"][rng.random_range(0..3)])).collect();
    let h: Int32Array = (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(-2..3))).collect();
    let price = decimal((0..rows).map(|_| (!null(rng)).then(|| rng.random_range(-limit..=limit))).collect(), 15, 2);
    let disc = decimal((0..rows).map(|_| (!null(rng)).then(|| rng.random_range(0..=10))).collect(), 15, 2);
    let qty: Int64Array = (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(-(1i64 << 40)..1 << 40))).collect();
    let day: Date32Array = (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(8000..9000))).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("g", DataType::Utf8, true),
        Field::new("h", DataType::Int32, true),
        Field::new("price", price.data_type().clone(), true),
        Field::new("disc", disc.data_type().clone(), true),
        Field::new("qty", DataType::Int64, true),
        Field::new("day", DataType::Date32, true),
    ]));
    let columns: Vec<ArrayRef> =
        vec![Arc::new(g), Arc::new(h), Arc::new(price), Arc::new(disc), Arc::new(qty), Arc::new(day)];
    RecordBatch::try_new(schema, columns).unwrap()
}

fn column(name: &str) -> Box<ValueExpr> {
    Box::new(ValueExpr::Column(name.into()))
}

/// `price * (1 - disc)`: decimal(15,2) * decimal(16,2) = decimal(32,4).
fn discounted() -> ValueExpr {
    let one = ValueExpr::Literal(Arc::new(decimal(vec![Some(1)], 1, 0)));
    ValueExpr::Multiply(column("price"), Box::new(ValueExpr::Subtract(Box::new(one), column("disc"))))
}

/// A group's key: the string and integer grouping values (absent columns are `None`).
type Key = (Option<String>, Option<i32>);

/// Per group: rows, count(price), sum(price), sum(price * (1 - disc)), sum(qty), min(day),
/// max(price), each sum `None` without a value.
#[derive(Debug, Default, Clone, PartialEq)]
struct Expected {
    rows: i64,
    prices: i64,
    sum_price: Option<i128>,
    sum_discounted: Option<i128>,
    sum_qty: Option<i128>,
    min_day: Option<i32>,
    max_price: Option<i128>,
}

fn add(slot: &mut Option<i128>, value: Option<i128>) {
    if let Some(v) = value {
        *slot = Some(slot.unwrap_or(0) + v);
    }
}

fn functions() -> Vec<AggregateFunction> {
    vec![
        AggregateFunction::CountRows,
        AggregateFunction::Count(ValueExpr::Column("price".into())),
        AggregateFunction::Sum(ValueExpr::Column("price".into())),
        AggregateFunction::Sum(discounted()),
        AggregateFunction::Sum(ValueExpr::Column("qty".into())),
        AggregateFunction::Min(ValueExpr::Column("day".into())),
        AggregateFunction::Max(ValueExpr::Column("price".into())),
    ]
}

/// Row by row: the rows with `day >= from` (a null day is not kept), grouped.
fn expected(t: &RecordBatch, group_by: &[&str], from: i32) -> HashMap<Key, Expected> {
    let g = t.column(0).as_string::<i32>();
    let h = t.column(1).as_primitive::<Int32Type>();
    let price = t.column(2).as_primitive::<Decimal128Type>();
    let disc = t.column(3).as_primitive::<Decimal128Type>();
    let qty = t.column(4).as_primitive::<Int64Type>();
    let day = t.column(5).as_primitive::<Date32Type>();
    let get = |a: &dyn Array, row: usize| a.is_valid(row).then_some(row);
    let mut out: HashMap<Key, Expected> = HashMap::new();
    if group_by.is_empty() {
        out.insert((None, None), Expected::default());
    }
    for row in 0..t.num_rows() {
        if get(day, row).is_none() || day.value(row) < from {
            continue;
        }
        let key = (
            group_by.contains(&"g").then(|| get(g, row).map(|r| g.value(r).to_owned())).flatten(),
            group_by.contains(&"h").then(|| get(h, row).map(|r| h.value(r))).flatten(),
        );
        let e = out.entry(key).or_default();
        e.rows += 1;
        let p = get(price, row).map(|r| price.value(r));
        e.prices += i64::from(p.is_some());
        add(&mut e.sum_price, p);
        // 1 - disc at scale 2 is 100 - disc; the product has scale 4.
        add(&mut e.sum_discounted, p.zip(get(disc, row).map(|r| disc.value(r))).map(|(p, d)| p * (100 - d)));
        add(&mut e.sum_qty, get(qty, row).map(|r| i128::from(qty.value(r))));
        if let Some(d) = get(day, row).map(|r| day.value(r)) {
            e.min_day = Some(e.min_day.map_or(d, |m: i32| m.min(d)));
        }
        if let Some(p) = p {
            e.max_price = Some(e.max_price.map_or(p, |m: i128| m.max(p)));
        }
    }
    out
}

/// The partial results merged: counts and sums added, extremes kept.
fn merged(result: &RecordBatch, group_by: &[&str]) -> HashMap<Key, Expected> {
    let mut out: HashMap<Key, Expected> = HashMap::new();
    let at = |i: usize| result.column(group_by.len() + i);
    let decimal = |i: usize, row: usize| {
        let a = at(i).as_primitive::<Decimal128Type>();
        a.is_valid(row).then(|| a.value(row))
    };
    for row in 0..result.num_rows() {
        let mut key: Key = (None, None);
        for (i, name) in group_by.iter().enumerate() {
            let c = result.column(i);
            if *name == "g" {
                key.0 = c.is_valid(row).then(|| c.as_string::<i32>().value(row).to_owned());
            } else {
                key.1 = c.is_valid(row).then(|| c.as_primitive::<Int32Type>().value(row));
            }
        }
        let e = out.entry(key).or_default();
        e.rows += at(0).as_primitive::<Int64Type>().value(row);
        e.prices += at(1).as_primitive::<Int64Type>().value(row);
        add(&mut e.sum_price, decimal(2, row));
        add(&mut e.sum_discounted, decimal(3, row));
        let q = at(4).as_primitive::<Int64Type>();
        add(&mut e.sum_qty, q.is_valid(row).then(|| i128::from(q.value(row))));
        let d = at(5).as_primitive::<Date32Type>();
        if d.is_valid(row) {
            e.min_day = Some(e.min_day.map_or(d.value(row), |m| m.min(d.value(row))));
        }
        if let Some(p) = decimal(6, row) {
            e.max_price = Some(e.max_price.map_or(p, |m| m.max(p)));
        }
    }
    out
}

fn aggregate(file: &FileReader, aggregation: &Aggregation) -> RecordBatch {
    let bound = aggregation.bind(file.schema()).unwrap();
    runtime().block_on(async {
        let stream = bound.prepare(file.read()).stream().await.unwrap();
        bound.aggregate(stream).await.unwrap()
    })
}

/// `aggregation` of `file`'s rows read as `pieces` row ranges, aggregated concurrently.
fn aggregate_in_pieces(file: &FileReader, aggregation: &Aggregation, pieces: u64) -> RecordBatch {
    let bound = aggregation.bind(file.schema()).unwrap();
    let rows = file.num_rows();
    runtime().block_on(async {
        let mut reads = Vec::new();
        for i in 0..pieces {
            let range = rows * i / pieces..rows * (i + 1) / pieces;
            reads.push(bound.prepare(file.read().with_row_range(range)).stream().await.unwrap());
        }
        bound.aggregate_concurrently(reads).await.unwrap()
    })
}

fn aggregate_case(seed: u64, rows: usize, encoding: usize, grouping: usize, wide: bool, results: AggregateResults) {
    let mut rng = StdRng::seed_from_u64(seed);
    let t = table(&mut rng, rows, wide);
    let policy = match encoding {
        0 => EncodingPolicy::default(),
        1 => EncodingPolicy::plain_only(),
        2 => EncodingPolicy { force: Some(EncodingKind::Dictionary), ..EncodingPolicy::default() },
        3 => EncodingPolicy { force: Some(EncodingKind::Bitpacked), ..EncodingPolicy::default() },
        _ => EncodingPolicy { force: Some(EncodingKind::Rle), ..EncodingPolicy::default() },
    };
    let mut options = WriterOptions::default().with_page_size(2048).with_zone_map_rows(100);
    // Strings are bit-packed and run-length encoded only inside other encodings.
    let strings = if encoding <= 2 { policy.clone() } else { EncodingPolicy::default() };
    options = options.with_encoding_policy("g", strings);
    for name in ["h", "price", "disc", "qty", "day"] {
        options = options.with_encoding_policy(name, policy.clone());
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.leaf");
    runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), options));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    let group_by: &[&str] = [&[][..], &["g"], &["h"], &["g", "h"]][grouping];
    let from = rng.random_range(7990..9010);
    let filter = Predicate::Compare {
        column: vec!["day".into()],
        op: CompareOp::GtEq,
        value: Arc::new(Date32Array::from(vec![from])),
    };
    let aggregation = Aggregation {
        group_by: group_by.iter().map(|s| s.to_string()).collect(),
        functions: functions(),
        filter: Some(filter),
        arithmetic: Arithmetic::default(),
        results,
    };
    let result = aggregate(&file, &aggregation);
    let want = expected(&t, group_by, from);
    if results == AggregateResults::Final {
        // Final results of row ranges aggregated concurrently and merged: the same.
        let pieces = aggregate_in_pieces(&file, &aggregation, 1 + seed % 4);
        assert_eq!(pieces.schema(), result.schema());
        assert_eq!(merged(&pieces, group_by), want);
        // One row per group, sums in Spark's types of sums (decimal(p + 10, s), bigint).
        assert_eq!(result.num_rows(), want.len());
        let types: Vec<_> =
            result.schema().fields().iter().skip(group_by.len()).map(|f| f.data_type().clone()).collect();
        assert_eq!(types[2], DataType::Decimal128(25, 2));
        assert_eq!(types[3], DataType::Decimal128(38, 4));
        assert_eq!(types[4], DataType::Int64);
    }
    assert_eq!(merged(&result, group_by), want);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn aggregates_equal_the_row_by_row_results(
        seed in any::<u64>(),
        rows in prop_oneof![1 => Just(0usize), 2 => 1usize..50, 5 => 50usize..4000],
        encoding in 0usize..5,
        grouping in 0usize..4,
        wide in any::<bool>(),
        last in any::<bool>(),
    ) {
        let results = if last { AggregateResults::Final } else { AggregateResults::Partial };
        aggregate_case(seed, rows, encoding, grouping, wide, results);
    }
}

/// A group's sum past its values' precision is handed out in pieces within it, on extra rows
/// whose other aggregates are neutral.
#[test]
fn sums_past_the_precision_come_in_pieces() {
    let rows = 1000;
    let values = decimal((0..rows).map(|_| Some(999)).collect(), 3, 0);
    let schema = Arc::new(Schema::new(vec![Field::new("x", values.data_type().clone(), false)]));
    let t = RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.leaf");
    runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), WriterOptions::default()));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    let aggregation = Aggregation {
        functions: vec![
            AggregateFunction::CountRows,
            AggregateFunction::Sum(ValueExpr::Column("x".into())),
            AggregateFunction::Max(ValueExpr::Column("x".into())),
        ],
        ..Aggregation::default()
    };
    let result = aggregate(&file, &aggregation);
    assert_eq!(result.num_rows(), 1000, "one piece of 999 a row");
    let counts = result.column(0).as_primitive::<Int64Type>();
    let sums = result.column(1).as_primitive::<Decimal128Type>();
    let maxima = result.column(2).as_primitive::<Decimal128Type>();
    assert_eq!(counts.values().iter().sum::<i64>(), 1000);
    assert_eq!(sums.iter().map(|s| s.unwrap()).sum::<i128>(), 999 * 1000);
    assert!(sums.iter().all(|s| s.unwrap().abs() <= 999));
    assert_eq!(maxima.iter().flatten().collect::<Vec<_>>(), vec![999]);
}

/// An aggregation without grouping is one row even when the filter keeps nothing; the JSON
/// form parses to the same aggregation.
#[test]
fn no_rows_give_one_row_and_json_parses() {
    let mut rng = StdRng::seed_from_u64(3);
    let t = table(&mut rng, 500, false);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.leaf");
    runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), WriterOptions::default()));
    let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
    let json = r#"{"aggregates": [{"count": null}, {"sum": {"multiply": [{"column": "price"},
        {"subtract": [{"literal": {"type": "decimal128", "precision": 1, "scale": 0, "value": "1"}},
        {"column": "disc"}]}]}}], "filter": {"compare": {"column": ["day"], "op": "gt",
        "literal": {"type": "date32", "value": 99999}}}}"#;
    let aggregation = Aggregation::from_json(json).unwrap();
    let result = aggregate(&file, &aggregation);
    assert_eq!(result.num_rows(), 1);
    assert_eq!(result.column(0).as_primitive::<Int64Type>().value(0), 0);
    assert!(result.column(1).is_null(0));
    assert_eq!(result.schema().field(1).data_type(), &DataType::Decimal128(32, 4));
    let err = Aggregation::from_json(r#"{"aggregates": [{"avg": {"column": "price"}}]}"#).unwrap_err();
    assert!(err.to_string().contains("unknown function"), "{err}");
    let err = Aggregation::from_json(r#"{"aggregates": [{"sum": {"column": "g"}}]}"#)
        .unwrap()
        .bind(file.schema())
        .unwrap_err();
    assert!(err.to_string().contains("not an exact number"), "{err}");
}

/// Final sums: the exact total of every row, checked once against the sum's type
/// (`decimal(38, 0)` stays 38 digits), whatever the running sums pass through on the way (past
/// 38 digits, past `i128`); a total that does not fit is null, an integer's wraps, and either
/// is an error in ANSI mode.
#[test]
fn final_sums_are_exact_and_checked_once() {
    let e37 = 10i128.pow(37);
    let big = 999 * 10i128.pow(35);
    // The decimals, the integers and their final sums.
    type Case = (Vec<i128>, Vec<i64>, Option<i128>, Option<i64>);
    let cases: Vec<Case> = vec![
        // Running sums past 38 digits and back.
        (vec![5 * e37, 5 * e37, -5 * e37], vec![i64::MAX, 1, -1], Some(5 * e37), Some(i64::MAX)),
        // Running sums past i128 (1.7e38) and back.
        (vec![big, big, big, -big, -big], vec![i64::MIN, -1, 1], Some(big), Some(i64::MIN)),
        // Totals that do not fit: a null decimal, a wrapped integer.
        (vec![5 * e37, 5 * e37], vec![i64::MAX, 1], None, Some(i64::MIN)),
        // A total of 2^128 + 5, which an `i128` would wrap to 5.
        (vec![big, big, big, i128::MAX - big - big - big + i128::MAX + 7], vec![i64::MAX, 1], None, Some(i64::MIN)),
    ];
    for (decimals, integers, want_decimal, want_integer) in cases {
        let rows = decimals.len().max(integers.len());
        let pad = |v: Vec<Option<i128>>| v.into_iter().chain(std::iter::repeat(None)).take(rows).collect::<Vec<_>>();
        let x = decimal(pad(decimals.into_iter().map(Some).collect()), 38, 0);
        let n: Int64Array = pad(integers.into_iter().map(|v| Some(i128::from(v))).collect())
            .into_iter()
            .map(|v| v.map(|v| v as i64))
            .collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", x.data_type().clone(), true),
            Field::new("n", DataType::Int64, true),
        ]));
        let t = RecordBatch::try_new(schema, vec![Arc::new(x), Arc::new(n)]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.leaf");
        runtime().block_on(write_file_with(&path, &t.schema(), std::slice::from_ref(&t), WriterOptions::default()));
        let file = runtime().block_on(FileReader::open_path(&path)).unwrap();
        let sums = vec![
            AggregateFunction::Sum(ValueExpr::Column("x".into())),
            AggregateFunction::Sum(ValueExpr::Column("n".into())),
        ];
        let lenient = Aggregation {
            functions: sums.clone(),
            arithmetic: Arithmetic { ansi: false, precision_loss: true },
            results: AggregateResults::Final,
            ..Aggregation::default()
        };
        let result = aggregate(&file, &lenient);
        assert_eq!(aggregate_in_pieces(&file, &lenient, 2), result, "merged from two ranges' partial sums");
        assert_eq!(result.num_rows(), 1);
        assert_eq!(result.schema().field(0).data_type(), &DataType::Decimal128(38, 0));
        let x = result.column(0).as_primitive::<Decimal128Type>();
        assert_eq!(x.is_valid(0).then(|| x.value(0)), want_decimal);
        let n = result.column(1).as_primitive::<Int64Type>();
        assert_eq!(n.is_valid(0).then(|| n.value(0)), want_integer);
        // ANSI: an error exactly where a total does not fit.
        let fits = want_decimal.is_some() && integers_fit(&t);
        let strict = Aggregation { arithmetic: Arithmetic::default(), ..lenient };
        let bound = strict.bind(file.schema()).unwrap();
        let outcome = runtime().block_on(async {
            let stream = bound.prepare(file.read()).stream().await.unwrap();
            bound.aggregate(stream).await
        });
        match outcome {
            Ok(_) => assert!(fits, "an overflow must be an error in ANSI mode"),
            Err(e) => {
                assert!(!fits, "{e}");
                assert!(e.to_string().contains("overflow"), "{e}");
            }
        }
    }
}

/// Whether column `n`'s exact total is an `i64`.
fn integers_fit(t: &RecordBatch) -> bool {
    let n = t.column(1).as_primitive::<Int64Type>();
    i64::try_from(n.iter().flatten().map(i128::from).sum::<i128>()).is_ok()
}

/// Dropping a concurrent aggregation (a cancelled query) stops its reads: their tasks are
/// aborted, not left running to the end of the data.
#[test]
fn a_dropped_concurrent_aggregation_stops_its_reads() {
    use futures::StreamExt;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Dropped(Arc<AtomicUsize>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let schema = Schema::new(vec![Field::new("x", DataType::Int64, true)]);
    let aggregation = Aggregation {
        functions: vec![AggregateFunction::Sum(ValueExpr::Column("x".into()))],
        results: AggregateResults::Final,
        ..Aggregation::default()
    };
    let bound = aggregation.bind(&schema).unwrap();
    // Reads that never end, each noting when it is dropped.
    let reads: Vec<_> = (0..3)
        .map(|_| {
            let flag = Dropped(dropped.clone());
            futures::stream::pending::<looseleaf::Result<RecordBatch>>().map(move |b| {
                let _ = &flag;
                b
            })
        })
        .collect();
    runtime().block_on(async {
        let running = tokio::time::timeout(std::time::Duration::from_millis(50), bound.aggregate_concurrently(reads));
        assert!(running.await.is_err(), "the reads never end");
        for _ in 0..200 {
            if dropped.load(Ordering::SeqCst) == 3 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        panic!("{} of 3 reads dropped", dropped.load(Ordering::SeqCst));
    });
}
