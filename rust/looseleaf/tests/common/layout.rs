//! Where everything of a file is, parsed from its bytes with the format module alone (no reader
//! involved): [`FileLayout`] (the tail, each column's metadata block, each page's buffers) and
//! [`column_metadata`]. The I/O tests check a read's requests against it; the hostile-input tests
//! find the bytes to damage with it.

use std::ops::Range;

use looseleaf::format::proto::{ColumnMetadata, encoding::Kind};
use looseleaf::format::{ColumnEntry, FileTail, TAIL_LEN, decode_checked};

/// One page of a column, where its buffers are.
#[derive(Debug, Clone)]
pub struct PageLayout {
    /// The page's first row within its column.
    pub first_row: u64,
    /// Number of rows.
    pub num_rows: u64,
    /// Byte ranges of its buffers.
    pub buffers: Vec<Range<u64>>,
    /// Byte ranges of the data buffers of variable-width encodings.
    pub data_buffers: Vec<Range<u64>>,
    /// Byte ranges of the offsets buffers of list offsets encodings (pages of list columns).
    pub list_offsets: Vec<Range<u64>>,
    /// For pages of list columns, the number of items their lists hold.
    pub num_items: u64,
}

/// Where everything of a file is.
#[derive(Debug, Clone)]
pub struct FileLayout {
    pub tail: FileTail,
    /// Per column, its metadata block.
    pub column_blocks: Vec<Range<u64>>,
    /// Per column, its pages.
    pub columns: Vec<Vec<PageLayout>>,
}

impl FileLayout {
    /// Parses the layout of a whole file.
    pub fn parse(bytes: &[u8]) -> Self {
        let size = bytes.len() as u64;
        let tail = FileTail::parse(&bytes[(size - TAIL_LEN) as usize..], size).unwrap();
        let mut column_blocks = Vec::new();
        let mut columns = Vec::new();
        for column in 0..tail.num_columns {
            let range = tail.column_entry_range(column);
            let entry =
                ColumnEntry::parse(&bytes[range.start as usize..range.end as usize], tail.table_offset).unwrap();
            let block = &bytes[entry.offset as usize..(entry.offset + entry.length) as usize];
            let metadata: ColumnMetadata = decode_checked(block, entry.crc, "column metadata").unwrap();
            let mut first_row = 0;
            let pages = metadata
                .pages
                .iter()
                .map(|page| {
                    let buffers: Vec<Range<u64>> = page.buffers.iter().map(|b| b.offset..b.offset + b.size).collect();
                    let (mut data_buffers, mut list_offsets) = (Vec::new(), Vec::new());
                    collect_data_buffers(page.encoding.as_ref(), &buffers, &mut data_buffers, &mut list_offsets);
                    let layout = PageLayout {
                        first_row,
                        num_rows: page.num_rows,
                        buffers,
                        data_buffers,
                        list_offsets,
                        num_items: page.num_items,
                    };
                    first_row += page.num_rows;
                    layout
                })
                .collect();
            column_blocks.push(entry.range());
            columns.push(pages);
        }
        Self { tail, column_blocks, columns }
    }

    /// Start of the metadata region (the first column metadata block, or the table if there
    /// are no columns).
    pub fn metadata_start(&self) -> u64 {
        self.column_blocks.iter().map(|r| r.start).min().unwrap_or(self.tail.table_offset).min(self.tail.table_offset)
    }

    /// The (column, page index) whose buffers contain `range`, if any.
    pub fn page_of(&self, range: &Range<u64>) -> Option<(u32, usize)> {
        for (column, pages) in self.columns.iter().enumerate() {
            for (index, page) in pages.iter().enumerate() {
                let (Some(start), Some(end)) =
                    (page.buffers.iter().map(|b| b.start).min(), page.buffers.iter().map(|b| b.end).max())
                else {
                    continue;
                };
                if range.start >= start && range.end <= end {
                    return Some((column as u32, index));
                }
            }
        }
        None
    }

    /// Total size of every page buffer of `columns`.
    pub fn buffer_bytes(&self, columns: &[u32]) -> u64 {
        columns.iter().flat_map(|c| &self.columns[*c as usize]).flat_map(|p| &p.buffers).map(|b| b.end - b.start).sum()
    }
}

fn collect_data_buffers(
    encoding: Option<&looseleaf::format::proto::Encoding>,
    buffers: &[Range<u64>],
    data: &mut Vec<Range<u64>>,
    list_offsets: &mut Vec<Range<u64>>,
) {
    match encoding.and_then(|e| e.kind.as_ref()) {
        Some(Kind::Binary(binary)) => data.push(buffers[binary.data_buffer as usize].clone()),
        Some(Kind::ListOffsets(offsets)) => list_offsets.push(buffers[offsets.buffer as usize].clone()),
        Some(Kind::Nullable(nullable)) => collect_data_buffers(nullable.values.as_deref(), buffers, data, list_offsets),
        Some(Kind::FixedSizeList(list)) => collect_data_buffers(list.values.as_deref(), buffers, data, list_offsets),
        _ => {}
    }
}

/// The metadata of every column of a file, parsed with the format module alone.
pub fn column_metadata(bytes: &[u8]) -> Vec<ColumnMetadata> {
    let size = bytes.len() as u64;
    let tail = FileTail::parse(&bytes[(size - TAIL_LEN) as usize..], size).unwrap();
    (0..tail.num_columns)
        .map(|column| {
            let range = tail.column_entry_range(column);
            let entry =
                ColumnEntry::parse(&bytes[range.start as usize..range.end as usize], tail.table_offset).unwrap();
            decode_checked(&bytes[entry.offset as usize..(entry.offset + entry.length) as usize], entry.crc, "column")
                .unwrap()
        })
        .collect()
}
