//! Integer helpers shared by the integer encodings ([`super::bitpacked`], [`super::delta`],
//! [`super::rle`], [`super::dictionary`]): reading fixed-width values as integers, and
//! bit-packing blocks of 1024 in the FastLanes layout (the `fastlanes` crate).
//!
//! FastLanes packs a block of 1024 values of a lane type `T` (u8, u16, u32, u64) into
//! `1024 × width / T::BITS` lanes, interleaved so that unpacking is vectorisable; a block of
//! `width` bits takes `128 × width` bytes whatever `T`.

use std::ops::Range;

use arrow_buffer::{ArrowNativeType, BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer, ToByteSlice};
use fastlanes::{BitPacking, FoR};

use crate::encodings::DataBlock;
use crate::encodings::range_test::{RangeTest, within_words};
use crate::error::{Result, bail, ensure};

/// Values per FastLanes block.
pub const BLOCK: usize = 1024;

/// The value of `bytes` (1, 2, 4, 8 or 16 little-endian bytes) as an integer.
#[inline]
pub fn read_int(bytes: &[u8], signed: bool) -> i128 {
    // One load of the exact width (a copy into a zeroed 16-byte array then a load stalls the
    // load on the copy's stores: a sixth of a write of integer columns).
    macro_rules! exact {
        ($signed:ty, $unsigned:ty) => {
            if let Ok(array) = bytes.try_into() {
                return if signed {
                    <$signed>::from_le_bytes(array) as i128
                } else {
                    <$unsigned>::from_le_bytes(array) as i128
                };
            }
        };
    }
    match bytes.len() {
        1 => exact!(i8, u8),
        2 => exact!(i16, u16),
        4 => exact!(i32, u32),
        8 => exact!(i64, u64),
        16 => exact!(i128, u128),
        _ => {}
    }
    let mut buf = [0u8; 16];
    buf[..bytes.len()].copy_from_slice(bytes);
    let unsigned = u128::from_le_bytes(buf);
    let bits = bytes.len() * 8;
    if signed && bits < 128 && (unsigned >> (bits - 1)) & 1 == 1 {
        (unsigned | (u128::MAX << bits)) as i128
    } else {
        unsigned as i128
    }
}

/// Writes the low `out.len()` bytes of `value`, little endian.
pub fn write_int(value: i128, out: &mut [u8]) {
    let bytes = value.to_le_bytes();
    out.copy_from_slice(&bytes[..out.len()]);
}

/// Bits needed to store every integer from 0 to `max`.
pub fn bits_needed(max: u128) -> u32 {
    128 - max.leading_zeros()
}

/// The largest value of `width` bits (all of a `u64` from 64 bits on).
pub fn largest_of_width(width: u32) -> u64 {
    if width >= 64 { u64::MAX } else { (1u64 << width) - 1 }
}

/// Bytes of one packed block of `width` bits.
pub fn block_bytes(width: u32) -> u64 {
    128 * width as u64
}

/// The blocks holding the rows of `ranges`, as merged ranges of block numbers.
pub fn blocks_for(ranges: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for range in ranges.iter().filter(|r| r.end > r.start) {
        let blocks = range.start / BLOCK as u64..range.end.div_ceil(BLOCK as u64);
        match out.last_mut() {
            Some(last) if blocks.start <= last.end => last.end = last.end.max(blocks.end),
            _ => out.push(blocks),
        }
    }
    out
}

/// Consecutive `pieces` (page row ranges, in order) gathered where they share a block: each item
/// is the rows from the first piece's start to the last one's end and the indices of its pieces.
///
/// Decoders unpack whole blocks; a read of scattered rows (a `take`) has many single-row pieces
/// per block, and unpacking each block once per group instead of once per piece saves up to
/// 1024× the work.
pub fn shared_block_spans(pieces: &[Range<u64>]) -> Vec<(Range<u64>, Range<usize>)> {
    let mut out: Vec<(Range<u64>, Range<usize>)> = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        match out.last_mut() {
            // The last block of the span holds this piece's first row: unpack them together.
            Some((span, members))
                if piece.start >= span.start
                    && piece.start / BLOCK as u64 <= span.end.saturating_sub(1) / BLOCK as u64 =>
            {
                span.end = span.end.max(piece.end);
                members.end = i + 1;
            }
            _ => out.push((piece.clone(), i..i + 1)),
        }
    }
    out
}

/// Whether the `wanted` rows of a span of `span` rows (see [`shared_block_spans`]) are better
/// unpacked one by one than by unpacking the span's blocks: when they average fewer than one in
/// 16 of the blocks' rows. A value alone costs a word or two and a table lookup, some 16 times
/// what one value of a vectorised block costs.
pub fn unpack_alone(wanted: u64, span: &Range<u64>) -> bool {
    let blocks = span.end.div_ceil(BLOCK as u64) - span.start / BLOCK as u64;
    wanted * 16 < blocks * BLOCK as u64
}

