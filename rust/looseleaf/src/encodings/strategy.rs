//! Choosing the encoding of each page from statistics of its values.
//!
//! The writer hands every page's [`DataBlock`] to a [`PageEncoder`], which measures the values
//! (range, runs, sortedness in one pass; distinct values on a sample, then exactly only when a
//! dictionary looks worth it; an FSST table trained on a sample) and estimates the size of each
//! applicable encoding from those measures rather than by trying them all:
//!
//! | values | candidates |
//! |---|---|
//! | integers (ints, dates, times, timestamps, durations, decimals up to 128 bits) | constant, bit-packed with a frame of reference, delta (non-decreasing), run-length, dictionary, plain |
//! | floats (also as fixed-size lists) | constant, run-length, dictionary, ALP-RD, plain |
//! | other fixed-width values | constant, run-length, dictionary, plain |
//! | booleans | constant, bitmap |
//! | strings and binaries | constant, dictionary, FSST, plain; offsets encoded as integers (delta) |
//!
//! Run-length and dictionary pages must beat the best block-addressable encoding clearly (their
//! random access reads all runs or the whole dictionary), and plain wins unless something saves
//! a tenth of it. An [`EncodingPolicy`] per column can force or forbid encodings.

use std::collections::HashSet;

use ahash::RandomState;
use arrow_buffer::{BooleanBuffer, Buffer, MutableBuffer};

use super::physical::integers::{BLOCK, bits_needed, read_int, write_int};
use super::physical::{alp, alp_rd, bitpacked, delta, encode_block, fsst, onpair};
use super::policy::{EncodingKind, EncodingPolicy};
use super::statistics::ValueKind;
use super::{DataBlock, FixedWidthBlock, VariableWidthBlock};
use crate::error::{Result, bail};
use crate::format::proto::{self, encoding::Kind};

/// A set hashed with aHash: its values come from the data, counted and compared many times.
type FastSet<T> = HashSet<T, RandomState>;

/// Encodes the pages of one column.
#[derive(Debug, Clone)]
pub struct PageEncoder {
    kind: ValueKind,
    policy: EncodingPolicy,
}

/// Pages of fewer values than this are written plain (nothing is worth its overhead).
const MIN_VALUES: u64 = 16;
/// Pages of strings of fewer bytes than this are not tried with OnPair (as FSST does not train
/// on them): a dictionary would not pay for itself.
const ONPAIR_MIN_BYTES: usize = 1024;
/// Pages of strings shorter than this on average are not tried with OnPair (see
/// `encode_strings`).
const ONPAIR_MIN_MEAN_BYTES: usize = 8;

impl PageEncoder {
    /// An encoder of values of `kind` under `policy`.
    pub fn new(kind: ValueKind, policy: EncodingPolicy) -> Self {
        Self { kind, policy }
    }

    /// Writes `block` into `buffers` (appending) and returns its encoding tree.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if the policy forces an encoding that cannot store the page.
    pub fn encode(&self, block: DataBlock, buffers: &mut Vec<Buffer>) -> Result<proto::Encoding> {
        // Dictionary input keeps its dictionary unless the policy rules dictionaries out
        // (forbidden, or another encoding forced): its values are then encoded as any others.
        let policy = &self.policy;
        let block = if block.dictionary().is_some()
            && (!policy.allows(EncodingKind::Dictionary)
                || policy.force.is_some_and(|kind| kind != EncodingKind::Dictionary))
        {
            block.materialize()?
        } else {
            block
        };
        match block {
            DataBlock::AllNull { .. } => encode_block(block, buffers),
            DataBlock::Nullable { validity, values } => {
                let values = fill_nulls(*values, &validity)?;
                buffers.push(validity.sliced());
                let validity_buffer = (buffers.len() - 1) as u32;
                // Strings keep whatever their null slots hold (`fill_nulls` cannot make them
                // equal without storing bytes): their valid values alone decide a constant.
                let constant_allowed = policy.allows(EncodingKind::Constant)
                    && policy.force.map_or(validity.len() as u64 >= MIN_VALUES, |k| k == EncodingKind::Constant);
                let values = match constant_strings(&values, &validity) {
                    Some(value) if constant_allowed => constant(0, value),
                    _ => self.encode_values(values, buffers, policy)?,
                };
                Ok(node(Kind::Nullable(proto::NullableEncoding { validity_buffer, values: Some(Box::new(values)) })))
            }
            other => self.encode_values(other, buffers, &self.policy),
        }
    }

