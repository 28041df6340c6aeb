//! Flat Arrow types (fixed-width primitives, booleans, strings and binaries of every offset
//! width and the view variants, the null type) to and from [`DataBlock`]s. Dictionaries and
//! fixed-size lists, which are built on these, are in their own modules; [`super`] dispatches.
//!
//! | Arrow type | block |
//! |---|---|
//! | null | all-null |
//! | boolean | bits |
//! | ints, floats, temporals, decimals, intervals, fixed-size binary | fixed width |
//! | utf8, binary (and large, view) | variable width (views are converted to offsets; read back as views over the block's bytes, see [`super::views`]) |
//!
//! Nulls wrap the block in a validity bitmap; an array of nulls only becomes an all-null block.
//! Arrays built from blocks are validated by Arrow (offsets in bounds, UTF-8), so damaged data
//! gives an error, never an invalid array.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, GenericByteViewArray, NullArray, make_array, new_null_array};
use arrow_buffer::{Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use crate::encodings::{DataBlock, FixedWidthBlock, VariableWidthBlock};
use crate::error::{Error, Result, bail, ensure};
use crate::format::schema::{fixed_width_bits, is_variable_width, row_bits};

/// Turns an array of a flat type into a block, nulls included.
///
/// # Errors
/// [`Error::Unsupported`] for other types.
pub fn array_to_block(array: &dyn Array) -> Result<DataBlock> {
    with_nulls(array, values_to_block)
}

/// The block of `array`: all-null, or the block of its values (`values`) wrapped in its validity
/// when it has nulls. Logical nulls count: a dictionary array's rows pointing at null values are
/// null too.
pub fn with_nulls(array: &dyn Array, values: impl FnOnce(&dyn Array) -> Result<DataBlock>) -> Result<DataBlock> {
    let len = array.len() as u64;
    let nulls = array.logical_nulls();
    let null_count = nulls.as_ref().map_or(0, |n| n.null_count());
    if matches!(array.data_type(), DataType::Null) || (len > 0 && null_count == array.len()) {
        return Ok(DataBlock::AllNull { num_values: len });
    }
    let values = values(array)?;
    Ok(match nulls.filter(|n| n.null_count() > 0) {
        Some(nulls) => DataBlock::Nullable { validity: nulls.inner().clone(), values: Box::new(values) },
        None => values,
    })
}

/// The values of an array of a flat type (without its validity) as a block.
pub fn values_to_block(array: &dyn Array) -> Result<DataBlock> {
    let data_type = array.data_type();
    let len = array.len() as u64;
    if let DataType::Boolean = data_type {
        return Ok(DataBlock::Boolean(array.as_boolean().values().clone()));
    }
    if let Some(bits) = fixed_width_bits(data_type) {
        let data = array.to_data();
        let w = (bits / 8) as usize;
        let buffer = data.buffers().first().ok_or_else(|| Error::internal("fixed-width array without buffer"))?;
        let data = buffer.slice_with_length(data.offset() * w, array.len() * w);
        return Ok(DataBlock::FixedWidth(FixedWidthBlock { data, bits_per_value: bits, num_values: len }));
    }
    let (offsets, bits_per_offset, data) = match data_type {
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            (a.offsets().inner().inner().clone(), 32, a.values().clone())
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            (a.offsets().inner().inner().clone(), 32, a.values().clone())
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            (a.offsets().inner().inner().clone(), 64, a.values().clone())
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            (a.offsets().inner().inner().clone(), 64, a.values().clone())
        }
        DataType::Utf8View => return Ok(DataBlock::VariableWidth(views_to_block(array.as_string_view()))),
        DataType::BinaryView => return Ok(DataBlock::VariableWidth(views_to_block(array.as_binary_view()))),
        other => bail!(unsupported, "arrays of type {other} cannot be written as a flat column"),
    };
    // The offsets buffer of a sliced array starts at the slice; `encode_block` rebases it.
    Ok(DataBlock::VariableWidth(VariableWidthBlock { offsets, bits_per_offset, data, num_values: len }))
}

fn views_to_block<T: arrow_array::types::ByteViewType + ?Sized>(array: &GenericByteViewArray<T>) -> VariableWidthBlock {
    let total: usize = (0..array.len()).map(|i| AsRef::<[u8]>::as_ref(array.value(i)).len()).sum();
    let mut data = MutableBuffer::with_capacity(total);
    let mut offsets: Vec<u64> = Vec::with_capacity(array.len() + 1);
    offsets.push(0);
    for i in 0..array.len() {
        if array.is_valid(i) {
            data.extend_from_slice(AsRef::<[u8]>::as_ref(array.value(i)));
        }
        offsets.push(data.len() as u64);
    }
    VariableWidthBlock {
        offsets: Buffer::from_vec(offsets),
        bits_per_offset: 64,
        data: data.into(),
        num_values: array.len() as u64,
    }
}