/// Packs `values` (any count; the last block padded with zeros) into blocks of `width` bits
/// with lanes of `lane_bytes` bytes, returning the packed bytes.
///
/// # Errors
/// An internal error if a value does not fit `width` bits or the widths are invalid.
pub fn pack(values: &[u64], width: u32, lane_bytes: usize) -> Result<Buffer> {
    if let Some(max) = values.iter().max() {
        ensure!(bits_needed(*max as u128) <= width, internal, "a value does not fit {width} bits");
    }
    match lane_bytes {
        1 => pack_lanes(values.iter().map(|v| *v as u8), width),
        2 => pack_lanes(values.iter().map(|v| *v as u16), width),
        4 => pack_lanes(values.iter().map(|v| *v as u32), width),
        8 => pack_lanes(values.iter().copied(), width),
        other => bail!(internal, "lanes of {other} bytes"),
    }
}

/// Packs `values` of the lane type `T` into blocks of `width` bits (the last block padded with
/// zeros). Bits of a value above `width` are dropped: callers pass values that fit.
///
/// # Errors
/// An internal error if `width` exceeds the lane width.
pub fn pack_lanes<T: BitPacking + ArrowNativeType>(values: impl Iterator<Item = T>, width: u32) -> Result<Buffer> {
    let lane_bits = size_of::<T>() * 8;
    ensure!(width as usize <= lane_bits, internal, "bit width {width} exceeds {lane_bits}-bit lanes");
    let mut values = values.peekable();
    let mut out: Vec<T> = Vec::with_capacity(values.size_hint().0.div_ceil(BLOCK) * BLOCK * width as usize / lane_bits);
    let mut input = [T::default(); BLOCK];
    while values.peek().is_some() {
        input.fill(T::default());
        for (slot, value) in input.iter_mut().zip(values.by_ref()) {
            *slot = value;
        }
        pack_block(&input, width, &mut out);
    }
    Ok(Buffer::from_vec(out))
}

/// Packs one block of 1024 values in `width` bits (at most the lane width; bits above `width`
/// are dropped), appending its `1024 × width / T::BITS` lanes to `out`.
pub fn pack_block<T: BitPacking + ArrowNativeType>(block: &[T; BLOCK], width: u32, out: &mut Vec<T>) {
    let width = (width as usize).min(size_of::<T>() * 8);
    let start = out.len();
    out.resize(start + BLOCK * width / (size_of::<T>() * 8), T::default());
    // SAFETY: `block` holds exactly 1024 values and the output slice exactly
    // 1024 × width / T::BITS lanes; `width` is at most T::BITS.
    unsafe { T::unchecked_pack(width, block, &mut out[start..]) };
}

/// Unpacks whole blocks of `width`-bit values (lanes of `lane_bytes`) from `packed`, adding
/// `reference` (wrapping, in the lane type): 1024 lane values per block, little endian.
///
/// # Errors
/// [`crate::Error::Corrupt`] if `packed` is not a whole number of blocks, or is not aligned to
/// the lane width (callers align buffers first).
pub fn unpack_blocks(packed: &Buffer, width: u32, lane_bytes: usize, reference: u64) -> Result<Buffer> {
    unpack_blocks_mut(packed, width, lane_bytes, reference).map(Buffer::from)
}

/// The number of whole blocks of `width`-bit values in lanes of `lane_bytes` that `packed`
/// holds, checking what unpacking relies on: a valid, non-zero width, whole blocks and aligned
/// lanes.
fn checked_block_count(packed: &Buffer, width: u32, lane_bytes: usize) -> Result<usize> {
    ensure!(matches!(lane_bytes, 1 | 2 | 4 | 8), corrupt, "lanes of {lane_bytes} bytes");
    ensure!(width as usize <= lane_bytes * 8, corrupt, "bit width {width} exceeds {lane_bytes}-byte lanes");
    let block_len = block_bytes(width) as usize;
    ensure!(block_len > 0, internal, "unpacking blocks of width 0");
    ensure!(
        packed.len().is_multiple_of(block_len),
        corrupt,
        "packed buffer of {} bytes is not whole blocks",
        packed.len()
    );
    ensure!((packed.as_ptr() as usize).is_multiple_of(lane_bytes), internal, "packed buffer is not aligned");
    Ok(packed.len() / block_len)
}

/// Most positions [`for_each_block_group`] passes at once.
pub const GROUP: usize = 64;

