//! Dictionary arrays in and out.

use super::*;

/// The values a dictionary array stands for (other arrays unchanged).
pub(crate) fn logical(array: &ArrayRef) -> ArrayRef {
    match array.as_any_dictionary_opt() {
        Some(dictionary) => take(dictionary.values().as_ref(), dictionary.keys(), None).unwrap(),
        None => array.clone(),
    }
}

#[track_caller]
fn assert_logically_equal(actual: &ArrayRef, expected: &ArrayRef, what: &str) {
    common::assertions::assert_arrays_equal(&logical(actual), &logical(expected), what);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dictionary_arrays_round_trip_as_dictionaries() {
    let mut rng = common::rng(22);
    let key_types = [DataType::Int8, DataType::Int16, DataType::Int32, DataType::UInt32];
    let value_types = [DataType::Utf8, DataType::LargeUtf8, DataType::Binary, DataType::Int64];
    for key in &key_types {
        for value_type in &value_types {
            // Batches with dictionaries of their own (overlapping, some entries unused), written
            // in pages of a few batches each and of parts of one.
            let mut batches = Vec::new();
            for b in 0..6 {
                // Overlapping pools: Arrow can concatenate the expected table's dictionaries
                // within Int8 keys (see `small_dictionaries_beyond_the_key_type_are_written`).
                let values = dictionary_values(value_type, b * 10, 40);
                let len = rng.random_range(1..=700);
                let array = match key {
                    DataType::Int8 => dictionary_array::<Int8Type>(&mut rng, len, values),
                    DataType::Int16 => dictionary_array::<Int16Type>(&mut rng, len, values),
                    DataType::Int32 => dictionary_array::<Int32Type>(&mut rng, len, values),
                    _ => dictionary_array::<UInt32Type>(&mut rng, len, values),
                };
                batches.push(table_of(&[("d".to_string(), array)]));
            }
            let schema = batches[0].schema();
            let table = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
            let what = format!("Dictionary({key}, {value_type})");
            for page_size in [600, 64 * MIB] {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("dictionary.leaf");
                try_write(&path, &schema, &batches, WriterOptions::default().with_page_size(page_size))
                    .await
                    .unwrap_or_else(|e| panic!("{what}: write failed: {e}"));
                let reader = FileReader::open_path(&path).await.unwrap();
                assert_eq!(reader.schema().field(0).data_type(), schema.field(0).data_type(), "{what}");
                check_reads(&mut rng, &reader, &table, &format!("{what}, pages of {page_size} bytes")).await;
                // One batch over every page: pages with different dictionaries in one array.
                let out = read_to_end(reader.read().with_batch_size(nz(table.num_rows()))).await.unwrap();
                assert_eq!(out.batches.len(), 1);
                assert_same(&out.batches[0], &table, &format!("{what}: one batch over every page"));
            }
        }
    }
}

/// Reads `column` of `reader` as a dictionary in one batch (and a row range, and scattered
/// rows) and compares its values with `expected`.
async fn check_dictionary_reads(rng: &mut StdRng, reader: &FileReader, expected: &ArrayRef, what: &str) {
    let n = expected.len();
    let read =
        |batch_size: usize| reader.read().with_dictionary_columns(vec!["v".into()]).with_batch_size(nz(batch_size));
    for batch_size in [n.max(1), random_batch_size(rng)] {
        let out = read_to_end(read(batch_size)).await.unwrap_or_else(|e| panic!("{what}: {e}"));
        // Keys at least wide enough for a batch of distinct values (wider when a page's
        // dictionary holds more values than a batch has rows).
        let needed = if batch_size <= 128 {
            1
        } else if batch_size <= 32768 {
            2
        } else {
            4
        };
        let key_width = match out.schema.field(0).data_type() {
            DataType::Dictionary(key, _) => key.primitive_width(),
            _ => None,
        };
        assert!(key_width.is_some_and(|width| width >= needed), "{what}: {}", out.schema.field(0).data_type());
        let array = out.concat().column(0).clone();
        assert_eq!(array.data_type(), out.schema.field(0).data_type(), "{what}");
        assert!(
            matches!(array.data_type(), DataType::Dictionary(k, v)
                if v.as_ref() == expected.data_type() && matches!(k.as_ref(), DataType::Int8 | DataType::Int16 | DataType::Int32)),
            "{what}: {}",
            array.data_type()
        );
        assert_logically_equal(&array, expected, &format!("{what}: batches of {batch_size}"));
    }
    let (start, end) = (n / 5, n - n / 7);
    let out = read_to_end(read(1000).with_row_range(start as u64..end as u64)).await.unwrap();
    assert_logically_equal(
        &out.concat().column(0).clone(),
        &expected.slice(start, end - start),
        &format!("{what}: rows {start}..{end}"),
    );
    let mut indices: Vec<u64> = (0..40).map(|_| rng.random_range(0..n as u64)).collect();
    indices.sort_unstable();
    indices.dedup();
    let out = read_to_end(read(7).with_selection(RowSelection::from_sorted_indices(&indices))).await.unwrap();
    let expected_rows = take(expected.as_ref(), &UInt64Array::from(indices.clone()), None).unwrap();
    assert_logically_equal(&out.concat().column(0).clone(), &expected_rows, &format!("{what}: rows {indices:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_columns_read_as_dictionaries() {
    let mut rng = common::rng(23);
    let len = 5000;
    for value_type in
        [DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View, DataType::Binary, DataType::Int64, DataType::Float64]
    {
        for (policy, label) in [
            (EncodingPolicy::default(), "automatic"),
            (forced(EncodingKind::Dictionary), "dictionary pages"),
            (EncodingPolicy::plain_only(), "plain pages"),
        ] {
            let nulls = random_validity(&mut rng, len);
            let array = match &value_type {
                DataType::Int64 => int_array(&value_type, &int_values(&mut rng, len, IntShape::Runs, (-5, 5)), nulls),
                DataType::Float64 => float_array(&mut rng, &value_type, len, FloatShape::Runs, nulls),
                t => bytes_array(t, &bytes_values(&mut rng, len, BytesShape::FewDistinct, is_utf8(t)), nulls.as_ref()),
            };
            let table = table_of(&[("v".to_string(), array.clone())]);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("plain.leaf");
            let options = WriterOptions::default().with_page_size(3000).with_encoding_policy("v", policy);
            write_table(&path, &table, options).await;
            let reader = FileReader::open_path(&path).await.unwrap();
            check_dictionary_reads(&mut rng, &reader, &array, &format!("{value_type} ({label}) as a dictionary")).await;
        }
    }
}

/// A batch over pages with different dictionaries (different vocabularies in each half of the
/// column, pages of a few hundred rows) is one correct dictionary array.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_span_pages_with_different_dictionaries() {
    let mut rng = common::rng(24);
    let len = 4000;
    let first: Vec<String> = (0..5).map(|i| format!("first half {i}")).collect();
    let second: Vec<String> = (0..9).map(|i| format!("second half, a longer value {i}")).collect();
    let values: Vec<Option<&str>> = (0..len)
        .map(|i| {
            let pool = if i < len / 2 { &first } else { &second };
            (i % 13 != 0).then(|| pool.choose(&mut rng).unwrap().as_str())
        })
        .collect();
    let array: ArrayRef = Arc::new(StringArray::from(values));
    let table = table_of(&[("v".to_string(), array.clone())]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dictionaries.leaf");
    let options =
        WriterOptions::default().with_page_size(1500).with_encoding_policy("v", forced(EncodingKind::Dictionary));
    write_table(&path, &table, options).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    let encodings = &page_encodings(&reader).await[0].1;
    assert!(encodings.len() > 4 && encodings.iter().all(|e| e.contains("dictionary")), "{encodings:?}");
    check_dictionary_reads(&mut rng, &reader, &array, "pages with their own dictionaries").await;
}

/// Dictionary arrays whose dictionary holds nulls: the rows pointing at them are null, and read
/// back as null.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dictionaries_with_null_values_round_trip_logically() {
    let mut rng = common::rng(25);
    let len = 3000;
    let string_values: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None, Some("ccc"), None, Some("")]));
    let int_values_: ArrayRef = Arc::new(Int64Array::from(vec![None, Some(-4), Some(i64::MAX), None]));
    for (values, label) in [(string_values, "strings"), (int_values_, "ints")] {
        let array = dictionary_array::<Int16Type>(&mut rng, len, values);
        let expected = logical(&array);
        assert!(expected.null_count() > array.null_count(), "some rows point at null values");
        let table = table_of(&[("v".to_string(), array.clone())]);
        for options in [
            WriterOptions::default().with_page_size(900),
            WriterOptions::default().with_page_size(900).with_default_encoding_policy(EncodingPolicy::plain_only()),
            WriterOptions::default().with_compression(Compression::Zstd, 3),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("null_values.leaf");
            write_table(&path, &table, options).await;
            let reader = FileReader::open_path(&path).await.unwrap();
            let batch_size = random_batch_size(&mut rng);
            let out = read_to_end(reader.read().with_batch_size(nz(batch_size))).await.unwrap();
            let read = out.concat().column(0).clone();
            assert_eq!(read.data_type(), array.data_type(), "{label}");
            assert_logically_equal(&read, &array, &format!("dictionary of {label} with null values"));
            assert_eq!(read.logical_null_count(), expected.null_count(), "{label}");
            let indices = vec![5u64, 0, 5, len as u64 - 1, 17];
            let taken = reader.take(&indices, None).await.unwrap();
            let expected_rows = take(expected.as_ref(), &UInt64Array::from(indices), None).unwrap();
            assert_logically_equal(taken.column(0), &expected_rows, &format!("take of a dictionary of {label}"));
        }
    }
}

