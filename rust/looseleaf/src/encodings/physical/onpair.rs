//! OnPair: strings as sequences of tokens of 1 to 16 bytes from a dictionary learnt from the
//! page ([arXiv:2508.02280](https://arxiv.org/abs/2508.02280)): training merges the adjacent
//! tokens seen together most often, in one pass over a sample. Each value becomes the codes of
//! its tokens, bit-packed at the dictionary's width and padded to whole bytes, stored as a
//! binary child. Any value decodes alone, so random access costs a [`super::binary`] read plus
//! the dictionary, like [`super::fsst`], whose place it takes where it stores the page smaller
//! (tokens of whole words: text of Zipf-distributed words a third smaller, TPC-H comments too).
//!
//! ```text
//! dictionary buffer: [len_0 .. len_n-1] (one byte each, 1..=16) [token_0][token_1]..[token_n-1]
//! codes: binary values, one per row: the value's k codes, code_bits each, least significant
//!        bit first, in ceil(k × code_bits / 8) bytes
//! ```
//!
//! With at least 8 bits per code the padding is shorter than a code, so a value of `b` bytes
//! holds exactly `floor(8 × b / code_bits)` codes. Training and parsing use the `onpair` crate;
//! decoding is this module's: a 16-byte copy per code from a table of every code's token, the
//! output advancing by the token's length.

use std::ops::Range;

use arrow_buffer::{BooleanBuffer, Buffer};
use bytes::Bytes;

use super::PageContext;
use super::coded_strings::{CodedStrings, LoadedCodes};
use crate::encodings::{DataBlock, PageDecoder, PageLoad, PageScheduler, VariableWidthBlock};
use crate::error::{Result, bail, ensure};
use crate::format::proto::OnPairEncoding;
use crate::io::PageIo;

/// Longest token, and the width of the copy each code is decoded with.
pub const MAX_TOKEN: usize = 16;
/// Widest code (the `onpair` crate's tokens are `u16`).
const MAX_CODE_BITS: u32 = 16;
/// Narrowest code: below 8 bits a value's padding could hold a code.
const MIN_CODE_BITS: u32 = 8;

/// Schedules the dictionary and the codes of some rows.
#[derive(Debug)]
pub struct OnPairScheduler {
    num_tokens: u32,
    code_bits: u32,
    coded: CodedStrings,
}

impl OnPairScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &OnPairEncoding, page: &PageContext) -> Result<Self> {
        let Some(codes) = encoding.codes.as_deref() else { bail!(corrupt, "OnPair encoding without codes") };
        let code_bits = encoding.code_bits;
        ensure!(
            (MIN_CODE_BITS..=MAX_CODE_BITS).contains(&code_bits),
            corrupt,
            "OnPair codes of {code_bits} bits (must be 8 to 16)"
        );
        let num_tokens = encoding.num_tokens;
        ensure!(
            num_tokens >= 1 && num_tokens <= 1 << code_bits,
            corrupt,
            "OnPair dictionary of {num_tokens} tokens for {code_bits}-bit codes"
        );
        let dictionary = page.buffer(encoding.dictionary_buffer, None, "OnPair dictionary")?;
        let most = num_tokens as u64 * (1 + MAX_TOKEN as u64);
        ensure!(
            dictionary.size > num_tokens as u64 && dictionary.size <= most,
            corrupt,
            "OnPair dictionary of {} bytes for {num_tokens} tokens",
            dictionary.size
        );
        let coded = CodedStrings::try_new(dictionary, codes, encoding.decoded_lengths.as_deref(), page)?;
        Ok(Self { num_tokens, code_bits, coded })
    }
}

impl PageScheduler for OnPairScheduler {
    fn num_rows(&self) -> u64 {
        self.coded.num_rows()
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let loaded = self.coded.schedule(ranges, io);
        let (num_tokens, code_bits) = (self.num_tokens, self.code_bits);
        Box::pin(async move {
            let LoadedCodes { table, codes, decoded_lengths } = loaded.await?;
            let tokens = TokenTable::parse(&table, num_tokens, code_bits)?;
            Ok(Box::new(OnPairDecoder { tokens, codes, decoded_lengths }) as Box<dyn PageDecoder>)
        })
    }
}

