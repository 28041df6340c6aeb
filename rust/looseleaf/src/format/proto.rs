//! Protobuf messages of the footer and the column metadata blocks.
//!
//! The messages are declared by hand with `prost`'s derive (no `protoc` at build time); the
//! equivalent `.proto` text is in `docs/format.md`. Tags are never reused: a field that is
//! retired keeps its tag reserved, so old files stay readable.

use std::collections::BTreeMap;

/// The footer: schema, row count and file-level metadata.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Footer {
    /// Top-level fields of the schema, in order.
    #[prost(message, repeated, tag = "1")]
    pub fields: Vec<Field>,
    /// Schema-level key/value metadata.
    #[prost(btree_map = "string, string", tag = "2")]
    pub metadata: BTreeMap<String, String>,
    /// Number of top-level rows.
    #[prost(uint64, tag = "3")]
    pub num_rows: u64,
    /// The software that wrote the file.
    #[prost(string, tag = "4")]
    pub created_by: String,
    /// Features the file uses that a reader must understand to read it correctly (format 2.0
    /// on): a reader refuses a file listing a name it does not know (see
    /// [`crate::format::KNOWN_FEATURES`]).
    #[prost(string, repeated, tag = "5")]
    pub required_features: Vec<String>,
}

/// One field of the schema (children for nested types).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Field {
    /// Field name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Field type (children types live in `children`).
    #[prost(message, optional, tag = "2")]
    pub data_type: Option<DataType>,
    /// Whether the field may hold nulls.
    #[prost(bool, tag = "3")]
    pub nullable: bool,
    /// Child fields of nested types.
    #[prost(message, repeated, tag = "4")]
    pub children: Vec<Field>,
    /// Field-level key/value metadata.
    #[prost(btree_map = "string, string", tag = "5")]
    pub metadata: BTreeMap<String, String>,
    /// The column holding this field's own data (values, validity or offsets), if it has one.
    #[prost(uint32, optional, tag = "6")]
    pub column: Option<u32>,
}

/// Arrow type identifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
// Each variant is the Arrow type of the same name; `docs/format.md` lists them.
#[allow(missing_docs)]
pub enum TypeKind {
    Unknown = 0,
    Null = 1,
    Boolean = 2,
    Int8 = 3,
    Int16 = 4,
    Int32 = 5,
    Int64 = 6,
    UInt8 = 7,
    UInt16 = 8,
    UInt32 = 9,
    UInt64 = 10,
    Float16 = 11,
    Float32 = 12,
    Float64 = 13,
    Date32 = 14,
    Date64 = 15,
    Time32 = 16,
    Time64 = 17,
    Timestamp = 18,
    Duration = 19,
    IntervalYearMonth = 20,
    IntervalDayTime = 21,
    IntervalMonthDayNano = 22,
    Decimal32 = 23,
    Decimal64 = 24,
    Decimal128 = 25,
    Decimal256 = 26,
    Utf8 = 27,
    LargeUtf8 = 28,
    Utf8View = 29,
    Binary = 30,
    LargeBinary = 31,
    BinaryView = 32,
    FixedSizeBinary = 33,
    Struct = 34,
    List = 35,
    LargeList = 36,
    FixedSizeList = 37,
    Map = 38,
    Dictionary = 39,
}

/// Time units of temporal types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
// The Arrow time units of the same names.
#[allow(missing_docs)]
pub enum TimeUnit {
    Second = 0,
    Millisecond = 1,
    Microsecond = 2,
    Nanosecond = 3,
}

/// A data type. Parameters that do not apply to `kind` are left at their defaults.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DataType {
    /// The type identifier.
    #[prost(enumeration = "TypeKind", tag = "1")]
    pub kind: i32,
    /// Unit of time, timestamp and duration types.
    #[prost(enumeration = "TimeUnit", tag = "2")]
    pub unit: i32,
    /// Time zone of timestamps.
    #[prost(string, optional, tag = "3")]
    pub timezone: Option<String>,
    /// Precision of decimals.
    #[prost(uint32, tag = "4")]
    pub precision: u32,
    /// Scale of decimals.
    #[prost(int32, tag = "5")]
    pub scale: i32,
    /// Width of fixed-size binary, length of fixed-size lists.
    #[prost(uint32, tag = "6")]
    pub fixed_size: u32,
    /// Key type of dictionaries.
    #[prost(message, optional, boxed, tag = "7")]
    pub key: Option<Box<DataType>>,
    /// Whether map keys are sorted.
    #[prost(bool, tag = "8")]
    pub keys_sorted: bool,
    /// Value type of dictionaries.
    #[prost(message, optional, boxed, tag = "9")]
    pub value: Option<Box<DataType>>,
}

