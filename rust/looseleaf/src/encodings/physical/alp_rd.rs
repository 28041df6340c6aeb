//! ALP-RD ("adaptive lossless floating-point for real doubles", Afroozeh, Kuffo and Boncz,
//! SIGMOD 2024): floats whose digits do not compress, such as embeddings, split in two. The high
//! bits of a value (sign, exponent, first mantissa bits: its *left part*) take few distinct
//! values and are stored as a code into a small table; the low `right_bits` are bit-packed as
//! they are.
//!
//! ```text
//! float32 1.5 = 0x3fc00000, right_bits 23:  left part 0x7f, right part 0x400000
//! left parts [0x7e, 0x7f, 0x17e, 0x17f] (2-bit codes):  code 1, and 0x400000 in 23 bits
//! ```
//!
//! Left parts missing from the table are *exceptions*, stored apart with their row. Values are
//! stored in blocks of 1024, each the block's codes then its right parts, both packed in the
//! FastLanes layout ([`super::integers`]): reading a value reads its block
//! (`128 × (code_bits + right_bits)` bytes, one range) and the page's exceptions, which the
//! writer keeps rare. Random normal float32s take about 28 bits instead of 32.

use std::mem::MaybeUninit;
use std::ops::Range;

use arrow_buffer::{ArrowNativeType, Buffer, MutableBuffer};
use fastlanes::BitPacking;

use super::PageContext;
use super::binary::aligned;
use super::integers::{
    BLOCK, GROUP, block_bytes, blocks_for, for_each_block_group, pack_block, shared_block_spans, unpack_alone,
};
use crate::encodings::{
    DataBlock, FixedLayout, FixedWidthBlock, PageDecoder, PageLoad, PageScheduler, SelectedRows, limits,
};
use crate::error::{Result, bail, ensure};
use crate::format::proto::{AlpRdEncoding, BufferLocation};
use crate::io::PageIo;

/// The most bits a left part has (its table holds `u16`s).
pub const MAX_LEFT_BITS: u32 = 16;
/// The most bits a code has.
pub const MAX_CODE_BITS: u32 = 8;
/// Bytes an exception takes: its row (`u32`) and its left part (`u16`).
const EXCEPTION_BYTES: u64 = 6;

/// The bits of a float as the unsigned integer of its width, the lane type of its right parts.
trait Word: BitPacking + ArrowNativeType {
    fn from_u64(value: u64) -> Self;
    fn to_u64(self) -> u64;
    /// The word of `size_of::<Self>()` little-endian bytes.
    fn from_le_slice(bytes: &[u8]) -> Self;
}

impl Word for u32 {
    fn from_u64(value: u64) -> Self {
        value as u32
    }
    fn to_u64(self) -> u64 {
        self as u64
    }
    fn from_le_slice(bytes: &[u8]) -> Self {
        u32::from_le_bytes(bytes.try_into().unwrap_or_default())
    }
}

impl Word for u64 {
    fn from_u64(value: u64) -> Self {
        value
    }
    fn to_u64(self) -> u64 {
        self
    }
    fn from_le_slice(bytes: &[u8]) -> Self {
        u64::from_le_bytes(bytes.try_into().unwrap_or_default())
    }
}

/// The validated parameters of an ALP-RD node.
#[derive(Debug, Clone)]
struct Layout {
    value_bytes: usize,
    right_bits: u32,
    code_bits: u32,
    /// The left part of each code, shifted into place; 256 entries whatever `code_bits`, so
    /// that a code (a byte) indexes it without a bounds check.
    table: Box<[u64; 256]>,
}

