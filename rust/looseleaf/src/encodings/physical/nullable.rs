//! Nullable: a validity bitmap (see [`super::bitmap`]; 1 = valid) over a child encoding that
//! holds a value for every row, nulls included. A page without nulls has no nullable node (and
//! so no validity buffer); a page of nulls only is [`AllNullScheduler`], with no buffers at all.

use std::ops::Range;

use arrow_array::BooleanArray;
use arrow_array::cast::AsArray;
use arrow_buffer::{BooleanBuffer, NullBuffer};

use super::PageContext;
use super::bitmap::{BitmapDecoder, BitmapScheduler};
use crate::encodings::range_test::RangeTest;
use crate::encodings::{DataBlock, PageDecoder, PageLoad, PageScheduler};
use crate::error::{Result, bail, ensure};
use crate::format::proto::NullableEncoding;
use crate::io::PageIo;

/// Schedules the validity and the values of a nullable page together.
#[derive(Debug)]
pub struct NullableScheduler {
    validity: BitmapScheduler,
    values: Box<dyn PageScheduler>,
}

impl NullableScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &NullableEncoding, page: &PageContext) -> Result<Self> {
        let validity = BitmapScheduler::try_new(encoding.validity_buffer, page)?;
        let Some(values) = encoding.values.as_deref() else { bail!(corrupt, "nullable encoding without values") };
        let values = super::page_scheduler(Some(values), page)?;
        Ok(Self { validity, values })
    }
}

impl PageScheduler for NullableScheduler {
    fn num_rows(&self) -> u64 {
        self.values.num_rows()
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let validity = self.validity.schedule_bits(ranges, io);
        let values = self.values.schedule_ranges(ranges, io);
        Box::pin(async move {
            let (validity, values) = futures::try_join!(validity, values)?;
            ensure!(validity.num_rows() == values.num_rows(), corrupt, "validity and values hold different row counts");
            Ok(Box::new(NullableDecoder { validity, values }) as Box<dyn PageDecoder>)
        })
    }
}

struct NullableDecoder {
    validity: BitmapDecoder,
    values: Box<dyn PageDecoder>,
}

impl PageDecoder for NullableDecoder {
    fn num_rows(&self) -> u64 {
        self.values.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let validity = self.validity.decode_bits(rows_to_skip, num_rows)?;
        let values = self.values.decode(rows_to_skip, num_rows)?;
        Ok(DataBlock::Nullable { validity, values: Box::new(values) })
    }

    fn decode_64(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let validity = self.validity.decode_bits(rows_to_skip, num_rows)?;
        match self.values.decode_64(rows_to_skip, num_rows) {
            Ok(values) => Ok(DataBlock::Nullable { validity, values: Box::new(values) }),
            // A null slot holds anything, and the values alone cannot tell it from a value that
            // does not fit: checked again with the validity.
            Err(_) => self.decode(rows_to_skip, num_rows)?.narrowed_to_64(),
        }
    }

    fn decode_selected(&self, rows_to_skip: u64, num_rows: u64, selected: &BooleanBuffer) -> Result<Option<DataBlock>> {
        let Some(values) = self.values.decode_selected(rows_to_skip, num_rows, selected)? else { return Ok(None) };
        let validity = self.selected_validity(rows_to_skip, num_rows, selected)?;
        Ok(Some(DataBlock::Nullable { validity, values: Box::new(values) }))
    }

    fn decode_selected_64(
        &self,
        rows_to_skip: u64,
        num_rows: u64,
        selected: &BooleanBuffer,
    ) -> Result<Option<DataBlock>> {
        match self.values.decode_selected_64(rows_to_skip, num_rows, selected) {
            Ok(Some(values)) => {
                let validity = self.selected_validity(rows_to_skip, num_rows, selected)?;
                Ok(Some(DataBlock::Nullable { validity, values: Box::new(values) }))
            }
            Ok(None) => Ok(None),
            // As in `decode_64`: checked again with the validity.
            Err(_) => {
                self.decode_selected(rows_to_skip, num_rows, selected)?.map(DataBlock::narrowed_to_64).transpose()
            }
        }
    }

    fn test_range(&self, rows_to_skip: u64, num_rows: u64, test: &RangeTest) -> Result<Option<BooleanArray>> {
        // Null slots hold anything: their bits are masked by the validity.
        let Some(tested) = self.values.test_range(rows_to_skip, num_rows, test)? else { return Ok(None) };
        let validity = self.validity.decode_bits(rows_to_skip, num_rows)?;
        ensure!(validity.len() == tested.len(), corrupt, "validity and values hold different row counts");
        Ok(Some(BooleanArray::new(tested.values().clone(), Some(NullBuffer::new(validity)))))
    }
}

impl NullableDecoder {
    /// The validity of the rows of `rows_to_skip..rows_to_skip + num_rows` where `selected` is set.
    fn selected_validity(&self, rows_to_skip: u64, num_rows: u64, selected: &BooleanBuffer) -> Result<BooleanBuffer> {
        let validity = self.validity.decode_bits(rows_to_skip, num_rows)?;
        ensure!(validity.len() == selected.len(), internal, "a selection of other than the rows decoded");
        let kept = arrow_select::filter::filter(
            &BooleanArray::new(validity, None),
            &BooleanArray::new(selected.clone(), None),
        )?;
        Ok(kept.as_boolean().values().clone())
    }
}

/// A page whose values are all null: nothing to read.
#[derive(Debug)]
pub struct AllNullScheduler {
    num_rows: u64,
}

impl AllNullScheduler {
    /// The scheduler of an all-null page of `num_rows` rows.
    pub fn new(num_rows: u64) -> Self {
        Self { num_rows }
    }
}

impl PageScheduler for AllNullScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], _io: &PageIo) -> PageLoad {
        let num_values = ranges.iter().map(|r| r.end - r.start).sum();
        Box::pin(futures::future::ready(Ok(Box::new(AllNullDecoder { num_values }) as Box<dyn PageDecoder>)))
    }
}

struct AllNullDecoder {
    num_values: u64,
}

impl PageDecoder for AllNullDecoder {
    fn num_rows(&self) -> u64 {
        self.num_values
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        ensure!(rows_to_skip + num_rows <= self.num_values, internal, "rows past the end of an all-null page");
        Ok(DataBlock::AllNull { num_values: num_rows })
    }
}
