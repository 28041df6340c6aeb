//! Dictionary arrays: written as their indices and dictionary without re-hashing, and read back
//! as Arrow `DictionaryArray`s without materialising the values — from dictionary-encoded pages
//! directly, or by hashing values of pages stored otherwise.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, make_array};
use arrow_buffer::{Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use super::primitive::{array_to_block, block_to_array};
use crate::encodings::physical::integers::{read_int, write_int};
use crate::encodings::{DataBlock, FixedWidthBlock, VariableWidthBlock};
use crate::error::{Error, Result, bail, ensure};

/// The values of a dictionary array (without its validity) as a dictionary block: its keys as
/// 32-bit indices and its dictionary values.
pub fn dictionary_to_block(array: &dyn Array) -> Result<DataBlock> {
    let dictionary = array.as_any_dictionary();
    let keys = dictionary.normalized_keys();
    let mut indices = MutableBuffer::with_capacity(keys.len() * 4);
    let size = dictionary.values().len();
    for (i, key) in keys.iter().enumerate() {
        // Null rows may carry any key: store 0 for them.
        let key = if array.is_valid(i) { *key } else { 0 };
        ensure!(key < size.max(1), internal, "dictionary key {key} out of its {size} values");
        indices.extend_from_slice(
            &u32::try_from(key)
                .map_err(|_| Error::Unsupported("dictionaries of more than 2^32 values".into()))?
                .to_le_bytes(),
        );
    }
    let values = match array_to_block(dictionary.values().as_ref())? {
        // Rows pointing at null dictionary values are null rows (their validity says so);
        // the dictionary block itself has no nulls.
        DataBlock::Nullable { values, .. } => *values,
        // Some row is valid (the caller writes arrays of nulls only as all-null pages), so some
        // dictionary value is too.
        DataBlock::AllNull { .. } => bail!(internal, "a dictionary of nulls only behind valid rows"),
        other => other,
    };
    Ok(DataBlock::Dictionary {
        indices: Box::new(DataBlock::FixedWidth(FixedWidthBlock {
            data: indices.into(),
            bits_per_value: 32,
            num_values: keys.len() as u64,
        })),
        dictionary: Arc::new(values),
    })
}

/// Builds a `DictionaryArray` of `key` indices into `value_type` values from `values`: the
/// indices and dictionary of a dictionary block, or a block of plain values encoded here.
pub fn array_from_block(
    values: DataBlock,
    nulls: Option<NullBuffer>,
    key: &DataType,
    value_type: &DataType,
) -> Result<ArrayRef> {
    let (indices, dictionary) = match values {
        DataBlock::Dictionary { indices, dictionary } => (*indices, dictionary),
        other => {
            let (indices, dictionary) = hash_encode(other)?;
            (indices, Arc::new(dictionary))
        }
    };
    let DataBlock::FixedWidth(indices) = indices else { bail!(corrupt, "dictionary indices are not integers") };
    let index_width = (indices.bits_per_value / 8) as usize;
    let Some(key_width) = key.primitive_width() else { bail!(unsupported, "dictionary keys of type {key}") };
    let signed = key.is_signed_integer();
    let max_key: i128 = if signed { (1i128 << (key_width * 8 - 1)) - 1 } else { (1i128 << (key_width * 8)) - 1 };
    let n = indices.num_values as usize;
    let mut keys = MutableBuffer::from_len_zeroed(n * key_width);
    for (i, index) in indices.data.as_slice().chunks_exact(index_width.max(1)).enumerate().take(n) {
        let value = read_int(index, false);
        if value > max_key {
            return Err(Error::InvalidArgument(format!(
                "a dictionary of more values than {key} keys can index; read it with wider keys"
            )));
        }
        write_int(value, &mut keys.as_slice_mut()[i * key_width..(i + 1) * key_width]);
    }
    let values = block_to_array((*dictionary).clone(), value_type)?;
    let data = ArrayDataBuilder::new(DataType::Dictionary(Box::new(key.clone()), Box::new(value_type.clone())))
        .len(n)
        .add_buffer(keys.into())
        .nulls(nulls)
        .child_data(vec![values.to_data()])
        .build()?;
    Ok(make_array(data))
}

/// Dictionary-encodes a block of fixed-width, variable-width values or bits: 32-bit indices
/// and the distinct values in order of first appearance.
pub fn hash_encode(block: DataBlock) -> Result<(DataBlock, DataBlock)> {
    let n = block.num_values() as usize;
    let mut indices = MutableBuffer::with_capacity(n * 4);
    let mut positions: Vec<usize> = Vec::new();
    match &block {
        DataBlock::FixedWidth(values) => {
            let w = (values.bits_per_value / 8) as usize;
            let mut seen: HashMap<&[u8], u32> = HashMap::new();
            for (i, value) in values.data.as_slice().chunks_exact(w.max(1)).enumerate().take(n) {
                let next = seen.len() as u32;
                let index = *seen.entry(value).or_insert_with(|| {
                    positions.push(i);
                    next
                });
                indices.extend_from_slice(&index.to_le_bytes());
            }
        }
        DataBlock::VariableWidth(values) => {
            let offsets = values.offsets_u64()?;
            let data = values.data.as_slice();
            let mut seen: HashMap<&[u8], u32> = HashMap::new();
            for (i, pair) in offsets.windows(2).enumerate() {
                let (start, end) = (pair[0] as usize, pair[1] as usize);
                ensure!(start <= end && end <= data.len(), corrupt, "string offsets out of range");
                let next = seen.len() as u32;
                let index = *seen.entry(&data[start..end]).or_insert_with(|| {
                    positions.push(i);
                    next
                });
                indices.extend_from_slice(&index.to_le_bytes());
            }
        }
        DataBlock::Boolean(bits) => {
            let mut seen: [Option<u32>; 2] = [None, None];
            for i in 0..n {
                let slot = &mut seen[bits.value(i) as usize];
                let index = match slot {
                    Some(index) => *index,
                    None => {
                        positions.push(i);
                        let index = positions.len() as u32 - 1;
                        *slot = Some(index);
                        index
                    }
                };
                indices.extend_from_slice(&index.to_le_bytes());
            }
        }
        DataBlock::AllNull { .. } => {
            indices.extend_from_slice(&vec![0u8; n * 4]);
        }
        _ => bail!(unsupported, "dictionary encoding of this kind of values"),
    }
    let dictionary = match &block {
        DataBlock::AllNull { .. } => DataBlock::VariableWidth(VariableWidthBlock {
            offsets: Buffer::from_vec(vec![0u32]),
            bits_per_offset: 32,
            data: Buffer::from_vec(Vec::<u8>::new()),
            num_values: 0,
        }),
        other => other.gather(&positions)?,
    };
    let indices =
        DataBlock::FixedWidth(FixedWidthBlock { data: indices.into(), bits_per_value: 32, num_values: n as u64 });
    Ok((indices, dictionary))
}
