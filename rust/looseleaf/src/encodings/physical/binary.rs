//! Binary: variable-width values as `num_rows + 1` offsets (32 or 64 bits, starting at 0) into
//! a data buffer. The offsets are a plain buffer, or an encoded child (delta-encoded offsets
//! take a few bits each).
//!
//! ```text
//! values  ["ab", "", "cde"]
//! offsets 0 2 2 5            (u32)
//! data    a b c d e
//! ```
//!
//! Reading the whole page is one request for both buffers; so is reading half of its rows or
//! more, any rows of a small page (at most [`SMALL_PAGE`] bytes), or rows on average less than
//! half the I/O scheduler's coalescing gap of page bytes apart (whose reads would merge into
//! most of the page anyway): the unwanted rows are cheaper to read than a second round trip.
//! Reading fewer rows of a larger page is *indirect
//! I/O*: the offsets of rows `a..b` (entries `a..=b`) are read first; a separate task decodes
//! them and requests data bytes `offsets[a]..offsets[b]` at the same priority, while the
//! scheduling loop goes on with other pages.

use std::ops::Range;

use arrow_buffer::{Buffer, MutableBuffer};
use bytes::Bytes;
use futures::FutureExt;
use tokio::sync::oneshot;

use super::PageContext;
use super::plain::PlainScheduler;
use crate::encodings::{
    DataBlock, FixedWidthBlock, PageDecoder, PageLoad, PageScheduler, RangeIndex, VariableWidthBlock,
};
use crate::error::{Error, Result, bail, ensure};
use crate::format::proto::{BinaryEncoding, BufferLocation, PlainEncoding};
use crate::io::{IoFuture, PageIo};

/// Pages of at most this many bytes are read whole whatever rows are asked for.
pub const SMALL_PAGE: u64 = 32 * 1024;

/// Schedules rows of a binary page.
#[derive(Debug)]
pub struct BinaryScheduler {
    /// The `num_rows + 1` offsets.
    offsets: Box<dyn PageScheduler>,
    /// Stored size of the offsets, to judge whether the page is small.
    offsets_size: u64,
    data: BufferLocation,
    bits_per_offset: u32,
    num_rows: u64,
}

impl BinaryScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &BinaryEncoding, page: &PageContext) -> Result<Self> {
        let bits = encoding.bits_per_offset;
        if bits != 32 && bits != 64 {
            bail!(corrupt, "binary encoding with {bits}-bit offsets (must be 32 or 64)")
        }
        let offsets_page = PageContext {
            num_rows: page.num_rows.checked_add(1).ok_or_else(|| Error::corrupt("page size overflows"))?,
            ..*page
        };
        let (offsets, offsets_size): (Box<dyn PageScheduler>, u64) = match encoding.offsets.as_deref() {
            Some(child) => {
                let scheduler = super::page_scheduler(Some(child), &offsets_page)?;
                // The page's buffers other than the data: the offsets' (and a validity at most),
                // a bound good enough to judge whether the page is small.
                let all = offsets_page.buffers.iter().map(|b| b.size).fold(0, u64::saturating_add);
                let data = page.buffers.get(encoding.data_buffer as usize).map_or(0, |b| b.size);
                (scheduler, all.saturating_sub(data))
            }
            None => {
                let plain = PlainEncoding { bits_per_value: bits as u64, buffer: encoding.offsets_buffer };
                let scheduler = PlainScheduler::try_new(&plain, &offsets_page)?;
                (Box::new(scheduler), offsets_page.num_rows.saturating_mul(bits as u64) / 8)
            }
        };
        let data = page.buffer(encoding.data_buffer, None, "binary data")?;
        Ok(Self { offsets, offsets_size, data, bits_per_offset: bits, num_rows: page.num_rows })
    }
}

