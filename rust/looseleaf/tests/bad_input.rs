//! Bad input gives an error, never a panic or a hang: damaged, truncated, hostile or foreign
//! files, paths that are not files, arguments out of range, and writers misused or abandoned.
//! Errors about a file name it.
//!
//! A panic inside one of the reader's tasks would surface as [`Error::Internal`], so every
//! error here is also checked not to be internal.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::nz;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use common::assertions::assert_batches_equal;
use common::files::{wait_for_entries, write_file};
use common::layout::FileLayout;
use common::reads::read_to_end;
use futures::TryStreamExt;
use looseleaf::format::proto::encoding::Kind;
use looseleaf::format::proto::{
    BitpackedEncoding, BufferLocation, Compression, ConstantEncoding, DictionaryEncoding, Encoding, PageMetadata,
    RleEncoding,
};
use looseleaf::format::{COLUMN_ENTRY_LEN, ColumnEntry, FileTail, TAIL_LEN};
use looseleaf::{Error, FileReader, FileWriter, RowSelection, WriterOptions};
use looseleaf_testing::MemoryReader;
use looseleaf_testing::generate::{self, random_table};
use rand::Rng;

/// A small file of many pages and many types, and the table written to it.
async fn sample_file(dir: &Path) -> (Vec<u8>, RecordBatch) {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("b", DataType::Boolean, true),
        Field::new("fsb", DataType::FixedSizeBinary(5), false),
        Field::new("t32", DataType::Time32(TimeUnit::Millisecond), true),
        Field::new("t64", DataType::Time64(TimeUnit::Nanosecond), true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
        Field::new("d", DataType::Decimal128(20, 3), true),
        Field::new("lb", DataType::LargeBinary, false),
        Field::new("n", DataType::Null, true),
    ]));
    let mut rng = common::rng(1);
    let table = random_table(&mut rng, &schema, 300);
    let path = dir.join("sample.leaf");
    write_file(&path, &schema, std::slice::from_ref(&table), 512).await;
    (std::fs::read(&path).unwrap(), table)
}

/// Opens the file behind `reader` and reads it whole, then reads a row range and `take`s a few
/// rows (partial pages: indirect I/O), giving the first error.
async fn open_and_read(reader: Arc<dyn looseleaf::io::RangeReader>) -> looseleaf::Result<RecordBatch> {
    let read = async {
        let file = FileReader::open(reader).await?;
        let out = read_to_end(file.read().with_batch_size(nz(64))).await?;
        let n = file.num_rows();
        if n > 2 {
            read_to_end(file.read().with_row_range(1..n - 1).with_batch_size(nz(50))).await?;
            file.take(&[n - 1, 0, n / 2, n / 2 + 1], None).await?;
        }
        Ok(out.concat())
    };
    match tokio::time::timeout(Duration::from_secs(30), read).await {
        Ok(result) => result,
        Err(_) => panic!("a read of a damaged file hung"),
    }
}

/// Checks that `error` is a proper error (not a caught panic) naming `location`.
#[track_caller]
fn assert_proper_error(error: &Error, location: &str, what: &str) {
    assert!(!matches!(error, Error::Internal(_)), "{what}: internal error (a bug or a caught panic): {error}");
    assert!(error.to_string().contains(location), "{what}: the error does not name {location}: {error}");
}

#[track_caller]
fn assert_fails<T: std::fmt::Debug>(result: looseleaf::Result<T>, location: &str, what: &str) -> Error {
    match result {
        Ok(value) => panic!("{what}: expected an error, got {value:?}"),
        Err(e) => {
            assert_proper_error(&e, location, what);
            e
        }
    }
}

fn memory(bytes: Vec<u8>, location: &str) -> Arc<dyn looseleaf::io::RangeReader> {
    Arc::new(MemoryReader::new(bytes, location))
}