/// Turns a decoded block into an array of the flat type `data_type`, nulls included.
///
/// # Errors
/// [`Error::Corrupt`] if the block does not fit the type or Arrow rejects the data.
pub fn block_to_array(block: DataBlock, data_type: &DataType) -> Result<ArrayRef> {
    match split_nulls(block, data_type)? {
        Split::Done(array) => Ok(array),
        Split::Values(nulls, values) => array_from_values(values, nulls, data_type),
    }
}

/// A decoded block split into its validity and its values.
pub enum Split {
    /// An array already (all null, or of the null type).
    Done(ArrayRef),
    /// The validity, if any, and the block of the values.
    Values(Option<NullBuffer>, DataBlock),
}

/// Splits a decoded block of a field of `data_type` into its validity and its values.
///
/// # Errors
/// [`Error::Corrupt`] if validity and values differ in length.
pub fn split_nulls(block: DataBlock, data_type: &DataType) -> Result<Split> {
    let num_values = block.num_values() as usize;
    if let DataType::Null = data_type {
        return Ok(Split::Done(Arc::new(NullArray::new(num_values))));
    }
    let (nulls, values) = match block {
        DataBlock::AllNull { num_values } => {
            crate::encodings::limits::check_null_array(data_type, num_values)?;
            return Ok(Split::Done(new_null_array(data_type, num_values as usize)));
        }
        DataBlock::Nullable { validity, values } => (Some(NullBuffer::new(validity)), *values),
        other => (None, other),
    };
    ensure!(values.num_values() as usize == num_values, corrupt, "validity and values hold different numbers of rows");
    Ok(Split::Values(nulls, values))
}

/// The array of the flat type `data_type` holding `values` with validity `nulls`.
///
/// # Errors
/// [`Error::Corrupt`] if the block does not fit the type or Arrow rejects the data.
pub fn array_from_values(values: DataBlock, nulls: Option<NullBuffer>, data_type: &DataType) -> Result<ArrayRef> {
    let num_values = values.num_values() as usize;
    match (data_type, values) {
        (DataType::Boolean, DataBlock::Boolean(bits)) => {
            ensure!(
                nulls.as_ref().is_none_or(|n| n.len() == bits.len()),
                corrupt,
                "validity and values differ in length"
            );
            Ok(Arc::new(BooleanArray::new(bits, nulls)))
        }
        (_, DataBlock::FixedWidth(block)) if fixed_width_bits(data_type) == Some(block.bits_per_value) => {
            let data = ArrayDataBuilder::new(data_type.clone())
                .len(num_values)
                .add_buffer(aligned_to_width(block.data, block.bits_per_value))
                .nulls(nulls)
                .align_buffers(true)
                .build()?;
            Ok(make_array(data))
        }
        (_, DataBlock::VariableWidth(block)) if is_variable_width(data_type) => {
            variable_width_array(block, nulls, data_type)
        }
        (_, other) => {
            bail!(corrupt, "a page of a {data_type} column decodes to an incompatible block ({})", block_kind(&other))
        }
    }
}

/// `data` (values of `bits_per_value` bits), copied if it does not start at a multiple of the
/// value width (up to 16 bytes).
///
/// Arrow's validation (`align_buffers`) asks only for the alignment of the type's native
/// struct, but its kernels may read the values at their full width: `take` of an
/// `Interval(DayTime)` array (a struct of two `i32`, aligned to 4) views them as `i64` and
/// panics on a buffer aligned to 4 only. A slice of a loaded page starts wherever the value
/// lies in the file.
fn aligned_to_width(data: Buffer, bits_per_value: u64) -> Buffer {
    let width = usize::try_from(bits_per_value / 8).unwrap_or(usize::MAX).clamp(1, 16);
    if !width.is_power_of_two() || data.as_ptr().align_offset(width) == 0 {
        return data;
    }
    // Arrow's mutable buffers are aligned to 64 bytes.
    let mut copy = arrow_buffer::MutableBuffer::with_capacity(data.len());
    copy.extend_from_slice(data.as_slice());
    copy.into()
}

fn block_kind(block: &DataBlock) -> &'static str {
    match block {
        DataBlock::AllNull { .. } => "all null",
        DataBlock::Nullable { .. } => "nullable",
        DataBlock::Boolean(_) => "bits",
        DataBlock::FixedWidth(_) => "fixed width",
        DataBlock::VariableWidth(_) => "variable width",
        DataBlock::ListOffsets(_) => "list offsets",
        DataBlock::FixedSizeList { .. } => "fixed-size lists",
        DataBlock::Dictionary { .. } => "dictionary indices",
    }
}