    fn encode_values(
        &self,
        block: DataBlock,
        buffers: &mut Vec<Buffer>,
        policy: &EncodingPolicy,
    ) -> Result<proto::Encoding> {
        let forced = policy.force;
        match (block, self.kind) {
            (DataBlock::Dictionary { indices, dictionary }, _) => {
                // Dictionary input: its indices as integers, its values as this column's kind.
                let DataBlock::FixedWidth(indices) = *indices else {
                    bail!(internal, "dictionary indices are not integers")
                };
                let nested = policy.nested();
                let index_bytes = (indices.bits_per_value / 8) as u32;
                let dictionary_size = dictionary.num_values();
                let indices = encode_integers(&indices, false, &nested, buffers)?;
                let dictionary = self.encode_values(dictionary.as_ref().clone(), buffers, &nested)?;
                Ok(node(Kind::Dictionary(proto::DictionaryEncoding {
                    dictionary_size,
                    index_bytes,
                    indices: Some(Box::new(indices)),
                    dictionary: Some(Box::new(dictionary)),
                })))
            }
            (DataBlock::FixedWidth(values), ValueKind::Integer { signed }) if integer_width(&values) => {
                if let Some(kind) = forced {
                    return force_fixed(kind, values, Some(signed), buffers, policy, self);
                }
                encode_integers(&values, signed, policy, buffers)
            }
            (DataBlock::FixedWidth(values), _) => {
                if let Some(kind) = forced {
                    return force_fixed(kind, values, None, buffers, policy, self);
                }
                self.encode_fixed(values, buffers, policy)
            }
            (DataBlock::Boolean(bits), _) => {
                if forced.is_none_or(|k| k == EncodingKind::Constant) && policy.allows(EncodingKind::Constant) {
                    let ones = bits.count_set_bits();
                    if bits.is_empty() || ones == 0 || ones == bits.len() {
                        return Ok(constant(1, vec![u8::from(ones > 0)]));
                    }
                    if forced.is_some() {
                        bail!(invalid, "a page of booleans that are not all equal cannot be written constant");
                    }
                }
                check_forced(forced, &[EncodingKind::Plain])?;
                encode_block(DataBlock::Boolean(bits), buffers)
            }
            (DataBlock::VariableWidth(values), _) => self.encode_strings(values, buffers, policy),
            (DataBlock::FixedSizeList { dimension, values }, _)
                if matches!(*values, DataBlock::FixedWidth(_) | DataBlock::FixedSizeList { .. }) =>
            {
                // The items as values of their own: plain items stay one plain buffer of
                // `dimension`-times wider values (decoded without a copy), others get a node.
                let items = self.encode_values(*values, buffers, policy)?;
                Ok(match items.kind {
                    Some(Kind::Plain(plain)) if plain.bits_per_value > 1 => node(Kind::Plain(proto::PlainEncoding {
                        bits_per_value: plain.bits_per_value * dimension,
                        ..plain
                    })),
                    _ => node(Kind::FixedSizeList(proto::FixedSizeListEncoding {
                        dimension,
                        values: Some(Box::new(items)),
                    })),
                })
            }
            (other, _) => {
                check_forced(forced, &[EncodingKind::Plain])?;
                encode_block(other, buffers)
            }
        }
    }

    /// Fixed-width values that are not integers: constant, run-length, dictionary or plain.
    fn encode_fixed(
        &self,
        values: FixedWidthBlock,
        buffers: &mut Vec<Buffer>,
        policy: &EncodingPolicy,
    ) -> Result<proto::Encoding> {
        let w = (values.bits_per_value / 8) as usize;
        let n = values.num_values as usize;
        if n as u64 >= MIN_VALUES && w > 0 {
            let rows = values.data.as_slice().chunks_exact(w).take(n);
            let runs = count_runs(values.data.as_slice(), w, n);
            if policy.allows(EncodingKind::Constant) && runs == 1 {
                return Ok(constant(
                    values.bits_per_value,
                    rows.clone().next().map(|r| r.to_vec()).unwrap_or_default(),
                ));
            }
            let plain = (n * w) as u64;
            if policy.allows(EncodingKind::Rle) && runs * (w as u64 + 4) * 2 < plain {
                return encode_rle(DataBlock::FixedWidth(values), self, buffers, policy);
            }
            if policy.allows(EncodingKind::Dictionary)
                && let Some((distinct, _)) = small_distinct(rows, n)
                && (distinct * w) as u64 + (n as u64 * index_bits(distinct) as u64).div_ceil(8) < plain / 2
            {
                return encode_dictionary(DataBlock::FixedWidth(values), self, buffers, policy);
            }
            // Plain unless ALP or ALP-RD saves a tenth of it: ALP if estimated smaller.
            if self.kind == ValueKind::Float {
                let split = policy.allows(EncodingKind::AlpRd).then(|| alp_rd::choose(&values)).flatten();
                let split_bytes = split.as_ref().map_or(u64::MAX, |split| split.estimated_bytes);
                if policy.allows(EncodingKind::Alp)
                    && let Some(choice) = alp::choose(&values)
                    && choice.estimated_bytes * 10 < plain * 9
                    && choice.estimated_bytes < split_bytes
                    && let Some(encoding) = encode_alp(&values, &choice, plain * 9 / 10, buffers, policy)?
                {
                    return Ok(node(Kind::Alp(encoding)));
                }
                if let Some(split) = split
                    && split.estimated_bytes * 10 < plain * 9
                    && let Some(encoding) = alp_rd::encode(&values, &split, plain * 9 / 10, buffers)?
                {
                    return Ok(node(Kind::AlpRd(encoding)));
                }
            }
        }
        encode_block(DataBlock::FixedWidth(values), buffers)
    }

