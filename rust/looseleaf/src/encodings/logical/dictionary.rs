//! Dictionary arrays: written as their indices and dictionary without re-hashing, and read back
//! as Arrow `DictionaryArray`s without materialising the values — from dictionary-encoded pages
//! directly, or by hashing values of pages stored otherwise.

use std::collections::HashMap;
use std::sync::Arc;

use ahash::RandomState;
use arrow_array::cast::AsArray;
use arrow_array::types::ByteArrayType;
use arrow_array::{Array, ArrayRef, GenericByteArray, UInt32Array, make_array};
use arrow_buffer::{ArrowNativeType, Buffer, MutableBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use super::primitive::{array_to_block, block_to_array};
use crate::encodings::{DataBlock, FixedWidthBlock, VariableWidthBlock, limits};
use crate::error::{Error, Result, bail, ensure};

/// The values of a dictionary array (without its validity) as a dictionary block: its keys as
/// 32-bit indices and its dictionary values.
pub fn dictionary_to_block(array: &dyn Array) -> Result<DataBlock> {
    let dictionary = array.as_any_dictionary();
    let keys = key_positions(array)?;
    let size = dictionary.values().len();
    // `key_positions` keeps keys inside the values; null rows store 0.
    ensure!(keys.iter().all(|key| *key < size.max(1)), internal, "dictionary key out of its {size} values");
    ensure!(size <= u32::MAX as usize, unsupported, "dictionaries of more than 2^32 values");
    let indices = Buffer::from_vec(keys.iter().map(|key| *key as u32).collect::<Vec<u32>>());
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
            data: indices,
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
    let positions = indices.to_positions()?;
    let n = positions.len();
    let max_key = match key {
        DataType::Int8 => i8::MAX as usize,
        DataType::Int16 => i16::MAX as usize,
        DataType::Int32 => i32::MAX as usize,
        DataType::UInt8 => u8::MAX as usize,
        DataType::UInt16 => u16::MAX as usize,
        DataType::UInt32 => u32::MAX as usize,
        DataType::Int64 | DataType::UInt64 => usize::MAX,
        other => bail!(unsupported, "dictionary keys of type {other}"),
    };
    let max = positions.iter().fold(0, |max, p| max.max(*p));
    if max > max_key {
        return Err(Error::invalid_argument(format!(
            "a dictionary of more values than {key} keys can index; read it with wider keys"
        )));
    }
    fn keys<T: ArrowNativeType>(positions: &[usize]) -> Buffer {
        Buffer::from_vec(positions.iter().map(|p| T::usize_as(*p)).collect::<Vec<T>>())
    }
    let keys = match key {
        DataType::Int8 => keys::<i8>(&positions),
        DataType::Int16 => keys::<i16>(&positions),
        DataType::Int32 => keys::<i32>(&positions),
        DataType::UInt8 => keys::<u8>(&positions),
        DataType::UInt16 => keys::<u16>(&positions),
        DataType::UInt32 => keys::<u32>(&positions),
        DataType::Int64 => keys::<i64>(&positions),
        _ => keys::<u64>(&positions),
    };
    let values = block_to_array((*dictionary).clone(), value_type)?;
    // Every key, null rows' included, must point into the values; only rows that are all null
    // may come with no values at all (their keys are then never looked at).
    let all_null = nulls.as_ref().is_some_and(|nulls| nulls.null_count() == n);
    ensure!(
        nulls.as_ref().is_none_or(|nulls| nulls.len() == n)
            && (n == 0 || max < values.len() || (values.is_empty() && all_null)),
        corrupt,
        "dictionary indices point past the {} dictionary values or disagree with the validity",
        values.len()
    );
    let builder = ArrayDataBuilder::new(DataType::Dictionary(Box::new(key.clone()), Box::new(value_type.clone())))
        .len(n)
        .add_buffer(keys)
        .nulls(nulls)
        .child_data(vec![values.to_data()]);
    // SAFETY: the keys buffer holds `n` keys of the key type, each checked above to index the
    // values (a validated array), and the null buffer, if any, is the block's, of `n` rows.
    Ok(make_array(unsafe { builder.build_unchecked() }))
}

/// The values a dictionary block's indices point at, as an array of `data_type` (with `nulls`).
///
/// The dictionary is validated once as an Arrow array; strings and binaries are then copied
/// whole without validating them again, other types gathered with Arrow's `take`.
///
/// # Errors
/// [`Error::Corrupt`] if an index points past the dictionary or the dictionary is invalid.
pub fn materialize(
    indices: DataBlock,
    dictionary: &DataBlock,
    nulls: Option<NullBuffer>,
    data_type: &DataType,
) -> Result<ArrayRef> {
    let DataBlock::FixedWidth(indices) = indices else { bail!(corrupt, "dictionary indices are not integers") };
    ensure!(indices.bits_per_value <= 32, corrupt, "dictionary indices of {} bits", indices.bits_per_value);
    let positions = indices.map_unsigned(|index| index as u32)?;
    if let (DataBlock::VariableWidth(dictionary), DataType::Utf8View | DataType::BinaryView) = (dictionary, data_type) {
        return super::views::view_array(dictionary, Some(&positions), nulls, data_type);
    }
    if let DataBlock::VariableWidth(dictionary) = dictionary
        && dictionary.num_values > positions.len() as u64
        && matches!(data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary)
    {
        return gather_unchecked_values(dictionary, &positions, nulls, data_type);
    }
    let values = block_to_array(dictionary.clone(), data_type)?;
    let max = positions.iter().fold(0, |max, p| max.max(*p));
    ensure!(
        positions.is_empty() || (max as usize) < values.len(),
        corrupt,
        "a dictionary index points past the {} dictionary values",
        values.len()
    );
    match data_type {
        DataType::Utf8 => gather_bytes(values.as_string::<i32>(), &positions, nulls),
        DataType::LargeUtf8 => gather_bytes(values.as_string::<i64>(), &positions, nulls),
        DataType::Binary => gather_bytes(values.as_binary::<i32>(), &positions, nulls),
        DataType::LargeBinary => gather_bytes(values.as_binary::<i64>(), &positions, nulls),
        _ => {
            let taken = arrow_select::take::take(values.as_ref(), &UInt32Array::from(positions), None)?;
            if nulls.is_none() {
                return Ok(taken);
            }
            Ok(make_array(taken.to_data().into_builder().nulls(nulls).build()?))
        }
    }
}

/// The strings or binaries of a dictionary larger than the batch at `positions`, as an array
/// of `data_type`: each value is found through its own offsets and only the batch's values are
/// validated (as the output array), so a batch costs its own rows, not the dictionary's (a
/// dictionary of 5,000 strings validated and indexed for every 1,700-row batch made a scan of
/// the wide table a third slower).
fn gather_unchecked_values(
    dictionary: &VariableWidthBlock,
    positions: &[u32],
    nulls: Option<NullBuffer>,
    data_type: &DataType,
) -> Result<ArrayRef> {
    // Short values are copied as 16-byte chunks (a `memcpy` call per value of a few bytes
    // cost more than the copy) into an output with 16 bytes of slack.
    const CHUNK: usize = 16;
    let data = dictionary.data.as_slice();
    let mut spans = Vec::with_capacity(positions.len());
    let mut offsets = Vec::with_capacity(positions.len() + 1);
    offsets.push(0u64);
    let mut total = 0usize;
    for p in positions {
        let p = *p as usize;
        let span = match (dictionary.offset_at(p), dictionary.offset_at(p + 1)) {
            (Some(start), Some(end))
                if p < dictionary.num_values as usize && start <= end && end as usize <= data.len() =>
            {
                (start as usize, (end - start) as usize)
            }
            _ => bail!(corrupt, "a dictionary index points past the {} dictionary values", dictionary.num_values),
        };
        spans.push(span);
        total += span.1;
        offsets.push(total as u64);
    }
    // A dictionary repeats its values: a few stored bytes can stand for far more output.
    let mut bytes: Vec<u8> =
        limits::try_vec(limits::block_bytes(total as u64, 1, "dictionary values")? + CHUNK, "dictionary values")?;
    let out = bytes.spare_capacity_mut().as_mut_ptr().cast::<u8>();
    let mut at = 0;
    for (start, len) in spans {
        let source = match data.get(start..start + CHUNK) {
            Some(chunk) if len <= CHUNK => chunk,
            _ => &data[start..start + len],
        };
        // SAFETY: the lengths before this value sum to `at` and all of them to `total`, so
        // `at + source.len() <= total + CHUNK`, the capacity.
        unsafe { std::ptr::copy_nonoverlapping(source.as_ptr(), out.add(at), source.len()) };
        at += len;
    }
    // SAFETY: every byte of `0..total` was written (each value starts where the one before ends).
    unsafe { bytes.set_len(total) };
    let block = DataBlock::VariableWidth(VariableWidthBlock::from_offsets(offsets, Buffer::from_vec(bytes)));
    super::primitive::array_from_values(block, nulls, data_type)
}

/// The values of `values` at `positions` (each below its length), copied whole.
fn gather_bytes<T: ByteArrayType>(
    values: &GenericByteArray<T>,
    positions: &[u32],
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    // Short values are copied as fixed 32-byte chunks (an unaligned load and store or two,
    // where a call to `memcpy` per value costs more than the copy) into an output with 32
    // bytes of slack, from the dictionary's data padded with 32 bytes. That copy of the data
    // is made once per batch, so only for small dictionaries; others are copied exactly.
    const CHUNK: usize = 32;
    const PADDED_MAX: usize = 64 * 1024;
    let spans: Vec<(usize, usize)> =
        values.value_offsets().windows(2).map(|pair| (pair[0].as_usize(), (pair[1] - pair[0]).as_usize())).collect();
    if let Some(&(_, width)) = spans.first()
        && spans.iter().all(|(_, len)| *len == width)
    {
        return gather_same_width(values, &spans, width, positions, nulls);
    }
    // The output offsets first, in a pass of their own: each value's copy then starts at its
    // offset, not at the end of the copy before it, so the copies do not wait on each other.
    let mut out_offsets = Vec::with_capacity(positions.len() + 1);
    out_offsets.push(T::Offset::usize_as(0));
    let mut total = 0usize;
    for p in positions {
        total += spans[*p as usize].1;
        out_offsets.push(T::Offset::usize_as(total));
    }
    let total = output_bytes::<T>(Some(total))?;
    // Neither output is zeroed first: every byte of both is written below.
    // A dictionary repeats its values: a few stored bytes can stand for far more output.
    let mut out: Vec<u8> =
        limits::try_vec(limits::block_bytes(total as u64, 1, "dictionary values")? + CHUNK, "dictionary values")?;
    let data = values.value_data();
    if data.len() <= PADDED_MAX && spans.iter().all(|(_, len)| *len <= CHUNK) {
        let padded = [data, &[0u8; CHUNK]].concat();
        let spare = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
        for (p, at) in positions.iter().zip(&out_offsets) {
            let chunk = &padded[spans[*p as usize].0..][..CHUNK];
            // SAFETY: `at` is the sum of the lengths of the values before this one, at most
            // `total`, so `at + CHUNK <= total + CHUNK`, the capacity. Chunks are written in
            // order, each over the slack of the one before.
            unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), spare.add(at.as_usize()), CHUNK) };
        }
        // SAFETY: the chunks wrote every byte of `0..total` (each value's bytes start where
        // the one before ends).
        unsafe { out.set_len(total) };
    } else {
        for p in positions {
            let (start, len) = spans[*p as usize];
            out.extend_from_slice(&data[start..start + len]);
        }
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(out_offsets));
    // SAFETY: every value is a whole value of `values`, an array Arrow validated (UTF-8 for
    // strings), and the offsets grow by each value's length from 0 to `total`.
    let array = unsafe { GenericByteArray::<T>::new_unchecked(offsets, Buffer::from_vec(out), nulls) };
    Ok(Arc::new(array))
}

