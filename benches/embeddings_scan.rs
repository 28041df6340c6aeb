//! Scan of a `fixed_size_list<float32, 768>` column (embeddings) against a plain memory copy of
//! the same bytes, warm (page cache hot), on this machine.
//!
//! Run with `cargo bench -p looseleaf --bench embeddings_scan` (`ROWS=...` to change the size).
//! Reports the best of several runs of each, in GB/s, and their ratio. The scan returns Arrow
//! arrays over the bytes read from the file: its cost is the read from the page cache (one copy)
//! plus scheduling and batching, so memcpy speed is its ceiling.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a benchmark, not library code

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{FixedSizeListArray, Float32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use futures::StreamExt;
use looseleaf::{FileReader, FileWriter, WriterOptions};

const DIM: i32 = 768;

fn best_of(runs: usize, mut f: impl FnMut() -> u64) -> (Duration, u64) {
    let mut best = Duration::MAX;
    let mut bytes = 0;
    for _ in 0..runs {
        let start = Instant::now();
        bytes = f();
        best = best.min(start.elapsed());
    }
    (best, bytes)
}

fn gbps(bytes: u64, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e9
}

fn main() {
    let rows: usize = std::env::var("ROWS").ok().and_then(|r| r.parse().ok()).unwrap_or(100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("embeddings.leaf");

    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("embedding", DataType::FixedSizeList(item.clone(), DIM), false),
    ]));
    runtime.block_on(async {
        let mut writer = FileWriter::create_path(&path, schema.clone(), WriterOptions::default()).await.unwrap();
        for start in (0..rows).step_by(10_000) {
            let n = 10_000.min(rows - start);
            let values: Float32Array = (0..n * DIM as usize).map(|i| (i % 1000) as f32 * 0.001).collect();
            let embedding = FixedSizeListArray::try_new(item.clone(), DIM, Arc::new(values), None).unwrap();
            let ids = Int64Array::from_iter_values((start as i64)..(start + n) as i64);
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(embedding)]).unwrap();
            writer.write(&batch).await.unwrap();
        }
        writer.finish().await.unwrap();
    });
    let data_bytes = rows as u64 * DIM as u64 * 4;

    // memcpy of the same number of bytes, destination touched beforehand.
    let source = vec![1u8; data_bytes as usize];
    let mut destination = vec![0u8; data_bytes as usize];
    let (memcpy, _) = best_of(5, || {
        destination.copy_from_slice(&source);
        std::hint::black_box(&destination);
        data_bytes
    });
    drop((source, destination));

    let scan = |batch_size: Option<std::num::NonZeroUsize>| {
        runtime.block_on(async {
            let reader = FileReader::open_path(&path).await.unwrap();
            let mut read = reader.read().with_columns(vec!["embedding".into()]);
            if let Some(batch_size) = batch_size {
                read = read.with_batch_size(batch_size);
            }
            let mut stream = read.stream().await.unwrap();
            let mut rows_seen = 0;
            while let Some(batch) = stream.next().await {
                rows_seen += batch.unwrap().num_rows();
            }
            assert_eq!(rows_seen, rows);
            data_bytes
        })
    };
    scan(None); // warm the page cache
    println!("embeddings: {rows} rows x fixed_size_list<float32, {DIM}> = {:.0} MB", data_bytes as f64 / 1e6);
    println!("  memcpy                 {:>7.2} GB/s", gbps(data_bytes, memcpy));
    for batch_size in [None, std::num::NonZeroUsize::new(1024), std::num::NonZeroUsize::new(8192)] {
        let (time, bytes) = best_of(5, || scan(batch_size));
        let label = batch_size.map_or("default".to_string(), |b| b.to_string());
        println!(
            "  looseleaf scan, batches of {label:>7}: {:>7.2} GB/s  = {:.2} x memcpy",
            gbps(bytes, time),
            memcpy.as_secs_f64() / time.as_secs_f64()
        );
    }

    let (take, _) = best_of(5, || {
        runtime.block_on(async {
            let reader = FileReader::open_path(&path).await.unwrap();
            let indices: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % rows as u64).collect();
            reader.take(&indices, None).await.unwrap().num_rows() as u64
        })
    });
    println!("  take of 1,000 random rows (open included): {:.2} ms", take.as_secs_f64() * 1e3);
}