    /// Strings and binaries: constant, dictionary, FSST or plain, with encoded offsets.
    fn encode_strings(
        &self,
        values: VariableWidthBlock,
        buffers: &mut Vec<Buffer>,
        policy: &EncodingPolicy,
    ) -> Result<proto::Encoding> {
        let values = VariableWidthBlock::concat(&[values])?;
        let n = values.num_values as usize;
        let offsets = values.offsets_u64()?;
        let data = values.data.as_slice();
        let strings: Vec<&[u8]> = offsets.windows(2).map(|w| &data[w[0] as usize..w[1] as usize]).collect();
        let plain = data.len() as u64 + (n as u64 * 2);
        match policy.force {
            Some(EncodingKind::Constant) if strings.windows(2).all(|p| p[0] == p[1]) => {
                return Ok(constant(0, strings.first().map(|s| s.to_vec()).unwrap_or_default()));
            }
            Some(EncodingKind::Constant) => {
                bail!(invalid, "a page of strings that are not all equal cannot be written constant")
            }
            Some(EncodingKind::Dictionary) => {
                return encode_dictionary(DataBlock::VariableWidth(values), self, buffers, policy);
            }
            Some(EncodingKind::Rle) => return encode_rle(DataBlock::VariableWidth(values), self, buffers, policy),
            Some(EncodingKind::Fsst) => {
                return match fsst::train(&strings).and_then(|trained| trained.compress(&strings)) {
                    Some((table, codes)) => encode_fsst(table, codes, &strings, buffers, policy),
                    None => bail!(invalid, "FSST does not compress this page"),
                };
            }
            Some(EncodingKind::OnPair) => {
                return match onpair::compress(data, &offsets) {
                    Some(compressed) => encode_onpair(compressed, &strings, buffers, policy),
                    None => bail!(invalid, "OnPair cannot encode this page"),
                };
            }
            Some(EncodingKind::Plain) | None => {}
            Some(other) => bail!(invalid, "{} cannot encode strings", other.name()),
        }
        if policy.force.is_none() && n as u64 >= MIN_VALUES {
            // Trained at most once, when first needed (dictionary candidates weigh it).
            let trained = std::cell::OnceCell::new();
            let trained_fsst = || {
                trained
                    .get_or_init(|| policy.allows(EncodingKind::Fsst).then(|| fsst::train(&strings)).flatten())
                    .as_ref()
            };
            if policy.allows(EncodingKind::Constant) && strings.windows(2).all(|p| p[0] == p[1]) {
                return Ok(constant(0, strings.first().map(|s| s.to_vec()).unwrap_or_default()));
            }
            if policy.allows(EncodingKind::Dictionary)
                && let Some((distinct, distinct_bytes)) = small_distinct(strings.iter().copied(), n)
            {
                let dictionary = distinct_bytes + (n as u64 * index_bits(distinct) as u64).div_ceil(8);
                // A dictionary must also beat FSST clearly: a read gathers its values row by
                // row, where FSST decodes the page's bytes in one pass (on the wide table's
                // columns of 5,000 short values, a dictionary 18% smaller read 11% slower).
                let fsst = trained_fsst().map(|trained| trained.estimated_size(&strings));
                if dictionary < plain / 2 && fsst.is_none_or(|fsst| dictionary * 3 < fsst * 2) {
                    return encode_dictionary(DataBlock::VariableWidth(values), self, buffers, policy);
                }
            }
            // OnPair where it stores the page in at most three quarters of FSST's bytes (its
            // tokens of up to 16 bytes take whole words). A code costs about twice an FSST
            // code to decode (unpacking, a 16-byte copy), so OnPair reads as fast only with
            // far fewer codes: text and TPC-H comments take 0.6 of FSST's bytes and scan about
            // as fast (warm 0.92x the time); the embeddings captions took 0.9 and their
            // projection 1.17x the time. FSST's sample tells first
            // whether the page is worth a try. A dictionary learnt from 32 KiB is small, so
            // OnPair's codes on the sample come out near FSST's where it wins on the page (0.99
            // to 1.06 of FSST's for text, TPC-H comments and captions, which then take 0.6 to
            // 0.9 of FSST's bytes) and well above where it loses (1.49 for the wide table's
            // values of 5 bytes, then 1.26): OnPair runs on the page only below 1.25. Values
            // of fewer than 8 bytes on average are not even sampled (0.7 ms a page: a tenth
            // of the wide table's write): each takes at least one code and half a byte of
            // padding, where FSST takes a byte or two.
            let fsst_size = trained_fsst().map(|trained| trained.estimated_size(&strings));
            let onpair_promising = || match trained_fsst() {
                Some(trained) => onpair::sample_code_bytes(&strings, trained.sample())
                    .is_some_and(|codes| codes * 4 < trained.sample_code_bytes(&strings) * 5),
                None => true,
            };
            if policy.allows(EncodingKind::OnPair)
                && data.len() >= ONPAIR_MIN_BYTES
                && data.len() >= ONPAIR_MIN_MEAN_BYTES * n
                && onpair_promising()
                && let Some(compressed) = onpair::compress(data, &offsets)
                && compressed.size() * 10 < data.len() as u64 * 8
                && fsst_size.is_none_or(|fsst| compressed.size() * 4 < fsst * 3)
            {
                return encode_onpair(compressed, &strings, buffers, policy);
            }
            if let Some(trained) = trained_fsst()
                && let Some((table, codes)) = trained.compress(&strings)
                && (codes.data.len() as u64 + table.len() as u64) * 10 < data.len() as u64 * 8
            {
                return encode_fsst(table, codes, &strings, buffers, policy);
            }
        }
        encode_binary(values, buffers, policy)
    }
}