impl Layout {
    fn try_new(encoding: &AlpRdEncoding) -> Result<Self> {
        // Checked in this order: each bound keeps the arithmetic of the next from overflowing.
        let value_bits = encoding.value_bytes.saturating_mul(8);
        let left_bits = value_bits.saturating_sub(encoding.right_bits);
        ensure!(
            matches!(encoding.value_bytes, 4 | 8)
                && encoding.right_bits < value_bits
                && (1..=MAX_LEFT_BITS).contains(&left_bits)
                && encoding.code_bits <= MAX_CODE_BITS
                && encoding.left_parts.len() == 2 << encoding.code_bits,
            corrupt,
            "ALP-RD encoding of {}-byte values with {} right bits, {}-bit codes and {} bytes of left parts",
            encoding.value_bytes,
            encoding.right_bits,
            encoding.code_bits,
            encoding.left_parts.len()
        );
        let mut table = Box::new([0u64; 256]);
        for (slot, left) in table.iter_mut().zip(encoding.left_parts.chunks_exact(2)) {
            let left = u16::from_le_bytes([left[0], left[1]]) as u64;
            ensure!(left >> left_bits == 0, corrupt, "ALP-RD left part {left:#x} is wider than {left_bits} bits");
            *slot = left << encoding.right_bits;
        }
        Ok(Self {
            value_bytes: encoding.value_bytes as usize,
            right_bits: encoding.right_bits,
            code_bits: encoding.code_bits,
            table,
        })
    }

    fn left_bits(&self) -> u32 {
        self.value_bytes as u32 * 8 - self.right_bits
    }

    /// Bytes of one block of 1024 values: its codes and its right parts.
    fn block_len(&self) -> u64 {
        block_bytes(self.code_bits) + block_bytes(self.right_bits)
    }
}

/// Schedules rows of an ALP-RD page.
#[derive(Debug, Clone)]
pub struct AlpRdScheduler {
    layout: Layout,
    blocks: BufferLocation,
    num_exceptions: u64,
    exception_rows: BufferLocation,
    exception_left_parts: BufferLocation,
    num_rows: u64,
}

impl AlpRdScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &AlpRdEncoding, page: &PageContext) -> Result<Self> {
        let layout = Layout::try_new(encoding)?;
        // Saturated sizes match no buffer: an overflow is a size error.
        let blocks = page.num_rows.div_ceil(BLOCK as u64).saturating_mul(layout.block_len());
        let blocks = page.buffer(encoding.blocks_buffer, Some(blocks), "ALP-RD blocks")?;
        let n = encoding.num_exceptions;
        ensure!(n <= page.num_rows, corrupt, "{n} ALP-RD exceptions in a page of {} rows", page.num_rows);
        let exception_rows =
            page.buffer(encoding.exception_rows_buffer, Some(n.saturating_mul(4)), "ALP-RD exception rows")?;
        let exception_left_parts = page.buffer(
            encoding.exception_left_parts_buffer,
            Some(n.saturating_mul(2)),
            "ALP-RD exception left parts",
        )?;
        Ok(Self { layout, blocks, num_exceptions: n, exception_rows, exception_left_parts, num_rows: page.num_rows })
    }
}

impl PageScheduler for AlpRdScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let layout = self.layout.clone();
        let rows = SelectedRows::new(ranges);
        let runs = blocks_for(ranges);
        let (base, len) = (self.blocks.offset, layout.block_len());
        let mut requested: Vec<Range<u64>> = runs.iter().map(|b| base + b.start * len..base + b.end * len).collect();
        if self.num_exceptions > 0 {
            for buffer in [&self.exception_rows, &self.exception_left_parts] {
                requested.push(buffer.offset..buffer.offset + buffer.size);
            }
        }
        let loaded = io.submit(requested);
        let (num_rows, num_exceptions) = (self.num_rows, self.num_exceptions);
        Box::pin(async move {
            let mut parts = loaded.await?.into_iter();
            let mut next = || parts.next().ok_or_else(|| crate::Error::internal("ALP-RD buffers not loaded"));
            let mut loaded = Vec::with_capacity(runs.len());
            for blocks in &runs {
                let bytes = aligned(next()?, layout.value_bytes);
                // Whole blocks (so whole words): what `block` slices and views as words.
                ensure!(
                    bytes.len() as u64 == (blocks.end - blocks.start) * len,
                    internal,
                    "ALP-RD blocks loaded as {} bytes",
                    bytes.len()
                );
                loaded.push(LoadedRun { blocks: blocks.clone(), bytes });
            }
            let exceptions = if num_exceptions > 0 {
                let (rows, left_parts) = (next()?, next()?);
                Exceptions::try_new(&rows, &left_parts, num_rows, &layout)?
            } else {
                Exceptions::default()
            };
            Ok(Box::new(AlpRdDecoder { layout, rows, runs: loaded, exceptions }) as Box<dyn PageDecoder>)
        })
    }
}

