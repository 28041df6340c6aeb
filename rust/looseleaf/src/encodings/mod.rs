//! Encodings: how the values of one page are laid out in its buffers.
//!
//! A page's encoding is a tree ([`crate::format::proto::Encoding`]). Its nodes are *physical*
//! encodings ([`physical`]): each knows one byte layout, works on [`DataBlock`]s and knows
//! nothing of Arrow types. The *logical* layer ([`logical`]) turns blocks into Arrow arrays of a
//! field's type and back.
//!
//! Reading a page is split in two, as the reader is:
//! - a [`PageScheduler`] works out which byte ranges a set of rows needs and asks for them
//!   through a [`PageIo`]; it never waits for I/O;
//! - the future it returns resolves, once the bytes are there, to a [`PageDecoder`] that turns
//!   any run of the scheduled rows into a [`DataBlock`] (the decode stream calls it once per
//!   output batch, so a page is decoded in pieces of the batch size). A decoder may also answer
//!   a [`RangeTest`] on its rows without decoding them ([`PageDecoder::test_range`]).

pub mod compression;
pub mod data_block;
pub mod limits;
pub mod logical;
pub mod physical;
pub mod policy;
pub mod range_test;
pub mod statistics;
pub mod strategy;

use std::fmt::Debug;
use std::ops::Range;

use arrow_array::BooleanArray;
use arrow_buffer::BooleanBuffer;
use futures::future::BoxFuture;

pub use data_block::{DataBlock, FixedWidthBlock, VariableWidthBlock};

use crate::error::Result;
use crate::io::PageIo;
use range_test::RangeTest;

/// The future of a scheduled page: a decoder once its bytes are loaded.
pub type PageLoad = BoxFuture<'static, Result<Box<dyn PageDecoder>>>;

/// Plans the reads of one page (or of one encoding node inside a page).
pub trait PageScheduler: Send + Sync + Debug {
    /// Number of values in the page.
    fn num_rows(&self) -> u64;

    /// Asks `io` for the bytes of `ranges` (sorted, disjoint, non-empty, within
    /// `0..num_rows()`) and returns the future of a decoder holding exactly those rows,
    /// concatenated in order. Must not block or await.
    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad;
}

/// Decodes loaded rows of a page.
pub trait PageDecoder: Send + Sync {
    /// Number of rows the decoder holds (the total length of the scheduled ranges).
    fn num_rows(&self) -> u64;

    /// Decodes `num_rows` rows starting after `rows_to_skip` of the held rows.
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if the bytes do not decode.
    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock>;

    /// Decodes as [`decode`](Self::decode) does, with 16-byte integers as 8-byte ones: how a
    /// read takes decimals of up to 18 digits at their native width (`Decimal64`), to compare
    /// them without widening them first. The default narrows what `decode` returns; encodings
    /// that store 16-byte values as 64-bit differences decode them narrow from the start.
    ///
    /// # Errors
    /// As [`decode`](Self::decode); [`crate::Error::Corrupt`] if a valid value does not fit 64
    /// bits; [`crate::Error::Internal`] if the rows are not integers of 8 or 16 bytes.
    fn decode_64(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        self.decode(rows_to_skip, num_rows)?.narrowed_to_64()
    }

    /// The range test `test` on rows `rows_to_skip..rows_to_skip + num_rows`, run on the stored
    /// form if this encoding can (a bit-packed page compares its packed differences, without
    /// writing the values out): one bit per row, true where the value is in the range, false
    /// where not, null where the value is null. `None` (the default) for the caller to decode
    /// the rows and test the values.
    ///
    /// The test reads the values as integers of the width the page stores them in, signed as
    /// `test` says. An encoding that cannot be sure those integers are the values
    /// [`decode`](Self::decode) gives answers `None`.
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    fn test_range(&self, rows_to_skip: u64, num_rows: u64, test: &RangeTest) -> Result<Option<BooleanArray>> {
        let _ = (rows_to_skip, num_rows, test);
        Ok(None)
    }

    /// The rows of `rows_to_skip..rows_to_skip + num_rows` where `selected` (one bit per row
    /// of that run) is set, decoded without writing out the others, if this encoding can (a
    /// bit-packed page unpacks each block holding a selected row into a block-sized buffer and
    /// copies out the selected values): the block [`decode`](Self::decode) would return,
    /// filtered. `None` (the default) for the caller to decode the rows and filter them.
    ///
    /// How a filtered read decodes the columns it returns only where the filter passed.
    ///
    /// # Errors
    /// As [`decode`](Self::decode); [`crate::Error::Internal`] if `selected` is not `num_rows`
    /// bits long.
    fn decode_selected(&self, rows_to_skip: u64, num_rows: u64, selected: &BooleanBuffer) -> Result<Option<DataBlock>> {
        let _ = (rows_to_skip, num_rows, selected);
        Ok(None)
    }

