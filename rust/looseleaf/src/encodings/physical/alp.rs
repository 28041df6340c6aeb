//! ALP ("adaptive lossless floating-point", Afroozeh, Kuffo and Boncz, SIGMOD 2024): floats that
//! are decimals in disguise (prices, measurements, coordinates written with a few digits)
//! stored as integers. A value `v` is stored as the integer `n = round(v × 10^e × 10^-f)` and
//! read back as `n × 10^f × 10^-e`, `e` being the page's exponent and `f ≤ e` its factor. A value
//! that does not come back bit for bit (more digits than `e`, NaN, infinities, `-0.0`, too
//! large) is an *exception*, stored as it is with its row, and its integer slot holds another
//! value of the page so that the integers' range stays narrow. The integers are a child
//! encoding (bit-packed, delta or constant, whichever suits them), so reading a value costs
//! reading its integer plus the page's exceptions.
//!
//! ```text
//! float64 [12.5, 0.25, 7.0, NaN]   e = 2, f = 0:  integers [1250, 25, 700, 1250] (bit-packed)
//!                                                  exception: row 3, NaN
//! ```
//!
//! The writer picks `(e, f)` on a sample of the page (the smallest estimated size) and uses
//! ALP-RD ([`super::alp_rd`]) instead for floats of random digits, such as embeddings.

use std::ops::Range;

use arrow_buffer::{Buffer, MutableBuffer};

use super::PageContext;
use crate::encodings::{DataBlock, FixedWidthBlock, PageDecoder, PageLoad, PageScheduler, SelectedRows, limits};
use crate::error::{Result, bail, ensure};
use crate::format::proto::{self, AlpEncoding, BufferLocation};
use crate::io::PageIo;

/// Values sampled to try every exponent and factor on.
const FIRST_SAMPLE: usize = 32;
/// Pairs of the first sample tried again on [`SAMPLE`] values.
const FINALISTS: usize = 4;
/// Values sampled to choose among the finalists.
const SAMPLE: usize = 256;

/// `10^i` and `10^-i` as float64s.
const F10_64: [f64; 19] =
    [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18];
const IF10_64: [f64; 19] = [
    1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17,
    1e-18,
];
/// `10^i` and `10^-i` as float32s.
const F10_32: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];
const IF10_32: [f32; 11] = [1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10];

/// The largest exponent of values of `value_bytes` bytes.
fn max_exponent(value_bytes: u32) -> u32 {
    if value_bytes == 4 { (F10_32.len() - 1) as u32 } else { (F10_64.len() - 1) as u32 }
}

/// The float64 integer `n` stands for. The one formula of both directions: a value is stored
/// as `n` only if this gives it back bit for bit.
#[inline]
fn decode64(n: i64, exponent: usize, factor: usize) -> f64 {
    n as f64 * F10_64[factor] * IF10_64[exponent]
}

/// As [`decode64`], for float32.
#[inline]
fn decode32(n: i32, exponent: usize, factor: usize) -> f32 {
    n as f32 * F10_32[factor] * IF10_32[exponent]
}

/// The integer storing `v`, if it comes back exactly.
#[inline]
fn encode64(v: f64, exponent: usize, factor: usize) -> Option<i64> {
    // Adding and subtracting 1.5 × 2^52 rounds to an integer for |x| < 2^51 (NaN is not).
    const MAGIC: f64 = 6_755_399_441_055_744.0;
    let x = v * F10_64[exponent] * IF10_64[factor];
    if x.is_nan() || x.abs() >= 2_251_799_813_685_248.0 {
        return None;
    }
    let n = ((x + MAGIC) - MAGIC) as i64;
    (decode64(n, exponent, factor).to_bits() == v.to_bits()).then_some(n)
}

/// As [`encode64`], for float32 (integers below 2^22).
#[inline]
fn encode32(v: f32, exponent: usize, factor: usize) -> Option<i64> {
    const MAGIC: f32 = 12_582_912.0;
    let x = v * F10_32[exponent] * IF10_32[factor];
    if x.is_nan() || x.abs() >= 4_194_304.0 {
        return None;
    }
    let n = ((x + MAGIC) - MAGIC) as i32;
    (decode32(n, exponent, factor).to_bits() == v.to_bits()).then_some(n as i64)
}

