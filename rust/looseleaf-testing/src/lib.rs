//! Test support for looseleaf: the one random-data generator ([`generate`]) and the one
//! in-memory range reader ([`MemoryReader`]), shared by the core crate's integration tests
//! (`rust/looseleaf/tests/`) and the fuzzer (`fuzz/`, whose seed corpus is drawn with the same
//! generator).
//!
//! # Why a crate
//!
//! Both users need the same code, and neither can reach the other's: the fuzzer is a crate of
//! its own workspace and cannot import `rust/looseleaf/tests/common`, and the library must not
//! carry test code (a `testing` module or feature of `looseleaf` would be compiled into, or
//! offered by, the published crate). A small unpublished crate that depends on `looseleaf`,
//! which `looseleaf` lists under `[dev-dependencies]` and the fuzzer under `[dependencies]`, is
//! what Lance does with `lance-testing`. Cargo allows the cycle through a dev-dependency: the
//! integration tests link one `looseleaf`, which this crate uses too. (Unit tests inside
//! `looseleaf/src` cannot use this crate: there, `looseleaf` is the crate being compiled, and
//! this crate's types would belong to a second copy of it.)
//!
//! # What it owns
//!
//! - [`generate`]: random types and schemas (flat and nested), random arrays and tables with
//!   Arrow-valid nulls at every depth, and values drawn in *shapes* that stress the encodings
//!   (integer extremes and runs, float specials, text and every-byte strings), dictionary
//!   arrays. Every draw comes from a seeded [`StdRng`](rand::rngs::StdRng) ([`generate::rng`]),
//!   so that a seed names a case and the fuzzer's seeds are the same on every run.
//! - [`MemoryReader`]: a whole file held in memory, read through
//!   [`looseleaf::io::RangeReader`].
//!
//! It deliberately owns nothing that checks a result (assertions, expected outputs, file
//! layouts parsed for a test): those stay beside the tests that rely on them, in
//! `rust/looseleaf/tests/common/`; and the fuzzer's harness stays in `fuzz/src/lib.rs`.

#![warn(missing_docs)]
// Test support: a generator asked for an impossible array is a bug of its caller, reported by
// panicking as the tests do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod generate;
mod memory;

pub use memory::MemoryReader;
/// The `rand` the generator draws with, for callers that draw values of their own from the
/// same [`StdRng`](rand::rngs::StdRng).
pub use rand;
