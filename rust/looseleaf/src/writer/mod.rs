//! [`FileWriter`]: writing Arrow record batches to a looseleaf file.
//!
//! Each column buffers the arrays it receives until they hold a page worth of bytes
//! ([`WriterOptions::page_size`]), then queues the page to be encoded on another thread and
//! written in turn ([`encoding_queue`]); a batch much larger than a page is cut into pages
//! directly. Memory is therefore bounded by about one page per column plus the queue's pages
//! (two per core, and two more), whatever the batch sizes.
//!
//! Nested fields are split into their columns first ([`shred`]): struct children and list
//! items go to their own columns, with struct validity and list lengths in the parent's.
//!
//! The file goes through an object store multipart upload, which makes it visible under its
//! name only when [`FileWriter::finish`] completes (the local store writes a staging file,
//! syncs it and renames it, then syncs the directory: a finished file survives a crash). A
//! writer dropped or aborted before that leaves nothing a reader would open.

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use object_store::path::Path;
use object_store::{ObjectStore, WriteMultipart};

mod column;
mod encoding_queue;
mod parallel;
mod shred;
mod upload;
mod zone_map;

use crate::encodings::policy::{ColumnPolicies, EncodingPolicy};
use crate::encodings::statistics::ValueKind;
use crate::error::{Error, Result, bail, ensure};
use crate::format::proto::{BufferLocation, ColumnMetadata, Compression, Footer, PageMetadata, ZoneMapLocation};
use crate::format::schema::{FieldColumns, assign_columns, schema_to_proto};
use crate::format::{self, BUFFER_ALIGNMENT, ColumnEntry, FileTail, MAJOR_VERSION, MINOR_VERSION};
use crate::storage::{Location, Retry, StorageOptions, StoreError, StorePurpose, retrying};
use column::{ColumnWriter, EncodedPage, PageRows};
use encoding_queue::EncodingQueue;
use upload::ConfirmedUpload;
use zone_map::ZoneMapBuilder;

/// Default target size of a page: 8 MiB.
pub const DEFAULT_PAGE_SIZE: u64 = 8 * 1024 * 1024;

/// Default rows per zone of a zone map: see `docs/benchmarks.md` ("Filtered reads") for the
/// measurement behind it.
pub const DEFAULT_ZONE_MAP_ROWS: u64 = 8192;

/// How many multipart uploads may be in flight while writing.
const UPLOAD_CONCURRENCY: usize = 4;

/// Settings of a [`FileWriter`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Target encoded size of a page in bytes (before compression; the writer sizes pages by
    /// their unencoded values). A page holds at least one row, so a single larger value makes a
    /// larger page.
    pub page_size: u64,
    /// Encodings forced or forbidden per column (dotted paths); others are chosen per page.
    pub encodings: ColumnPolicies,
    /// General-purpose compression of every page (none by default: it costs random access).
    pub compression: Compression,
    /// Zstandard level, when `compression` is [`Compression::Zstd`].
    pub compression_level: i32,
    /// Whether to store per-page statistics (null count, min, max).
    pub statistics: bool,
    /// Whether to store a CRC-32 of every page buffer, which readers verify (on by default:
    /// about 20 GB/s on one core, so a small share of writing and reading).
    pub checksums: bool,
    /// Rows per zone of the zone maps of flat top-level columns (null count, minimum and
    /// maximum per zone, which filtered reads skip by); 0 writes none.
    pub zone_map_rows: u64,
}

impl WriterOptions {
    /// Sets the target page size in bytes.
    pub fn with_page_size(self, page_size: u64) -> Self {
        Self { page_size, ..self }
    }

    /// Forces or forbids encodings for the column at `path` (dotted for nested fields).
    pub fn with_encoding_policy(mut self, path: impl Into<String>, policy: EncodingPolicy) -> Self {
        self.encodings.columns.insert(path.into(), policy);
        self
    }

    /// The policy of columns not named by [`WriterOptions::with_encoding_policy`].
    pub fn with_default_encoding_policy(mut self, policy: EncodingPolicy) -> Self {
        self.encodings.default = policy;
        self
    }

    /// Compresses every page with `compression` (Zstandard at `level`).
    pub fn with_compression(self, compression: Compression, level: i32) -> Self {
        Self { compression, compression_level: level, ..self }
    }