fn node(kind: Kind) -> proto::Encoding {
    proto::Encoding { kind: Some(kind) }
}

fn constant(bits_per_value: u64, value: Vec<u8>) -> proto::Encoding {
    node(Kind::Constant(proto::ConstantEncoding { bits_per_value, value }))
}

fn check_forced(forced: Option<EncodingKind>, possible: &[EncodingKind]) -> Result<()> {
    match forced {
        Some(kind) if !possible.contains(&kind) => {
            bail!(invalid, "the {} encoding cannot store this page", kind.name())
        }
        _ => Ok(()),
    }
}

/// Whether fixed-width values are integers the integer encodings handle (1 to 16 bytes).
fn integer_width(values: &FixedWidthBlock) -> bool {
    matches!(values.bits_per_value, 8 | 16 | 32 | 64 | 128)
}

/// Runs of equal consecutive values among the first `n` values of `width` bytes in `data` (1
/// for none). Values of 1 to 16 bytes are compared as arrays the compiler compares as integers
/// (a slice comparison per value, `memcmp`, cost as much as the rest of an embeddings write).
fn count_runs(data: &[u8], width: usize, n: usize) -> u64 {
    fn runs<const W: usize>(data: &[u8], n: usize) -> u64 {
        let mut values = data.chunks_exact(W).take(n).map(|c| <[u8; W]>::try_from(c).unwrap_or([0; W]));
        let Some(mut previous) = values.next() else { return 1 };
        let mut runs = 1;
        for value in values {
            runs += u64::from(value != previous);
            previous = value;
        }
        runs
    }
    match width {
        1 => runs::<1>(data, n),
        2 => runs::<2>(data, n),
        4 => runs::<4>(data, n),
        8 => runs::<8>(data, n),
        16 => runs::<16>(data, n),
        _ => {
            let rows: Vec<&[u8]> = data.chunks_exact(width.max(1)).take(n).collect();
            1 + rows.windows(2).filter(|p| p[0] != p[1]).count() as u64
        }
    }
}

/// Bits of an index into `distinct` values.
fn index_bits(distinct: usize) -> u32 {
    bits_needed(distinct.saturating_sub(1) as u128).max(1)
}

/// The number of distinct values and their total length, if there are few: at most a quarter
/// of the values, and at most 65536.
///
/// A sample of about 1024 values spread over the page rules out pages that clearly have more:
/// with `d` distinct values, a sample of `s` holds about `s² / 2d` repeats (the birthday
/// bound), so a sample with fewer than a quarter of the repeats the limit would give is not
/// counted. (A sample with a quarter distinct values, the test this replaces, turned away a
/// vocabulary of 5,000 words in 800,000 values.) The exact count stops at the limit.
fn small_distinct<'a>(values: impl Iterator<Item = &'a [u8]> + Clone, n: usize) -> Option<(usize, u64)> {
    let limit = (n / 4).clamp(1, 65536);
    let step = (n / 1024).max(1);
    let sample: FastSet<&[u8]> = values.clone().step_by(step).collect();
    let sampled = n.div_ceil(step);
    let repeats = sampled - sample.len();
    let repeats_at_limit = sampled * sampled / (2 * limit);
    if repeats * 4 < repeats_at_limit {
        return None;
    }
    let mut seen = FastSet::default();
    for value in values {
        seen.insert(value);
        if seen.len() > limit {
            return None;
        }
    }
    Some((seen.len(), seen.iter().map(|value| value.len() as u64).sum()))
}

