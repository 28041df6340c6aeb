//! LZ4 and Zstandard pages, damaged compressed bytes and hostile decompressed sizes.

use super::*;

/// A table of many types and shapes.
fn varied_table(rng: &mut StdRng, len: usize) -> RecordBatch {
    let mut types = encoded_types();
    types.extend([DataType::Null, DataType::Timestamp(TimeUnit::Nanosecond, None)]);
    let columns: Vec<(String, ArrayRef)> = types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (shape, array) = shaped_array(rng, t, len);
            (format!("c{i}: {t} {shape}"), array)
        })
        .collect();
    table_of(&columns)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_files_round_trip() {
    let mut rng = common::rng(30);
    for codec in [Compression::Lz4, Compression::Zstd] {
        for (policy, label) in [(EncodingPolicy::default(), "encoded"), (EncodingPolicy::plain_only(), "plain")] {
            let table = varied_table(&mut rng, 2500);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("compressed.leaf");
            let options = WriterOptions::default()
                .with_page_size(6000)
                .with_compression(codec, 3)
                .with_default_encoding_policy(policy);
            let inputs = split_randomly(&mut rng, &table, 900);
            try_write(&path, &table.schema(), &inputs, options).await.unwrap();
            let reader = FileReader::open_path(&path).await.unwrap();
            let metadata = reader.metadata().await.unwrap();
            let compressed = metadata.columns.iter().flat_map(|c| &c.pages).filter(|p| p.compression == codec).count();
            assert!(compressed > 20, "{codec:?} {label}: only {compressed} pages compressed");
            check_reads(&mut rng, &reader, &table, &format!("{codec:?}, {label} pages")).await;
        }
    }
}

/// Pages that compress very well (plain zeros: zstd packs a block of 128 KiB into a few bytes)
/// read back: their decompressed size is legitimately far above any fixed ratio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn highly_compressible_pages_round_trip() {
    let mut rng = common::rng(31);
    let len = 1 << 20;
    let zeros: ArrayRef = Arc::new(Int64Array::from(vec![0i64; len]));
    let falses: ArrayRef = Arc::new(BooleanArray::from(vec![false; len]));
    let table = table_of(&[("zeros".into(), zeros), ("falses".into(), falses)]);
    for codec in [Compression::Lz4, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zeros.leaf");
        let options = WriterOptions::default()
            .with_compression(codec, 3)
            .with_default_encoding_policy(EncodingPolicy::plain_only());
        write_table(&path, &table, options).await;
        let reader = FileReader::open_path(&path).await.unwrap();
        let metadata = reader.metadata().await.unwrap();
        let page = &metadata.columns[0].pages[0];
        assert_eq!(page.compression, codec);
        assert!(page.buffer_sizes[0] < 64 * 1024, "{codec:?}: {page:?}");
        let out = read_to_end(reader.read()).await.unwrap_or_else(|e| panic!("{codec:?}: {e}"));
        assert_same(&out.concat(), &table, &format!("{codec:?} zeros"));
        let taken = reader.take(&[len as u64 - 1, 5], None).await.unwrap();
        assert_same(&taken, &take_record_batch(&table, &UInt64Array::from(vec![len as u64 - 1, 5])).unwrap(), "take");
        let start = rng.random_range(0..len);
        let out = read_to_end(reader.read().with_row_range(start as u64..len as u64)).await.unwrap();
        assert_same(&out.concat(), &table.slice(start, len - start), &format!("{codec:?} zeros from row {start}"));
    }
}

/// Whether the union of `reads` covers `range`.
fn covered(reads: &[std::ops::Range<u64>], range: &std::ops::Range<u64>) -> bool {
    let mut sorted = reads.to_vec();
    sorted.sort_by_key(|r| r.start);
    let mut at = range.start;
    for r in sorted {
        if r.start <= at && r.end > at {
            at = r.end;
        }
    }
    at >= range.end
}

/// `take` of one row of a compressed page reads (and decompresses) the whole page; of an
/// uncompressed page, only the bytes of that row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn take_reads_whole_compressed_pages() {
    let mut rng = common::rng(32);
    let len = 50_000;
    let small = int_array(&DataType::Int64, &int_values(&mut rng, len, IntShape::Small, (0, 1 << 40)), None);
    let text = bytes_array(&DataType::Utf8, &bytes_values(&mut rng, len, BytesShape::Text, true), None);
    let table = table_of(&[("i".into(), small), ("s".into(), text)]);
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("take.leaf");
        let options = WriterOptions::default()
            .with_page_size(64 * 1024)
            .with_compression(compression, 3)
            .with_default_encoding_policy(EncodingPolicy::plain_only());
        write_table(&path, &table, options).await;
        let bytes = std::fs::read(&path).unwrap();
        let layout = common::layout::FileLayout::parse(&bytes);
        let reader = FileReader::open_path(&path).await.unwrap();
        let metadata = reader.metadata().await.unwrap();
        for column in 0..2 {
            let pages = &layout.columns[column];
            assert!(pages.len() >= 3, "{compression:?}: {} pages", pages.len());
            let page = &pages[pages.len() / 2];
            assert_eq!(metadata.columns[column].pages[pages.len() / 2].compression, compression);
            let row = page.first_row + page.num_rows / 2;
            let name = table.schema().field(column).name().clone();
            let read = reader
                .read()
                .with_columns(vec![name.clone()])
                .with_selection(RowSelection::from_sorted_indices(&[row]));
            let plan = read.plan().await.unwrap();
            let reads: Vec<std::ops::Range<u64>> = plan.requests.iter().flat_map(|r| r.reads.clone()).collect();
            let page_bytes: u64 = page.buffers.iter().map(|b| b.end - b.start).sum();
            let whole = page.buffers.iter().all(|b| covered(&reads, b));
            if compression == Compression::None {
                let read_bytes: u64 = reads.iter().map(|r| r.end - r.start).sum();
                assert!(!whole && read_bytes < page_bytes / 4, "{name}: {read_bytes} of {page_bytes} bytes read");
            } else {
                assert!(
                    whole,
                    "{compression:?} {name}: a take of row {row} reads {reads:?}, not the page {:?}",
                    page.buffers
                );
            }
            let taken = reader.take(&[row, row], Some(&[name])).await.unwrap();
            let expected =
                take_record_batch(&table.project(&[column]).unwrap(), &UInt64Array::from(vec![row, row])).unwrap();
            assert_same(&taken, &expected, &format!("{compression:?} take of row {row}"));
        }
    }
}

