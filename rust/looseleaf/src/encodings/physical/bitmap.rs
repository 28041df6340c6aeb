//! Bitmap: one bit per value, least significant bit first (Arrow's layout). Used for boolean
//! values and for validity.
//!
//! ```text
//! values  [true, false, true, true, false, false, false, false, true]
//! buffer  0b0000_1101 0b0000_0001            (2 bytes: ceil(9 / 8))
//! ```
//!
//! Rows `a..b` need bytes `a / 8 .. ceil(b / 8)`; the decoder keeps the bit offset `a % 8` and
//! slices without copying when the rows come from one loaded range.

use std::ops::Range;

use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer};
use bytes::Bytes;

use super::PageContext;
use crate::encodings::{DataBlock, PageDecoder, PageLoad, PageScheduler, RangeIndex};
use crate::error::{Result, ensure};
use crate::format::proto::BufferLocation;
use crate::io::PageIo;

/// Schedules rows of a bitmap buffer.
#[derive(Debug, Clone)]
pub struct BitmapScheduler {
    buffer: BufferLocation,
    num_rows: u64,
}

impl BitmapScheduler {
    /// The scheduler of buffer `index` of `page`, checked to hold one bit per row.
    pub fn try_new(index: u32, page: &PageContext) -> Result<Self> {
        let buffer = page.buffer(index, Some(page.num_rows.div_ceil(8)), "bitmap")?;
        Ok(Self { buffer, num_rows: page.num_rows })
    }

    /// The byte ranges holding the bits of `ranges`.
    fn byte_ranges(&self, ranges: &[Range<u64>]) -> Vec<Range<u64>> {
        ranges.iter().map(|r| self.buffer.offset + r.start / 8..self.buffer.offset + r.end.div_ceil(8)).collect()
    }

    /// Schedules `ranges` and returns the future of a [`BitmapDecoder`] (used directly by
    /// the nullable encoding, which needs the bits themselves).
    pub fn schedule_bits(
        &self,
        ranges: &[Range<u64>],
        io: &PageIo,
    ) -> futures::future::BoxFuture<'static, Result<BitmapDecoder>> {
        let loaded = io.submit(self.byte_ranges(ranges));
        let parts: Vec<(u64, u64)> = ranges.iter().map(|r| (r.start % 8, r.end - r.start)).collect();
        Box::pin(async move {
            let bytes = loaded.await?;
            BitmapDecoder::try_new(bytes, parts)
        })
    }
}

impl PageScheduler for BitmapScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let bits = self.schedule_bits(ranges, io);
        Box::pin(async move { Ok(Box::new(bits.await?) as Box<dyn PageDecoder>) })
    }
}

/// Loaded bits of one or more row ranges.
#[derive(Debug)]
pub struct BitmapDecoder {
    /// Per range: the bytes, and the offset of the range's first bit in them.
    parts: Vec<(Buffer, usize)>,
    index: RangeIndex,
}

impl BitmapDecoder {
    /// A decoder over `bytes`, where range `i` starts at bit `parts[i].0` and has `parts[i].1`
    /// bits.
    fn try_new(bytes: Vec<Bytes>, parts: Vec<(u64, u64)>) -> Result<Self> {
        ensure!(bytes.len() == parts.len(), internal, "bitmap loaded {} of {} ranges", bytes.len(), parts.len());
        let index = RangeIndex::new(parts.iter().map(|(_, len)| *len));
        let parts = bytes
            .into_iter()
            .zip(parts)
            .map(|(bytes, (bit_offset, len))| {
                ensure!(
                    (bytes.len() as u64) * 8 >= bit_offset + len,
                    corrupt,
                    "bitmap range of {} bytes is too short for {len} bits",
                    bytes.len()
                );
                Ok((Buffer::from(bytes), bit_offset as usize))
            })
            .collect::<Result<_>>()?;
        Ok(Self { parts, index })
    }

    /// Decodes `num_rows` bits after skipping `rows_to_skip`.
    pub fn decode_bits(&self, rows_to_skip: u64, num_rows: u64) -> Result<BooleanBuffer> {
        let pieces = self.index.pieces(rows_to_skip, num_rows)?;
        if let [(range, skip, len)] = pieces[..] {
            let (buffer, offset) = &self.parts[range];
            return Ok(BooleanBuffer::new(buffer.clone(), offset + skip as usize, len as usize));
        }
        let mut out = BooleanBufferBuilder::new(num_rows as usize);
        for (range, skip, len) in pieces {
            let (buffer, offset) = &self.parts[range];
            let start = offset + skip as usize;
            out.append_packed_range(start..start + len as usize, buffer.as_slice());
        }
        Ok(out.finish())
    }
}

impl PageDecoder for BitmapDecoder {
    fn num_rows(&self) -> u64 {
        self.index.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        Ok(DataBlock::Boolean(self.decode_bits(rows_to_skip, num_rows)?))
    }
}
