//! Hostile files with valid checksums: a finished file with its column metadata or footer edited
//! and the metadata region re-encoded ([`rewrite_metadata`], [`rewrite_file`]), so that an edit
//! reaches the reader's parsers instead of stopping at a checksum.

use looseleaf::format::proto::ColumnMetadata;
use looseleaf::format::{ColumnEntry, FileTail, decode_checked};

use super::layout::{FileLayout, column_metadata};

/// `bytes` (a finished file) with the metadata of each column passed through `edit` (given the
/// column number), re-encoded with valid checksums: the metadata region (column blocks, column
/// table, footer, tail) is rebuilt after the unchanged page data, so an edit may change the
/// blocks' lengths. The result reaches the readers' parsers as a well-formed file whose pages
/// say what `edit` made them say.
pub fn rewrite_metadata(bytes: &[u8], edit: impl FnMut(u32, &mut ColumnMetadata)) -> Vec<u8> {
    rewrite_file(bytes, |_| {}, edit)
}

/// [`rewrite_metadata`], with the footer passed through `edit_footer` too (its checksum in the
/// tail recomputed).
pub fn rewrite_file(
    bytes: &[u8],
    edit_footer: impl FnOnce(&mut looseleaf::format::proto::Footer),
    mut edit: impl FnMut(u32, &mut ColumnMetadata),
) -> Vec<u8> {
    let layout = FileLayout::parse(bytes);
    let tail = layout.tail;
    let footer = &bytes[tail.footer_range().start as usize..tail.footer_range().end as usize];
    let mut footer: looseleaf::format::proto::Footer = decode_checked(footer, tail.footer_crc, "footer").unwrap();
    edit_footer(&mut footer);
    let footer = prost::Message::encode_to_vec(&footer);
    let mut out = bytes[..layout.metadata_start() as usize].to_vec();
    let mut entries = Vec::new();
    for (column, mut metadata) in column_metadata(bytes).into_iter().enumerate() {
        edit(column as u32, &mut metadata);
        let block = prost::Message::encode_to_vec(&metadata);
        entries.push(ColumnEntry {
            offset: out.len() as u64,
            length: block.len() as u64,
            crc: crc32fast::hash(&block),
        });
        out.extend_from_slice(&block);
    }
    let table_offset = out.len() as u64;
    for entry in &entries {
        out.extend_from_slice(&entry.to_bytes());
    }
    let footer_offset = out.len() as u64;
    out.extend_from_slice(&footer);
    let tail = FileTail {
        footer_offset,
        footer_length: footer.len() as u32,
        footer_crc: crc32fast::hash(&footer),
        table_offset,
        ..tail
    };
    out.extend_from_slice(&tail.to_bytes());
    out
}
