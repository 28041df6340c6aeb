//! [`DataBlock`]: the type-agnostic in-memory form that physical encodings produce and consume.
//!
//! Physical encodings know nothing about Arrow data types: they turn bytes into blocks of
//! fixed-width values, bits, or offsets + bytes, possibly with a validity bitmap. The logical
//! layer ([`crate::encodings::logical`]) turns a block into an Arrow array of the requested
//! type, and an array into a block when writing. Blocks share their buffers with the pages they
//! came from whenever the layout allows it (no copy for a slice of one loaded range).

use std::sync::Arc;

use arrow_buffer::{ArrowNativeType, BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer, ScalarBuffer};

use crate::error::{Result, bail, ensure};

/// Values decoded (or about to be encoded) by physical encodings.
#[derive(Debug, Clone)]
pub enum DataBlock {
    /// Every value is null.
    AllNull {
        /// Number of values.
        num_values: u64,
    },
    /// Values behind a validity bitmap (`true` = valid); null slots hold arbitrary values.
    Nullable {
        /// One bit per value.
        validity: BooleanBuffer,
        /// The values, including the null slots.
        values: Box<DataBlock>,
    },
    /// One bit per value.
    Boolean(BooleanBuffer),
    /// Values of a fixed number of bytes, back to back.
    FixedWidth(FixedWidthBlock),
    /// Values of varying length: offsets into a data buffer.
    VariableWidth(VariableWidthBlock),
    /// Offsets of lists into items held elsewhere (same layout as variable width, no data).
    ListOffsets(OffsetsBlock),
    /// Fixed-size lists: `dimension` child values per row.
    FixedSizeList {
        /// Child values per row.
        dimension: u64,
        /// The `rows × dimension` child values.
        values: Box<DataBlock>,
    },
    /// Indices (unsigned fixed-width integers) into a dictionary of values, which several
    /// blocks of one page share.
    Dictionary {
        /// One index per value.
        indices: Box<DataBlock>,
        /// The distinct values (fixed width, variable width or bits, without nulls).
        dictionary: Arc<DataBlock>,
    },
}

/// `num_values + 1` non-decreasing offsets (of `bits_per_offset` bits), not necessarily starting
/// at zero.
#[derive(Debug, Clone)]
pub struct OffsetsBlock {
    /// The offsets, aligned to their width.
    pub offsets: Buffer,
    /// Width of one offset in bits: 32 or 64.
    pub bits_per_offset: u32,
    /// Number of lists.
    pub num_values: u64,
}

impl OffsetsBlock {
    /// Offset `i`, if the buffer holds it.
    pub fn offset_at(&self, i: usize) -> Option<u64> {
        let width = self.bits_per_offset as usize / 8;
        let bytes = self.offsets.as_slice().get(i * width..(i + 1) * width)?;
        Some(match width {
            4 => u32::from_le_bytes(bytes.try_into().ok()?) as u64,
            _ => u64::from_le_bytes(bytes.try_into().ok()?),
        })
    }

    /// The offsets as `u64`.
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if the buffer is too short or the offsets decrease.
    pub fn to_u64(&self) -> Result<Vec<u64>> {
        let as_variable = VariableWidthBlock {
            offsets: self.offsets.clone(),
            bits_per_offset: self.bits_per_offset,
            data: Buffer::from_vec(Vec::<u8>::new()),
            num_values: self.num_values,
        };
        let offsets = as_variable.offsets_u64()?;
        ensure!(offsets.windows(2).all(|w| w[0] <= w[1]), corrupt, "list offsets decrease");
        Ok(offsets)
    }
}

/// Values of `bits_per_value / 8` bytes each, back to back.
#[derive(Debug, Clone)]
pub struct FixedWidthBlock {
    /// The value bytes: exactly `num_values * bits_per_value / 8` of them.
    pub data: Buffer,
    /// Width of one value in bits (a multiple of 8).
    pub bits_per_value: u64,
    /// Number of values.
    pub num_values: u64,
}

