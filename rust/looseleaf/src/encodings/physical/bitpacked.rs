//! Bit-packed integers with a frame of reference: each value is stored as `value - reference`
//! (the page minimum) in `bit_width` bits, packed in blocks of 1024 in the FastLanes layout
//! (see [`super::integers`]).
//!
//! ```text
//! int32 values [1000, 1003, 1001, 1007]   reference 1000, differences [0, 3, 1, 7]: 3 bits
//! buffer: one block of 1024 × 3 bits = 384 bytes (values past the 4th are padding)
//! ```
//!
//! Reading some rows reads only the blocks holding them (`128 × bit_width` bytes each); rows
//! scattered over many blocks (a take) are unpacked one by one, others block by block. A width
//! of 0 (all values equal to the reference) stores nothing. Values of 16 bytes (decimal128) are
//! packed when their range allows, in the narrowest lanes of 8, 16, 32 or 64 bits that hold the
//! width: a range test of `l_discount` (4 bits) unpacks and compares a block in 1 KiB, not 8.

use std::ops::Range;

use arrow_array::BooleanArray;
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer};

use super::PageContext;
use super::binary::aligned;
use super::integers::{
    BLOCK, Widening, block_bytes, blocks_for, largest_of_width, read_int, shared_block_spans, test_packed,
    unpack_alone, unpack_blocks, unpack_filtered, unpack_selected, unpack_widened, write_int,
};
use crate::encodings::range_test::RangeTest;
use crate::encodings::{DataBlock, FixedWidthBlock, PageDecoder, PageLoad, PageScheduler, SelectedRows, limits};
use crate::error::{Error, Result, bail, ensure};
use crate::format::proto::{BitpackedEncoding, BufferLocation};
use crate::io::PageIo;

/// The validated parameters of a bit-packed node.
#[derive(Debug, Clone)]
struct Layout {
    value_bytes: usize,
    lane_bytes: usize,
    bit_width: u32,
    reference: i128,
}

impl Layout {
    fn try_new(encoding: &BitpackedEncoding) -> Result<Self> {
        let value_bytes = encoding.value_bytes as usize;
        let lane_bytes = encoding.lane_bits as usize / 8;
        ensure!(
            matches!(value_bytes, 1 | 2 | 4 | 8 | 16)
                && matches!(lane_bytes, 1 | 2 | 4 | 8)
                && encoding.lane_bits.is_multiple_of(8)
                && (lane_bytes == value_bytes || value_bytes == 16)
                && encoding.bit_width <= encoding.lane_bits
                && encoding.reference.len() == value_bytes,
            corrupt,
            "bit-packed encoding with values of {} bytes, lanes of {} bits, width {}, reference of {} bytes",
            encoding.value_bytes,
            encoding.lane_bits,
            encoding.bit_width,
            encoding.reference.len()
        );
        Ok(Self {
            value_bytes,
            lane_bytes,
            bit_width: encoding.bit_width,
            reference: read_int(&encoding.reference, false),
        })
    }

    /// The reference added in the lanes: values wider than their lanes add theirs when widened.
    fn lane_reference(&self) -> u64 {
        if self.value_bytes == self.lane_bytes { self.reference as u64 } else { 0 }
    }

    /// How values wider than their lanes are made of their differences.
    fn widening(&self) -> Widening {
        Widening::new(self.value_bytes, self.bit_width, self.reference)
    }

    /// 16-byte values taken as 8-byte values (the differences plus the reference, wrapping in 64
    /// bits), if every value the page can hold fits 64 bits: the reference does, and so does the
    /// reference plus the largest difference of `bit_width` bits.
    fn as_64(&self) -> Option<Layout> {
        if self.value_bytes != 16 {
            return None;
        }
        let largest = largest_of_width(self.bit_width);
        let reference = i64::try_from(self.reference).ok()?;
        reference.checked_add_unsigned(largest)?;
        Some(Layout {
            value_bytes: 8,
            lane_bytes: self.lane_bytes,
            bit_width: self.bit_width,
            reference: reference as i128,
        })
    }
}

