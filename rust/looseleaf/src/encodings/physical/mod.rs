//! Physical encodings, one file per byte layout, and the two functions that connect them to the
//! metadata: [`page_scheduler`] builds the scheduler tree of a page from its encoding tree
//! (checking every buffer reference and size, so a damaged page fails here rather than in a
//! decoder), and [`encode_block`] writes a [`DataBlock`] into buffers and returns its encoding
//! tree.
//!
//! | encoding | buffers | random access to one value |
//! |---|---|---|
//! | [`plain`] | values | one read of the value's bytes |
//! | [`bitmap`] | bits | one read of the byte holding the bit |
//! | [`binary`] | offsets, data | two dependent reads: two offsets, then the bytes |
//! | [`nullable`] | validity bitmap + child | the child's cost plus one byte |
//! | all-null | none | none |
//! | [`list_offsets`] | offsets | one read of two offsets (the items are in other columns) |
//! | [`fixed_size_list`] | the child's | the child's, for `dimension` values |
//! | [`bitpacked`] | packed blocks of 1024 | one block (`128 × bit_width` bytes) |
//! | [`delta`] | bases, packed differences | one block and its base |
//! | [`constant`] | none | none |
//! | [`rle`] | run values, run ends (children) | all runs (the writer uses it when they are few) |
//! | [`dictionary`] | indices, dictionary (children) | an index's cost plus the whole dictionary (small by choice) |
//! | [`fsst`] | symbol table, codes (a binary child) | the symbol table plus a binary read |
//! | [`alp_rd`] | blocks of 1024 (codes, right parts), exceptions | one block and the page's exceptions |
//! | [`alp`] | exceptions + the integers' (a child) | the integer's cost plus the page's exceptions |
//! | [`onpair`] | dictionary of tokens, codes (a binary child) | the dictionary plus a binary read |

pub mod alp;
pub mod alp_rd;
pub mod binary;
pub mod bitmap;
pub mod bitpacked;
mod coded_strings;
pub mod constant;
pub mod delta;
pub mod dictionary;
pub mod fixed_size_list;
pub mod fsst;
pub mod integers;
pub mod list_offsets;
pub mod nullable;
pub mod onpair;
pub mod plain;
pub mod rle;

use arrow_buffer::{BooleanBuffer, Buffer};

use super::{DataBlock, FixedWidthBlock, PageScheduler};
use crate::error::{Result, bail, ensure};
use crate::format::proto::{self, BufferLocation, encoding::Kind};

/// What a page scheduler needs to know about its page besides its encoding node.
#[derive(Debug, Clone, Copy)]
pub struct PageContext<'a> {
    /// The page's buffers.
    pub buffers: &'a [BufferLocation],
    /// Number of values in the page.
    pub num_rows: u64,
    /// End of the region where page buffers may lie (the file's metadata start).
    pub data_end: u64,
}

impl PageContext<'_> {
    /// The buffer `index`, checked to lie in the data region and to be `expected_size` long.
    pub fn buffer(&self, index: u32, expected_size: Option<u64>, what: &str) -> Result<BufferLocation> {
        let Some(buffer) = self.buffers.get(index as usize).copied() else {
            bail!(corrupt, "{what} refers to buffer {index} of a page with {} buffers", self.buffers.len())
        };
        ensure!(
            buffer.offset >= crate::format::HEADER_LEN
                && buffer.offset.checked_add(buffer.size).is_some_and(|end| end <= self.data_end),
            corrupt,
            "{what} buffer at {} of {} bytes lies outside the data region",
            buffer.offset,
            buffer.size
        );
        if let Some(expected) = expected_size {
            ensure!(
                buffer.size == expected,
                corrupt,
                "{what} buffer of a {}-row page is {} bytes, expected {expected}",
                self.num_rows,
                buffer.size
            );
        }
        Ok(buffer)
    }
}

/// A batch of a binary child that holds each row's codes (FSST, OnPair), checked: its `n + 1`
/// offsets are non-decreasing and within its data. Returns the offsets, the data and the
/// span `offsets[0]..offsets[n]` of the batch's codes (`what`: the encoding, for errors).
pub fn checked_codes(block: DataBlock, what: &str) -> Result<(Vec<u64>, Buffer, std::ops::Range<u64>)> {
    let DataBlock::VariableWidth(codes) = block else { bail!(corrupt, "{what} codes do not decode to binary values") };
    let offsets = codes.offsets_u64()?;
    let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
        bail!(corrupt, "{what} codes without offsets")
    };
    ensure!(first <= last && last as usize <= codes.data.len(), corrupt, "{what} code offsets out of range");
    ensure!(offsets.windows(2).all(|pair| pair[0] <= pair[1]), corrupt, "{what} code offsets decrease");
    Ok((offsets, codes.data, first..last))
}