    /// Compresses every page with the codec `name`: `none`, `lz4` or `zstd` (at `level`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the codecs for another name.
    pub fn with_compression_named(self, name: &str, level: i32) -> Result<Self> {
        let codec = match name {
            "none" => Compression::None,
            "lz4" => Compression::Lz4,
            "zstd" => Compression::Zstd,
            other => return Err(Error::invalid_argument(format!("unknown compression {other:?} (none, lz4, zstd)"))),
        };
        Ok(self.with_compression(codec, level))
    }

    /// Whether to store per-page statistics.
    pub fn with_statistics(self, statistics: bool) -> Self {
        Self { statistics, ..self }
    }

    /// Whether to store a checksum of every page buffer.
    pub fn with_checksums(self, checksums: bool) -> Self {
        Self { checksums, ..self }
    }

    /// Rows per zone of the zone maps (0: no zone maps).
    pub fn with_zone_map_rows(self, zone_map_rows: u64) -> Self {
        Self { zone_map_rows, ..self }
    }
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            page_size: DEFAULT_PAGE_SIZE,
            encodings: ColumnPolicies::default(),
            compression: Compression::None,
            compression_level: 3,
            statistics: true,
            checksums: true,
            zone_map_rows: DEFAULT_ZONE_MAP_ROWS,
        }
    }
}

/// Batches of at least this many bytes are cut into pages and zoned on several threads, a
/// column per job; smaller ones cost less than starting the threads.
const PARALLEL_CUTTING_BYTES: usize = 1 << 20;

/// Threads that cut (and zone) the columns of a batch, and pages encoded at once: one per core.
fn encoding_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Writes record batches to a looseleaf file.
pub struct FileWriter {
    upload: Option<WriteMultipart>,
    location: String,
    schema: SchemaRef,
    fields: Vec<FieldColumns>,
    columns: Vec<ColumnWriter>,
    /// The zone map being built of each column that gets one, by column number.
    zone_maps: Vec<Option<ZoneMapBuilder>>,
    /// Pages being encoded, written in the order they were cut.
    encoding: EncodingQueue,
    options: WriterOptions,
    /// Bytes written so far (the offset of the next byte).
    position: u64,
    num_rows: u64,
    /// Set when a write failed part way: columns may then disagree on their row counts, so the
    /// file must not be finished.
    failed: bool,
    /// The runtime the writer was created on, where a writer dropped unfinished aborts its
    /// upload when the thread dropping it has none (Python's garbage collector, a JVM thread).
    runtime: Option<tokio::runtime::Handle>,
    /// Values the store's errors must not show (see [`StoreError`]).
    secrets: Vec<String>,
}

impl std::fmt::Debug for FileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWriter").field("location", &self.location).field("num_rows", &self.num_rows).finish()
    }
}