impl PageScheduler for BinaryScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let selected: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let all_rows = matches!(ranges, [r] if r.start == 0 && r.end == self.num_rows);
        let page_bytes = self.offsets_size.saturating_add(self.data.size);
        // Rows on average less than half a coalescing gap of bytes apart: the data reads of an
        // indirect step would merge into nearly the whole page, a round trip later.
        let dense = page_bytes <= selected.saturating_mul(io.coalesce_gap() / 2);
        let whole_page = all_rows || selected * 2 >= self.num_rows || page_bytes <= SMALL_PAGE || dense;
        let bits_per_offset = self.bits_per_offset;
        let w = bits_per_offset as u64 / 8;
        if whole_page {
            // With a selection, the offsets decoder holds only the selected rows' offsets (each
            // range of `n` rows has `n + 1`), so that a batch decodes the offsets of its rows and
            // not of the rows between them (a take of scattered rows of a page otherwise decoded
            // and widened every offset of the page).
            let selection = (!all_rows).then(|| OffsetSelection::new(ranges));
            let offset_ranges: Vec<Range<u64>> = match &selection {
                Some(_) => ranges.iter().map(|r| r.start..r.end + 1).collect(),
                None => vec![0..self.num_rows + 1],
            };
            let num_offsets: u64 = offset_ranges.iter().map(|r| r.end - r.start).sum();
            let offsets = self.offsets.schedule_ranges(&offset_ranges, io);
            let data = io.submit(vec![self.data.offset..self.data.offset + self.data.size]);
            let num_rows = self.num_rows;
            return Box::pin(async move {
                let (offsets, mut data) = futures::try_join!(offsets, data)?;
                ensure!(offsets.num_rows() == num_offsets, corrupt, "binary offsets of the wrong length");
                let data = Buffer::from(data.pop().unwrap_or_default());
                // The offsets are decoded batch by batch, never the whole page at once: an
                // encoded page may claim any number of rows for few bytes.
                let page = WholePage { offsets, bits_per_offset, data, num_values: num_rows };
                Ok(Box::new(BinaryDecoder::Whole { page, selection }) as Box<dyn PageDecoder>)
            });
        }

        let offset_ranges: Vec<Range<u64>> = ranges.iter().map(|r| r.start..r.end + 1).collect();
        let offsets_loaded = self.offsets.schedule_ranges(&offset_ranges, io);
        let follow_up = io.follow_up();
        let data = self.data;
        let lengths: Vec<u64> = offset_ranges.iter().map(|r| r.end - r.start).collect();
        let (sender, receiver) = oneshot::channel::<Result<(Vec<Vec<u64>>, IoFuture)>>();
        // The indirect step: decode the offsets, then ask for the bytes they point at. It hands
        // the data request back unawaited, so its bytes stay in the I/O budget until the
        // decoder takes them.
        let step = async move {
            let result = async {
                let decoder = offsets_loaded.await?;
                // One decode for every range: the offsets' decoder unpacks each block it holds
                // once, not once per range (a take asks for two offsets per row).
                let DataBlock::FixedWidth(block) = decoder.decode(0, decoder.num_rows())? else {
                    bail!(corrupt, "binary offsets do not decode to integers")
                };
                ensure!(block.bits_per_value == w * 8, corrupt, "binary offsets of the wrong width");
                let all = block.data.as_slice();
                let mut offsets = Vec::with_capacity(lengths.len());
                let mut at = 0usize;
                for len in lengths {
                    let bytes = (len * w) as usize;
                    let Some(range) = all.get(at..at + bytes) else { bail!(corrupt, "binary offsets decoded short") };
                    offsets.push(parse_offsets(range, w, data.size)?);
                    at += bytes;
                }
                let data_ranges = offsets
                    .iter()
                    .map(|o| {
                        data.offset + o.first().copied().unwrap_or(0)..data.offset + o.last().copied().unwrap_or(0)
                    })
                    .collect();
                Ok((offsets, follow_up.submit(data_ranges)))
            }
            .await;
            let _ = sender.send(result);
        };
        io.spawn_indirect(self.data.size, step.boxed());
        let index = RangeIndex::new(ranges.iter().map(|r| r.end - r.start));
        Box::pin(async move {
            let (offsets, data_loaded) =
                receiver.await.map_err(|_| Error::internal("the indirect read of a binary page was cancelled"))??;
            let data = data_loaded.await?;
            ensure!(
                data.len() == offsets.len(),
                internal,
                "binary page loaded {} of {} ranges",
                data.len(),
                offsets.len()
            );
            Ok(Box::new(BinaryDecoder::Parts { parts: offsets.into_iter().zip(data).collect(), index })
                as Box<dyn PageDecoder>)
        })
    }
}