/// Rewrites the tail of `bytes` after `edit`.
fn edit_tail(bytes: &mut [u8], edit: impl FnOnce(&mut FileTail)) {
    let len = bytes.len();
    let tail_start = len - TAIL_LEN as usize;
    let mut tail = FileTail::parse(&bytes[tail_start..], len as u64).unwrap();
    edit(&mut tail);
    bytes[tail_start..].copy_from_slice(&tail.to_bytes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = sample_file(dir.path()).await;
    let layout = FileLayout::parse(&bytes);
    let len = bytes.len();
    let metadata_start = layout.metadata_start() as usize;
    // Everywhere in the metadata, footer and tail; a spread of offsets in the data.
    let mut cuts: Vec<usize> = (metadata_start..len).collect();
    cuts.extend([0, 1, 4, 7, 8, 9, 63, 64, 65]);
    cuts.extend((0..metadata_start).step_by(metadata_start / 97 + 1));
    for cut in cuts {
        let location = format!("memory://truncated-at-{cut}.leaf");
        let result = open_and_read(memory(bytes[..cut].to_vec(), &location)).await;
        assert_fails(result, &location, &format!("cut at {cut} of {len}"));
    }
    // The same through local files, at a few offsets.
    for cut in [0, 8, metadata_start / 2, metadata_start, len - TAIL_LEN as usize, len - 1] {
        let path = dir.path().join(format!("truncated_{cut}.leaf"));
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let location = path.display().to_string();
        assert_fails(FileReader::open_path(&path).await, &location, &format!("local file cut at {cut}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_with_bytes_cut_out_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = sample_file(dir.path()).await;
    let metadata_start = FileLayout::parse(&bytes).metadata_start() as usize;
    let len = bytes.len();
    for (start, count) in
        [(0, 8), (100, 64), (metadata_start / 2, 1), (metadata_start, 10), (len - 200, 100), (len - 41, 1)]
    {
        let mut damaged = bytes[..start].to_vec();
        damaged.extend_from_slice(&bytes[start + count..]);
        let location = format!("memory://cut-{start}-{count}.leaf");
        assert_fails(
            open_and_read(memory(damaged, &location)).await,
            &location,
            &format!("{count} bytes cut at {start}"),
        );
    }
}

/// Every byte of the metadata (column blocks, column table, footer, tail) is checked: flipping
/// any bit of it gives an error when the file is opened or read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipped_metadata_bytes_are_detected() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = sample_file(dir.path()).await;
    let layout = FileLayout::parse(&bytes);
    for position in layout.metadata_start() as usize..bytes.len() {
        for mask in [0x01u8, 0x80] {
            let mut damaged = bytes.clone();
            damaged[position] ^= mask;
            let location = format!("memory://flipped-{position}-{mask:#x}.leaf");
            let result = open_and_read(memory(damaged, &location)).await;
            assert_fails(result, &location, &format!("byte {position} ^ {mask:#x} of {}", bytes.len()));
        }
    }
}

/// Damaged page data may decode to other values, or fail to decode, but never panics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipped_data_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, table) = sample_file(dir.path()).await;
    let layout = FileLayout::parse(&bytes);
    let mut positions: Vec<usize> = (0..8).collect();
    // Every byte of the string columns' first pages (validity, offsets and data), and a spread
    // elsewhere.
    for column in [1usize, 8] {
        for buffer in layout.columns[column].iter().take(1).flat_map(|p| &p.buffers) {
            positions.extend(buffer.start as usize..buffer.end as usize);
        }
    }
    positions.extend((8..layout.metadata_start() as usize).step_by(29));
    let mut failures = 0;
    for position in positions {
        // The low bit of one byte, the high bit of the next: offsets off by one, and far off.
        for mask in [if position % 2 == 0 { 0x01u8 } else { 0x80 }, 0xff] {
            let mut damaged = bytes.clone();
            damaged[position] ^= mask;
            let location = format!("memory://data-{position}-{mask:#x}.leaf");
            match open_and_read(memory(damaged, &location)).await {
                Ok(read) => assert_eq!(read.num_rows(), table.num_rows()),
                Err(e) => {
                    assert_proper_error(&e, &location, &format!("data byte {position} ^ {mask:#x}"));
                    failures += 1;
                }
            }
        }
    }
    assert!(failures > 0, "some damaged string offsets should have been detected");
}

/// Format 2.0 stores a CRC-32 of every page buffer: one flipped bit anywhere in any buffer of
/// any page (plain, encoded or compressed; values, validity, offsets, list items) is a corrupt-file
/// error naming the file, the column and the page on a full read. With `verify_checksums` off the
/// damage is whatever it decodes to, or a proper error, never a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipped_page_bits_are_checksum_errors_naming_column_and_page() {
    use looseleaf::ReadOptions;
    let dir = tempfile::tempdir().unwrap();
    let item = Arc::new(Field::new("item", DataType::Int64, true));
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("l", DataType::List(item), true),
        Field::new(
            "st",
            DataType::Struct(
                vec![Field::new("a", DataType::Float64, true), Field::new("b", DataType::Binary, false)].into(),
            ),
            true,
        ),
    ]));
    let mut rng = common::rng(14);
    let table = generate::random_nested_table(&mut rng, &schema, 400);
    let mut buffers_checked = 0;
    for compression in [Compression::None, Compression::Zstd] {
        let path = dir.path().join(format!("checked-{compression:?}.leaf"));
        let options = WriterOptions::default().with_page_size(700).with_compression(compression, 1);
        common::files::write_file_with(&path, &schema, std::slice::from_ref(&table), options).await;
        let bytes = std::fs::read(&path).unwrap();
        let paths = FileReader::open(memory(bytes.clone(), "memory://paths.leaf")).await.unwrap().column_paths();
        let layout = FileLayout::parse(&bytes);
        for (column, pages) in layout.columns.iter().enumerate() {
            let column_path = &paths[&(column as u32)];
            for (page, page_layout) in pages.iter().enumerate() {
                for buffer in page_layout.buffers.iter().filter(|b| !b.is_empty()) {
                    let position = rng.random_range(buffer.start..buffer.end) as usize;
                    let mut damaged = bytes.clone();
                    damaged[position] ^= 1 << rng.random_range(0..8);
                    let location = format!("memory://flipped-{compression:?}-{column}-{page}-{position}.leaf");
                    let what = format!("column {column_path}, page {page}, byte {position}");
                    let file = FileReader::open(memory(damaged.clone(), &location)).await.unwrap();
                    let error = assert_fails(read_to_end(file.read().with_batch_size(nz(64))).await, &location, &what);
                    let expected =
                        format!("checksum mismatch in page {page} of column {column_path:?} (number {column})");
                    assert!(error.to_string().contains(&expected), "{what}: {error}");
                    assert!(
                        matches!(error, Error::Corrupt { offset: Some(o), .. } if o == buffer.start),
                        "{what}: {error:?}"
                    );

                    let unchecked = ReadOptions { verify_checksums: Some(false), ..Default::default() };
                    let file = FileReader::open(memory(damaged, &location)).await.unwrap().with_options(unchecked);
                    if let Err(e) = read_to_end(file.read()).await {
                        assert_proper_error(&e, &location, &format!("{what}, unchecked"));
                        assert!(!e.to_string().contains("checksum"), "{what}: verified although asked not to: {e}");
                    }
                    buffers_checked += 1;
                }
            }
        }
    }
    assert!(buffers_checked > 40, "only {buffers_checked} buffers damaged");
}