/// The metadata block of one column: its pages, in row order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnMetadata {
    /// The pages.
    #[prost(message, repeated, tag = "1")]
    pub pages: Vec<PageMetadata>,
    /// Where the column's zone map is (format 2.1 on; absent for columns without one: nested
    /// columns, columns of files written before 2.1 or with zone maps turned off).
    #[prost(message, optional, tag = "2")]
    pub zone_map: Option<ZoneMapLocation>,
}

/// Where a column's [`ZoneMap`] is stored, and its shape.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct ZoneMapLocation {
    /// The serialised [`ZoneMap`] (never compressed).
    #[prost(message, optional, tag = "1")]
    pub buffer: Option<BufferLocation>,
    /// Rows per zone: zone `i` holds rows `i * rows_per_zone ..` up to the next zone's first
    /// row (the last zone may hold fewer).
    #[prost(uint64, tag = "2")]
    pub rows_per_zone: u64,
    /// Number of zones: the file's row count divided by `rows_per_zone`, rounded up.
    #[prost(uint64, tag = "3")]
    pub num_zones: u64,
}

/// Statistics of a column per zone of rows: what a filtered read skips by, at a granularity
/// independent of the page size. Stored in a buffer of its own so that only filtered reads of
/// the column fetch it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ZoneMap {
    /// One entry per zone, in row order, with the same meaning as a page's statistics.
    #[prost(message, repeated, tag = "1")]
    pub zones: Vec<PageStatistics>,
}

/// One page: how many values it holds, where its buffers are and how they are encoded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PageMetadata {
    /// Number of values in the page, counted at the column's own level (top-level rows for a
    /// top-level column, items for the items of a list).
    #[prost(uint64, tag = "1")]
    pub num_rows: u64,
    /// The page's buffers; encodings refer to them by index.
    #[prost(message, repeated, tag = "2")]
    pub buffers: Vec<BufferLocation>,
    /// The encoding tree of the page.
    #[prost(message, optional, tag = "3")]
    pub encoding: Option<Encoding>,
    /// For pages of list offsets: the number of items the page's lists hold (its last offset),
    /// so that a reader of the whole page knows which items it needs without reading it.
    #[prost(uint64, tag = "4")]
    pub num_items: u64,
    /// Null count and value bounds of the page, where the writer computed them.
    #[prost(message, optional, tag = "5")]
    pub statistics: Option<PageStatistics>,
    /// General-purpose compression of all the page's buffers (none when absent).
    #[prost(enumeration = "Compression", tag = "6")]
    pub compression: i32,
}

/// General-purpose compression codecs of whole pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Compression {
    /// Buffers stored as they are.
    None = 0,
    /// Each buffer a raw LZ4 block (its decompressed size is in the buffer location).
    Lz4 = 1,
    /// Each buffer a Zstandard frame.
    Zstd = 2,
}

/// Statistics of one page, in the column's own row space.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PageStatistics {
    /// Number of null values.
    #[prost(uint64, tag = "1")]
    pub null_count: u64,
    /// Smallest non-null value, as its little-endian bytes (fixed-width types) or its bytes
    /// (strings and binaries), when known.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub min: Option<Vec<u8>>,
    /// Largest non-null value, likewise.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub max: Option<Vec<u8>>,
}

/// Where one buffer of a page is in the file.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct BufferLocation {
    /// Absolute file offset.
    #[prost(uint64, tag = "1")]
    pub offset: u64,
    /// Length in bytes (as stored, compressed if the page is).
    #[prost(uint64, tag = "2")]
    pub size: u64,
    /// Length once decompressed, for pages with general-purpose compression.
    #[prost(uint64, tag = "3")]
    pub uncompressed_size: u64,
    /// CRC-32 of the buffer's bytes as stored (format 2.0 on; absent when the writer was asked
    /// not to compute it).
    #[prost(fixed32, optional, tag = "4")]
    pub crc32: Option<u32>,
}

/// A node of a page's encoding tree.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Encoding {
    /// Which encoding, with its parameters and children.
    #[prost(oneof = "encoding::Kind", tags = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15")]
    pub kind: Option<encoding::Kind>,
}