/// The exceptions of a page: rows (increasing) and their left parts, shifted into place.
#[derive(Default)]
struct Exceptions {
    rows: Vec<u64>,
    left_parts: Vec<u64>,
}

impl Exceptions {
    fn try_new(rows: &[u8], left_parts: &[u8], num_rows: u64, layout: &Layout) -> Result<Self> {
        let rows: Vec<u64> =
            rows.chunks_exact(4).map(|r| u32::from_le_bytes([r[0], r[1], r[2], r[3]]) as u64).collect();
        ensure!(
            rows.windows(2).all(|w| w[0] < w[1]) && rows.last().is_none_or(|last| *last < num_rows),
            corrupt,
            "ALP-RD exception rows are not increasing rows of the page's {num_rows}"
        );
        let left_bits = layout.left_bits();
        let mut shifted = Vec::with_capacity(rows.len());
        for left in left_parts.chunks_exact(2) {
            let left = u16::from_le_bytes([left[0], left[1]]) as u64;
            ensure!(left >> left_bits == 0, corrupt, "ALP-RD exception {left:#x} is wider than {left_bits} bits");
            shifted.push(left << layout.right_bits);
        }
        ensure!(shifted.len() == rows.len(), corrupt, "ALP-RD exception buffers of different lengths");
        Ok(Self { rows, left_parts: shifted })
    }
}

/// Consecutive blocks of a page, loaded.
struct LoadedRun {
    blocks: Range<u64>,
    /// Aligned to the value width.
    bytes: Buffer,
}

/// Loaded blocks of an ALP-RD page.
struct AlpRdDecoder {
    layout: Layout,
    rows: SelectedRows,
    /// Sorted by block.
    runs: Vec<LoadedRun>,
    exceptions: Exceptions,
}

impl PageDecoder for AlpRdDecoder {
    fn num_rows(&self) -> u64 {
        self.rows.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let w = self.layout.value_bytes;
        let len = limits::block_bytes(num_rows, w as u64, "ALP-RD values")?;
        let mut out = limits::try_buffer(len, "ALP-RD values")?;
        // SAFETY: not zeroed first: `decode_into` writes every value of `out` (the pieces cover
        // the `num_rows` values exactly, see `decode_pieces`) before anything reads them, and
        // the value types have no invalid bit patterns.
        unsafe { out.set_len(len) };
        self.decode_into(rows_to_skip, num_rows, out.as_slice_mut())?;
        Ok(DataBlock::FixedWidth(FixedWidthBlock {
            data: out.into(),
            bits_per_value: w as u64 * 8,
            num_values: num_rows,
        }))
    }

    fn fixed_layout(&self) -> Option<FixedLayout> {
        Some(FixedLayout { value_bits: self.layout.value_bytes as u64 * 8, dimension: None })
    }

    fn decode_into(&self, rows_to_skip: u64, num_rows: u64, out: &mut [u8]) -> Result<()> {
        let pieces = self.rows.page_rows(rows_to_skip, num_rows)?;
        let w = self.layout.value_bytes;
        ensure!(
            num_rows.checked_mul(w as u64) == Some(out.len() as u64),
            internal,
            "{num_rows} ALP-RD values asked into {} bytes",
            out.len()
        );
        // SAFETY: any bytes are valid values of these integer types; `align_to_mut` puts in the
        // middle only what is aligned, and the ends are checked empty.
        let (head, ints32, tail32) = unsafe { out.align_to_mut::<u32>() };
        if w == 4 && head.is_empty() && tail32.is_empty() {
            return self.decode_pieces(&pieces, ints32);
        }
        // SAFETY: as above.
        let (head, ints64, tail64) = unsafe { out.align_to_mut::<u64>() };
        ensure!(
            w == 8 && head.is_empty() && tail64.is_empty(),
            internal,
            "an ALP-RD output buffer is not aligned to its {w}-byte values"
        );
        self.decode_pieces(&pieces, ints64)
    }
}

