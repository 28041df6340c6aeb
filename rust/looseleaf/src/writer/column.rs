//! [`ColumnWriter`]: the pending data and the pages of one column being written.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, make_array};
use arrow_buffer::Buffer;
use arrow_data::transform::MutableArrayData;
use arrow_schema::DataType;

use super::shred::ColumnKind;
use crate::encodings::compression::compress_buffers;
use crate::encodings::logical::array_to_block;
use crate::encodings::logical::list::lengths_to_block;
use crate::encodings::logical::primitive::{encoded_size, rows_within};
use crate::encodings::physical::encode_block;
use crate::encodings::policy::EncodingPolicy;
use crate::encodings::statistics::ValueKind;
use crate::encodings::statistics::page_statistics;
use crate::encodings::strategy::PageEncoder;
use crate::error::{Error, Result, ensure};
use crate::format::proto::{Compression, PageMetadata, PageStatistics};
use crate::writer::WriterOptions;

/// The pages of one column being written: the rows it holds until they fill a page, and the
/// metadata of the pages written.
///
/// Cutting pages is cheap and happens as arrays arrive; encoding them is the costly part and
/// is left to the caller, with the column's [`ColumnEncoder`], so that pages of many columns
/// (and of many batches) can be encoded at once.
pub struct ColumnWriter {
    encoder: Arc<ColumnEncoder>,
    /// Arrays received and not yet cut into a page, holding less than a page.
    pending: Vec<ArrayRef>,
    pending_bytes: u64,
    /// Dictionary values of the pending arrays (of a dictionary column), all counted.
    pending_dictionary_values: usize,
    /// Metadata of the pages written so far.
    pub pages: Vec<PageMetadata>,
}

/// The rows of one page, cut and not yet encoded: arrays to be concatenated, in row order.
pub struct PageRows {
    /// The arrays, in row order (one, when the page was cut from a single array).
    pub arrays: Vec<ArrayRef>,
    /// Their estimated encoded size.
    pub bytes: u64,
}

/// Encodes the pages of one column: its encoding policy and settings, shared by the threads
/// that encode them.
pub struct ColumnEncoder {
    kind: ColumnKind,
    /// The type of the arrays the column receives.
    data_type: DataType,
    /// Chooses each page's encoding.
    encoder: PageEncoder,
    value_kind: ValueKind,
    compression: Compression,
    compression_level: i32,
    statistics: bool,
}

/// An encoded page, ready to be written.
pub struct EncodedPage {
    /// Values in the page.
    pub num_rows: u64,
    /// Its buffers.
    pub buffers: Vec<Buffer>,
    /// Its encoding tree.
    pub encoding: crate::format::proto::Encoding,
    /// For list offsets, the items of its lists.
    pub num_items: u64,
    /// Its statistics, if computed.
    pub statistics: Option<PageStatistics>,
    /// The compression of its buffers.
    pub compression: Compression,
    /// Decompressed size of each buffer when compressed (zeros otherwise).
    pub uncompressed_sizes: Vec<u64>,
}

impl ColumnEncoder {
    /// Encodes the rows of a page, concatenating its arrays first.
    pub fn encode(&self, rows: PageRows) -> Result<EncodedPage> {
        let array = match rows.arrays.as_slice() {
            [one] => one.clone(),
            many => {
                let refs: Vec<&dyn Array> = many.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&refs)?
            }
        };
        ensure!(array.data_type() == &self.data_type, internal, "column received a different type");
        self.encode_array(array.as_ref())
    }

    fn encode_array(&self, array: &dyn Array) -> Result<EncodedPage> {
        let mut buffers = Vec::new();
        let (block, num_items) = match self.kind {
            ColumnKind::ListLengths => {
                let lengths = array
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .ok_or_else(|| Error::internal("list column received something else than lengths"))?;
                lengths_to_block(lengths)?
            }
            ColumnKind::Values | ColumnKind::Validity => (array_to_block(array)?, 0),
        };
        let statistics =
            (self.statistics && self.kind == ColumnKind::Values).then(|| page_statistics(&block, self.value_kind));
        let encoding = match self.kind {
            ColumnKind::Values | ColumnKind::Validity => self.encoder.encode(block, &mut buffers)?,
            ColumnKind::ListLengths => encode_block(block, &mut buffers)?,
        };
        let (buffers, compression, uncompressed_sizes) =
            match compress_buffers(&buffers, self.compression, self.compression_level)? {
                Some(compressed) => {
                    let sizes = buffers.iter().map(|b| b.len() as u64).collect();
                    (compressed, self.compression, sizes)
                }
                None => (buffers, Compression::None, vec![]),
            };
        Ok(EncodedPage {
            num_rows: array.len() as u64,
            buffers,
            encoding,
            num_items,
            statistics,
            compression,
            uncompressed_sizes,
        })
    }
}