/// The values of a block of floats, read as float64s or float32s by their width.
enum Floats<'a> {
    F64(&'a [u8]),
    F32(&'a [u8]),
}

impl<'a> Floats<'a> {
    fn of(values: &'a FixedWidthBlock) -> Option<Self> {
        let n = values.num_values as usize;
        match values.bits_per_value {
            64 => values.data.as_slice().get(..n * 8).map(Floats::F64),
            32 => values.data.as_slice().get(..n * 4).map(Floats::F32),
            _ => None,
        }
    }

    fn value_bytes(&self) -> u32 {
        match self {
            Floats::F64(_) => 8,
            Floats::F32(_) => 4,
        }
    }

    fn len(&self) -> usize {
        match self {
            Floats::F64(bytes) => bytes.len() / 8,
            Floats::F32(bytes) => bytes.len() / 4,
        }
    }

    /// The integer storing value `i`, if it comes back exactly.
    fn encode(&self, i: usize, exponent: usize, factor: usize) -> Option<i64> {
        match self {
            Floats::F64(bytes) => {
                let v = f64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap_or_default());
                encode64(v, exponent, factor)
            }
            Floats::F32(bytes) => {
                let v = f32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap_or_default());
                encode32(v, exponent, factor)
            }
        }
    }

    /// The little-endian bytes of value `i`.
    fn bytes(&self, i: usize) -> &'a [u8] {
        match self {
            Floats::F64(bytes) => &bytes[i * 8..i * 8 + 8],
            Floats::F32(bytes) => &bytes[i * 4..i * 4 + 4],
        }
    }
}

/// The exponent and factor chosen for a page, and the bytes they are estimated to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlpChoice {
    /// `e`: values are multiplied by `10^e`.
    pub exponent: u32,
    /// `f`: and divided by `10^f`.
    pub factor: u32,
    /// The page's estimated size: its integers bit-packed, plus its exceptions.
    pub estimated_bytes: u64,
}

/// The best exponent and factor for `values` (float32 or float64), estimated on samples: every
/// pair on 32 values, then the 4 best on 256 (`FIRST_SAMPLE`, `FINALISTS`, `SAMPLE`). `None` for
/// other widths or an empty block.
///
/// Every pair is tried because the smallest exponent is often not exact: `0.29` is not
/// `29 × 10^-2` in float64 arithmetic, while `29 × 10^12 × 10^-14` is, so prices with two
/// decimals may take `e = 14, f = 12` (the same integers) rather than `e = 2, f = 0`.
pub fn choose(values: &FixedWidthBlock) -> Option<AlpChoice> {
    let floats = Floats::of(values)?;
    let n = floats.len();
    if n == 0 {
        return None;
    }
    // One value of each of `count` equal strata of the page, at a hashed place within it: an
    // evenly spaced sample aliases with periodic data (every fourth row a multiple of 0.25).
    let spread = |count: usize| -> Vec<usize> {
        let count = n.min(count);
        (0..count)
            .map(|i| {
                let (start, end) = (i * n / count, (i + 1) * n / count);
                let jitter = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
                start + (jitter % (end - start) as u64) as usize
            })
            .collect()
    };
    let value_bytes = floats.value_bytes() as u64;
    let estimate = |sample: &[usize], exponent: u32, factor: u32| {
        let (mut exceptions, mut min, mut max) = (0u64, i64::MAX, i64::MIN);
        for &i in sample {
            match floats.encode(i, exponent as usize, factor as usize) {
                Some(v) => (min, max) = (min.min(v), max.max(v)),
                None => exceptions += 1,
            }
        }
        let bits = if min > max { 0 } else { super::integers::bits_needed(max.wrapping_sub(min) as u64 as u128) };
        let exceptions = exceptions * n as u64 / sample.len() as u64;
        let estimated_bytes = (n as u64 * bits as u64).div_ceil(8) + exceptions * (4 + value_bytes);
        AlpChoice { exponent, factor, estimated_bytes }
    };
    let first = spread(FIRST_SAMPLE);
    let max = max_exponent(floats.value_bytes());
    let mut pairs: Vec<AlpChoice> =
        (0..=max).flat_map(|e| (0..=e).map(move |f| (e, f))).map(|(e, f)| estimate(&first, e, f)).collect();
    // Stable: among equal estimates, the smallest exponent first.
    pairs.sort_by_key(|pair| pair.estimated_bytes);
    let sample = spread(SAMPLE);
    pairs
        .iter()
        .take(FINALISTS)
        .map(|pair| estimate(&sample, pair.exponent, pair.factor))
        .reduce(|best, next| if next.estimated_bytes < best.estimated_bytes { next } else { best })
}