/// A checked dictionary, laid out for decoding: every code's token in 16 bytes (zero-padded),
/// and its length. Codes without a token (from `num_tokens` to `2^code_bits`) have length 0
/// and are caught by [`TokenTable::decode_rows`].
struct TokenTable {
    tokens: Vec<[u8; MAX_TOKEN]>,
    lengths: Vec<u8>,
    num_tokens: u32,
    code_bits: u32,
}

impl TokenTable {
    fn parse(bytes: &Bytes, num_tokens: u32, code_bits: u32) -> Result<Self> {
        let n = num_tokens as usize;
        let (lengths_part, mut token_bytes) = bytes.split_at_checked(n).unwrap_or_default();
        ensure!(lengths_part.len() == n, corrupt, "OnPair dictionary shorter than its {n} lengths");
        let codes = 1usize << code_bits;
        let mut tokens = vec![[0u8; MAX_TOKEN]; codes];
        let mut lengths = vec![0u8; codes];
        for (i, &length) in lengths_part.iter().enumerate() {
            ensure!((1..=MAX_TOKEN as u8).contains(&length), corrupt, "OnPair token of {length} bytes");
            let Some((token, rest)) = token_bytes.split_at_checked(length as usize) else {
                bail!(corrupt, "OnPair dictionary shorter than its tokens' lengths")
            };
            tokens[i][..token.len()].copy_from_slice(token);
            lengths[i] = length;
            token_bytes = rest;
        }
        ensure!(token_bytes.is_empty(), corrupt, "OnPair dictionary longer than its tokens");
        Ok(Self { tokens, lengths, num_tokens, code_bits })
    }

    /// The number of codes in a value of `bytes` packed bytes.
    fn codes_in(&self, bytes: usize) -> usize {
        bytes * 8 / self.code_bits as usize
    }

    /// Calls `f` with each code of the value packed in `data[start..end]`.
    #[inline(always)]
    fn for_each_code(&self, data: &[u8], start: usize, end: usize, mut f: impl FnMut(usize)) {
        let bits = self.code_bits as usize;
        let mask = (1u32 << bits) - 1;
        for i in 0..self.codes_in(end - start) {
            let bit = i * bits;
            let at = start + bit / 8;
            // A code spans at most 3 bytes (16 bits from a shift of up to 7): a 4-byte load
            // where the buffer has them, the bytes there are otherwise.
            let word = match data.get(at..at + 4) {
                Some(four) => u32::from_le_bytes([four[0], four[1], four[2], four[3]]),
                None => data[at..end].iter().rev().fold(0u32, |word, byte| word << 8 | *byte as u32),
            };
            f(((word >> (bit % 8)) & mask) as usize);
        }
    }

    /// Each value's decoded length, for values packed at `data[starts[i]..ends[i]]` (checked).
    fn decoded_lengths(&self, starts: &[u64], ends: &[u64], data: &[u8]) -> Vec<u64> {
        starts
            .iter()
            .zip(ends)
            .map(|(&start, &end)| {
                let mut length = 0u64;
                self.for_each_code(data, start as usize, end as usize, |code| length += self.lengths[code] as u64);
                length
            })
            .collect()
    }

    /// Decodes the `n` values packed at `data[starts[i]..ends[i]]` (checked: each start at most
    /// its end, within `data`) into `out_offsets` (`n + 1`, from 0: the output's, `total`
    /// bytes).
    ///
    /// A value decoding to other than its length, or a code without a token, is corrupt; every
    /// copy is checked to fit the output whatever the offsets claim.
    fn decode_rows<O: Copy + Into<u64>>(
        &self,
        starts: &[u64],
        ends: &[u64],
        data: &[u8],
        out_offsets: &[O],
        total: u64,
    ) -> Result<Vec<u8>> {
        // The code width as a constant: the shifts, masks and the division of each value's
        // bytes into codes compile to constants (a third of the decoding time otherwise).
        match self.code_bits {
            8 => self.decode_rows_of::<8, O>(starts, ends, data, out_offsets, total),
            9 => self.decode_rows_of::<9, O>(starts, ends, data, out_offsets, total),
            10 => self.decode_rows_of::<10, O>(starts, ends, data, out_offsets, total),
            11 => self.decode_rows_of::<11, O>(starts, ends, data, out_offsets, total),
            12 => self.decode_rows_of::<12, O>(starts, ends, data, out_offsets, total),
            13 => self.decode_rows_of::<13, O>(starts, ends, data, out_offsets, total),
            14 => self.decode_rows_of::<14, O>(starts, ends, data, out_offsets, total),
            15 => self.decode_rows_of::<15, O>(starts, ends, data, out_offsets, total),
            16 => self.decode_rows_of::<16, O>(starts, ends, data, out_offsets, total),
            bits => bail!(corrupt, "OnPair codes of {bits} bits"),
        }
    }