impl ColumnWriter {
    /// A writer of a column of `kind` receiving arrays of `data_type`, encoding its pages under
    /// `policy` and `options`.
    pub fn new(kind: ColumnKind, data_type: DataType, policy: EncodingPolicy, options: &WriterOptions) -> Self {
        let encoder = ColumnEncoder {
            kind,
            encoder: PageEncoder::new(ValueKind::of_stored(&data_type), policy),
            value_kind: ValueKind::of(&data_type),
            data_type,
            compression: options.compression,
            compression_level: options.compression_level,
            statistics: options.statistics,
        };
        Self {
            encoder: Arc::new(encoder),
            pending: vec![],
            pending_bytes: 0,
            pending_dictionary_values: 0,
            pages: vec![],
        }
    }

    /// What encodes this column's pages.
    pub fn encoder(&self) -> &Arc<ColumnEncoder> {
        &self.encoder
    }

    /// Adds `array` and returns the rows of the pages that are now full, in row order.
    pub fn append(&mut self, array: ArrayRef, page_size: u64) -> Vec<PageRows> {
        let mut pages = Vec::new();
        let mut array = array;
        if array.is_empty() {
            return pages;
        }
        // Pending arrays become one page through `concat`, which merges their dictionaries:
        // a page is cut before they might hold more values than the keys can index.
        let dictionary_values = dictionary_len(array.as_ref());
        if let Some(capacity) = dictionary_capacity(&self.encoder.data_type)
            && !self.pending.is_empty()
            && self.pending_dictionary_values.saturating_add(dictionary_values) > capacity
        {
            pages.extend(self.flush());
        }
        if !self.pending.is_empty() {
            let room = page_size.saturating_sub(self.pending_bytes);
            let fits = rows_within(array.as_ref(), room);
            if fits == array.len() && encoded_size(array.as_ref()) < room {
                self.pending_bytes += encoded_size(array.as_ref());
                self.pending_dictionary_values += dictionary_values;
                self.pending.push(compact(array));
                return pages;
            }
            let head = array.slice(0, fits);
            self.pending_bytes += encoded_size(head.as_ref());
            self.pending.push(head);
            pages.extend(self.flush());
            array = array.slice(fits, array.len() - fits);
        }
        while !array.is_empty() && encoded_size(array.as_ref()) >= page_size {
            let rows = rows_within(array.as_ref(), page_size);
            let page = array.slice(0, rows);
            pages.push(PageRows { bytes: encoded_size(page.as_ref()), arrays: vec![page] });
            array = array.slice(rows, array.len() - rows);
        }
        if !array.is_empty() {
            self.pending_bytes = encoded_size(array.as_ref());
            self.pending_dictionary_values = dictionary_values;
            self.pending.push(compact(array));
        }
        pages
    }

    /// The pending rows as one page, if there are any.
    pub fn flush(&mut self) -> Option<PageRows> {
        if self.pending.is_empty() {
            return None;
        }
        self.pending_dictionary_values = 0;
        Some(PageRows { arrays: std::mem::take(&mut self.pending), bytes: std::mem::take(&mut self.pending_bytes) })
    }
}

/// Number of dictionary values of a dictionary array (0 for other arrays).
fn dictionary_len(array: &dyn Array) -> usize {
    array.as_any_dictionary_opt().map_or(0, |d| d.values().len())
}

/// Most values the keys of a dictionary type can index (`None` for other types).
fn dictionary_capacity(data_type: &DataType) -> Option<usize> {
    let DataType::Dictionary(key, _) = data_type else { return None };
    Some(match key.as_ref() {
        DataType::Int8 => 1 << 7,
        DataType::UInt8 => 1 << 8,
        DataType::Int16 => 1 << 15,
        DataType::UInt16 => 1 << 16,
        DataType::Int32 => 1 << 31,
        _ => usize::MAX,
    })
}

/// Copies a slice out of a larger array so that buffering it does not keep the whole array
/// alive (which would break the writer's memory bound).
fn compact(array: ArrayRef) -> ArrayRef {
    if array.get_buffer_memory_size() as u64 <= 2 * encoded_size(array.as_ref()) + 4096 {
        return array;
    }
    let data = array.to_data();
    let mut copy = MutableArrayData::new(vec![&data], false, array.len());
    // Copying rows of an array into one of the same length cannot overflow its offsets; if it
    // somehow did, keeping the slice is still correct, only less frugal.
    match copy.try_extend(0, 0, array.len()) {
        Ok(()) => make_array(copy.freeze()),
        Err(_) => array,
    }
}
