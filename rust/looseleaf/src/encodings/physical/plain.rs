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
        let (spans, starts) = merge_near(ranges.iter().map(|r| base + r.start * w..base + r.end * w));
        let loaded = io.submit(spans.clone());
        let index = RangeIndex::new(ranges.iter().map(|r| r.end - r.start));
        Box::pin(async move {
            let parts = loaded.await?;
            ensure!(
                parts.len() == spans.len(),
                internal,
                "plain values loaded {} of {} ranges",
                parts.len(),
                spans.len()
            );
            Ok(Box::new(PlainDecoder { parts, starts, index, bytes_per_value: w }) as Box<dyn PageDecoder>)
        })
    }
}

/// Byte ranges of one buffer closer than this are asked for as one. A take asks for a range
/// per row; merging them here spares the I/O scheduler and the decoder a piece of work per row,
/// and reads nothing more: every store's scheduler merges gaps of 4 KiB and more anyway.
const MERGE_GAP: u64 = 1024;

/// `ranges` (in order) merged where they are at most [`MERGE_GAP`] apart: the merged spans,
/// and for each range its span and its byte offset there.
fn merge_near(ranges: impl Iterator<Item = Range<u64>>) -> (Vec<Range<u64>>, Vec<(usize, usize)>) {
    let mut spans: Vec<Range<u64>> = Vec::new();
    let mut starts = Vec::with_capacity(ranges.size_hint().0);
    for range in ranges {
        match spans.last_mut() {
            Some(last) if range.start >= last.start && range.start <= last.end.saturating_add(MERGE_GAP) => {
                last.end = last.end.max(range.end);
            }
            _ => spans.push(range.clone()),
        }
        let span = spans.len() - 1;
        starts.push((span, (range.start - spans[span].start) as usize));
    }
    (spans, starts)
}

/// Loaded values of one or more row ranges.
#[derive(Debug)]
struct PlainDecoder {
    /// The loaded spans of bytes.
    parts: Vec<Bytes>,
    /// For each row range, its span in `parts` and its byte offset there.
    starts: Vec<(usize, usize)>,
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
        let bytes = |(range, skip, len): (usize, u64, u64)| -> Result<(&Bytes, Range<usize>)> {
            let (span, offset) = self.starts[range];
            let part = &self.parts[span];
            let (start, end) = (offset + skip as usize * w, offset + (skip + len) as usize * w);
            ensure!(end <= part.len(), corrupt, "plain values range of {} bytes is too short", part.len());
            Ok((part, start..end))
        };
        let data = if let [piece] = pieces[..] {
            let (part, range) = bytes(piece)?;
            Buffer::from(part.slice(range))
        } else {
            let mut out = MutableBuffer::with_capacity(num_rows as usize * w);
            for piece in pieces {
                let (part, range) = bytes(piece)?;
                out.extend_from_slice(&part[range]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_ranges_share_a_span() {
        let (spans, starts) = merge_near([0..8, 16..24, 2000..2008, 2004..2012, 9000..9008].into_iter());
        assert_eq!(spans, vec![0..24, 2000..2012, 9000..9008]);
        assert_eq!(starts, vec![(0, 0), (0, 16), (1, 0), (1, 4), (2, 0)]);
        // A range before the current span starts a new one, so offsets are never negative.
        let (spans, starts) = merge_near([100..108, 50..58].into_iter());
        assert_eq!((spans, starts), (vec![100..108, 50..58], vec![(0, 0), (1, 0)]));
    }
}
