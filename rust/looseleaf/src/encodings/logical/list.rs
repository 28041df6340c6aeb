//! Lists, large lists and maps: what their own column stores, and how a list array is put back
//! together.
//!
//! A list field's column holds, per row, the list's length and validity; its items are the rows
//! of the item field's columns. The writer buffers the lengths as an `Int64Array` (nulls where
//! the list is null), so that pages of a list column are cut like any other; a page stores them
//! as offsets starting at zero ([`super::super::physical::list_offsets`]), and its metadata the
//! number of items.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int64Array, LargeListArray, ListArray, MapArray, StructArray};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;

use crate::encodings::DataBlock;
use crate::encodings::data_block::OffsetsBlock;
use crate::error::{Error, Result, bail, ensure};

/// The lengths of the lists of `array` (a list, large list or map array), null where the list
/// is null, and the range of its items (`first..last` of its child array).
pub fn lengths(array: &dyn Array) -> Result<(Int64Array, std::ops::Range<usize>)> {
    let (lengths, items): (Vec<i64>, _) = match array.data_type() {
        DataType::List(_) => span(array.as_list::<i32>().value_offsets()),
        DataType::LargeList(_) => span(array.as_list::<i64>().value_offsets()),
        DataType::Map(_, _) => span(array.as_map().value_offsets()),
        other => bail!(internal, "lengths of a {other} array"),
    };
    Ok((Int64Array::new(lengths.into(), array.nulls().cloned()), items))
}

fn span<O: arrow_array::OffsetSizeTrait>(offsets: &[O]) -> (Vec<i64>, std::ops::Range<usize>) {
    let lengths = offsets.windows(2).map(|w| (w[1] - w[0]).as_usize() as i64).collect();
    let first = offsets.first().map_or(0, |o| o.as_usize());
    let last = offsets.last().map_or(0, |o| o.as_usize());
    (lengths, first..last)
}

/// The block of a page of list lengths: offsets from zero, under a validity if there are nulls.
pub fn lengths_to_block(lengths: &Int64Array) -> Result<(DataBlock, u64)> {
    let mut offsets = Vec::with_capacity(lengths.len() + 1);
    let mut total = 0u64;
    offsets.push(0u64);
    for length in lengths.values() {
        let length = u64::try_from(*length).map_err(|_| Error::internal("negative list length"))?;
        total += length;
        offsets.push(total);
    }
    let block = DataBlock::ListOffsets(OffsetsBlock {
        offsets: Buffer::from_vec(offsets),
        bits_per_offset: 64,
        num_values: lengths.len() as u64,
    });
    let block = match lengths.nulls().filter(|n| n.null_count() > 0) {
        Some(nulls) => DataBlock::Nullable { validity: nulls.inner().clone(), values: Box::new(block) },
        None => block,
    };
    Ok((block, total))
}

/// The offsets (as `u64`, not rebased) and validity of a decoded block of list offsets.
pub fn offsets_from_block(block: DataBlock) -> Result<(Vec<u64>, Option<NullBuffer>)> {
    let (nulls, values) = match block {
        DataBlock::Nullable { validity, values } => (Some(NullBuffer::new(validity)), *values),
        other => (None, other),
    };
    let DataBlock::ListOffsets(offsets) = values else {
        bail!(corrupt, "a page of a list column does not decode to list offsets")
    };
    let offsets = offsets.to_u64()?;
    if let Some(nulls) = &nulls {
        ensure!(nulls.len() + 1 == offsets.len(), corrupt, "list validity and offsets differ in length");
    }
    Ok((offsets, nulls))
}

/// The first and last offsets of a decoded block of list offsets, checking on the way
/// (without converting them) that no offset decreases. The bounds alone would not do: an offset
/// in between could point past the last one, and the list ending there would claim items the
/// page does not hold (its decoder would then wait for items that never come).
///
/// # Errors
/// [`Error::Corrupt`] if the block is not list offsets, its buffer is too short, or an offset
/// decreases.
pub fn offset_bounds(block: &DataBlock) -> Result<(u64, u64)> {
    let offsets = match block {
        DataBlock::Nullable { values, .. } => values.as_ref(),
        other => other,
    };
    let DataBlock::ListOffsets(offsets) = offsets else {
        bail!(corrupt, "a page of a list column does not decode to list offsets")
    };
    let too_short = || Error::corrupt("list offsets buffer is too short");
    let first = offsets.offset_at(0).ok_or_else(too_short)?;
    let mut last = first;
    for i in 1..=offsets.num_values {
        let offset = usize::try_from(i).ok().and_then(|i| offsets.offset_at(i)).ok_or_else(too_short)?;
        ensure!(offset >= last, corrupt, "list offsets decrease");
        last = offset;
    }
    Ok((first, last))
}

/// Builds a list array of `data_type` (list, large list or map) from offsets starting at zero,
/// validity and items.
pub fn list_array(
    data_type: &DataType,
    offsets: Vec<u64>,
    nulls: Option<NullBuffer>,
    items: ArrayRef,
) -> Result<ArrayRef> {
    ensure!(offsets.first() == Some(&0), internal, "list offsets must start at zero");
    let too_many = || {
        Error::invalid_argument(format!(
            "a batch of this {data_type} column holds more than 2^31 items; read it with a smaller batch size"
        ))
    };
    Ok(match data_type {
        DataType::List(item) => {
            let offsets: Vec<i32> =
                offsets.iter().map(|o| i32::try_from(*o)).collect::<Result<_, _>>().map_err(|_| too_many())?;
            Arc::new(ListArray::try_new(item.clone(), OffsetBuffer::new(ScalarBuffer::from(offsets)), items, nulls)?)
        }
        DataType::LargeList(item) => {
            let offsets: Vec<i64> =
                offsets.iter().map(|o| i64::try_from(*o)).collect::<Result<_, _>>().map_err(|_| too_many())?;
            Arc::new(LargeListArray::try_new(
                item.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                items,
                nulls,
            )?)
        }
        DataType::Map(entries, sorted) => {
            let offsets: Vec<i32> =
                offsets.iter().map(|o| i32::try_from(*o)).collect::<Result<_, _>>().map_err(|_| too_many())?;
            let Some(entries_array) = items.as_any().downcast_ref::<StructArray>() else {
                bail!(corrupt, "map entries do not decode to a struct")
            };
            Arc::new(MapArray::try_new(
                entries.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                entries_array.clone(),
                nulls,
                *sorted,
            )?)
        }
        other => bail!(internal, "list array of type {other}"),
    })
}
