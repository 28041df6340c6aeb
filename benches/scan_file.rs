//! Full scans of an existing looseleaf file, for profiling (`perf record`, `valgrind`):
//! `cargo bench -p looseleaf --bench scan_file -- PATH [RUNS] [COLUMN...]`.
//! Prints the best time per run and the rows and columns scanned. With `TAKE=n` in the
//! environment, each run opens the file and takes `n` pseudo-random rows instead; with
//! `DICTIONARY=1`, the named columns are read as dictionary arrays.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a benchmark, not library code

use std::time::{Duration, Instant};

use futures::StreamExt;
use looseleaf::FileReader;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let Some(path) = args.first() else {
        eprintln!("usage: scan_file PATH [RUNS] [COLUMN...]");
        return;
    };
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
    let columns: Vec<String> = args.iter().skip(2).cloned().collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut best = Duration::MAX;
    let mut rows = 0;
    let take: Option<u64> = std::env::var("TAKE").ok().and_then(|t| t.parse().ok());
    let as_dictionaries = std::env::var("DICTIONARY").is_ok_and(|d| d == "1");
    for run in 0..runs {
        let start = Instant::now();
        if let Some(count) = take {
            rows = runtime.block_on(async {
                let reader = FileReader::open_path(path).await.unwrap();
                let n = reader.num_rows();
                let indices: Vec<u64> = (0..count).map(|i| (i * 2_654_435_761 + run as u64 * 97) % n).collect();
                let columns = (!columns.is_empty()).then_some(columns.as_slice());
                reader.take(&indices, columns).await.unwrap().num_rows()
            });
            best = best.min(start.elapsed());
            continue;
        }
        rows = runtime.block_on(async {
            let reader = FileReader::open_path(path).await.unwrap();
            let mut read = reader.read();
            if !columns.is_empty() {
                read = read.with_columns(columns.clone());
            }
            if as_dictionaries {
                read = read.with_dictionary_columns(columns.clone());
            }
            let mut stream = read.stream().await.unwrap();
            let mut rows = 0;
            while let Some(batch) = stream.next().await {
                rows += batch.unwrap().num_rows();
            }
            rows
        });
        best = best.min(start.elapsed());
    }
    println!("{path}: {rows} rows, columns {columns:?}: best of {runs} runs {:.1} ms", best.as_secs_f64() * 1e3);
}
