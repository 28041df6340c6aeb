#!/usr/bin/env bash
# Installs the test dependencies and runs every test suite: lints, Rust tests, Python tests.
# This is the README's test command, and what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "install the package and its test dependencies"
python3 -m pip install --quiet --disable-pip-version-check ".[test]"

step "rust: format, lints, docs"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p looseleaf

step "rust: tests"
cargo test --locked -p looseleaf

step "python: lints"
python3 -m ruff check python tests
python3 -m ruff format --check python tests

step "python: tests"
python3 -m pytest tests
