//! Projections: which fields (or parts of nested fields) a read returns.
//!
//! A projection is a list of paths. A top-level field name selects the whole field (named twice,
//! it is returned twice). A dotted path selects part of a struct: `meta.score` returns the field
//! `meta` as a struct holding only `score`, reading only that child's columns (plus `meta`'s
//! validity). Paths may continue through the items of lists and fixed-size lists of structs
//! (`events.kind` returns `events` as a list of structs holding only `kind`). Several paths into
//! the same field merge, children keeping the file's order. A name that contains dots is matched
//! whole before it is split.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal64Type, Decimal128Type};
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Field, FieldRef};

use crate::error::{Error, Result, bail};
use crate::format::schema::{FieldColumns, Layout};

/// What is selected of one field.
#[derive(Debug, Clone, PartialEq)]
enum Selection {
    /// The whole field.
    All,
    /// Some children, by index.
    Children(BTreeMap<usize, Selection>),
}

impl Selection {
    fn merge(&mut self, chain: &[usize]) {
        let Selection::Children(children) = self else { return };
        match chain.split_first() {
            None => *self = Selection::All,
            Some((first, rest)) => {
                children.entry(*first).or_insert_with(|| Selection::Children(BTreeMap::new())).merge(rest)
            }
        }
    }
}

/// The column trees of the fields selected by `paths`, in the order first named.
///
/// # Errors
/// [`Error::InvalidArgument`] for a path that names no field, or reaches inside a field stored
/// in one column.
pub fn project(fields: &[FieldColumns], paths: &[String]) -> Result<Vec<FieldColumns>> {
    let mut outputs: Vec<(usize, Selection)> = Vec::new();
    for path in paths {
        let Some((top, chain)) = resolve(fields, path) else {
            let known: Vec<&str> = fields.iter().map(|f| f.field.name().as_str()).collect();
            return Err(Error::invalid_argument(format!(
                "unknown column {path:?} (the columns are: {}; nested fields are named parent.child)",
                known.join(", ")
            )));
        };
        if chain.is_empty() {
            outputs.push((top, Selection::All));
            continue;
        }
        let narrowed = outputs.iter().position(|(t, s)| *t == top && *s != Selection::All);
        match narrowed {
            Some(index) => outputs[index].1.merge(&chain),
            None if outputs.iter().any(|(t, _)| *t == top) => {}
            None => {
                let mut selection = Selection::Children(BTreeMap::new());
                selection.merge(&chain);
                outputs.push((top, selection));
            }
        }
    }
    outputs.into_iter().map(|(top, selection)| prune(&fields[top], &selection, fields[top].field.name())).collect()
}

/// The top-level field and the chain of child indices a path names.
fn resolve(fields: &[FieldColumns], path: &str) -> Option<(usize, Vec<usize>)> {
    if let Some(top) = fields.iter().position(|f| f.field.name() == path) {
        return Some((top, vec![]));
    }
    fields.iter().enumerate().find_map(|(top, tree)| {
        let rest = path.strip_prefix(tree.field.name().as_str())?.strip_prefix('.')?;
        resolve_in(tree, rest).map(|chain| (top, chain))
    })
}

fn resolve_in(tree: &FieldColumns, path: &str) -> Option<Vec<usize>> {
    for (index, child) in tree.children.iter().enumerate() {
        let name = child.field.name().as_str();
        if name == path {
            return Some(vec![index]);
        }
        if let Some(rest) = path.strip_prefix(name).and_then(|r| r.strip_prefix('.'))
            && let Some(mut chain) = resolve_in(child, rest)
        {
            chain.insert(0, index);
            return Some(chain);
        }
    }
    // Through the items of a list: `events.kind` means the `kind` of each item.
    let list_like = matches!(Layout::of(tree.field.data_type()), Ok(Layout::List | Layout::FixedSizeList));
    if let (true, [item]) = (list_like, tree.children.as_slice()) {
        let mut chain = resolve_in(item, path)?;
        chain.insert(0, 0);
        return Some(chain);
    }
    None
}

