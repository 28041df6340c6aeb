//! Random nested arrays ([`random_nested_array`]) of any type [`super::types`] draws, following
//! Arrow's validity rules at every depth, with the irregularities real arrays have: values under
//! null parents, null lists spanning items, list offsets starting past zero, slices of longer
//! arrays. Built with Arrow's checked constructors, so a generated array is always valid.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, GenericListArray, MapArray, OffsetSizeTrait, RecordBatch, RecordBatchOptions,
    StructArray, make_array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, SchemaRef};
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

use super::arrays::{ColumnGen, random_array, random_nulls};

/// A random table of `num_rows` rows of a (nested) schema.
pub fn random_nested_table(rng: &mut StdRng, schema: &SchemaRef, num_rows: usize) -> RecordBatch {
    let columns = schema.fields().iter().map(|field| random_nested_array(rng, field, num_rows, None)).collect();
    let options = RecordBatchOptions::new().with_row_count(Some(num_rows));
    RecordBatch::try_new_with_options(schema.clone(), columns, &options).unwrap()
}

/// A random array of `field`'s type with `len` rows, following Arrow's validity rules: a
/// nullable field has random nulls (none, a few, many, all); a non-nullable one may have nulls
/// only where `parent_nulls` (its struct's, or its fixed-size list's expanded) has them, and
/// sometimes does; list and map items have no parent nulls. Children under null parents hold
/// random values; null lists sometimes span items; list offsets sometimes start past zero; and
/// now and then the array is a slice of a longer one. Built with Arrow's checked constructors.
pub fn random_nested_array(rng: &mut StdRng, field: &Field, len: usize, parent_nulls: Option<&NullBuffer>) -> ArrayRef {
    if len > 0 && rng.random_bool(0.15) {
        let (before, after) = (rng.random_range(0..=3), rng.random_range(0..=3));
        // The padding rows have valid parents, so a non-nullable field has no nulls there.
        let padded = parent_nulls.map(|nulls| {
            let valid: Vec<bool> =
                (0..before).map(|_| true).chain(nulls.iter()).chain((0..after).map(|_| true)).collect();
            NullBuffer::from(valid)
        });
        let array = nested_array(rng, field, before + len + after, padded.as_ref());
        return array.slice(before, len);
    }
    nested_array(rng, field, len, parent_nulls)
}

fn nested_nulls(rng: &mut StdRng, field: &Field, len: usize, parent_nulls: Option<&NullBuffer>) -> Option<NullBuffer> {
    if matches!(field.data_type(), DataType::Null) {
        return None;
    }
    if field.is_nullable() {
        let probability = *[0.0, 0.0, 0.05, 0.3, 0.7, 1.0].choose(rng).unwrap();
        return random_nulls(rng, len, probability);
    }
    let parent = parent_nulls.filter(|_| rng.random_bool(0.6))?;
    // Arrow lets a non-nullable child hold nulls where its parent is null.
    let valid: Vec<bool> = (0..len).map(|i| parent.is_valid(i) || rng.random_bool(0.5)).collect();
    let nulls = NullBuffer::from(valid);
    (nulls.null_count() > 0).then_some(nulls)
}

/// The length of a random list: often empty or short, now and then long; a null list is
/// usually empty but may span items.
fn random_list_len(rng: &mut StdRng, null: bool) -> usize {
    if null && rng.random_bool(0.7) {
        return 0;
    }
    match rng.random_range(0..100) {
        0..30 => 0,
        30..85 => rng.random_range(1..=3),
        85..98 => rng.random_range(4..=8),
        _ => rng.random_range(9..=24),
    }
}

/// Random list offsets for `len` lists (starting past zero now and then) and the number of
/// items they need (with some unused items after the last list now and then).
fn random_list_offsets<O: OffsetSizeTrait>(
    rng: &mut StdRng,
    len: usize,
    nulls: Option<&NullBuffer>,
) -> (OffsetBuffer<O>, usize) {
    let mut offset = if rng.random_bool(0.2) { rng.random_range(1..=3) } else { 0 };
    let mut offsets = Vec::with_capacity(len + 1);
    offsets.push(O::usize_as(offset));
    for i in 0..len {
        offset += random_list_len(rng, nulls.is_some_and(|n| n.is_null(i)));
        offsets.push(O::usize_as(offset));
    }
    let total = offset + if rng.random_bool(0.2) { rng.random_range(1..=3) } else { 0 };
    (OffsetBuffer::new(ScalarBuffer::from(offsets)), total)
}

fn nested_array(rng: &mut StdRng, field: &Field, len: usize, parent_nulls: Option<&NullBuffer>) -> ArrayRef {
    let nulls = nested_nulls(rng, field, len, parent_nulls);
    match field.data_type() {
        DataType::Struct(fields) => {
            let children = fields.iter().map(|child| random_nested_array(rng, child, len, nulls.as_ref())).collect();
            Arc::new(StructArray::try_new_with_length(fields.clone(), children, nulls, len).unwrap())
        }
        DataType::List(item) => {
            let (offsets, total) = random_list_offsets::<i32>(rng, len, nulls.as_ref());
            let values = random_nested_array(rng, item, total, None);
            Arc::new(GenericListArray::<i32>::try_new(item.clone(), offsets, values, nulls).unwrap())
        }
        DataType::LargeList(item) => {
            let (offsets, total) = random_list_offsets::<i64>(rng, len, nulls.as_ref());
            let values = random_nested_array(rng, item, total, None);
            Arc::new(GenericListArray::<i64>::try_new(item.clone(), offsets, values, nulls).unwrap())
        }
        DataType::Map(entries, sorted) => {
            let DataType::Struct(pair) = entries.data_type() else {
                panic!("map entries of type {}", entries.data_type())
            };
            let (offsets, total) = random_list_offsets::<i32>(rng, len, nulls.as_ref());
            let keys = random_nested_array(rng, &pair[0], total, None);
            let values = random_nested_array(rng, &pair[1], total, None);
            let entries_array = StructArray::try_new(pair.clone(), vec![keys, values], None).unwrap();
            Arc::new(MapArray::try_new(entries.clone(), offsets, entries_array, nulls, *sorted).unwrap())
        }
        DataType::FixedSizeList(item, dimension) => {
            let d = *dimension as usize;
            let expanded = nulls.as_ref().map(|n| n.expand(d));
            let values = random_nested_array(rng, item, len * d, expanded.as_ref());
            Arc::new(FixedSizeListArray::try_new_with_length(item.clone(), *dimension, values, nulls, len).unwrap())
        }
        data_type => {
            let mode = ColumnGen::random(rng, false).mode;
            let array = random_array(rng, data_type, len, ColumnGen { null_probability: 0.0, mode });
            match nulls {
                Some(nulls) => make_array(array.to_data().into_builder().nulls(Some(nulls)).build().unwrap()),
                None => array,
            }
        }
    }
}