impl Layout {
    /// Appends the reference `count` times: the values of a page of width 0.
    fn repeat_reference(&self, count: u64, out: &mut MutableBuffer) {
        let mut value = vec![0u8; self.value_bytes];
        write_int(self.reference, &mut value);
        for _ in 0..count {
            out.extend_from_slice(&value);
        }
    }

    /// The range of `test` as differences from the reference, to test the packed values
    /// against: `Some(None)` if no value the page can hold passes; `None` if the values cannot
    /// be told exactly from the differences in the test's signedness (the reference plus the
    /// largest difference leaves the type: a page written with the other signedness).
    fn differences_within(&self, test: &RangeTest) -> Option<Option<(u64, u64)>> {
        let bits = self.value_bytes as u32 * 8;
        // The reference was read zero-extended (`read_int(.., false)`).
        let reference = match bits {
            128 => self.reference,
            _ if test.signed => (self.reference << (128 - bits)) >> (128 - bits),
            _ => self.reference,
        };
        let (type_min, type_max) = match (bits, test.signed) {
            (128, _) => (i128::MIN, i128::MAX),
            (_, true) => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
            (_, false) => (0, (1i128 << bits) - 1),
        };
        let largest = largest_of_width(self.bit_width);
        let top = reference.checked_add(largest as i128)?;
        if reference < type_min || top > type_max {
            return None;
        }
        let (low, high) = (test.low.max(reference), test.high.min(top));
        Some((low <= high).then(|| ((low - reference) as u64, (high - reference) as u64)))
    }
}

/// Schedules rows of a bit-packed buffer.
#[derive(Debug, Clone)]
pub struct BitpackedScheduler {
    layout: Layout,
    buffer: BufferLocation,
    num_rows: u64,
}

impl BitpackedScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &BitpackedEncoding, page: &PageContext) -> Result<Self> {
        let layout = Layout::try_new(encoding)?;
        let expected =
            page.num_rows.div_ceil(BLOCK as u64).checked_mul(block_bytes(layout.bit_width)).ok_or_else(|| {
                crate::error::Error::corrupt(format!(
                    "bit-packed page of {} rows at {} bits: its size overflows",
                    page.num_rows, layout.bit_width
                ))
            })?;
        let buffer = page.buffer(encoding.buffer, Some(expected), "bit-packed values")?;
        Ok(Self { layout, buffer, num_rows: page.num_rows })
    }
}

impl PageScheduler for BitpackedScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let layout = self.layout.clone();
        let rows = SelectedRows::new(ranges);
        if layout.bit_width == 0 {
            return Box::pin(async move {
                Ok(Box::new(BitpackedDecoder { layout, rows, runs: vec![] }) as Box<dyn PageDecoder>)
            });
        }
        let block_len = block_bytes(layout.bit_width);
        let runs = blocks_for(ranges);
        let base = self.buffer.offset;
        let loaded = io.submit(runs.iter().map(|b| base + b.start * block_len..base + b.end * block_len).collect());
        Box::pin(async move {
            let parts = loaded.await?;
            ensure!(
                parts.len() == runs.len(),
                internal,
                "bit-packed values loaded {} of {} ranges",
                parts.len(),
                runs.len()
            );
            let runs = runs
                .into_iter()
                .zip(parts)
                .map(|(blocks, bytes)| (blocks, aligned(bytes, layout.lane_bytes)))
                .collect();
            Ok(Box::new(BitpackedDecoder { layout, rows, runs }) as Box<dyn PageDecoder>)
        })
    }
}

/// Loaded blocks of a bit-packed page.
struct BitpackedDecoder {
    layout: Layout,
    rows: SelectedRows,
    /// Runs of consecutive blocks (block numbers) with their packed bytes, sorted.
    runs: Vec<(Range<u64>, Buffer)>,
}

impl BitpackedDecoder {
    /// The packed blocks holding page rows `rows`, and the page row of their first value.
    fn packed_blocks(&self, rows: &Range<u64>) -> Result<(Buffer, u64)> {
        let first_block = rows.start / BLOCK as u64;
        let last_block = rows.end.div_ceil(BLOCK as u64);
        let run = self.runs.partition_point(|(blocks, _)| blocks.end <= first_block);
        let Some((blocks, packed)) = self.runs.get(run) else {
            bail!(internal, "rows of a bit-packed page were not loaded")
        };
        ensure!(
            blocks.start <= first_block && last_block <= blocks.end,
            internal,
            "rows span unloaded bit-packed blocks"
        );
        let block_len = block_bytes(self.layout.bit_width) as usize;
        let packed = packed.slice_with_length(
            (first_block - blocks.start) as usize * block_len,
            (last_block - first_block) as usize * block_len,
        );
        Ok((packed, first_block * BLOCK as u64))
    }