/// The kinds of encoding nodes.
pub mod encoding {
    /// The kinds of encoding nodes.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        /// Fixed-width values stored back to back.
        #[prost(message, tag = "1")]
        Plain(super::PlainEncoding),
        /// A validity bitmap over another encoding.
        #[prost(message, tag = "2")]
        Nullable(super::NullableEncoding),
        /// Every value is null; no buffers.
        #[prost(message, tag = "3")]
        AllNull(super::AllNullEncoding),
        /// Variable-width values: offsets and data bytes.
        #[prost(message, tag = "4")]
        Binary(super::BinaryEncoding),
        /// The offsets of lists whose items are stored in other columns.
        #[prost(message, tag = "5")]
        ListOffsets(super::ListOffsetsEncoding),
        /// Fixed-size lists: `dimension` child values per row, encoded as one child.
        #[prost(message, tag = "6")]
        FixedSizeList(super::FixedSizeListEncoding),
        /// Integers minus a reference, bit-packed in blocks of 1024 (frame of reference).
        #[prost(message, tag = "7")]
        Bitpacked(super::BitpackedEncoding),
        /// Non-decreasing integers as bit-packed differences, per block of 1024.
        #[prost(message, tag = "8")]
        Delta(super::DeltaEncoding),
        /// Every value is the same.
        #[prost(message, tag = "9")]
        Constant(super::ConstantEncoding),
        /// Runs of equal values: the values and where each run ends.
        #[prost(message, tag = "10")]
        Rle(super::RleEncoding),
        /// Indices into a dictionary of distinct values held by the page.
        #[prost(message, tag = "11")]
        Dictionary(super::DictionaryEncoding),
        /// Strings compressed with a static symbol table (FSST).
        #[prost(message, tag = "12")]
        Fsst(super::FsstEncoding),
        /// Floats split into a coded left part and bit-packed right part (ALP-RD, format 2.2).
        #[prost(message, tag = "13")]
        AlpRd(super::AlpRdEncoding),
        /// Floats that are decimals, as integers times a power of ten (ALP, format 2.3).
        #[prost(message, tag = "14")]
        Alp(super::AlpEncoding),
        /// Strings as codes of tokens from a dictionary learnt from the page (OnPair, format 2.4).
        #[prost(message, tag = "15")]
        OnPair(super::OnPairEncoding),
    }
}

/// Fixed-width values stored back to back (booleans as an LSB-first bitmap).
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct PlainEncoding {
    /// Width of one value in bits: 1, or a multiple of 8.
    #[prost(uint64, tag = "1")]
    pub bits_per_value: u64,
    /// Index of the buffer in the page.
    #[prost(uint32, tag = "2")]
    pub buffer: u32,
}

/// A validity bitmap over the values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NullableEncoding {
    /// Index of the validity bitmap buffer (LSB first, 1 = valid).
    #[prost(uint32, tag = "1")]
    pub validity_buffer: u32,
    /// The values (null slots hold arbitrary values).
    #[prost(message, optional, boxed, tag = "2")]
    pub values: Option<Box<Encoding>>,
}

/// Every value of the page is null.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct AllNullEncoding {}

/// Variable-width values: `num_rows + 1` offsets into a data buffer, starting at 0.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BinaryEncoding {
    /// Width of one offset in bits (32 or 64).
    #[prost(uint32, tag = "1")]
    pub bits_per_offset: u32,
    /// Index of the offsets buffer.
    #[prost(uint32, tag = "2")]
    pub offsets_buffer: u32,
    /// Index of the data buffer.
    #[prost(uint32, tag = "3")]
    pub data_buffer: u32,
    /// The offsets as an encoded child of `num_rows + 1` integers of `bits_per_offset` bits;
    /// when set, `offsets_buffer` is unused.
    #[prost(message, optional, boxed, tag = "4")]
    pub offsets: Option<Box<Encoding>>,
}

/// `num_rows + 1` offsets (32 or 64 bits, starting at 0) of lists into the items of the page.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct ListOffsetsEncoding {
    /// Width of one offset in bits (32 or 64).
    #[prost(uint32, tag = "1")]
    pub bits_per_offset: u32,
    /// Index of the offsets buffer.
    #[prost(uint32, tag = "2")]
    pub buffer: u32,
}

/// Fixed-size lists whose `num_rows × dimension` child values are one child encoding.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FixedSizeListEncoding {
    /// Values per row.
    #[prost(uint64, tag = "1")]
    pub dimension: u64,
    /// The child values.
    #[prost(message, optional, boxed, tag = "2")]
    pub values: Option<Box<Encoding>>,
}

