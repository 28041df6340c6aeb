//! Reading a file every way (full scan, projections by column and by nested path, row ranges,
//! scattered rows, `take`) and comparing each result with the table that was written: the round
//! trip the flat and nested property tests share.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use looseleaf::{FileReader, RowSelection};
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};

use super::{
    Narrowing, assert_batch_sizes, assert_batches_equal, narrow, nested_paths, nz, read_to_end, runtime,
    split_randomly, with_random_settings, write_file,
};

/// Rows `indices` of `table`, in that order, as the concatenation of one-row slices (independent
/// of `arrow_select::take`, which the reader's `take` uses).
pub fn rows_of(table: &RecordBatch, indices: &[u64]) -> RecordBatch {
    let slices: Vec<RecordBatch> = indices.iter().map(|i| table.slice(*i as usize, 1)).collect();
    arrow_select::concat::concat_batches(&table.schema(), &slices).unwrap()
}

/// A projection by paths: each path is a top-level column and a chain of child indices (empty
/// for the whole column).
pub type PathSelection = Vec<(String, usize, Vec<usize>)>;

/// What a projection of `paths` returns, built from `table`: fields in the order first named;
/// paths into one field merge into one narrowed field (children in the file's order); a whole
/// field is returned as often as it is named; a path into a field already named whole adds
/// nothing.
pub fn expected_projection(table: &RecordBatch, paths: &PathSelection) -> RecordBatch {
    let mut outputs: Vec<(usize, Narrowing)> = Vec::new();
    for (_, top, chain) in paths {
        if chain.is_empty() {
            outputs.push((*top, Narrowing::All));
            continue;
        }
        if let Some(index) = outputs.iter().position(|(t, n)| t == top && *n != Narrowing::All) {
            outputs[index].1.merge(chain);
        } else if !outputs.iter().any(|(t, _)| t == top) {
            let mut narrowing = Narrowing::Children(Default::default());
            narrowing.merge(chain);
            outputs.push((*top, narrowing));
        }
    }
    let schema = table.schema();
    let (fields, columns): (Vec<_>, Vec<ArrayRef>) =
        outputs.iter().map(|(top, n)| narrow(&schema.fields()[*top], table.column(*top), n)).unzip();
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(table.num_rows()));
    RecordBatch::try_new_with_options(schema, columns, &options).unwrap()
}

/// Random paths into the columns of `schema`: one to three nested paths, sometimes with a whole
/// column; `None` when the schema has no nested path.
pub fn random_paths(rng: &mut StdRng, schema: &SchemaRef) -> Option<PathSelection> {
    let all: PathSelection = schema
        .fields()
        .iter()
        .enumerate()
        .flat_map(|(top, field)| {
            nested_paths(rng, field, field.name()).into_iter().map(move |(path, chain)| (path, top, chain))
        })
        .collect();
    if all.is_empty() {
        return None;
    }
    let mut paths: PathSelection = (0..rng.random_range(1..=3)).map(|_| all.choose(rng).unwrap().clone()).collect();
    if rng.random_bool(0.3) {
        let top = rng.random_range(0..schema.fields().len());
        paths.insert(rng.random_range(0..=paths.len()), (schema.field(top).name().clone(), top, vec![]));
    }
    Some(paths)
}

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
