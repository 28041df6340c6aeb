//! The on-disk layout of a looseleaf file and its (de)serialisation.
//!
//! Everything here is synchronous and pure: it turns bytes into metadata structures and back,
//! checking every length, offset and checksum so that a damaged file gives an
//! [`Error::Corrupt`] rather than a panic or a huge allocation.
//!
//! ```text
//! offset 0        "LEAF" major:u16 minor:u16                         file header (8 bytes)
//!                 page buffers, each starting on a 64-byte boundary
//!                 column metadata blocks (protobuf `ColumnMetadata`, one per column)
//! table_offset    column table: num_columns × 24-byte entries
//!                   { offset:u64, length:u64, crc32:u32, reserved:u32 }
//! footer_offset   footer (protobuf `Footer`: schema, row count, key/value metadata)
//! len - 40        tail (40 bytes, little endian):
//!                   footer_offset:u64 footer_length:u32 footer_crc32:u32
//!                   table_offset:u64 num_columns:u32 major:u16 minor:u16
//!                   tail_crc32:u32 (of the previous 32 bytes) "LEAF"
//! ```
//!
//! The tail is the only thing a reader needs to find everything else; it is written last, so a
//! file whose writer did not finish has no valid tail and is rejected on open. The column table
//! has fixed-width entries so that a reader of a wide file can find the metadata of the few
//! columns it reads without parsing the metadata of the others.

pub mod proto;
pub mod schema;

use crate::error::{Error, Result, bail, ensure};

/// The 4-byte magic number at the start and the end of every file.
pub const MAGIC: &[u8; 4] = b"LEAF";
/// Major format version written. A reader refuses a major version it does not know: 2.0 added
/// page checksums and required features, and made the 1.0 additions an older reader would
/// misread (page compression, encoded string offsets) a reason to refuse the file.
pub const MAJOR_VERSION: u16 = 2;
/// Minor format version written: additions a reader of the same major version either ignores
/// safely or refuses through [`Footer::required_features`](proto::Footer::required_features).
/// 2.1 added zone maps, 2.2 the ALP-RD encoding of floats, 2.3 the ALP encoding of floats, 2.4
/// the OnPair encoding of strings (an older reader refuses their pages as an unknown encoding),
/// 2.5 bit-packed 16-byte values in lanes narrower than 64 bits (an older reader refuses those
/// pages as corrupt).
pub const MINOR_VERSION: u16 = 5;
/// The major versions this reader reads: files written before 2.0 stay readable.
pub const READABLE_MAJOR_VERSIONS: std::ops::RangeInclusive<u16> = 1..=MAJOR_VERSION;
/// The required features this reader understands. Version 2.0 defines none: a later minor
/// version that adds something a 2.0 reader would misread names it in the footer's
/// `required_features`, and a 2.0 reader refuses the file with an error naming it.
pub const KNOWN_FEATURES: &[&str] = &[];
/// Length of the file header.
pub const HEADER_LEN: u64 = 8;
/// Length of the fixed tail at the end of the file.
pub const TAIL_LEN: u64 = 40;
/// Length of one column table entry.
pub const COLUMN_ENTRY_LEN: u64 = 24;
/// Alignment of every page buffer, so decoders can reinterpret buffers without copying.
pub const BUFFER_ALIGNMENT: u64 = 64;

/// Whether checksums are verified: always, except in the fuzzer's builds (the `fuzzing`
/// feature, see `docs/fuzzing.md`), where a mutated file must reach the parsers behind its
/// checksums: libFuzzer's mutations cannot keep a CRC-32 in step, so with verification every
/// mutation of metadata would stop at a checksum error. A new checksum check honours it too.
pub const VERIFY_CHECKSUMS: bool = !cfg!(feature = "fuzzing");

/// The file header.
pub fn header_bytes() -> [u8; HEADER_LEN as usize] {
    let mut out = [0u8; HEADER_LEN as usize];
    out[..4].copy_from_slice(MAGIC);
    out[4..6].copy_from_slice(&MAJOR_VERSION.to_le_bytes());
    out[6..8].copy_from_slice(&MINOR_VERSION.to_le_bytes());
    out
}

/// The fixed-size tail at the end of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileTail {
    /// Offset of the footer.
    pub footer_offset: u64,
    /// Length of the footer.
    pub footer_length: u32,
    /// CRC-32 of the footer bytes.
    pub footer_crc: u32,
    /// Offset of the column table.
    pub table_offset: u64,
    /// Number of columns (entries of the column table).
    pub num_columns: u32,
    /// Major version the file was written with.
    pub major: u16,
    /// Minor version the file was written with.
    pub minor: u16,
}

