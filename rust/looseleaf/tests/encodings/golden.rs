//! A golden file of the metadata of a small table, so that format changes are deliberate.

use super::*;

/// Where the expected metadata of `golden_metadata_is_unchanged` is checked in.
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/encodings.txt");

/// A small fixed table, one column per encoding (forced), and its writer options.
fn golden_table() -> (RecordBatch, WriterOptions) {
    let n = 64i64;
    let words = ["apple", "banana", "cherry"];
    let text: Vec<String> = (0..n).map(|i| format!("row {i}: the quick brown fox jumps over the lazy dog")).collect();
    let keys = PrimitiveArray::<Int8Type>::from_iter((0..n).map(|i| (i % 5 != 4).then_some((i % 3) as i8)));
    let columns: Vec<(String, ArrayRef, Option<EncodingKind>)> = vec![
        (
            "plain".into(),
            Arc::new(arrow_array::Int32Array::from_iter_values((0..n as i32).map(|i| i * 7 - 100))),
            Some(EncodingKind::Plain),
        ),
        ("constant".into(), Arc::new(Int64Array::from(vec![42; n as usize])), Some(EncodingKind::Constant)),
        (
            "bitpacked".into(),
            Arc::new(arrow_array::Int32Array::from_iter_values((0..n as i32).map(|i| (i * 13) % 50 - 20))),
            Some(EncodingKind::Bitpacked),
        ),
        (
            "delta".into(),
            Arc::new(UInt64Array::from_iter_values((0..n as u64).map(|i| 1_000_000 + i * i))),
            Some(EncodingKind::Delta),
        ),
        (
            "rle".into(),
            Arc::new(arrow_array::Int16Array::from_iter_values((0..n as i16).map(|i| i / 10))),
            Some(EncodingKind::Rle),
        ),
        (
            "dictionary".into(),
            Arc::new(StringArray::from_iter_values((0..n as usize).map(|i| words[i % 3]))),
            Some(EncodingKind::Dictionary),
        ),
        ("fsst".into(), Arc::new(StringArray::from_iter_values(text)), Some(EncodingKind::Fsst)),
        (
            "nullable floats".into(),
            Arc::new(arrow_array::Float64Array::from_iter((0..n).map(|i| (i % 4 != 0).then_some(i as f64 / 4.0)))),
            Some(EncodingKind::Plain),
        ),
        (
            "alp_rd".into(),
            Arc::new(arrow_array::Float32Array::from_iter_values((0..n).map(|i| (i as f32 * 0.37).sin()))),
            Some(EncodingKind::AlpRd),
        ),
        ("booleans".into(), Arc::new(BooleanArray::from(vec![true; n as usize])), Some(EncodingKind::Constant)),
        (
            "dictionary input".into(),
            Arc::new(DictionaryArray::try_new(keys, Arc::new(StringArray::from(vec!["x", "yy", "zzz"]))).unwrap()),
            None,
        ),
        ("automatic".into(), Arc::new(Int64Array::from_iter_values((0..n).map(|i| i * 3))), None),
    ];
    let mut options = WriterOptions::default();
    for (name, _, kind) in &columns {
        if let Some(kind) = kind {
            options = options.with_encoding_policy(name.clone(), forced(*kind));
        }
    }
    let columns: Vec<(String, ArrayRef)> = columns.into_iter().map(|(name, array, _)| (name, array)).collect();
    (table_of(&columns), options)
}

/// The metadata of every column as text: each page's encoding, buffer sizes and statistics,
/// then the column's metadata block (its protobuf encoding) in hex.
async fn golden_text(path: &Path) -> String {
    use std::fmt::Write;
    let reader = FileReader::open_path(path).await.unwrap();
    let metadata = reader.metadata().await.unwrap();
    let blocks = column_metadata(&std::fs::read(path).unwrap());
    let mut out = String::new();
    for (summary, block) in metadata.columns.iter().zip(&blocks) {
        writeln!(out, "column {} {:?} ({})", summary.column, summary.field, summary.data_type).unwrap();
        for page in &summary.pages {
            writeln!(
                out,
                "  page rows={} encoding={} buffers={:?} compression={:?} nulls={:?} min={:?} max={:?}",
                page.num_rows, page.encoding, page.buffer_sizes, page.compression, page.null_count, page.min, page.max
            )
            .unwrap();
        }
        let hex: String = prost::Message::encode_to_vec(block).iter().map(|b| format!("{b:02x}")).collect();
        for line in hex.as_bytes().chunks(96) {
            writeln!(out, "  {}", std::str::from_utf8(line).unwrap()).unwrap();
        }
    }
    out
}

/// The metadata of a small fixed table, one column per encoding, is what
/// `tests/golden/encodings.txt` says: a change of the format (or of the encoders' output) must
/// be deliberate. After such a change, regenerate the file and review its diff:
///
/// ```text
/// LOOSELEAF_UPDATE_GOLDEN=1 cargo test -p looseleaf --test encodings golden
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_metadata_is_unchanged() {
    let (table, options) = golden_table();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("golden.leaf");
    write_table(&path, &table, options).await;
    let actual = golden_text(&path).await;
    // The same table written again gives the same bytes.
    let again = dir.path().join("again.leaf");
    let (table, options) = golden_table();
    write_table(&again, &table, options).await;
    assert_eq!(golden_text(&again).await, actual, "writing is not deterministic");
    let out = read_to_end(FileReader::open_path(&path).await.unwrap().read()).await.unwrap();
    assert_same(&out.concat(), &table, "golden table");

    if std::env::var_os("LOOSELEAF_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(Path::new(GOLDEN).parent().unwrap()).unwrap();
        std::fs::write(GOLDEN, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(GOLDEN).unwrap_or_else(|e| {
        panic!(
            "{GOLDEN}: {e}; create it with LOOSELEAF_UPDATE_GOLDEN=1 cargo test -p looseleaf --test encodings golden"
        )
    });
    if actual != expected {
        let first = actual.lines().zip(expected.lines()).position(|(a, e)| a != e);
        panic!(
            "the metadata differs from {GOLDEN} (first differing line: {first:?}); if the change is deliberate, \
             regenerate it with LOOSELEAF_UPDATE_GOLDEN=1 cargo test -p looseleaf --test encodings golden\n\
             --- actual\n{actual}"
        );
    }
}
