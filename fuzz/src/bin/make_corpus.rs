//! Writes the seed corpus (`looseleaf_fuzz::seeds`) into the directory given as the only
//! argument, one `NAME.leaf` file per seed.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: make_corpus DIR");
        return ExitCode::FAILURE;
    };
    match looseleaf_fuzz::write_seeds(&dir) {
        Ok(count) => {
            println!("make_corpus: wrote {count} seeds to {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make_corpus: {e}");
            ExitCode::FAILURE
        }
    }
}