impl FileTail {
    /// Serialises the tail.
    pub fn to_bytes(&self) -> [u8; TAIL_LEN as usize] {
        let mut out = [0u8; TAIL_LEN as usize];
        out[0..8].copy_from_slice(&self.footer_offset.to_le_bytes());
        out[8..12].copy_from_slice(&self.footer_length.to_le_bytes());
        out[12..16].copy_from_slice(&self.footer_crc.to_le_bytes());
        out[16..24].copy_from_slice(&self.table_offset.to_le_bytes());
        out[24..28].copy_from_slice(&self.num_columns.to_le_bytes());
        out[28..30].copy_from_slice(&self.major.to_le_bytes());
        out[30..32].copy_from_slice(&self.minor.to_le_bytes());
        let crc = crc32fast::hash(&out[0..32]);
        out[32..36].copy_from_slice(&crc.to_le_bytes());
        out[36..40].copy_from_slice(MAGIC);
        out
    }

    /// Parses and checks the tail of a file of `file_size` bytes.
    ///
    /// # Errors
    /// [`Error::Corrupt`] (without a location) if the magic, version, checksum or any offset is
    /// wrong.
    pub fn parse(bytes: &[u8], file_size: u64) -> Result<Self> {
        ensure!(
            file_size >= HEADER_LEN + TAIL_LEN,
            corrupt,
            "file is {file_size} bytes, too small to be a looseleaf file (at least {} bytes)",
            HEADER_LEN + TAIL_LEN
        );
        ensure!(bytes.len() == TAIL_LEN as usize, internal, "tail slice has the wrong length");
        if &bytes[36..40] != MAGIC {
            bail!(
                corrupt,
                "no looseleaf magic at the end of the file: not a looseleaf file, or its writer did not finish"
            );
        }
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or_default());
        let u16_at = |i: usize| u16::from_le_bytes(bytes[i..i + 2].try_into().unwrap_or_default());
        let stored_crc = u32_at(32);
        let crc = crc32fast::hash(&bytes[0..32]);
        ensure!(
            crc == stored_crc || !VERIFY_CHECKSUMS,
            corrupt,
            "file tail checksum mismatch (the last 40 bytes are damaged)"
        );
        let major = u16_at(28);
        if !READABLE_MAJOR_VERSIONS.contains(&major) {
            return Err(Error::unsupported(format!(
                "file format version {major}.{} (this reader reads versions {}.x to {}.x)",
                u16_at(30),
                READABLE_MAJOR_VERSIONS.start(),
                READABLE_MAJOR_VERSIONS.end()
            )));
        }
        let tail = Self {
            footer_offset: u64_at(0),
            footer_length: u32_at(8),
            footer_crc: u32_at(12),
            table_offset: u64_at(16),
            num_columns: u32_at(24),
            major,
            minor: u16_at(30),
        };
        let metadata_end = file_size - TAIL_LEN;
        let table_end =
            (tail.num_columns as u64).checked_mul(COLUMN_ENTRY_LEN).and_then(|n| n.checked_add(tail.table_offset));
        ensure!(
            tail.table_offset >= HEADER_LEN && table_end.is_some_and(|end| end <= tail.footer_offset),
            corrupt,
            "column table at {} with {} entries does not fit before the footer at {}",
            tail.table_offset,
            tail.num_columns,
            tail.footer_offset
        );
        ensure!(
            tail.footer_offset.checked_add(tail.footer_length as u64) == Some(metadata_end),
            corrupt,
            "footer at {} of {} bytes does not end where the tail starts ({metadata_end})",
            tail.footer_offset,
            tail.footer_length
        );
        Ok(tail)
    }

    /// Byte range of the footer.
    pub fn footer_range(&self) -> std::ops::Range<u64> {
        self.footer_offset..self.footer_offset + self.footer_length as u64
    }

    /// Byte range of the column table entry of `column`.
    pub fn column_entry_range(&self, column: u32) -> std::ops::Range<u64> {
        let start = self.table_offset + column as u64 * COLUMN_ENTRY_LEN;
        start..start + COLUMN_ENTRY_LEN
    }
}

/// Where the metadata block of one column is, and its checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnEntry {
    /// Offset of the column's metadata block.
    pub offset: u64,
    /// Length of the column's metadata block.
    pub length: u64,
    /// CRC-32 of the block.
    pub crc: u32,
}

