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
    let keys = key_positions(array)?;
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

/// The keys of a dictionary array as positions into its values (0 where the key is null or
/// past the values, which only null rows may have).
fn key_positions(array: &dyn Array) -> Result<Vec<usize>> {
    let dictionary = array.as_any_dictionary();
    let keys = dictionary.keys();
    let size = dictionary.values().len();
    let data = keys.to_data();
    let Some(width) = keys.data_type().primitive_width() else { bail!(internal, "dictionary keys are not integers") };
    let signed = keys.data_type().is_signed_integer();
    let Some(buffer) = data.buffers().first() else { bail!(internal, "dictionary keys without values") };
    let bytes = buffer.as_slice();
    let start = data.offset() * width;
    let Some(bytes) = bytes.get(start..start + keys.len() * width) else {
        bail!(internal, "dictionary keys too short")
    };
    Ok(bytes
        .chunks_exact(width)
        .enumerate()
        .map(|(i, key)| {
            let key = read_int(key, signed);
            if keys.is_valid(i) && key >= 0 && (key as u128) < size as u128 { key as usize } else { 0 }
        })
        .collect())
}

/// Concatenates dictionary arrays of `data_type` whose dictionaries differ (pieces of pages
/// with their own dictionaries), keeping one copy of each dictionary value the rows use, so
/// the keys stay as small as the distinct values read allow.
pub fn concat_dictionaries(arrays: &[ArrayRef], data_type: &DataType) -> Result<ArrayRef> {
    let DataType::Dictionary(key, value_type) = data_type else { bail!(internal, "concatenating non-dictionaries") };
    let values: Vec<&dyn Array> = arrays.iter().map(|a| a.as_any_dictionary().values().as_ref()).collect();
    let all_values = if values.is_empty() {
        arrow_array::new_empty_array(value_type)
    } else {
        arrow_select::concat::concat(&values)?
    };
    let values_block = match array_to_block(all_values.as_ref())? {
        DataBlock::Nullable { values, .. } => *values,
        other => other,
    };
    // Global positions (into the concatenated values) of the rows, and which are used.
    let total: usize = arrays.iter().map(|a| a.len()).sum();
    let mut rows = Vec::with_capacity(total);
    let mut validity = arrow_buffer::BooleanBufferBuilder::new(total);
    let mut used = vec![false; all_values.len()];
    let mut base = 0usize;
    for array in arrays {
        let nulls = array.logical_nulls();
        for (i, position) in key_positions(array.as_ref())?.into_iter().enumerate() {
            let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
            validity.append(valid);
            if valid {
                used[base + position] = true;
            }
            rows.push(base + position);
        }
        base += array.as_any_dictionary().values().len();
    }
    let used_positions: Vec<usize> = used.iter().enumerate().filter(|(_, u)| **u).map(|(i, _)| i).collect();
    let mut remap = vec![0u32; used.len()];
    let merged = if used_positions.is_empty() {
        values_block.gather(&[])?
    } else {
        let (indices, merged) = hash_encode(values_block.gather(&used_positions)?)?;
        let DataBlock::FixedWidth(indices) = indices else { bail!(internal, "hashed indices are not integers") };
        for (position, index) in used_positions.iter().zip(indices.data.as_slice().chunks_exact(4)) {
            remap[*position] = u32::from_le_bytes([index[0], index[1], index[2], index[3]]);
        }
        merged
    };
    let mut indices = MutableBuffer::with_capacity(total * 4);
    for row in rows {
        indices.extend_from_slice(&remap.get(row).copied().unwrap_or(0).to_le_bytes());
    }
    let indices =
        DataBlock::FixedWidth(FixedWidthBlock { data: indices.into(), bits_per_value: 32, num_values: total as u64 });
    let validity = validity.finish();
    let nulls = (validity.count_set_bits() < total).then(|| NullBuffer::new(validity));
    array_from_block(
        DataBlock::Dictionary { indices: Box::new(indices), dictionary: Arc::new(merged) },
        nulls,
        key,
        value_type,
    )
}
