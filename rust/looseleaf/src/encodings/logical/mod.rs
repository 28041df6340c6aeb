//! Logical encodings: how Arrow arrays map onto [`DataBlock`]s, one file per family of Arrow
//! types, and the two functions that dispatch between them ([`array_to_block`],
//! [`block_to_array`]). Types spread over several columns (structs, lists) are split and
//! reassembled by the writer and the field decoders; what they store in their own column
//! (validity, list offsets) is described here.
//!
//! The modules depend on [`primitive`] (flat types) and not on each other: [`dictionary`] holds
//! flat values, [`fixed_size_list`] fixed-width values or lists of them.

pub mod dictionary;
pub mod fixed_size_list;
pub mod list;
pub mod primitive;
pub mod views;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use self::primitive::{Split, split_nulls, with_nulls};
use super::DataBlock;
use crate::error::Result;

/// Turns an array of a type stored in one column of values (flat types, dictionaries,
/// fixed-size lists of fixed-width values) into a block.
///
/// # Errors
/// [`Error::Unsupported`](crate::Error::Unsupported) for other types.
pub fn array_to_block(array: &dyn Array) -> Result<DataBlock> {
    with_nulls(array, |array| match array.data_type() {
        DataType::FixedSizeList(..) => fixed_size_list::values_to_block(array.as_fixed_size_list()),
        DataType::Dictionary(..) => dictionary::dictionary_to_block(array),
        _ => primitive::values_to_block(array),
    })
}

/// Turns a decoded block into an array of `data_type` (a type stored in one column of values);
/// a dictionary-encoded block is materialised unless `data_type` is a dictionary.
///
/// # Errors
/// [`Error::Corrupt`](crate::Error::Corrupt) if the block does not fit the type or Arrow rejects
/// the data.
pub fn block_to_array(block: DataBlock, data_type: &DataType) -> Result<ArrayRef> {
    let (nulls, values) = match split_nulls(block, data_type)? {
        Split::Done(array) => return Ok(array),
        Split::Values(nulls, values) => (nulls, values),
    };
    match (data_type, values) {
        (DataType::Dictionary(key, value_type), values) => dictionary::array_from_block(values, nulls, key, value_type),
        (_, DataBlock::Dictionary { indices, dictionary }) => {
            dictionary::materialize(*indices, &dictionary, nulls, data_type)
        }
        (DataType::FixedSizeList(item, size), values) => fixed_size_list::array_from_block(values, nulls, item, *size),
        (_, values) => primitive::array_from_values(values, nulls, data_type),
    }
}