/// Batches of a `Dictionary(Int8, _)` column whose dictionaries together hold more values than
/// Int8 keys index are written in pages of their own (the writer used to concatenate them into
/// one page, which failed), and read back in batches that fit the keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_dictionaries_beyond_the_key_type_are_written() {
    let mut rng = common::rng(26);
    let batches: Vec<RecordBatch> = (0..6)
        .map(|b| {
            let values = dictionary_values(&DataType::Utf8, b * 40, 40);
            table_of(&[("d".to_string(), dictionary_array::<Int8Type>(&mut rng, 300, values))])
        })
        .collect();
    let expected: Vec<ArrayRef> = batches.iter().map(|b| logical(b.column(0))).collect();
    let expected = arrow_select::concat::concat(&expected.iter().map(|a| a.as_ref()).collect::<Vec<_>>()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("int8.leaf");
    try_write(&path, &batches[0].schema(), &batches, WriterOptions::default()).await.unwrap();
    let reader = FileReader::open_path(&path).await.unwrap();
    let pages = &page_encodings(&reader).await[0].1;
    assert!(pages.len() >= 2, "{pages:?}");
    // Batches of at most 128 rows hold at most 128 values, whatever pages they span.
    let out = read_to_end(reader.read().with_batch_size(nz(128))).await.unwrap();
    assert_eq!(out.schema.field(0).data_type(), batches[0].schema().field(0).data_type());
    let read: Vec<ArrayRef> = out.batches.iter().map(|b| logical(b.column(0))).collect();
    let read = arrow_select::concat::concat(&read.iter().map(|a| a.as_ref()).collect::<Vec<_>>()).unwrap();
    common::assertions::assert_arrays_equal(&read, &expected, "Int8 dictionaries");
}