    /// Decoded values (lane width) of page rows `rows`, as lane values, and the position of the
    /// first row among them.
    fn lane_values(&self, layout: &Layout, rows: &Range<u64>) -> Result<(Buffer, usize)> {
        let (packed, first_row) = self.packed_blocks(rows)?;
        let values = unpack_blocks(&packed, layout.bit_width, layout.lane_bytes, layout.lane_reference())?;
        Ok((values, (rows.start - first_row) as usize))
    }

    /// Rows `rows_to_skip..rows_to_skip + num_rows` as values of `layout` (the page's, or its
    /// 16-byte values taken as 8-byte ones).
    fn decode_as(&self, layout: &Layout, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let w = layout.value_bytes;
        let pieces = self.rows.page_rows(rows_to_skip, num_rows)?;
        // Width 0 stores nothing per value: the rows asked for are all that bounds the output.
        let mut out =
            limits::try_buffer(limits::block_bytes(num_rows, w as u64, "bit-packed values")?, "bit-packed values")?;
        if layout.bit_width == 0 {
            layout.repeat_reference(num_rows, &mut out);
        } else if let ([piece], true) = (pieces.as_slice(), layout.value_bytes == layout.lane_bytes) {
            // One run of rows at the lane width: the unpacked blocks are the values.
            let (values, skip) = self.lane_values(layout, piece)?;
            let data = values.slice_with_length(skip * w, (piece.end - piece.start) as usize * w);
            return Ok(DataBlock::FixedWidth(FixedWidthBlock {
                data,
                bits_per_value: w as u64 * 8,
                num_values: num_rows,
            }));
        } else {
            let mut alone = MutableBuffer::new(0);
            for (span, members) in shared_block_spans(&pieces) {
                let members = &pieces[members];
                if unpack_alone(members.iter().map(|p| p.end - p.start).sum(), &span) {
                    // Scattered rows (a take): each value unpacked alone rather than its block.
                    let (packed, first_row) = self.packed_blocks(&span)?;
                    let positions = members.iter().flat_map(|p| p.clone()).map(|row| row - first_row);
                    let (width, lanes) = (layout.bit_width, layout.lane_bytes);
                    if layout.value_bytes == layout.lane_bytes {
                        unpack_selected(&packed, width, lanes, layout.lane_reference(), positions, &mut out)?;
                    } else {
                        alone.clear();
                        unpack_selected(&packed, width, lanes, 0, positions, &mut alone)?;
                        layout.widening().extend_lanes(&alone, lanes, &mut out)?;
                    }
                    continue;
                }
                if layout.value_bytes != layout.lane_bytes {
                    // Values wider than their lanes: unpacked and widened block by block.
                    let (packed, first_row) = self.packed_blocks(&span)?;
                    let rows = members.iter().map(|p| (p.start - first_row) as usize..(p.end - first_row) as usize);
                    let (width, lanes) = (layout.bit_width, layout.lane_bytes);
                    unpack_widened(&packed, width, lanes, layout.widening(), rows, &mut out)?;
                    continue;
                }
                let (values, skip) = self.lane_values(layout, &span)?;
                for piece in members {
                    let at = skip + (piece.start - span.start) as usize;
                    let len = (piece.end - piece.start) as usize;
                    out.extend_from_slice(&values.as_slice()[at * w..(at + len) * w]);
                }
            }
        }
        ensure!(out.len() == num_rows as usize * w, internal, "bit-packed page decoded the wrong number of values");
        Ok(DataBlock::FixedWidth(FixedWidthBlock {
            data: out.into(),
            bits_per_value: w as u64 * 8,
            num_values: num_rows,
        }))
    }
}