/// Parses `len / width` little-endian offsets, checking they do not decrease and stay within a
/// data buffer of `data_size` bytes.
fn parse_offsets(bytes: &[u8], width: u64, data_size: u64) -> Result<Vec<u64>> {
    let out: Vec<u64> = if width == 4 {
        bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64).collect()
    } else {
        bytes.chunks_exact(8).map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()
    };
    ensure!(
        out.windows(2).all(|p| p[0] <= p[1]) && out.last().is_none_or(|last| *last <= data_size),
        corrupt,
        "binary offsets decrease or point past the data buffer ({data_size} bytes)"
    );
    Ok(out)
}

/// Copies `bytes` into an allocation aligned for `align`-byte values unless it already is.
pub(crate) fn aligned(bytes: Bytes, align: usize) -> Buffer {
    // `usize::is_multiple_of` is newer than the crate's minimum Rust version.
    if align == 0 || (bytes.as_ptr() as usize).is_multiple_of(align) {
        Buffer::from(bytes)
    } else {
        let mut out = MutableBuffer::with_capacity(bytes.len());
        out.extend_from_slice(&bytes);
        out.into()
    }
}

/// A whole loaded page: its offsets' decoder and its data.
struct WholePage {
    /// Decodes to offsets into `data`: the page's `num_values + 1`, or, for a decoder holding
    /// a selection of rows, those of each selected range in turn (see [`OffsetSelection`]).
    offsets: Box<dyn PageDecoder>,
    bits_per_offset: u32,
    data: Buffer,
    num_values: u64,
}

/// Loaded rows of a binary page.
enum BinaryDecoder {
    /// The whole page's data, of which the decoder holds all rows or, if `selection` is given,
    /// the rows of some ranges; a batch of consecutive rows shares the data without copying.
    Whole { page: WholePage, selection: Option<OffsetSelection> },
    /// Some row ranges: per range, its offsets (absolute in the page) and its data bytes, which
    /// start at the range's first offset.
    Parts { parts: Vec<(Vec<u64>, Bytes)>, index: RangeIndex },
}

impl PageDecoder for BinaryDecoder {
    fn num_rows(&self) -> u64 {
        match self {
            Self::Whole { selection: Some(selection), .. } => selection.index.num_rows(),
            Self::Whole { page, selection: None } => page.num_values,
            Self::Parts { index, .. } => index.num_rows(),
        }
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        match self {
            Self::Whole { page, selection: Some(selection) } => {
                let pieces = selection.index.pieces(rows_to_skip, num_rows)?;
                let (Some(first), Some(last)) = (pieces.first(), pieces.last()) else {
                    return Ok(DataBlock::VariableWidth(VariableWidthBlock::from_offsets(
                        vec![0],
                        Buffer::from_vec(Vec::<u8>::new()),
                    )));
                };
                // The pieces' offsets are consecutive in the offsets decoder: decoded at once.
                let start = selection.offsets_at[first.0] + first.1;
                let end = selection.offsets_at[last.0] + last.1 + last.2 + 1;
                if let [(_, _, len)] = pieces.as_slice() {
                    // One run of rows shares the page's data.
                    return slice_rows(page, start, *len);
                }
                let decoded = decode_offsets(page, start, end - start - 1)?;
                let w = page.bits_per_offset as usize / 8;
                let decoded = decoded.data.as_slice();
                let bytes = page.data.as_slice();
                let mut offsets = Vec::with_capacity(num_rows as usize + 1);
                offsets.push(0u64);
                let mut data = MutableBuffer::new(0);
                for &(range, skip, len) in &pieces {
                    let at = (selection.offsets_at[range] + skip - start) as usize;
                    let shift = data.len() as u64;
                    let first = offset_at(decoded, at, w)?;
                    let mut previous = first;
                    for i in at + 1..=at + len as usize {
                        let offset = offset_at(decoded, i, w)?;
                        ensure!(offset >= previous, corrupt, "binary offsets decrease");
                        offsets.push(offset - first + shift);
                        previous = offset;
                    }
                    let Some(values) = bytes.get(first as usize..previous as usize) else {
                        bail!(corrupt, "binary offsets point past the page's data")
                    };
                    data.extend_from_slice(values);
                }
                Ok(DataBlock::VariableWidth(VariableWidthBlock::from_offsets(offsets, data.into())))
            }
            Self::Whole { page, selection: None } => slice_rows(page, rows_to_skip, num_rows),
            Self::Parts { parts, index } => {
                // The wanted rows of each range copied into one block: offsets rebased as they go.
                let pieces = index.pieces(rows_to_skip, num_rows)?;
                let mut offsets = Vec::with_capacity(num_rows as usize + 1);
                offsets.push(0u64);
                let mut data = MutableBuffer::new(0);
                for (range, skip, len) in pieces {
                    let (range_offsets, bytes) = &parts[range];
                    let base = range_offsets.first().copied().unwrap_or(0);
                    let Some(wanted) = range_offsets.get(skip as usize..=(skip + len) as usize) else {
                        bail!(internal, "rows past the end of a binary range")
                    };
                    append_values(wanted, base, bytes, &mut offsets, &mut data)?;
                }
                Ok(DataBlock::VariableWidth(VariableWidthBlock::from_offsets(offsets, data.into())))
            }
        }
    }
}