/// A compressed file and its table.
async fn compressed_sample(dir: &Path, codec: Compression) -> (Vec<u8>, RecordBatch) {
    let mut rng = common::rng(33);
    let len = 3000;
    let columns: Vec<(String, ArrayRef)> = vec![
        (
            "i".into(),
            int_array(
                &DataType::Int32,
                &int_values(&mut rng, len, IntShape::Small, (-5000, 5000)),
                random_validity(&mut rng, len),
            ),
        ),
        ("s".into(), bytes_array(&DataType::Utf8, &bytes_values(&mut rng, len, BytesShape::Text, true), None)),
        ("f".into(), float_array(&mut rng, &DataType::Float64, len, FloatShape::Runs, None)),
    ];
    let table = table_of(&columns);
    let path = dir.join(format!("{codec:?}.leaf"));
    let options = WriterOptions::default()
        .with_page_size(8000)
        .with_compression(codec, 3)
        .with_default_encoding_policy(EncodingPolicy::plain_only());
    write_table(&path, &table, options).await;
    (std::fs::read(&path).unwrap(), table)
}

/// The compressed buffers of a file: (column, page, buffer, byte range).
fn compressed_buffers(bytes: &[u8]) -> Vec<(usize, usize, usize, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    for (column, metadata) in column_metadata(bytes).iter().enumerate() {
        for (index, page) in metadata.pages.iter().enumerate().filter(|(_, p)| p.compression != 0) {
            for (buffer, location) in page.buffers.iter().enumerate() {
                out.push((column, index, buffer, location.offset as usize..(location.offset + location.size) as usize));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_compressed_pages_give_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = common::rng(34);
    for codec in [Compression::Lz4, Compression::Zstd] {
        let (bytes, table) = compressed_sample(dir.path(), codec).await;
        let buffers = compressed_buffers(&bytes);
        assert!(buffers.len() > 10, "{codec:?}: {} compressed buffers", buffers.len());
        for (column, page, buffer, range) in buffers.iter().step_by(3) {
            // Bytes that decode to nothing valid: always an error.
            for fill in [0x00u8, 0xff] {
                let mut damaged = bytes.clone();
                damaged[range.clone()].fill(fill);
                let what = format!("{codec:?} column {column} page {page} buffer {buffer} filled with {fill:#x}");
                let error = read_damaged(damaged, table.num_rows(), &what).await;
                assert!(matches!(error, Some(Error::Corrupt { .. })), "{what}: {error:?}");
            }
            let mut damaged = bytes.clone();
            rng.fill_bytes(&mut damaged[range.clone()]);
            let what = format!("{codec:?} column {column} page {page} buffer {buffer} overwritten");
            read_damaged(damaged, table.num_rows(), &what).await;
            // A few bytes changed: an error or other values (the codecs carry no checksum).
            for _ in 0..3 {
                let mut damaged = bytes.clone();
                for _ in 0..rng.random_range(1..=4) {
                    let at = rng.random_range(range.clone());
                    damaged[at] = rng.random();
                }
                let what = format!("{codec:?} column {column} page {page} buffer {buffer} with bytes changed");
                read_damaged(damaged, table.num_rows(), &what).await;
            }
        }
    }
}

/// A hostile decompressed size (the metadata edited, checksums recomputed) is refused before
/// anything that large is allocated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_uncompressed_sizes_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    for codec in [Compression::Lz4, Compression::Zstd] {
        let (bytes, table) = compressed_sample(dir.path(), codec).await;
        let metadata = column_metadata(&bytes);
        for (column, page, buffer, range) in compressed_buffers(&bytes).into_iter().step_by(5) {
            let real = metadata[column].pages[page].buffers[buffer].uncompressed_size;
            let size = range.len() as u64;
            for claimed in [
                0,
                1,
                real - 1,
                real + 1,
                real * 2,
                size * 1024 + MIB,
                size * 1024 + MIB + 1,
                1 << 31,
                1 << 40,
                u64::MAX,
            ] {
                let damaged = rewrite_metadata(&bytes, |c, m| {
                    if c as usize == column {
                        m.pages[page].buffers[buffer].uncompressed_size = claimed;
                    }
                });
                let what = format!(
                    "{codec:?} column {column} page {page} buffer {buffer} claiming {claimed} bytes (not {real})"
                );
                let error = read_damaged(damaged, table.num_rows(), &what).await;
                assert!(matches!(error, Some(Error::Corrupt { .. })), "{what}: {error:?}");
                let largest = common::alloc::largest_allocation();
                assert!(largest < MAX_EXPECTED_ALLOCATION, "{what}: an allocation of {largest} bytes");
            }
        }
    }
}
