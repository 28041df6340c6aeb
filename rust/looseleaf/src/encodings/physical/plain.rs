//! Plain: fixed-width values back to back, little endian, no header.
//!
//! ```text
//! int32 values [1, 2, 3]   buffer 01 00 00 00 02 00 00 00 03 00 00 00
//! ```
//!
//! Rows `a..b` are bytes `a * w .. b * w` of the buffer (`w` = bytes per value); a run of rows
//! from one loaded range decodes without a copy.

use std::ops::Range;

use arrow_buffer::{Buffer, MutableBuffer};
use bytes::Bytes;

use super::PageContext;
use crate::encodings::{DataBlock, FixedWidthBlock, PageDecoder, PageLoad, PageScheduler, RangeIndex};
use crate::error::{Result, bail, ensure};
use crate::format::proto::{BufferLocation, PlainEncoding};
use crate::io::PageIo;

/// Schedules rows of a plain buffer.
#[derive(Debug, Clone)]
pub struct PlainScheduler {
    buffer: BufferLocation,
    bytes_per_value: u64,
    num_rows: u64,
}

impl PlainScheduler {
    /// The scheduler of `encoding` in `page`, checked to hold `num_rows` values.
    pub fn try_new(encoding: &PlainEncoding, page: &PageContext) -> Result<Self> {
        let bits = encoding.bits_per_value;
        if bits == 0 || !bits.is_multiple_of(8) {
            bail!(corrupt, "plain encoding with {bits} bits per value (must be 1 or a multiple of 8)")
        }
        let bytes_per_value = bits / 8;
        let expected =
            page.num_rows.checked_mul(bytes_per_value).ok_or_else(|| crate::Error::corrupt("page size overflows"))?;
        let buffer = page.buffer(encoding.buffer, Some(expected), "plain values")?;
        Ok(Self { buffer, bytes_per_value, num_rows: page.num_rows })
    }
}

impl PageScheduler for PlainScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let w = self.bytes_per_value;
        let base = self.buffer.offset;
        let loaded = io.submit(ranges.iter().map(|r| base + r.start * w..base + r.end * w).collect());
        let index = RangeIndex::new(ranges.iter().map(|r| r.end - r.start));
        let num_ranges = ranges.len();
        Box::pin(async move {
            let parts = loaded.await?;
            ensure!(parts.len() == num_ranges, internal, "plain values loaded {} of {num_ranges} ranges", parts.len());
            Ok(Box::new(PlainDecoder { parts, index, bytes_per_value: w }) as Box<dyn PageDecoder>)
        })
    }
}

/// Loaded values of one or more row ranges.
#[derive(Debug)]
struct PlainDecoder {
    parts: Vec<Bytes>,
    index: RangeIndex,
    bytes_per_value: u64,
}

impl PageDecoder for PlainDecoder {
    fn num_rows(&self) -> u64 {
        self.index.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let w = self.bytes_per_value as usize;
        let pieces = self.index.pieces(rows_to_skip, num_rows)?;
        let slice = |(range, skip, len): (usize, u64, u64)| -> Result<Bytes> {
            let (start, end) = (skip as usize * w, (skip + len) as usize * w);
            let part = &self.parts[range];
            ensure!(end <= part.len(), corrupt, "plain values range of {} bytes is too short", part.len());
            Ok(part.slice(start..end))
        };
        let data = if let [piece] = pieces[..] {
            Buffer::from(slice(piece)?)
        } else {
            let mut out = MutableBuffer::with_capacity(num_rows as usize * w);
            for piece in pieces {
                out.extend_from_slice(&slice(piece)?);
            }
            out.into()
        };
        Ok(DataBlock::FixedWidth(FixedWidthBlock {
            data,
            bits_per_value: self.bytes_per_value * 8,
            num_values: num_rows,
        }))
    }
}