/// Files without checksums (written with `checksums` off, like files from before format 2.0)
/// read as before, and their damaged data goes unnoticed by the checksum path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_without_checksums_are_read_unverified() {
    let dir = tempfile::tempdir().unwrap();
    let schema = writer_schema();
    let batch = writer_batch(&schema, 0, 1000);
    let path = dir.path().join("unchecked.leaf");
    let options = WriterOptions::default().with_checksums(false);
    common::files::write_file_with(&path, &schema, std::slice::from_ref(&batch), options).await;
    let bytes = std::fs::read(&path).unwrap();
    let file = FileReader::open(memory(bytes, "memory://unchecked.leaf")).await.unwrap();
    assert_batches_equal(&read_to_end(file.read()).await.unwrap().concat(), &batch, "a file without checksums");
    let metadata = file.metadata().await.unwrap();
    assert_eq!(metadata.format_version, (looseleaf::format::MAJOR_VERSION, looseleaf::format::MINOR_VERSION));
}

/// A file requiring a format feature this reader does not know is refused on open, naming the
/// feature and the file; one requiring none is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_requiring_unknown_features_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, table) = sample_file(dir.path()).await;
    let rewritten = common::rewrite::rewrite_file(&bytes, |footer| footer.required_features.clear(), |_, _| {});
    let read = open_and_read(memory(rewritten, "memory://no-features.leaf")).await.unwrap();
    assert_batches_equal(&read, &table, "a file requiring no feature");

    let location = "memory://future.leaf";
    let future = common::rewrite::rewrite_file(
        &bytes,
        |footer| footer.required_features = vec!["page-checksums-v2".into(), "time-travel".into()],
        |_, _| {},
    );
    let error = assert_fails(FileReader::open(memory(future, location)).await, location, "an unknown feature");
    assert!(matches!(error, Error::Unsupported { .. }), "{error:?}");
    assert!(error.to_string().contains("format feature \"page-checksums-v2\""), "{error}");
}

/// Hostile metadata: bytes changed *and* checksums recomputed, so that the damage reaches the
/// parsers. Every result is a value or a proper error naming the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_metadata_with_valid_checksums_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = sample_file(dir.path()).await;
    let layout = FileLayout::parse(&bytes);
    let tail = layout.tail;
    let masks = [0x01u8, 0x02, 0x04, 0x08, 0x10, 0x40, 0x80];
    let mut cases = 0;
    // The footer, with its checksum in the tail recomputed.
    for position in tail.footer_range() {
        for mask in masks {
            let mut damaged = bytes.clone();
            damaged[position as usize] ^= mask;
            let footer = &damaged[tail.footer_range().start as usize..tail.footer_range().end as usize];
            let crc = crc32fast::hash(footer);
            edit_tail(&mut damaged, |t| t.footer_crc = crc);
            let location = format!("memory://hostile-footer-{position}-{mask:#x}.leaf");
            if let Err(e) = open_and_read(memory(damaged, &location)).await {
                assert_proper_error(&e, &location, &format!("footer byte {position} ^ {mask:#x}"));
            }
            cases += 1;
        }
    }
    // Each column's metadata block, with its checksum in the column table recomputed.
    for (column, block) in layout.column_blocks.iter().enumerate() {
        let entry_at = (tail.table_offset + column as u64 * COLUMN_ENTRY_LEN) as usize;
        for position in block.clone() {
            for mask in masks {
                let mut damaged = bytes.clone();
                damaged[position as usize] ^= mask;
                let crc = crc32fast::hash(&damaged[block.start as usize..block.end as usize]);
                let entry = ColumnEntry { offset: block.start, length: block.end - block.start, crc };
                damaged[entry_at..entry_at + COLUMN_ENTRY_LEN as usize].copy_from_slice(&entry.to_bytes());
                let location = format!("memory://hostile-column-{column}-{position}-{mask:#x}.leaf");
                if let Err(e) = open_and_read(memory(damaged, &location)).await {
                    assert_proper_error(
                        &e,
                        &location,
                        &format!("column {column} metadata byte {position} ^ {mask:#x}"),
                    );
                }
                cases += 1;
            }
        }
    }
    assert!(cases > 1000);
}