/// Appends the values between the offsets `wanted` (into `bytes`, which hold the page's data
/// from offset `base` on) to `data`, and their ends, rebased, to `offsets`.
fn append_values(
    wanted: &[u64],
    base: u64,
    bytes: &[u8],
    offsets: &mut Vec<u64>,
    data: &mut MutableBuffer,
) -> Result<()> {
    let (Some(&first), Some(&last)) = (wanted.first(), wanted.last()) else {
        bail!(internal, "a binary piece without offsets")
    };
    ensure!(first >= base && wanted.windows(2).all(|p| p[0] <= p[1]), corrupt, "binary offsets decrease");
    let Some(values) = bytes.get((first - base) as usize..(last - base) as usize) else {
        bail!(corrupt, "binary offsets point past the bytes read for them")
    };
    let shift = data.len() as u64;
    offsets.extend(wanted[1..].iter().map(|o| o - first + shift));
    data.extend_from_slice(values);
    Ok(())
}

/// The rows of a whole page a [`BinaryDecoder`] holds, when not all of them.
struct OffsetSelection {
    /// The held rows, range by range.
    index: RangeIndex,
    /// Where each range's offsets start in the offsets decoder (a range of `n` rows has
    /// `n + 1`): the offsets of consecutive held rows are consecutive there too.
    offsets_at: Vec<u64>,
}

impl OffsetSelection {
    fn new(ranges: &[Range<u64>]) -> Self {
        let offsets_at = ranges
            .iter()
            .scan(0u64, |at, r| {
                let start = *at;
                *at += r.end - r.start + 1;
                Some(start)
            })
            .collect();
        Self { index: RangeIndex::new(ranges.iter().map(|r| r.end - r.start)), offsets_at }
    }
}

/// Offset `i` of `decoded` offsets of `width` bytes.
fn offset_at(decoded: &[u8], i: usize, width: usize) -> Result<u64> {
    let bytes =
        decoded.get(i * width..(i + 1) * width).ok_or_else(|| Error::internal("binary offsets decoded short"))?;
    Ok(match <[u8; 4]>::try_from(bytes) {
        Ok(narrow) => u32::from_le_bytes(narrow) as u64,
        Err(_) => {
            let wide = <[u8; 8]>::try_from(bytes)
                .map_err(|_| Error::internal("binary offsets of a width other than 4 or 8"))?;
            u64::from_le_bytes(wide)
        }
    })
}

/// `len` rows of a whole page, whose offsets start at row `start` of its offsets decoder: their
/// offsets decoded, the page's data shared.
fn slice_rows(page: &WholePage, start: u64, len: u64) -> Result<DataBlock> {
    let offsets = decode_offsets(page, start, len)?;
    Ok(DataBlock::VariableWidth(VariableWidthBlock {
        offsets: offsets.data,
        bits_per_offset: page.bits_per_offset,
        data: page.data.clone(),
        num_values: len,
    }))
}

/// The `len + 1` offsets from row `start` of `page`'s offsets decoder, checked for their width.
fn decode_offsets(page: &WholePage, start: u64, len: u64) -> Result<FixedWidthBlock> {
    start
        .checked_add(len)
        .filter(|end| *end < page.offsets.num_rows())
        .ok_or_else(|| Error::internal("rows past the end of a binary page"))?;
    let DataBlock::FixedWidth(offsets) = page.offsets.decode(start, len + 1)? else {
        bail!(corrupt, "binary offsets do not decode to integers")
    };
    let w = page.bits_per_offset as usize / 8;
    ensure!(offsets.bits_per_value as usize == w * 8, corrupt, "binary offsets of the wrong width");
    ensure!(offsets.data.len() >= (len as usize + 1) * w, corrupt, "binary offsets buffer is too short");
    Ok(offsets)
}
