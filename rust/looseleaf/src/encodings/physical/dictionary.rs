//! Dictionary: the page holds its distinct values once (the dictionary, any encoding of
//! `dictionary_size` values) and, per row, an unsigned index into it (any integer encoding,
//! usually bit-packed).
//!
//! ```text
//! utf8 values ["N", "R", "N", "A"]   dictionary ["N", "R", "A"] (binary), indices [0, 1, 0, 2]
//! (1-byte indices, bit-packed 2 bits each)
//! ```
//!
//! Reading some rows reads their indices (a block of them each) and the whole dictionary, which
//! the writer only uses when it is small. Decoding yields a [`DataBlock::Dictionary`], which the
//! logical layer turns into an Arrow `DictionaryArray` without touching the values, or
//! materialises.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use arrow_array::BooleanArray;
use arrow_buffer::BooleanBufferBuilder;

use super::PageContext;
use super::integers::{read_int, values_in_range};
use crate::encodings::range_test::RangeTest;
use crate::encodings::{DataBlock, PageDecoder, PageLoad, PageScheduler, limits};
use crate::error::{Error, Result, bail, ensure};
use crate::format::proto::DictionaryEncoding;
use crate::io::PageIo;

/// Schedules the indices of some rows and the whole dictionary.
#[derive(Debug)]
pub struct DictionaryScheduler {
    indices: Box<dyn PageScheduler>,
    dictionary: Box<dyn PageScheduler>,
    dictionary_size: u64,
    index_bytes: u32,
}

impl DictionaryScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &DictionaryEncoding, page: &PageContext) -> Result<Self> {
        ensure!(
            matches!(encoding.index_bytes, 1 | 2 | 4),
            corrupt,
            "dictionary indices of {} bytes",
            encoding.index_bytes
        );
        // The dictionary is decoded whole: no more values than the indices can address, nor
        // than its stored bytes hold (see `limits`).
        ensure!(
            encoding.dictionary_size <= 1 << (8 * encoding.index_bytes),
            corrupt,
            "a dictionary of {} values with {}-byte indices",
            encoding.dictionary_size,
            encoding.index_bytes
        );
        let (Some(indices), Some(dictionary)) = (encoding.indices.as_deref(), encoding.dictionary.as_deref()) else {
            bail!(corrupt, "dictionary encoding without indices or dictionary")
        };
        limits::check_whole_load(
            encoding.dictionary_size,
            super::stored_bytes(Some(dictionary), page.buffers),
            "a page's dictionary",
        )?;
        let indices = super::page_scheduler(Some(indices), page)?;
        let dictionary_page = PageContext { num_rows: encoding.dictionary_size, ..*page };
        let dictionary = super::page_scheduler(Some(dictionary), &dictionary_page)?;
        Ok(Self { indices, dictionary, dictionary_size: encoding.dictionary_size, index_bytes: encoding.index_bytes })
    }
}

impl PageScheduler for DictionaryScheduler {
    fn num_rows(&self) -> u64 {
        self.indices.num_rows()
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let indices = self.indices.schedule_ranges(ranges, io);
        let dictionary =
            (self.dictionary_size > 0).then(|| self.dictionary.schedule_ranges(&[0..self.dictionary_size], io));
        let (size, index_bytes) = (self.dictionary_size, self.index_bytes);
        Box::pin(async move {
            let indices = indices.await?;
            let dictionary = match dictionary {
                Some(load) => Some(load.await?),
                None => None,
            };
            Ok(Box::new(DictionaryDecoder { indices, dictionary, size, index_bytes, decoded: OnceLock::new() })
                as Box<dyn PageDecoder>)
        })
    }
}

struct DictionaryDecoder {
    indices: Box<dyn PageDecoder>,
    dictionary: Option<Box<dyn PageDecoder>>,
    size: u64,
    index_bytes: u32,
    /// The dictionary, decoded once for all the batches the page serves.
    decoded: OnceLock<Arc<DataBlock>>,
}

impl DictionaryDecoder {
    fn dictionary(&self) -> Result<Arc<DataBlock>> {
        if let Some(decoded) = self.decoded.get() {
            return Ok(decoded.clone());
        }
        let block = match &self.dictionary {
            Some(decoder) => decoder.decode(0, self.size)?,
            None => DataBlock::AllNull { num_values: 0 },
        };
        Ok(self.decoded.get_or_init(|| Arc::new(block)).clone())
    }
}

impl PageDecoder for DictionaryDecoder {
    fn num_rows(&self) -> u64 {
        self.indices.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let indices = self.indices.decode(rows_to_skip, num_rows)?;
        match &indices {
            DataBlock::FixedWidth(block) if block.bits_per_value == self.index_bytes as u64 * 8 => {}
            _ => return Err(Error::corrupt("dictionary indices do not decode to integers of their width")),
        }
        Ok(DataBlock::Dictionary { indices: Box::new(indices), dictionary: self.dictionary()? })
    }

    fn test_range(&self, rows_to_skip: u64, num_rows: u64, test: &RangeTest) -> Result<Option<BooleanArray>> {
        // Each dictionary value tested once, then looked up by the rows' indices.
        let Some(passes) = values_in_range(&*self.dictionary()?, test) else { return Ok(None) };
        let indices = match self.indices.decode(rows_to_skip, num_rows)? {
            DataBlock::FixedWidth(block) if block.bits_per_value == self.index_bytes as u64 * 8 => block,
            _ => return Err(Error::corrupt("dictionary indices do not decode to integers of their width")),
        };
        let width = self.index_bytes as usize;
        let indices = indices.data.as_slice().chunks_exact(width).map(|i| read_int(i, false) as usize);
        let mut bits = BooleanBufferBuilder::new(num_rows as usize);
        for index in indices {
            match passes.get(index) {
                Some(pass) => bits.append(*pass),
                None => bail!(corrupt, "a dictionary index {index} past its {} values", passes.len()),
            }
        }
        Ok(Some(BooleanArray::new(bits.finish(), None)))
    }
}