/// A tail that is well formed but says things that cannot be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inconsistent_tails_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = sample_file(dir.path()).await;
    type Edit = Box<dyn Fn(&mut FileTail)>;
    let edits: Vec<(&str, Edit)> = vec![
        ("another major version", Box::new(|t| t.major += 1)),
        ("more columns than the schema", Box::new(|t| t.num_columns += 1)),
        ("fewer columns than the schema", Box::new(|t| t.num_columns -= 1)),
        ("a huge column count", Box::new(|t| t.num_columns = u32::MAX)),
        ("a footer starting elsewhere", Box::new(|t| t.footer_offset -= 1)),
        ("a huge footer", Box::new(|t| t.footer_length = u32::MAX)),
        ("a table past the footer", Box::new(|t| t.table_offset = t.footer_offset + 1)),
        ("a table before the header", Box::new(|t| t.table_offset = 0)),
        ("a table at a huge offset", Box::new(|t| t.table_offset = u64::MAX - 5)),
    ];
    for (what, edit) in edits {
        let mut damaged = bytes.clone();
        edit_tail(&mut damaged, |t| edit(t));
        let location = format!("memory://{}.leaf", what.replace(' ', "-"));
        assert_fails(open_and_read(memory(damaged, &location)).await, &location, what);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_and_empty_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = sample_file(dir.path()).await;

    let mut wrong_magic = bytes.clone();
    let len = wrong_magic.len();
    wrong_magic[len - 4..].copy_from_slice(b"LEAX");
    let path = dir.path().join("wrong_magic.leaf");
    std::fs::write(&path, &wrong_magic).unwrap();
    let e = assert_fails(FileReader::open_path(&path).await, &path.display().to_string(), "wrong magic");
    assert!(matches!(e, Error::Corrupt { .. }) && e.to_string().contains("magic"), "{e}");

    let path = dir.path().join("empty.leaf");
    std::fs::write(&path, b"").unwrap();
    let e = assert_fails(FileReader::open_path(&path).await, &path.display().to_string(), "empty file");
    assert!(matches!(e, Error::Corrupt { .. }), "{e}");

    let mut rng = common::rng(17);
    for size in [1usize, 4, 39, 40, 47, 48, 49, 1000, 70_000] {
        for ends_with_magic in [false, true] {
            let mut garbage = vec![0u8; size];
            rng.fill(garbage.as_mut_slice());
            if ends_with_magic && size >= 4 {
                garbage[size - 4..].copy_from_slice(b"LEAF");
            }
            let path = dir.path().join(format!("garbage_{size}_{ends_with_magic}.leaf"));
            std::fs::write(&path, &garbage).unwrap();
            let location = path.display().to_string();
            let e = assert_fails(FileReader::open_path(&path).await, &location, &format!("{size} random bytes"));
            assert!(matches!(e, Error::Corrupt { .. }), "{e}");
        }
    }
    // A Parquet-looking file.
    let path = dir.path().join("parquet.leaf");
    std::fs::write(&path, [b"PAR1".as_slice(), &[0u8; 100], b"PAR1"].concat()).unwrap();
    assert_fails(FileReader::open_path(&path).await, &path.display().to_string(), "parquet magic");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_that_are_not_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.leaf");
    let e = assert_fails(FileReader::open_path(&missing).await, &missing.display().to_string(), "missing file");
    assert!(matches!(e, Error::Io { .. }), "{e}");
    let e = assert_fails(FileReader::open_path(dir.path()).await, &dir.path().display().to_string(), "directory");
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_out_of_range_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, table) = sample_file(dir.path()).await;
    let path = dir.path().join("sample.leaf");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let location = path.display().to_string();
    let file = FileReader::open_path(&path).await.unwrap();
    let n = file.num_rows();

    for indices in [vec![n], vec![0, n + 5, 1], vec![u64::MAX]] {
        let e = assert_fails(file.take(&indices, None).await, &location, &format!("take {indices:?}"));
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    }
    let unknown = vec!["i".to_string(), "nope".to_string()];
    let e = assert_fails(file.take(&[0], Some(&unknown)).await, &location, "take of an unknown column");
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("nope"), "{e}");
    let e = assert_fails(read_to_end(file.read().with_columns(unknown.clone())).await, &location, "unknown column");
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("nope"), "{e}");
    assert_fails(file.read().with_columns(unknown).plan().await, &location, "plan of an unknown column");

    #[allow(clippy::reversed_empty_ranges)]
    let backwards = 5..2;
    for range in [n - 1..n + 1, n..n + 1, 0..u64::MAX, backwards] {
        let e = assert_fails(
            read_to_end(file.read().with_row_range(range.clone())).await,
            &location,
            &format!("rows {range:?}"),
        );
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert_fails(
            file.read().with_row_range(range.clone()).plan().await,
            &location,
            &format!("plan of rows {range:?}"),
        );
    }
    let selection = RowSelection::from_sorted_indices(&[0, 5, n]);
    let e = assert_fails(read_to_end(file.read().with_selection(selection)).await, &location, "selection past the end");
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");

    // The file is still readable after all this.
    let out = read_to_end(file.read()).await.unwrap();
    assert_batches_equal(&out.concat(), &table, "after bad arguments");
}

fn writer_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false), Field::new("name", DataType::Utf8, true)]))
}