/// Writes `values` (float32 or float64) with `choice`'s exponent and factor: the integers
/// through `encode_integers` (as signed integers of the values' width), then the exceptions'
/// rows and values.
pub fn encode(
    values: &FixedWidthBlock,
    choice: &AlpChoice,
    buffers: &mut Vec<Buffer>,
    encode_integers: impl FnOnce(&FixedWidthBlock, &mut Vec<Buffer>) -> Result<proto::Encoding>,
) -> Result<AlpEncoding> {
    let Some(floats) = Floats::of(values) else { bail!(invalid, "ALP stores float32 and float64 values only") };
    let value_bytes = floats.value_bytes();
    ensure!(
        choice.factor <= choice.exponent && choice.exponent <= max_exponent(value_bytes),
        internal,
        "ALP exponent {} and factor {} for {value_bytes}-byte values",
        choice.exponent,
        choice.factor
    );
    let (exponent, factor) = (choice.exponent as usize, choice.factor as usize);
    let n = floats.len();
    let encoded: Vec<Option<i64>> = (0..n).map(|i| floats.encode(i, exponent, factor)).collect();
    // Exceptions take the first encoded integer, which keeps the integers' range.
    let fill = encoded.iter().flatten().next().copied().unwrap_or(0);
    let mut integers = limits::try_buffer(n * value_bytes as usize, "ALP integers")?;
    let (mut exception_rows, mut exception_values) = (MutableBuffer::new(0), MutableBuffer::new(0));
    for (row, integer) in encoded.iter().enumerate() {
        let integer = integer.unwrap_or_else(|| {
            exception_rows.extend_from_slice(&(row as u32).to_le_bytes());
            exception_values.extend_from_slice(floats.bytes(row));
            fill
        });
        match value_bytes {
            8 => integers.extend_from_slice(&integer.to_le_bytes()),
            _ => integers.extend_from_slice(&(integer as i32).to_le_bytes()),
        }
    }
    let num_exceptions = (exception_rows.len() / 4) as u64;
    let integers =
        FixedWidthBlock { data: integers.into(), bits_per_value: value_bytes as u64 * 8, num_values: n as u64 };
    let integers = encode_integers(&integers, buffers)?;
    buffers.push(exception_rows.into());
    buffers.push(exception_values.into());
    Ok(AlpEncoding {
        value_bytes,
        exponent: choice.exponent,
        factor: choice.factor,
        integers: Some(Box::new(integers)),
        num_exceptions,
        exception_rows_buffer: (buffers.len() - 2) as u32,
        exception_values_buffer: (buffers.len() - 1) as u32,
    })
}

/// Schedules rows of an ALP page: their integers, and the page's exceptions.
#[derive(Debug)]
pub struct AlpScheduler {
    value_bytes: u32,
    exponent: u32,
    factor: u32,
    integers: Box<dyn PageScheduler>,
    num_exceptions: u64,
    exception_rows: BufferLocation,
    exception_values: BufferLocation,
    num_rows: u64,
}

impl AlpScheduler {
    /// The scheduler of `encoding` in `page`.
    pub fn try_new(encoding: &AlpEncoding, page: &PageContext) -> Result<Self> {
        let value_bytes = encoding.value_bytes;
        ensure!(
            matches!(value_bytes, 4 | 8)
                && encoding.factor <= encoding.exponent
                && encoding.exponent <= max_exponent(value_bytes),
            corrupt,
            "ALP encoding of {value_bytes}-byte values with exponent {} and factor {}",
            encoding.exponent,
            encoding.factor
        );
        let Some(integers) = encoding.integers.as_deref() else { bail!(corrupt, "ALP encoding without integers") };
        let integers = super::page_scheduler(Some(integers), page)?;
        let n = encoding.num_exceptions;
        ensure!(n <= page.num_rows, corrupt, "{n} ALP exceptions in a page of {} rows", page.num_rows);
        let exception_rows =
            page.buffer(encoding.exception_rows_buffer, Some(n.saturating_mul(4)), "ALP exception rows")?;
        let exception_values = page.buffer(
            encoding.exception_values_buffer,
            Some(n.saturating_mul(value_bytes as u64)),
            "ALP exception values",
        )?;
        Ok(Self {
            value_bytes,
            exponent: encoding.exponent,
            factor: encoding.factor,
            integers,
            num_exceptions: n,
            exception_rows,
            exception_values,
            num_rows: page.num_rows,
        })
    }
}

