//! What a read should return, computed from the arrays that were written and independently of
//! the reader: rows picked one by one ([`rows_of`]), and projections by nested path
//! ([`expected_projection`], built by narrowing the original arrays with [`narrow`]). Also the
//! random nested paths ([`random_paths`]) the projection tests ask for.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray, GenericListArray, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use looseleaf_testing::generate::is_fixed_width;
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

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

/// What a projection keeps of a field: all of it, or some children (by index), each narrowed.
#[derive(Debug, Clone, PartialEq)]
pub enum Narrowing {
    /// The whole field.
    All,
    /// Some children, in the file's order.
    Children(std::collections::BTreeMap<usize, Narrowing>),
}

impl Narrowing {
    /// Adds the child chain of one path (an empty chain selects the whole field).
    pub fn merge(&mut self, chain: &[usize]) {
        let Narrowing::Children(children) = self else { return };
        match chain.split_first() {
            None => *self = Narrowing::All,
            Some((first, rest)) => {
                children.entry(*first).or_insert_with(|| Narrowing::Children(Default::default())).merge(rest)
            }
        }
    }
}

/// The dotted paths into `field` a projection may name (through struct children and the items
/// of lists, fixed-size lists and maps, never into values stored in one column), each with the
/// chain of child indices it selects. `name` is the field's own path. Items are named (`l.item.x`)
/// or skipped (`l.x`) at random.
pub fn nested_paths(rng: &mut StdRng, field: &Field, name: &str) -> Vec<(String, Vec<usize>)> {
    let mut out = Vec::new();
    collect_paths(rng, field, name, &[], &mut out);
    out
}

fn collect_paths(rng: &mut StdRng, field: &Field, path: &str, chain: &[usize], out: &mut Vec<(String, Vec<usize>)>) {
    let data_type = field.data_type();
    if is_fixed_width(data_type) {
        return;
    }
    let children: Vec<FieldRef> = match data_type {
        DataType::Struct(fields) => fields.iter().cloned().collect(),
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::FixedSizeList(item, _)
        | DataType::Map(item, _) => {
            vec![item.clone()]
        }
        _ => return,
    };
    let through_items = !matches!(data_type, DataType::Struct(_));
    for (index, child) in children.iter().enumerate() {
        let mut child_chain = chain.to_vec();
        child_chain.push(index);
        let named = format!("{path}.{}", child.name());
        out.push((named.clone(), child_chain.clone()));
        // `l.x` is `l.item.x`: the item's own name may be skipped.
        let child_path = if through_items && rng.random_bool(0.5) { path.to_string() } else { named };
        collect_paths(rng, child, &child_path, &child_chain, out);
    }
}

/// `array` (of `field`) narrowed to `narrowing`: what a projection of those paths returns,
/// built from the original array. Maps are returned whole (their entries are always a key and
/// a value).
pub fn narrow(field: &FieldRef, array: &ArrayRef, narrowing: &Narrowing) -> (FieldRef, ArrayRef) {
    let Narrowing::Children(chosen) = narrowing else { return (field.clone(), array.clone()) };
    let rebuild = |data_type: DataType| {
        Arc::new(Field::new(field.name(), data_type, field.is_nullable()).with_metadata(field.metadata().clone()))
    };
    match field.data_type() {
        DataType::Struct(fields) => {
            let array = array.as_any().downcast_ref::<StructArray>().unwrap();
            let (children, columns): (Vec<FieldRef>, Vec<ArrayRef>) =
                chosen.iter().map(|(i, sub)| narrow(&fields[*i], array.column(*i), sub)).unzip();
            let fields = Fields::from(children);
            let out =
                StructArray::try_new_with_length(fields.clone(), columns, array.nulls().cloned(), array.len()).unwrap();
            (rebuild(DataType::Struct(fields)), Arc::new(out))
        }
        DataType::List(item) => {
            let array = array.as_any().downcast_ref::<GenericListArray<i32>>().unwrap();
            let (item, values) = narrow(item, array.values(), &chosen[&0]);
            let out =
                GenericListArray::<i32>::try_new(item.clone(), array.offsets().clone(), values, array.nulls().cloned())
                    .unwrap();
            (rebuild(DataType::List(item)), Arc::new(out))
        }
        DataType::LargeList(item) => {
            let array = array.as_any().downcast_ref::<GenericListArray<i64>>().unwrap();
            let (item, values) = narrow(item, array.values(), &chosen[&0]);
            let out =
                GenericListArray::<i64>::try_new(item.clone(), array.offsets().clone(), values, array.nulls().cloned())
                    .unwrap();
            (rebuild(DataType::LargeList(item)), Arc::new(out))
        }
        DataType::FixedSizeList(item, size) => {
            let array = array.as_any().downcast_ref::<FixedSizeListArray>().unwrap();
            let (item, values) = narrow(item, array.values(), &chosen[&0]);
            let out = FixedSizeListArray::try_new_with_length(
                item.clone(),
                *size,
                values,
                array.nulls().cloned(),
                array.len(),
            )
            .unwrap();
            (rebuild(DataType::FixedSizeList(item, *size)), Arc::new(out))
        }
        DataType::Map(..) => (field.clone(), array.clone()),
        other => panic!("cannot narrow a {other}"),
    }
}
