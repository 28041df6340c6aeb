//! Per-page statistics, computed again here from each page's rows.

use super::*;
use crate::dictionaries::logical;

/// The statistics of a page holding the rows of `array`, computed here: null count, smallest
/// and largest value (floats without NaN, strings with a minimum truncated to 64 bytes and no
/// maximum when longer).
fn expected_statistics(array: &ArrayRef) -> (u64, Option<StatValue>, Option<StatValue>) {
    let null_count = array.logical_null_count() as u64;
    let valid: Vec<usize> = (0..array.len()).filter(|i| array.is_valid(*i)).collect();
    let data_type = array.data_type();
    let (min, max) = if int_types().contains(data_type) || matches!(data_type, DataType::Timestamp(..)) {
        let (width, signed) = int_layout(data_type);
        let bytes = value_bytes(array, width);
        let ints = valid.iter().map(|i| {
            let mut buf = if signed && bytes[i * width + width - 1] & 0x80 != 0 { [0xff; 16] } else { [0; 16] };
            buf[..width].copy_from_slice(&bytes[i * width..(i + 1) * width]);
            i128::from_le_bytes(buf)
        });
        (ints.clone().min().map(StatValue::Int), ints.max().map(StatValue::Int))
    } else if matches!(data_type, DataType::Float16 | DataType::Float32 | DataType::Float64) {
        let width = data_type.primitive_width().unwrap();
        let bytes = value_bytes(array, width);
        let floats: Vec<f64> = valid
            .iter()
            .map(|i| {
                let b = &bytes[i * width..(i + 1) * width];
                match width {
                    2 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
                    4 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
                    _ => f64::from_le_bytes(b.try_into().unwrap()),
                }
            })
            .filter(|f| !f.is_nan())
            .collect();
        let min = floats.iter().copied().reduce(f64::min).map(StatValue::Float);
        (min, floats.iter().copied().reduce(f64::max).map(StatValue::Float))
    } else if let DataType::Boolean = data_type {
        let values: Vec<bool> = valid.iter().map(|i| array.as_boolean().value(*i)).collect();
        if values.is_empty() {
            (None, None)
        } else {
            (Some(StatValue::Bool(values.iter().all(|v| *v))), Some(StatValue::Bool(values.iter().any(|v| *v))))
        }
    } else if BYTES_TYPES.contains(data_type) {
        let values: Vec<Vec<u8>> = valid.iter().map(|i| bytes_at(array, *i)).collect();
        let stat = |b: &[u8]| {
            if is_utf8(data_type) {
                StatValue::Utf8(String::from_utf8_lossy(b).into_owned())
            } else {
                StatValue::Bytes(b.to_vec())
            }
        };
        let min = values.iter().min().map(|m| stat(&m[..m.len().min(64)]));
        let max = values.iter().max().filter(|m| m.len() <= 64).map(|m| stat(m));
        (min, max)
    } else {
        (None, None)
    };
    (null_count, min, max)
}

/// The bytes of value `i` of a string or binary array.
fn bytes_at(array: &ArrayRef, i: usize) -> Vec<u8> {
    match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().value(i).as_bytes().to_vec(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(i).as_bytes().to_vec(),
        DataType::Utf8View => array.as_string_view().value(i).as_bytes().to_vec(),
        DataType::Binary => array.as_binary::<i32>().value(i).to_vec(),
        DataType::LargeBinary => array.as_binary::<i64>().value(i).to_vec(),
        DataType::BinaryView => array.as_binary_view().value(i).to_vec(),
        other => panic!("no bytes in {other}"),
    }
}