    /// [`decode_selected`](Self::decode_selected) with 16-byte integers as 8-byte ones, as
    /// [`decode_64`](Self::decode_64) decodes them. The default narrows what `decode_selected`
    /// returns.
    ///
    /// # Errors
    /// As [`decode_selected`](Self::decode_selected) and [`decode_64`](Self::decode_64).
    fn decode_selected_64(
        &self,
        rows_to_skip: u64,
        num_rows: u64,
        selected: &BooleanBuffer,
    ) -> Result<Option<DataBlock>> {
        self.decode_selected(rows_to_skip, num_rows, selected)?.map(DataBlock::narrowed_to_64).transpose()
    }

    /// The layout of the rows [`decode_into`](Self::decode_into) writes, if this decoder can
    /// write its rows straight into a caller's buffer (the default: it cannot).
    ///
    /// A batch that spans pages is then decoded into one buffer, instead of decoded page by
    /// page and joined by a copy into new memory (a take's batch spans dozens of pages).
    fn fixed_layout(&self) -> Option<FixedLayout> {
        None
    }

    /// Writes rows `rows_to_skip..rows_to_skip + num_rows` into `out`, exactly the bytes of the
    /// [`DataBlock`] [`decode`](Self::decode) would return (laid out as
    /// [`fixed_layout`](Self::fixed_layout) says, no nulls). `out` holds exactly
    /// `num_rows` × [`FixedLayout::row_bytes`] bytes and is aligned to the value width.
    ///
    /// # Errors
    /// As [`decode`](Self::decode); [`crate::Error::Internal`] if the decoder has no fixed
    /// layout or `out` is not as above.
    fn decode_into(&self, rows_to_skip: u64, num_rows: u64, out: &mut [u8]) -> Result<()> {
        let _ = (rows_to_skip, num_rows, out);
        Err(crate::Error::internal("this page decoder does not write into a caller's buffer"))
    }
}

/// How a [`PageDecoder`] with a fixed layout lays out its rows: values of `value_bits` bits
/// back to back, `dimension` of them per row for fixed-size lists ([`DataBlock::FixedSizeList`]
/// over [`DataBlock::FixedWidth`]), one per row otherwise ([`DataBlock::FixedWidth`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedLayout {
    /// Width of one value in bits (a multiple of 8).
    pub value_bits: u64,
    /// Values per row of a fixed-size list; `None` for one value per row.
    pub dimension: Option<u64>,
}

impl FixedLayout {
    /// Bytes of one row, or `None` if that overflows.
    pub fn row_bytes(&self) -> Option<u64> {
        (self.value_bits / 8).checked_mul(self.dimension.unwrap_or(1))
    }

    /// The block of `num_rows` rows whose bytes are `data`, as [`PageDecoder::decode`] returns it.
    pub fn block(&self, data: arrow_buffer::Buffer, num_rows: u64) -> DataBlock {
        let values_per_row = self.dimension.unwrap_or(1);
        let values = DataBlock::FixedWidth(FixedWidthBlock {
            data,
            bits_per_value: self.value_bits,
            num_values: num_rows * values_per_row,
        });
        match self.dimension {
            Some(dimension) => DataBlock::FixedSizeList { dimension, values: Box::new(values) },
            None => values,
        }
    }
}

/// Maps a run of rows of a decoder (numbered across all its scheduled ranges) onto the ranges.
///
/// Decoders that load one buffer per scheduled range use this to find which buffers hold the
/// rows they are asked for.
#[derive(Debug, Clone)]
pub struct RangeIndex {
    /// Start of each range in the decoder's row numbering, plus the total at the end.
    starts: Vec<u64>,
}

impl RangeIndex {
    /// An index over ranges of the given lengths.
    pub fn new(lengths: impl IntoIterator<Item = u64>) -> Self {
        let lengths = lengths.into_iter();
        let mut starts = Vec::with_capacity(lengths.size_hint().0 + 1);
        starts.push(0);
        let mut total = 0;
        for len in lengths {
            total += len;
            starts.push(total);
        }
        Self { starts }
    }