/// Values of varying length: value `i` is `data[offsets[i]..offsets[i + 1]]`.
///
/// Offsets need not start at zero (a slice of a loaded page keeps the page's offsets and data
/// without copying), but every offset indexes `data` directly. The offsets buffer is aligned to
/// its offset width.
#[derive(Debug, Clone)]
pub struct VariableWidthBlock {
    /// `num_values + 1` offsets, each `bits_per_offset` wide, non-decreasing, indexing `data`.
    pub offsets: Buffer,
    /// Width of one offset in bits: 32 or 64.
    pub bits_per_offset: u32,
    /// The value bytes.
    pub data: Buffer,
    /// Number of values.
    pub num_values: u64,
}

impl DataBlock {
    /// The block with its 16-byte integers as 8-byte ones: decimals of up to 18 digits read at
    /// their native width ([`PageDecoder::decode_64`](super::PageDecoder::decode_64)). Blocks
    /// of 8-byte values pass as they are.
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if a value (a valid one: null slots hold anything) does not fit
    /// 64 bits, which no value of 18 digits does not; [`crate::Error::Internal`] for a block of
    /// other values.
    pub fn narrowed_to_64(self) -> Result<DataBlock> {
        Ok(match self {
            Self::AllNull { .. } => self,
            Self::FixedWidth(block) if block.bits_per_value == 64 => Self::FixedWidth(block),
            Self::FixedWidth(block) => Self::FixedWidth(narrow_values(block, None)?),
            Self::Nullable { validity, values } => {
                let values = match *values {
                    Self::FixedWidth(block) if block.bits_per_value == 128 => {
                        Self::FixedWidth(narrow_values(block, Some(&validity))?)
                    }
                    other => other.narrowed_to_64()?,
                };
                Self::Nullable { validity, values: Box::new(values) }
            }
            Self::Dictionary { indices, dictionary } => {
                let dictionary = Arc::new(dictionary.as_ref().clone().narrowed_to_64()?);
                Self::Dictionary { indices, dictionary }
            }
            other => bail!(internal, "a {other:?} block read as 8-byte integers"),
        })
    }

    /// Number of values in the block.
    pub fn num_values(&self) -> u64 {
        match self {
            Self::AllNull { num_values } => *num_values,
            Self::Nullable { validity, .. } => validity.len() as u64,
            Self::Boolean(bits) => bits.len() as u64,
            Self::FixedWidth(b) => b.num_values,
            Self::VariableWidth(b) => b.num_values,
            Self::ListOffsets(b) => b.num_values,
            Self::FixedSizeList { dimension, values } => values.num_values().checked_div(*dimension).unwrap_or(0),
            Self::Dictionary { indices, .. } => indices.num_values(),
        }
    }

    /// The block with its dictionary indices replaced by the values they point at (other
    /// blocks unchanged).
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if an index is out of the dictionary.
    pub fn materialize(self) -> Result<DataBlock> {
        match self {
            DataBlock::Dictionary { indices, dictionary } => {
                let DataBlock::FixedWidth(indices) = *indices else { return shape_error() };
                dictionary.gather(&indices.to_positions()?)
            }
            DataBlock::Nullable { validity, values } => {
                Ok(DataBlock::Nullable { validity, values: Box::new(values.materialize()?) })
            }
            other => Ok(other),
        }
    }

    /// The values at `positions` of a block of fixed-width values, variable-width values or bits.
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if a position is out of range or the block has another shape.
    pub fn gather(&self, positions: &[usize]) -> Result<DataBlock> {
        let n = self.num_values() as usize;
        ensure!(positions.iter().all(|p| *p < n), corrupt, "a dictionary index points past the {n} dictionary values");
        Ok(match self {
            DataBlock::FixedWidth(block) => DataBlock::FixedWidth(block.gather(positions)?),
            DataBlock::Boolean(bits) => {
                DataBlock::Boolean(positions.iter().map(|p| bits.value(*p)).collect::<BooleanBuffer>())
            }
            DataBlock::VariableWidth(block) => DataBlock::VariableWidth(block.gather(positions)?),
            DataBlock::FixedSizeList { dimension, values } => {
                let d = *dimension as usize;
                let child: Vec<usize> = positions.iter().flat_map(|p| p * d..(p + 1) * d).collect();
                DataBlock::FixedSizeList { dimension: *dimension, values: Box::new(values.gather(&child)?) }
            }
            DataBlock::Dictionary { .. } => return self.clone().materialize()?.gather(positions),
            _ => return shape_error(),
        })
    }