/// `total` bytes of gathered values, if the offsets of `T` can address them (`None`: more than
/// a `usize` holds).
fn output_bytes<T: ByteArrayType>(total: Option<usize>) -> Result<usize> {
    match total.filter(|total| T::Offset::from_usize(*total).is_some()) {
        Some(total) => Ok(total),
        None => bail!(
            invalid,
            "a batch of this {} column holds more than 2 GiB of data; read it with a smaller batch size",
            T::DATA_TYPE
        ),
    }
}

/// [`gather_bytes`] of a dictionary whose values (`spans`, as offset and length) are all
/// `width` bytes long, as flags and codes often are: the `i`th value goes at `i × width`, with
/// no sum of the lengths before it, and one-byte values are a plain byte lookup. (Two columns
/// of one-letter flags were a sixth of the decoding time of a TPC-H lineitem scan.)
fn gather_same_width<T: ByteArrayType>(
    values: &GenericByteArray<T>,
    spans: &[(usize, usize)],
    width: usize,
    positions: &[u32],
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    const CHUNK: usize = 16;
    let total = output_bytes::<T>(positions.len().checked_mul(width))?;
    let data = values.value_data();
    // A dictionary repeats its values: a few stored bytes can stand for far more output.
    let reserve = limits::block_bytes(total as u64, 1, "dictionary values")? + CHUNK;
    let mut out: Vec<u8> = limits::try_vec(reserve, "dictionary values")?;
    match width {
        0 => {}
        // At most 256 distinct bytes: a table indexed by a byte needs no bounds check.
        1 if spans.len() <= 256 => {
            let mut bytes = [0u8; 256];
            spans.iter().zip(&mut bytes).for_each(|((start, _), byte)| *byte = data[*start]);
            out.extend(positions.iter().map(|p| bytes[*p as u8 as usize]));
        }
        2..=CHUNK => {
            // Each value copied as a fixed chunk (the value padded) over the slack of the one
            // before, as in `gather_bytes`.
            let chunks: Vec<[u8; CHUNK]> = spans
                .iter()
                .map(|(start, _)| {
                    let mut chunk = [0; CHUNK];
                    chunk[..width].copy_from_slice(&data[*start..*start + width]);
                    chunk
                })
                .collect();
            let spare = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
            for (i, p) in positions.iter().enumerate() {
                // SAFETY: `i × width + CHUNK <= total + CHUNK`, the capacity.
                unsafe { spare.add(i * width).cast::<[u8; CHUNK]>().write_unaligned(chunks[*p as usize]) };
            }
            // SAFETY: value `i` wrote bytes `i × width..(i + 1) × width`, so `0..total` all.
            unsafe { out.set_len(total) };
        }
        _ => positions.iter().for_each(|p| {
            let start = spans[*p as usize].0;
            out.extend_from_slice(&data[start..start + width]);
        }),
    }
    let offsets: Vec<T::Offset> = (0..=positions.len()).map(|i| T::Offset::usize_as(i * width)).collect();
    // SAFETY: every value is a whole value of `values`, an array Arrow validated (UTF-8 for
    // strings), and the offsets grow by each value's length from 0 to `total`.
    let array = unsafe {
        GenericByteArray::<T>::new_unchecked(
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Buffer::from_vec(out),
            nulls,
        )
    };
    Ok(Arc::new(array))
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
            let mut seen: HashMap<&[u8], u32, RandomState> = HashMap::default();
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
            let mut seen: HashMap<&[u8], u32, RandomState> = HashMap::default();
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
    // Arrow keeps every valid key inside the values; `normalized_keys` clamps the others (and
    // needs some values: with none, every row is null).
    if dictionary.values().is_empty() {
        return Ok(vec![0; array.len()]);
    }
    let mut keys = dictionary.normalized_keys();
    if let Some(nulls) = array.logical_nulls() {
        for i in nulls.iter().enumerate().filter(|(_, valid)| !valid).map(|(i, _)| i) {
            keys[i] = 0;
        }
    }
    Ok(keys)
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
        let positions = key_positions(array.as_ref())?;
        match array.logical_nulls() {
            Some(nulls) => {
                validity.append_buffer(nulls.inner());
                for (position, valid) in positions.iter().zip(nulls.iter()).filter(|(_, valid)| *valid) {
                    used[base + position] = valid;
                }
            }
            None => {
                validity.append_n(positions.len(), true);
                for position in &positions {
                    used[base + position] = true;
                }
            }
        }
        rows.extend(positions.iter().map(|position| base + position));
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
    let indices = Buffer::from_vec(rows.iter().map(|row| remap.get(*row).copied().unwrap_or(0)).collect::<Vec<u32>>());
    let indices =
        DataBlock::FixedWidth(FixedWidthBlock { data: indices, bits_per_value: 32, num_values: total as u64 });
    let validity = validity.finish();
    let nulls = (validity.count_set_bits() < total).then(|| NullBuffer::new(validity));
    array_from_block(
        DataBlock::Dictionary { indices: Box::new(indices), dictionary: Arc::new(merged) },
        nulls,
        key,
        value_type,
    )
}

