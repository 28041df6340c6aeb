//! Helpers shared by the integration tests, one topic a module:
//!
//! - [`run`]: the runtime of synchronous tests, and the deadline that tells a hang;
//! - [`files`]: writing tables to files, and watching files on disk;
//! - [`reads`]: running a read to the end, random read settings;
//! - [`expected`]: what a read should return, computed from the written arrays;
//! - [`assertions`]: comparing batches and arrays, naming the first difference;
//! - [`round_trip`]: reading a file every way and comparing each result with the table;
//! - [`readers`]: range readers that record or delay the requests of a read;
//! - [`layout`]: a file's layout parsed with the format module alone;
//! - [`rewrite`]: hostile files with valid checksums (metadata edited and re-encoded);
//! - [`alloc`]: the allocator of the binaries that watch memory.
//!
//! Random data (types, schemas, arrays, shaped values) and the in-memory range reader live in
//! the `looseleaf-testing` crate (`rust/looseleaf-testing`), shared with the fuzzer; the tests
//! import them from there.
//!
//! Every test compares what the reader returns with the arrays that were written (or with
//! `arrow_select` applied to them), never with another output of the reader.

// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]
// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod alloc;
pub mod assertions;
pub mod expected;
pub mod files;
pub mod layout;
pub mod readers;
pub mod reads;
pub mod rewrite;
pub mod round_trip;
pub mod run;

// What nearly every test calls (each binary calls some of them).
#[allow(unused_imports)]
pub use {looseleaf_testing::generate::rng, reads::nz, run::runtime};
