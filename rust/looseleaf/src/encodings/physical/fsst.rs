//! FSST: strings compressed with a static table of up to 255 symbols (1 to 8 bytes each) learnt
//! from a sample of the page; each value becomes a string of codes (one byte per symbol, or the
//! escape code 255 followed by a literal byte), stored as a binary child. Any single value can
//! be decompressed alone, so random access costs a [`super::binary`] read plus the table.
//!
//! ```text
//! symbols buffer: [n] [len_0 .. len_n-1] [symbol_0 (8 bytes) .. symbol_n-1]
//! codes: binary values, one per row
//! ```
//!
//! Compression and decompression use the `fsst-rs` crate; the symbol table is checked before
//! use and every code string before it is decompressed.
//!
//! Pages may also store each value's decompressed length (an integer child, written since
//! 2026-11-27): a scan then decompresses a batch's codes in one call, the output offsets being
//! a prefix sum of the lengths. Without them, or for a few scattered rows (a take, which then
//! does not read them), values are decompressed one by one, each one's end found by
//! decompressing it.

use std::ops::Range;

use arrow_buffer::{BooleanBuffer, Buffer, MutableBuffer};
use bytes::Bytes;
use fsst::{Compressor, Decompressor, Symbol};

use super::PageContext;
use super::coded_strings::{CodedStrings, LoadedCodes};
use crate::encodings::{DataBlock, FixedWidthBlock, PageDecoder, PageLoad, PageScheduler, VariableWidthBlock};
use crate::error::{Result, bail, ensure};
use crate::format::proto::FsstEncoding;
use crate::io::PageIo;

const ESCAPE: u8 = 255;
/// Values of fewer codes are decompressed inline: a call of `fsst-rs`'s decompressor costs
/// more than a few codes (nested lists of words: -12% CPU), while on long values with many
/// escapes (embeddings captions of ~50 codes) its branch-free handling of escapes wins.
const SHORT_VALUE: usize = 32;
/// The length of codes without a symbol in [`SymbolTable::code_lengths`] (symbols have 1 to 8).
const NO_SYMBOL: u8 = u8::MAX;

/// Schedules the symbol table and the codes of some rows.
#[derive(Debug)]
pub struct FsstScheduler {
    coded: CodedStrings,
}

impl FsstScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &FsstEncoding, page: &PageContext) -> Result<Self> {
        let Some(codes) = encoding.codes.as_deref() else { bail!(corrupt, "FSST encoding without codes") };
        let symbols = page.buffer(encoding.symbols_buffer, None, "FSST symbol table")?;
        ensure!(symbols.size <= 1 + 255 * 9, corrupt, "FSST symbol table of {} bytes", symbols.size);
        Ok(Self { coded: CodedStrings::try_new(symbols, codes, encoding.decoded_lengths.as_deref(), page)? })
    }
}

impl PageScheduler for FsstScheduler {
    fn num_rows(&self) -> u64 {
        self.coded.num_rows()
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let loaded = self.coded.schedule(ranges, io);
        Box::pin(async move {
            let LoadedCodes { table, codes, decoded_lengths } = loaded.await?;
            let table = SymbolTable::parse(&table)?;
            Ok(Box::new(FsstDecoder { table, codes, decoded_lengths }) as Box<dyn PageDecoder>)
        })
    }
}

/// A checked symbol table.
struct SymbolTable {
    symbols: [Symbol; 255],
    lengths: [u8; 255],
    /// Number of symbols: codes from here to 254 are invalid.
    count: usize,
    /// The bytes each code decodes to: the symbol's length, [`NO_SYMBOL`] for codes without
    /// a symbol, 1 for the escape code (whose literal callers count apart).
    code_lengths: [u8; 256],
}