    fn decode_rows_of<const BITS: usize, O: Copy + Into<u64>>(
        &self,
        starts: &[u64],
        ends: &[u64],
        data: &[u8],
        out_offsets: &[O],
        total: u64,
    ) -> Result<Vec<u8>> {
        let mask = (1u32 << BITS) - 1;
        // Room past the values so that the last values of a batch, decoded with unchecked
        // copies while `written + 16 × codes` fits, rarely fall back to checked ones.
        let capacity = total as usize + MAX_TOKEN * MAX_TOKEN;
        let mut out: Vec<u8> = Vec::with_capacity(capacity);
        let base = out.as_mut_ptr();
        let tokens = self.tokens.as_slice();
        let lengths = self.lengths.as_slice();
        debug_assert_eq!(tokens.len(), 1 << BITS);
        let num_tokens = self.num_tokens as usize;
        let (mut written, mut unknown) = (0usize, false);
        for (row, (&start, &end)) in starts.iter().zip(ends).enumerate() {
            let (start, end) = (start as usize, end as usize);
            let k = (end - start) * 8 / BITS;
            if end + 3 <= data.len() && written + MAX_TOKEN * k <= capacity {
                for i in 0..k {
                    let bit = i * BITS;
                    let at = start + bit / 8;
                    // SAFETY: code `i` lies within the value's bytes, so `at < end` and the
                    // 4 bytes read end by `end + 3 <= data.len()`.
                    let word = unsafe { data.as_ptr().add(at).cast::<u32>().read_unaligned() }.to_le();
                    let code = ((word >> (bit % 8)) & mask) as usize;
                    // SAFETY: `code < 2^BITS`, the length of both tables. Token `i` is copied
                    // at `written <= ` the value's start + 16 × i, so the copy ends by the
                    // value's start + 16 × k, within `capacity` (checked above).
                    unsafe {
                        base.add(written).cast::<[u8; MAX_TOKEN]>().write_unaligned(*tokens.get_unchecked(code));
                        written += *lengths.get_unchecked(code) as usize;
                    }
                    unknown |= code >= num_tokens;
                }
            } else {
                let mut overflow = false;
                self.for_each_code(data, start, end, |code| {
                    if written + MAX_TOKEN > capacity {
                        overflow = true;
                        return;
                    }
                    // SAFETY: `written + MAX_TOKEN <= capacity`, checked just above.
                    unsafe { base.add(written).cast::<[u8; MAX_TOKEN]>().write_unaligned(tokens[code]) };
                    written += lengths[code] as usize;
                    unknown |= code >= num_tokens;
                });
                ensure!(!overflow, corrupt, "OnPair value {row} decodes past its batch");
            }
            ensure!(
                written as u64 == out_offsets[row + 1].into(),
                corrupt,
                "OnPair value {row} decodes to other than its length"
            );
        }
        ensure!(!unknown, corrupt, "OnPair code without a token");
        // SAFETY: every byte below `written` (== `total`) was written by a copy above.
        unsafe { out.set_len(written) };
        Ok(out)
    }
}

struct OnPairDecoder {
    tokens: TokenTable,
    codes: Box<dyn PageDecoder>,
    /// Each value's decoded length, over the same rows as `codes`, if read.
    decoded_lengths: Option<Box<dyn PageDecoder>>,
}

impl PageDecoder for OnPairDecoder {
    fn num_rows(&self) -> u64 {
        self.codes.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let (offsets, data, span) = super::checked_codes(self.codes.decode(rows_to_skip, num_rows)?, "OnPair")?;
        let (starts, ends) = match offsets.len() {
            0 => (&offsets[..], &offsets[..]),
            n => (&offsets[..n - 1], &offsets[1..]),
        };
        let lengths = match &self.decoded_lengths {
            Some(lengths) => Some(lengths.decode(rows_to_skip, num_rows)?),
            None => None,
        };
        self.decode_values(starts, ends, data.as_slice(), span, lengths)
    }