    /// Total number of rows.
    pub fn num_rows(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The pieces `(range index, first row within the range, number of rows)` that make up
    /// rows `skip..skip + len`.
    pub fn pieces(&self, skip: u64, len: u64) -> Result<Vec<(usize, u64, u64)>> {
        let end = skip.checked_add(len).filter(|end| *end <= self.num_rows());
        let Some(end) = end else {
            return Err(crate::Error::internal(format!(
                "rows {skip}..{} asked of a decoder holding {} rows",
                skip.saturating_add(len),
                self.num_rows()
            )));
        };
        let mut row = skip;
        let mut index = self.starts.partition_point(|s| *s <= skip).saturating_sub(1);
        let mut out = Vec::with_capacity(self.starts.partition_point(|s| *s < end).saturating_sub(index));
        while row < end {
            let range_end = self.starts[index + 1];
            let take = range_end.min(end) - row;
            if take > 0 {
                out.push((index, row - self.starts[index], take));
            }
            row += take;
            index += 1;
        }
        Ok(out)
    }
}

/// The rows a decoder holds: page-relative ranges, numbered one after the other.
#[derive(Debug, Clone)]
pub struct SelectedRows {
    ranges: Vec<Range<u64>>,
    index: RangeIndex,
}

impl SelectedRows {
    /// The rows of `ranges` (sorted, disjoint, page-relative).
    pub fn new(ranges: &[Range<u64>]) -> Self {
        Self { ranges: ranges.to_vec(), index: RangeIndex::new(ranges.iter().map(|r| r.end - r.start)) }
    }

    /// Number of rows held.
    pub fn num_rows(&self) -> u64 {
        self.index.num_rows()
    }

    /// The page rows of held rows `skip..skip + len`, as page-relative ranges in order.
    pub fn page_rows(&self, skip: u64, len: u64) -> Result<Vec<Range<u64>>> {
        Ok(self
            .index
            .pieces(skip, len)?
            .into_iter()
            .map(|(range, offset, len)| {
                let start = self.ranges[range].start + offset;
                start..start + len
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_index_pieces() {
        let index = RangeIndex::new([3, 0, 4, 2]);
        assert_eq!(index.num_rows(), 9);
        assert_eq!(index.pieces(0, 3).unwrap(), vec![(0, 0, 3)]);
        assert_eq!(index.pieces(2, 3).unwrap(), vec![(0, 2, 1), (2, 0, 2)]);
        assert_eq!(index.pieces(3, 6).unwrap(), vec![(2, 0, 4), (3, 0, 2)]);
        assert_eq!(index.pieces(9, 0).unwrap(), vec![]);
        assert!(index.pieces(8, 2).is_err());
    }

    /// Every row held, as `(range index, row within the range)`: the truth the pieces and
    /// page rows are checked against.
    fn rows_of(lengths: &[u64]) -> Vec<(usize, u64)> {
        lengths.iter().enumerate().flat_map(|(i, len)| (0..*len).map(move |row| (i, row))).collect()
    }

    proptest::proptest! {
        /// Pieces and page rows of any span agree with the rows counted one by one, for ranges
        /// of single rows (as a take has), longer ones and empty ones in any mix.
        #[test]
        fn pieces_and_page_rows_match_rows_counted_one_by_one(
            lengths in proptest::collection::vec(proptest::prop_oneof![3 => proptest::strategy::Just(1u64), 1 => 0u64..4], 0..40),
            skip in 0u64..50,
            len in 0u64..50,
        ) {
            let rows = rows_of(&lengths);
            let ranges: Vec<Range<u64>> =
                lengths.iter().scan(0u64, |at, len| { let start = *at + 7; *at = start + len; Some(start..*at) }).collect();
            let selected = SelectedRows::new(&ranges);
            let index = RangeIndex::new(lengths.iter().copied());
            proptest::prop_assert_eq!(index.num_rows(), rows.len() as u64);
            if skip + len > rows.len() as u64 {
                proptest::prop_assert!(index.pieces(skip, len).is_err());
                proptest::prop_assert!(selected.page_rows(skip, len).is_err());
                return Ok(());
            }
            let span = &rows[skip as usize..(skip + len) as usize];
            let expanded: Vec<(usize, u64)> = index
                .pieces(skip, len)
                .unwrap()
                .into_iter()
                .flat_map(|(range, first, n)| (first..first + n).map(move |row| (range, row)))
                .collect();
            proptest::prop_assert_eq!(&expanded, span);
            let page_rows: Vec<u64> = selected.page_rows(skip, len).unwrap().into_iter().flatten().collect();
            let truth: Vec<u64> = span.iter().map(|(range, row)| ranges[*range].start + row).collect();
            proptest::prop_assert_eq!(page_rows, truth);
        }
    }
}