fn variable_width_array(
    block: VariableWidthBlock,
    nulls: Option<NullBuffer>,
    data_type: &DataType,
) -> Result<ArrayRef> {
    if let DataType::Utf8View | DataType::BinaryView = data_type {
        return super::views::view_array(&block, None, nulls, data_type);
    }
    let large = matches!(data_type, DataType::LargeUtf8 | DataType::LargeBinary);
    let wanted_bits = if large { 64 } else { 32 };
    let offsets = if block.bits_per_offset == wanted_bits {
        block.offsets
    } else if large {
        Buffer::from_vec(block.offsets_u64()?)
    } else {
        let narrow = block
            .offsets_u64()?
            .into_iter()
            .map(i32::try_from)
            .collect::<std::result::Result<Vec<i32>, _>>()
            .map_err(|_| {
                Error::invalid_argument(format!(
                    "a batch of this {data_type} column holds more than 2 GiB of data; read it with a smaller batch size"
                ))
            })?;
        Buffer::from_vec(narrow)
    };
    let rows = block.num_values as usize;
    ensure!(nulls.as_ref().is_none_or(|n| n.len() == rows), corrupt, "validity and values differ in length");
    let utf8 = matches!(data_type, DataType::Utf8 | DataType::LargeUtf8);
    let offsets = match large {
        true => checked_offsets::<i64>(offsets, rows, block.data.as_slice(), utf8)?,
        false => checked_offsets::<i32>(offsets, rows, block.data.as_slice(), utf8)?,
    };
    let builder = ArrayDataBuilder::new(data_type.clone())
        .len(rows)
        .add_buffer(offsets)
        .add_buffer(block.data)
        .nulls(nulls)
        .align_buffers(true);
    // SAFETY: `checked_offsets` checked what Arrow's validation would (`rows + 1` offsets,
    // from 0 or more, never decreasing, within the data; for strings, values that are UTF-8
    // and offsets on character boundaries), and the validity's length.
    let data = unsafe { builder.build_unchecked() };
    Ok(make_array(data))
}

/// `offsets` (of `rows` values of `data`), aligned to `O`, once checked as Arrow's validation
/// of a variable-width array checks them — `rows + 1` offsets, the first not negative, none
/// smaller than the one before, the last within `data`, and for strings (`utf8`) the values
/// UTF-8 — but faster: the order in one pass without early exit (it vectorises), UTF-8 over the
/// span the values cover at once, character boundaries only for a span that is not ASCII.
/// Arrow looked at the data at every offset: for short strings, a fifth of a scan.
fn checked_offsets<O: arrow_buffer::ArrowNativeType + Ord>(
    offsets: Buffer,
    rows: usize,
    data: &[u8],
    utf8: bool,
) -> Result<Buffer> {
    let width = std::mem::size_of::<O>();
    let needed = rows.checked_add(1).and_then(|n| n.checked_mul(width)).filter(|needed| *needed <= offsets.len());
    let Some(needed) = needed else { bail!(corrupt, "{rows} strings with {} bytes of offsets", offsets.len()) };
    let offsets = offsets.slice_with_length(0, needed);
    let offsets = match offsets.as_ptr().align_offset(width) {
        0 => offsets,
        _ => Buffer::from_slice_ref(offsets.as_slice()),
    };
    let values: &[O] = offsets.typed_data::<O>();
    let (first, last) = (values[0], values[rows]);
    ensure!(first >= O::usize_as(0), corrupt, "a string offset is negative");
    let ordered = values.windows(2).fold(true, |ordered, pair| ordered & (pair[0] <= pair[1]));
    ensure!(ordered, corrupt, "string offsets decrease");
    ensure!(last.as_usize() <= data.len(), corrupt, "string offsets end past their {} bytes of data", data.len());
    if utf8 {
        super::views::check_utf8_values(values, data)?;
    }
    Ok(offsets)
}

/// Estimated size in bytes of `array` once encoded, used to cut pages.
pub fn encoded_size(array: &dyn Array) -> u64 {
    let len = array.len() as u64;
    let validity = if array.null_count() > 0 { len.div_ceil(8) } else { 0 };
    validity + values_size(array, 0, array.len())
}