    fn decode_selected(&self, rows_to_skip: u64, num_rows: u64, selected: &BooleanBuffer) -> Result<Option<DataBlock>> {
        ensure!(selected.len() as u64 == num_rows, internal, "a selection of other than the OnPair rows decoded");
        let (offsets, data, span) = super::checked_codes(self.codes.decode(rows_to_skip, num_rows)?, "OnPair")?;
        ensure!(offsets.len() as u64 == num_rows + 1, corrupt, "OnPair codes of the wrong length");
        let count = selected.count_set_bits();
        let (mut starts, mut ends) = (Vec::with_capacity(count), Vec::with_capacity(count));
        for row in selected.set_indices() {
            starts.push(offsets[row]);
            ends.push(offsets[row + 1]);
        }
        let lengths = match &self.decoded_lengths {
            Some(lengths) => Some(match lengths.decode_selected(rows_to_skip, num_rows, selected)? {
                Some(lengths) => lengths,
                None => super::selected_lengths(lengths.decode(rows_to_skip, num_rows)?, selected, "OnPair")?,
            }),
            None => None,
        };
        self.decode_values(&starts, &ends, data.as_slice(), span, lengths).map(Some)
    }
}

impl OnPairDecoder {
    /// The values packed at `data[starts[i]..ends[i]]` (checked), whose codes take the bytes
    /// `span` of `data` in all; `lengths`, their decoded lengths if the page stores them.
    fn decode_values(
        &self,
        starts: &[u64],
        ends: &[u64],
        data: &[u8],
        span: Range<u64>,
        lengths: Option<DataBlock>,
    ) -> Result<DataBlock> {
        let num_rows = starts.len() as u64;
        // The most bytes the codes can decode to: every code a 16-byte token, and a value of
        // `b` bytes holds at most `b` codes. Lengths claiming more are corrupt, so that the
        // output is sized by the bytes read, not by what the page claims.
        let most = (span.end - span.start).saturating_mul(MAX_TOKEN as u64);
        if let Some(lengths) = lengths {
            let DataBlock::FixedWidth(lengths) = lengths else {
                bail!(corrupt, "OnPair decoded lengths are not integers")
            };
            ensure!(lengths.num_values == num_rows, corrupt, "OnPair decoded lengths of the wrong length");
            let (out_offsets, bits_per_offset, total) = super::offsets_from_lengths(&lengths, "OnPair")?;
            ensure!(total <= most, corrupt, "OnPair decoded lengths sum to {total} bytes, more than the codes hold");
            let out = if bits_per_offset == 32 {
                self.tokens.decode_rows::<u32>(starts, ends, data, out_offsets.typed_data(), total)?
            } else {
                self.tokens.decode_rows::<u64>(starts, ends, data, out_offsets.typed_data(), total)?
            };
            return Ok(DataBlock::VariableWidth(VariableWidthBlock {
                offsets: out_offsets,
                bits_per_offset,
                data: Buffer::from_vec(out),
                num_values: num_rows,
            }));
        }
        // Without lengths (a take): each value's length from its tokens first.
        let mut out_offsets = Vec::with_capacity(starts.len() + 1);
        let mut total = 0u64;
        out_offsets.push(0);
        for length in self.tokens.decoded_lengths(starts, ends, data) {
            total += length;
            out_offsets.push(total);
        }
        let out = self.tokens.decode_rows::<u64>(starts, ends, data, &out_offsets, total)?;
        Ok(DataBlock::VariableWidth(VariableWidthBlock::from_offsets(out_offsets, Buffer::from_vec(out))))
    }
}

/// A page's values compressed: what [`OnPairEncoding`] stores besides the lengths.
pub struct Compressed {
    /// The dictionary buffer: lengths, then tokens.
    pub dictionary: Buffer,
    /// Number of tokens.
    pub num_tokens: u32,
    /// Width of a code in bits.
    pub code_bits: u32,
    /// Each value's packed codes.
    pub codes: VariableWidthBlock,
}

impl Compressed {
    /// Stored bytes, besides the codes' offsets and the lengths.
    pub fn size(&self) -> u64 {
        (self.dictionary.len() + self.codes.data.len()) as u64
    }
}