/// Integers: constant, bit-packed, delta, run-length, dictionary or plain, whichever is
/// estimated smallest (run-length and dictionary only when clearly so).
fn encode_integers(
    values: &FixedWidthBlock,
    signed: bool,
    policy: &EncodingPolicy,
    buffers: &mut Vec<Buffer>,
) -> Result<proto::Encoding> {
    let w = (values.bits_per_value / 8) as usize;
    let n = values.num_values as usize;
    if (n as u64) < MIN_VALUES {
        return encode_block(DataBlock::FixedWidth(values.clone()), buffers);
    }
    let IntegerMeasures { min, max, runs, delta_width } = measure_integers(values.data.as_slice(), w, n, signed);
    if min == max && policy.allows(EncodingKind::Constant) {
        let mut value = vec![0u8; w];
        write_int(min, &mut value);
        return Ok(constant(values.bits_per_value, value));
    }
    let blocks = n.div_ceil(BLOCK) as u64;
    let plain = (n * w) as u64;
    let range_bits = bits_needed(max.wrapping_sub(min) as u128);
    let lane_bits = (w.min(8) * 8) as u32;
    let mut best = (plain, EncodingKind::Plain);
    let consider = |best: &mut (u64, EncodingKind), size: u64, kind: EncodingKind| {
        if policy.allows(kind) && size < best.0 {
            *best = (size, kind);
        }
    };
    if range_bits <= lane_bits {
        consider(&mut best, blocks * 128 * range_bits as u64, EncodingKind::Bitpacked);
    }
    if w <= 8
        && let Some(width) = delta_width
    {
        consider(&mut best, blocks * (w as u64 + 128 * width as u64), EncodingKind::Delta);
    }
    let block_addressable = best.0;
    let rle = runs * ((range_bits as u64).div_ceil(8) + 2) + 256;
    // The run values are encoded by this function again: without at least halving the values,
    // a page whose estimate favours runs (16-byte values of a small range, whose partial block
    // costs more than the runs) would recurse without end.
    if runs * 2 <= n as u64 && rle * 2 < block_addressable {
        consider(&mut best, rle, EncodingKind::Rle);
    }
    // Plain unless something saves a tenth of it.
    if best.1 != EncodingKind::Plain && best.0 * 10 > plain * 9 {
        best = (plain, EncodingKind::Plain);
    }
    match best.1 {
        EncodingKind::Bitpacked => {
            let encoding = bitpacked::encode(values, signed, min, max, buffers)?;
            Ok(node(Kind::Bitpacked(encoding)))
        }
        EncodingKind::Delta => {
            let ints: Vec<i128> = values.data.as_slice().chunks_exact(w).take(n).map(|v| read_int(v, signed)).collect();
            Ok(node(Kind::Delta(delta::encode(&ints, w, delta_width.unwrap_or(64), buffers)?)))
        }
        EncodingKind::Rle => {
            let encoder = PageEncoder::new(ValueKind::Integer { signed }, policy.nested());
            encode_rle(DataBlock::FixedWidth(values.clone()), &encoder, buffers, policy)
        }
        _ => encode_block(DataBlock::FixedWidth(values.clone()), buffers),
    }
}

/// What [`encode_integers`] measures of a page's values to choose its encoding.
struct IntegerMeasures {
    min: i128,
    max: i128,
    /// Runs of equal consecutive values.
    runs: u64,
    /// The width of the differences within blocks, as [`delta::difference_width`] gives it:
    /// `None` if the values decrease somewhere.
    delta_width: Option<u32>,
}

