//! Benchmarks of the reader's hot paths with divan: the decoder of each encoding (a full scan
//! of one column of one million values written with that encoding forced), the scheduling loop
//! (the plan of a read of 10 columns of a 1,000-column file), and the I/O scheduler under load
//! (10,000 small requests through a reader in memory, at depth 8 and a small budget), and
//! `take` of scattered rows (1,000 and 100,000 of a four-column file of one million rows).
//!
//! Run with `cargo bench -p looseleaf --bench hot_paths`. Throughputs are in values (or
//! requests) per second; compare runs on the same machine, not absolute numbers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a benchmark, not library code

use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use divan::Bencher;
use divan::counter::ItemsCount;
use futures::StreamExt;
use futures::future::BoxFuture;
use looseleaf::io::{
    CoalesceOptions, EncodingsIo, IoOptions, IoRequest, IoScheduler, Priority, RangeReader, RequestKind,
};
use looseleaf::{ByteCount, EncodingKind, EncodingPolicy, FileReader, FileWriter, WriterOptions};

const ROWS: usize = 1_000_000;

fn main() {
    divan::main();
}

static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap());

static DIR: LazyLock<tempfile::TempDir> = LazyLock::new(|| tempfile::tempdir().unwrap());

/// A one-column file of `column` values written with `encoding` forced.
fn file_with(name: &str, column: ArrayRef, encoding: EncodingKind) -> PathBuf {
    let path = DIR.path().join(format!("{name}.leaf"));
    if path.exists() {
        return path;
    }
    let schema = Arc::new(Schema::new(vec![Field::new("v", column.data_type().clone(), true)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
    let policy = EncodingPolicy { force: Some(encoding), ..Default::default() };
    let options = WriterOptions::default().with_encoding_policy("v", policy);
    RUNTIME.block_on(async {
        let mut writer = FileWriter::create_path(&path, schema, options).await.unwrap();
        writer.write(&batch).await.unwrap();
        writer.finish().await.unwrap();
    });
    path
}

fn ints(f: impl Fn(i64) -> i64) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values((0..ROWS as i64).map(f)))
}

fn words(distinct: usize) -> ArrayRef {
    let vocabulary = ["quick", "brown", "fox", "jumps", "over", "lazy", "dog", "carefully", "final", "requests"];
    Arc::new(StringArray::from_iter_values((0..ROWS).map(|i| {
        let w = |k: usize| vocabulary[(i * 7 + k * 3) % distinct.clamp(1, vocabulary.len())];
        if distinct <= vocabulary.len() {
            w(0).to_string()
        } else {
            format!("{} {} {} {}", w(0), w(1), w(2), i % distinct)
        }
    })))
}

fn scan(path: &PathBuf) -> usize {
    RUNTIME.block_on(async {
        let reader = FileReader::open_path(path).await.unwrap();
        let mut stream = reader.read().stream().await.unwrap();
        let mut rows = 0;
        while let Some(batch) = stream.next().await {
            rows += batch.unwrap().num_rows();
        }
        rows
    })
}

fn bench_scan(bencher: Bencher, path: PathBuf) {
    bencher.counter(ItemsCount::new(ROWS)).bench(|| scan(&path));
}

#[divan::bench]
fn decode_plain_int64(bencher: Bencher) {
    bench_scan(bencher, file_with("plain", ints(|i| i * 7919 % 1_000_003), EncodingKind::Plain));
}

#[divan::bench]
fn decode_bitpacked_int64(bencher: Bencher) {
    bench_scan(bencher, file_with("bitpacked", ints(|i| i * 7919 % 100_003), EncodingKind::Bitpacked));
}

#[divan::bench]
fn decode_delta_int64(bencher: Bencher) {
    bench_scan(bencher, file_with("delta", ints(|i| i / 4), EncodingKind::Delta));
}

#[divan::bench]
fn decode_rle_int64(bencher: Bencher) {
    bench_scan(bencher, file_with("rle", ints(|i| i / 1000), EncodingKind::Rle));
}

#[divan::bench]
fn decode_constant_int64(bencher: Bencher) {
    bench_scan(bencher, file_with("constant", ints(|_| 42), EncodingKind::Constant));
}

#[divan::bench]
fn decode_dictionary_strings(bencher: Bencher) {
    bench_scan(bencher, file_with("dictionary", words(7), EncodingKind::Dictionary));
}

#[divan::bench]
fn decode_fsst_strings(bencher: Bencher) {
    bench_scan(bencher, file_with("fsst", words(100_000), EncodingKind::Fsst));
}

#[divan::bench]
fn decode_plain_strings(bencher: Bencher) {
    bench_scan(bencher, file_with("plain_strings", words(100_000), EncodingKind::Plain));
}

/// A file of 1,000 int64 columns of 1,000 rows.
static WIDE: LazyLock<PathBuf> = LazyLock::new(|| {
    let path = DIR.path().join("wide.leaf");
    let fields: Vec<Field> = (0..1000).map(|i| Field::new(format!("c{i}"), DataType::Int64, false)).collect();
    let schema = Arc::new(Schema::new(fields));
    let columns: Vec<ArrayRef> = (0..1000).map(|c| ints(move |i| i + c).slice(0, 1000)).collect();
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    RUNTIME.block_on(async {
        let mut writer = FileWriter::create_path(&path, schema, WriterOptions::default()).await.unwrap();
        writer.write(&batch).await.unwrap();
        writer.finish().await.unwrap();
    });
    path
});

/// Opening a wide file and planning a read of 10 of its columns: the cost should follow the 10.
#[divan::bench]
fn plan_10_of_1000_columns(bencher: Bencher) {
    let path = WIDE.clone();
    let columns: Vec<String> = (0..10).map(|i| format!("c{}", i * 97)).collect();
    bencher.bench(|| {
        RUNTIME.block_on(async {
            let reader = FileReader::open_path(&path).await.unwrap();
            reader.read().with_columns(columns.clone()).plan().await.unwrap().requests.len()
        })
    });
}

/// A file of four columns (random int64, strings, float64, int32) of one million rows, in the
/// writer's default encodings and page size.
static TABLE: LazyLock<PathBuf> = LazyLock::new(|| {
    let path = DIR.path().join("table.leaf");
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("x", DataType::Float64, false),
        Field::new("k", DataType::Int32, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        ints(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64)),
        words(100_000),
        Arc::new(Float64Array::from_iter_values((0..ROWS).map(|i| i as f64 * 0.37))),
        Arc::new(Int32Array::from_iter_values((0..ROWS as i32).map(|i| i.wrapping_mul(2_654_435)))),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    RUNTIME.block_on(async {
        let mut writer = FileWriter::create_path(&path, schema, WriterOptions::default()).await.unwrap();
        writer.write(&batch).await.unwrap();
        writer.finish().await.unwrap();
    });
    path
});

fn bench_take(bencher: Bencher, count: u64) {
    let path = TABLE.clone();
    let reader = RUNTIME.block_on(FileReader::open_path(&path)).unwrap();
    let indices: Vec<u64> = (0..count).map(|i| (i * 2_654_435_761) % ROWS as u64).collect();
    bencher
        .counter(ItemsCount::new(count as usize))
        .bench(|| RUNTIME.block_on(async { reader.take(&indices, None).await.unwrap().num_rows() }));
}

/// `take` of 1,000 scattered rows of every column (the file open, its metadata cached).
#[divan::bench]
fn take_1000_rows(bencher: Bencher) {
    bench_take(bencher, 1000);
}

/// `take` of 100,000 scattered rows of every column.
#[divan::bench]
fn take_100_000_rows(bencher: Bencher) {
    bench_take(bencher, 100_000);
}

/// An in-memory file.
#[derive(Debug)]
struct MemoryReader(Bytes);

impl RangeReader for MemoryReader {
    fn location(&self) -> &str {
        "memory"
    }

    fn get_range(&self, range: Range<u64>) -> BoxFuture<'_, looseleaf::Result<Bytes>> {
        Box::pin(futures::future::ready(Ok(self.0.slice(range.start as usize..range.end as usize))))
    }

    fn get_suffix(&self, len: u64) -> BoxFuture<'_, looseleaf::Result<(Bytes, u64)>> {
        let start = self.0.len().saturating_sub(len as usize);
        Box::pin(futures::future::ready(Ok((self.0.slice(start..), self.0.len() as u64))))
    }
}