    /// Concatenates blocks of the same shape (as produced by one encoding for several row
    /// ranges) into one block.
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if the blocks do not have the same shape.
    pub fn concat(blocks: Vec<DataBlock>) -> Result<DataBlock> {
        if blocks.len() == 1 {
            return Ok(blocks.into_iter().next().unwrap_or(DataBlock::AllNull { num_values: 0 }));
        }
        let total: u64 = blocks.iter().map(|b| b.num_values()).sum();
        if blocks.iter().all(|b| matches!(b, DataBlock::AllNull { .. })) {
            return Ok(DataBlock::AllNull { num_values: total });
        }
        // Mixed null shapes (a range of all-null rows next to a range with values) are first
        // brought to the general `Nullable` shape.
        let any_nulls = blocks.iter().any(|b| matches!(b, DataBlock::AllNull { .. } | DataBlock::Nullable { .. }));
        if any_nulls {
            let template = blocks
                .iter()
                .find_map(|b| match b {
                    DataBlock::Nullable { values, .. } => Some(values.as_ref().clone()),
                    DataBlock::AllNull { .. } => None,
                    other => Some(other.clone()),
                })
                .unwrap_or(DataBlock::AllNull { num_values: 0 });
            let mut validity = BooleanBufferBuilder::new(total as usize);
            let mut values = Vec::with_capacity(blocks.len());
            for block in blocks {
                match block {
                    DataBlock::AllNull { num_values } => {
                        validity.append_n(num_values as usize, false);
                        values.push(template.zeroed(num_values)?);
                    }
                    DataBlock::Nullable { validity: v, values: inner } => {
                        validity.append_buffer(&v);
                        values.push(*inner);
                    }
                    other => {
                        validity.append_n(other.num_values() as usize, true);
                        values.push(other);
                    }
                }
            }
            return Ok(DataBlock::Nullable { validity: validity.finish(), values: Box::new(Self::concat(values)?) });
        }
        if blocks.iter().any(|b| b.has_dictionary()) {
            // Pieces of one page share its dictionary and concatenate their indices; pieces of
            // pages with different dictionaries are materialised.
            let shared = match (blocks.first().and_then(|b| b.dictionary()), blocks.iter().all(|b| b.has_dictionary()))
            {
                (Some(first), true) => blocks.iter().all(|b| b.dictionary().is_some_and(|d| Arc::ptr_eq(d, first))),
                _ => false,
            };
            if shared && blocks.iter().all(|b| matches!(b, DataBlock::Dictionary { .. })) {
                let dictionary = blocks.first().and_then(|b| b.dictionary()).cloned();
                let indices = blocks
                    .into_iter()
                    .map(|b| match b {
                        DataBlock::Dictionary { indices, .. } => Ok(*indices),
                        _ => shape_error(),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let Some(dictionary) = dictionary else { return shape_error() };
                return Ok(DataBlock::Dictionary { indices: Box::new(Self::concat(indices)?), dictionary });
            }
            let materialized = blocks.into_iter().map(|b| b.materialize()).collect::<Result<Vec<_>>>()?;
            return Self::concat(materialized);
        }
        // Fixed-size lists without nulls in their items are written as wider plain values, with
        // nulls as a fixed-size list node: bring pages of both kinds to the latter.
        let list_dimension = blocks.iter().find_map(|b| match b {
            DataBlock::FixedSizeList { dimension, .. } => Some(*dimension),
            _ => None,
        });
        let blocks = match list_dimension {
            Some(dimension) if blocks.iter().any(|b| matches!(b, DataBlock::FixedWidth(_))) => blocks
                .into_iter()
                .map(|b| match b {
                    DataBlock::FixedWidth(w) if dimension > 0 && w.bits_per_value % dimension == 0 => {
                        DataBlock::FixedSizeList {
                            dimension,
                            values: Box::new(DataBlock::FixedWidth(FixedWidthBlock {
                                data: w.data,
                                bits_per_value: w.bits_per_value / dimension,
                                num_values: w.num_values * dimension,
                            })),
                        }
                    }
                    other => other,
                })
                .collect(),
            _ => blocks,
        };
        match &blocks[0] {
            DataBlock::Boolean(_) => {
                let mut out = BooleanBufferBuilder::new(total as usize);
                for block in &blocks {
                    let DataBlock::Boolean(bits) = block else { return shape_error() };
                    out.append_buffer(bits);
                }
                Ok(DataBlock::Boolean(out.finish()))
            }
            DataBlock::FixedWidth(first) => {
                let bits = first.bits_per_value;
                let mut out = MutableBuffer::with_capacity((total * bits / 8) as usize);
                for block in &blocks {
                    let DataBlock::FixedWidth(b) = block else { return shape_error() };
                    ensure!(b.bits_per_value == bits, corrupt, "pages of one column have different value widths");
                    out.extend_from_slice(b.data.as_slice());
                }
                Ok(DataBlock::FixedWidth(FixedWidthBlock { data: out.into(), bits_per_value: bits, num_values: total }))
            }
            DataBlock::ListOffsets(_) => {
                let mut out: Vec<u64> = Vec::with_capacity(total as usize + 1);
                for block in &blocks {
                    let DataBlock::ListOffsets(b) = block else { return shape_error() };
                    let offsets = b.to_u64()?;
                    let shift = out.last().copied().unwrap_or(0);
                    let first = offsets.first().copied().unwrap_or(0);
                    if out.is_empty() {
                        out.push(0);
                    }
                    out.extend(offsets.iter().skip(1).map(|o| o - first + shift));
                }
                Ok(DataBlock::ListOffsets(OffsetsBlock {
                    offsets: Buffer::from_vec(out),
                    bits_per_offset: 64,
                    num_values: total,
                }))
            }
            DataBlock::FixedSizeList { dimension, .. } => {
                let dimension = *dimension;
                let values = blocks
                    .into_iter()
                    .map(|b| match b {
                        DataBlock::FixedSizeList { dimension: d, values } if d == dimension => Ok(*values),
                        _ => shape_error(),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(DataBlock::FixedSizeList { dimension, values: Box::new(Self::concat(values)?) })
            }
            DataBlock::VariableWidth(_) => {
                let parts = blocks
                    .into_iter()
                    .map(|b| match b {
                        DataBlock::VariableWidth(v) => Ok(v),
                        _ => shape_error(),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(DataBlock::VariableWidth(VariableWidthBlock::concat(&parts)?))
            }
            _ => shape_error(),
        }
    }

    /// Whether the block (or the values under its validity) are dictionary indices.
    fn has_dictionary(&self) -> bool {
        self.dictionary().is_some()
    }

    /// The dictionary of a dictionary block (under its validity, if any).
    pub fn dictionary(&self) -> Option<&Arc<DataBlock>> {
        match self {
            DataBlock::Dictionary { dictionary, .. } => Some(dictionary),
            DataBlock::Nullable { values, .. } => values.dictionary(),
            _ => None,
        }
    }

    /// A block of `num_values` zero values with the same shape as `self`.
    fn zeroed(&self, num_values: u64) -> Result<DataBlock> {
        Ok(match self {
            DataBlock::Dictionary { indices, dictionary } => {
                DataBlock::Dictionary { indices: Box::new(indices.zeroed(num_values)?), dictionary: dictionary.clone() }
            }
            DataBlock::Boolean(_) => DataBlock::Boolean(BooleanBuffer::new_unset(num_values as usize)),
            DataBlock::FixedWidth(b) => DataBlock::FixedWidth(FixedWidthBlock {
                data: MutableBuffer::from_len_zeroed((num_values * b.bits_per_value / 8) as usize).into(),
                bits_per_value: b.bits_per_value,
                num_values,
            }),
            DataBlock::VariableWidth(b) => DataBlock::VariableWidth(VariableWidthBlock {
                offsets: MutableBuffer::from_len_zeroed(((num_values + 1) * b.bits_per_offset as u64 / 8) as usize)
                    .into(),
                bits_per_offset: b.bits_per_offset,
                data: Buffer::from_vec(Vec::<u8>::new()),
                num_values,
            }),
            DataBlock::AllNull { .. } => DataBlock::AllNull { num_values },
            DataBlock::ListOffsets(b) => DataBlock::ListOffsets(OffsetsBlock {
                offsets: MutableBuffer::from_len_zeroed(((num_values + 1) * b.bits_per_offset as u64 / 8) as usize)
                    .into(),
                bits_per_offset: b.bits_per_offset,
                num_values,
            }),
            DataBlock::FixedSizeList { dimension, values } => DataBlock::FixedSizeList {
                dimension: *dimension,
                values: Box::new(values.zeroed(num_values * dimension)?),
            },
            DataBlock::Nullable { values, .. } => DataBlock::Nullable {
                validity: BooleanBuffer::new_unset(num_values as usize),
                values: Box::new(values.zeroed(num_values)?),
            },
        })
    }
}

fn shape_error<T>() -> Result<T> {
    Err(crate::Error::corrupt("pages of one column decode to blocks of different shapes"))
}

impl FixedWidthBlock {
    /// The values, unsigned integers of 1, 2, 4 or 8 bytes, as positions (the indices of a
    /// dictionary block).
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if the values have another width or the buffer is too short.
    pub fn to_positions(&self) -> Result<Vec<usize>> {
        self.map_unsigned(|value| value as usize)
    }

    /// The values, unsigned integers of 1, 2, 4 or 8 bytes, each passed through `convert`.
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if the values have another width or the buffer is too short.
    pub fn map_unsigned<T>(&self, convert: impl Fn(u64) -> T) -> Result<Vec<T>> {
        let n = self.num_values as usize;
        let width = (self.bits_per_value / 8) as usize;
        let Some(bytes) = self.data.as_slice().get(..n.saturating_mul(width)) else {
            return Err(crate::Error::corrupt(format!(
                "{n} indices of {width} bytes in a {} byte buffer",
                self.data.len()
            )));
        };
        // One loop per width, so that each compiles to a widening copy.
        Ok(match width {
            1 => bytes.iter().map(|b| convert(*b as u64)).collect(),
            2 => bytes.chunks_exact(2).map(|c| convert(u16::from_le_bytes([c[0], c[1]]) as u64)).collect(),
            4 => bytes.chunks_exact(4).map(|c| convert(u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64)).collect(),
            8 => bytes
                .chunks_exact(8)
                .map(|c| convert(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])))
                .collect(),
            _ => return Err(crate::Error::corrupt(format!("dictionary indices of {width} bytes"))),
        })
    }

    /// The values at `positions`, each checked to be below `num_values` by the caller.
    fn gather(&self, positions: &[usize]) -> Result<FixedWidthBlock> {
        let w = (self.bits_per_value / 8) as usize;
        let n = self.num_values as usize;
        let data = self.data.as_slice();
        ensure!(data.len() >= n * w, corrupt, "dictionary values buffer too short");
        // A copy of a constant width per value, rather than a `memcpy` call of `w` bytes.
        fn pick<const W: usize>(data: &[u8], positions: &[usize]) -> Buffer {
            // Not zeroed first: every byte is pushed.
            let mut out: Vec<u8> = Vec::with_capacity(positions.len() * W);
            for p in positions {
                let value: &[u8; W] = data[p * W..(p + 1) * W].try_into().unwrap_or(&[0; W]);
                out.extend_from_slice(value);
            }
            Buffer::from_vec(out)
        }
        let out = match w {
            1 => pick::<1>(data, positions),
            2 => pick::<2>(data, positions),
            4 => pick::<4>(data, positions),
            8 => pick::<8>(data, positions),
            16 => pick::<16>(data, positions),
            _ => {
                let mut out = MutableBuffer::with_capacity(positions.len() * w);
                for p in positions {
                    out.extend_from_slice(&data[p * w..(p + 1) * w]);
                }
                out.into()
            }
        };
        Ok(FixedWidthBlock { data: out, bits_per_value: self.bits_per_value, num_values: positions.len() as u64 })
    }
}

impl VariableWidthBlock {
    /// The values at `positions`, each checked to be below `num_values` by the caller, with
    /// offsets starting at zero (64-bit ones only when the data would not fit 32-bit ones).
    fn gather(&self, positions: &[usize]) -> Result<VariableWidthBlock> {
        let offsets = self.offsets_u64()?;
        let data = self.data.as_slice();
        ensure!(
            offsets.windows(2).all(|pair| pair[0] <= pair[1])
                && offsets.last().is_none_or(|end| *end as usize <= data.len()),
            corrupt,
            "dictionary string offsets out of range"
        );
        let total: u64 = positions.iter().map(|p| offsets[p + 1] - offsets[*p]).sum();
        let mut out = MutableBuffer::with_capacity(total as usize);
        fn copy<O: arrow_buffer::ArrowNativeType>(
            offsets: &[u64],
            data: &[u8],
            positions: &[usize],
            out: &mut MutableBuffer,
            offset: impl Fn(usize) -> O,
        ) -> Buffer {
            let mut out_offsets = Vec::with_capacity(positions.len() + 1);
            out_offsets.push(offset(0));
            for p in positions {
                out.extend_from_slice(&data[offsets[*p] as usize..offsets[p + 1] as usize]);
                out_offsets.push(offset(out.len()));
            }
            Buffer::from_vec(out_offsets)
        }
        let (offsets, bits_per_offset) = if total <= i32::MAX as u64 {
            (copy(&offsets, data, positions, &mut out, |o| o as u32), 32)
        } else {
            (copy(&offsets, data, positions, &mut out, |o| o as u64), 64)
        };
        Ok(VariableWidthBlock { offsets, bits_per_offset, data: out.into(), num_values: positions.len() as u64 })
    }

    /// The `num_values + 1` offsets as `O` (`u32` for 32-bit offsets, `u64` for 64-bit ones),
    /// in place when their buffer is aligned (blocks keep it so; a copy otherwise).
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if the buffer holds fewer than `num_values + 1` offsets of
    /// `O`'s width.
    pub fn typed_offsets<O: ArrowNativeType>(&self) -> Result<ScalarBuffer<O>> {
        let count = self.num_values as usize + 1;
        let width = std::mem::size_of::<O>();
        ensure!(
            self.offsets.len() / width >= count,
            corrupt,
            "offsets buffer of {} bytes is too short for {} values",
            self.offsets.len(),
            self.num_values
        );
        let offsets = self.offsets.slice_with_length(0, count * width);
        let aligned = if offsets.as_ptr().align_offset(std::mem::align_of::<O>()) == 0 {
            offsets
        } else {
            Buffer::from_slice_ref(offsets.as_slice())
        };
        Ok(ScalarBuffer::new(aligned, 0, count))
    }

    /// Offset `i`, if the offsets buffer holds it.
    pub fn offset_at(&self, i: usize) -> Option<u64> {
        let width = self.bits_per_offset as usize / 8;
        let bytes = self.offsets.as_slice().get(i * width..(i + 1) * width)?;
        Some(match width {
            4 => u32::from_le_bytes(bytes.try_into().ok()?) as u64,
            _ => u64::from_le_bytes(bytes.try_into().ok()?),
        })
    }

    /// The offsets as `u64`, in order. Allocates; meant for the slow paths (take, concat).
    ///
    /// # Errors
    /// [`crate::Error::Corrupt`] if the buffer holds fewer than `num_values + 1` offsets.
    pub fn offsets_u64(&self) -> Result<Vec<u64>> {
        let n = self.num_values as usize + 1;
        let width = self.bits_per_offset as usize / 8;
        ensure!(
            matches!(width, 4 | 8) && self.offsets.len() >= n * width,
            corrupt,
            "offsets buffer of {} bytes is too short for {} values",
            self.offsets.len(),
            self.num_values
        );
        let bytes = &self.offsets.as_slice()[..n * width];
        Ok(if width == 4 {
            bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64).collect()
        } else {
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect()
        })
    }

    /// Concatenates blocks into one whose offsets start at zero, with 64-bit offsets when the
    /// data would not fit 32-bit ones.
    pub fn concat(parts: &[VariableWidthBlock]) -> Result<VariableWidthBlock> {
        let total_values: u64 = parts.iter().map(|p| p.num_values).sum();
        let mut offsets = Vec::with_capacity(total_values as usize + 1);
        let mut data = MutableBuffer::new(0);
        offsets.push(0u64);
        for part in parts {
            let part_offsets = part.offsets_u64()?;
            let (Some(&first), Some(&last)) = (part_offsets.first(), part_offsets.last()) else {
                return shape_error();
            };
            ensure!(
                first <= last && last <= part.data.len() as u64,
                corrupt,
                "string offsets {first}..{last} lie outside the data ({} bytes)",
                part.data.len()
            );
            let shift = data.len() as u64;
            for pair in part_offsets.windows(2) {
                ensure!(pair[0] <= pair[1], corrupt, "string offsets decrease");
                offsets.push(pair[1] - first + shift);
            }
            data.extend_from_slice(&part.data.as_slice()[first as usize..last as usize]);
        }
        Ok(Self::from_offsets(offsets, data.into()))
    }

    /// A block of `offsets.len() - 1` values over `data`, with 32-bit offsets when they fit.
    /// `offsets` must start at zero, never decrease and end within `data`.
    pub fn from_offsets(offsets: Vec<u64>, data: Buffer) -> Self {
        let num_values = offsets.len().saturating_sub(1) as u64;
        if offsets.last().is_none_or(|end| *end <= i32::MAX as u64) {
            let narrow: Vec<u32> = offsets.iter().map(|o| *o as u32).collect();
            Self { offsets: Buffer::from_vec(narrow), bits_per_offset: 32, data, num_values }
        } else {
            Self { offsets: Buffer::from_vec(offsets), bits_per_offset: 64, data, num_values }
        }
    }
}

/// The 16-byte integers of `block` as 8-byte ones, each valid one (per `validity`) checked to fit.
fn narrow_values(block: FixedWidthBlock, validity: Option<&BooleanBuffer>) -> Result<FixedWidthBlock> {
    ensure!(block.bits_per_value == 128, internal, "{}-bit values read as 8-byte integers", block.bits_per_value);
    ensure!(block.data.len() as u64 == block.num_values * 16, internal, "a block of 16-byte values of the wrong size");
    // Read by bytes: a slice of a loaded page need not be aligned to 16.
    let value = |bytes: &[u8]| {
        let mut le = [0u8; 16];
        le.copy_from_slice(bytes);
        i128::from_le_bytes(le)
    };
    let values = block.data.chunks_exact(16);
    let fits = |bytes: &[u8]| i64::try_from(value(bytes)).is_ok();
    let all_fit = match validity {
        Some(valid) => values.clone().zip(valid.iter()).all(|(bytes, valid)| !valid || fits(bytes)),
        None => values.clone().all(fits),
    };
    ensure!(all_fit, corrupt, "a value of a decimal column of at most 18 digits does not fit 64 bits");
    let narrow: Vec<i64> = values.map(|bytes| value(bytes) as i64).collect();
    Ok(FixedWidthBlock { data: Buffer::from_vec(narrow), bits_per_value: 64, num_values: block.num_values })
}