/// The measures of the first `n` integers of `width` bytes in `data`, in one pass and without
/// materialising the values (widening every value of a page to `i128` first cost a sixth of a
/// lineitem write). Values are compared as `i128`s, sign- or zero-extended as [`read_int`]
/// reads them.
fn measure_integers(data: &[u8], width: usize, n: usize, signed: bool) -> IntegerMeasures {
    macro_rules! measure {
        ($t:ty) => {{
            const W: usize = std::mem::size_of::<$t>();
            measure!(W, |c: &[u8]| <$t>::from_le_bytes(c.try_into().unwrap_or([0; W])) as i128)
        }};
        ($w:expr, $read:expr) => {{
            let mut values = data.chunks_exact($w).take(n).map($read);
            let Some(first) = values.next() else {
                return IntegerMeasures { min: 0, max: 0, runs: 0, delta_width: Some(0) };
            };
            let (mut min, mut max, mut previous) = (first, first, first);
            let (mut runs, mut non_decreasing, mut widest) = (1u64, true, 0u128);
            for (i, value) in values.enumerate() {
                min = min.min(value);
                max = max.max(value);
                runs += u64::from(value != previous);
                if value < previous {
                    non_decreasing = false;
                } else if (i + 1) % BLOCK != 0 {
                    // Non-negative, so the wrapping difference is the exact one.
                    widest = widest.max((value as u128).wrapping_sub(previous as u128));
                }
                previous = value;
            }
            IntegerMeasures { min, max, runs, delta_width: non_decreasing.then(|| bits_needed(widest)) }
        }};
    }
    match (width, signed) {
        (1, true) => measure!(i8),
        (1, false) => measure!(u8),
        (2, true) => measure!(i16),
        (2, false) => measure!(u16),
        (4, true) => measure!(i32),
        (4, false) => measure!(u32),
        (8, true) => measure!(i64),
        (8, false) => measure!(u64),
        (16, true) => measure!(i128),
        (16, false) => measure!(u128),
        _ => measure!(width.max(1), |c: &[u8]| read_int(c, signed)),
    }
}

