//! Filters: which rows a read returns, and what lets a read skip the others.
//!
//! - [`predicate`]: [`Predicate`], a filter as written (column paths, constants of any type).
//! - [`bind`]: [`BoundPredicate`], checked against a schema, constants in the columns' types.
//! - [`prune`]: stage one of a filtered read, zones of rows ruled out by their statistics.
//! - [`evaluate`]: stage two, the exact value of the predicate on decoded columns.
//! - [`range_test`]: comparisons of an integer-like column folded into one test of a range
//!   run on decoded arrays or, pushed into the decoders, on stored pages.
//! - [`partitions`]: a filter folded with one file's partition values (a dataset's files
//!   ruled out before they are opened), with the same evaluator.
//! - `json.rs`: the JSON form bindings hand predicates over in ([`Predicate::from_json`]).
//!
//! Stage three, reading the other columns of the matching rows (by scanning the surviving
//! zones or by a `take` of the rows, whichever the planner finds cheaper), is the filtered read
//! itself: `read/filtered_read.rs`.

pub mod bind;
pub mod evaluate;
mod json;
pub mod partitions;
pub mod predicate;
pub mod prune;
pub mod range_test;

pub use bind::BoundPredicate;
pub use json::typed_literal;
pub use partitions::partition_rules_out;
pub use predicate::{ColumnPath, CompareOp, NullMatching, Predicate};
pub use prune::{ColumnZones, ZoneCounts};