/// The values of `lengths` (decoded lengths, 32- or 64-bit integers) where `selected` is set,
/// for a string page whose lengths' encoding cannot decode selected rows alone.
pub fn selected_lengths(lengths: DataBlock, selected: &BooleanBuffer, what: &str) -> Result<DataBlock> {
    let DataBlock::FixedWidth(lengths) = lengths else { bail!(corrupt, "{what} decoded lengths are not integers") };
    let width = (lengths.bits_per_value / 8) as usize;
    ensure!(
        matches!(width, 4 | 8) && lengths.data.len() >= selected.len() * width,
        corrupt,
        "{what} decoded lengths of {} bits, or too few",
        lengths.bits_per_value
    );
    let mut out = Vec::with_capacity(selected.count_set_bits() * width);
    for row in selected.set_indices() {
        out.extend_from_slice(&lengths.data.as_slice()[row * width..(row + 1) * width]);
    }
    Ok(DataBlock::FixedWidth(FixedWidthBlock {
        num_values: selected.count_set_bits() as u64,
        bits_per_value: lengths.bits_per_value,
        data: Buffer::from_vec(out),
    }))
}

/// The offsets of variable-width values from each one's length (`lengths`: 32- or 64-bit
/// integers, its `num_values` of them; `what`: the encoding, for errors). Returns the offsets
/// from 0, 32-bit where their sum fits Arrow's `Utf8` (at most `i32::MAX`), else 64-bit, their
/// width and their sum (saturated). The offsets are written at their final width in one pass:
/// a batch's offsets are fresh memory, and u64 offsets narrowed afterwards cost a first-read
/// `l_comment` scan 4–9% more.
pub fn offsets_from_lengths(lengths: &FixedWidthBlock, what: &str) -> Result<(Buffer, u32, u64)> {
    let n = lengths.num_values as usize;
    let width = match lengths.bits_per_value {
        32 => 4,
        64 => 8,
        bits => bail!(corrupt, "{what} decoded lengths of {bits} bits"),
    };
    let Some(bytes) = lengths.data.as_slice().get(..n.saturating_mul(width)) else {
        bail!(corrupt, "{what} decoded lengths decoded short")
    };
    let length = |c: &[u8]| match c {
        [a, b, c, d] => u32::from_le_bytes([*a, *b, *c, *d]) as u64,
        _ => u64::from_le_bytes(c.try_into().unwrap_or_default()),
    };
    let total = bytes.chunks_exact(width).fold(0u64, |sum, c| sum.saturating_add(length(c)));
    fn prefix_sum<T: arrow_buffer::ArrowNativeType + TryFrom<u64> + Default + std::ops::Add<Output = T>>(
        lengths: impl Iterator<Item = u64>,
        n: usize,
    ) -> Buffer {
        let mut out: Vec<T> = Vec::with_capacity(n + 1);
        let mut sum = T::default();
        out.push(sum);
        for length in lengths {
            sum = sum + T::try_from(length).unwrap_or_default();
            out.push(sum);
        }
        Buffer::from_vec(out)
    }
    let lengths = bytes.chunks_exact(width).map(length);
    Ok(if total <= i32::MAX as u64 {
        (prefix_sum::<u32>(lengths, n), 32, total)
    } else {
        (prefix_sum::<u64>(lengths, n), 64, total)
    })
}

