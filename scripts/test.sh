#!/usr/bin/env bash
# Installs the test dependencies and runs every test suite: lints, Rust tests, Python tests.
# This is the README's test command, and what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says when it starts, in seconds since the command began: where the time goes.
step() { printf '\n==> [%4d s] %s\n' "$SECONDS" "$*"; }
trap 'status=$?; printf "\n==> [%4d s] finished with status %d\n" "$SECONDS" "$status"' EXIT

step "install the package and its test dependencies"
python3 -m pip install --quiet --disable-pip-version-check ".[test]"

step "java (the PySpark tests need a JVM)"
if ! command -v java >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless
    else
        echo "java is missing: install a JDK or JRE 17 or 21 (e.g. apt-get install openjdk-17-jre-headless)" \
            "and run again; the PySpark tests (tests/test_spark.py) need it" >&2
        exit 1
    fi
fi
java -version 2>&1 | head -n 1

step "rust: format, lints, docs"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p looseleaf

step "rust: tests"
if cargo nextest --version >/dev/null 2>&1; then
    # Every test binary's tests on two processes at once, not one binary after the other as
    # `cargo test` runs them: much of the longest suites (deadlocks, bad input) waits on
    # timeouts. Doctests are not nextest's: run by cargo.
    cargo nextest run --locked -p looseleaf -p looseleaf-jni --no-fail-fast --status-level fail --final-status-level slow
    cargo test --locked -p looseleaf --doc
else
    cargo test --locked -p looseleaf -p looseleaf-jni
fi

step "rust: fuzzer regressions (fuzz/, a workspace of its own: docs/fuzzing.md)"
# In the main workspace's target directory: most dependencies are built already, the same way.
fuzz_target_dir="${CARGO_TARGET_DIR:-target}"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --manifest-path fuzz/Cargo.toml --locked --target-dir "$fuzz_target_dir" --all-targets \
    --features libfuzzer -- -D warnings
cargo test --manifest-path fuzz/Cargo.toml --locked --target-dir "$fuzz_target_dir"

# Fuzzing itself is its own command (scripts/fuzz.sh [SECONDS], docs/fuzzing.md): its
# instrumented build is most of what it costs, and a one-minute run finds little that the
# regression inputs and seeds above, read every way on every run, do not cover.

step "python: lints"
python3 -m ruff check python tests benches examples packaging
python3 -m ruff format --check python tests benches examples packaging

step "python: tests"
# Two workers, each test file on one of them: much of the suite waits (on JVMs, on injected stalls
# and timeouts of the fault tests), and a file's module fixtures (a Spark cluster, an S3 server)
# start once. Run `pytest tests` for one process.
python3 -m pytest tests -n 2 --dist loadfile