/// The tree of `tree` keeping only `selection`, with its Arrow type narrowed to match.
fn prune(tree: &FieldColumns, selection: &Selection, path: &str) -> Result<FieldColumns> {
    let Selection::Children(chosen) = selection else { return Ok(tree.clone()) };
    let field = &tree.field;
    let layout = Layout::of(field.data_type())?;
    if layout == Layout::Leaf {
        bail!(invalid, "cannot select part of {path:?}: its {} values are stored together", field.data_type());
    }
    if let DataType::Map(..) = field.data_type() {
        // A map's entries are always a key and a value.
        return Ok(tree.clone());
    }
    let children = chosen
        .iter()
        .map(|(index, sub)| {
            let child = &tree.children[*index];
            prune(child, sub, &format!("{path}.{}", child.field.name()))
        })
        .collect::<Result<Vec<_>>>()?;
    let child_fields: Vec<FieldRef> = children.iter().map(|c| c.field.clone()).collect();
    let data_type = match (field.data_type(), child_fields.as_slice()) {
        (DataType::Struct(_), _) => DataType::Struct(child_fields.clone().into()),
        (DataType::List(_), [item]) => DataType::List(item.clone()),
        (DataType::LargeList(_), [item]) => DataType::LargeList(item.clone()),
        (DataType::FixedSizeList(_, n), [item]) => DataType::FixedSizeList(item.clone(), *n),
        (other, _) => bail!(internal, "cannot narrow a {other}"),
    };
    let narrowed = Field::new(field.name(), data_type, field.is_nullable()).with_metadata(field.metadata().clone());
    Ok(FieldColumns { field: Arc::new(narrowed), column: tree.column, children })
}

/// `tree` with its strings and binaries, at any depth, read as views. Dictionaries keep their
/// value type (a dictionary column is already without copies of its values).
pub(crate) fn with_string_views(tree: &mut FieldColumns) {
    fn view_type(data_type: &DataType) -> DataType {
        match data_type {
            DataType::Utf8 | DataType::LargeUtf8 => DataType::Utf8View,
            DataType::Binary | DataType::LargeBinary => DataType::BinaryView,
            DataType::List(item) => DataType::List(view_field(item)),
            DataType::LargeList(item) => DataType::LargeList(view_field(item)),
            DataType::FixedSizeList(item, size) => DataType::FixedSizeList(view_field(item), *size),
            DataType::Map(entries, sorted) => DataType::Map(view_field(entries), *sorted),
            DataType::Struct(fields) => DataType::Struct(fields.iter().map(view_field).collect()),
            other => other.clone(),
        }
    }
    fn view_field(field: &FieldRef) -> FieldRef {
        Arc::new(field.as_ref().clone().with_data_type(view_type(field.data_type())))
    }
    tree.field = view_field(&tree.field);
    tree.children.iter_mut().for_each(with_string_views);
}

/// `tree` with its decimals of up to 18 digits read at their native width, `Decimal64` (its
/// struct children's too; not inside lists, whose items are decoded elsewhere).
pub(crate) fn with_decimal64(tree: &mut FieldColumns) {
    if let Some(narrow) = decimal64_type(tree.field.data_type()) {
        tree.field = Arc::new(tree.field.as_ref().clone().with_data_type(narrow));
        tree.children.iter_mut().for_each(with_decimal64);
    }
}

/// The type a column of `data_type` is read as with decimals at their native width, if it
/// differs: `Decimal128` of up to 18 digits as `Decimal64`, through structs.
pub(crate) fn decimal64_type(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Decimal128(precision, scale) if *precision <= arrow_schema::DECIMAL64_MAX_PRECISION => {
            Some(DataType::Decimal64(*precision, *scale))
        }
        DataType::Struct(fields) => {
            let narrowed: Vec<Option<DataType>> = fields.iter().map(|f| decimal64_type(f.data_type())).collect();
            narrowed.iter().any(Option::is_some).then(|| {
                DataType::Struct(
                    fields
                        .iter()
                        .zip(narrowed)
                        .map(|(field, narrow)| match narrow {
                            Some(narrow) => Arc::new(field.as_ref().clone().with_data_type(narrow)),
                            None => field.clone(),
                        })
                        .collect(),
                )
            })
        }
        _ => None,
    }
}