impl AlpRdDecoder {
    /// Writes the values of page rows `pieces` (in order) one after the other into `out`, which
    /// holds exactly as many values.
    fn decode_pieces<T: Word>(&self, pieces: &[Range<u64>], out: &mut [T]) -> Result<()> {
        let mut at = 0;
        for (span, members) in shared_block_spans(pieces) {
            let members = &pieces[members];
            let wanted: u64 = members.iter().map(|p| p.end - p.start).sum();
            if unpack_alone(wanted, &span) {
                // Scattered rows (a take): each value is unpacked alone rather than its block.
                let Some(values) = out.get_mut(at..at + wanted as usize) else {
                    bail!(internal, "ALP-RD pieces of more rows than decoded");
                };
                self.decode_alone(members.iter().flat_map(|p| p.clone()), values)?;
                at += wanted as usize;
            } else if let [piece] = members {
                let len = (piece.end - piece.start) as usize;
                self.decode_span(piece.clone(), &mut out[at..at + len])?;
                at += len;
            } else {
                let mut values = vec![T::default(); (span.end - span.start) as usize];
                self.decode_span(span.clone(), &mut values)?;
                for piece in members {
                    let (from, len) = ((piece.start - span.start) as usize, (piece.end - piece.start) as usize);
                    out[at..at + len].copy_from_slice(&values[from..from + len]);
                    at += len;
                }
            }
        }
        ensure!(at == out.len(), internal, "ALP-RD page decoded {at} of {} values", out.len());
        Ok(())
    }

    /// The loaded run holding `blocks`, and the first block's index within it.
    fn run(&self, blocks: Range<u64>) -> Result<(&LoadedRun, usize)> {
        let index = self.runs.partition_point(|run| run.blocks.end <= blocks.start);
        match self.runs.get(index) {
            Some(run) if run.blocks.start <= blocks.start && blocks.end <= run.blocks.end => {
                Ok((run, (blocks.start - run.blocks.start) as usize))
            }
            _ => bail!(internal, "rows of an ALP-RD page were not loaded"),
        }
    }

