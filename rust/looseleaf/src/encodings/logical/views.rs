//! `Utf8View` and `BinaryView` arrays over decoded bytes, without copying them.
//!
//! A view array is a 16-byte view per value: its length and, for values of at most 12 bytes,
//! the value itself; for longer ones its first 4 bytes and where it lies in a data buffer. Here
//! that buffer is the block's own data — the loaded page for plain pages, the decompressed
//! batch for FSST, the dictionary for dictionary-encoded pages — so a value's bytes are never
//! copied again, and a batch of short values (all inlined) holds no buffer at all.
//!
//! Measured against offsets (`Utf8`), views cost about the same to build: a view per value is
//! written instead of an offset, and dictionary values are no longer copied.
//!
//! Invariant of every array built here: each view's bytes lie within the one data buffer and,
//! for `Utf8View`, are valid UTF-8 (checked before the array is built without Arrow's own
//! validation).

use std::sync::Arc;

use arrow_array::types::{BinaryViewType, StringViewType};
use arrow_array::{ArrayRef, GenericByteViewArray};
use arrow_buffer::{ArrowNativeType, Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::DataType;

use crate::encodings::VariableWidthBlock;
use crate::error::{Error, Result, bail, ensure};

/// Values this long or shorter are inlined in their view.
const MAX_INLINE: usize = 12;

/// The values of `block` — all of them, or those at `positions` (dictionary indices) — as an
/// array of `data_type` (`Utf8View` or `BinaryView`) with validity `nulls`.
///
/// A position past the block on a null row gives an empty view (rows that are null may point
/// anywhere); on a valid row it is an error.
///
/// # Errors
/// [`crate::Error::Corrupt`] if offsets are out of order or out of the data, a valid row's
/// position is out of the block, or `Utf8View` values are not UTF-8.
pub fn view_array(
    block: &VariableWidthBlock,
    positions: Option<&[u32]>,
    nulls: Option<NullBuffer>,
    data_type: &DataType,
) -> Result<ArrayRef> {
    let utf8 = match data_type {
        DataType::Utf8View => true,
        DataType::BinaryView => false,
        other => bail!(internal, "view_array asked for {other}"),
    };
    match block.bits_per_offset {
        32 => views_with_offsets(block, &block.typed_offsets::<u32>()?, positions, nulls, utf8),
        64 => views_with_offsets(block, &block.typed_offsets::<u64>()?, positions, nulls, utf8),
        bits => bail!(corrupt, "string offsets of {bits} bits"),
    }
}

fn views_with_offsets<O: ArrowNativeType>(
    block: &VariableWidthBlock,
    offsets: &[O],
    positions: Option<&[u32]>,
    nulls: Option<NullBuffer>,
    utf8: bool,
) -> Result<ArrayRef> {
    let data = block.data.as_slice();
    ensure!(
        data.len() <= u32::MAX as usize,
        unsupported,
        "a page of {} bytes of strings cannot be read as views (their offsets are 32-bit)",
        data.len()
    );
    let rows = positions.map_or(block.num_values as usize, <[u32]>::len);
    ensure!(nulls.as_ref().is_none_or(|n| n.len() == rows), corrupt, "validity and values differ in length");
    let (views, any_long) = match positions {
        // All values, or a dictionary no larger than the batch: the block checked at once
        // (UTF-8 over the whole span, then every offset on a character boundary).
        None => {
            if utf8 {
                check_utf8_values(offsets, data)?;
            }
            build_views(offsets, data, None, None, false)?
        }
        Some(positions) if block.num_values as usize <= positions.len() => {
            if utf8 {
                check_utf8_values(offsets, data)?;
            }
            // The dictionary's views once, then 16 bytes copied per row.
            let (dictionary, any_long) = build_views(offsets, data, None, None, false)?;
            (gather_views(&dictionary, positions, nulls.as_ref())?, any_long)
        }
        // A few rows of a large dictionary: only their values are looked at and checked.
        Some(positions) => build_views(offsets, data, Some(positions), nulls.as_ref(), utf8)?,
    };
    Ok(if utf8 {
        Arc::new(finish::<StringViewType>(views, any_long, &block.data, nulls))
    } else {
        Arc::new(finish::<BinaryViewType>(views, any_long, &block.data, nulls))
    })
}

/// The array of `views` over `data`, which is left out when no value is long (`any_long`
/// false: every value inlined).
fn finish<T: arrow_array::types::ByteViewType + ?Sized>(
    views: Vec<u128>,
    any_long: bool,
    data: &Buffer,
    nulls: Option<NullBuffer>,
) -> GenericByteViewArray<T> {
    let buffers: Vec<Buffer> = if any_long { vec![data.clone()] } else { Vec::new() };
    // SAFETY: `build_views` made every long view point at bytes within `data` (buffer 0) with
    // its first 4 bytes as prefix, and every short view inline with zero padding; for strings,
    // every value was checked to be UTF-8 (`check_utf8_values`, or value by value).
    unsafe { GenericByteViewArray::new_unchecked(ScalarBuffer::from(views), buffers.into(), nulls) }
}

/// The views of the values at `positions` (or of all values), checking each value's offsets
/// and, if `check_utf8`, that it is UTF-8; and whether any value is too long to be inlined.
fn build_views<O: ArrowNativeType>(
    offsets: &[O],
    data: &[u8],
    positions: Option<&[u32]>,
    nulls: Option<&NullBuffer>,
    check_utf8: bool,
) -> Result<(Vec<u128>, bool)> {
    let num_values = offsets.len() - 1;
    let mut longest = 0;
    let out_of_order = |start: usize, end: usize| {
        Error::corrupt(format!("string offsets {start}..{end} out of order or out of the data"))
    };
    let mut views = Vec::with_capacity(positions.map_or(num_values, <[u32]>::len));
    match positions {
        None => {
            for pair in offsets.windows(2) {
                let (start, end) = (pair[0].as_usize(), pair[1].as_usize());
                if start > end || end > data.len() {
                    return Err(out_of_order(start, end));
                }
                longest = longest.max(end - start);
                views.push(make_view(data, start, end - start));
            }
        }
        Some(positions) => {
            for (row, position) in positions.iter().enumerate() {
                let value = *position as usize;
                if value >= num_values {
                    ensure!(
                        nulls.is_some_and(|n| n.is_null(row)),
                        corrupt,
                        "a dictionary index points past the {num_values} dictionary values"
                    );
                    views.push(0);
                    continue;
                }
                let (start, end) = (offsets[value].as_usize(), offsets[value + 1].as_usize());
                if start > end || end > data.len() {
                    return Err(out_of_order(start, end));
                }
                ensure!(
                    !check_utf8 || std::str::from_utf8(&data[start..end]).is_ok(),
                    corrupt,
                    "a string value is not valid UTF-8"
                );
                longest = longest.max(end - start);
                views.push(make_view(data, start, end - start));
            }
        }
    }
    Ok((views, longest > MAX_INLINE))
}

/// The dictionary views at `positions`; a position past them is an error unless its row is
/// null (an empty view).
fn gather_views(dictionary: &[u128], positions: &[u32], nulls: Option<&NullBuffer>) -> Result<Vec<u128>> {
    let mut views = Vec::with_capacity(positions.len());
    for (row, position) in positions.iter().enumerate() {
        match dictionary.get(*position as usize) {
            Some(view) => views.push(*view),
            None => {
                ensure!(
                    nulls.is_some_and(|n| n.is_null(row)),
                    corrupt,
                    "a dictionary index points past the {} dictionary values",
                    dictionary.len()
                );
                views.push(0);
            }
        }
    }
    Ok(views)
}

/// The view of the `len` bytes at `start` of `data` (in bounds), in buffer 0.
#[inline(always)]
fn make_view(data: &[u8], start: usize, len: usize) -> u128 {
    // One 16-byte load where the data allows it: its low bytes are the inline value or the
    // prefix of a long one.
    let load = |at: usize| {
        // SAFETY: callers pass `at + 16 <= data.len()`.
        u128::from_le(unsafe { std::ptr::read_unaligned(data.as_ptr().add(at).cast::<u128>()) })
    };
    let word = if start + 16 <= data.len() {
        load(start)
    } else if data.len() >= 16 {
        // Near the end: the last 16 bytes, shifted down to `start` (a copy through the stack
        // stalls the load on the store; small dictionaries end up here for most values).
        load(data.len() - 16).checked_shr(8 * (start + 16 - data.len()) as u32).unwrap_or(0)
    } else {
        data[start..].iter().rev().fold(0u128, |word, byte| word << 8 | *byte as u128)
    };
    if len <= MAX_INLINE {
        let mask = (1u128 << (8 * len)) - 1;
        len as u128 | (word & mask) << 32
    } else {
        len as u128 | ((word as u32) as u128) << 32 | (start as u128) << 96
    }
}

/// Checks that values between `offsets` are UTF-8: the span they cover is, and every offset
/// falls on a character boundary (always so when the span is ASCII: then no offset is looked
/// at, which for short strings was most of the check).
pub(super) fn check_utf8_values<O: ArrowNativeType>(offsets: &[O], data: &[u8]) -> Result<()> {
    let (first, last) = (offsets[0].as_usize(), offsets[offsets.len() - 1].as_usize());
    ensure!(first <= last && last <= data.len(), corrupt, "string offsets {first}..{last} out of the data");
    let span = &data[first..last];
    if span.is_ascii() {
        return Ok(());
    }
    ensure!(std::str::from_utf8(span).is_ok(), corrupt, "a string value is not valid UTF-8");
    // A continuation byte (0b10xx_xxxx) is inside a character; a boundary is anything else or
    // the end of the span.
    let boundary = |o: &O| data.get(o.as_usize()).is_none_or(|b| (*b as i8) >= -0x40);
    ensure!(offsets.iter().all(boundary), corrupt, "a string value is not valid UTF-8 (it splits a character)");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::{Array, StringArray};

    fn block_of(values: &[&str]) -> VariableWidthBlock {
        let array = StringArray::from(values.to_vec());
        VariableWidthBlock {
            offsets: array.offsets().inner().inner().clone(),
            bits_per_offset: 32,
            data: array.values().clone(),
            num_values: values.len() as u64,
        }
    }

    #[test]
    fn views_point_into_the_block_and_inline_short_values() {
        let values = ["", "short", "exactly12byt", "a value longer than twelve bytes", "ü"];
        let block = block_of(&values);
        let array = view_array(&block, None, None, &DataType::Utf8View).unwrap();
        let views = array.as_string_view();
        assert_eq!(views.iter().flatten().collect::<Vec<_>>(), values);
        assert_eq!(views.data_buffers().len(), 1);
        assert_eq!(views.data_buffers()[0].as_ptr(), block.data.as_ptr(), "the data is not copied");
        let picked = view_array(&block, Some(&[4, 1, 1, 0]), None, &DataType::Utf8View).unwrap();
        assert_eq!(picked.as_string_view().iter().flatten().collect::<Vec<_>>(), ["ü", "short", "short", ""]);
        assert!(picked.as_string_view().data_buffers().is_empty(), "short values hold no buffer");
    }

    #[test]
    fn damaged_values_are_errors() {
        let mut block = block_of(&["abc", "de"]);
        let e = view_array(&block, Some(&[0, 2]), None, &DataType::Utf8View).unwrap_err();
        assert!(e.to_string().contains("points past"), "{e}");
        let nulls = NullBuffer::from(vec![true, false]);
        let array = view_array(&block, Some(&[0, 2]), Some(nulls), &DataType::Utf8View).unwrap();
        assert_eq!(array.null_count(), 1);
        block.data = Buffer::from_vec(vec![b'a', b'b', 0xC3, 0xBC, b'e']);
        let e = view_array(&block, None, None, &DataType::Utf8View).unwrap_err();
        assert!(e.to_string().contains("UTF-8"), "{e}");
        assert!(view_array(&block, None, None, &DataType::BinaryView).is_ok());
        block.offsets = Buffer::from_vec(vec![0u32, 4, 2]);
        assert!(view_array(&block, None, None, &DataType::BinaryView).is_err());
    }
}