impl SymbolTable {
    fn parse(bytes: &Bytes) -> Result<Self> {
        let Some(&count) = bytes.first() else { bail!(corrupt, "empty FSST symbol table") };
        let count = count as usize;
        ensure!(
            count <= 255 && bytes.len() == 1 + count * 9,
            corrupt,
            "FSST symbol table of {} bytes for {count} symbols",
            bytes.len()
        );
        let mut lengths = [1u8; 255];
        let mut symbols = [Symbol::from_u8(0); 255];
        for i in 0..count {
            let length = bytes[1 + i];
            ensure!((1..=8).contains(&length), corrupt, "FSST symbol of {length} bytes");
            lengths[i] = length;
            let at = 1 + count + i * 8;
            let mut symbol = [0u8; 8];
            symbol.copy_from_slice(&bytes[at..at + 8]);
            symbols[i] = Symbol::from_slice(&symbol);
        }
        let mut code_lengths = [NO_SYMBOL; 256];
        code_lengths[..count].copy_from_slice(&lengths[..count]);
        code_lengths[ESCAPE as usize] = 1;
        Ok(Self { symbols, lengths, count, code_lengths })
    }
}

impl SymbolTable {
    /// Where each value of `codes[offsets[0]..]` starts in the decompressed data, and where the
    /// last ends; checks every code and that no value ends inside an escape (the escape code
    /// then a literal byte), which makes decompressing all values in one call safe.
    ///
    /// Branch-free over the codes (a branch per value, where its codes end, would cost more
    /// than the work): each code's length from a table, the rare escapes patched in one pass
    /// over the whole run (the literal after an escape counts 0, a length no code has), the
    /// lengths then summed per value.
    fn decoded_offsets(&self, offsets: &[u64], data: &[u8]) -> Result<Vec<u64>> {
        let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
            bail!(corrupt, "FSST codes without offsets")
        };
        let codes = &data[first as usize..last as usize];
        let mut lengths: Vec<u8> = codes.iter().map(|code| self.code_lengths[*code as usize]).collect();
        let mut at = 0;
        while let Some(found) = memchr::memchr(ESCAPE, &codes[at..]) {
            let escape = at + found;
            ensure!(escape + 1 < codes.len(), corrupt, "FSST codes end with an escape");
            lengths[escape + 1] = 0;
            at = escape + 2;
        }
        ensure!(
            memchr::memchr(NO_SYMBOL, &lengths).is_none(),
            corrupt,
            "an FSST code has no symbol in the page's {} symbols",
            self.count
        );
        // Each value's decoded length, summed over its codes (no prefix sum over every code:
        // that would write eight bytes per code byte). Parsing the run as one string agrees
        // with parsing each value alone as long as no value starts on a literal: a value
        // starting there would mean the one before ends with an escape.
        let mut out = Vec::with_capacity(offsets.len());
        let mut total = 0u64;
        out.push(0);
        for pair in offsets.windows(2) {
            let backwards = || crate::Error::corrupt("FSST offsets go backwards");
            let start = pair[0].checked_sub(first).ok_or_else(backwards)? as usize;
            let end = pair[1].checked_sub(first).ok_or_else(backwards)? as usize;
            let value = lengths.get(start..end).ok_or_else(backwards)?;
            ensure!(lengths.get(start) != Some(&0), corrupt, "an FSST value ends with an escape");
            // Summed in u32 (twice the lanes of u64) over chunks too short to overflow.
            total += value.chunks(1 << 24).map(|c| c.iter().map(|l| *l as u32).sum::<u32>() as u64).sum::<u64>();
            out.push(total);
        }
        Ok(out)
    }
}