fn writer_batch(schema: &SchemaRef, start: i64, len: i64) -> RecordBatch {
    RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(start..start + len)),
            Arc::new(StringArray::from_iter((start..start + len).map(|i| (i % 3 != 0).then(|| format!("name {i}"))))),
        ],
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_writers_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let schema = writer_schema();
    let path = dir.path().join("dropped.leaf");
    {
        let mut writer = FileWriter::create_path(&path, schema.clone(), WriterOptions::default().with_page_size(1024))
            .await
            .unwrap();
        for i in 0..20 {
            writer.write(&writer_batch(&schema, i * 1000, 1000)).await.unwrap();
        }
        // Dropped without `finish`.
    }
    assert!(!path.exists(), "a dropped writer left a file at its path");
    assert_eq!(wait_for_entries(dir.path(), &[]).await, Vec::<String>::new(), "a dropped writer left files behind");

    let path = dir.path().join("aborted.leaf");
    let mut writer =
        FileWriter::create_path(&path, schema.clone(), WriterOptions::default().with_page_size(1024)).await.unwrap();
    writer.write(&writer_batch(&schema, 0, 5000)).await.unwrap();
    writer.abort().await.unwrap();
    assert!(!path.exists(), "an aborted writer left a file at its path");
    assert_eq!(wait_for_entries(dir.path(), &[]).await, Vec::<String>::new(), "an aborted writer left files behind");

    // A finished writer leaves its file and nothing else.
    let path = dir.path().join("finished.leaf");
    let mut writer =
        FileWriter::create_path(&path, schema.clone(), WriterOptions::default().with_page_size(1024)).await.unwrap();
    writer.write(&writer_batch(&schema, 0, 10)).await.unwrap();
    writer.finish().await.unwrap();
    assert_eq!(wait_for_entries(dir.path(), &["finished.leaf"]).await, vec!["finished.leaf".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_reject_batches_that_do_not_match_their_schema() {
    let dir = tempfile::tempdir().unwrap();
    let schema = writer_schema();
    let path = dir.path().join("schema.leaf");
    let mut writer =
        FileWriter::create_path(&path, schema.clone(), WriterOptions::default().with_page_size(256)).await.unwrap();
    writer.write(&writer_batch(&schema, 0, 100)).await.unwrap();

    let ids = Arc::new(Int64Array::from_iter_values(0..3));
    let names = Arc::new(StringArray::from(vec![Some("a"), None, Some("c")]));
    let bad_batches = [
        (
            "a missing column",
            RecordBatch::try_new(Arc::new(Schema::new(vec![schema.field(0).clone()])), vec![ids.clone()]),
        ),
        (
            "an extra column",
            RecordBatch::try_new(
                Arc::new(Schema::new(vec![
                    schema.field(0).clone(),
                    schema.field(1).clone(),
                    Field::new("x", DataType::Int32, true),
                ])),
                vec![ids.clone(), names.clone(), Arc::new(Int32Array::from(vec![1, 2, 3]))],
            ),
        ),
        (
            "a renamed column",
            RecordBatch::try_new(
                Arc::new(Schema::new(vec![Field::new("ID", DataType::Int64, false), schema.field(1).clone()])),
                vec![ids.clone(), names.clone()],
            ),
        ),
        (
            "a column of another type",
            RecordBatch::try_new(
                Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false), schema.field(1).clone()])),
                vec![Arc::new(Int32Array::from(vec![1, 2, 3])), names.clone()],
            ),
        ),
        (
            "nulls in a non-nullable column",
            RecordBatch::try_new(
                Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true), schema.field(1).clone()])),
                vec![Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])), names.clone()],
            ),
        ),
        (
            "columns in another order",
            RecordBatch::try_new(
                Arc::new(Schema::new(vec![schema.field(1).clone(), schema.field(0).clone()])),
                vec![names.clone(), ids.clone()],
            ),
        ),
    ];
    for (what, batch) in bad_batches {
        let batch = batch.unwrap();
        match writer.write(&batch).await {
            Err(Error::Schema(message)) => assert!(!message.is_empty()),
            other => panic!("{what}: expected a schema error, got {other:?}"),
        }
    }
    // A rejected batch writes nothing: the writer goes on and the file holds the good batches.
    writer.write(&writer_batch(&schema, 100, 50)).await.unwrap();
    let finished = writer.finish().await.unwrap();
    assert_eq!(finished.num_rows, 150);
    let file = FileReader::open_path(&path).await.unwrap();
    let batches: Vec<RecordBatch> = file.read().stream().await.unwrap().try_collect().await.unwrap();
    let read = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    assert_batches_equal(&read, &writer_batch(&schema, 0, 150), "after rejected batches");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_reject_bad_options_and_unsupported_types() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("options.leaf");
    let result = FileWriter::create_path(&path, writer_schema(), WriterOptions::default().with_page_size(0)).await;
    assert!(matches!(result, Err(Error::InvalidArgument { .. })), "{result:?}");
    let list_view = DataType::ListView(Arc::new(Field::new_list_field(DataType::Int32, true)));
    let nested = Arc::new(Schema::new(vec![Field::new("l", list_view, true)]));
    let result = FileWriter::create_path(&path, nested, WriterOptions::default()).await;
    match result {
        Err(Error::Unsupported { message, .. }) => assert!(message.contains("\"l\""), "{message}"),
        other => panic!("expected an unsupported-type error, got {other:?}"),
    }
    // Pages of zero-byte values are not in the format: refused up front rather than written
    // to a file that cannot be read back.
    let empty_values = Arc::new(Schema::new(vec![Field::new("z", DataType::FixedSizeBinary(0), false)]));
    let result = FileWriter::create_path(&path, empty_values, WriterOptions::default()).await;
    assert!(matches!(result, Err(Error::Unsupported { .. })), "{result:?}");
    assert_eq!(wait_for_entries(dir.path(), &[]).await, Vec::<String>::new());
}