impl PageScheduler for AlpScheduler {
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    fn schedule_ranges(&self, ranges: &[Range<u64>], io: &PageIo) -> PageLoad {
        let integers = self.integers.schedule_ranges(ranges, io);
        let exceptions = (self.num_exceptions > 0).then(|| {
            let buffers = [&self.exception_rows, &self.exception_values];
            io.submit(buffers.iter().map(|b| b.offset..b.offset + b.size).collect())
        });
        let rows = SelectedRows::new(ranges);
        let (value_bytes, exponent, factor, num_rows) = (self.value_bytes, self.exponent, self.factor, self.num_rows);
        Box::pin(async move {
            let integers = integers.await?;
            ensure!(integers.num_rows() == rows.num_rows(), corrupt, "ALP integers hold a different row count");
            let exceptions = match exceptions {
                Some(loaded) => match loaded.await?.as_slice() {
                    [rows, values] => Exceptions::try_new(rows, values, value_bytes, num_rows)?,
                    _ => bail!(internal, "ALP exceptions not loaded"),
                },
                None => Exceptions::default(),
            };
            Ok(Box::new(AlpDecoder { value_bytes, exponent, factor, rows, integers, exceptions })
                as Box<dyn PageDecoder>)
        })
    }
}

/// The exceptions of a page: rows (increasing) and their values' bits.
#[derive(Default)]
struct Exceptions {
    rows: Vec<u64>,
    values: Vec<u64>,
}

impl Exceptions {
    fn try_new(rows: &[u8], values: &[u8], value_bytes: u32, num_rows: u64) -> Result<Self> {
        let rows: Vec<u64> =
            rows.chunks_exact(4).map(|r| u32::from_le_bytes([r[0], r[1], r[2], r[3]]) as u64).collect();
        ensure!(
            rows.windows(2).all(|w| w[0] < w[1]) && rows.last().is_none_or(|last| *last < num_rows),
            corrupt,
            "ALP exception rows are not increasing rows of the page's {num_rows}"
        );
        let values: Vec<u64> = values
            .chunks_exact(value_bytes as usize)
            .map(|v| {
                let mut bits = [0u8; 8];
                bits[..v.len()].copy_from_slice(v);
                u64::from_le_bytes(bits)
            })
            .collect();
        ensure!(values.len() == rows.len(), corrupt, "ALP exception buffers of different lengths");
        Ok(Self { rows, values })
    }
}

/// Loaded rows of an ALP page.
struct AlpDecoder {
    value_bytes: u32,
    exponent: u32,
    factor: u32,
    rows: SelectedRows,
    integers: Box<dyn PageDecoder>,
    exceptions: Exceptions,
}

impl PageDecoder for AlpDecoder {
    fn num_rows(&self) -> u64 {
        self.rows.num_rows()
    }

    fn decode(&self, rows_to_skip: u64, num_rows: u64) -> Result<DataBlock> {
        let w = self.value_bytes as usize;
        let integers = match self.integers.decode(rows_to_skip, num_rows)? {
            DataBlock::FixedWidth(block) if block.bits_per_value == w as u64 * 8 && block.num_values == num_rows => {
                block.data
            }
            _ => bail!(corrupt, "the integers of an ALP page do not decode to {num_rows} values of {w} bytes"),
        };
        let len = limits::block_bytes(num_rows, w as u64, "ALP values")?;
        ensure!(integers.len() >= len, corrupt, "ALP integers of {} bytes for {num_rows} values", integers.len());
        // The integers' buffer becomes the floats' when this decoder owns it alone (decoded
        // integers usually are new memory), else the floats are written into new memory.
        let mut out = match integers.into_mutable() {
            Ok(buffer) if (buffer.as_ptr() as usize).is_multiple_of(w) => buffer,
            Ok(buffer) => copy_aligned(buffer.as_slice(), len)?,
            Err(shared) => copy_aligned(shared.as_slice(), len)?,
        };
        // Exactly the values' bytes before viewing them as words: a longer buffer whose length
        // is not a multiple of the width would make the typed view panic.
        out.truncate(len);
        let (exponent, factor) = (self.exponent as usize, self.factor as usize);
        match w {
            8 => {
                let values = &mut out.typed_data_mut::<u64>()[..num_rows as usize];
                for value in values.iter_mut() {
                    *value = decode64(*value as i64, exponent, factor).to_bits();
                }
                self.patch(rows_to_skip, num_rows, values, |bits| bits)?;
            }
            _ => {
                let values = &mut out.typed_data_mut::<u32>()[..num_rows as usize];
                for value in values.iter_mut() {
                    *value = decode32(*value as i32, exponent, factor).to_bits();
                }
                self.patch(rows_to_skip, num_rows, values, |bits| bits as u32)?;
            }
        }
        Ok(DataBlock::FixedWidth(FixedWidthBlock {
            data: out.into(),
            bits_per_value: w as u64 * 8,
            num_values: num_rows,
        }))
    }
}