    /// The packed codes (`None` when they take no bits: every code is 0) and right parts of
    /// block `at` of `run`.
    fn block<'a, T: Word>(&self, run: &'a LoadedRun, at: usize) -> Result<(Option<&'a [u8]>, &'a [T])> {
        let (block_len, code_len) = (self.layout.block_len() as usize, block_bytes(self.layout.code_bits) as usize);
        // Both parts start at multiples of 128 bytes of a buffer aligned to `T`.
        let start = at * block_len;
        let codes = run.bytes.as_slice().get(start..start + code_len);
        let rights =
            run.bytes.typed_data::<T>().get((start + code_len) / size_of::<T>()..(start + block_len) / size_of::<T>());
        match (codes, rights) {
            (Some(codes), Some(rights)) => Ok(((!codes.is_empty()).then_some(codes), rights)),
            _ => bail!(internal, "an ALP-RD page's loaded blocks are shorter than their layout"),
        }
    }

    /// Page rows `span` into `out` (of the span's length), block by block.
    fn decode_span<T: Word>(&self, span: Range<u64>, out: &mut [T]) -> Result<()> {
        let layout = &self.layout;
        let mut table = [T::default(); 256];
        for (slot, left) in table.iter_mut().zip(layout.table.iter()) {
            *slot = T::from_u64(*left);
        }
        let first_block = span.start / BLOCK as u64;
        let (run, first) = self.run(first_block..span.end.div_ceil(BLOCK as u64))?;
        let mut codes = [0u8; BLOCK];
        let mut rights = [T::default(); BLOCK];
        let mut block = first_block;
        let mut at = 0;
        while at < out.len() {
            let block_start = block * BLOCK as u64;
            let from = (span.start.max(block_start) - block_start) as usize;
            let to = ((span.end - block_start) as usize).min(BLOCK);
            let (packed_codes, packed_rights) = self.block::<T>(run, first + (block - first_block) as usize)?;
            if let Some(packed) = packed_codes {
                // SAFETY: `packed` is one block of `code_bits` ≤ 8 bits (`block` sliced exactly
                // `128 × code_bits` bytes) and `codes` holds 1024 values.
                unsafe { u8::unchecked_unpack(layout.code_bits as usize, packed, &mut codes) };
            }
            let values = &mut out[at..at + (to - from)];
            if from == 0 && to == BLOCK {
                let values: &mut [T] = values;
                // SAFETY: `packed_rights` is one block of `right_bits` < T::BITS bits (checked
                // by `Layout::try_new`, sliced by `block`) and `values` holds 1024 values.
                unsafe { T::unchecked_unpack(layout.right_bits as usize, packed_rights, values) };
                for (value, code) in values.iter_mut().zip(codes.iter()) {
                    *value = *value | table[*code as usize];
                }
            } else {
                // SAFETY: as above, into the 1024 values of `rights`.
                unsafe { T::unchecked_unpack(layout.right_bits as usize, packed_rights, &mut rights) };
                for ((value, right), code) in values.iter_mut().zip(&rights[from..to]).zip(&codes[from..to]) {
                    *value = *right | table[*code as usize];
                }
            }
            at += to - from;
            block += 1;
        }
        let exceptions = &self.exceptions;
        let first = exceptions.rows.partition_point(|row| *row < span.start);
        let right_mask = T::from_u64((1u64 << layout.right_bits) - 1);
        for (row, left) in exceptions.rows[first..].iter().zip(&exceptions.left_parts[first..]) {
            if *row >= span.end {
                break;
            }
            let value = &mut out[(row - span.start) as usize];
            *value = (*value & right_mask) | T::from_u64(*left);
        }
        Ok(())
    }

    /// The values of page rows `rows` (any order, one per value of `out`), each unpacked alone,
    /// a block's run of rows at once (see [`for_each_block_group`]).
    fn decode_alone<T: Word>(&self, rows: impl Iterator<Item = u64>, out: &mut [T]) -> Result<()> {
        let layout = &self.layout;
        let exceptions = &self.exceptions;
        let right_mask = T::from_u64((1u64 << layout.right_bits) - 1);
        let mut codes = [MaybeUninit::<u8>::uninit(); GROUP];
        let mut at = 0;
        for_each_block_group(rows, |block, indices| {
            let (run, first) = self.run(block..block + 1)?;
            let (packed_codes, packed_rights) = self.block::<T>(run, first)?;
            let Some(values) = out.get_mut(at..at + indices.len()) else {
                bail!(internal, "more ALP-RD rows than values to decode");
            };
            at += indices.len();
            // SAFETY: the packed blocks are whole blocks of their widths (see `decode_span`), the
            // indices are below 1024 and each output holds one value per index. `values` is
            // viewed as uninitialised only to be written with valid values.
            unsafe {
                let uninit = &mut *(values as *mut [T] as *mut [MaybeUninit<T>]);
                T::unchecked_unpack_indices(layout.right_bits as usize, packed_rights, indices, uninit);
            }
            match packed_codes {
                Some(packed) => {
                    let codes = &mut codes[..indices.len()];
                    // SAFETY: as above.
                    unsafe { u8::unchecked_unpack_indices(layout.code_bits as usize, packed, indices, codes) };
                    for (value, code) in values.iter_mut().zip(codes.iter()) {
                        // SAFETY: `unchecked_unpack_indices` wrote every code.
                        let code = unsafe { code.assume_init() };
                        *value = *value | T::from_u64(layout.table[code as usize]);
                    }
                }
                None => values.iter_mut().for_each(|value| *value = *value | T::from_u64(layout.table[0])),
            }
            let first_row = block * BLOCK as u64;
            let from = exceptions.rows.partition_point(|row| *row < first_row);
            let to = exceptions.rows.partition_point(|row| *row < first_row + BLOCK as u64);
            if from < to {
                let (rows, left_parts) = (&exceptions.rows[from..to], &exceptions.left_parts[from..to]);
                for (value, index) in values.iter_mut().zip(indices) {
                    if let Ok(exception) = rows.binary_search(&(first_row + *index as u64)) {
                        *value = (*value & right_mask) | T::from_u64(left_parts[exception]);
                    }
                }
            }
            Ok(())
        })
    }
}