/// A few random bytes overwritten anywhere in the file: a value or a proper error, never a
/// panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_damage_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = sample_file(dir.path()).await;
    let mut rng = common::rng(23);
    for case in 0..300 {
        let mut damaged = bytes.clone();
        for _ in 0..rng.random_range(1..=8) {
            let position = rng.random_range(0..damaged.len());
            damaged[position] = rng.random();
        }
        let location = format!("memory://random-damage-{case}.leaf");
        if let Err(e) = open_and_read(memory(damaged, &location)).await {
            assert_proper_error(&e, &location, &format!("random damage {case}"));
        }
    }
}

/// A read sizing its memory by a count a hostile file merely claims fails its test instead of
/// taking the machine's memory.
#[global_allocator]
static ALLOCATOR: common::alloc::GuardedAllocator = common::alloc::GuardedAllocator::new(1 << 30);

/// A file of `rows` rows (claimed: the footer and each column's one page say so) whose columns
/// `i` (int32) and `s` (utf8) have the pages `int_page` and `string_page`, built over a real
/// four-row file so that every other part of the metadata is valid.
async fn claiming_file(
    rows: u64,
    int_page: impl Fn(&PageMetadata) -> PageMetadata,
    string_page: impl Fn(&PageMetadata) -> PageMetadata,
) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let schema: SchemaRef =
        Arc::new(Schema::new(vec![Field::new("i", DataType::Int32, false), Field::new("s", DataType::Utf8, false)]));
    let table = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int32Array::from(vec![1, 2, 3, 4])), Arc::new(StringArray::from(vec!["a", "b", "c", "d"]))],
    )
    .unwrap();
    let path = dir.path().join("claims.leaf");
    write_file(&path, &schema, &[table], 1 << 20).await;
    let bytes = std::fs::read(&path).unwrap();
    common::rewrite::rewrite_file(
        &bytes,
        |footer| footer.num_rows = rows,
        |column, metadata| {
            let page = &metadata.pages[0];
            let mut new = if column == 0 { int_page(page) } else { string_page(page) };
            new.num_rows = rows;
            metadata.pages = vec![new];
        },
    )
}

fn node(kind: Kind) -> Option<Encoding> {
    Some(Encoding { kind: Some(kind) })
}

fn constant(bits: u64, value: &[u8]) -> Kind {
    Kind::Constant(ConstantEncoding { bits_per_value: bits, value: value.to_vec() })
}

/// A page of no buffers whose encoding is `kind`.
fn unbacked(kind: Kind) -> impl Fn(&PageMetadata) -> PageMetadata {
    move |_| PageMetadata { encoding: node(kind.clone()), ..Default::default() }
}

/// The first batch of a read of `bytes` in batches of `batch_size`, and its last row taken.
async fn first_batch_and_last_row(
    bytes: Vec<u8>,
    location: &str,
    batch_size: usize,
) -> looseleaf::Result<[RecordBatch; 2]> {
    let read = async {
        let file = FileReader::open(memory(bytes, location)).await?;
        let mut stream = file.read().with_batch_size(nz(batch_size)).stream().await?;
        let first = stream.try_next().await?.expect("a batch");
        drop(stream);
        let last = file.take(&[file.num_rows() - 1], None).await?;
        Ok([first, last])
    };
    tokio::time::timeout(Duration::from_secs(30), read).await.expect("a read of a hostile file hung")
}