/// Calls `visit(block, indices)` for each run of consecutive `positions` (in any order) that lie
/// in one block, with their indices within the block (below 1024), at most [`GROUP`] at a time.
///
/// Values unpacked alone are dominated by the memory latency of their words (a take's pages are
/// larger than the CPU's caches): one call of FastLanes' `unchecked_unpack_indices` per group
/// is a tight loop whose loads the CPU overlaps, where a call per value left a value's lookups
/// and checks between two loads and took some 45 ns a value on the 300-column take.
pub fn for_each_block_group(
    positions: impl Iterator<Item = u64>,
    mut visit: impl FnMut(u64, &[usize]) -> Result<()>,
) -> Result<()> {
    let mut indices = [0usize; GROUP];
    let (mut block, mut len) = (0u64, 0usize);
    for position in positions {
        let this = position / BLOCK as u64;
        if len == GROUP || (len > 0 && this != block) {
            visit(block, &indices[..len])?;
            len = 0;
        }
        block = this;
        indices[len] = (position % BLOCK as u64) as usize;
        len += 1;
    }
    if len > 0 {
        visit(block, &indices[..len])?;
    }
    Ok(())
}

/// Appends to `out`, as lane values plus `reference` (wrapping), the values at `positions`
/// (counted from the start of `packed`, in any order) of the whole blocks of `width`-bit values
/// in lanes of `lane_bytes` that `packed` holds. Each value is unpacked alone (see
/// [`unpack_alone`]), a block's run of positions at once (see [`for_each_block_group`]).
///
/// # Errors
/// As [`unpack_blocks`]; an internal error for a position past the blocks.
pub fn unpack_selected(
    packed: &Buffer,
    width: u32,
    lane_bytes: usize,
    reference: u64,
    positions: impl Iterator<Item = u64>,
    out: &mut MutableBuffer,
) -> Result<()> {
    let num_blocks = checked_block_count(packed, width, lane_bytes)?;
    macro_rules! unpack_lanes {
        ($t:ty) => {{
            let lanes = packed.typed_data::<$t>();
            let lanes_per_block = BLOCK * width as usize / <$t>::BITS as usize;
            let mut values = [std::mem::MaybeUninit::<$t>::uninit(); GROUP];
            for_each_block_group(positions, |block, indices| {
                let block = block as usize;
                ensure!(block < num_blocks, internal, "a bit-packed value past the {num_blocks} blocks read");
                let block = &lanes[block * lanes_per_block..(block + 1) * lanes_per_block];
                let values = &mut values[..indices.len()];
                // SAFETY: `block` holds exactly 1024 × width / T::BITS lanes, `width` is at most
                // T::BITS (checked by `checked_block_count`), the indices are below 1024 and
                // `values` holds one value per index.
                unsafe { <$t>::unchecked_unpack_indices(width as usize, block, indices, values) };
                // SAFETY: `unchecked_unpack_indices` wrote every value.
                let values = values.iter().map(|v| unsafe { v.assume_init() });
                out.extend(values.map(|v| v.wrapping_add(reference as $t)));
                Ok(())
            })?;
        }};
    }
    match lane_bytes {
        1 => unpack_lanes!(u8),
        2 => unpack_lanes!(u16),
        4 => unpack_lanes!(u32),
        _ => unpack_lanes!(u64),
    }
    Ok(())
}

/// How lane values (differences from a reference) become values wider than their lanes: 8-byte
/// values (decimals asked for at 64 bits) or 16-byte ones (decimal128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Widening {
    /// 8-byte values: the reference plus the difference, wrapping in 64 bits.
    To64(i64),
    /// 16-byte values whose every sum fits 64 bits: summed in 64 bits and sign-extended, which
    /// vectorises.
    To128Narrow(i64),
    /// 16-byte values summed in 128 bits.
    To128(i128),
}

impl Widening {
    /// The widening of `value_bytes`-byte values (8 or 16) stored as `width`-bit differences
    /// from `reference`.
    pub fn new(value_bytes: usize, width: u32, reference: i128) -> Self {
        let largest = largest_of_width(width);
        if value_bytes == 8 {
            return Self::To64(reference as i64);
        }
        match i64::try_from(reference).ok().filter(|r| r.checked_add_unsigned(largest).is_some()) {
            // The true sum fits 64 bits, so the wrapping one is it.
            Some(reference) => Self::To128Narrow(reference),
            None => Self::To128(reference),
        }
    }

    /// Appends `differences` widened to `out`.
    ///
    /// # Errors
    /// [`crate::Error::Internal`] if `out` does not hold whole values.
    pub fn extend<T: Copy + Into<u64>>(self, differences: &[T], out: &mut MutableBuffer) -> Result<()> {
        match self {
            Self::To64(r) => write_mapped(differences, out, |d| r.wrapping_add(d as i64)),
            Self::To128Narrow(r) => write_mapped(differences, out, |d| r.wrapping_add(d as i64) as i128),
            Self::To128(r) => write_mapped(differences, out, |d| r.wrapping_add(d as i128)),
        }
    }

