//! Descriptions of a file's columns and pages, for inspection: what
//! [`FileReader::metadata`](super::FileReader::metadata) returns.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::DataType;

use super::field_scheduler::ColumnPages;
use crate::encodings::statistics::{StatValue, decode_bound};
use crate::format::proto::Compression;
use crate::format::schema::FieldColumns;

/// A description of a file's columns and pages.
#[derive(Debug, Clone, PartialEq)]
pub struct FileMetadata {
    /// The file.
    pub location: String,
    /// Number of rows.
    pub num_rows: u64,
    /// The software that wrote it.
    pub created_by: String,
    /// Format version (major, minor).
    pub format_version: (u16, u16),
    /// The columns, in column order.
    pub columns: Vec<ColumnSummary>,
}

/// A description of one column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSummary {
    /// The column's number.
    pub column: u32,
    /// Dotted path of the field it stores.
    pub field: String,
    /// The field's type.
    pub data_type: DataType,
    /// Its pages.
    pub pages: Vec<PageSummary>,
}

/// A description of one page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageSummary {
    /// Number of values.
    pub num_rows: u64,
    /// The encoding tree, as text.
    pub encoding: String,
    /// Size of each buffer in bytes (as stored).
    pub buffer_sizes: Vec<u64>,
    /// General-purpose compression of the page.
    pub compression: Compression,
    /// Null count, if statistics were written.
    pub null_count: Option<u64>,
    /// Smallest non-null value, if known.
    pub min: Option<StatValue>,
    /// Largest non-null value, if known.
    pub max: Option<StatValue>,
}

/// A summary of every column of `fields` whose metadata is in `pages`, in column order.
pub(crate) fn describe_columns(fields: &[FieldColumns], pages: &HashMap<u32, Arc<ColumnPages>>) -> Vec<ColumnSummary> {
    let mut out = Vec::new();
    for (path, owner) in FieldColumns::column_paths(fields) {
        let Some(column) = pages.get(&owner.column) else { continue };
        let data_type = owner.tree.field.data_type();
        let bound = |bytes: Option<&[u8]>| bytes.and_then(|b| decode_bound(b, data_type));
        out.push(ColumnSummary {
            column: column.column,
            field: path,
            data_type: data_type.clone(),
            pages: column
                .pages
                .iter()
                .map(|p| PageSummary {
                    num_rows: p.num_rows,
                    encoding: crate::encodings::physical::describe(p.encoding.as_ref()),
                    buffer_sizes: p.buffers.iter().map(|b| b.size).collect(),
                    compression: Compression::try_from(p.compression).unwrap_or(Compression::None),
                    null_count: p.statistics.as_ref().map(|s| s.null_count),
                    min: bound(p.statistics.as_ref().and_then(|s| s.min.as_deref())),
                    max: bound(p.statistics.as_ref().and_then(|s| s.max.as_deref())),
                })
                .collect(),
        });
    }
    out
}