/// 10,000 requests of 4 KiB submitted at once, at depth 8 with a 256 KiB budget, awaited in
/// submission order (which frees the budget as a decoder would).
#[divan::bench]
fn io_scheduler_10000_requests(bencher: Bencher) {
    let reader: Arc<dyn RangeReader> = Arc::new(MemoryReader(Bytes::from(vec![7u8; 64 << 20])));
    let options = IoOptions {
        depth: looseleaf::io::IoDepth::Fixed(std::num::NonZeroUsize::MIN.saturating_add(7)),
        open_read: ByteCount::kib(64),
        buffer: ByteCount(256 * 1024),
        coalesce: CoalesceOptions { gap: ByteCount(0), max_read: ByteCount(1 << 20) },
    };
    bencher.counter(ItemsCount::new(10_000usize)).bench(|| {
        RUNTIME.block_on(async {
            let scheduler = IoScheduler::new(reader.clone(), options);
            let futures: Vec<_> = (0..10_000u64)
                .map(|i| {
                    let start = (i * 6151 % 16_000) * 4096;
                    scheduler.submit(IoRequest {
                        ranges: vec![start..start + 4096],
                        priority: Priority(i),
                        column: 0,
                        kind: RequestKind::Direct,
                        urgency: None,
                        holder: None,
                        checks: None,
                    })
                })
                .collect();
            let mut bytes = 0;
            for future in futures {
                bytes += future.await.unwrap()[0].len();
            }
            bytes
        })
    });
}