/// Integers stored as `value - reference`, bit-packed `bit_width` bits each in the FastLanes
/// layout: blocks of 1024 values packed into lanes of `lane_bits` bits (the last block padded).
#[derive(Clone, PartialEq, prost::Message)]
pub struct BitpackedEncoding {
    /// Width of a decoded value in bytes (1, 2, 4, 8 or 16).
    #[prost(uint32, tag = "1")]
    pub value_bytes: u32,
    /// Width of the packing lanes in bits (8, 16, 32 or 64; at most 64).
    #[prost(uint32, tag = "2")]
    pub lane_bits: u32,
    /// Bits per packed value (0 to `lane_bits`).
    #[prost(uint32, tag = "3")]
    pub bit_width: u32,
    /// The reference, `value_bytes` little-endian bytes, added back (wrapping) when decoding.
    #[prost(bytes = "vec", tag = "4")]
    pub reference: Vec<u8>,
    /// Index of the packed buffer.
    #[prost(uint32, tag = "5")]
    pub buffer: u32,
}

/// Non-decreasing integers: per block of 1024, the first value, and the differences of each
/// value from the one before it (0 for the first) bit-packed like [`BitpackedEncoding`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeltaEncoding {
    /// Width of a decoded value in bytes (1, 2, 4 or 8); also the lane width.
    #[prost(uint32, tag = "1")]
    pub value_bytes: u32,
    /// Bits per packed difference.
    #[prost(uint32, tag = "2")]
    pub bit_width: u32,
    /// Index of the buffer of block bases (`value_bytes` each).
    #[prost(uint32, tag = "3")]
    pub bases_buffer: u32,
    /// Index of the buffer of packed differences.
    #[prost(uint32, tag = "4")]
    pub deltas_buffer: u32,
}

/// Every value of the page equals `value`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ConstantEncoding {
    /// What the values are: 1 for booleans, 0 for variable-width values, otherwise the width of
    /// fixed-width values in bits.
    #[prost(uint64, tag = "1")]
    pub bits_per_value: u64,
    /// The value: one byte (0 or 1) for booleans, its bytes otherwise.
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// Runs of equal values: `num_runs` values and the (exclusive) row where each run ends.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RleEncoding {
    /// Number of runs.
    #[prost(uint64, tag = "1")]
    pub num_runs: u64,
    /// The value of each run.
    #[prost(message, optional, boxed, tag = "2")]
    pub values: Option<Box<Encoding>>,
    /// The end of each run, as 32-bit unsigned integers (increasing, the last one the page's
    /// row count).
    #[prost(message, optional, boxed, tag = "3")]
    pub run_ends: Option<Box<Encoding>>,
}

/// Indices (unsigned integers of `index_bytes` bytes) into a dictionary of distinct values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DictionaryEncoding {
    /// Number of dictionary values.
    #[prost(uint64, tag = "1")]
    pub dictionary_size: u64,
    /// Width of an index in bytes (1, 2 or 4).
    #[prost(uint32, tag = "2")]
    pub index_bytes: u32,
    /// One index per row.
    #[prost(message, optional, boxed, tag = "3")]
    pub indices: Option<Box<Encoding>>,
    /// The dictionary values.
    #[prost(message, optional, boxed, tag = "4")]
    pub dictionary: Option<Box<Encoding>>,
}

/// Strings compressed with FSST: a table of up to 255 symbols of 1 to 8 bytes, and each
/// value's codes (a byte per symbol, or 255 followed by a literal byte) as variable-width
/// values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FsstEncoding {
    /// Index of the symbol table buffer: a count byte `n`, then `n` lengths (one byte each),
    /// then `n` symbols of 8 bytes (little endian, unused bytes zero).
    #[prost(uint32, tag = "1")]
    pub symbols_buffer: u32,
    /// The compressed codes of each value (a [`BinaryEncoding`]).
    #[prost(message, optional, boxed, tag = "2")]
    pub codes: Option<Box<Encoding>>,
    /// Optional: each value's decompressed length, as unsigned integers of 32 or 64 bits. With
    /// them a scan decompresses a batch's codes in one pass; without, value by value.
    #[prost(message, optional, boxed, tag = "3")]
    pub decoded_lengths: Option<Box<Encoding>>,
}