impl SymbolTable {
    /// The values of `codes[offsets[0]..]` decompressed, and where each starts and the last
    /// ends in the output; `Err` on codes without a symbol or a value ending inside an escape.
    fn decompress(&self, offsets: &[u64], data: &[u8]) -> Result<(Vec<u8>, Vec<u64>)> {
        let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
            bail!(corrupt, "FSST codes without offsets")
        };
        let codes = &data[first as usize..last as usize];
        let decompressor = Decompressor::new(&self.symbols, &self.lengths);
        // Each code yields at most 8 bytes; 8 more leave room for the decompressor's wide writes.
        let mut out: Vec<u8> = Vec::with_capacity(codes.len() * 8 + 8);
        if self.count < 255 {
            // Codes without a symbol can occur: every code is checked, then all values are
            // decompressed in one call.
            let ends = self.decoded_offsets(offsets, data)?;
            let total = ends.last().copied().unwrap_or(0);
            let written = decompressor.decompress_into(codes, out.spare_capacity_mut());
            ensure!(written as u64 == total, corrupt, "FSST codes decompress to {written} bytes, not {total}");
            // SAFETY: `decompress_into` initialised `written` bytes of the spare capacity.
            unsafe { out.set_len(written) };
            return Ok((out, ends));
        }
        // A full table: every code but the escape has a symbol, so a value decompressed alone
        // only needs to not end inside an escape, and the output offsets come from the
        // decompressor (no pass over the codes to count their lengths). A value's codes end
        // inside an escape exactly when they end with an odd run of escape bytes: the byte
        // before the run (or its start) leaves the parse expecting a code, and the run then
        // pairs up as escape and escaped 255.
        let mut ends = Vec::with_capacity(offsets.len());
        ends.push(0u64);
        let spare = out.spare_capacity_mut();
        let mut written = 0usize;
        for pair in offsets.windows(2) {
            let backwards = || crate::Error::corrupt("FSST offsets go backwards");
            let start = pair[0].checked_sub(first).ok_or_else(backwards)? as usize;
            let end = pair[1].checked_sub(first).ok_or_else(backwards)? as usize;
            let value = codes.get(start..end).ok_or_else(backwards)?;
            if value.last() == Some(&ESCAPE) {
                let run = value.iter().rev().take_while(|code| **code == ESCAPE).count();
                ensure!(run % 2 == 0, corrupt, "an FSST value ends with an escape");
            }
            // Values are at most their codes times 8 bytes, so the spare room never runs out:
            // `written <= 8 * start` and the capacity is `8 * codes.len() + 8`.
            written += if value.len() < SHORT_VALUE {
                // SAFETY: as above, at least `8 * value.len()` bytes are spare from `written`,
                // and the value's codes do not end inside an escape (checked above).
                unsafe { self.decompress_short(value, spare.as_mut_ptr().add(written).cast::<u8>()) }
            } else {
                decompressor.decompress_into(value, &mut spare[written..])
            };
            ends.push(written as u64);
        }
        // SAFETY: the calls above initialised the first `written` bytes of the spare capacity.
        unsafe { out.set_len(written) };
        Ok((out, ends))
    }

    /// The values of `codes` (whole values' codes, back to back) decompressed in one call,
    /// with offsets from `lengths`, each value's decompressed length (32- or 64-bit integers).
    ///
    /// A corrupt page is caught where it would matter to memory or to the values' count: the
    /// codes must decompress to exactly the lengths' sum, and the run must not end inside an
    /// escape. A value ending inside an escape, or a code without a symbol, elsewhere in the
    /// run shifts bytes between values (which callers then check as strings, like any bytes);
    /// the output buffer holds 8 bytes per code whatever the lengths claim.
    fn decompress_with_lengths(&self, codes: &[u8], lengths: &FixedWidthBlock) -> Result<DataBlock> {
        let (offsets, bits_per_offset, total) = super::offsets_from_lengths(lengths, "FSST")?;
        // Most bytes codes can decompress to: 8 per code (then 8 for the decompressor's wide
        // writes), the bound that keeps it in the buffer.
        ensure!(
            total <= codes.len() as u64 * 8,
            corrupt,
            "FSST decoded lengths sum to {total} bytes, more than {} codes can hold",
            codes.len()
        );
        if codes.last() == Some(&ESCAPE) {
            let run = codes.iter().rev().take_while(|code| **code == ESCAPE).count();
            ensure!(run % 2 == 0, corrupt, "an FSST value ends with an escape");
        }
        let mut out: Vec<u8> = Vec::with_capacity(codes.len() * 8 + 8);
        let decompressor = Decompressor::new(&self.symbols, &self.lengths);
        let written = decompressor.decompress_into(codes, out.spare_capacity_mut());
        ensure!(written as u64 == total, corrupt, "FSST codes decompress to {written} bytes, not {total}");
        // SAFETY: `decompress_into` initialised `written` bytes of the spare capacity.
        unsafe { out.set_len(written) };
        Ok(DataBlock::VariableWidth(VariableWidthBlock {
            offsets,
            bits_per_offset,
            data: Buffer::from_vec(out),
            num_values: lengths.num_values,
        }))
    }

    /// Decompresses the codes of one value to `out`; returns the number of bytes written.
    ///
    /// Eight codes at a time while none of them is the escape (one test for the eight, then
    /// eight table lookups and 8-byte stores), one at a time otherwise.
    ///
    /// # Safety
    /// `out` must be valid for `8 * value.len()` bytes of writes, and `value` must not end
    /// inside an escape.
    unsafe fn decompress_short(&self, value: &[u8], out: *mut u8) -> usize {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        let (mut at, mut written) = (0, 0);
        // SAFETY (for each write below): `written <= 8 * at` (no code yields more than 8
        // bytes, an escape and its literal yield 1), so an 8-byte store at `written` for the
        // code at `at` stays within the `8 * value.len()` bytes of `out`.
        let store = |code: u8, written: &mut usize| unsafe {
            out.add(*written).cast::<u64>().write_unaligned(self.symbols[code as usize].to_u64());
            *written += self.lengths[code as usize] as usize;
        };
        while at < value.len() {
            if let Some(eight) = value.get(at..at + 8) {
                let block = u64::from_le_bytes(eight.try_into().unwrap_or_default());
                // No byte of `block` is 255 exactly when no byte of `!block` is zero.
                let inverted = !block;
                if inverted.wrapping_sub(ONES) & !inverted & HIGHS == 0 {
                    for code in eight {
                        store(*code, &mut written);
                    }
                    at += 8;
                    continue;
                }
            }
            let code = value[at];
            if code == ESCAPE {
                // The caller's promise: the literal follows.
                let literal = value[at + 1];
                // SAFETY: as above.
                unsafe { out.add(written).write(literal) };
                written += 1;
                at += 2;
            } else {
                store(code, &mut written);
                at += 1;
            }
        }
        written
    }
}

