//! Comparing what a read returned with what it should return: batches and arrays (naming the
//! first differing column and row, not dumping both), and the sizes of a read's batches.

use arrow_array::{Array, ArrayRef, RecordBatch};

/// Checks that `batches` are all `batch_size` rows except the last, which holds the rest, and
/// that they hold `total` rows.
pub fn assert_batch_sizes(batches: &[RecordBatch], batch_size: usize, total: usize, what: &str) {
    let sizes: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
    let expected_count = total.div_ceil(batch_size.max(1));
    assert_eq!(
        sizes.len(),
        expected_count,
        "{what}: batch sizes {sizes:?} for {total} rows in batches of {batch_size}"
    );
    for (i, size) in sizes.iter().enumerate() {
        let expected = if i + 1 == expected_count { total - i * batch_size } else { batch_size };
        assert_eq!(*size, expected, "{what}: batch {i} of {sizes:?} (batch size {batch_size}, {total} rows)");
    }
}

/// Compares a batch read back with the expected one, naming the first differing column and row.
pub fn assert_batches_equal(actual: &RecordBatch, expected: &RecordBatch, what: &str) {
    assert_eq!(actual.schema(), expected.schema(), "{what}: schemas differ");
    assert_eq!(actual.num_rows(), expected.num_rows(), "{what}: row counts differ");
    for (i, field) in expected.schema().fields().iter().enumerate() {
        assert_arrays_equal(
            actual.column(i),
            expected.column(i),
            &format!("{what}, column {:?} ({})", field.name(), field.data_type()),
        );
    }
}

/// Compares two arrays, naming the first differing row.
pub fn assert_arrays_equal(actual: &ArrayRef, expected: &ArrayRef, what: &str) {
    if actual.as_ref() == expected.as_ref() {
        return;
    }
    assert_eq!(actual.data_type(), expected.data_type(), "{what}: types differ");
    assert_eq!(actual.len(), expected.len(), "{what}: lengths differ");
    let row = (0..expected.len())
        .find(|i| actual.slice(*i, 1).as_ref() != expected.slice(*i, 1).as_ref())
        .unwrap_or(usize::MAX);
    if row == usize::MAX {
        panic!("{what}: arrays differ but no single row does (actual {actual:?}, expected {expected:?})");
    }
    panic!("{what}: row {row} differs: got {:?}, expected {:?}", actual.slice(row, 1), expected.slice(row, 1));
}