/// A table for statistics: every kind of bound, pages of all nulls and all NaNs, strings longer
/// than the bounds.
fn statistics_table(rng: &mut StdRng, len: usize) -> RecordBatch {
    let mut columns: Vec<(String, ArrayRef)> = Vec::new();
    for t in int_types().into_iter().chain([DataType::Timestamp(TimeUnit::Nanosecond, None), DataType::Date32]) {
        for shape in [IntShape::Extremes, IntShape::Small, IntShape::NearMax, IntShape::Runs] {
            let nulls = random_validity(rng, len);
            columns
                .push((format!("{t} {shape:?}"), int_array(&t, &int_values(rng, len, shape, int_bounds(&t)), nulls)));
        }
    }
    for t in [DataType::Float16, DataType::Float32, DataType::Float64] {
        for shape in [FloatShape::Specials, FloatShape::Runs, FloatShape::Constant, FloatShape::RandomBits] {
            let nulls = random_validity(rng, len);
            columns.push((format!("{t} {shape:?}"), float_array(rng, &t, len, shape, nulls)));
        }
    }
    for shape in 0..4 {
        let nulls = random_validity(rng, len);
        columns.push((format!("bool {shape}"), bool_array(rng, len, shape, nulls)));
    }
    for t in BYTES_TYPES {
        for shape in [BytesShape::Random, BytesShape::Long(70), BytesShape::Empty, BytesShape::AllBytes] {
            let nulls = random_validity(rng, len);
            let values = bytes_values(rng, len, shape, is_utf8(&t));
            columns.push((format!("{t} {shape:?}"), bytes_array(&t, &values, nulls.as_ref())));
        }
    }
    // Bounds longer than 64 bytes: a truncated minimum, no maximum.
    let long: Vec<Vec<u8>> =
        (0..len).map(|i| format!("{}{i}", if i % 2 == 0 { "a" } else { "z" }.repeat(80)).into_bytes()).collect();
    columns.push(("long".into(), bytes_array(&DataType::Utf8, &long, None)));
    for t in other_fixed_types().into_iter().chain([DataType::Null]) {
        let (_, array) = shaped_array(rng, &t, len);
        columns.push((format!("{t}"), array));
    }
    table_of(&columns)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_statistics_match_the_data() {
    let mut rng = common::rng(40);
    let table = statistics_table(&mut rng, 4000);
    for (options, label) in [
        (WriterOptions::default().with_page_size(3000), "automatic"),
        (
            WriterOptions::default().with_page_size(5000).with_default_encoding_policy(EncodingPolicy::plain_only()),
            "plain",
        ),
        (WriterOptions::default().with_page_size(200).with_compression(Compression::Lz4, 1), "lz4"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("statistics.leaf");
        let inputs = split_randomly(&mut rng, &table, 1500);
        try_write(&path, &table.schema(), &inputs, options).await.unwrap();
        let reader = FileReader::open_path(&path).await.unwrap();
        let metadata = reader.metadata().await.unwrap();
        assert_eq!(metadata.columns.len(), table.num_columns());
        let mut pages = 0;
        for (column, summary) in metadata.columns.iter().enumerate() {
            let array = table.column(column);
            let mut first_row = 0;
            for (index, page) in summary.pages.iter().enumerate() {
                let rows = array.slice(first_row, page.num_rows as usize);
                let (null_count, min, max) = expected_statistics(&rows);
                let what = format!("{label}: {:?} page {index} (rows {first_row}..)", summary.field);
                assert_eq!(page.null_count, Some(null_count), "{what}: null count");
                assert_eq!(page.min, min, "{what}: min");
                assert_eq!(page.max, max, "{what}: max");
                first_row += page.num_rows as usize;
                pages += 1;
            }
            assert_eq!(first_row, table.num_rows(), "{label}: pages of {:?}", summary.field);
        }
        assert!(pages > 3 * table.num_columns(), "{label}: {pages} pages");
    }
}

/// Pages of dictionary arrays are bounded by their dictionaries (which may hold values no row
/// points at).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dictionary_page_statistics_bound_the_values() {
    let mut rng = common::rng(41);
    let array = dictionary_array::<Int32Type>(&mut rng, 3000, dictionary_values(&DataType::Utf8, 0, 50));
    let table = table_of(&[("d".into(), array.clone())]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dictionary_statistics.leaf");
    write_table(&path, &table, WriterOptions::default().with_page_size(2000)).await;
    let metadata = FileReader::open_path(&path).await.unwrap().metadata().await.unwrap();
    let mut first_row = 0;
    for page in &metadata.columns[0].pages {
        let rows = logical(&array.slice(first_row, page.num_rows as usize));
        assert_eq!(page.null_count, Some(rows.null_count() as u64));
        let (Some(StatValue::Utf8(min)), Some(StatValue::Utf8(max))) = (&page.min, &page.max) else {
            panic!("bounds of a dictionary page of strings: {page:?}")
        };
        let strings = rows.as_string::<i32>();
        for value in strings.iter().flatten() {
            assert!(min.as_str() <= value && value <= max.as_str(), "{value:?} outside {min:?}..={max:?}");
        }
        first_row += page.num_rows as usize;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_can_be_turned_off() {
    let mut rng = common::rng(42);
    let table = statistics_table(&mut rng, 500);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no_statistics.leaf");
    write_table(&path, &table, WriterOptions::default().with_page_size(300).with_statistics(false)).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    for column in reader.metadata().await.unwrap().columns {
        for page in &column.pages {
            assert_eq!((&page.null_count, &page.min, &page.max), (&None, &None, &None), "{:?}", column.field);
        }
    }
    assert!(
        column_metadata(&std::fs::read(&path).unwrap()).iter().flat_map(|c| &c.pages).all(|p| p.statistics.is_none())
    );
    check_reads(&mut rng, &reader, &table, "without statistics").await;
}

/// Page skipping keeps every row that satisfies the filter (whatever the data, nulls
/// included), and on sorted data rules pages out. The filters come in the JSON form with typed
/// constants the JVM connector sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_skipping_keeps_every_matching_row() {
    use looseleaf::filter::Predicate;
    let mut rng = common::rng(71);
    let dir = tempfile::tempdir().unwrap();
    // Rows ruled out on sorted data, over every case: some must be.
    let mut skipped = 0;
    type Holds = fn(i128, i128) -> bool;
    let ops: [(&str, Holds); 5] = [
        ("eq", |v, b| v == b),
        ("lt", |v, b| v < b),
        ("lt_eq", |v, b| v <= b),
        ("gt", |v, b| v > b),
        ("gt_eq", |v, b| v >= b),
    ];
    for case in 0..12 {
        let len = rng.random_range(1..4000);
        let sorted = case % 2 == 0;
        let mut values: Vec<i64> = (0..len).map(|_| rng.random_range(-500..500)).collect();
        if sorted {
            values.sort_unstable();
        }
        let nulls: Vec<bool> = (0..len).map(|i| !(case % 3 == 0 && (i / 50) % 4 == 1)).collect();
        let ints: ArrayRef = Arc::new(Int64Array::from_iter(values.iter().zip(&nulls).map(|(v, ok)| ok.then_some(*v))));
        let dates: ArrayRef = Arc::new(arrow_array::Date32Array::from_iter(values.iter().map(|v| Some(*v as i32 * 3))));
        let text: ArrayRef = Arc::new(StringArray::from_iter_values(values.iter().map(|v| format!("{:04}", v + 500))));
        let table = table_of(&[("i".into(), ints.clone()), ("d".into(), dates), ("s".into(), text)]);
        let path = dir.path().join(format!("skip{case}.leaf"));
        write_table(&path, &table, WriterOptions::default().with_page_size(rng.random_range(64..2048))).await;
        let reader = FileReader::open_path(&path).await.unwrap();
        let (values, nulls) = (Arc::new(values), Arc::new(nulls));
        // MIN and MAX from the statistics: those of the non-null values; none for strings.
        let present: Vec<i128> =
            values.iter().zip(nulls.iter()).filter(|(_, ok)| **ok).map(|(v, _)| *v as i128).collect();
        let expected =
            looseleaf::ColumnBounds { min: present.iter().copied().min(), max: present.iter().copied().max() };
        assert_eq!(reader.column_bounds("i").await.unwrap(), Some(expected), "case {case}");
        assert_eq!(reader.column_bounds("s").await.unwrap(), None);
        assert_eq!(reader.column_bounds("no such column").await.unwrap(), None);
        for _ in 0..20 {
            let (op, holds) = *ops.choose(&mut rng).unwrap();
            let bound: i64 = rng.random_range(-600..600);
            let mut parts = vec![format!(
                r#"{{"compare": {{"column": ["i"], "op": "{op}", "literal": {{"type": "int64", "value": "{bound}"}}}}}}"#
            )];
            // Each part, as a test of one row.
            let (first_values, first_nulls) = (values.clone(), nulls.clone());
            let mut tests: Vec<Box<dyn Fn(usize) -> bool>> =
                vec![Box::new(move |row| first_nulls[row] && holds(first_values[row] as i128, bound.into()))];
            if rng.random_bool(0.3) {
                let days = bound * 3 - 30;
                parts.push(format!(
                    r#"{{"compare": {{"column": ["d"], "op": "gt_eq", "literal": {{"type": "date32", "value": {days}}}}}}}"#
                ));
                let values = values.clone();
                tests.push(Box::new(move |row| values[row] * 3 >= days));
            }
            match rng.random_range(0..4) {
                0 => {
                    parts.push(r#"{"is_null": {"column": ["i"]}}"#.into());
                    let nulls = nulls.clone();
                    tests.push(Box::new(move |row| !nulls[row]));
                }
                1 => {
                    parts.push(r#"{"is_valid": {"column": ["i"]}}"#.into());
                    let nulls = nulls.clone();
                    tests.push(Box::new(move |row| nulls[row]));
                }
                2 => {
                    let text = format!("{:04}", bound + 500);
                    parts.push(format!(
                        r#"{{"compare": {{"column": ["s"], "op": "lt_eq", "literal": {{"type": "utf8", "value": "{text}"}}}}}}"#
                    ));
                    let values = values.clone();
                    tests.push(Box::new(move |row| format!("{:04}", values[row] + 500) <= text));
                }
                _ => {}
            }
            let json = format!(r#"{{"and": [{}]}}"#, parts.join(", "));
            let filter = Predicate::from_json(&json, &[]).unwrap();
            let (selection, _) = reader
                .rows_matching_statistics(&filter, &looseleaf::RowSelection::all(reader.num_rows()))
                .await
                .unwrap();
            let kept = |row: usize| selection.ranges().iter().any(|r| r.contains(&(row as u64)));
            for row in 0..len {
                let satisfies = tests.iter().all(|test| test(row));
                assert!(!satisfies || kept(row), "case {case}: row {row} matches {json} but was skipped");
            }
            if sorted {
                skipped += len as u64 - selection.num_rows();
            }
        }
        let unknown = Predicate::from_json(r#"{"is_null": {"column": ["no such column"]}}"#, &[]).unwrap();
        let error = reader
            .rows_matching_statistics(&unknown, &looseleaf::RowSelection::all(reader.num_rows()))
            .await
            .unwrap_err();
        assert!(
            matches!(error, looseleaf::Error::InvalidArgument { .. }) && error.to_string().contains("no such column"),
            "{error}"
        );
    }
    assert!(skipped > 0, "sorted data: no page was ever ruled out");
}