struct FsstDecoder {
    table: SymbolTable,
    codes: Box<dyn PageDecoder>,
    /// Each value's decompressed length, over the same rows as `codes`, if read.
    decoded_lengths: Option<Box<dyn PageDecoder>>,
}

impl PageDecoder for FsstDecoder {
    fn num_rows(&self) -> u64 {
        self.codes.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let (offsets, data, span) = super::checked_codes(self.codes.decode(rows_to_skip, num_rows)?, "FSST")?;
        let data = data.as_slice();
        if let Some(lengths) = &self.decoded_lengths {
            let DataBlock::FixedWidth(lengths) = lengths.decode(rows_to_skip, num_rows)? else {
                bail!(corrupt, "FSST decoded lengths are not integers")
            };
            ensure!(lengths.num_values == num_rows, corrupt, "FSST decoded lengths of the wrong length");
            let codes = &data[span.start as usize..span.end as usize];
            return self.table.decompress_with_lengths(codes, &lengths);
        }
        let (out, out_offsets) = self.table.decompress(&offsets, data)?;
        let total = out_offsets.last().copied().unwrap_or(0);
        let (offsets, bits_per_offset) = if total <= i32::MAX as u64 {
            (Buffer::from_vec(out_offsets.iter().map(|o| *o as u32).collect::<Vec<u32>>()), 32)
        } else {
            (Buffer::from_vec(out_offsets), 64)
        };
        Ok(DataBlock::VariableWidth(VariableWidthBlock {
            offsets,
            bits_per_offset,
            data: Buffer::from_vec(out),
            num_values: num_rows,
        }))
    }

