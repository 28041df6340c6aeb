//! [`FileReader`]: an open file, its schema, and the metadata of its columns.
//!
//! Opening reads the end of the file once (64 KiB, which holds the tail, the footer and the
//! column table of most files) and parses only the footer. The metadata of a column is read and
//! decoded the first time a read needs it, then cached, so reading 10 columns of a
//! 10,000-column file costs in proportion to the 10. Reads themselves are described by a
//! [`ReadBuilder`] ([`FileReader::read`]).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;

use super::ReadBuilder;
use super::field_scheduler::{ColumnPages, FieldScheduler, field_scheduler};
use super::summary::{FileMetadata, describe_columns};
use crate::error::{Error, Result, bail, ensure};
use crate::format::proto::{ColumnMetadata, Footer};
use crate::format::schema::{FieldColumns, schema_from_proto};
use crate::format::{self, ColumnEntry, FileTail, TAIL_LEN};
use crate::io::{CoalesceOptions, IoOptions, LocalFileReader, RangeReader, coalesce_ranges};
use crate::options::ReadOptions;
use crate::storage::{Location, StorageOptions};
use crate::units::ByteCount;

/// An open looseleaf file. Cheap to clone; safe to read from several tasks at once.
#[derive(Clone)]
pub struct FileReader {
    inner: Arc<FileInner>,
    /// The options of reads that do not set their own.
    options: Arc<ReadOptions>,
}

struct FileInner {
    reader: Arc<dyn RangeReader>,
    tail: FileTail,
    schema: SchemaRef,
    fields: Vec<FieldColumns>,
    num_rows: u64,
    created_by: String,
    /// The bytes read on open and where they start in the file.
    suffix: Bytes,
    suffix_start: u64,
    /// Column metadata decoded so far.
    columns: Vec<OnceLock<Arc<ColumnPages>>>,
    /// Zone maps decoded so far, by column (read by filtered reads only).
    zone_maps: std::sync::Mutex<HashMap<u32, Arc<crate::filter::ColumnZones>>>,
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader")
            .field("location", &self.location())
            .field("num_rows", &self.num_rows())
            .field("num_columns", &self.num_columns())
            .finish()
    }
}

/// The average stored bytes of a row of the columns a read projects (see
/// `batch_plan::default_batch_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowBytes {
    /// Of all the columns.
    pub total: u64,
    /// Of the widest column alone.
    pub widest_column: u64,
}

impl FileReader {
    /// Opens the file behind `reader`.
    ///
    /// # Errors
    /// [`Error::Io`] if the storage fails, [`Error::Corrupt`] if the file is not a finished
    /// looseleaf file, [`Error::Unsupported`] for another major version or unknown types.
    pub async fn open(reader: Arc<dyn RangeReader>) -> Result<Self> {
        let location = reader.location().to_string();
        Self::open_inner(reader).await.map_err(|e| e.with_location(&location))
    }

    /// Opens the file at `location`, reached with `options`.
    ///
    /// # Errors
    /// As [`open`](Self::open); [`Error::InvalidArgument`] if the store refuses `options`.
    pub async fn open_location(location: &Location, options: &StorageOptions) -> Result<Self> {
        Self::open(crate::io::range_reader(location, options)?).await
    }

    /// Opens a local file.
    pub async fn open_path(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::open(Arc::new(LocalFileReader::open(path)?)).await
    }

    /// Reads the end of the file in one request (no `HEAD` first: a suffix request returns
    /// the file's size too), and, if the footer and column table do not fit in it, both in one
    /// more; the metadata of the columns a read needs comes later, in one request per read.
    async fn open_inner(reader: Arc<dyn RangeReader>) -> Result<Self> {
        let open_read = reader.io_defaults().open_read.get().max(TAIL_LEN);
        let (mut suffix, file_size) = reader.get_suffix(open_read).await?;
        ensure!(
            suffix.len() as u64 == file_size.min(open_read),
            corrupt,
            "the end of the file could not be read ({} of {} bytes came back)",
            suffix.len(),
            file_size.min(open_read)
        );
        ensure!(file_size > 0, corrupt, "the file is empty");
        let mut suffix_start = file_size - suffix.len() as u64;
        let tail_bytes = suffix.slice(suffix.len().saturating_sub(TAIL_LEN as usize)..);
        let tail = FileTail::parse(&tail_bytes, file_size)?;
        // The column table is followed by the footer: read whatever of both is missing at once.
        let metadata_start = tail.table_offset.min(tail.footer_offset);
        if metadata_start < suffix_start {
            let before = reader.get_range(metadata_start..suffix_start).await?;
            let mut joined = Vec::with_capacity(before.len() + suffix.len());
            joined.extend_from_slice(&before);
            joined.extend_from_slice(&suffix);
            suffix = Bytes::from(joined);
            suffix_start = metadata_start;
        }
        let footer_start = (tail.footer_offset - suffix_start) as usize;
        let footer_bytes = suffix.slice(footer_start..footer_start + tail.footer_length as usize);
        let footer: Footer = format::decode_checked(&footer_bytes, tail.footer_crc, "footer")?;
        format::check_required_features(&footer)?;
        let (schema, fields) = schema_from_proto(&footer.fields, &footer.metadata, tail.num_columns)?;
        let columns = (0..tail.num_columns).map(|_| OnceLock::new()).collect();
        Ok(Self {
            options: Arc::default(),
            inner: Arc::new(FileInner {
                reader,
                tail,
                schema,
                fields,
                num_rows: footer.num_rows,
                created_by: footer.created_by,
                suffix,
                suffix_start,
                columns,
                zone_maps: Default::default(),
            }),
        })
    }

