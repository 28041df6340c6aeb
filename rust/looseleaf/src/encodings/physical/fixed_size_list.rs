//! Fixed-size list: `dimension` child values per row, all rows' values encoded as one child
//! node of `num_rows × dimension` values.
//!
//! ```text
//! fixed_size_list<bool, 3> [[t, f, t], [f, f, t]]   child: bitmap of 6 values 0b100_101
//! ```
//!
//! Rows `a..b` are child values `a * dimension .. b * dimension`: random access costs what the
//! child's does. Lists of byte-wide values without nulls (embeddings) are not written with this
//! node but as [`super::plain`] values `dimension` times wider: one contiguous buffer, decoded
//! without a copy.

use std::ops::Range;

use super::PageContext;
use crate::encodings::{DataBlock, FixedLayout, PageDecoder, PageLoad, PageScheduler};
use crate::error::{Error, Result, bail, ensure};
use crate::format::proto::FixedSizeListEncoding;
use crate::io::PageIo;

/// Schedules rows of fixed-size lists through their child.
#[derive(Debug)]
pub struct FixedSizeListScheduler {
    dimension: u64,
    values: Box<dyn PageScheduler>,
    num_rows: u64,
}

impl FixedSizeListScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &FixedSizeListEncoding, page: &PageContext) -> Result<Self> {
        let dimension = encoding.dimension;
        // Arrow's list sizes are `i32`.
        ensure!(
            dimension > 0 && dimension <= i32::MAX as u64,
            corrupt,
            "fixed-size list encoding of dimension {dimension}"
        );
        let Some(values) = encoding.values.as_deref() else {
            bail!(corrupt, "fixed-size list encoding without values")
        };
        let num_values = page
            .num_rows
            .checked_mul(dimension)
            .ok_or_else(|| Error::corrupt("fixed-size list page size overflows"))?;
        let child = PageContext { num_rows: num_values, ..*page };
        let values = super::page_scheduler(Some(values), &child)?;
        Ok(Self { dimension, values, num_rows: page.num_rows })
    }
}

impl PageScheduler for FixedSizeListScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let d = self.dimension;
        let child_ranges: Vec<Range<u64>> = ranges.iter().map(|r| r.start * d..r.end * d).collect();
        let values = self.values.schedule_ranges(&child_ranges, io);
        Box::pin(async move {
            let values = values.await?;
            Ok(Box::new(FixedSizeListDecoder { dimension: d, values }) as Box<dyn PageDecoder>)
        })
    }
}

struct FixedSizeListDecoder {
    dimension: u64,
    values: Box<dyn PageDecoder>,
}

impl PageDecoder for FixedSizeListDecoder {
    fn num_rows(&self) -> u64 {
        self.values.num_rows() / self.dimension
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let d = self.dimension;
        let (skip, len) = items(rows_to_skip, num_rows, d)?;
        let values = self.values.decode(skip, len)?;
        Ok(DataBlock::FixedSizeList { dimension: d, values: Box::new(values) })
    }

    /// Lists of one fixed-width value per child row (not lists of lists).
    fn fixed_layout(&self) -> Option<FixedLayout> {
        match self.values.fixed_layout()? {
            FixedLayout { value_bits, dimension: None } => {
                Some(FixedLayout { value_bits, dimension: Some(self.dimension) })
            }
            FixedLayout { dimension: Some(_), .. } => None,
        }
    }

    fn decode_into(&self, rows_to_skip: u64, num_rows: u64, out: &mut [u8]) -> Result<()> {
        let (skip, len) = items(rows_to_skip, num_rows, self.dimension)?;
        self.values.decode_into(skip, len, out)
    }
}

/// The items of `num_rows` lists of `dimension` items after `rows_to_skip` lists, checked.
fn items(rows_to_skip: u64, num_rows: u64, dimension: u64) -> Result<(u64, u64)> {
    let overflow =
        || crate::error::Error::corrupt(format!("fixed-size lists of {dimension} items: item counts overflow"));
    Ok((
        rows_to_skip.checked_mul(dimension).ok_or_else(overflow)?,
        num_rows.checked_mul(dimension).ok_or_else(overflow)?,
    ))
}