    /// Appends the differences in `lanes` (lanes of `lane_bytes`) widened to `out`.
    ///
    /// # Errors
    /// As [`Self::extend`]; [`crate::Error::Internal`] for lanes of another width.
    pub fn extend_lanes(self, lanes: &MutableBuffer, lane_bytes: usize, out: &mut MutableBuffer) -> Result<()> {
        match lane_bytes {
            1 => self.extend(lanes.typed_data::<u8>(), out),
            2 => self.extend(lanes.typed_data::<u16>(), out),
            4 => self.extend(lanes.typed_data::<u32>(), out),
            8 => self.extend(lanes.typed_data::<u64>(), out),
            other => bail!(internal, "widening lanes of {other} bytes"),
        }
    }
}

/// Appends `f` of each of `values` to `out`, written as computed: zeroing the output first
/// (`resize`) was a `memset` of every decimal column's values, and in a first read of lineitem
/// an eighth of its page faults; a stack buffer copied out afterwards was a fifth of a decimal
/// column's scan.
fn write_mapped<T: Copy + Into<u64>, O: ArrowNativeType>(
    values: &[T],
    out: &mut MutableBuffer,
    f: impl Fn(u64) -> O,
) -> Result<()> {
    let len = out.len();
    ensure!(len.is_multiple_of(size_of::<O>()), internal, "{}-byte values appended at byte {len}", size_of::<O>());
    if values.is_empty() {
        // An empty buffer's pointer need not be aligned for `O`.
        return Ok(());
    }
    out.reserve(values.len() * size_of::<O>());
    // SAFETY: `reserve` made room for `values.len()` values after `len`, a multiple of their size
    // from the buffer's 64-byte aligned start, so the slice is in bounds and aligned for `O`; it
    // does not overlap `values` (not in `out`'s spare capacity: `out` is borrowed mutably).
    let wide = unsafe {
        std::slice::from_raw_parts_mut(out.as_mut_ptr().add(len).cast::<std::mem::MaybeUninit<O>>(), values.len())
    };
    wide.iter_mut().zip(values).for_each(|(w, v)| _ = w.write(f((*v).into())));
    // SAFETY: the loop above wrote every one of the `values.len()` values.
    unsafe { out.set_len(len + values.len() * size_of::<O>()) };
    Ok(())
}

/// Appends to `out` the values at each of `pieces` (ranges of positions counted from the start
/// of `packed`, in any order) of the whole blocks of `width`-bit differences in lanes of
/// `lane_bytes` that `packed` holds, each widened as `widening` says: decimals stored in lanes
/// narrower than their values.
///
/// Unpacked block by block (a block shared by consecutive pieces once) into a buffer that stays
/// in the CPU's cache, then widened from it: the lane values never reach memory.
///
/// # Errors
/// As [`unpack_blocks`]; an internal error for a piece past the blocks.
pub fn unpack_widened(
    packed: &Buffer,
    width: u32,
    lane_bytes: usize,
    widening: Widening,
    pieces: impl Iterator<Item = Range<usize>>,
    out: &mut MutableBuffer,
) -> Result<()> {
    let num_blocks = checked_block_count(packed, width, lane_bytes)?;
    macro_rules! widen_lanes {
        ($t:ty) => {{
            let lanes = packed.typed_data::<$t>();
            let lanes_per_block = BLOCK * width as usize / <$t>::BITS as usize;
            let mut values = [0 as $t; BLOCK];
            let mut unpacked = None;
            for rows in pieces {
                ensure!(
                    rows.start <= rows.end && rows.end <= num_blocks * BLOCK,
                    internal,
                    "bit-packed rows {rows:?} past the {num_blocks} blocks read"
                );
                for block in rows.start / BLOCK..rows.end.div_ceil(BLOCK) {
                    if unpacked != Some(block) {
                        let block_lanes = &lanes[block * lanes_per_block..][..lanes_per_block];
                        // SAFETY: `block_lanes` holds exactly 1024 × width / T::BITS lanes and
                        // `width` is at most T::BITS (`checked_block_count`).
                        unsafe { <$t>::unchecked_unpack(width as usize, block_lanes, &mut values) };
                        unpacked = Some(block);
                    }
                    let first = rows.start.max(block * BLOCK) - block * BLOCK;
                    let end = rows.end.min((block + 1) * BLOCK) - block * BLOCK;
                    widening.extend(&values[first..end], out)?;
                }
            }
        }};
    }
    match lane_bytes {
        1 => widen_lanes!(u8),
        2 => widen_lanes!(u16),
        4 => widen_lanes!(u32),
        _ => widen_lanes!(u64),
    }
    Ok(())
}

/// Whether each value of `block` passes `test`, reading the values as integers of their width,
/// signed as `test` says; `None` unless `block` holds integers of 1 to 16 bytes (no nulls).
///
/// How encodings that store each distinct value once (dictionaries, runs, constants) test a
/// page: each stored value once, then the result mapped to the rows.
pub fn values_in_range(block: &DataBlock, test: &RangeTest) -> Option<Vec<bool>> {
    let DataBlock::FixedWidth(block) = block else { return None };
    let width = block.bits_per_value as usize / 8;
    if !matches!(width, 1 | 2 | 4 | 8 | 16) {
        return None;
    }
    let values = block.data.as_slice().chunks_exact(width);
    Some(values.map(|v| (test.low..=test.high).contains(&read_int(v, test.signed))).collect())
}

