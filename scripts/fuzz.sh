#!/usr/bin/env bash
# Coverage-guided fuzzing of the reader (docs/fuzzing.md): builds the libFuzzer target of fuzz/
# on stable Rust, writes the seed corpus, and fuzzes for SECONDS (default 60). A crash, hang or
# out-of-memory input is minimised, copied into fuzz/regressions/ (which `cargo test` in fuzz/
# reads every way from then on) and the script fails.
#
#   scripts/fuzz.sh [SECONDS]
#
# Environment: FUZZ_JOBS (default 1) parallel fuzzing processes (libFuzzer's -fork, which also
# keeps fuzzing past a crash); FUZZ_CORPUS (default fuzz/corpus) where the inputs libFuzzer finds
# are kept between runs, so a longer run starts from what earlier ones found; FUZZ_ARGS extra
# libFuzzer flags.
#
# Needs nothing beyond Rust and a C++ compiler (libfuzzer-sys builds libFuzzer from source):
# no nightly toolchain, no cargo-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds="${1:-60}"
jobs="${FUZZ_JOBS:-1}"
corpus="${FUZZ_CORPUS:-$root/fuzz/corpus}"
host=$(rustc -vV | sed -n 's/^host: //p')
target_dir="${CARGO_TARGET_DIR:-$root/fuzz/target}"
binary="$target_dir/$host/release/fuzz_read"
work="$target_dir/fuzz-run"
seeds="$work/seeds"
artifacts="$work/artifacts"

step() { printf '\n==> %s\n' "$*"; }

# libfuzzer-sys compiles libFuzzer (C++) in its build script.
if ! command -v c++ >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        step "install a C++ compiler (libFuzzer is built from source)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++
    else
        echo "fuzz: a C++ compiler is missing (c++): install g++ or clang and run again" >&2
        exit 1
    fi
fi

# What `cargo fuzz build --sanitizer none` does, with stable flags only: SanitizerCoverage
# (inline 8-bit counters, the PC table, comparison tracing) for libFuzzer's feedback, the fuzzing
# cfg, and the checks of a debug build. The explicit --target keeps these flags off build
# scripts and proc macros.
export RUSTFLAGS="-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
--cfg fuzzing -Cdebug-assertions -Coverflow-checks"

step "build the fuzz target (release, instrumented, $host)"
start=$(date +%s)
cargo build --manifest-path fuzz/Cargo.toml --locked --release --target "$host" --target-dir "$target_dir" \
    --features libfuzzer --bin fuzz_read
echo "built in $(($(date +%s) - start)) s"

step "seed corpus"
rm -rf "$seeds" "$artifacts"
mkdir -p "$seeds" "$artifacts" "$corpus"
LOOSELEAF_FUZZ_WRITE_SEEDS="$seeds" "$binary"

# libFuzzer flags: a time limit per input (the harness's own limit for a hang is 20 s), a cap on
# the process's memory (single allocations are capped at 1 GiB by the target's allocator),
# inputs up to 64 KiB (the seeds are a few KiB), and a dictionary of the values that found
# classes of bugs (huge counts, widths, NUL bytes in names: fuzz/fuzz_read.dict).
flags=(
    -max_total_time="$seconds"
    -timeout=30
    -rss_limit_mb=2048
    -malloc_limit_mb=2048
    -max_len=65536
    -dict="$root/fuzz/fuzz_read.dict"
    -print_final_stats=1
    -artifact_prefix="$artifacts/"
)
if [ "$jobs" -gt 1 ]; then
    flags+=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi
# shellcheck disable=SC2206
flags+=(${FUZZ_ARGS:-})

step "fuzz for $seconds s ($jobs job(s)); new inputs kept in $corpus"
status=0
# The first directory receives the new inputs; the seeds and the regressions are read only.
"$binary" "${flags[@]}" "$corpus" "$seeds" "$root/fuzz/regressions" 2>&1 | tee "$work/fuzz.log" || status=$?
# Under -fork, crashes do not stop the run: the artifacts say whether there were any.
found=$(find "$artifacts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \
    -o -name 'leak-*' \) | sort)
if [ "$status" -eq 0 ] && [ -z "$found" ]; then
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$work/fuzz.log" || true
    echo "fuzz: no finding in $seconds s"
    exit 0
fi
if [ -z "$found" ]; then
    echo "fuzz: libFuzzer exited with status $status without leaving an input (see $work/fuzz.log)" >&2
    exit "$status"
fi

step "findings: minimise and keep in fuzz/regressions/"
for input in $found; do
    name=$(basename "$input")
    kept="$root/fuzz/regressions/$name"
    # Minimising a crash re-runs it many times: bounded, and the original is kept if it fails.
    if [[ "$name" == crash-* ]] && "$binary" -minimize_crash=1 -max_total_time=120 -timeout=30 \
        -rss_limit_mb=2048 -exact_artifact_path="$work/minimized-$name" "$input" >"$work/minimize-$name.log" 2>&1 \
        && [ -s "$work/minimized-$name" ]; then
        cp "$work/minimized-$name" "$kept"
    else
        cp "$input" "$kept"
    fi
    echo "fuzz: $name ($(wc -c <"$input") bytes, kept $(wc -c <"$kept") bytes) -> fuzz/regressions/$name"
done
echo "fuzz: the reader failed on the inputs above; reproduce one with" >&2
echo "  $binary fuzz/regressions/NAME   (or: cargo test --manifest-path fuzz/Cargo.toml)" >&2
exit 1
