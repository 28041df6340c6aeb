//! The one random-data generator of looseleaf's tests and fuzzer.
//!
//! Every function draws from a [`StdRng`] the caller passes in, seeded with [`rng`]: a seed
//! names a case (a failing test prints it, and running it again draws the same data), and the
//! fuzzer's seed corpus is the same on every run. Nothing here reads the clock or the
//! operating system's randomness.
//!
//! - [`types`]: flat and nested types and schemas;
//! - [`arrays`]: flat arrays of any type, in coarse [`ValueMode`]s, tables, input batches;
//! - [`nested`]: nested arrays with Arrow-valid nulls at every depth;
//! - [`shapes`]: values in the shapes the encodings are built for and their edge cases;
//! - [`dictionaries`]: dictionary arrays.
//!
//! Everything is re-exported here: callers import from `generate` and need not know which
//! file draws what.
//!
//! What is generated is checked against itself only by Arrow's constructors (a generated array
//! is valid); what a test expects of a read is computed by the test from the arrays it wrote.

use rand::SeedableRng;
pub use rand::rngs::StdRng;

pub mod arrays;
pub mod dictionaries;
pub mod nested;
pub mod shapes;
pub mod types;

pub use arrays::{ColumnGen, ValueMode, fixed_width_array, random_array, random_nulls, random_table, split_randomly};
pub use dictionaries::{dictionary_array, dictionary_values};
pub use nested::{random_nested_array, random_nested_table};
pub use shapes::{
    BYTES_TYPES, BytesShape, FloatShape, INT_SHAPES, IntShape, WORDS, bool_array, bytes_array, bytes_values,
    encoded_types, float_array, int_array, int_bounds, int_layout, int_types, int_values, is_utf8, other_fixed_types,
    random_validity, shaped_array, special_floats, text,
};
pub use types::{
    NestedLimits, all_flat_types, is_fixed_width, random_data_type, random_fixed_width_type, random_nested_field,
    random_nested_schema, random_nested_type, random_schema,
};

/// A deterministic random generator: the same `seed` draws the same values (for one version of
/// `rand`, which the lock files pin).
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}