/// Builds the scheduler of an encoding node.
///
/// # Errors
/// [`crate::Error::Corrupt`] if the node is missing, refers to missing buffers or buffers of
/// the wrong size; [`crate::Error::Unsupported`] for encodings this build does not know.
pub fn page_scheduler(encoding: Option<&proto::Encoding>, page: &PageContext) -> Result<Box<dyn PageScheduler>> {
    let Some(kind) = encoding.and_then(|e| e.kind.as_ref()) else {
        bail!(unsupported, "a page has an encoding this reader does not know (written by a newer version?)")
    };
    Ok(match kind {
        Kind::Plain(plain) if plain.bits_per_value == 1 => {
            Box::new(bitmap::BitmapScheduler::try_new(plain.buffer, page)?)
        }
        Kind::Plain(plain) => Box::new(plain::PlainScheduler::try_new(plain, page)?),
        Kind::Nullable(nullable) => Box::new(nullable::NullableScheduler::try_new(nullable, page)?),
        Kind::AllNull(_) => Box::new(nullable::AllNullScheduler::new(page.num_rows)),
        Kind::Binary(binary) => Box::new(binary::BinaryScheduler::try_new(binary, page)?),
        Kind::ListOffsets(offsets) => Box::new(list_offsets::ListOffsetsScheduler::try_new(offsets, page)?),
        Kind::FixedSizeList(list) => Box::new(fixed_size_list::FixedSizeListScheduler::try_new(list, page)?),
        Kind::Bitpacked(packed) => Box::new(bitpacked::BitpackedScheduler::try_new(packed, page)?),
        Kind::Delta(delta) => Box::new(delta::DeltaScheduler::try_new(delta, page)?),
        Kind::Constant(constant) => Box::new(constant::ConstantScheduler::try_new(constant, page.num_rows)?),
        Kind::Rle(rle) => Box::new(rle::RleScheduler::try_new(rle, page)?),
        Kind::Dictionary(dictionary) => Box::new(dictionary::DictionaryScheduler::try_new(dictionary, page)?),
        Kind::Fsst(fsst) => Box::new(fsst::FsstScheduler::try_new(fsst, page)?),
        Kind::AlpRd(alp_rd) => Box::new(alp_rd::AlpRdScheduler::try_new(alp_rd, page)?),
        Kind::Alp(alp) => Box::new(alp::AlpScheduler::try_new(alp, page)?),
        Kind::OnPair(onpair) => Box::new(onpair::OnPairScheduler::try_new(onpair, page)?),
    })
}

/// Whether a part of a page of this encoding costs about its share of the page's bytes to read
/// and decode: layouts where the bytes of a run of rows are found by arithmetic (plain values
/// and bitmaps, bit-packed blocks, ALP over those, ALP-RD blocks (whose few exceptions each
/// part loads again), and nullable or fixed-size-list wrappers of them). The reader may then
/// load a large page a part at a time (see `read::field_scheduler::column`); other layouts
/// (dictionaries, strings, runs, deltas) are read whole.
pub fn reads_in_parts(encoding: Option<&proto::Encoding>) -> bool {
    match encoding.and_then(|e| e.kind.as_ref()) {
        Some(Kind::Plain(_) | Kind::Bitpacked(_) | Kind::AllNull(_) | Kind::AlpRd(_)) => true,
        Some(Kind::Alp(alp)) => reads_in_parts(alp.integers.as_deref()),
        Some(Kind::Nullable(nullable)) => reads_in_parts(nullable.values.as_deref()),
        Some(Kind::FixedSizeList(list)) => reads_in_parts(list.values.as_deref()),
        _ => false,
    }
}