impl ColumnEntry {
    /// Serialises the entry.
    pub fn to_bytes(&self) -> [u8; COLUMN_ENTRY_LEN as usize] {
        let mut out = [0u8; COLUMN_ENTRY_LEN as usize];
        out[0..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.length.to_le_bytes());
        out[16..20].copy_from_slice(&self.crc.to_le_bytes());
        out
    }

    /// Parses an entry and checks that the block lies inside the metadata region
    /// (`HEADER_LEN..metadata_end`) and that the reserved bytes are zero.
    pub fn parse(bytes: &[u8], metadata_end: u64) -> Result<Self> {
        ensure!(bytes.len() == COLUMN_ENTRY_LEN as usize, internal, "column entry slice has the wrong length");
        ensure!(bytes[20..24] == [0; 4], corrupt, "column table entry has non-zero reserved bytes");
        let entry = Self {
            offset: u64::from_le_bytes(bytes[0..8].try_into().unwrap_or_default()),
            length: u64::from_le_bytes(bytes[8..16].try_into().unwrap_or_default()),
            crc: u32::from_le_bytes(bytes[16..20].try_into().unwrap_or_default()),
        };
        ensure!(
            entry.offset >= HEADER_LEN && entry.offset.checked_add(entry.length).is_some_and(|e| e <= metadata_end),
            corrupt,
            "column metadata block at {} of {} bytes lies outside the file's metadata",
            entry.offset,
            entry.length
        );
        Ok(entry)
    }

    /// Byte range of the block.
    pub fn range(&self) -> std::ops::Range<u64> {
        self.offset..self.offset + self.length
    }
}

/// Refuses a footer that requires a feature this reader does not know ([`KNOWN_FEATURES`]).
///
/// # Errors
/// [`Error::Unsupported`] naming the first unknown feature.
pub fn check_required_features(footer: &proto::Footer) -> Result<()> {
    match footer.required_features.iter().find(|f| !KNOWN_FEATURES.contains(&f.as_str())) {
        Some(unknown) => Err(Error::unsupported(format!(
            "the file requires the format feature {unknown:?}, which this reader does not know \
             (written by {:?})",
            footer.created_by
        ))),
        None => Ok(()),
    }
}

/// Checks a block against its CRC-32 and decodes it as the protobuf message `M`.
pub fn decode_checked<M: prost::Message + Default>(bytes: &[u8], crc: u32, what: &str) -> Result<M> {
    ensure!(crc32fast::hash(bytes) == crc || !VERIFY_CHECKSUMS, corrupt, "{what} checksum mismatch");
    M::decode(bytes).map_err(|e| Error::Corrupt {
        location: None,
        offset: None,
        message: format!("{what} does not decode"),
        source: Some(std::sync::Arc::new(e)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_round_trip_and_damage() {
        let tail = FileTail {
            footer_offset: 1000,
            footer_length: 60,
            footer_crc: 7,
            table_offset: 952,
            num_columns: 2,
            major: MAJOR_VERSION,
            minor: MINOR_VERSION,
        };
        let bytes = tail.to_bytes();
        assert_eq!(FileTail::parse(&bytes, 1100).unwrap(), tail);
        for i in 0..TAIL_LEN as usize {
            let mut damaged = bytes;
            damaged[i] ^= 0x10;
            assert!(FileTail::parse(&damaged, 1100).is_err(), "flipped byte {i} not detected");
        }
        assert!(FileTail::parse(&bytes, 1101).is_err());
    }

    #[test]
    fn versions_read_and_refused() {
        let tail = |major| {
            FileTail {
                footer_offset: 1000,
                footer_length: 60,
                footer_crc: 7,
                table_offset: 952,
                num_columns: 2,
                major,
                minor: 3,
            }
            .to_bytes()
        };
        for major in READABLE_MAJOR_VERSIONS {
            assert_eq!(FileTail::parse(&tail(major), 1100).unwrap().major, major);
        }
        for major in [0, MAJOR_VERSION + 1] {
            let error = FileTail::parse(&tail(major), 1100).unwrap_err();
            assert!(matches!(error, Error::Unsupported { .. }), "{error}");
            assert!(error.to_string().contains(&format!("version {major}.3")), "{error}");
        }
    }

    #[test]
    fn unknown_required_features_are_refused_by_name() {
        let mut footer = proto::Footer { created_by: "a later writer".into(), ..Default::default() };
        check_required_features(&footer).unwrap();
        footer.required_features = vec!["time-travel".into()];
        let error = check_required_features(&footer).unwrap_err();
        assert!(matches!(error, Error::Unsupported { .. }), "{error}");
        assert!(error.to_string().contains("\"time-travel\""), "{error}");
    }
}