impl AlpDecoder {
    /// Writes the exceptions among held rows `rows_to_skip..rows_to_skip + num_rows` into
    /// `values` (those rows' values).
    fn patch<T>(&self, rows_to_skip: u64, num_rows: u64, values: &mut [T], from_bits: impl Fn(u64) -> T) -> Result<()> {
        let exceptions = &self.exceptions;
        if exceptions.rows.is_empty() {
            return Ok(());
        }
        let mut at = 0usize;
        for piece in self.rows.page_rows(rows_to_skip, num_rows)? {
            let first = exceptions.rows.partition_point(|row| *row < piece.start);
            for (row, bits) in exceptions.rows[first..].iter().zip(&exceptions.values[first..]) {
                if *row >= piece.end {
                    break;
                }
                let Some(value) = values.get_mut(at + (row - piece.start) as usize) else {
                    bail!(internal, "ALP exception outside the decoded values");
                };
                *value = from_bits(*bits);
            }
            at += (piece.end - piece.start) as usize;
        }
        Ok(())
    }
}

/// The first `len` bytes of `bytes` in new memory (aligned for any value width).
fn copy_aligned(bytes: &[u8], len: usize) -> Result<MutableBuffer> {
    let mut out = limits::try_buffer(len, "ALP values")?;
    out.extend_from_slice(&bytes[..len]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block64(values: &[f64]) -> FixedWidthBlock {
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        FixedWidthBlock { data: Buffer::from_vec(data), bits_per_value: 64, num_values: values.len() as u64 }
    }

    #[test]
    fn decimals_come_back_exactly_and_the_rest_are_exceptions() {
        for v in [12.34, 0.5, -7.25, 1e6, 0.1, 0.3, 123_456.78] {
            let n = encode64(v, 2, 0).expect("two decimals encode");
            assert_eq!(decode64(n, 2, 0).to_bits(), v.to_bits());
        }
        for v in [f64::NAN, f64::INFINITY, -0.0, 1.0 / 3.0, 1e300, 5e-324] {
            assert_eq!(encode64(v, 2, 0), None, "{v}");
        }
        for v in [12.34f32, 0.5, -7.25, 1000.0] {
            let n = encode32(v, 2, 0).expect("two decimals encode");
            assert_eq!(decode32(n as i32, 2, 0).to_bits(), v.to_bits());
        }
        assert_eq!(encode32(f32::NAN, 1, 0), None);
    }

    #[test]
    fn the_choice_fits_the_digits() {
        let prices: Vec<f64> = (0..5000).map(|i| ((i * 7919) % 100_000) as f64 / 100.0).collect();
        let choice = choose(&block64(&prices)).unwrap();
        // 17 bits a value, no exception: 10,625 bytes.
        assert_eq!(choice.estimated_bytes, 10_625, "{choice:?}");
        let (e, f) = (choice.exponent as usize, choice.factor as usize);
        assert!(prices.iter().all(|v| encode64(*v, e, f).is_some()), "{choice:?}");
        // Quarters at rows that are not multiples of 4: a sample must not see whole numbers only.
        let quarters: Vec<f64> = (0..1024).map(|i| (i % 400) as f64 / 4.0).collect();
        let choice = choose(&block64(&quarters)).unwrap();
        assert_eq!((choice.exponent - choice.factor, choice.estimated_bytes), (2, 1024 * 14 / 8), "{choice:?}");
        // Whole numbers: integers as they are (the factor never exceeds the exponent), 20 bits.
        let thousands: Vec<f64> = (0..5000).map(|i| (i % 977) as f64 * 1000.0).collect();
        let choice = choose(&block64(&thousands)).unwrap();
        assert_eq!((choice.exponent, choice.estimated_bytes), (choice.factor, 5000 * 20 / 8), "{choice:?}");
        // Random digits: every value an exception.
        let random: Vec<f64> = (0..5000).map(|i| (i as f64 * 0.37).sin()).collect();
        assert!(choose(&block64(&random)).unwrap().estimated_bytes >= 5000 * 8, "random digits");
        let halves = FixedWidthBlock { data: Buffer::from_vec(vec![0u8; 4]), bits_per_value: 16, num_values: 2 };
        assert_eq!(choose(&halves), None);
    }
}