/// Writes `block` into `buffers` (appending) and returns its encoding tree.
pub fn encode_block(block: DataBlock, buffers: &mut Vec<Buffer>) -> Result<proto::Encoding> {
    let kind = match block {
        DataBlock::AllNull { .. } => Kind::AllNull(proto::AllNullEncoding {}),
        DataBlock::Nullable { validity, values } => {
            let validity_buffer = push(buffers, validity.sliced());
            let values = encode_block(*values, buffers)?;
            Kind::Nullable(proto::NullableEncoding { validity_buffer, values: Some(Box::new(values)) })
        }
        DataBlock::Boolean(bits) => {
            Kind::Plain(proto::PlainEncoding { bits_per_value: 1, buffer: push(buffers, bits.sliced()) })
        }
        DataBlock::FixedWidth(block) => Kind::Plain(proto::PlainEncoding {
            bits_per_value: block.bits_per_value,
            buffer: push(buffers, block.data),
        }),
        DataBlock::VariableWidth(block) => {
            // Pages store offsets starting at zero and only the bytes they index.
            let n = block.num_values as usize;
            let exact = block.bits_per_offset == 32
                && block.offset_at(0) == Some(0)
                && block.offset_at(n) == Some(block.data.len() as u64);
            let block = if exact { block } else { super::VariableWidthBlock::concat(&[block])? };
            let offsets_buffer = push(buffers, block.offsets);
            let data_buffer = push(buffers, block.data);
            Kind::Binary(proto::BinaryEncoding {
                bits_per_offset: block.bits_per_offset,
                offsets_buffer,
                data_buffer,
                offsets: None,
            })
        }
        DataBlock::ListOffsets(block) => {
            // Pages store offsets starting at zero, 32 bits wide when the items allow.
            let offsets = block.to_u64()?;
            let first = offsets.first().copied().unwrap_or(0);
            let last = offsets.last().copied().unwrap_or(0);
            let (buffer, bits_per_offset) = if last - first <= u32::MAX as u64 {
                (Buffer::from_vec(offsets.iter().map(|o| (o - first) as u32).collect::<Vec<u32>>()), 32)
            } else {
                (Buffer::from_vec(offsets.iter().map(|o| o - first).collect::<Vec<u64>>()), 64)
            };
            Kind::ListOffsets(proto::ListOffsetsEncoding { bits_per_offset, buffer: push(buffers, buffer) })
        }
        DataBlock::FixedSizeList { dimension, values } => match *values {
            // Byte-wide values without nulls: one plain buffer of `dimension`-times wider values.
            DataBlock::FixedWidth(block) => Kind::Plain(proto::PlainEncoding {
                bits_per_value: block.bits_per_value * dimension,
                buffer: push(buffers, block.data),
            }),
            values => Kind::FixedSizeList(proto::FixedSizeListEncoding {
                dimension,
                values: Some(Box::new(encode_block(values, buffers)?)),
            }),
        },
        DataBlock::Dictionary { indices, dictionary } => {
            let index_bytes = match indices.as_ref() {
                DataBlock::FixedWidth(i) => (i.bits_per_value / 8) as u32,
                _ => bail!(internal, "dictionary indices must be fixed-width integers"),
            };
            Kind::Dictionary(proto::DictionaryEncoding {
                dictionary_size: dictionary.num_values(),
                index_bytes,
                indices: Some(Box::new(encode_block(*indices, buffers)?)),
                dictionary: Some(Box::new(encode_block(dictionary.as_ref().clone(), buffers)?)),
            })
        }
    };
    Ok(proto::Encoding { kind: Some(kind) })
}

fn push(buffers: &mut Vec<Buffer>, buffer: Buffer) -> u32 {
    buffers.push(buffer);
    (buffers.len() - 1) as u32
}

/// The bytes an encoding subtree stores: the sizes of the page buffers it refers to (each
/// counted once) and the values held in its nodes. What bounds the values a child decoded whole
/// at page load may claim ([`crate::encodings::limits::check_whole_load`]).
pub fn stored_bytes(encoding: Option<&proto::Encoding>, buffers: &[BufferLocation]) -> u64 {
    let mut used = std::collections::BTreeSet::new();
    let node_bytes = collect_stored(encoding, &mut used);
    used.iter().filter_map(|index| buffers.get(*index as usize)).fold(node_bytes, |sum, b| sum.saturating_add(b.size))
}

/// Adds the buffers `encoding` refers to into `used` and returns the bytes its nodes hold.
fn collect_stored(encoding: Option<&proto::Encoding>, used: &mut std::collections::BTreeSet<u32>) -> u64 {
    let Some(kind) = encoding.and_then(|e| e.kind.as_ref()) else { return 0 };
    match kind {
        Kind::Plain(p) => {
            used.insert(p.buffer);
            0
        }
        Kind::Nullable(n) => {
            used.insert(n.validity_buffer);
            collect_stored(n.values.as_deref(), used)
        }
        Kind::AllNull(_) => 0,
        Kind::Binary(b) => {
            used.extend([b.offsets_buffer, b.data_buffer]);
            collect_stored(b.offsets.as_deref(), used)
        }
        Kind::ListOffsets(o) => {
            used.insert(o.buffer);
            0
        }
        Kind::FixedSizeList(f) => collect_stored(f.values.as_deref(), used),
        Kind::Bitpacked(b) => {
            used.insert(b.buffer);
            b.reference.len() as u64
        }
        Kind::Delta(d) => {
            used.extend([d.bases_buffer, d.deltas_buffer]);
            0
        }
        Kind::Constant(c) => c.value.len() as u64,
        Kind::Rle(r) => {
            collect_stored(r.values.as_deref(), used).saturating_add(collect_stored(r.run_ends.as_deref(), used))
        }
        Kind::Dictionary(d) => {
            collect_stored(d.indices.as_deref(), used).saturating_add(collect_stored(d.dictionary.as_deref(), used))
        }
        Kind::Fsst(f) => {
            used.insert(f.symbols_buffer);
            collect_stored(f.codes.as_deref(), used).saturating_add(collect_stored(f.decoded_lengths.as_deref(), used))
        }
        Kind::AlpRd(a) => {
            used.extend([a.blocks_buffer, a.exception_rows_buffer, a.exception_left_parts_buffer]);
            a.left_parts.len() as u64
        }
        Kind::Alp(a) => {
            used.extend([a.exception_rows_buffer, a.exception_values_buffer]);
            collect_stored(a.integers.as_deref(), used)
        }
        Kind::OnPair(o) => {
            used.insert(o.dictionary_buffer);
            collect_stored(o.codes.as_deref(), used).saturating_add(collect_stored(o.decoded_lengths.as_deref(), used))
        }
    }
}

