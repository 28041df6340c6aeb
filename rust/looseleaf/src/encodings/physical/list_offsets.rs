//! List offsets: `num_rows + 1` offsets (32 or 64 bits, starting at 0) into the items of a
//! page of lists, whose items live in the columns of the list's item field. The page's
//! `num_items` (its last offset) is also in the page metadata.
//!
//! ```text
//! lists   [[1, 2], [], null, [3]]      (null written as an empty list)
//! offsets 0 2 2 2 3                     (u32) + validity 0b1011 in a nullable node
//! ```
//!
//! Rows `a..b` need offsets `a..=b`: bytes `a * w .. (b + 1) * w`. Their items are
//! `offsets[a]..offsets[b]`, which is why reading some lists of a page is indirect I/O (see
//! `scheduler/list.rs`); reading a whole page is not, its items being `0..num_items`.

use std::ops::Range;

use bytes::Bytes;

use super::PageContext;
use super::binary::aligned;
use crate::encodings::data_block::OffsetsBlock;
use crate::encodings::{DataBlock, PageDecoder, PageLoad, PageScheduler, RangeIndex};
use crate::error::{Error, Result, bail, ensure};
use crate::format::proto::{BufferLocation, ListOffsetsEncoding};
use crate::io::PageIo;

/// Schedules rows of a list offsets buffer.
#[derive(Debug, Clone)]
pub struct ListOffsetsScheduler {
    buffer: BufferLocation,
    bits_per_offset: u32,
    num_rows: u64,
}

impl ListOffsetsScheduler {
    /// The scheduler of `encoding` in `page`, checked to hold `num_rows + 1` offsets.
    pub fn try_new(encoding: &ListOffsetsEncoding, page: &PageContext) -> Result<Self> {
        let bits = encoding.bits_per_offset;
        if bits != 32 && bits != 64 {
            bail!(corrupt, "list offsets of {bits} bits (must be 32 or 64)")
        }
        let expected =
            (page.num_rows + 1).checked_mul(bits as u64 / 8).ok_or_else(|| Error::corrupt("page size overflows"))?;
        let buffer = page.buffer(encoding.buffer, Some(expected), "list offsets")?;
        Ok(Self { buffer, bits_per_offset: bits, num_rows: page.num_rows })
    }
}

impl PageScheduler for ListOffsetsScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let w = self.bits_per_offset as u64 / 8;
        let base = self.buffer.offset;
        let loaded = io.submit(ranges.iter().map(|r| base + r.start * w..base + (r.end + 1) * w).collect());
        let index = RangeIndex::new(ranges.iter().map(|r| r.end - r.start));
        let bits_per_offset = self.bits_per_offset;
        let num_ranges = ranges.len();
        Box::pin(async move {
            let parts = loaded.await?;
            ensure!(parts.len() == num_ranges, internal, "list offsets loaded {} of {num_ranges} ranges", parts.len());
            let parts = parts.into_iter().map(|b: Bytes| aligned(b, w as usize)).collect();
            Ok(Box::new(ListOffsetsDecoder { parts, index, bits_per_offset }) as Box<dyn PageDecoder>)
        })
    }
}

struct ListOffsetsDecoder {
    /// Per range, its offsets (one more than its rows), aligned.
    parts: Vec<arrow_buffer::Buffer>,
    index: RangeIndex,
    bits_per_offset: u32,
}

impl PageDecoder for ListOffsetsDecoder {
    fn num_rows(&self) -> u64 {
        self.index.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let w = self.bits_per_offset as usize / 8;
        let blocks = self
            .index
            .pieces(rows_to_skip, num_rows)?
            .into_iter()
            .map(|(range, skip, len)| {
                let part = &self.parts[range];
                let (start, len_bytes) = (skip as usize * w, (len as usize + 1) * w);
                ensure!(start + len_bytes <= part.len(), corrupt, "list offsets range is too short");
                Ok(DataBlock::ListOffsets(OffsetsBlock {
                    offsets: part.slice_with_length(start, len_bytes),
                    bits_per_offset: self.bits_per_offset,
                    num_values: len,
                }))
            })
            .collect::<Result<Vec<_>>>()?;
        if blocks.is_empty() {
            return Ok(DataBlock::ListOffsets(OffsetsBlock {
                offsets: arrow_buffer::Buffer::from_vec(vec![0u64]),
                bits_per_offset: 64,
                num_values: 0,
            }));
        }
        DataBlock::concat(blocks)
    }
}