impl BitpackedDecoder {
    /// The rows of `rows_to_skip..rows_to_skip + num_rows` where `selected` is set, as values
    /// of `layout`. Values wider than their lanes (decimal128) are unpacked as differences and
    /// widened, the selected ones alone.
    fn decode_selected_as(
        &self,
        layout: &Layout,
        rows_to_skip: u64,
        num_rows: u64,
        selected: &BooleanBuffer,
    ) -> Result<Option<DataBlock>> {
        // The writer's lanes are the values' width up to 8 bytes, and 8 bytes or fewer for 16-byte
        // values (8-byte ones here when asked for at 64 bits).
        let widened = layout.value_bytes != layout.lane_bytes;
        ensure!(
            selected.len() as u64 == num_rows,
            internal,
            "{} selection bits for {num_rows} bit-packed rows",
            selected.len()
        );
        let w = layout.value_bytes;
        let count = selected.count_set_bits() as u64;
        let mut out =
            limits::try_buffer(limits::block_bytes(count, w as u64, "bit-packed values")?, "bit-packed values")?;
        if layout.bit_width == 0 {
            layout.repeat_reference(count, &mut out);
        } else {
            // Widened values are unpacked as their 64-bit differences first (`lane_reference` is
            // then 0), sized by the selection like `out`.
            let mut differences = MutableBuffer::new(0);
            let mut at = 0usize;
            for piece in self.rows.page_rows(rows_to_skip, num_rows)? {
                let len = (piece.end - piece.start) as usize;
                let (packed, first_row) = self.packed_blocks(&piece)?;
                let rows = (piece.start - first_row) as usize..(piece.end - first_row) as usize;
                let bits = selected.slice(at, len);
                let (width, lanes, reference) = (layout.bit_width, layout.lane_bytes, layout.lane_reference());
                let into = if widened { &mut differences } else { &mut out };
                unpack_filtered(&packed, width, lanes, reference, rows, &bits, into)?;
                at += len;
            }
            if widened {
                layout.widening().extend_lanes(&differences, layout.lane_bytes, &mut out)?;
            }
        }
        ensure!(out.len() as u64 == count * w as u64, internal, "bit-packed page decoded the wrong number of values");
        Ok(Some(DataBlock::FixedWidth(FixedWidthBlock {
            data: out.into(),
            bits_per_value: w as u64 * 8,
            num_values: count,
        })))
    }
}

impl PageDecoder for BitpackedDecoder {
    fn num_rows(&self) -> u64 {
        self.rows.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        self.decode_as(&self.layout, rows_to_skip, num_rows)
    }

    fn decode_64(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        match self.layout.as_64() {
            Some(layout) => self.decode_as(&layout, rows_to_skip, num_rows),
            None => self.decode(rows_to_skip, num_rows)?.narrowed_to_64(),
        }
    }

    fn decode_selected(&self, rows_to_skip: u64, num_rows: u64, selected: &BooleanBuffer) -> Result<Option<DataBlock>> {
        self.decode_selected_as(&self.layout, rows_to_skip, num_rows, selected)
    }

    fn decode_selected_64(
        &self,
        rows_to_skip: u64,
        num_rows: u64,
        selected: &BooleanBuffer,
    ) -> Result<Option<DataBlock>> {
        match self.layout.as_64() {
            Some(layout) => self.decode_selected_as(&layout, rows_to_skip, num_rows, selected),
            None => self.decode_selected(rows_to_skip, num_rows, selected)?.map(DataBlock::narrowed_to_64).transpose(),
        }
    }

    fn test_range(&self, rows_to_skip: u64, num_rows: u64, test: &RangeTest) -> Result<Option<BooleanArray>> {
        let Some(differences) = self.layout.differences_within(test) else { return Ok(None) };
        let mut bits = BooleanBufferBuilder::new(num_rows as usize);
        match differences {
            None => bits.append_n(num_rows as usize, false),
            // Every value is the reference, which the range holds.
            Some(_) if self.layout.bit_width == 0 => bits.append_n(num_rows as usize, true),
            Some(range) => {
                for piece in self.rows.page_rows(rows_to_skip, num_rows)? {
                    let (packed, first_row) = self.packed_blocks(&piece)?;
                    let rows = (piece.start - first_row) as usize..(piece.end - first_row) as usize;
                    test_packed(&packed, self.layout.bit_width, self.layout.lane_bytes, rows, range, &mut bits)?;
                }
            }
        }
        ensure!(bits.len() == num_rows as usize, internal, "bit-packed page tested the wrong number of rows");
        Ok(Some(BooleanArray::new(bits.finish(), None)))
    }
}