/// Strings as sequences of tokens (OnPair): a dictionary of `num_tokens` tokens of 1 to 16 bytes,
/// and each value as the codes of its tokens, bit-packed `code_bits` wide (least significant bit
/// first) and padded to whole bytes. With 8 bits or more per code, a value of `b` bytes holds
/// `floor(8 × b / code_bits)` codes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OnPairEncoding {
    /// Index of the dictionary buffer: `num_tokens` lengths (one byte each, 1 to 16), then the
    /// tokens' bytes back to back.
    #[prost(uint32, tag = "1")]
    pub dictionary_buffer: u32,
    /// Number of tokens, 1 to `2^code_bits`.
    #[prost(uint32, tag = "2")]
    pub num_tokens: u32,
    /// Width of a code in bits, 8 to 16.
    #[prost(uint32, tag = "3")]
    pub code_bits: u32,
    /// The packed codes of each value (a [`BinaryEncoding`]).
    #[prost(message, optional, boxed, tag = "4")]
    pub codes: Option<Box<Encoding>>,
    /// Each value's decoded length in bytes (integers), optional: a scan then knows its
    /// output's offsets before decoding.
    #[prost(message, optional, boxed, tag = "5")]
    pub decoded_lengths: Option<Box<Encoding>>,
}

/// Floats that are decimals (ALP): each value `v` as the integer `n = round(v × 10^exponent ×
/// 10^-factor)`, read back as `n × 10^factor × 10^-exponent` in the values' own float type.
/// Values that do not come back bit for bit are exceptions, stored as they are with their row
/// (their integer is any other of the page's).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AlpEncoding {
    /// Width of a value in bytes: 4 (float32) or 8 (float64); also the integers' width.
    #[prost(uint32, tag = "1")]
    pub value_bytes: u32,
    /// `e`, at most 10 for float32 and 18 for float64.
    #[prost(uint32, tag = "2")]
    pub exponent: u32,
    /// `f`, at most `exponent`.
    #[prost(uint32, tag = "3")]
    pub factor: u32,
    /// The integers, one per row: signed, `value_bytes` wide.
    #[prost(message, optional, boxed, tag = "4")]
    pub integers: Option<Box<Encoding>>,
    /// Number of exceptions.
    #[prost(uint64, tag = "5")]
    pub num_exceptions: u64,
    /// Index of the buffer of exception rows: `num_exceptions` little-endian `u32`s, increasing.
    #[prost(uint32, tag = "6")]
    pub exception_rows_buffer: u32,
    /// Index of the buffer of exception values: `num_exceptions` little-endian floats.
    #[prost(uint32, tag = "7")]
    pub exception_values_buffer: u32,
}

/// Floats split in two (ALP-RD): the high `value_bytes × 8 − right_bits` bits of each value (its
/// left part) as a code into `left_parts`, the low `right_bits` bit-packed as they are. Values
/// are stored in blocks of 1024: each block's codes, then its right parts, each packed like a
/// [`BitpackedEncoding`] block. Left parts missing from the table are exceptions, stored with
/// their row.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AlpRdEncoding {
    /// Width of a value in bytes: 4 (float32) or 8 (float64); also the right parts' lane width.
    #[prost(uint32, tag = "1")]
    pub value_bytes: u32,
    /// Bits of the right part: the left part has `value_bytes × 8 − right_bits`, 1 to 16.
    #[prost(uint32, tag = "2")]
    pub right_bits: u32,
    /// Bits per code (0 to 8).
    #[prost(uint32, tag = "3")]
    pub code_bits: u32,
    /// The left part of each code: exactly `2^code_bits` little-endian `u16`s.
    #[prost(bytes = "vec", tag = "4")]
    pub left_parts: Vec<u8>,
    /// Index of the blocks buffer: per block of 1024 values, `128 × code_bits` bytes of codes
    /// (lanes of 8 bits) then `128 × right_bits` bytes of right parts (lanes of `value_bytes`).
    #[prost(uint32, tag = "5")]
    pub blocks_buffer: u32,
    /// Number of exceptions.
    #[prost(uint64, tag = "6")]
    pub num_exceptions: u64,
    /// Index of the buffer of exception rows: `num_exceptions` little-endian `u32`s, increasing.
    #[prost(uint32, tag = "7")]
    pub exception_rows_buffer: u32,
    /// Index of the buffer of exception left parts: `num_exceptions` little-endian `u16`s.
    #[prost(uint32, tag = "8")]
    pub exception_left_parts_buffer: u32,
}
