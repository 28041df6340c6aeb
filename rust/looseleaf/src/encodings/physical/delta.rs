//! Delta: non-decreasing integers (sorted keys, offsets) as the first value of each block of
//! 1024 and the bit-packed difference of every value from the one before it.
//!
//! ```text
//! int64 values [7, 7, 8, 12]   base 7, differences [0, 0, 1, 4]: 3 bits
//! bases buffer: 8 bytes (one per block); deltas buffer: one block of 1024 × 3 bits
//! ```
//!
//! Reading some rows reads the blocks holding them and their bases, then sums each block's
//! differences from its base: one value costs one block (unpacked whole; for rows scattered
//! over many blocks, summed only up to the rows wanted).

use std::ops::Range;

use arrow_buffer::{Buffer, MutableBuffer};

use super::PageContext;
use super::binary::aligned;
use super::integers::{
    BLOCK, bits_needed, block_bytes, blocks_for, pack, shared_block_spans, unpack_alone, unpack_blocks_mut,
};
use crate::encodings::{DataBlock, FixedWidthBlock, PageDecoder, PageLoad, PageScheduler, SelectedRows, limits};
use crate::error::{Result, bail, ensure};
use crate::format::proto::{BufferLocation, DeltaEncoding};
use crate::io::PageIo;

/// Schedules rows of a delta-encoded page.
#[derive(Debug, Clone)]
pub struct DeltaScheduler {
    value_bytes: usize,
    bit_width: u32,
    bases: BufferLocation,
    deltas: BufferLocation,
    num_rows: u64,
}

impl DeltaScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &DeltaEncoding, page: &PageContext) -> Result<Self> {
        let value_bytes = encoding.value_bytes as usize;
        ensure!(
            matches!(value_bytes, 1 | 2 | 4 | 8) && encoding.bit_width as usize <= value_bytes * 8,
            corrupt,
            "delta encoding of {value_bytes}-byte values with {}-bit differences",
            encoding.bit_width
        );
        let blocks = page.num_rows.div_ceil(BLOCK as u64);
        let bases = page.buffer(encoding.bases_buffer, Some(blocks * value_bytes as u64), "delta bases")?;
        let deltas = page.buffer(encoding.deltas_buffer, Some(blocks * block_bytes(encoding.bit_width)), "deltas")?;
        Ok(Self { value_bytes, bit_width: encoding.bit_width, bases, deltas, num_rows: page.num_rows })
    }
}

impl PageScheduler for DeltaScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let (w, width) = (self.value_bytes, self.bit_width);
        let runs = blocks_for(ranges);
        let block_len = block_bytes(width);
        let mut requested = Vec::with_capacity(runs.len() * 2);
        for blocks in &runs {
            requested.push(self.bases.offset + blocks.start * w as u64..self.bases.offset + blocks.end * w as u64);
            requested.push(self.deltas.offset + blocks.start * block_len..self.deltas.offset + blocks.end * block_len);
        }
        let loaded = io.submit(requested);
        let rows = SelectedRows::new(ranges);
        Box::pin(async move {
            let parts = loaded.await?;
            ensure!(
                parts.len() == runs.len() * 2,
                internal,
                "delta page loaded {} of {} ranges",
                parts.len(),
                runs.len() * 2
            );
            let mut parts = parts.into_iter();
            let mut loaded_runs = Vec::with_capacity(runs.len());
            for blocks in runs {
                let (Some(bases), Some(deltas)) = (parts.next(), parts.next()) else { bail!(internal, "delta parts") };
                loaded_runs.push((blocks, Buffer::from(bases), aligned(deltas, w)));
            }
            Ok(Box::new(DeltaDecoder { value_bytes: w, bit_width: width, rows, runs: loaded_runs })
                as Box<dyn PageDecoder>)
        })
    }
}

struct DeltaDecoder {
    value_bytes: usize,
    bit_width: u32,
    rows: SelectedRows,
    /// Runs of blocks with their bases and packed differences.
    runs: Vec<(Range<u64>, Buffer, Buffer)>,
}

impl DeltaDecoder {
    /// The values of whole blocks covering page rows `rows`, and the offset of `rows.start`.
    fn block_values(&self, rows: &Range<u64>) -> Result<(Buffer, usize)> {
        let w = self.value_bytes;
        let first = rows.start / BLOCK as u64;
        let last = rows.end.div_ceil(BLOCK as u64);
        let (mut values, bases) = self.differences(first, last)?;
        macro_rules! sum_blocks {
            ($t:ty) => {{
                let values = values.typed_data_mut::<$t>();
                for (block, base) in values.chunks_exact_mut(BLOCK).zip(bases.chunks_exact(w)) {
                    let mut value = <$t>::from_le_bytes(base.try_into().unwrap_or_default());
                    for slot in block {
                        value = value.wrapping_add(*slot);
                        *slot = value;
                    }
                }
            }};
        }
        match w {
            1 => sum_blocks!(u8),
            2 => sum_blocks!(u16),
            4 => sum_blocks!(u32),
            _ => sum_blocks!(u64),
        }
        Ok((values.into(), (rows.start - first * BLOCK as u64) as usize))
    }