/// Appends to `out` whether each of rows `rows` (counted from the first value of `packed`) is
/// in `low..=high`, testing the values as packed (no reference added) in lanes of `lane_bytes`.
///
/// Each block is unpacked into a buffer on the stack and tested while it is in cache: the
/// values are never written out (a filter column's values were a quarter of TPC-H Q6's time
/// as they were unpacked into memory and read again to compare).
///
/// # Errors
/// [`crate::Error::Internal`] for rows past the blocks of `packed` or bounds past the lanes;
/// [`crate::Error::Corrupt`] for a width past the lanes or blocks that are not whole.
pub fn test_packed(
    packed: &Buffer,
    width: u32,
    lane_bytes: usize,
    rows: Range<usize>,
    (low, high): (u64, u64),
    out: &mut BooleanBufferBuilder,
) -> Result<()> {
    let num_blocks = checked_block_count(packed, width, lane_bytes)?;
    ensure!(
        rows.start <= rows.end && rows.end <= num_blocks * BLOCK,
        internal,
        "bit-packed rows {rows:?} past the {num_blocks} blocks read"
    );
    let mut words = Vec::with_capacity(BLOCK / 64);
    macro_rules! test_lanes {
        ($t:ty) => {{
            let Some((low, high)) = <$t>::try_from(low).ok().zip(<$t>::try_from(high).ok()) else {
                bail!(internal, "a range of {low}..={high} tested in {lane_bytes}-byte lanes")
            };
            let lanes = packed.typed_data::<$t>();
            let lanes_per_block = BLOCK * width as usize / <$t>::BITS as usize;
            let mut values = [0 as $t; BLOCK];
            for block in rows.start / BLOCK..rows.end.div_ceil(BLOCK) {
                let block_lanes = &lanes[block * lanes_per_block..][..lanes_per_block];
                // SAFETY: `block_lanes` holds exactly 1024 × width / T::BITS lanes and `width`
                // is at most T::BITS (`checked_block_count`).
                unsafe { <$t>::unchecked_unpack(width as usize, block_lanes, &mut values) };
                let first = rows.start.max(block * BLOCK) - block * BLOCK;
                let end = rows.end.min((block + 1) * BLOCK) - block * BLOCK;
                words.clear();
                within_words(&values[first..end], low, high, &mut words);
                out.append_packed_range(0..end - first, words.as_slice().to_byte_slice());
            }
        }};
    }
    match lane_bytes {
        1 => test_lanes!(u8),
        2 => test_lanes!(u16),
        4 => test_lanes!(u32),
        _ => test_lanes!(u64),
    }
    Ok(())
}

/// [`unpack_blocks`] into a buffer the caller may go on writing to.
pub fn unpack_blocks_mut(packed: &Buffer, width: u32, lane_bytes: usize, reference: u64) -> Result<MutableBuffer> {
    let num_blocks = checked_block_count(packed, width, lane_bytes)?;
    let len = num_blocks * BLOCK * lane_bytes;
    let mut out = MutableBuffer::with_capacity(len);
    // SAFETY: not zeroed first (that was a tenth of a lineitem scan): the blocks below cover
    // `out` exactly (`packed` is `num_blocks` whole blocks, checked above) and each is written
    // whole by `unfor_pack` before anything reads it; the lane types have no invalid values.
    unsafe { out.set_len(len) };
    macro_rules! unpack_lanes {
        ($t:ty) => {{
            let lanes = packed.typed_data::<$t>();
            let lanes_per_block = BLOCK * width as usize / <$t>::BITS as usize;
            let output = out.typed_data_mut::<$t>();
            for (block, values) in lanes.chunks_exact(lanes_per_block).zip(output.chunks_exact_mut(BLOCK)) {
                // SAFETY: `block` holds exactly 1024 × width / T::BITS lanes and `values` 1024
                // values; `width` is at most T::BITS (checked above).
                unsafe { <$t as FoR>::unchecked_unfor_pack(width as usize, block, reference as $t, values) };
            }
        }};
    }
    match lane_bytes {
        1 => unpack_lanes!(u8),
        2 => unpack_lanes!(u16),
        4 => unpack_lanes!(u32),
        _ => unpack_lanes!(u64),
    }
    Ok(out)
}

/// Selected values of a block at or below which [`unpack_filtered`] unpacks each alone instead
/// of the whole block. From a profile of TPC-H Q6's filtered read (`l_extendedprice`, 64-bit
/// lanes of about 20 bits): a value unpacked alone cost about a 44th of a whole block.
pub const SPARSE_BLOCK_VALUES: usize = 40;