/// `array`, read as [`decimal64_type`] says, back in `data_type`, the type it stands for.
///
/// # Errors
/// Arrow's, if the arrays do not fit together (they do when `array` was read so).
pub(crate) fn widen_decimal64(array: &ArrayRef, data_type: &DataType) -> Result<ArrayRef> {
    Ok(match (array.data_type(), data_type) {
        (from, to) if from == to => array.clone(),
        (DataType::Decimal64(..), DataType::Decimal128(..)) => {
            let narrow = array.as_primitive::<Decimal64Type>();
            Arc::new(narrow.unary::<_, Decimal128Type>(i128::from).with_data_type(data_type.clone()))
        }
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let parent = array.as_struct();
            let columns = parent
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(column, field)| widen_decimal64(column, field.data_type()))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(fields.clone(), columns, parent.nulls().cloned())?)
        }
        (from, to) => bail!(internal, "a {from} column read for a {to} one"),
    })
}

/// `field` with its flat type read as a dictionary with the narrowest signed keys (the Arrow
/// convention) that index `max_values` values.
pub(crate) fn as_dictionary(field: &FieldRef, max_values: u64) -> Result<FieldRef> {
    let key = if max_values <= i8::MAX as u64 + 1 {
        DataType::Int8
    } else if max_values <= i16::MAX as u64 + 1 {
        DataType::Int16
    } else {
        DataType::Int32
    };
    let data_type = field.data_type();
    let dictionary = match data_type {
        DataType::Dictionary(..) => return Ok(field.clone()),
        value
            if Layout::of(value).ok() == Some(Layout::Leaf)
                && !matches!(value, DataType::FixedSizeList(..) | DataType::Null) =>
        {
            DataType::Dictionary(Box::new(key), Box::new(value.clone()))
        }
        other => bail!(
            invalid,
            "dictionary_columns: column {:?} of type {other} cannot be read as a dictionary",
            field.name()
        ),
    };
    Ok(Arc::new(field.as_ref().clone().with_data_type(dictionary)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::assign_columns;
    use arrow_schema::Schema;

    fn fields() -> Vec<FieldColumns> {
        let meta = DataType::Struct(
            vec![
                Field::new("score", DataType::Float64, true),
                Field::new("name", DataType::Utf8, true),
                Field::new("inner", DataType::Struct(vec![Field::new("x", DataType::Int8, true)].into()), true),
            ]
            .into(),
        );
        let events = DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(
                vec![Field::new("kind", DataType::Utf8, true), Field::new("at", DataType::Int64, true)].into(),
            ),
            true,
        )));
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("meta", meta, true),
            Field::new("events", events, true),
            Field::new("dotted.name", DataType::Int8, true),
        ]);
        assign_columns(&schema).unwrap()
    }

    fn names(trees: &[FieldColumns]) -> Vec<String> {
        trees.iter().map(|t| format!("{}:{}", t.field.name(), t.field.data_type())).collect()
    }

    #[test]
    fn nested_paths_narrow_structs_and_list_items() {
        let fields = fields();
        let p = |paths: &[&str]| project(&fields, &paths.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let out = p(&["meta.name", "id", "meta.score"]).unwrap();
        assert_eq!(out[0].field.name(), "meta");
        let DataType::Struct(children) = out[0].field.data_type() else { panic!() };
        assert_eq!(children.iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), vec!["score", "name"]);
        assert_eq!(out[0].columns(), vec![fields[1].column.unwrap(), 2, 3]);
        assert_eq!(out[1].field.name(), "id");

        let out = p(&["events.kind"]).unwrap();
        assert_eq!(names(&out), names(&p(&["events.item.kind"]).unwrap()));
        assert_eq!(out[0].columns().len(), 3); // offsets, item validity, kind

        assert_eq!(p(&["meta.inner.x"]).unwrap()[0].columns().len(), 3);
        assert_eq!(p(&["meta", "meta.score"]).unwrap(), p(&["meta"]).unwrap());
        assert_eq!(p(&["dotted.name"]).unwrap()[0].field.name(), "dotted.name");
        assert_eq!(p(&["id", "id"]).unwrap().len(), 2);
        assert!(p(&["meta.nope"]).is_err());
        assert!(p(&["nope"]).is_err());
    }
}
