//! The fuzzer's findings stay fixed: every input in `fuzz/regressions/` (each one crashed the
//! fuzzer once) and every seed of the corpus is read every way (`read_every_way`), without the
//! fuzzer, under the same cap on single allocations. Also checks that the seeds cover every
//! encoding, both compressions, and stay small.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Mutex;

use looseleaf::{Compression, FileReader};
use looseleaf_fuzz::alloc::{CAP, GuardedAllocator, largest_allocation};
use looseleaf_fuzz::{read_every_way, runtime, seeds};
use looseleaf_testing::MemoryReader;

#[global_allocator]
static ALLOCATOR: GuardedAllocator = GuardedAllocator::new(CAP);

/// Panics seen on any thread (the reader's tasks included), with the input being read.
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static CURRENT: Mutex<String> = Mutex::new(String::new());

/// Reads each input every way and returns the findings: panics on the calling thread and on
/// any other (a reader task's panic is also turned into an internal error, which the harness
/// reports, but the hook catches those that are not).
fn findings(inputs: &[(String, Vec<u8>)]) -> Vec<String> {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let input = CURRENT.lock().map(|c| c.clone()).unwrap_or_default();
        if let Ok(mut panics) = PANICS.lock() {
            panics.push(format!("{input}: {info}"));
        }
        default_hook(info);
    }));
    for (name, bytes) in inputs {
        *CURRENT.lock().unwrap() = name.clone();
        // The hook records the panic; unwinding stops here so that the other inputs run.
        let _ = std::panic::catch_unwind(|| read_every_way(bytes));
    }
    let _ = std::panic::take_hook();
    std::mem::take(&mut *PANICS.lock().unwrap())
}

fn regressions_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("regressions")
}

/// One test, so that the panic hook sees one input at a time.
#[test]
fn regressions_and_seeds_read_without_findings() {
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(regressions_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('.')))
        .filter(|p| p.extension().is_none_or(|e| e != "md"))
        .collect();
    entries.sort();
    for path in &entries {
        inputs.push((format!("regression {}", path.display()), std::fs::read(path).unwrap()));
    }
    let seeds = runtime().block_on(seeds::all()).unwrap();
    inputs.extend(seeds.iter().map(|s| (format!("seed {}", s.name), s.bytes.clone())));
    let findings = findings(&inputs);
    assert!(findings.is_empty(), "{} finding(s):\n{}", findings.len(), findings.join("\n"));
    // The caps held: nothing was refused (a refusal would have been an error or an abort).
    assert!(largest_allocation() <= CAP, "an allocation of {} bytes was refused", largest_allocation());
    println!("{} regression inputs and {} seeds read every way", entries.len(), seeds.len());
}

/// The seeds are valid, small, and cover every encoding and both compressions.
#[test]
fn seeds_cover_every_encoding_and_stay_small() {
    let seeds = runtime().block_on(seeds::all()).unwrap();
    let mut encodings = String::new();
    let mut compressions = Vec::new();
    for seed in &seeds {
        assert!(
            seed.bytes.len() <= 16 << 10,
            "seed {} is {} bytes: too large to mutate well",
            seed.name,
            seed.bytes.len()
        );
        let reader = std::sync::Arc::new(MemoryReader::new(seed.bytes.clone(), seed.name));
        let metadata = runtime()
            .block_on(async { FileReader::open(reader).await?.metadata().await })
            .unwrap_or_else(|e| panic!("seed {}: {e}", seed.name));
        for page in metadata.columns.iter().flat_map(|c| &c.pages) {
            encodings.push_str(&page.encoding);
            encodings.push(' ');
            compressions.push(page.compression);
        }
    }
    for name in [
        "plain(",
        "bitmap",
        "nullable(",
        "all_null",
        "binary(",
        "list_offsets(",
        "fixed_size_list(",
        "bitpacked(",
        "delta(",
        "constant",
        "rle(",
        "dictionary(",
        "fsst(",
    ] {
        assert!(encodings.contains(name), "no seed has an encoding {name}...: {encodings}");
    }
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        assert!(compressions.contains(&compression), "no seed is compressed with {compression:?}");
    }
}