impl FileWriter {
    /// Starts writing a file of `schema` to `path` in `store`; `location` names the file in
    /// error messages.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the schema has a type the format cannot store, [`Error::Io`] if
    /// the upload cannot be started.
    pub async fn try_new(
        store: Arc<dyn ObjectStore>,
        path: &Path,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Self> {
        Self::try_new_named(store, path, path.to_string(), Vec::new(), schema, options).await
    }

    /// As [`FileWriter::try_new`], naming the file `location` in errors from the start, and
    /// scrubbing `secrets` (the store's credentials) out of the store's errors.
    pub(crate) async fn try_new_named(
        store: Arc<dyn ObjectStore>,
        path: &Path,
        location: String,
        secrets: Vec<String>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Self> {
        let fields = assign_columns(&schema)?;
        // Check now that the footer can describe the schema, not after all the data is written.
        schema_to_proto(&schema)?;
        let columns: Vec<ColumnWriter> = shred::column_kinds(&fields)?
            .into_iter()
            .map(|(path, kind, data_type)| {
                let policy = options.encodings.get(&path);
                ColumnWriter::new(kind, data_type, policy, &options)
            })
            .collect();
        ensure!(options.page_size > 0, invalid, "page_size must be positive");
        let mut zone_maps: Vec<Option<ZoneMapBuilder>> = std::iter::repeat_with(|| None).take(columns.len()).collect();
        if options.zone_map_rows > 0 {
            // Flat top-level columns only: their values are the file's rows.
            for tree in fields.iter().filter(|tree| tree.children.is_empty()) {
                let kind = ValueKind::of(tree.field.data_type());
                if let Some(slot) = tree.column.and_then(|c| zone_maps.get_mut(c as usize))
                    && kind != ValueKind::Opaque
                {
                    *slot = Some(ZoneMapBuilder::new(options.zone_map_rows, kind));
                }
            }
        }
        let threads = encoding_threads();
        // Enough pages for every thread to encode one while as many wait to be written behind
        // a slow one (a page of comments takes ten times as long as one of dates).
        let queued_bytes = options.page_size.saturating_mul(2 * threads as u64 + 2);
        // The start of an upload is a `POST` the store does not repeat when its answer is lost;
        // starting another is harmless but for the first, which the client never learnt of (a
        // bucket's lifecycle rule for incomplete uploads removes those).
        let upload = retrying(&secrets, Retry::LostAnswers, || store.put_multipart_opts(path, Default::default()))
            .await
            .map_err(|e| e.at(location.clone()))?;
        let mut writer = Self {
            upload: Some(WriteMultipart::new(Box::new(ConfirmedUpload::new(upload, store, path.clone())))),
            location,
            schema,
            fields,
            columns,
            zone_maps,
            encoding: EncodingQueue::new(queued_bytes),
            options,
            position: 0,
            num_rows: 0,
            failed: false,
            runtime: tokio::runtime::Handle::try_current().ok(),
            secrets,
        };
        writer.write_bytes(&format::header_bytes()).await?;
        Ok(writer)
    }

    /// Starts writing a file at `location`, reached with `storage`, visible only once finished
    /// (a local file is written under a temporary name and renamed; an object is a multipart
    /// upload completed by [`finish`](Self::finish)).
    ///
    /// # Errors
    /// As [`try_new`](Self::try_new); [`Error::InvalidArgument`] if the store refuses `storage`.
    pub async fn create_location(
        location: &Location,
        schema: SchemaRef,
        options: WriterOptions,
        storage: &StorageOptions,
    ) -> Result<Self> {
        let (store, path) = location.object_store(storage, StorePurpose::Write)?;
        Self::try_new_named(store, &path, location.to_string(), storage.secrets(), schema, options).await
    }

    /// Starts writing a local file at `path` (absolute or relative to the current directory).
    pub async fn create_path(
        path: impl AsRef<std::path::Path>,
        schema: SchemaRef,
        options: WriterOptions,
    ) -> Result<Self> {
        let path = path.as_ref();
        let display = path.display().to_string();
        let absolute = std::path::absolute(path).map_err(|e| Error::io(display.clone(), e))?;
        let store_path = Path::from_absolute_path(&absolute).map_err(|e| Error::io(display.clone(), e))?;
        // Synced before the rename that makes it visible (see `Location::object_store`).
        let store = Arc::new(object_store::local::LocalFileSystem::new().with_fsync(true));
        Self::try_new_named(store, &store_path, display, Vec::new(), schema, options).await
    }

    /// The schema being written.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows written so far.
    pub fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// Appends the rows of `batch`, queueing the pages it fills to be encoded and written.
    ///
    /// # Errors
    /// [`Error::Schema`] if the batch does not match the writer's schema; [`Error::Io`] if the
    /// storage fails; the error of a page that cannot be encoded (a forced encoding that
    /// cannot store it: [`Error::InvalidArgument`]), reported by the write that queued it or by
    /// a later call, [`FileWriter::finish`] at the latest. After any error the writer is
    /// unusable and should be dropped.
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check_usable()?;
        self.check_batch(batch).map_err(|e| self.locate(e))?;
        let result = self.write_columns(batch).await;
        if result.is_err() {
            self.failed = true;
        }
        result.map_err(|e| self.locate(e))
    }

    async fn write_columns(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut arrays = Vec::with_capacity(self.columns.len());
        for (tree, array) in self.fields.iter().zip(batch.columns()) {
            shred::shred(tree, array, &mut arrays)?;
        }
        let mut slots: Vec<Option<arrow_array::ArrayRef>> = vec![None; self.columns.len()];
        for (column, array) in arrays {
            let slot = slots.get_mut(column as usize).ok_or_else(|| Error::internal(format!("no column {column}")))?;
            ensure!(slot.replace(array).is_none(), internal, "column {column} shredded twice");
        }
        let threads = if batch.get_array_memory_size() >= PARALLEL_CUTTING_BYTES { encoding_threads() } else { 1 };
        let page_size = self.options.page_size;
        // Each column's writer and zone map with its array: disjoint borrows, cut into pages
        // (and zoned) at once; the pages are encoded in the queue.
        let jobs: Vec<_> = self
            .columns
            .iter_mut()
            .zip(self.zone_maps.iter_mut())
            .zip(slots)
            .enumerate()
            .filter_map(|(index, ((writer, zones), array))| array.map(|array| (index, writer, zones, array)))
            .collect();
        let cut = parallel::map_in_parallel(jobs, threads, |(index, writer, zones, array)| {
            let zoned = zones.as_mut().map_or(Ok(()), |zones| zones.append(&array));
            (index, zoned.map(|()| writer.append(array, page_size)))
        });
        for (index, pages) in cut {
            for rows in pages? {
                self.queue_page(index, rows).await?;
            }
        }
        self.num_rows += batch.num_rows() as u64;
        Ok(())
    }

    fn check_usable(&self) -> Result<()> {
        ensure!(
            !self.failed,
            invalid,
            "{}: an earlier write failed, so the file cannot be completed; abort it",
            self.location
        );
        Ok(())
    }

    /// Names the file in errors that do not yet.
    fn locate(&self, error: Error) -> Error {
        match error {
            Error::Schema(message) => Error::Schema(format!("{}: {message}", self.location)),
            other => other.with_location(&self.location),
        }
    }

    fn check_batch(&self, batch: &RecordBatch) -> Result<()> {
        let expected = self.schema.fields();
        let got = batch.schema();
        if got.fields().len() != expected.len() {
            bail!(schema, "batch has {} columns, the file's schema has {}", got.fields().len(), expected.len());
        }
        for ((want, have), array) in expected.iter().zip(got.fields()).zip(batch.columns()) {
            ensure!(
                want.name() == have.name() && want.data_type() == have.data_type(),
                schema,
                "batch column {:?} of type {} does not match the file's column {:?} of type {}",
                have.name(),
                have.data_type(),
                want.name(),
                want.data_type()
            );
            ensure!(
                want.is_nullable() || array.null_count() == 0,
                schema,
                "column {:?} is not nullable but the batch has nulls in it",
                want.name()
            );
        }
        Ok(())
    }

    /// Writes the remaining pages, the metadata and the tail, and completes the upload.
    ///
    /// # Errors
    /// [`Error::Io`] if the storage fails; nothing is then visible at the file's path.
    pub async fn finish(mut self) -> Result<FinishedFile> {
        if let Err(e) = self.check_usable() {
            // The failure that made the writer unusable is the one to report; an upload whose
            // abort fails too is left to the store's lifecycle rules, as after a crash.
            let _ = self.abort().await;
            return Err(e);
        }
        self.write_last_pages().await.map_err(|e| self.locate(e))?;
        let mut zone_map_locations = Vec::with_capacity(self.columns.len());
        for index in 0..self.columns.len() {
            let location = match self.zone_maps[index].take() {
                Some(builder) => Some(self.write_zone_map(builder).await?),
                None => None,
            };
            zone_map_locations.push(location);
        }
        let mut entries = Vec::with_capacity(self.columns.len());
        for (index, zone_map) in zone_map_locations.into_iter().enumerate() {
            let metadata = ColumnMetadata { pages: std::mem::take(&mut self.columns[index].pages), zone_map };
            let bytes = prost::Message::encode_to_vec(&metadata);
            entries.push(ColumnEntry {
                offset: self.position,
                length: bytes.len() as u64,
                crc: crc32fast::hash(&bytes),
            });
            self.write_bytes(&bytes).await?;
        }
        let table_offset = self.position;
        for entry in &entries {
            self.write_bytes(&entry.to_bytes()).await?;
        }
        let footer = Footer {
            fields: schema_to_proto(&self.schema)?,
            metadata: self.schema.metadata().clone().into(),
            num_rows: self.num_rows,
            created_by: format!("looseleaf {}", env!("CARGO_PKG_VERSION")),
            // Everything this writer uses is part of format 2.0 itself.
            required_features: Vec::new(),
        };
        let footer_bytes = prost::Message::encode_to_vec(&footer);
        let tail = FileTail {
            footer_offset: self.position,
            footer_length: u32::try_from(footer_bytes.len())
                .map_err(|_| Error::unsupported("a schema whose footer exceeds 4 GiB"))?,
            footer_crc: crc32fast::hash(&footer_bytes),
            table_offset,
            num_columns: u32::try_from(entries.len()).map_err(|_| Error::unsupported("more than 2^32 columns"))?,
            major: MAJOR_VERSION,
            minor: MINOR_VERSION,
        };
        self.write_bytes(&footer_bytes).await?;
        self.write_bytes(&tail.to_bytes()).await?;
        let upload = self.upload.take().ok_or_else(|| Error::internal("writer already finished"))?;
        upload.finish().await.map_err(|e| self.store_error(&e))?;
        Ok(FinishedFile { num_rows: self.num_rows, num_bytes: self.position })
    }

    /// The store's failure `e`, about this file, without secrets.
    fn store_error(&self, e: &object_store::Error) -> Error {
        StoreError::new(e, &self.secrets).at(self.location.clone())
    }

    /// Abandons the file: nothing is left at its path.
    pub async fn abort(mut self) -> Result<()> {
        if let Some(upload) = self.upload.take() {
            upload.abort().await.map_err(|e| self.store_error(&e))?;
        }
        Ok(())
    }

    /// Queues the rows of a page of `column` for encoding, first writing the pages encoded
    /// (and, if the queue is full, waiting for the oldest).
    async fn queue_page(&mut self, column: usize, rows: PageRows) -> Result<()> {
        while let Some(page) = self.encoding.next_page(rows.bytes).await {
            let (column, page) = page?;
            self.write_page(column, page).await?;
        }
        let encoder = Arc::clone(self.columns[column].encoder());
        self.encoding.push(column, &encoder, rows);
        Ok(())
    }

    /// Encodes the rows every column still holds and writes every page queued.
    async fn write_last_pages(&mut self) -> Result<()> {
        for column in 0..self.columns.len() {
            if let Some(rows) = self.columns[column].flush() {
                self.queue_page(column, rows).await?;
            }
        }
        while let Some(page) = self.encoding.oldest_page().await {
            let (column, page) = page?;
            self.write_page(column, page).await?;
        }
        Ok(())
    }

    async fn write_page(&mut self, column: usize, page: EncodedPage) -> Result<()> {
        let mut locations = Vec::with_capacity(page.buffers.len());
        for buffer in &page.buffers {
            let padding = self.position.next_multiple_of(BUFFER_ALIGNMENT) - self.position;
            self.write_bytes(&[0u8; BUFFER_ALIGNMENT as usize][..padding as usize]).await?;
            let crc32 = self.options.checksums.then(|| crc32fast::hash(buffer.as_slice()));
            locations.push(BufferLocation {
                offset: self.position,
                size: buffer.len() as u64,
                uncompressed_size: 0,
                crc32,
            });
            self.write_bytes(buffer.as_slice()).await?;
        }
        for (location, size) in locations.iter_mut().zip(&page.uncompressed_sizes) {
            location.uncompressed_size = *size;
        }
        self.columns[column].pages.push(PageMetadata {
            num_rows: page.num_rows,
            buffers: locations,
            encoding: Some(page.encoding),
            num_items: page.num_items,
            statistics: page.statistics,
            compression: page.compression as i32,
        });
        Ok(())
    }

    /// Writes a column's zone map (unaligned: it is read whole, never as Arrow memory).
    async fn write_zone_map(&mut self, builder: ZoneMapBuilder) -> Result<ZoneMapLocation> {
        let zone_map = builder.finish()?;
        let bytes = prost::Message::encode_to_vec(&zone_map);
        let buffer = BufferLocation {
            offset: self.position,
            size: bytes.len() as u64,
            uncompressed_size: 0,
            crc32: Some(crc32fast::hash(&bytes)),
        };
        self.write_bytes(&bytes).await?;
        Ok(ZoneMapLocation {
            buffer: Some(buffer),
            rows_per_zone: self.options.zone_map_rows,
            num_zones: zone_map.zones.len() as u64,
        })
    }

    async fn write_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let upload = self.upload.as_mut().ok_or_else(|| Error::internal("writer already finished"))?;
        upload
            .wait_for_capacity(UPLOAD_CONCURRENCY)
            .await
            .map_err(|e| StoreError::new(&e, &self.secrets).at(self.location.clone()))?;
        upload.write(bytes);
        self.position += bytes.len() as u64;
        Ok(())
    }
}

impl Drop for FileWriter {
    /// A writer dropped before [`FileWriter::finish`] abandons its upload: nothing becomes
    /// visible, and the pending upload is aborted (an object store's multipart upload, a local
    /// file's staging file) in the background, on the current tokio runtime or else the one the
    /// writer was created on; only if that one has shut down too is it left to the store's
    /// lifecycle rules.
    fn drop(&mut self) {
        if let Some(upload) = self.upload.take()
            && let Some(runtime) = tokio::runtime::Handle::try_current().ok().or_else(|| self.runtime.take())
        {
            runtime.spawn(async move {
                let _ = upload.abort().await;
            });
        }
    }
}

/// What [`FileWriter::finish`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FinishedFile {
    /// Rows written.
    pub num_rows: u64,
    /// Size of the file in bytes.
    pub num_bytes: u64,
}