/// How a page's values are split: the chosen parameters and the table of left parts (the
/// most frequent first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// Bits of the right part.
    pub right_bits: u32,
    /// Bits per code.
    pub code_bits: u32,
    /// The left parts that get a code, at most `2^code_bits`.
    pub left_parts: Vec<u16>,
    /// The estimated size of the page in this encoding, in bytes.
    pub estimated_bytes: u64,
}

/// How many times its size an exception counts when choosing a split. Every read of a page
/// reads and checks all its exceptions, and a sample under-counts them (a table fitted to a
/// sample covers it better than the page): on normal float32s, the split of the smallest
/// estimate (a 20-bit right part, 7-bit codes) left 1.4% exceptions and read slower than the
/// one of 4-bit codes and almost none, for 1% less size.
const EXCEPTION_PENALTY: u64 = 4;

/// Values sampled to choose the split of a page.
const SAMPLE: usize = 4096;

/// The split that makes `values` (floats of 4 or 8 bytes) smallest, estimated on a sample, or
/// `None` for other widths and pages of more than 2^32 values.
///
/// Every left width from 1 to 16 bits and code width from 0 to 8 bits is costed: right parts
/// and codes at their widths, plus each exception at 6 bytes and `EXCEPTION_PENALTY` (4) times
/// more. Left parts seen only once in the sample are not given codes: on data whose high bits
/// vary a lot, a sample's singletons say nothing of the page.
pub fn choose(values: &FixedWidthBlock) -> Option<Split> {
    let value_bytes = (values.bits_per_value / 8) as usize;
    let n = values.num_values as usize;
    if !matches!(value_bytes, 4 | 8) || n > u32::MAX as usize {
        return None;
    }
    let value_bits = value_bytes as u32 * 8;
    let step = n.div_ceil(SAMPLE).max(1);
    // The high 16 bits of sampled values, sorted: the left parts of every width are then runs.
    let mut tops: Vec<u16> = values
        .data
        .as_slice()
        .chunks_exact(value_bytes)
        .take(n)
        .step_by(step)
        .map(|v| (read_word(v) >> (value_bits - MAX_LEFT_BITS)) as u16)
        .collect();
    tops.sort_unstable();
    let sampled = tops.len() as u64;
    let blocks = n.div_ceil(BLOCK) as u64;
    let mut best: Option<(u64, Split)> = None;
    let mut counts: Vec<(u64, u16)> = Vec::new();
    for left_bits in 1..=MAX_LEFT_BITS {
        counts.clear();
        for top in &tops {
            let left = top >> (MAX_LEFT_BITS - left_bits);
            match counts.last_mut() {
                Some((count, last)) if *last == left => *count += 1,
                _ => counts.push((1, left)),
            }
        }
        counts.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let right_bits = value_bits - left_bits;
        for code_bits in 0..=MAX_CODE_BITS {
            let entries = counts.iter().take(1 << code_bits).take_while(|(count, _)| *count > 1 || code_bits == 0);
            let covered: u64 = entries.clone().map(|(count, _)| count).sum();
            let exceptions = (sampled - covered) * n as u64 / sampled.max(1);
            let bytes = blocks * 128 * (right_bits + code_bits) as u64 + (2u64 << code_bits);
            let stored = bytes + exceptions * EXCEPTION_BYTES;
            let cost = stored + exceptions * EXCEPTION_BYTES * EXCEPTION_PENALTY;
            if best.as_ref().is_none_or(|(best_cost, _)| cost < *best_cost) {
                let left_parts = entries.map(|(_, left)| *left).collect();
                best = Some((cost, Split { right_bits, code_bits, left_parts, estimated_bytes: stored }));
            }
        }
    }
    best.map(|(_, split)| split)
}