/// Size of the values of rows `start..end` (without validity).
fn values_size(array: &dyn Array, start: usize, end: usize) -> u64 {
    let rows = (end - start) as u64;
    let data_type = array.data_type();
    if let Some(bits) = row_bits(data_type) {
        return (rows * bits).div_ceil(8);
    }
    if let DataType::Dictionary(..) = data_type {
        // A dictionary page stores an index per row (and its dictionary, shared).
        return 4 * rows;
    }
    let data_bytes = match data_type {
        DataType::Utf8 => byte_span(array.as_string::<i32>().value_offsets(), start, end),
        DataType::Binary => byte_span(array.as_binary::<i32>().value_offsets(), start, end),
        DataType::LargeUtf8 => byte_span(array.as_string::<i64>().value_offsets(), start, end),
        DataType::LargeBinary => byte_span(array.as_binary::<i64>().value_offsets(), start, end),
        DataType::Utf8View => view_lengths(array.as_string_view().views(), start, end),
        DataType::BinaryView => view_lengths(array.as_binary_view().views(), start, end),
        _ => 0,
    };
    data_bytes + 4 * rows
}

/// Total length of the values of views `start..end` (a view's low 32 bits are its length).
fn view_lengths(views: &[u128], start: usize, end: usize) -> u64 {
    views[start..end].iter().map(|v| (*v as u32) as u64).sum()
}

fn byte_span<O: arrow_array::OffsetSizeTrait>(offsets: &[O], start: usize, end: usize) -> u64 {
    (offsets[end].as_usize() - offsets[start].as_usize()) as u64
}