/// Forces `kind` on fixed-width values (`signed` set for integers).
fn force_fixed(
    kind: EncodingKind,
    values: FixedWidthBlock,
    signed: Option<bool>,
    buffers: &mut Vec<Buffer>,
    policy: &EncodingPolicy,
    encoder: &PageEncoder,
) -> Result<proto::Encoding> {
    let w = (values.bits_per_value / 8) as usize;
    let n = values.num_values as usize;
    let rows = || values.data.as_slice().chunks_exact(w.max(1)).take(n);
    match (kind, signed) {
        (EncodingKind::Plain, _) => encode_block(DataBlock::FixedWidth(values), buffers),
        (EncodingKind::Constant, _) => {
            let first = rows().next().map(|r| r.to_vec()).unwrap_or_default();
            if rows().any(|r| r != first.as_slice()) {
                bail!(invalid, "a page whose values are not all equal cannot be written constant");
            }
            Ok(constant(values.bits_per_value, first))
        }
        (EncodingKind::Bitpacked, Some(signed)) if w <= 16 => {
            let ints: Vec<i128> = rows().map(|v| read_int(v, signed)).collect();
            let (min, max) = ints.iter().fold((i128::MAX, i128::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
            let (min, max) = if ints.is_empty() { (0, 0) } else { (min, max) };
            if bits_needed(max.wrapping_sub(min) as u128) > (w.min(8) * 8) as u32 {
                bail!(invalid, "the values' range is too wide to bit-pack");
            }
            Ok(node(Kind::Bitpacked(bitpacked::encode(&values, signed, min, max, buffers)?)))
        }
        (EncodingKind::Delta, Some(signed)) if w <= 8 => {
            let ints: Vec<i128> = rows().map(|v| read_int(v, signed)).collect();
            let Some(width) = delta::difference_width(&ints) else {
                bail!(invalid, "delta encoding needs non-decreasing values");
            };
            Ok(node(Kind::Delta(delta::encode(&ints, w, width, buffers)?)))
        }
        (EncodingKind::AlpRd, None) if encoder.kind == ValueKind::Float => {
            let Some(split) = alp_rd::choose(&values) else {
                bail!(invalid, "ALP-RD stores float32 and float64 values only");
            };
            match alp_rd::encode(&values, &split, u64::MAX, buffers)? {
                Some(encoding) => Ok(node(Kind::AlpRd(encoding))),
                None => bail!(internal, "ALP-RD refused a page without a size limit"),
            }
        }
        (EncodingKind::Alp, None) if encoder.kind == ValueKind::Float => {
            let Some(choice) = alp::choose(&values) else {
                bail!(invalid, "ALP stores float32 and float64 values only");
            };
            match encode_alp(&values, &choice, u64::MAX, buffers, policy)? {
                Some(encoding) => Ok(node(Kind::Alp(encoding))),
                None => bail!(internal, "ALP refused a page without a size limit"),
            }
        }
        (EncodingKind::Rle, _) => encode_rle(DataBlock::FixedWidth(values), encoder, buffers, policy),
        (EncodingKind::Dictionary, _) => encode_dictionary(DataBlock::FixedWidth(values), encoder, buffers, policy),
        (other, _) => bail!(invalid, "the {} encoding cannot store these values", other.name()),
    }
}

/// ALP with `choice`, if its buffers take at most `limit` bytes (else nothing is added to
/// `buffers`). The integers are encoded as a page of integers would be, but never run-length or
/// dictionary encoded: those would decode to something other than one integer per row.
fn encode_alp(
    values: &FixedWidthBlock,
    choice: &alp::AlpChoice,
    limit: u64,
    buffers: &mut Vec<Buffer>,
    policy: &EncodingPolicy,
) -> Result<Option<proto::AlpEncoding>> {
    let mut integers_policy = policy.nested();
    integers_policy.forbid.extend([EncodingKind::Rle, EncodingKind::Dictionary]);
    let before = buffers.len();
    let encoding = alp::encode(values, choice, buffers, |integers, buffers| {
        encode_integers(integers, true, &integers_policy, buffers)
    })?;
    let bytes: u64 = buffers[before..].iter().map(|buffer| buffer.len() as u64).sum();
    if bytes > limit {
        buffers.truncate(before);
        return Ok(None);
    }
    Ok(Some(encoding))
}

/// Run-length: the run values (encoded by `encoder`) and the run ends (as 32-bit integers).
fn encode_rle(
    block: DataBlock,
    encoder: &PageEncoder,
    buffers: &mut Vec<Buffer>,
    policy: &EncodingPolicy,
) -> Result<proto::Encoding> {
    let n = block.num_values() as usize;
    if n > u32::MAX as usize {
        bail!(invalid, "run-length pages hold at most 2^32 rows");
    }
    let mut starts = Vec::new();
    let mut ends: Vec<u32> = Vec::new();
    {
        let key = |i: usize| -> Result<Vec<u8>> {
            Ok(match &block {
                DataBlock::FixedWidth(b) => {
                    let w = (b.bits_per_value / 8) as usize;
                    b.data.as_slice()[i * w..(i + 1) * w].to_vec()
                }
                DataBlock::VariableWidth(b) => {
                    let (s, e) = (b.offset_at(i).unwrap_or(0) as usize, b.offset_at(i + 1).unwrap_or(0) as usize);
                    b.data.as_slice().get(s..e).unwrap_or_default().to_vec()
                }
                _ => bail!(internal, "run-length encoding of this kind of values"),
            })
        };
        let mut previous: Option<Vec<u8>> = None;
        for i in 0..n {
            let current = key(i)?;
            if previous.as_ref() != Some(&current) {
                if i > 0 {
                    ends.push(i as u32);
                }
                starts.push(i);
                previous = Some(current);
            }
        }
        if n > 0 {
            ends.push(n as u32);
        }
    }
    let values = block.gather(&starts)?;
    let nested = policy.nested();
    let values = encoder.encode_values(values, buffers, &nested)?;
    let mut end_bytes = MutableBuffer::with_capacity(ends.len() * 4);
    for end in &ends {
        end_bytes.extend_from_slice(&end.to_le_bytes());
    }
    let ends_block = FixedWidthBlock { data: end_bytes.into(), bits_per_value: 32, num_values: ends.len() as u64 };
    let run_ends = encode_integers(&ends_block, false, &nested, buffers)?;
    Ok(node(Kind::Rle(proto::RleEncoding {
        num_runs: ends.len() as u64,
        values: Some(Box::new(values)),
        run_ends: Some(Box::new(run_ends)),
    })))
}

/// Dictionary: the distinct values (encoded by `encoder`) and indices of 1, 2 or 4 bytes
/// (encoded as integers).
fn encode_dictionary(
    block: DataBlock,
    encoder: &PageEncoder,
    buffers: &mut Vec<Buffer>,
    policy: &EncodingPolicy,
) -> Result<proto::Encoding> {
    let (indices, dictionary) = super::logical::dictionary::hash_encode(block)?;
    let DataBlock::FixedWidth(indices) = indices else { bail!(internal, "hashed indices are not integers") };
    let size = dictionary.num_values();
    let index_bytes: usize = match size {
        0..=256 => 1,
        257..=65536 => 2,
        _ => 4,
    };
    let mut narrow = MutableBuffer::with_capacity(indices.num_values as usize * index_bytes);
    for index in indices.data.as_slice().chunks_exact(4) {
        narrow.extend_from_slice(&index[..index_bytes]);
    }
    let indices =
        FixedWidthBlock { data: narrow.into(), bits_per_value: index_bytes as u64 * 8, num_values: indices.num_values };
    let nested = policy.nested();
    let indices = encode_integers(&indices, false, &nested, buffers)?;
    let mut values_policy = nested;
    values_policy.forbid.insert(EncodingKind::Dictionary);
    let dictionary = encoder.encode_values(dictionary, buffers, &values_policy)?;
    Ok(node(Kind::Dictionary(proto::DictionaryEncoding {
        dictionary_size: size,
        index_bytes: index_bytes as u32,
        indices: Some(Box::new(indices)),
        dictionary: Some(Box::new(dictionary)),
    })))
}

/// An FSST node: the table, the codes and each value's decompressed length (`strings`, the
/// values compressed), which lets a scan decompress a batch in one pass.
fn encode_fsst(
    table: Buffer,
    codes: VariableWidthBlock,
    strings: &[&[u8]],
    buffers: &mut Vec<Buffer>,
    policy: &EncodingPolicy,
) -> Result<proto::Encoding> {
    buffers.push(table);
    let symbols_buffer = (buffers.len() - 1) as u32;
    let codes = encode_binary(codes, buffers, &policy.nested())?;
    let lengths = value_lengths(strings);
    let lengths = encode_integers(&lengths, false, &policy.nested(), buffers)?;
    Ok(node(Kind::Fsst(proto::FsstEncoding {
        symbols_buffer,
        codes: Some(Box::new(codes)),
        decoded_lengths: Some(Box::new(lengths)),
    })))
}

/// An OnPair node: the dictionary, the packed codes and each value's decoded length (`strings`,
/// the values encoded), which lets a scan size its output before decoding.
fn encode_onpair(
    compressed: onpair::Compressed,
    strings: &[&[u8]],
    buffers: &mut Vec<Buffer>,
    policy: &EncodingPolicy,
) -> Result<proto::Encoding> {
    buffers.push(compressed.dictionary);
    let dictionary_buffer = (buffers.len() - 1) as u32;
    let codes = encode_binary(compressed.codes, buffers, &policy.nested())?;
    let lengths = value_lengths(strings);
    let lengths = encode_integers(&lengths, false, &policy.nested(), buffers)?;
    Ok(node(Kind::OnPair(proto::OnPairEncoding {
        dictionary_buffer,
        num_tokens: compressed.num_tokens,
        code_bits: compressed.code_bits,
        codes: Some(Box::new(codes)),
        decoded_lengths: Some(Box::new(lengths)),
    })))
}

/// Each of `strings`' length in bytes, as 32-bit integers where they all fit.
fn value_lengths(strings: &[&[u8]]) -> FixedWidthBlock {
    let num_values = strings.len() as u64;
    if strings.iter().all(|s| s.len() <= u32::MAX as usize) {
        let data = Buffer::from_vec(strings.iter().map(|s| s.len() as u32).collect::<Vec<u32>>());
        FixedWidthBlock { data, bits_per_value: 32, num_values }
    } else {
        let data = Buffer::from_vec(strings.iter().map(|s| s.len() as u64).collect::<Vec<u64>>());
        FixedWidthBlock { data, bits_per_value: 64, num_values }
    }
}

/// Variable-width values with their offsets encoded as integers (delta, usually).
fn encode_binary(
    values: VariableWidthBlock,
    buffers: &mut Vec<Buffer>,
    policy: &EncodingPolicy,
) -> Result<proto::Encoding> {
    let values = VariableWidthBlock::concat(&[values])?;
    let offsets = FixedWidthBlock {
        data: values.offsets.clone(),
        bits_per_value: values.bits_per_offset as u64,
        num_values: values.num_values + 1,
    };
    let offsets = encode_integers(&offsets, false, &policy.nested(), buffers)?;
    buffers.push(values.data);
    let data_buffer = (buffers.len() - 1) as u32;
    Ok(node(Kind::Binary(proto::BinaryEncoding {
        bits_per_offset: values.bits_per_offset,
        offsets_buffer: 0,
        data_buffer,
        offsets: Some(Box::new(offsets)),
    })))
}

/// The value of every valid row of a block of strings, if they are all equal (and one is valid).
fn constant_strings(values: &DataBlock, validity: &BooleanBuffer) -> Option<Vec<u8>> {
    let DataBlock::VariableWidth(block) = values else { return None };
    let mut first: Option<&[u8]> = None;
    for i in validity.set_indices() {
        let (start, end) = (block.offset_at(i)?, block.offset_at(i + 1)?);
        let value = block.data.as_slice().get(start as usize..end as usize)?;
        match first {
            Some(first) if first != value => return None,
            _ => first = Some(value),
        }
    }
    first.map(<[u8]>::to_vec)
}

/// Replaces the values of null slots by a neighbouring valid value, so that they widen no range
/// and break no run or order (readers ignore them).
fn fill_nulls(values: DataBlock, validity: &BooleanBuffer) -> Result<DataBlock> {
    let DataBlock::FixedWidth(block) = values else { return Ok(values) };
    let w = (block.bits_per_value / 8) as usize;
    let Some(first_valid) = validity.set_indices().next() else { return Ok(DataBlock::FixedWidth(block)) };
    if w == 0 || validity.count_set_bits() == validity.len() {
        return Ok(DataBlock::FixedWidth(block));
    }
    let mut data = block.data.as_slice().to_vec();
    let mut previous = first_valid;
    for i in 0..(block.num_values as usize).min(validity.len()) {
        if validity.value(i) {
            previous = i;
        } else {
            data.copy_within(previous * w..(previous + 1) * w, i * w);
        }
    }
    Ok(DataBlock::FixedWidth(FixedWidthBlock { data: Buffer::from_vec(data), ..block }))
}