/// A float's bits from its 4 or 8 little-endian bytes.
fn read_word(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// The buffers of a page's values, packed.
struct Packed {
    blocks: Buffer,
    exception_rows: Vec<u32>,
    exception_left_parts: Vec<u16>,
}

/// Packs the first `n` values of `data` with `split` block by block, in one pass; `None` as
/// soon as the page cannot take fewer than `at_most` bytes (exceptions are only known as they
/// are met).
fn pack<T: Word>(data: &[u8], n: usize, split: &Split, code_of: &[u16], at_most: u64) -> Option<Packed> {
    let (right_bits, code_bits) = (split.right_bits, split.code_bits);
    let fixed = n.div_ceil(BLOCK) as u64 * 128 * (right_bits + code_bits) as u64 + (2u64 << code_bits);
    let most_exceptions = at_most.checked_sub(fixed + 1)? / EXCEPTION_BYTES;
    let right_mask = (1u64 << right_bits) - 1;
    let w = size_of::<T>();
    let mut blocks = MutableBuffer::with_capacity(fixed as usize);
    let (mut exception_rows, mut exception_left_parts) = (Vec::new(), Vec::new());
    let (mut codes, mut rights) = ([0u8; BLOCK], [T::default(); BLOCK]);
    let (mut packed_codes, mut packed_rights) = (Vec::<u8>::new(), Vec::<T>::new());
    for (block, chunk) in data[..n * w].chunks(BLOCK * w).enumerate() {
        codes.fill(0);
        rights.fill(T::default());
        for (i, bytes) in chunk.chunks_exact(w).enumerate() {
            let word = <T as Word>::from_le_slice(bytes).to_u64();
            let left = (word >> right_bits) as usize;
            match code_of.get(left).copied().unwrap_or(u16::MAX) {
                u16::MAX => {
                    exception_rows.push((block * BLOCK + i) as u32);
                    exception_left_parts.push(left as u16);
                }
                // An exception's code is never read: it stays 0.
                code => codes[i] = code as u8,
            }
            rights[i] = T::from_u64(word & right_mask);
        }
        if exception_rows.len() as u64 > most_exceptions {
            return None;
        }
        packed_codes.clear();
        packed_rights.clear();
        pack_block(&codes, code_bits, &mut packed_codes);
        pack_block(&rights, right_bits, &mut packed_rights);
        blocks.extend_from_slice(&packed_codes);
        blocks.extend_from_slice(&packed_rights);
    }
    Some(Packed { blocks: blocks.into(), exception_rows, exception_left_parts })
}

/// Writes `values` (floats of 4 or 8 bytes) with `split` into `buffers` (appending). Returns
/// `None`, writing nothing, if the page would not take fewer than `at_most` bytes (its
/// exceptions are counted exactly first).
///
/// # Errors
/// An internal error if `split` does not fit the values.
pub fn encode(
    values: &FixedWidthBlock,
    split: &Split,
    at_most: u64,
    buffers: &mut Vec<Buffer>,
) -> Result<Option<AlpRdEncoding>> {
    let value_bytes = (values.bits_per_value / 8) as usize;
    let n = values.num_values as usize;
    let value_bits = value_bytes as u32 * 8;
    let left_bits = value_bits.saturating_sub(split.right_bits);
    ensure!(
        matches!(value_bytes, 4 | 8)
            && (1..=MAX_LEFT_BITS).contains(&left_bits)
            && split.code_bits <= MAX_CODE_BITS
            && split.left_parts.len() <= 1 << split.code_bits
            && n <= u32::MAX as usize
            && values.data.len() >= n * value_bytes,
        internal,
        "an ALP-RD split that does not fit {value_bytes}-byte values"
    );
    // Code of each left part (`u16::MAX`: none).
    let mut code_of = vec![u16::MAX; 1 << left_bits];
    for (code, left) in split.left_parts.iter().enumerate() {
        if let Some(slot) = code_of.get_mut(*left as usize) {
            *slot = code as u16;
        }
    }
    let Some(packed) = (match value_bytes {
        4 => pack::<u32>(values.data.as_slice(), n, split, &code_of, at_most),
        _ => pack::<u64>(values.data.as_slice(), n, split, &code_of, at_most),
    }) else {
        return Ok(None);
    };
    let mut left_parts: Vec<u8> = Vec::with_capacity(2 << split.code_bits);
    for code in 0..1usize << split.code_bits {
        left_parts.extend_from_slice(&split.left_parts.get(code).copied().unwrap_or(0).to_le_bytes());
    }
    let mut push = |buffer: Buffer| {
        buffers.push(buffer);
        (buffers.len() - 1) as u32
    };
    let blocks_buffer = push(packed.blocks);
    let num_exceptions = packed.exception_rows.len() as u64;
    let exception_rows_buffer = push(Buffer::from_vec(packed.exception_rows));
    let exception_left_parts_buffer = push(Buffer::from_vec(packed.exception_left_parts));
    Ok(Some(AlpRdEncoding {
        value_bytes: value_bytes as u32,
        right_bits: split.right_bits,
        code_bits: split.code_bits,
        left_parts,
        blocks_buffer,
        num_exceptions,
        exception_rows_buffer,
        exception_left_parts_buffer,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Float32 values close to standard normal ones (a sum of uniform draws), deterministic.
    fn normal_f32(n: usize) -> FixedWidthBlock {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let values: Vec<f32> = (0..n).map(|_| ((0..12).map(|_| uniform()).sum::<f64>() - 6.0) as f32).collect();
        FixedWidthBlock { data: Buffer::from_vec(values), bits_per_value: 32, num_values: n as u64 }
    }

    #[test]
    fn normal_floats_split_at_about_28_bits_with_few_exceptions() {
        let values = normal_f32(200_000);
        let split = choose(&values).unwrap();
        let encoded = encode(&values, &split, u64::MAX, &mut vec![]).unwrap().unwrap();
        let bits = (split.right_bits + split.code_bits) as f64;
        assert!(bits <= 28.0, "{split:?}");
        assert!(encoded.num_exceptions * 1000 < 200_000, "{} exceptions with {split:?}", encoded.num_exceptions);
    }

    /// The decoder of `values` encoded with `split`, every block loaded.
    fn decoder(values: &FixedWidthBlock, split: &Split) -> AlpRdDecoder {
        let mut buffers = vec![];
        let encoding = encode(values, split, u64::MAX, &mut buffers).unwrap().unwrap();
        let layout = Layout::try_new(&encoding).unwrap();
        let n = values.num_values;
        let exceptions = Exceptions::try_new(&buffers[1], &buffers[2], n, &layout).unwrap();
        let runs = vec![LoadedRun { blocks: 0..n.div_ceil(BLOCK as u64), bytes: buffers[0].clone() }];
        AlpRdDecoder { layout, rows: SelectedRows::new(&[0..n]), runs, exceptions }
    }

    /// Values unpacked alone (scattered rows in any order, repeated, exceptions among them)
    /// equal the values written, for both widths, whatever a block's run of rows.
    #[test]
    fn values_unpacked_alone_are_the_values_written() {
        let f32s = normal_f32(5000);
        let doubled: Vec<f64> = f32s.data.typed_data::<f32>().iter().map(|v| *v as f64 * 1.1).collect();
        let f64s = FixedWidthBlock { data: Buffer::from_vec(doubled), bits_per_value: 64, num_values: 5000 };
        let mut state = 7u64;
        let mut next = move |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for values in [&f32s, &f64s] {
            let mut split = choose(values).unwrap();
            // Two codes only: many exceptions.
            split.code_bits = 1;
            split.left_parts.truncate(2);
            let decoder = decoder(values, &split);
            assert!(decoder.exceptions.rows.len() > 100, "{} exceptions", decoder.exceptions.rows.len());
            let mut rows: Vec<u64> = (0..700).map(|_| next(5000)).collect();
            rows.extend(decoder.exceptions.rows.iter().step_by(7));
            rows.extend((0..300).map(|i| 1024 + i % 150));
            rows.extend([0, 4999, 4999, 1023, 1024]);
            let bits = |row: u64| {
                let w = values.bits_per_value as usize / 8;
                let at = row as usize * w;
                read_word(&values.data.as_slice()[at..at + w])
            };
            let expected: Vec<u64> = rows.iter().map(|row| bits(*row)).collect();
            let decoded: Vec<u64> = if values.bits_per_value == 32 {
                let mut out = vec![0u32; rows.len()];
                decoder.decode_alone(rows.iter().copied(), &mut out).unwrap();
                out.into_iter().map(u64::from).collect()
            } else {
                let mut out = vec![0u64; rows.len()];
                decoder.decode_alone(rows.iter().copied(), &mut out).unwrap();
                out
            };
            assert_eq!(decoded, expected, "{}-bit values", values.bits_per_value);
        }
    }
}