/// Appends to `out` the values of positions `rows` of `packed` (whole blocks of `width`-bit
/// values in lanes of `lane_bytes`, `reference` added) where `selected` (one bit per position
/// of `rows`) is set.
///
/// A block with at most [`SPARSE_BLOCK_VALUES`] selected positions has those values unpacked
/// alone (a filtered read of TPC-H Q6 selects about 19 rows of each block); any other block
/// holding a selected position is unpacked into a block-sized buffer that stays in the CPU's
/// cache and its selected values are copied out; blocks without one are not unpacked.
/// Unpacking every row to memory and filtering the values afterwards writes and reads them all
/// twice.
///
/// # Errors
/// As [`unpack_blocks`]; [`crate::Error::Internal`] if `rows` runs past the blocks or
/// `selected` is not as long as `rows`.
pub fn unpack_filtered(
    packed: &Buffer,
    width: u32,
    lane_bytes: usize,
    reference: u64,
    rows: Range<usize>,
    selected: &BooleanBuffer,
    out: &mut MutableBuffer,
) -> Result<()> {
    let num_blocks = checked_block_count(packed, width, lane_bytes)?;
    ensure!(
        rows.start <= rows.end && rows.end <= num_blocks * BLOCK && selected.len() == rows.end - rows.start,
        internal,
        "unpacking rows {rows:?} of {num_blocks} blocks with {} selection bits",
        selected.len()
    );
    out.reserve(selected.count_set_bits() * lane_bytes);
    macro_rules! unpack_lanes {
        ($t:ty) => {{
            let lanes = packed.typed_data::<$t>();
            let lanes_per_block = BLOCK * width as usize / <$t>::BITS as usize;
            let mut values = [0 as $t; BLOCK];
            let mut position = rows.start;
            while position < rows.end {
                let block = position / BLOCK;
                let end = ((block + 1) * BLOCK).min(rows.end);
                let bits = selected.slice(position - rows.start, end - position);
                let count = bits.count_set_bits();
                let first = position % BLOCK;
                let lanes = &lanes[block * lanes_per_block..(block + 1) * lanes_per_block];
                match count {
                    // No selected value: the block is not unpacked.
                    0 => {}
                    // Few values: each unpacked alone from the block's lanes, in one call.
                    1..=SPARSE_BLOCK_VALUES => {
                        let mut indices = [0usize; SPARSE_BLOCK_VALUES];
                        for (index, i) in indices.iter_mut().zip(bits.set_indices()) {
                            *index = first + i;
                        }
                        let mut picked = [std::mem::MaybeUninit::<$t>::uninit(); SPARSE_BLOCK_VALUES];
                        let picked = &mut picked[..count];
                        // SAFETY: `lanes` holds exactly 1024 × width / T::BITS lanes, `width` is at
                        // most T::BITS (checked above), the indices are below 1024 (positions of
                        // one block) and `picked` holds one value per index (`count` of each).
                        unsafe { <$t>::unchecked_unpack_indices(width as usize, lanes, &indices[..count], picked) };
                        // SAFETY: `unchecked_unpack_indices` wrote every value.
                        let values = picked.iter().map(|v| unsafe { v.assume_init() });
                        out.extend(values.map(|v| v.wrapping_add(reference as $t)));
                    }
                    _ => {
                        // SAFETY: `lanes` holds exactly 1024 × width / T::BITS lanes and `values`
                        // 1024 values; `width` is at most T::BITS (checked above).
                        unsafe {
                            <$t as FoR>::unchecked_unfor_pack(width as usize, lanes, reference as $t, &mut values)
                        };
                        if count == bits.len() {
                            out.extend_from_slice(&values[first..first + count]);
                        } else {
                            // Compacted in place (the `n`th selected value lies at or after `n`),
                            // then copied out at once: no capacity check per value.
                            let mut n = 0;
                            for i in bits.set_indices() {
                                values[n] = values[first + i];
                                n += 1;
                            }
                            out.extend_from_slice(&values[..n]);
                        }
                    }
                }
                position = end;
            }
        }};
    }
    match lane_bytes {
        1 => unpack_lanes!(u8),
        2 => unpack_lanes!(u16),
        4 => unpack_lanes!(u32),
        _ => unpack_lanes!(u64),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests on packed values against the unpacked values compared one by one: every lane
    /// type, widths up to the lane's, rows starting and ending inside blocks, bounds at 0 and
    /// at the largest value of the width.
    #[test]
    fn packed_values_test_as_unpacked_ones_compare() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 11
        };
        for lane_bytes in [1usize, 2, 4, 8] {
            for width in [1u32, 3, 7, 8, 13, 31, 33, 63, 64].into_iter().filter(|w| *w as usize <= lane_bytes * 8) {
                let largest = largest_of_width(width);
                let values: Vec<u64> = (0..2500).map(|_| next() & largest).collect();
                let packed = pack(&values, width, lane_bytes).unwrap();
                for _ in 0..20 {
                    let start = (next() % 2500) as usize;
                    let end = start + (next() % (2500 - start as u64 + 1)) as usize;
                    let pick = |n: u64| match n % 4 {
                        0 => 0,
                        1 => largest,
                        _ => values[(n as usize / 4) % values.len()],
                    };
                    let (a, b) = (pick(next()), pick(next()));
                    let (low, high) = (a.min(b), a.max(b));
                    let mut out = BooleanBufferBuilder::new(0);
                    test_packed(&packed, width, lane_bytes, start..end, (low, high), &mut out).unwrap();
                    let got: Vec<bool> = out.finish().iter().collect();
                    let want: Vec<bool> = values[start..end].iter().map(|v| low <= *v && *v <= high).collect();
                    assert_eq!(got, want, "lanes of {lane_bytes}, width {width}, rows {start}..{end}, {low}..={high}");
                }
            }
        }
    }

    /// Selected values against the values picked one by one: every lane type, widths up to the
    /// lane's, rows starting and ending inside blocks, and blocks with no selected value, one,
    /// exactly [`SPARSE_BLOCK_VALUES`], one more, and every value (the sparse and the whole-block
    /// paths and the boundary between them).
    #[test]
    fn filtered_values_are_the_selected_ones() {
        let mut state = 3u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 11
        };
        for lane_bytes in [1usize, 2, 4, 8] {
            let lane_bits = lane_bytes as u32 * 8;
            for width in [1u32, 5, 8, 13, 31, 33, 64].into_iter().filter(|w| *w <= lane_bits) {
                let largest = largest_of_width(width);
                let values: Vec<u64> = (0..5 * BLOCK as u64).map(|_| next() & largest).collect();
                let packed = pack(&values, width, lane_bytes).unwrap();
                let lane_mask = largest_of_width(lane_bits);
                let reference = next() & lane_mask;
                for _ in 0..12 {
                    let start = (next() % (2 * BLOCK as u64)) as usize;
                    let end = start + (next() % (values.len() - start) as u64) as usize;
                    // Each block's share of selected rows: none, one, the sparse bound, one past it, all.
                    let per_block = [0, 1, SPARSE_BLOCK_VALUES, SPARSE_BLOCK_VALUES + 1, BLOCK];
                    let mut selected = BooleanBufferBuilder::new(end - start);
                    for row in start..end {
                        let want = per_block[(row / BLOCK + start) % per_block.len()];
                        selected.append((next() % BLOCK as u64) < want as u64);
                    }
                    let selected = selected.finish();
                    let mut out = MutableBuffer::new(0);
                    unpack_filtered(&packed, width, lane_bytes, reference, start..end, &selected, &mut out).unwrap();
                    let got: Vec<u64> =
                        out.as_slice().chunks_exact(lane_bytes).map(|v| read_int(v, false) as u64).collect();
                    let want: Vec<u64> = (start..end)
                        .filter(|row| selected.value(row - start))
                        .map(|row| values[row].wrapping_add(reference) & lane_mask)
                        .collect();
                    assert_eq!(got, want, "lanes of {lane_bytes}, width {width}, rows {start}..{end}");
                }
            }
        }
    }

    #[test]
    fn pieces_sharing_a_block_are_unpacked_together() {
        let pieces = [3..4, 10..12, 1023..1025, 1500..1501, 2048..2049, 5000..5001, 5001..5002];
        let spans = shared_block_spans(&pieces);
        assert_eq!(spans, vec![(3..1501, 0..4), (2048..2049, 4..5), (5000..5002, 5..7)]);
        // Every piece lies within its span, and every span covers whole blocks once.
        for (span, members) in &spans {
            assert!(pieces[members.clone()].iter().all(|p| span.start <= p.start && p.end <= span.end));
        }
        assert!(shared_block_spans(&[]).is_empty());
    }

    #[test]
    fn ints_read_and_write_with_sign() {
        assert_eq!(read_int(&[0xff], true), -1);
        assert_eq!(read_int(&[0xff], false), 255);
        assert_eq!(read_int(&(-5i64).to_le_bytes(), true), -5);
        // Every width against sign extension by hand.
        let mut state = 11u64;
        for _ in 0..2000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let bytes = (state as u128 | (state as u128) << 64).rotate_left(state as u32 % 128).to_le_bytes();
            for width in [1, 2, 3, 4, 8, 16] {
                let raw = u128::from_le_bytes(std::array::from_fn(|i| if i < width { bytes[i] } else { 0 }));
                let bits = width * 8;
                let negative = (raw >> (bits - 1)) & 1 == 1;
                let extended = if negative && bits < 128 { raw | (u128::MAX << bits) } else { raw };
                assert_eq!(read_int(&bytes[..width], true), extended as i128, "{width} {bytes:?}");
                assert_eq!(read_int(&bytes[..width], false), raw as i128, "{width} {bytes:?}");
            }
        }
        let mut out = [0u8; 2];
        write_int(-2, &mut out);
        assert_eq!(out, (-2i16).to_le_bytes());
        assert_eq!(bits_needed(0), 0);
        assert_eq!(bits_needed(255), 8);
        assert_eq!(blocks_for(&[0..10, 1000..1030, 5000..5001]), vec![0..2, 4..5]);
    }

    #[test]
    fn pack_unpack_round_trip() {
        for (lane, width) in [(1, 3), (2, 11), (4, 1), (4, 17), (8, 40), (8, 64)] {
            let values: Vec<u64> = (0..2500u64).map(|i| (i * 2654435761) & ((1u128 << width) - 1) as u64).collect();
            let packed = pack(&values, width, lane).unwrap();
            assert_eq!(packed.len() as u64, 3 * block_bytes(width));
            let out = unpack_blocks(&packed, width, lane, 7).unwrap();
            let back: Vec<u64> =
                out.as_slice().chunks_exact(lane).map(|c| read_int(c, false) as u64).take(values.len()).collect();
            let expected: Vec<u64> =
                values.iter().map(|v| (*v as u128 + 7).rem_euclid(1u128 << (lane * 8)) as u64).collect();
            assert_eq!(back, expected, "lane {lane} width {width}");
            // Values unpacked alone, in any order, match their blocks.
            // Alone and in runs of a block, a run longer than a group among them.
            let mut positions = vec![2499u64, 0, 1023, 1024, 7, 2048, 1500];
            positions.extend((0..GROUP as u64 * 2 + 5).map(|i| 1024 + (i * 37) % 1024));
            let mut alone = MutableBuffer::new(0);
            unpack_selected(&packed, width, lane, 7, positions.iter().copied(), &mut alone).unwrap();
            let unpacked: Vec<u64> = alone.as_slice().chunks_exact(lane).map(|c| read_int(c, false) as u64).collect();
            let wanted: Vec<u64> = positions.iter().map(|p| expected[*p as usize]).collect();
            assert_eq!(unpacked, wanted, "lane {lane} width {width}");
            let past = unpack_selected(&packed, width, lane, 7, [3 * 1024].into_iter(), &mut alone);
            assert!(matches!(past, Err(crate::Error::Internal(_))), "{past:?}");
        }
    }

    /// Every lane width, widened to 16 bytes (references whose sums fit 64 bits, summed in 64,
    /// and ones that may not, in 128) and to 8 (wrapping in 64 bits).
    #[test]
    fn values_widened_by_block_equal_their_sums() {
        for lane_bytes in [1usize, 2, 4, 8] {
            for width in [1, 7, 8, 15, 24, 32, 40, 63, 64].into_iter().filter(|w| *w as usize <= lane_bytes * 8) {
                let mask = largest_of_width(width);
                let values: Vec<u64> = (0..2500u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask).collect();
                let packed = pack(&values, width, lane_bytes).unwrap();
                let pieces = [0..3, 5..1500, 1500..1501, 2047..2049, 2400..2500, 2500..2500];
                for reference in [0i128, -7, i64::MIN as i128, i64::MAX as i128, i128::MIN + 3, 1 << 100] {
                    let sixteen = Widening::new(16, width, reference);
                    let mut out = MutableBuffer::new(0);
                    unpack_widened(&packed, width, lane_bytes, sixteen, pieces.iter().cloned(), &mut out).unwrap();
                    let got: Vec<i128> = out.as_slice().chunks_exact(16).map(|c| read_int(c, true)).collect();
                    let expected: Vec<i128> = pieces
                        .iter()
                        .flat_map(|p| values[p.clone()].iter().map(|v| reference.wrapping_add(*v as i128)))
                        .collect();
                    assert_eq!(got, expected, "lanes of {lane_bytes}, width {width}, reference {reference}");
                    let eight = Widening::new(8, width, reference);
                    let mut out = MutableBuffer::new(0);
                    unpack_widened(&packed, width, lane_bytes, eight, pieces.iter().cloned(), &mut out).unwrap();
                    let got: Vec<i128> = out.as_slice().chunks_exact(8).map(|c| read_int(c, true)).collect();
                    let expected: Vec<i128> = expected.iter().map(|v| *v as i64 as i128).collect();
                    assert_eq!(
                        got, expected,
                        "to 8 bytes: lanes of {lane_bytes}, width {width}, reference {reference}"
                    );
                }
                let widening = Widening::new(16, width, 0);
                let past = unpack_widened(
                    &packed,
                    width,
                    lane_bytes,
                    widening,
                    [2500..3073].into_iter(),
                    &mut MutableBuffer::new(0),
                );
                assert!(matches!(past, Err(crate::Error::Internal(_))), "{past:?}");
            }
        }
    }
}