    /// With the decoded lengths read (a scan), the selected values' codes are gathered and
    /// decompressed in one call, as [`decode`](PageDecoder::decode) does all of them; without
    /// them (a take), `None`.
    fn decode_selected(&self, rows_to_skip: u64, num_rows: u64, selected: &BooleanBuffer) -> Result<Option<DataBlock>> {
        let Some(lengths) = &self.decoded_lengths else { return Ok(None) };
        ensure!(selected.len() as u64 == num_rows, internal, "a selection of other than the FSST rows decoded");
        let (offsets, data, span) = super::checked_codes(self.codes.decode(rows_to_skip, num_rows)?, "FSST")?;
        ensure!(offsets.len() as u64 == num_rows + 1, corrupt, "FSST codes of the wrong length");
        let mut codes = Vec::with_capacity((span.end - span.start) as usize);
        for row in selected.set_indices() {
            codes.extend_from_slice(&data.as_slice()[offsets[row] as usize..offsets[row + 1] as usize]);
        }
        let lengths = match lengths.decode_selected(rows_to_skip, num_rows, selected)? {
            Some(lengths) => lengths,
            None => super::selected_lengths(lengths.decode(rows_to_skip, num_rows)?, selected, "FSST")?,
        };
        let DataBlock::FixedWidth(lengths) = lengths else { bail!(corrupt, "FSST decoded lengths are not integers") };
        ensure!(
            lengths.num_values as usize == selected.count_set_bits(),
            corrupt,
            "FSST decoded lengths of the wrong length"
        );
        self.table.decompress_with_lengths(&codes, &lengths).map(Some)
    }
}

/// Positions of up to 32 KiB of values spread over a page of `total` bytes in `count` values,
/// the sample a table is trained on; `None` for pages too small to compress.
fn training_sample(count: usize, total: usize) -> Option<Vec<usize>> {
    if total < 1024 {
        return None;
    }
    let step = (total / (32 * 1024)).max(1);
    Some((0..count).step_by(step).collect())
}

/// A symbol table trained on a sample of one page's values: what [`Trained::estimated_size`]
/// judges and [`Trained::compress`] uses, so that a page weighed against a dictionary is
/// trained once (training is most of the cost of FSST on a write).
pub struct Trained {
    compressor: Compressor,
    sample: Vec<usize>,
    total: usize,
}

/// Trains a symbol table on a sample of `strings`; `None` for pages too small to compress.
pub fn train(strings: &[&[u8]]) -> Option<Trained> {
    let total: usize = strings.iter().map(|s| s.len()).sum();
    let sample = training_sample(strings.len(), total)?;
    let compressor = Compressor::train(&sample.iter().map(|i| strings[*i]).collect());
    Some(Trained { compressor, sample, total })
}

impl Trained {
    /// The estimated size of the page's `strings` (those it was trained on) compressed, codes
    /// and table without offsets: the table's compression ratio on the sample applied to all
    /// the bytes.
    pub fn estimated_size(&self, strings: &[&[u8]]) -> u64 {
        let sample_bytes: usize = self.sample.iter().filter_map(|i| strings.get(*i)).map(|s| s.len()).sum();
        let codes = self.sample_code_bytes(strings);
        let table = 1 + self.compressor.n_symbols() * 9;
        (codes as f64 / sample_bytes.max(1) as f64 * self.total as f64) as u64 + table as u64
    }

    /// The positions of the values the table was trained on.
    pub fn sample(&self) -> &[usize] {
        &self.sample
    }

    /// The bytes of the codes of the sampled values of `strings` (those it was trained on).
    pub fn sample_code_bytes(&self, strings: &[&[u8]]) -> u64 {
        let codes = self.sample.iter().filter_map(|i| strings.get(*i));
        codes.map(|string| self.compressor.compress(string).len() as u64).sum()
    }

