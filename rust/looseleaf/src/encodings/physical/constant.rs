//! Constant: every value of the page is the same; the value is in the encoding node, the page
//! has no buffer. Any row costs nothing to read.
//!
//! ```text
//! utf8 values ["R", "R", "R"]   ConstantEncoding { bits_per_value: 0, value: "R" }
//! ```

use std::ops::Range;

use arrow_array::BooleanArray;
use arrow_buffer::{BooleanBuffer, Buffer};

use super::integers::read_int;

use crate::encodings::range_test::RangeTest;
use crate::encodings::{DataBlock, FixedWidthBlock, PageDecoder, PageLoad, PageScheduler, VariableWidthBlock, limits};
use crate::error::{Result, ensure};
use crate::format::proto::ConstantEncoding;
use crate::io::PageIo;

/// Schedules rows of a constant page (no I/O).
#[derive(Debug, Clone)]
pub struct ConstantScheduler {
    encoding: ConstantEncoding,
    num_rows: u64,
}

impl ConstantScheduler {
    /// The scheduler of `encoding` for a page of `num_rows` rows.
    pub fn try_new(encoding: &ConstantEncoding, num_rows: u64) -> Result<Self> {
        let bits = encoding.bits_per_value;
        let ok = match bits {
            0 => true,
            1 => encoding.value.len() == 1 && encoding.value[0] <= 1,
            _ => bits.is_multiple_of(8) && encoding.value.len() as u64 == bits / 8,
        };
        ensure!(ok, corrupt, "constant encoding of {bits}-bit values holds {} bytes", encoding.value.len());
        Ok(Self { encoding: encoding.clone(), num_rows })
    }
}

impl PageScheduler for ConstantScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], _io: &PageIo) -> PageLoad {
        let num_values = ranges.iter().map(|r| r.end - r.start).sum();
        let encoding = self.encoding.clone();
        Box::pin(async move { Ok(Box::new(ConstantDecoder { encoding, num_values }) as Box<dyn PageDecoder>) })
    }
}

struct ConstantDecoder {
    encoding: ConstantEncoding,
    num_values: u64,
}

impl PageDecoder for ConstantDecoder {
    fn num_rows(&self) -> u64 {
        self.num_values
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        ensure!(rows_to_skip + num_rows <= self.num_values, internal, "rows past the end of a constant page");
        constant_block(&self.encoding, num_rows)
    }

    fn test_range(&self, rows_to_skip: u64, num_rows: u64, test: &RangeTest) -> Result<Option<BooleanArray>> {
        ensure!(rows_to_skip + num_rows <= self.num_values, internal, "rows past the end of a constant page");
        let value = &self.encoding.value;
        if !matches!(self.encoding.bits_per_value, 8 | 16 | 32 | 64 | 128) {
            return Ok(None);
        }
        let passes = (test.low..=test.high).contains(&read_int(value, test.signed));
        let n = num_rows as usize;
        let bits = if passes { BooleanBuffer::new_set(n) } else { BooleanBuffer::new_unset(n) };
        Ok(Some(BooleanArray::new(bits, None)))
    }
}

/// A block of `num_rows` copies of the constant.
///
/// # Errors
/// [`crate::Error::Corrupt`] if the block would exceed [`limits::MAX_BLOCK_BYTES`] (a constant
/// page stores nothing per row, so only the rows asked for bound it).
pub fn constant_block(encoding: &ConstantEncoding, num_rows: u64) -> Result<DataBlock> {
    let value = &encoding.value;
    let n = limits::block_bytes(num_rows, value.len().max(1) as u64, "constant values")? / value.len().max(1);
    Ok(match encoding.bits_per_value {
        1 => DataBlock::Boolean(if value.first() == Some(&1) {
            BooleanBuffer::new_set(n)
        } else {
            BooleanBuffer::new_unset(n)
        }),
        0 => {
            let offsets_len = limits::block_bytes(num_rows + 1, 8, "constant offsets")? / 8;
            let mut offsets = limits::try_vec::<u64>(offsets_len, "constant offsets")?;
            offsets.extend((0..=num_rows).map(|i| i * value.len() as u64));
            let mut data = limits::try_buffer(n * value.len(), "constant values")?;
            for _ in 0..n {
                data.extend_from_slice(value);
            }
            let block = VariableWidthBlock {
                offsets: Buffer::from_vec(offsets),
                bits_per_offset: 64,
                data: data.into(),
                num_values: num_rows,
            };
            DataBlock::VariableWidth(VariableWidthBlock::concat(&[block])?)
        }
        bits => {
            let mut data = limits::try_buffer(n * value.len(), "constant values")?;
            for _ in 0..n {
                data.extend_from_slice(value);
            }
            DataBlock::FixedWidth(FixedWidthBlock { data: data.into(), bits_per_value: bits, num_values: num_rows })
        }
    })
}