/// The number of values of the largest dictionary in an encoding tree (0 without one).
pub fn largest_dictionary(encoding: Option<&proto::Encoding>) -> u64 {
    match encoding.and_then(|e| e.kind.as_ref()) {
        Some(Kind::Dictionary(d)) => d
            .dictionary_size
            .max(largest_dictionary(d.indices.as_deref()))
            .max(largest_dictionary(d.dictionary.as_deref())),
        Some(Kind::Nullable(n)) => largest_dictionary(n.values.as_deref()),
        Some(Kind::Binary(b)) => largest_dictionary(b.offsets.as_deref()),
        Some(Kind::FixedSizeList(f)) => largest_dictionary(f.values.as_deref()),
        Some(Kind::Rle(r)) => largest_dictionary(r.values.as_deref()),
        Some(Kind::Fsst(f)) => largest_dictionary(f.codes.as_deref()),
        Some(Kind::OnPair(o)) => largest_dictionary(o.codes.as_deref()),
        _ => 0,
    }
}

/// A short description of an encoding tree, such as `nullable(plain(32))`, for inspection.
pub fn describe(encoding: Option<&proto::Encoding>) -> String {
    match encoding.and_then(|e| e.kind.as_ref()) {
        None => "unknown".to_string(),
        Some(Kind::Plain(p)) if p.bits_per_value == 1 => "bitmap".to_string(),
        Some(Kind::Plain(p)) => format!("plain({})", p.bits_per_value),
        Some(Kind::Nullable(n)) => format!("nullable({})", describe(n.values.as_deref())),
        Some(Kind::AllNull(_)) => "all_null".to_string(),
        Some(Kind::Binary(b)) => match &b.offsets {
            Some(offsets) => format!("binary(offsets={})", describe(Some(offsets))),
            None => format!("binary(offsets={})", b.bits_per_offset),
        },
        Some(Kind::ListOffsets(o)) => format!("list_offsets({})", o.bits_per_offset),
        Some(Kind::FixedSizeList(f)) => format!("fixed_size_list({}, {})", f.dimension, describe(f.values.as_deref())),
        Some(Kind::Bitpacked(b)) => format!("bitpacked({})", b.bit_width),
        Some(Kind::Delta(d)) => format!("delta({})", d.bit_width),
        Some(Kind::Constant(_)) => "constant".to_string(),
        Some(Kind::Rle(r)) => format!("rle({}, runs={})", describe(r.values.as_deref()), r.num_runs),
        Some(Kind::Dictionary(d)) => format!(
            "dictionary({}, indices={}, values={})",
            d.dictionary_size,
            describe(d.indices.as_deref()),
            describe(d.dictionary.as_deref())
        ),
        Some(Kind::Fsst(f)) => match f.decoded_lengths.as_deref() {
            Some(lengths) => format!("fsst({}, lengths={})", describe(f.codes.as_deref()), describe(Some(lengths))),
            None => format!("fsst({})", describe(f.codes.as_deref())),
        },
        Some(Kind::AlpRd(a)) => {
            format!("alp_rd({}+{})", a.value_bytes.saturating_mul(8).saturating_sub(a.right_bits), a.right_bits)
        }
        Some(Kind::Alp(a)) => format!("alp(e={}, f={}, {})", a.exponent, a.factor, describe(a.integers.as_deref())),
        Some(Kind::OnPair(o)) => {
            format!("onpair({} tokens of {} bits, {})", o.num_tokens, o.code_bits, describe(o.codes.as_deref()))
        }
    }
}