    /// Appends the values of page rows `rows` (any order; a take's scattered rows) to `out`.
    /// Each block holding one is unpacked, but its differences are only summed up to the rows
    /// wanted (a vectorised sum, not the running sum of every value of the block).
    fn append_alone(&self, rows: impl Iterator<Item = u64>, out: &mut MutableBuffer) -> Result<()> {
        macro_rules! alone {
            ($t:ty) => {{
                // The block unpacked last, its differences and base; the position summed up to
                // (exclusive) and the value there.
                let mut current: Option<(u64, MutableBuffer, $t)> = None;
                let mut cursor: (usize, $t) = (0, 0);
                for row in rows {
                    let (block, position) = (row / BLOCK as u64, (row % BLOCK as u64) as usize);
                    if current.as_ref().is_none_or(|(loaded, _, _)| *loaded != block) {
                        let (differences, bases) = self.differences(block, block + 1)?;
                        let base = <$t>::from_le_bytes(bases.try_into().unwrap_or_default());
                        current = Some((block, differences, base));
                        cursor = (0, base);
                    }
                    let Some((_, differences, base)) = current.as_ref() else {
                        bail!(internal, "a delta block was not unpacked")
                    };
                    if position < cursor.0 {
                        cursor = (0, *base);
                    }
                    let Some(between) = differences.typed_data::<$t>().get(cursor.0..=position) else {
                        bail!(internal, "a delta row past its block")
                    };
                    let value = between.iter().fold(cursor.1, |sum, d| sum.wrapping_add(*d));
                    cursor = (position + 1, value);
                    out.push(value);
                }
            }};
        }
        match self.value_bytes {
            1 => alone!(u8),
            2 => alone!(u16),
            4 => alone!(u32),
            _ => alone!(u64),
        }
        Ok(())
    }

    /// The unpacked differences of blocks `first..last` (in row order, the first of each block
    /// 0) and the blocks' bases.
    fn differences(&self, first: u64, last: u64) -> Result<(MutableBuffer, &[u8])> {
        let w = self.value_bytes;
        let run = self.runs.partition_point(|(blocks, _, _)| blocks.end <= first);
        let Some((blocks, bases, deltas)) = self.runs.get(run) else {
            bail!(internal, "rows of a delta page were not loaded")
        };
        ensure!(blocks.start <= first && last <= blocks.end, internal, "rows span unloaded delta blocks");
        let count = (last - first) as usize;
        let skipped = (first - blocks.start) as usize;
        let Some(bases) = bases.as_slice().get(skipped * w..(skipped + count) * w) else {
            bail!(corrupt, "delta bases too short")
        };
        let differences = if self.bit_width == 0 {
            MutableBuffer::from_len_zeroed(count * BLOCK * w)
        } else {
            let block_len = block_bytes(self.bit_width) as usize;
            let packed = deltas.slice_with_length(skipped * block_len, count * block_len);
            unpack_blocks_mut(&packed, self.bit_width, w, 0)?
        };
        Ok((differences, bases))
    }
}

impl PageDecoder for DeltaDecoder {
    fn num_rows(&self) -> u64 {
        self.rows.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let w = self.value_bytes;
        let mut out = limits::try_buffer(limits::block_bytes(num_rows, w as u64, "delta values")?, "delta values")?;
        let pieces = self.rows.page_rows(rows_to_skip, num_rows)?;
        for (span, members) in shared_block_spans(&pieces) {
            let members = &pieces[members];
            if unpack_alone(members.iter().map(|p| p.end - p.start).sum(), &span) {
                self.append_alone(members.iter().flat_map(|p| p.clone()), &mut out)?;
                continue;
            }
            let (values, skip) = self.block_values(&span)?;
            for piece in members {
                let at = skip + (piece.start - span.start) as usize;
                let len = (piece.end - piece.start) as usize;
                out.extend_from_slice(&values.as_slice()[at * w..(at + len) * w]);
            }
        }
        Ok(DataBlock::FixedWidth(FixedWidthBlock {
            data: out.into(),
            bits_per_value: w as u64 * 8,
            num_values: num_rows,
        }))
    }
}

/// The bit width of the differences of non-decreasing `values` (None if they decrease).
pub fn difference_width(values: &[i128]) -> Option<u32> {
    let mut widest = 0u128;
    for (i, pair) in values.windows(2).enumerate() {
        if pair[1] < pair[0] {
            return None;
        }
        // The first value of each block is stored as a base, not a difference.
        if (i + 1) % BLOCK != 0 {
            widest = widest.max((pair[1] - pair[0]) as u128);
        }
    }
    Some(bits_needed(widest))
}

/// Encodes non-decreasing `values` (of `value_bytes` bytes each, `bit_width` from
/// [`difference_width`]).
pub fn encode(values: &[i128], value_bytes: usize, bit_width: u32, buffers: &mut Vec<Buffer>) -> Result<DeltaEncoding> {
    let mut bases = MutableBuffer::with_capacity(values.len().div_ceil(BLOCK) * value_bytes);
    let mut differences = Vec::with_capacity(values.len());
    for block in values.chunks(BLOCK) {
        bases.extend_from_slice(&block[0].to_le_bytes()[..value_bytes]);
        differences.push(0);
        differences.extend(block.windows(2).map(|p| (p[1] - p[0]) as u64));
    }
    buffers.push(bases.into());
    let bases_buffer = (buffers.len() - 1) as u32;
    buffers.push(if bit_width == 0 {
        Buffer::from_vec(Vec::<u8>::new())
    } else {
        pack(&differences, bit_width, value_bytes)?
    });
    Ok(DeltaEncoding {
        value_bytes: value_bytes as u32,
        bit_width,
        bases_buffer,
        deltas_buffer: (buffers.len() - 1) as u32,
    })
}
