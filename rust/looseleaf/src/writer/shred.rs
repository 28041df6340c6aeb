//! Splitting the arrays of nested fields into the arrays of their columns (see
//! [`Layout`](crate::format::schema::Layout) for which field has which column).
//!
//! | field | its own column receives | its children receive |
//! |---|---|---|
//! | flat, fixed-size list of fixed-width values | the array itself | — |
//! | struct | validity as a `BooleanArray` (if nullable) | the struct's child arrays |
//! | list, large list, map | list lengths as an `Int64Array` (nulls where the list is null) | the items the lists span |
//! | other fixed-size list | validity as a `BooleanArray` (if nullable) | the child values |

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::DataType;

use crate::encodings::logical::list::lengths;
use crate::error::{Result, bail};
use crate::format::schema::{FieldColumns, Layout};

/// What a column stores, which decides how its pages are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// Values of the field's own type.
    Values,
    /// Validity bits of a struct or fixed-size list, as booleans.
    Validity,
    /// Lengths of lists, stored as offsets.
    ListLengths,
}

/// The dotted path, the kind and the type of the arrays received of every column of `fields`,
/// in column order.
pub fn column_kinds(fields: &[FieldColumns]) -> Result<Vec<(String, ColumnKind, DataType)>> {
    let columns = FieldColumns::column_paths(fields);
    let mut out = Vec::with_capacity(columns.len());
    for (position, (path, owner)) in columns.into_iter().enumerate() {
        if owner.column as usize != position {
            bail!(internal, "columns are not numbered depth first");
        }
        let data_type = owner.tree.field.data_type();
        let (kind, data_type) = match Layout::of(data_type)? {
            Layout::Leaf => (ColumnKind::Values, data_type.clone()),
            Layout::Struct | Layout::FixedSizeList => (ColumnKind::Validity, DataType::Boolean),
            Layout::List => (ColumnKind::ListLengths, DataType::Int64),
        };
        out.push((path, kind, data_type));
    }
    Ok(out)
}

/// Appends to `out` the array of each column of the field of `tree`, whose values are `array`.
pub fn shred(tree: &FieldColumns, array: &ArrayRef, out: &mut Vec<(u32, ArrayRef)>) -> Result<()> {
    let layout = Layout::of(tree.field.data_type())?;
    match layout {
        Layout::Leaf => {
            if let Some(column) = tree.column {
                out.push((column, array.clone()));
            }
        }
        Layout::Struct => {
            push_validity(tree, array, out);
            let fields = array.as_struct();
            for (child, values) in tree.children.iter().zip(fields.columns()) {
                shred(child, values, out)?;
            }
        }
        Layout::List => {
            let (lengths, items) = lengths(array.as_ref())?;
            if let Some(column) = tree.column {
                out.push((column, Arc::new(lengths)));
            }
            let values = match array.data_type() {
                DataType::List(_) => array.as_list::<i32>().values().clone(),
                DataType::LargeList(_) => array.as_list::<i64>().values().clone(),
                DataType::Map(_, _) => Arc::new(array.as_map().entries().clone()) as ArrayRef,
                other => bail!(internal, "list layout for a {other} array"),
            };
            let [item] = tree.children.as_slice() else { bail!(internal, "a list field without its item") };
            shred(item, &values.slice(items.start, items.end - items.start), out)?;
        }
        Layout::FixedSizeList => {
            push_validity(tree, array, out);
            let list = array.as_fixed_size_list();
            let [item] = tree.children.as_slice() else { bail!(internal, "a list field without its item") };
            let size = list.value_length().max(0) as usize;
            shred(item, &list.values().slice(0, list.len() * size), out)?;
        }
    }
    Ok(())
}

/// The validity of `array` as booleans, for the field's validity column (if it has one).
fn push_validity(tree: &FieldColumns, array: &ArrayRef, out: &mut Vec<(u32, ArrayRef)>) {
    if let Some(column) = tree.column {
        let bits = match array.nulls() {
            Some(nulls) => nulls.inner().clone(),
            None => BooleanBuffer::new_set(array.len()),
        };
        out.push((column, Arc::new(BooleanArray::new(bits, None))));
    }
}
