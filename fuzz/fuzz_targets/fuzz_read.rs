//! The libFuzzer target: every input is a whole looseleaf file, read every way
//! (`looseleaf_fuzz::read_every_way`). Built and run by `scripts/fuzz.sh`.
//!
//! With `LOOSELEAF_FUZZ_WRITE_SEEDS=DIR` in the environment it writes the seed corpus into DIR
//! and exits instead (what `make_corpus` does), so that the script builds one binary only.

#![no_main]

use looseleaf_fuzz::alloc::{CAP, GuardedAllocator};

/// Single allocations over 1 GiB are refused (see `looseleaf_fuzz::alloc`).
#[global_allocator]
static ALLOCATOR: GuardedAllocator = GuardedAllocator::new(CAP);

libfuzzer_sys::fuzz_target!(
    init: {
        if let Some(dir) = std::env::var_os("LOOSELEAF_FUZZ_WRITE_SEEDS") {
            let code = match looseleaf_fuzz::write_seeds(std::path::Path::new(&dir)) {
                Ok(count) => {
                    println!("fuzz_read: wrote {count} seeds to {}", dir.to_string_lossy());
                    0
                }
                Err(e) => {
                    eprintln!("fuzz_read: cannot write the seeds: {e}");
                    1
                }
            };
            std::process::exit(code);
        }
    },
    |data: &[u8]| {
        looseleaf_fuzz::read_every_way(data);
    }
);
