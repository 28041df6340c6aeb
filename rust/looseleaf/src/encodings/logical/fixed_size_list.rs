//! Fixed-size lists of fixed-width values (embeddings, coordinates), stored in one column: to
//! and from [`DataBlock::FixedSizeList`], or the wider [`DataBlock::FixedWidth`] values that
//! `plain` pages of lists without nulls decode to (whose buffer becomes the child's, without a
//! copy).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, FieldRef};

use super::primitive::{array_to_block, block_to_array};
use crate::encodings::{DataBlock, FixedWidthBlock};
use crate::error::{Result, bail, ensure};
use crate::format::schema::fixed_width_bits;

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
    Ok(DataBlock::FixedSizeList { dimension, values: Box::new(array_to_block(values.as_ref())?) })
}

/// Width in bits of one row of a fixed-width list (or value) type.
pub fn row_bits(data_type: &DataType) -> Option<u64> {
    match data_type {
        DataType::FixedSizeList(item, size) => row_bits(item.data_type()).map(|b| b * (*size).max(0) as u64),
        other => fixed_width_bits(other),
    }
}

/// Builds a fixed-size list array of `item` × `size` from the decoded `values` block.
pub fn array_from_block(values: DataBlock, nulls: Option<NullBuffer>, item: &FieldRef, size: i32) -> Result<ArrayRef> {
    let dimension = size as u64;
    let child = match values {
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
    let values = block_to_array(child, item.data_type())?;
    Ok(Arc::new(FixedSizeListArray::try_new(item.clone(), size, values, nulls)?))
}