/// The bytes of the codes of the values of `strings` at `sample`, encoded with a dictionary
/// trained on them alone: a cheap look at whether OnPair is worth running on a whole page
/// (trained on its sample, a dictionary fits the sample better than a whole page's would).
pub fn sample_code_bytes(strings: &[&[u8]], sample: &[usize]) -> Option<u64> {
    let mut data = Vec::new();
    let mut offsets = Vec::with_capacity(sample.len() + 1);
    offsets.push(0u64);
    for string in sample.iter().filter_map(|i| strings.get(*i)) {
        data.extend_from_slice(string);
        offsets.push(data.len() as u64);
    }
    compress(&data, &offsets).map(|compressed| compressed.codes.data.len() as u64)
}

/// Trains a dictionary on the values `data[offsets[i]..offsets[i + 1]]` and encodes them with
/// it; `None` if the `onpair` crate refuses the input (offsets beyond the data).
pub fn compress(data: &[u8], offsets: &[u64]) -> Option<Compressed> {
    // The crate's default: a dictionary of at most 4,096 tokens (12-bit codes, a table of
    // 64 KiB to decode with), trained deterministically.
    let column = onpair::compress(data, offsets, onpair::DEFAULT_CONFIG).ok()?;
    let (dictionary, codes, rows) = column.into_raw();
    let token_offsets = dictionary.offsets();
    let num_tokens = dictionary.num_tokens();
    let token_bytes = dictionary.bytes().get(..*token_offsets.get(num_tokens)? as usize)?;
    let mut table = Vec::with_capacity(num_tokens + token_bytes.len());
    for w in token_offsets[..=num_tokens].windows(2) {
        table.push(u8::try_from(w[1] - w[0]).ok()?);
    }
    table.extend_from_slice(token_bytes);
    if num_tokens == 0 {
        // Values that are all empty: a dictionary of one token, which no code names (a
        // dictionary holds at least one token).
        table = vec![1, 0];
    }
    let num_tokens = num_tokens.max(1);
    let code_bits = (onpair::code_bits_for_num_tokens(num_tokens) as u32).max(MIN_CODE_BITS);
    let bits = code_bits as usize;
    let row_bytes = |w: &[u64]| ((w[1] - w[0]) as usize * bits).div_ceil(8);
    let size: usize = rows.windows(2).map(row_bytes).sum();
    // Codes are ORed in 8 bytes at a time into zeroed bytes, 8 more of them for the last.
    let mut packed = vec![0u8; size + 8];
    let mut packed_offsets = Vec::with_capacity(rows.len());
    packed_offsets.push(0u64);
    let mut at = 0usize;
    for w in rows.windows(2) {
        let mut bit = at * 8;
        for &code in codes.get(w[0] as usize..w[1] as usize)? {
            let word = packed.get_mut(bit / 8..bit / 8 + 8)?;
            let merged = u64::from_le_bytes(word.try_into().ok()?) | (code as u64) << (bit % 8);
            word.copy_from_slice(&merged.to_le_bytes());
            bit += bits;
        }
        at += row_bytes(w);
        packed_offsets.push(at as u64);
    }
    packed.truncate(size);
    Some(Compressed {
        dictionary: Buffer::from_vec(table),
        num_tokens: num_tokens as u32,
        code_bits,
        codes: VariableWidthBlock::from_offsets(packed_offsets, Buffer::from_vec(packed)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn table_of(compressed: &Compressed) -> TokenTable {
        TokenTable::parse(&Bytes::from(compressed.dictionary.to_vec()), compressed.num_tokens, compressed.code_bits)
            .unwrap()
    }

    /// Values of Zipf-like words from a small vocabulary, some empty.
    fn words(rng: &mut rand::rngs::StdRng, n: usize) -> (Vec<u8>, Vec<u64>) {
        let vocabulary: Vec<String> = (0..500)
            .map(|i| (0..rng.random_range(1..12)).map(|j| (b'a' + ((i * 7 + j) % 26) as u8) as char).collect())
            .collect();
        let (mut data, mut offsets) = (Vec::new(), vec![0u64]);
        for _ in 0..n {
            for _ in 0..rng.random_range(0..15) {
                let rank = (rng.random::<f64>().powi(3) * vocabulary.len() as f64) as usize;
                data.extend_from_slice(vocabulary[rank].as_bytes());
                data.push(b' ');
            }
            if rng.random_bool(0.05) {
                data.extend((0..rng.random_range(1..40)).map(|_| rng.random::<u8>()));
            }
            offsets.push(data.len() as u64);
        }
        (data, offsets)
    }

    /// Where each value's codes start, from the `n + 1` offsets of `n` values.
    fn starts(offsets: &[u64]) -> &[u64] {
        &offsets[..offsets.len() - 1]
    }

    /// Where each value's codes end.
    fn ends(offsets: &[u64]) -> &[u64] {
        &offsets[1..]
    }

    #[test]
    fn values_round_trip_with_and_without_lengths() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for n in [1, 7, 3000] {
            let (data, offsets) = words(&mut rng, n);
            let compressed = compress(&data, &offsets).unwrap();
            let table = table_of(&compressed);
            let codes = compressed.codes.offsets_u64().unwrap();
            let packed = compressed.codes.data.as_slice();
            let lengths = table.decoded_lengths(starts(&codes), ends(&codes), packed);
            let expected: Vec<u64> = offsets.windows(2).map(|w| w[1] - w[0]).collect();
            assert_eq!(lengths, expected);
            let out =
                table.decode_rows(starts(&codes), ends(&codes), packed, &offsets, *offsets.last().unwrap()).unwrap();
            assert_eq!(out, data);
            // Each value alone: codes for one row decode to its bytes.
            for row in [0, n / 2, n - 1] {
                let one = table
                    .decode_rows(
                        starts(&codes[row..row + 2]),
                        ends(&codes[row..row + 2]),
                        packed,
                        &[0, expected[row]],
                        expected[row],
                    )
                    .unwrap();
                assert_eq!(one, &data[offsets[row] as usize..offsets[row + 1] as usize]);
            }
        }
    }

    #[test]
    fn empty_pages_and_empty_values_round_trip() {
        for (data, offsets) in [(vec![], vec![0u64]), (vec![], vec![0u64; 6]), (b"ab".to_vec(), vec![0, 0, 2, 2])] {
            let compressed = compress(&data, &offsets).unwrap();
            let table = table_of(&compressed);
            let codes = compressed.codes.offsets_u64().unwrap();
            let out = table.decode_rows(
                starts(&codes),
                ends(&codes),
                compressed.codes.data.as_slice(),
                &offsets,
                data.len() as u64,
            );
            assert_eq!(out.unwrap(), data);
        }
    }

    #[test]
    fn corrupt_codes_and_lengths_are_errors() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(6);
        let (data, offsets) = words(&mut rng, 200);
        let compressed = compress(&data, &offsets).unwrap();
        let table = table_of(&compressed);
        let codes = compressed.codes.offsets_u64().unwrap();
        let packed = compressed.codes.data.as_slice();
        let total = *offsets.last().unwrap();
        // Lengths that claim fewer bytes than the codes hold: every copy still fits.
        let mut short = offsets.clone();
        short.iter_mut().for_each(|o| *o /= 2);
        assert!(table.decode_rows(starts(&codes), ends(&codes), packed, &short, total / 2).is_err());
        // A code without a token.
        if table.num_tokens < 1 << table.code_bits {
            let mut bad = packed.to_vec();
            bad.iter_mut().for_each(|b| *b = 0xff);
            let lengths = table.decoded_lengths(starts(&codes), ends(&codes), &bad);
            let mut out_offsets = vec![0u64];
            lengths.iter().for_each(|l| out_offsets.push(out_offsets.last().unwrap() + l));
            let total = *out_offsets.last().unwrap();
            assert!(table.decode_rows(starts(&codes), ends(&codes), &bad, &out_offsets, total).is_err());
        }
        // Dictionaries that do not add up.
        let bytes = compressed.dictionary.to_vec();
        let parse = |b: &[u8], n| TokenTable::parse(&Bytes::from(b.to_vec()), n, compressed.code_bits);
        assert!(parse(&bytes[..bytes.len() - 1], compressed.num_tokens).is_err());
        assert!(parse(&bytes, compressed.num_tokens - 1).is_err());
        let mut zero = bytes.clone();
        zero[0] = 0;
        assert!(parse(&zero, compressed.num_tokens).is_err());
    }
}