#[cfg(test)]
mod tests {
    use arrow_array::{StringArray, UInt32Array};

    use super::*;

    /// `materialize` against Arrow's `take`, for dictionaries on both copy paths: short values
    /// copied as chunks and long ones (or a large dictionary) copied exactly.
    fn check(dictionary: Vec<String>, positions: Vec<u32>) {
        let values = StringArray::from(dictionary);
        let expected = arrow_select::take::take(&values, &UInt32Array::from(positions.clone()), None).unwrap();
        let indices = DataBlock::FixedWidth(FixedWidthBlock {
            data: Buffer::from_vec(positions.clone()),
            bits_per_value: 32,
            num_values: positions.len() as u64,
        });
        let dictionary = array_to_block(&values).unwrap();
        let got = materialize(indices, &dictionary, None, &DataType::Utf8).unwrap();
        assert_eq!(got.as_ref(), expected.as_ref());
    }

    #[test]
    fn materialized_dictionaries_match_take() {
        let positions: Vec<u32> = (0..5000u32).map(|i| (i * 7919) % 5).collect();
        check(["", "a", "bc", "exactly thirty-two bytes long..!", "x"].map(String::from).to_vec(), positions.clone());
        check(
            ["short", "a value well past the thirty-two byte chunk", "", "é", "z"].map(String::from).to_vec(),
            positions,
        );
        // Values all of one length: none, one byte (a table of up to 256, or duplicates past
        // it), a chunk or less, more than a chunk.
        let same_width = |width: usize, count: usize| -> Vec<String> {
            (0..count).map(|i| char::from(b'A' + (i % 26) as u8).to_string().repeat(width)).collect()
        };
        for (width, count) in [(0, 3), (1, 3), (1, 26), (1, 300), (3, 7), (16, 5), (17, 5), (40, 2)] {
            let positions: Vec<u32> = (0..3000u32).map(|i| (i * 7919) % count as u32).collect();
            check(same_width(width, count), positions);
        }
        check(["N", "R", "A"].map(String::from).to_vec(), vec![]);
        // More than 64 KiB of dictionary data: read in place, last values copied exactly.
        let large: Vec<String> = (0..5000).map(|i| format!("value number {i:>8}")).collect();
        check(large, (0..20_000u32).map(|i| (i * 7919) % 5000).chain([4999, 0, 4999]).collect());
    }

    #[test]
    fn indices_past_the_dictionary_are_corrupt() {
        let indices = DataBlock::FixedWidth(FixedWidthBlock {
            data: Buffer::from_vec(vec![0u32, 3]),
            bits_per_value: 32,
            num_values: 2,
        });
        let dictionary = array_to_block(&StringArray::from(vec!["a", "b", "c"])).unwrap();
        let error = materialize(indices.clone(), &dictionary, None, &DataType::Utf8).unwrap_err();
        assert!(error.to_string().contains("past the 3 dictionary values"), "{error}");
        let error = array_from_block(
            DataBlock::Dictionary { indices: Box::new(indices), dictionary: Arc::new(dictionary) },
            None,
            &DataType::Int8,
            &DataType::Utf8,
        )
        .unwrap_err();
        assert!(error.to_string().contains("past the 3 dictionary values"), "{error}");
    }
}
