//! Reading a file every way (full scan, projections by column and by nested path, row ranges,
//! scattered rows, `take`) and comparing each result with the table that was written: the round
//! trip the flat and nested property tests share.

use std::path::Path;

use arrow_array::RecordBatch;
use looseleaf::{FileReader, RowSelection};
use looseleaf_testing::generate::split_randomly;
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use super::assertions::{assert_batch_sizes, assert_batches_equal};
use super::expected::{expected_projection, random_paths, rows_of};
use super::files::write_file;
use super::reads::{nz, read_to_end, with_random_settings};
use super::run::runtime;

/// Reads `table`'s file every way and compares with `table`.
pub async fn check_all_reads(rng: &mut StdRng, reader: &FileReader, table: &RecordBatch, batch_size: usize) {
    let schema = table.schema();
    let num_rows = table.num_rows();
    assert_eq!(reader.schema(), &schema);
    assert_eq!(reader.num_rows(), num_rows as u64);

    // Full scan.
    let read = with_random_settings(rng, reader.read().with_batch_size(nz(batch_size)));
    let out = read_to_end(read).await.unwrap();
    assert_eq!(out.schema, schema);
    assert_batch_sizes(&out.batches, batch_size, num_rows, "full scan");
    assert_batches_equal(&out.concat(), table, "full scan");

    // Top-level projection: a random subset of the columns in a random order.
    let mut names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    names.shuffle(rng);
    names.truncate(rng.random_range(0..=names.len()));
    let indices: Vec<usize> = names.iter().map(|n| schema.index_of(n).unwrap()).collect();
    let projected = table.project(&indices).unwrap();
    let read = with_random_settings(rng, reader.read().with_columns(names.clone()).with_batch_size(nz(batch_size)));
    let out = read_to_end(read).await.unwrap();
    assert_batch_sizes(&out.batches, batch_size, num_rows, "projection");
    assert_batches_equal(&out.concat(), &projected, &format!("projection {names:?}"));

    // A row range, of everything and of the projection.
    let start = rng.random_range(0..=num_rows);
    let end = rng.random_range(start..=num_rows);
    let rows = start as u64..end as u64;
    let read = with_random_settings(rng, reader.read().with_row_range(rows.clone()).with_batch_size(nz(batch_size)));
    let out = read_to_end(read).await.unwrap();
    assert_batch_sizes(&out.batches, batch_size, end - start, "row range");
    assert_batches_equal(&out.concat(), &table.slice(start, end - start), &format!("rows {rows:?}"));
    let read = with_random_settings(
        rng,
        reader.read().with_row_range(rows.clone()).with_columns(names.clone()).with_batch_size(nz(batch_size)),
    );
    let out = read_to_end(read).await.unwrap();
    assert_batches_equal(&out.concat(), &projected.slice(start, end - start), &format!("rows {rows:?} of {names:?}"));

    // Nested paths, over everything and over the row range.
    if let Some(paths) = random_paths(rng, &schema) {
        let expected = expected_projection(table, &paths);
        let names: Vec<String> = paths.iter().map(|(p, _, _)| p.clone()).collect();
        let read = with_random_settings(rng, reader.read().with_columns(names.clone()).with_batch_size(nz(batch_size)));
        let out = read_to_end(read).await.unwrap();
        assert_eq!(out.schema, expected.schema(), "paths {names:?}");
        assert_batch_sizes(&out.batches, batch_size, num_rows, "nested paths");
        assert_batches_equal(&out.concat(), &expected, &format!("paths {names:?}"));
        let read = with_random_settings(
            rng,
            reader.read().with_columns(names.clone()).with_row_range(rows.clone()).with_batch_size(nz(batch_size)),
        );
        let out = read_to_end(read).await.unwrap();
        assert_batches_equal(
            &out.concat(),
            &expected.slice(start, end - start),
            &format!("rows {rows:?} of paths {names:?}"),
        );
    }

    // Scattered rows.
    if num_rows > 0 {
        let mut indices: Vec<u64> =
            (0..rng.random_range(1..=60)).map(|_| rng.random_range(0..num_rows as u64)).collect();
        indices.sort_unstable();
        indices.dedup();
        let read = with_random_settings(
            rng,
            reader.read().with_selection(RowSelection::from_sorted_indices(&indices)).with_batch_size(nz(batch_size)),
        );
        let out = read_to_end(read).await.unwrap();
        assert_batches_equal(&out.concat(), &rows_of(table, &indices), &format!("rows {indices:?}"));
    }

    // Take: unsorted indices with repeats, all columns or the projection.
    let mut indices: Vec<u64> = if num_rows == 0 {
        vec![]
    } else {
        (0..rng.random_range(1..=40)).map(|_| rng.random_range(0..num_rows as u64)).collect()
    };
    if let Some(first) = indices.first().copied() {
        indices.push(first);
        indices.shuffle(rng);
    }
    let taken = reader.take(&indices, None).await.unwrap();
    assert_batches_equal(&taken, &rows_of(table, &indices), &format!("take {indices:?}"));
    let taken = reader.take(&indices, Some(&names)).await.unwrap();
    assert_batches_equal(&taken, &rows_of(&projected, &indices), &format!("take {indices:?} of {names:?}"));
}

/// Writes the table `make_table` draws (from a generator seeded with `seed`) in input batches
/// of up to `max_input_batch` rows and pages of `page_size` bytes, then reads it every way
/// ([`check_all_reads`]) in batches of `batch_size` rows.
pub fn round_trip_case(
    seed: u64,
    num_rows: usize,
    page_size: u64,
    max_input_batch: usize,
    batch_size: usize,
    make_table: impl FnOnce(&mut StdRng, usize) -> RecordBatch,
) {
    let mut rng = super::rng(seed);
    let table = make_table(&mut rng, num_rows);
    let schema = table.schema();
    let inputs = split_randomly(&mut rng, &table, max_input_batch);
    let dir = tempfile::tempdir().unwrap();
    let path: &Path = &dir.path().join("round-trip.leaf");
    runtime().block_on(async {
        let finished = write_file(path, &schema, &inputs, page_size).await;
        assert_eq!(finished.num_rows, num_rows as u64);
        assert_eq!(finished.num_bytes, std::fs::metadata(path).unwrap().len());
        let reader = FileReader::open_path(path).await.unwrap();
        check_all_reads(&mut rng, &reader, &table, batch_size).await;
    });
}