/// Counts a file claims without storing anything per value: values where the claim is only of
/// rows (they cost nothing until asked for), a clear error where the reader would have to hold
/// what was claimed (a dictionary, runs, an output block past the cap), never an allocation in
/// proportion to the claim. Each file is a few hundred bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_not_backed_by_bytes_are_values_or_errors_never_allocations() {
    const TRILLION: u64 = 1 << 40;
    let seven = 7i32.to_le_bytes();
    let int_constant = unbacked(constant(32, &seven));
    let string_constant = unbacked(constant(0, b"xyz"));

    // 2^40 rows of constants, and of bit-packing of width 0: one batch and the last row read.
    let bitpacked_zero = |page: &PageMetadata| PageMetadata {
        buffers: vec![BufferLocation { offset: page.buffers[0].offset, size: 0, uncompressed_size: 0, crc32: None }],
        encoding: node(Kind::Bitpacked(BitpackedEncoding {
            value_bytes: 4,
            lane_bits: 32,
            bit_width: 0,
            reference: seven.to_vec(),
            buffer: 0,
        })),
        ..Default::default()
    };
    for (what, bytes) in [
        ("constants", claiming_file(TRILLION, &int_constant, &string_constant).await),
        ("bit-packing of width 0", claiming_file(TRILLION, bitpacked_zero, &string_constant).await),
    ] {
        assert!(bytes.len() < 1000, "{what}: {} bytes", bytes.len());
        let location = format!("memory://claims-{what}.leaf");
        let [first, last] = first_batch_and_last_row(bytes, &location, 1000).await.unwrap();
        assert_eq!(first.num_rows(), 1000, "{what}");
        for batch in [&first, &last] {
            let ints = batch.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
            let strings = batch.column(1).as_any().downcast_ref::<StringArray>().unwrap();
            assert!(ints.iter().all(|v| v == Some(7)), "{what}");
            assert!(strings.iter().all(|v| v == Some("xyz")), "{what}");
        }
    }

    // Claims the reader would have to hold: each a proper error naming the file.
    let dictionary = unbacked(Kind::Dictionary(DictionaryEncoding {
        dictionary_size: u32::MAX as u64 + 1,
        index_bytes: 4,
        indices: node(constant(32, &[0; 4])).map(Box::new),
        dictionary: node(constant(32, &seven)).map(Box::new),
    }));
    let runs = unbacked(Kind::Rle(RleEncoding {
        num_runs: TRILLION,
        values: node(constant(32, &seven)).map(Box::new),
        run_ends: node(constant(32, &seven)).map(Box::new),
    }));
    let wide_constant = unbacked(constant(0, &vec![b'x'; 1 << 20]));
    // A thousand buffers over the same bytes, each claiming what LZ4 allows it (255 times).
    let overlapping = |page: &PageMetadata| {
        let buffer = page.buffers[0];
        let claimed = BufferLocation { uncompressed_size: buffer.size * 255, ..buffer };
        PageMetadata { buffers: vec![claimed; 1000], compression: Compression::Lz4 as i32, ..page.clone() }
    };
    let cases: Vec<(&str, Vec<u8>, usize, &[&str])> = vec![
        (
            "a dictionary of 2^32 constants",
            claiming_file(4, &dictionary, &string_constant).await,
            4,
            &["dictionary of 4294967296 values"],
        ),
        ("2^40 runs", claiming_file(TRILLION, &runs, &string_constant).await, 1000, &["runs of 1099511627776 values"]),
        (
            "8,192 rows of a 1 MiB constant",
            claiming_file(TRILLION, &int_constant, &wide_constant).await,
            8192,
            &["batch size"],
        ),
        (
            "2^40 rows of a 1 MiB constant at once",
            claiming_file(TRILLION, &int_constant, &wide_constant).await,
            usize::MAX,
            &["batch size"],
        ),
        ("overlapping compressed buffers", claiming_file(4, overlapping, |p| p.clone()).await, 4, &["overlap"]),
    ];
    for (what, bytes, batch_size, fragments) in cases {
        assert!(bytes.len() < 1 << 21, "{what}: {} bytes", bytes.len());
        let location = format!("memory://claims-{}.leaf", what.replace([' ', ','], "-"));
        let error = assert_fails(first_batch_and_last_row(bytes, &location, batch_size).await, &location, what);
        let message = error.to_string().to_lowercase();
        assert!(fragments.iter().all(|f| message.contains(f)), "{what}: {message}");
    }
}

/// A list column whose offsets page (or items page) claims more rows than were written, with
/// the footer's row count raised to match or not, and the offsets buffer grown over the bytes
/// after it or not: every read path — a scan, a take of the last row, a range at the end — is
/// an error naming the file, never rows read past the page's data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inflated_list_row_counts_are_errors_on_every_read_path() {
    use arrow_array::ListArray;
    use arrow_array::types::Int32Type;
    let dir = tempfile::tempdir().unwrap();
    let items = Field::new("item", DataType::Int32, true);
    let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new("l", DataType::List(Arc::new(items)), true)]));
    let lists = ListArray::from_iter_primitive::<Int32Type, _, _>((0..100).map(|i| Some(vec![Some(i), Some(i + 1)])));
    let table = RecordBatch::try_new(schema.clone(), vec![Arc::new(lists)]).unwrap();
    let path = dir.path().join("lists.leaf");
    write_file(&path, &schema, &[table], 1 << 20).await;
    let bytes = std::fs::read(&path).unwrap();
    let columns = common::layout::column_metadata(&bytes);
    assert!(matches!(columns[0].pages[0].encoding.as_ref().and_then(|e| e.kind.as_ref()), Some(Kind::ListOffsets(_))));
    let offset_width = 4;
    for extra in [1u64, 50, 1 << 20] {
        for (column, grow_buffer) in [(0u32, false), (0, true), (1, false)] {
            let damaged = common::rewrite::rewrite_file(
                &bytes,
                |footer| {
                    if column == 0 {
                        footer.num_rows += extra;
                    }
                },
                |c, metadata| {
                    if c == column {
                        let page = &mut metadata.pages[0];
                        page.num_rows += extra;
                        if grow_buffer {
                            page.buffers[0].size += offset_width * extra;
                            page.buffers[0].uncompressed_size += offset_width * extra;
                        }
                    }
                },
            );
            let what = format!("{extra} more rows in column {column} (buffer grown: {grow_buffer})");
            let location = "memory://inflated-lists.leaf";
            let file = match FileReader::open(memory(damaged, location)).await {
                Ok(file) => file,
                Err(e) => {
                    assert!(matches!(e, Error::Corrupt { .. }) && e.to_string().contains(location), "{what}: {e}");
                    continue;
                }
            };
            let n = file.num_rows();
            let results = [
                ("scan", read_to_end(file.read()).await.map(|_| ())),
                ("take", file.take(&[n - 1], None).await.map(|_| ())),
                ("range", read_to_end(file.read().with_row_range(n - 3..n)).await.map(|_| ())),
            ];
            for (path, result) in results {
                let e = result.expect_err(&format!("{what}: the {path} read rows that are not there"));
                assert!(matches!(e, Error::Corrupt { .. }), "{what}, {path}: {e}");
                assert!(e.to_string().contains(location), "{what}, {path}: {e}");
            }
        }
    }
}