    /// The file's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.inner.schema
    }

    /// Number of rows.
    pub fn num_rows(&self) -> u64 {
        self.inner.num_rows
    }

    /// Number of columns (a nested field may have several).
    pub fn num_columns(&self) -> u32 {
        self.inner.tail.num_columns
    }

    /// The file's location.
    pub fn location(&self) -> &str {
        self.inner.reader.location()
    }

    /// The software that wrote the file.
    pub fn created_by(&self) -> &str {
        &self.inner.created_by
    }

    /// The I/O settings reads use unless told otherwise (they depend on the storage).
    pub fn io_defaults(&self) -> IoOptions {
        self.inner.reader.io_defaults()
    }

    /// This file with `options` as the options of every read that does not set its own (the
    /// file itself is shared, not opened again).
    pub fn with_options(&self, options: ReadOptions) -> Self {
        Self { inner: self.inner.clone(), options: Arc::new(options) }
    }

    /// The options of reads that do not set their own.
    pub fn options(&self) -> &ReadOptions {
        &self.options
    }

    /// The storage behind the file.
    pub(crate) fn range_reader(&self) -> &Arc<dyn RangeReader> {
        &self.inner.reader
    }

    /// The dotted path of every column, by column number (see [`FieldColumns::column_paths`]).
    pub fn column_paths(&self) -> HashMap<u32, String> {
        FieldColumns::column_paths(&self.inner.fields).into_iter().map(|(path, owner)| (owner.column, path)).collect()
    }

    /// The fields and the columns that store them.
    pub fn field_columns(&self) -> &[FieldColumns] {
        &self.inner.fields
    }

    /// A read of the whole file, to narrow down with the builder's methods.
    pub fn read(&self) -> ReadBuilder {
        ReadBuilder::new(self.clone())
    }

    /// Reads the rows at `indices` (any order, repeats allowed) of `columns` (all if `None`)
    /// and returns them in that order. See [`ReadBuilder::take`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index out of range or an unknown column.
    pub async fn take(&self, indices: &[u64], columns: Option<&[String]>) -> Result<RecordBatch> {
        let mut read = self.read();
        if let Some(columns) = columns {
            read = read.with_columns(columns.to_vec());
        }
        read.take(indices).await
    }

    /// A description of every column and page (reads all column metadata).
    pub async fn metadata(&self) -> Result<FileMetadata> {
        let all: Vec<u32> = (0..self.num_columns()).collect();
        let pages = self.load_columns(&all).await?;
        let columns = describe_columns(&self.inner.fields, &pages);
        Ok(FileMetadata {
            location: self.location().to_string(),
            num_rows: self.num_rows(),
            created_by: self.inner.created_by.clone(),
            format_version: (self.inner.tail.major, self.inner.tail.minor),
            columns,
        })
    }

    /// Decoded metadata of `columns`, reading what is not cached yet in as few reads as
    /// possible. Errors name the file: besides the reads, which name it anyway, the public
    /// entry points that need only metadata ([`Self::metadata`], the page statistics) return
    /// these errors as they are.
    pub(crate) async fn load_columns(&self, columns: &[u32]) -> Result<HashMap<u32, Arc<ColumnPages>>> {
        self.load_columns_inner(columns).await.map_err(|e| e.with_location(self.location()))
    }

    async fn load_columns_inner(&self, columns: &[u32]) -> Result<HashMap<u32, Arc<ColumnPages>>> {
        let inner = &self.inner;
        let mut out = HashMap::new();
        let mut missing = Vec::new();
        for &column in columns {
            let slot = inner
                .columns
                .get(column as usize)
                .ok_or_else(|| Error::internal(format!("column {column} out of range")))?;
            match slot.get() {
                Some(pages) => {
                    out.insert(column, pages.clone());
                }
                None => missing.push(column),
            }
        }
        if missing.is_empty() {
            return Ok(out);
        }
        missing.sort_unstable();
        missing.dedup();
        let metadata_end = inner.tail.table_offset;
        let entry_ranges: Vec<_> = missing.iter().map(|c| inner.tail.column_entry_range(*c)).collect();
        let entries = self
            .read_metadata(&entry_ranges)
            .await?
            .iter()
            .map(|bytes| ColumnEntry::parse(bytes, metadata_end))
            .collect::<Result<Vec<_>>>()?;
        let blocks = self.read_metadata(&entries.iter().map(|e| e.range()).collect::<Vec<_>>()).await?;
        let paths = self.column_paths();
        for ((column, entry), bytes) in missing.into_iter().zip(entries).zip(blocks) {
            let metadata: ColumnMetadata =
                format::decode_checked(&bytes, entry.crc, &format!("metadata of column {column}"))?;
            let path = paths.get(&column).map_or("", String::as_str);
            let pages = Arc::new(ColumnPages::try_new(column, path, metadata, metadata_end)?);
            let pages = inner.columns[column as usize].get_or_init(|| pages).clone();
            out.insert(column, pages);
        }
        Ok(out)
    }

    /// Reads metadata ranges, from the bytes read on open where they hold them.
    async fn read_metadata(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let inner = &self.inner;
        let outside: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < inner.suffix_start).cloned().collect();
        let reads =
            coalesce_ranges(&outside, CoalesceOptions { gap: ByteCount::kib(64), max_read: ByteCount(u64::MAX) });
        let loaded = futures::future::try_join_all(reads.iter().map(|r| inner.reader.get_range(r.clone()))).await?;
        ranges
            .iter()
            .map(|range| {
                // The block of a column without pages is empty: `coalesce_ranges` makes no read
                // for it, and it needs none.
                if range.is_empty() {
                    return Ok(Bytes::new());
                }
                let (base, bytes) = if range.start >= inner.suffix_start {
                    (inner.suffix_start, &inner.suffix)
                } else {
                    let i = reads.partition_point(|read| read.end <= range.start);
                    match (reads.get(i), loaded.get(i)) {
                        (Some(read), Some(bytes)) if read.start <= range.start => (read.start, bytes),
                        _ => bail!(internal, "metadata range {range:?} of {} was not read", self.location()),
                    }
                };
                let start = (range.start - base) as usize;
                let end = (range.end - base) as usize;
                ensure!(end <= bytes.len(), corrupt, "metadata range {range:?} lies past the end of the file");
                Ok(bytes.slice(start..end))
            })
            .collect()
    }

    /// Builds the field schedulers of `fields` (top-level fields, possibly narrowed), and
    /// returns them with the average stored bytes of a row of those fields.
    pub(crate) async fn field_schedulers(
        &self,
        fields: &[FieldColumns],
    ) -> Result<(Vec<Arc<dyn FieldScheduler>>, RowBytes)> {
        let columns: Vec<u32> = fields.iter().flat_map(|f| f.columns()).collect();
        let pages = self.load_columns(&columns).await?;
        let rows = self.num_rows().max(1);
        let column_bytes = || columns.iter().filter_map(|c| pages.get(c)).map(|c| c.num_bytes());
        let row_bytes = RowBytes {
            total: column_bytes().sum::<u64>() / rows,
            widest_column: column_bytes().max().unwrap_or(0) / rows,
        };
        let schedulers =
            fields.iter().map(|tree| field_scheduler(tree, &pages, self.num_rows())).collect::<Result<_>>()?;
        Ok((schedulers, row_bytes))
    }

    /// The decoded zone map of `column`, if an earlier read decoded it.
    pub(crate) fn cached_zones(&self, column: u32) -> Option<Arc<crate::filter::ColumnZones>> {
        self.inner.zone_maps.lock().unwrap_or_else(|p| p.into_inner()).get(&column).cloned()
    }

    /// Keeps the decoded zone map of `column` for later reads.
    pub(crate) fn cache_zones(&self, column: u32, zones: Arc<crate::filter::ColumnZones>) {
        self.inner.zone_maps.lock().unwrap_or_else(|p| p.into_inner()).insert(column, zones);
    }

    /// The column trees of the projected fields, in the requested order.
    pub(crate) fn project(&self, columns: Option<&[String]>) -> Result<Vec<FieldColumns>> {
        match columns {
            None => Ok(self.inner.fields.clone()),
            Some(paths) => super::projection::project(&self.inner.fields, paths),
        }
    }
}
