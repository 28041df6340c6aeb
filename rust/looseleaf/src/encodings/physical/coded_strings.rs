//! What the string encodings that code values against a table learnt from the page (FSST's
//! symbols, OnPair's tokens) share on the scheduling side: the table is read whole, the codes of
//! the rows asked for are a binary child, and each value's decoded length, when the page stores
//! it, is read only where the codes are read in long runs (a scan: the batch's values decode in
//! one call, their offsets a prefix sum of the lengths), not for a take of scattered rows, which
//! would read a block of lengths per row to save a few calls of the decoder.

use std::ops::Range;

use bytes::Bytes;
use futures::future::BoxFuture;

use super::PageContext;
use crate::encodings::{PageDecoder, PageScheduler};
use crate::error::Result;
use crate::format::proto::{BufferLocation, Encoding};
use crate::io::PageIo;

/// The reads of a table-and-codes page: its table's buffer, its codes, its decoded lengths.
#[derive(Debug)]
pub struct CodedStrings {
    table: BufferLocation,
    codes: Box<dyn PageScheduler>,
    decoded_lengths: Option<Box<dyn PageScheduler>>,
}

/// What a table-and-codes page's reads give its decoder: the table's bytes, the codes, and the
/// decoded lengths if they were read.
pub struct LoadedCodes {
    /// The table, as stored.
    pub table: Bytes,
    /// The codes of the rows read, one binary value per row.
    pub codes: Box<dyn PageDecoder>,
    /// Each row's decoded length, if the page stores them and the read is a long run.
    pub decoded_lengths: Option<Box<dyn PageDecoder>>,
}

impl CodedStrings {
    /// The reads of a page whose table is the checked buffer `table` and whose codes and
    /// decoded lengths are the child encodings `codes` and `decoded_lengths`.
    ///
    /// # Errors
    /// As [`super::page_scheduler`] for the children.
    pub fn try_new(
        table: BufferLocation,
        codes: &Encoding,
        decoded_lengths: Option<&Encoding>,
        page: &PageContext,
    ) -> Result<Self> {
        let decoded_lengths = decoded_lengths.map(|lengths| super::page_scheduler(Some(lengths), page)).transpose()?;
        Ok(Self { table, codes: super::page_scheduler(Some(codes), page)?, decoded_lengths })
    }

    /// Values in the page.
    pub fn num_rows(&self) -> u64 {
        self.codes.num_rows()
    }

    /// Submits the reads of the rows of `ranges` and returns what they will give.
    pub fn schedule(&self, ranges: &[Range<u64>], io: &PageIo) -> BoxFuture<'static, Result<LoadedCodes>> {
        let table = io.submit(vec![self.table.offset..self.table.offset + self.table.size]);
        let codes = self.codes.schedule_ranges(ranges, io);
        let selected: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let decoded_lengths = self
            .decoded_lengths
            .as_ref()
            .filter(|_| selected.saturating_mul(2) >= self.num_rows())
            .map(|lengths| lengths.schedule_ranges(ranges, io));
        Box::pin(async move {
            let lengths = async {
                match decoded_lengths {
                    Some(lengths) => lengths.await.map(Some),
                    None => Ok(None),
                }
            };
            let (mut table, codes, decoded_lengths) = futures::try_join!(table, codes, lengths)?;
            Ok(LoadedCodes { table: table.pop().unwrap_or_default(), codes, decoded_lengths })
        })
    }
}
