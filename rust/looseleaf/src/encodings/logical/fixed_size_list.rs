//! Fixed-size lists of fixed-width values (embeddings, coordinates), stored in one column: to
//! and from [`DataBlock::FixedSizeList`], or the wider [`DataBlock::FixedWidth`] values that
//! `plain` pages of lists without nulls decode to (whose buffer becomes the child's, without a
//! copy).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, FixedSizeListArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, FieldRef};

use super::primitive::{self, Split, split_nulls, with_nulls};
use crate::encodings::{DataBlock, FixedWidthBlock};
use crate::error::{Result, bail, ensure};
use crate::format::schema::row_bits;

/// The values of a fixed-size list array (without its own validity) as a block.
pub fn values_to_block(array: &FixedSizeListArray) -> Result<DataBlock> {
    let dimension = array.value_length() as u64;
    let values = array.values();
    ensure!(
        values.len() as u64 == array.len() as u64 * dimension,
        internal,
        "fixed-size list array has {} values for {} rows of {dimension}",
        values.len(),
        array.len()
    );
    Ok(DataBlock::FixedSizeList { dimension, values: Box::new(with_nulls(values.as_ref(), item_values_to_block)?) })
}

/// The values of an item array: fixed-width values, or fixed-size lists of them.
fn item_values_to_block(items: &dyn Array) -> Result<DataBlock> {
    match items.data_type() {
        DataType::FixedSizeList(..) => values_to_block(items.as_fixed_size_list()),
        _ => primitive::values_to_block(items),
    }
}

/// Builds a fixed-size list array of `item` × `size` from the decoded `values` block.
pub fn array_from_block(values: DataBlock, nulls: Option<NullBuffer>, item: &FieldRef, size: i32) -> Result<ArrayRef> {
    let dimension = size as u64;
    let child = match values {
        // Items stored as a dictionary (or run-length) come back as their values.
        DataBlock::FixedSizeList { dimension: d, values } if d == dimension && values.dictionary().is_some() => {
            values.materialize()?
        }
        DataBlock::FixedSizeList { dimension: d, values } if d == dimension => *values,
        // A plain page of `dimension`-times wider values: the same bytes are the child values.
        DataBlock::FixedWidth(block) => {
            let Some(child_bits) = row_bits(item.data_type()) else {
                bail!(corrupt, "fixed-size list of {} stored as fixed-width values", item.data_type())
            };
            ensure!(
                block.bits_per_value == child_bits * dimension,
                corrupt,
                "fixed-size list rows of {} bits where {} were expected",
                block.bits_per_value,
                child_bits * dimension
            );
            DataBlock::FixedWidth(FixedWidthBlock {
                data: block.data,
                bits_per_value: child_bits,
                num_values: block.num_values * dimension,
            })
        }
        _ => bail!(corrupt, "a page of a fixed-size list column decodes to an incompatible block"),
    };
    let values = match (split_nulls(child, item.data_type())?, item.data_type()) {
        (Split::Done(array), _) => array,
        (Split::Values(item_nulls, values), DataType::FixedSizeList(inner, inner_size)) => {
            array_from_block(values, item_nulls, inner, *inner_size)?
        }
        (Split::Values(item_nulls, values), item_type) => primitive::array_from_values(values, item_nulls, item_type)?,
    };
    Ok(Arc::new(FixedSizeListArray::try_new(item.clone(), size, values, nulls)?))
}
