//! Round trips of every encoding, forced per column and per file and chosen automatically, over
//! every read path (full scans, row ranges, `take`, a one-byte I/O budget), with the edge cases of
//! each encoding.

use super::*;

/// Writes the columns of `kind` with `kind` forced, per column or as the file's default, and
/// checks every page's encoding and every read.
async fn forced_round_trip(seed: u64, kind: EncodingKind, len: usize, page_size: u64, per_column: bool) {
    let mut rng = common::rng(seed);
    let mut columns = columns_for(&mut rng, kind, len);
    if per_column {
        // A column to filter on (its encoding chosen), for the filtered reads below.
        let keys: ArrayRef = Arc::new(UInt32Array::from_iter_values((0..len).map(|_| rng.random_range(0..1000))));
        columns.push((FILTER_KEY.to_string(), keys));
    }
    let table = table_of(&columns);
    let what = format!("forced {} (seed {seed}, {len} rows, pages of {page_size} bytes)", kind.name());
    let mut options = WriterOptions::default().with_page_size(page_size);
    if per_column {
        for (name, _) in columns.iter().filter(|(name, _)| name != FILTER_KEY) {
            options = options.with_encoding_policy(name.clone(), forced(kind));
        }
    } else {
        options = options.with_default_encoding_policy(forced(kind));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forced.leaf");
    let inputs = split_randomly(&mut rng, &table, 1 + len / 3);
    try_write(&path, &table.schema(), &inputs, options).await.unwrap_or_else(|e| panic!("{what}: write failed: {e}"));
    let reader = FileReader::open_path(&path).await.unwrap();
    let mut pages = 0;
    for (field, encodings) in page_encodings(&reader).await {
        if field == FILTER_KEY {
            continue;
        }
        for encoding in encodings.iter().filter(|e| *e != "all_null") {
            assert!(encoded_as(encoding, kind), "{what}: a page of {field:?} is {encoding}");
            pages += 1;
        }
    }
    assert!(len == 0 || pages > 0, "{what}: no page has values");
    check_reads(&mut rng, &reader, &table, &what).await;
    if per_column {
        check_filtered_reads(&mut rng, &reader, &table, &what).await;
    }
}

/// The column [`forced_round_trip`] filters on.
const FILTER_KEY: &str = "filter key";

/// Filtered reads returning every column but [`FILTER_KEY`], keeping from none to all of the
/// rows: the other columns are decoded only where the filter passed
/// (`PageDecoder::decode_selected`, or the rows decoded and filtered), checked against the
/// table filtered by Arrow.
async fn check_filtered_reads(rng: &mut StdRng, reader: &FileReader, table: &RecordBatch, what: &str) {
    let key_index = table.schema().index_of(FILTER_KEY).unwrap();
    let keys = table.column(key_index).as_primitive::<UInt32Type>().clone();
    let others: Vec<usize> = (0..table.num_columns()).filter(|&i| i != key_index).collect();
    let names: Vec<String> = others.iter().map(|&i| table.schema().field(i).name().clone()).collect();
    let projected = table.project(&others).unwrap();
    for below in [0u32, 30, 300, 700, 1000] {
        let predicate = looseleaf::filter::Predicate::Compare {
            column: vec![FILTER_KEY.to_string()],
            op: looseleaf::filter::CompareOp::Lt,
            value: Arc::new(UInt32Array::from(vec![below])),
        };
        let mask: BooleanArray = keys.iter().map(|k| k.map(|k| k < below)).collect();
        let expected = arrow_select::filter::filter_record_batch(&projected, &mask).unwrap();
        let batch_size = random_batch_size(rng);
        let read = reader.read().with_columns(names.clone()).with_filter(predicate).with_batch_size(nz(batch_size));
        let read = with_random_settings(rng, read);
        let out = read_to_end(read).await.unwrap_or_else(|e| panic!("{what}: read of keys below {below} failed: {e}"));
        assert_same(&out.concat(), &expected, &format!("{what}: keys below {below}, batches of {batch_size}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_plain_round_trips() {
    forced_round_trip(1, EncodingKind::Plain, 2500, 4096, true).await;
    forced_round_trip(2, EncodingKind::Plain, 30, 1, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_constant_round_trips() {
    forced_round_trip(3, EncodingKind::Constant, 3000, 2048, true).await;
    forced_round_trip(4, EncodingKind::Constant, 25, 1, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_bitpacked_round_trips() {
    forced_round_trip(5, EncodingKind::Bitpacked, 1500, 3000, true).await;
    forced_round_trip(6, EncodingKind::Bitpacked, 2100, 64 * MIB, false).await;
    forced_round_trip(7, EncodingKind::Bitpacked, 20, 1, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_delta_round_trips() {
    forced_round_trip(8, EncodingKind::Delta, 1500, 5000, true).await;
    forced_round_trip(9, EncodingKind::Delta, 2100, 64 * MIB, false).await;
    forced_round_trip(10, EncodingKind::Delta, 20, 1, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_rle_round_trips() {
    forced_round_trip(11, EncodingKind::Rle, 2500, 4000, true).await;
    forced_round_trip(12, EncodingKind::Rle, 20, 1, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_dictionary_round_trips() {
    forced_round_trip(13, EncodingKind::Dictionary, 2500, 4000, true).await;
    forced_round_trip(14, EncodingKind::Dictionary, 20, 1, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_fsst_round_trips() {
    // FSST needs pages of at least 1 KiB of strings that it compresses (see
    // `forcing_fsst_on_small_pages_fails`).
    forced_round_trip(15, EncodingKind::Fsst, 1500, 64 * 1024, true).await;
    forced_round_trip(16, EncodingKind::Fsst, 600, 4 * MIB, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_onpair_round_trips() {
    forced_round_trip(46, EncodingKind::OnPair, 1500, 64 * 1024, true).await;
    forced_round_trip(47, EncodingKind::OnPair, 600, 4 * MIB, false).await;
    // Pages of one value: OnPair stores any page, however small.
    forced_round_trip(48, EncodingKind::OnPair, 20, 1, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_alp_rd_round_trips() {
    forced_round_trip(40, EncodingKind::AlpRd, 5000, 8 * 1024, true).await;
    forced_round_trip(41, EncodingKind::AlpRd, 3000, 64 * MIB, false).await;
    forced_round_trip(42, EncodingKind::AlpRd, 20, 1, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_alp_round_trips() {
    forced_round_trip(43, EncodingKind::Alp, 5000, 8 * 1024, true).await;
    forced_round_trip(44, EncodingKind::Alp, 3000, 64 * MIB, false).await;
    forced_round_trip(45, EncodingKind::Alp, 20, 1, true).await;
}

/// The automatic choice for floats: normal float32s (embeddings, as fixed-size lists and alone,
/// with nulls) are split with ALP-RD at least a tenth smaller than plain; random bit patterns
/// stay plain. Rows are read back through every read path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normal_floats_are_split_and_random_bits_stay_plain() {
    let mut rng = common::rng(43);
    let (len, dimension) = (12_000, 16);
    let items = float_array(&mut rng, &DataType::Float32, len * dimension, FloatShape::Normal, None);
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let embeddings: ArrayRef =
        Arc::new(FixedSizeListArray::try_new(item, dimension as i32, items, random_validity(&mut rng, len)).unwrap());
    let nulls = random_validity(&mut rng, len);
    let columns: Vec<(String, ArrayRef)> = vec![
        ("embeddings".into(), embeddings),
        ("f32".into(), float_array(&mut rng, &DataType::Float32, len, FloatShape::Normal, nulls)),
        ("random".into(), float_array(&mut rng, &DataType::Float64, len, FloatShape::RandomBits, None)),
    ];
    let table = table_of(&columns);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("floats.leaf");
    write_table(&path, &table, WriterOptions::default().with_page_size(64 * 1024)).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    let metadata = reader.metadata().await.unwrap();
    for column in &metadata.columns {
        let split = column.pages.iter().all(|p| p.encoding.contains("alp_rd("));
        assert_eq!(split, column.field != "random", "{}: {:?}", column.field, column.pages);
    }
    let stored: u64 = metadata.columns[0].pages.iter().flat_map(|p| &p.buffer_sizes).sum();
    assert!(stored * 10 < (len * dimension * 4) as u64 * 9, "embeddings take {stored} bytes");
    check_reads(&mut rng, &reader, &table, "automatic float encodings").await;
}

/// Pages of one row each, forced FSST: each value must be long enough to compress alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_fsst_on_pages_of_one_long_row() {
    let mut rng = common::rng(17);
    let values: Vec<Vec<u8>> = (0..12).map(|_| text(&mut rng, 5000).into_bytes()).collect();
    let columns: Vec<(String, ArrayRef)> =
        BYTES_TYPES.iter().map(|t| (format!("{t}"), bytes_array(t, &values, None))).collect();
    let table = table_of(&columns);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fsst_rows.leaf");
    write_table(
        &path,
        &table,
        WriterOptions::default().with_page_size(1).with_default_encoding_policy(forced(EncodingKind::Fsst)),
    )
    .await;
    let reader = FileReader::open_path(&path).await.unwrap();
    for (field, encodings) in page_encodings(&reader).await {
        assert_eq!(encodings.len(), 12, "{field}: one page per row");
        assert!(encodings.iter().all(|e| encoded_as(e, EncodingKind::Fsst)), "{field}: {encodings:?}");
    }
    check_reads(&mut rng, &reader, &table, "FSST pages of one row").await;
}

/// Dictionary-array columns follow their column's policy too: forced or forbidden encodings
/// apply to their values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dictionary_input_follows_the_policy() {
    let mut rng = common::rng(18);
    let len = 3000;
    let keys = PrimitiveArray::<Int16Type>::from_iter((0..len).map(|i| (i % 11 != 0).then_some((i / 100) as i16)));
    let ints = Arc::new(Int64Array::from_iter_values((0..30).map(|i| i * 7 - 50)));
    let strings = Arc::new(StringArray::from_iter_values((0..30).map(|i| format!("value {i}"))));
    let int_dictionary: ArrayRef = Arc::new(DictionaryArray::try_new(keys.clone(), ints).unwrap());
    let string_dictionary: ArrayRef = Arc::new(DictionaryArray::try_new(keys, strings).unwrap());
    let columns = vec![
        ("plain".to_string(), string_dictionary.clone()),
        ("forbidden".to_string(), int_dictionary.clone()),
        ("bitpacked".to_string(), int_dictionary.clone()),
        ("delta".to_string(), int_dictionary),
        ("free".to_string(), string_dictionary),
    ];
    let table = table_of(&columns);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dictionary_policy.leaf");
    let no_dictionary = EncodingPolicy { force: None, forbid: [EncodingKind::Dictionary].into_iter().collect() };
    let options = WriterOptions::default()
        .with_page_size(2000)
        .with_encoding_policy("plain", EncodingPolicy::plain_only())
        .with_encoding_policy("forbidden", no_dictionary)
        .with_encoding_policy("bitpacked", forced(EncodingKind::Bitpacked))
        .with_encoding_policy("delta", forced(EncodingKind::Delta));
    write_table(&path, &table, options).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    for (field, encodings) in page_encodings(&reader).await {
        for encoding in encodings {
            let ok = match field.as_str() {
                "plain" => encoded_as(&encoding, EncodingKind::Plain) && !encoding.contains("dictionary"),
                "forbidden" => !encoding.contains("dictionary"),
                "bitpacked" => encoded_as(&encoding, EncodingKind::Bitpacked),
                "delta" => encoded_as(&encoding, EncodingKind::Delta),
                _ => encoded_as(&encoding, EncodingKind::Dictionary),
            };
            assert!(ok, "a page of {field:?} is {encoding}");
        }
    }
    check_reads(&mut rng, &reader, &table, "dictionary input under policies").await;
}

/// The automatic choice uses every encoding somewhere on data made for it, and what it writes
/// reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn automatic_choice_uses_every_encoding() {
    let mut rng = common::rng(19);
    let len = 20_000;
    let ints = |shape, t: DataType, rng: &mut StdRng| int_array(&t, &int_values(rng, len, shape, int_bounds(&t)), None);
    let (lo, hi) = int_bounds(&DataType::Decimal128(38, 0));
    let columns: Vec<(String, ArrayRef)> = vec![
        ("constant".into(), ints(IntShape::Constant, DataType::Int32, &mut rng)),
        ("small".into(), ints(IntShape::Small, DataType::Int64, &mut rng)),
        ("negative".into(), ints(IntShape::NearMin, DataType::Int64, &mut rng)),
        ("u64 max".into(), ints(IntShape::NearMax, DataType::UInt64, &mut rng)),
        ("sorted".into(), ints(IntShape::Sorted, DataType::Int64, &mut rng)),
        ("reverse".into(), ints(IntShape::Reverse, DataType::Int32, &mut rng)),
        ("runs".into(), ints(IntShape::Runs, DataType::Int32, &mut rng)),
        ("extremes".into(), ints(IntShape::Extremes, DataType::Int64, &mut rng)),
        (
            "decimal near max".into(),
            int_array(&DataType::Decimal128(38, 0), &int_values(&mut rng, len, IntShape::Small, (hi - 300, hi)), None),
        ),
        (
            "decimal near min".into(),
            int_array(&DataType::Decimal128(38, 0), &int_values(&mut rng, len, IntShape::Small, (lo, lo + 300)), None),
        ),
        (
            "decimal extremes".into(),
            int_array(&DataType::Decimal128(38, 0), &int_values(&mut rng, len, IntShape::Extremes, (lo, hi)), None),
        ),
        ("floats".into(), float_array(&mut rng, &DataType::Float64, len, FloatShape::Specials, None)),
        ("float runs".into(), float_array(&mut rng, &DataType::Float32, len, FloatShape::Runs, None)),
        ("normal floats".into(), float_array(&mut rng, &DataType::Float32, len, FloatShape::Normal, None)),
        (
            "few strings".into(),
            bytes_array(&DataType::Utf8, &bytes_values(&mut rng, len, BytesShape::FewDistinct, true), None),
        ),
        ("text".into(), bytes_array(&DataType::Utf8, &bytes_values(&mut rng, len, BytesShape::Text, true), None)),
        (
            "random bytes".into(),
            bytes_array(&DataType::Binary, &bytes_values(&mut rng, len, BytesShape::Random, false), None),
        ),
        (
            "all bytes".into(),
            bytes_array(&DataType::Binary, &bytes_values(&mut rng, len, BytesShape::AllBytes, false), None),
        ),
        ("booleans".into(), bool_array(&mut rng, len, 0, None)),
    ];
    let table = table_of(&columns);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("automatic.leaf");
    write_table(&path, &table, WriterOptions::default().with_page_size(64 * 1024)).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    let mut seen = BTreeSet::new();
    for (field, encodings) in page_encodings(&reader).await {
        for encoding in &encodings {
            let top = values_encoding(encoding);
            seen.insert(top.split('(').next().unwrap().to_string());
            if field.starts_with("decimal") {
                // Lanes are 64 bits: values spread over more than that are not bit-packed.
                assert!(field != "decimal extremes" || !top.contains("bitpacked"), "{field}: {encoding}");
            }
        }
    }
    for expected in ["constant", "bitpacked", "delta", "rle", "dictionary", "fsst", "alp_rd", "plain", "binary"] {
        assert!(seen.contains(expected), "no page chose {expected}: {seen:?}");
    }
    check_reads(&mut rng, &reader, &table, "automatic choice").await;
}

fn automatic_case(seed: u64, num_rows: usize, page_size: u64, max_input_batch: usize, num_columns: usize) {
    let mut rng = common::rng(seed);
    let types = encoded_types();
    let columns: Vec<(String, ArrayRef)> = (0..num_columns)
        .map(|i| {
            let t = types.choose(&mut rng).unwrap().clone();
            let (shape, array) = shaped_array(&mut rng, &t, num_rows);
            (format!("c{i}: {t} {shape}"), array)
        })
        .collect();
    let table = table_of(&columns);
    let inputs = split_randomly(&mut rng, &table, max_input_batch);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("automatic.leaf");
    runtime().block_on(async {
        let options = WriterOptions::default().with_page_size(page_size);
        try_write(&path, &table.schema(), &inputs, options).await.unwrap();
        let reader = FileReader::open_path(&path).await.unwrap();
        let what = format!("automatic choice (seed {seed}, {num_rows} rows, pages of {page_size} bytes)");
        check_reads(&mut rng, &reader, &table, &what).await;
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn automatic_choice_round_trips(
        seed in any::<u64>(),
        num_rows in prop_oneof![1 => Just(0usize), 2 => 1usize..40, 7 => 40usize..4000],
        page_size in prop_oneof![1u64..=64, 65u64..=4096, 4097u64..=256 * 1024],
        max_input_batch in prop_oneof![1usize..=5, 6usize..=500, 501usize..=5000],
        num_columns in 1usize..=6,
    ) {
        automatic_case(seed, num_rows, page_size, max_input_batch, num_columns);
    }
}

/// The automatic choice for strings: a vocabulary of a few thousand words (more than a sample
/// of 1,024 values can show repeated four times) becomes a dictionary; values as short as their
/// codes, which FSST compresses about as well, stay FSST; unique values are never a dictionary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_take_a_dictionary_when_it_clearly_pays() {
    let mut rng = common::rng(21);
    let len = 50_000;
    // 5,000 distinct random words: a vocabulary a sample sees repeated ~100 times, not 4×.
    let words: Vec<String> = (0..5000).map(|i| format!("{:08x}{i}", rng.random::<u32>())).collect();
    let vocabulary: ArrayRef =
        Arc::new(StringArray::from_iter_values((0..len).map(|_| words[rng.random_range(0..words.len())].clone())));
    let codes: ArrayRef =
        Arc::new(StringArray::from_iter_values((0..len).map(|_| format!("v{}", rng.random_range(0..5000)))));
    let unique: ArrayRef =
        Arc::new(StringArray::from_iter_values((0..len).map(|i| format!("{i:08} {}", text(&mut rng, 10)))));
    let columns =
        vec![("vocabulary".to_string(), vocabulary), ("codes".to_string(), codes), ("unique".to_string(), unique)];
    let table = table_of(&columns);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strings.leaf");
    write_table(&path, &table, WriterOptions::default()).await;
    let reader = FileReader::open_path(&path).await.unwrap();
    for (field, encodings) in page_encodings(&reader).await {
        for encoding in encodings {
            let dictionary = encoded_as(&encoding, EncodingKind::Dictionary);
            assert_eq!(dictionary, field == "vocabulary", "a page of {field:?} is {encoding}");
        }
    }
    check_reads(&mut rng, &reader, &table, "automatic string encodings").await;
}