/// The entry points that read column metadata alone (the description of every page, the page
/// statistics) name the file in their errors, as reads do. Found by the fuzzer (fuzz/regressions):
/// `metadata()` returned "corrupt file: metadata of column 0 checksum mismatch" without the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_entry_points_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = sample_file(dir.path()).await;
    let layout = FileLayout::parse(&bytes);
    let mut damaged = bytes.clone();
    damaged[layout.column_blocks[0].start as usize] ^= 0x01;
    let location = "memory://damaged-column-metadata.leaf";
    let file = FileReader::open(memory(damaged, location)).await.unwrap();
    assert_fails(file.metadata().await, location, "metadata");
    assert_fails(file.column_bounds("i").await, location, "column bounds");
    let filter = looseleaf::filter::Predicate::IsNotNull(vec!["i".into()]);
    assert_fails(
        file.rows_matching_statistics(&filter, &looseleaf::RowSelection::all(file.num_rows())).await,
        location,
        "page statistics",
    );
}

/// A whole page of list offsets whose first and last offsets are right but one in between
/// points far past the page's items (and the next comes back down): a scan, in batches of one
/// row or of the whole page, is a corrupt-file error, not a decoder waiting for items that never
/// come (an internal error). Found by the fuzzer (fuzz/regressions/list-offset-past-items).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_past_the_page_items_are_corrupt() {
    use arrow_array::ListArray;
    use arrow_array::types::Int32Type;
    let dir = tempfile::tempdir().unwrap();
    let items = Field::new("item", DataType::Int32, true);
    let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new("l", DataType::List(Arc::new(items)), false)]));
    let lists = ListArray::from_iter_primitive::<Int32Type, _, _>((0..100).map(|i| Some(vec![Some(i), Some(i + 1)])));
    let table = RecordBatch::try_new(schema.clone(), vec![Arc::new(lists)]).unwrap();
    let path = dir.path().join("lists.leaf");
    write_file(&path, &schema, &[table], 1 << 20).await;
    let bytes = std::fs::read(&path).unwrap();
    let layout = FileLayout::parse(&bytes);
    let offsets = layout.columns[0][0].list_offsets[0].clone();
    assert_eq!(offsets.end - offsets.start, 4 * 101, "one 32-bit offset per list and one more");
    for (index, value) in [(1usize, 1_000_000u32), (50, 201), (99, u32::MAX)] {
        let mut damaged = bytes.clone();
        let at = offsets.start as usize + 4 * index;
        damaged[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let location = format!("memory://list-offset-{index}-{value}.leaf");
        let file = FileReader::open(memory(damaged, &location)).await.unwrap();
        for batch_size in [1, 100] {
            let what = format!("offset {index} set to {value}, batches of {batch_size}");
            let result = read_to_end(file.read().with_batch_size(nz(batch_size))).await;
            let error = assert_fails(result, &location, &what);
            assert!(matches!(error, Error::Corrupt { .. }), "{what}: {error}");
        }
    }
}

/// Reading some lists of a page (a take, scattered rows): each run of selected lists has
/// offsets that do not decrease, but a later run's start before an earlier run's end (items
/// out of order or overlapping) is a corrupt-file error, not a decoder taking more items than
/// were selected (an internal error). Found by the fuzzer
/// (fuzz/regressions/list-ranges-out-of-order-*).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_of_selected_runs_out_of_order_are_corrupt() {
    use arrow_array::ListArray;
    use arrow_array::types::Int32Type;
    let dir = tempfile::tempdir().unwrap();
    let items = Field::new("item", DataType::Int32, true);
    let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new("l", DataType::List(Arc::new(items)), false)]));
    let lists = ListArray::from_iter_primitive::<Int32Type, _, _>((0..100).map(|i| Some(vec![Some(i), Some(i + 1)])));
    let table = RecordBatch::try_new(schema.clone(), vec![Arc::new(lists)]).unwrap();
    let path = dir.path().join("lists.leaf");
    write_file(&path, &schema, &[table], 1 << 20).await;
    let bytes = std::fs::read(&path).unwrap();
    let offsets = FileLayout::parse(&bytes).columns[0][0].list_offsets[0].clone();
    // List 5 starts at item 1 (inside list 0) instead of 10; lists 0 and 5 alone still have
    // non-decreasing offsets ([0, 2] and [1, 12]).
    let mut damaged = bytes.clone();
    let at = offsets.start as usize + 4 * 5;
    damaged[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
    let location = "memory://list-runs-out-of-order.leaf";
    let file = FileReader::open(memory(damaged, location)).await.unwrap();
    let results = [
        ("take", file.take(&[5, 0], None).await.map(|_| ())),
        (
            "selection",
            read_to_end(file.read().with_selection(RowSelection::from_sorted_indices(&[0, 5]))).await.map(|_| ()),
        ),
    ];
    for (what, result) in results {
        let error = assert_fails(result, location, what);
        assert!(matches!(error, Error::Corrupt { .. }), "{what}: {error}");
    }
    // Each list alone is read (its items are its page's), only the pair is inconsistent.
    file.take(&[0], None).await.unwrap();
}