/// The number of leading rows of `array` whose encoded size fits in `budget` bytes: at least one
/// (a page holds at least one row, however large) and at most `array.len()`.
pub fn rows_within(array: &dyn Array, budget: u64) -> usize {
    let len = array.len();
    if len == 0 {
        return 0;
    }
    let per_row_validity = if array.null_count() > 0 { 1.0 / 8.0 } else { 0.0 };
    let bits = match array.data_type() {
        DataType::Dictionary(..) => Some(32),
        other => row_bits(other),
    };
    if let Some(bits) = bits {
        let per_row = bits as f64 / 8.0 + per_row_validity;
        return ((budget as f64 / per_row) as usize).clamp(1, len);
    }
    if !is_variable_width(array.data_type()) {
        return len;
    }
    if let DataType::Utf8View | DataType::BinaryView = array.data_type() {
        // Views have no offsets to search: one pass over the lengths, stopping at the budget.
        let views = match array.data_type() {
            DataType::Utf8View => array.as_string_view().views(),
            _ => array.as_binary_view().views(),
        };
        let mut size = 0.0;
        for (i, view) in views.iter().enumerate() {
            size += (*view as u32) as f64 + 4.0 + per_row_validity;
            if size > budget as f64 {
                return i.max(1);
            }
        }
        return len;
    }
    // Binary search on the cumulative size, which grows with the row count (O(1) per probe
    // through the offsets).
    let size = |n: usize| values_size(array, 0, n) as f64 + n as f64 * per_row_validity;
    let (mut lo, mut hi) = (1usize, len);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if size(mid) <= budget as f64 {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BinaryArray, Int32Array, LargeBinaryArray, LargeStringArray, StringArray, StringViewArray};

    /// Values sliced out of a page at an offset aligned to 4 but not to their 8-byte width make
    /// an array Arrow's kernels accept: `take` of a list of `Interval(DayTime)` copies the
    /// items as `i64` (`MutableArrayData`), and panicked on such items before they were
    /// aligned to the value width.
    #[test]
    fn fixed_width_values_off_their_width_are_aligned_for_arrow_kernels() {
        let values: Vec<i32> = vec![0, 1, 2, 3, 4, 5, 6];
        let page = Buffer::from_vec(values);
        let block = FixedWidthBlock { data: page.slice(4), bits_per_value: 64, num_values: 3 };
        assert_ne!(block.data.as_ptr().align_offset(8), 0, "the slice starts off an 8-byte boundary");
        let kind = DataType::Interval(arrow_schema::IntervalUnit::DayTime);
        // A null among the items: Arrow's list `take` then copies them with `MutableArrayData`.
        let nulls = NullBuffer::from(vec![true, false, true]);
        let items = array_from_values(DataBlock::FixedWidth(block), Some(nulls), &kind).unwrap();
        let field = Arc::new(arrow_schema::Field::new("item", kind, true));
        let offsets = arrow_buffer::OffsetBuffer::new(vec![0i32, 1, 3].into());
        let lists = arrow_array::ListArray::new(field, offsets, items, None);
        let taken = arrow_select::take::take(&lists, &arrow_array::UInt32Array::from(vec![1, 0]), None).unwrap();
        let taken = taken.as_any().downcast_ref::<arrow_array::ListArray>().unwrap();
        let items = taken.values().as_any().downcast_ref::<arrow_array::IntervalDayTimeArray>().unwrap();
        let got: Vec<Option<(i32, i32)>> = items.iter().map(|v| v.map(|v| (v.days, v.milliseconds))).collect();
        assert_eq!(got, vec![None, Some((5, 6)), Some((1, 2))]);
    }

    /// The array of `offsets` over `data` as `kind`, or the error saying why not.
    fn strings(offsets: &[i32], data: &[u8], kind: &DataType) -> Result<ArrayRef> {
        let block = VariableWidthBlock {
            offsets: Buffer::from_slice_ref(offsets),
            bits_per_offset: 32,
            data: Buffer::from_slice_ref(data),
            num_values: offsets.len() as u64 - 1,
        };
        variable_width_array(block, None, kind)
    }

    #[test]
    fn string_offsets_and_utf8_are_checked_as_arrow_would() {
        let text = "ab\u{e9}cd".as_bytes(); // a two-byte character at 2..4
        let got = strings(&[0, 2, 4, 6], text, &DataType::Utf8).unwrap();
        assert_eq!(got.as_string::<i32>(), &StringArray::from(vec!["ab", "\u{e9}", "cd"]));
        let ascii = strings(&[1, 1, 3], b"xyz", &DataType::LargeUtf8).unwrap();
        assert_eq!(ascii.as_string::<i64>(), &LargeStringArray::from(vec!["", "yz"]));
        for (offsets, data, kind, message) in [
            (&[0, 3, 6][..], text, &DataType::Utf8, "splits a character"),
            (&[0, 4, 2][..], text, &DataType::Utf8, "decrease"),
            (&[-1, 2][..], text, &DataType::Utf8, "negative"),
            (&[0, 7][..], text, &DataType::Binary, "past their"),
            (&[0, 2][..], &[0xff, 0x41][..], &DataType::Utf8, "not valid UTF-8"),
        ] {
            let error = strings(offsets, data, kind).unwrap_err().to_string();
            assert!(error.contains(message), "{offsets:?}: {error}");
        }
        // Binary values need no UTF-8; too few offsets for the values is an error.
        assert_eq!(strings(&[0, 1, 2], &[0xff, 0xfe], &DataType::Binary).unwrap().len(), 2);
        let short = VariableWidthBlock {
            offsets: Buffer::from_slice_ref([0i32, 1]),
            bits_per_offset: 32,
            data: Buffer::from_slice_ref(b"ab"),
            num_values: 2,
        };
        assert!(variable_width_array(short, None, &DataType::Utf8).is_err());
        // Offsets not aligned to their width are copied first.
        let bytes = Buffer::from_slice_ref([9u8, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]);
        let unaligned = VariableWidthBlock {
            offsets: bytes.slice(1),
            bits_per_offset: 32,
            data: Buffer::from_slice_ref(b"abc"),
            num_values: 2,
        };
        let got = variable_width_array(unaligned, None, &DataType::Utf8).unwrap();
        assert_eq!(got.as_string::<i32>(), &StringArray::from(vec!["", "ab"]));
    }

    fn round_trip(array: ArrayRef) {
        let block = array_to_block(array.as_ref()).unwrap();
        let back = block_to_array(block, array.data_type()).unwrap();
        assert_eq!(back.as_ref(), array.as_ref());
    }

    #[test]
    fn flat_arrays_round_trip_through_blocks() {
        round_trip(Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])));
        round_trip(Arc::new(Int32Array::from(vec![1, 2, 3, 4]).slice(1, 2)));
        round_trip(Arc::new(StringArray::from(vec![Some("a"), None, Some("ccc")]).slice(1, 2)));
        round_trip(Arc::new(LargeStringArray::from(vec!["x", "yy"])));
        round_trip(Arc::new(BinaryArray::from(vec![b"x".as_ref(), b""])));
        round_trip(Arc::new(LargeBinaryArray::from(vec![b"x".as_ref()])));
        round_trip(Arc::new(StringViewArray::from(vec![Some("a long string of more than twelve"), None])));
        round_trip(Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])));
        round_trip(Arc::new(NullArray::new(3)));
        round_trip(Arc::new(Int32Array::from(vec![None, None])));
    }

    #[test]
    fn rows_within_budget() {
        let ints = Int32Array::from(vec![0; 100]);
        assert_eq!(rows_within(&ints, 40), 10);
        assert_eq!(rows_within(&ints, 1), 1);
        let strings = StringArray::from(vec!["aaaa"; 10]);
        assert_eq!(rows_within(&strings, 16), 2);
    }
}