    /// Compresses all of `strings` (the values it was trained on); returns the serialised table
    /// and the codes, or `None` if compression does not pay.
    pub fn compress(&self, strings: &[&[u8]]) -> Option<(Buffer, VariableWidthBlock)> {
        let compressor = &self.compressor;
        // A value compresses to at most two bytes per byte (every byte escaped).
        let mut codes: Vec<u8> = Vec::with_capacity(2 * self.total + 8);
        let mut code_offsets = Vec::with_capacity(strings.len() + 1);
        code_offsets.push(0u64);
        for string in strings {
            let at = codes.len();
            // SAFETY: the spare capacity holds at least twice the bytes of the values not yet
            // compressed, this one's included, which is the most it compresses to.
            let written =
                unsafe { compressor.compress_into(string, &mut codes.spare_capacity_mut()[..2 * string.len()]) };
            // SAFETY: `compress_into` initialised `written` bytes after `at`.
            unsafe { codes.set_len(at + written) };
            code_offsets.push(codes.len() as u64);
        }
        let table_bytes = 1 + compressor.n_symbols() * 9;
        if codes.len() + table_bytes + strings.len() >= self.total {
            return None;
        }
        let n = compressor.n_symbols();
        let mut table = MutableBuffer::with_capacity(table_bytes);
        table.push(n as u8);
        table.extend_from_slice(&compressor.symbol_lengths()[..n]);
        for symbol in &compressor.symbol_table()[..n] {
            table.extend_from_slice(&symbol.to_u64().to_le_bytes());
        }
        Some((table.into(), VariableWidthBlock::from_offsets(code_offsets, Buffer::from_vec(codes))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A table of `count` symbols of 1 to 8 distinct bytes each.
    fn table(count: usize) -> SymbolTable {
        let mut bytes = vec![count as u8];
        bytes.extend((0..count).map(|i| (i % 8 + 1) as u8));
        for i in 0..count {
            bytes.extend((0..8u8).map(|b| (i as u8).wrapping_mul(7).wrapping_add(b)));
        }
        SymbolTable::parse(&Bytes::from(bytes)).unwrap()
    }

    /// Random codes for `n` values (escapes included, none left dangling) and their offsets.
    fn random_codes(rng: &mut rand::rngs::StdRng, n: usize, count: u8, escapes: f64) -> (Vec<u64>, Vec<u8>) {
        let (mut offsets, mut codes) = (vec![0u64], Vec::new());
        for _ in 0..n {
            for _ in 0..rng.random_range(0..60) {
                if rng.random_bool(escapes) {
                    codes.extend([ESCAPE, rng.random()]);
                } else {
                    codes.push(rng.random_range(0..count));
                }
            }
            offsets.push(codes.len() as u64);
        }
        (offsets, codes)
    }

    #[test]
    fn values_decompressed_alone_equal_the_whole_run() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let full = table(255);
        for (n, escapes) in [(0, 0.1), (1, 0.1), (3, 0.5), (100, 0.02), (1000, 0.2)] {
            let (offsets, codes) = random_codes(&mut rng, n, 255, escapes);
            let (out, ends) = full.decompress(&offsets, &codes).unwrap();
            // The checked run decompressed in one call is the independent truth.
            let expected_ends = full.decoded_offsets(&offsets, &codes).unwrap();
            let mut expected: Vec<u8> = Vec::with_capacity(codes.len() * 8 + 8);
            let decompressor = Decompressor::new(&full.symbols, &full.lengths);
            let written = decompressor.decompress_into(&codes, expected.spare_capacity_mut());
            // SAFETY: `decompress_into` initialised `written` bytes of the spare capacity.
            unsafe { expected.set_len(written) };
            assert_eq!(ends, expected_ends);
            assert_eq!(out, expected);
            // The inline path on every value, whatever its length.
            for (pair, want) in offsets.windows(2).zip(expected_ends.windows(2)) {
                let value = &codes[pair[0] as usize..pair[1] as usize];
                let mut buffer: Vec<u8> = Vec::with_capacity(value.len() * 8);
                // SAFETY: room for 8 bytes per code; the codes come whole from `random_codes`.
                let written = unsafe { full.decompress_short(value, buffer.as_mut_ptr()) };
                // SAFETY: `decompress_short` initialised `written` bytes.
                unsafe { buffer.set_len(written) };
                assert_eq!(buffer, expected[want[0] as usize..want[1] as usize]);
            }
        }
    }

    /// `lengths` as a block of integers of `bits` bits.
    fn lengths_block(lengths: &[u64], bits: u64) -> FixedWidthBlock {
        let data = match bits {
            32 => Buffer::from_vec(lengths.iter().map(|l| *l as u32).collect::<Vec<u32>>()),
            _ => Buffer::from_vec(lengths.to_vec()),
        };
        FixedWidthBlock { data, bits_per_value: bits, num_values: lengths.len() as u64 }
    }

    #[test]
    fn values_decompressed_by_their_lengths_equal_values_decompressed_alone() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        for count in [255, 40] {
            let table = table(count);
            for (n, escapes) in [(0, 0.1), (1, 0.0), (7, 0.5), (1000, 0.02)] {
                let (offsets, codes) = random_codes(&mut rng, n, count as u8, escapes);
                let (expected, ends) = table.decompress(&offsets, &codes).unwrap();
                let lengths: Vec<u64> = ends.windows(2).map(|pair| pair[1] - pair[0]).collect();
                for bits in [32, 64] {
                    let DataBlock::VariableWidth(block) =
                        table.decompress_with_lengths(&codes, &lengths_block(&lengths, bits)).unwrap()
                    else {
                        panic!("not variable width")
                    };
                    assert_eq!(block.data.as_slice(), &expected[..]);
                    assert_eq!(block.offsets_u64().unwrap(), ends);
                }
            }
        }
    }

    #[test]
    fn lengths_that_disagree_with_the_codes_are_refused() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(10);
        let table = table(255);
        let (offsets, codes) = random_codes(&mut rng, 50, 255, 0.1);
        let (_, ends) = table.decompress(&offsets, &codes).unwrap();
        let lengths: Vec<u64> = ends.windows(2).map(|pair| pair[1] - pair[0]).collect();
        let mut short = lengths.clone();
        let nonempty = short.iter().position(|l| *l > 0).unwrap();
        short[nonempty] -= 1;
        let mut huge = lengths.clone();
        huge[0] = u64::MAX / 2;
        for (what, lengths, bits) in [("short", &short, 32), ("huge", &huge, 64)] {
            let error = table.decompress_with_lengths(&codes, &lengths_block(lengths, bits)).unwrap_err();
            assert!(matches!(error, crate::Error::Corrupt { .. }), "{what}: {error}");
        }
        let mut dangling = codes.clone();
        dangling.push(ESCAPE);
        let error = table.decompress_with_lengths(&dangling, &lengths_block(&lengths, 32)).unwrap_err();
        assert!(error.to_string().contains("escape"), "{error}");
    }

    #[test]
    fn corrupt_codes_are_refused() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        for table in [table(255), table(40)] {
            let (mut offsets, mut codes) = random_codes(&mut rng, 10, 40, 0.2);
            // A value ending with a lone escape (after a code, or after an escaped 255).
            for tail in [vec![3, ESCAPE], vec![ESCAPE, ESCAPE, ESCAPE]] {
                let (mut offsets, mut codes) = (offsets.clone(), codes.clone());
                codes.extend(&tail);
                offsets.push(codes.len() as u64);
                codes.push(1);
                offsets.push(codes.len() as u64);
                let error = table.decompress(&offsets, &codes).unwrap_err().to_string();
                assert!(error.contains("escape"), "{error}");
            }
            // A value ending with an escaped 255 is fine.
            codes.extend([ESCAPE, ESCAPE]);
            offsets.push(codes.len() as u64);
            let (out, _) = table.decompress(&offsets, &codes).unwrap();
            assert_eq!(out.last(), Some(&255));
        }
        // A code past the table's symbols.
        let error = table(40).decompress(&[0, 2], &[1, 41]).unwrap_err().to_string();
        assert!(error.contains("no symbol"), "{error}");
    }
}