/// Encodes `values` (integers of `block.bits_per_value / 8` bytes) as bit-packed differences
/// from `min`, where every value lies in `min..=max`.
///
/// # Errors
/// [`Error::Internal`] if the range does not fit the lanes.
pub fn encode(
    block: &FixedWidthBlock,
    signed: bool,
    min: i128,
    max: i128,
    buffers: &mut Vec<Buffer>,
) -> Result<BitpackedEncoding> {
    let value_bytes = (block.bits_per_value / 8) as usize;
    let range = max.wrapping_sub(min) as u128;
    let bit_width = super::integers::bits_needed(range);
    // Values up to 8 bytes are packed in lanes of their width (a run of rows decodes with no
    // widening pass); 16-byte ones in the narrowest lanes holding the width.
    let lane_bytes = match value_bytes {
        16 => (bit_width.max(8) as usize).next_power_of_two().min(64) / 8,
        bytes => bytes.min(8),
    };
    if bit_width as usize > lane_bytes * 8 {
        return Err(Error::internal(format!("a range of {bit_width} bits does not fit {lane_bytes}-byte lanes")));
    }
    let deltas: Vec<u64> =
        block.data.as_slice().chunks_exact(value_bytes).map(|v| read_int(v, signed).wrapping_sub(min) as u64).collect();
    let buffer = if bit_width == 0 {
        Buffer::from_vec(Vec::<u8>::new())
    } else {
        super::integers::pack(&deltas, bit_width, lane_bytes)?
    };
    buffers.push(buffer);
    let mut reference = vec![0u8; value_bytes];
    write_int(min, &mut reference);
    Ok(BitpackedEncoding {
        value_bytes: value_bytes as u32,
        lane_bits: lane_bytes as u32 * 8,
        bit_width,
        reference,
        buffer: (buffers.len() - 1) as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(value_bytes: usize, lane_bytes: usize, bit_width: u32, reference: i128) -> Layout {
        Layout { value_bytes, lane_bytes, bit_width, reference }
    }

    fn test(low: i128, high: i128, signed: bool) -> RangeTest {
        RangeTest { low, high, signed }
    }

    fn values_of(block: DataBlock, bytes: usize) -> Vec<i128> {
        let DataBlock::FixedWidth(block) = block else { panic!("not fixed-width values") };
        assert_eq!(block.bits_per_value as usize, bytes * 8);
        block.data.as_slice().chunks_exact(bytes).map(|v| read_int(v, true)).collect()
    }

    /// 16-byte values decode the same from lanes of every width that holds them (the writer's
    /// narrowest lanes and the 64-bit lanes of files before format 2.5): rows decoded as a run,
    /// scattered (a take), selected, at 64 bits, and range-tested.
    #[test]
    fn sixteen_byte_values_decode_alike_from_every_lane_width() {
        let mut state = 5u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 11
        };
        let n = 3000u64;
        for width in [1u32, 4, 8, 9, 16, 17, 32, 33, 64] {
            let largest = largest_of_width(width);
            let differences: Vec<u64> = (0..n).map(|_| next() & largest).collect();
            for reference in [-12_345i128, 1 << 100] {
                let want: Vec<i128> = differences.iter().map(|d| reference.wrapping_add(*d as i128)).collect();
                let selected = BooleanBuffer::from_iter((0..n).map(|i| i % 1024 < 3 || next() % 5 == 0));
                let scattered: Vec<Range<u64>> = [3, 700, 1500, 2999].iter().map(|r| *r..*r + 1).collect();
                for lane_bytes in [1usize, 2, 4, 8].into_iter().filter(|l| width as usize <= l * 8) {
                    let layout = layout(16, lane_bytes, width, reference);
                    let packed = crate::encodings::physical::integers::pack(&differences, width, lane_bytes).unwrap();
                    let runs = vec![(0..n.div_ceil(BLOCK as u64), packed)];
                    let all = BitpackedDecoder { layout: layout.clone(), rows: SelectedRows::new(&[0..n]), runs };
                    let what = format!("width {width}, lanes of {lane_bytes}, reference {reference}");
                    assert_eq!(values_of(all.decode(0, n).unwrap(), 16), want, "{what}");
                    assert_eq!(values_of(all.decode(1000, 1100).unwrap(), 16), want[1000..2100], "{what}");
                    let picked: Vec<i128> = (0..n as usize).filter(|i| selected.value(*i)).map(|i| want[i]).collect();
                    let got = all.decode_selected(0, n, &selected).unwrap().unwrap();
                    assert_eq!(values_of(got, 16), picked, "selected: {what}");
                    if reference.checked_add(largest as i128).is_some_and(|top| i64::try_from(top).is_ok()) {
                        let narrow: Vec<i128> = want.iter().map(|v| *v as i64 as i128).collect();
                        assert_eq!(values_of(all.decode_64(0, n).unwrap(), 8), narrow, "64-bit: {what}");
                        let got = all.decode_selected_64(0, n, &selected).unwrap().unwrap();
                        let picked: Vec<i128> = picked.iter().map(|v| *v as i64 as i128).collect();
                        assert_eq!(values_of(got, 8), picked, "64-bit selected: {what}");
                    }
                    let (low, high) = (reference + (largest / 3) as i128, reference + (largest / 2) as i128);
                    let tested = all.test_range(0, n, &test(low, high, true)).unwrap().unwrap();
                    let passing: Vec<bool> = want.iter().map(|v| (low..=high).contains(v)).collect();
                    assert_eq!(tested.values().iter().collect::<Vec<_>>(), passing, "range test: {what}");
                    let runs = all.runs.clone();
                    let take = BitpackedDecoder { layout, rows: SelectedRows::new(&scattered), runs };
                    let taken: Vec<i128> = scattered.iter().map(|r| want[r.start as usize]).collect();
                    assert_eq!(values_of(take.decode(0, 4).unwrap(), 16), taken, "take: {what}");
                }
            }
        }
    }

    #[test]
    fn ranges_become_differences_from_the_reference() {
        // i8 values -100..=27 (reference 0x9c, read zero-extended as 156).
        let page = layout(1, 1, 7, 156);
        assert_eq!(page.differences_within(&test(-100, 27, true)), Some(Some((0, 127))));
        assert_eq!(page.differences_within(&test(-5, 5, true)), Some(Some((95, 105))));
        assert_eq!(page.differences_within(&test(28, 100, true)), Some(None));
        assert_eq!(page.differences_within(&test(i128::MIN, -101, true)), Some(None));
        // The same bytes as u8: 156 + 127 leaves the type, so the values are not the sums.
        assert_eq!(page.differences_within(&test(0, 10, false)), None);
        // u8 values 192..=255.
        let page = layout(1, 1, 6, 192);
        assert_eq!(page.differences_within(&test(250, 1000, false)), Some(Some((58, 63))));
        // Read as i8, the same page holds -64..=-1.
        assert_eq!(page.differences_within(&test(0, 10, true)), Some(None));
        assert_eq!(page.differences_within(&test(-2, 10, true)), Some(Some((62, 63))));
        // u8 values 200..=263 do not fit a byte.
        assert_eq!(layout(1, 1, 6, 200).differences_within(&test(0, 255, false)), None);
        // Decimals of 16 bytes in 64-bit lanes, at i128's limits.
        let page = layout(16, 8, 64, i128::MAX - (u64::MAX as i128));
        assert_eq!(page.differences_within(&test(i128::MAX, i128::MAX, true)), Some(Some((u64::MAX, u64::MAX))));
        assert_eq!(layout(16, 8, 64, i128::MAX - 5).differences_within(&test(0, 1, true)), None);
        let page = layout(16, 8, 4, -3);
        assert_eq!(page.differences_within(&test(-1, 1, true)), Some(Some((2, 4))));
        // Width 0: every value is the reference.
        let page = layout(4, 4, 0, 17);
        assert_eq!(page.differences_within(&test(17, 17, true)), Some(Some((0, 0))));
        assert_eq!(page.differences_within(&test(18, 20, true)), Some(None));
    }
}
