//! [`DatasetWriter`]: writes batches as a directory of looseleaf files, optionally in Hive-style
//! `key=value/` partition directories, as `pyarrow.dataset.write_dataset` and Spark's
//! `partitionBy` lay them out (partition columns are in the directory names, not in the files).
//!
//! # What is visible when
//! Each file becomes visible only once finished (see [`Location::create`]): a failed or
//! dropped write leaves no file that looks complete and is not. With
//! [`ExistingData::Overwrite`], the data files there before are deleted only after every new
//! file is finished, so a failed overwrite loses nothing (readers may see old and new files
//! together for the moment between).
//!
//! # Memory
//! Every open file holds its columns' unfinished pages; at most
//! [`DatasetWriteOptions::max_open_files`] are open at once, the one written to least recently
//! finished first (its partition's later rows start a new file).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{Schema, SchemaRef};

use super::partitioning::HivePartitioning;
use super::{CommitLog, DATA_SUFFIX};
use crate::error::{Error, Result, bail, ensure};
use crate::storage::{Location, StorageOptions};
use crate::writer::{FileWriter, WriterOptions};

/// What to do with data files already in the directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExistingData {
    /// Refuse to write into a directory holding data files.
    #[default]
    Error,
    /// Add files next to them.
    Append,
    /// Replace them: they are deleted once the new files are written.
    Overwrite,
}

/// How a [`DatasetWriter`] writes.
#[derive(Debug, Clone)]
pub struct DatasetWriteOptions {
    /// The store's settings.
    pub storage: StorageOptions,
    /// The settings of each file.
    pub writer: WriterOptions,
    /// Top-level columns whose values name the directories (integers, strings, booleans).
    pub partition_by: Vec<String>,
    /// Rows per file at most (`None`: no limit).
    pub max_rows_per_file: Option<u64>,
    /// Files open at once at most (see the module documentation).
    pub max_open_files: usize,
    /// What to do with data files already there.
    pub existing_data: ExistingData,
}

impl Default for DatasetWriteOptions {
    fn default() -> Self {
        Self {
            storage: StorageOptions::default(),
            writer: WriterOptions::default(),
            partition_by: Vec::new(),
            max_rows_per_file: None,
            max_open_files: 64,
            existing_data: ExistingData::Error,
        }
    }
}

/// A file being written.
struct OpenFile {
    writer: FileWriter,
    /// Its path below the root.
    relative: String,
    location: String,
    /// When it was last written to (a counter of writes).
    last_write: u64,
}

/// A file finished by [`PartitionedFiles`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WrittenFile {
    /// Its path below the root (`k=v/part-….leaf`).
    pub relative: String,
    pub location: String,
    pub num_rows: u64,
    pub num_bytes: u64,
}

/// How [`PartitionedFiles`] names its `n`-th file (the directory is put before it).
pub(crate) type FileNamer = Box<dyn Fn(u64) -> String + Send + Sync>;

/// How [`PartitionedFiles`] lays rows out.
pub(crate) struct LayoutOptions {
    pub storage: StorageOptions,
    pub writer: WriterOptions,
    pub partition_by: Vec<String>,
    pub max_rows_per_file: Option<u64>,
    pub max_open_files: usize,
}

/// Rows of one schema written as files below a root, split into Hive partition directories,
/// at most `max_open_files` open at once (the least recently written finished first): the
/// layout [`DatasetWriter`] and the Spark write job's task writer (`super::TaskWriter`) share.
pub(crate) struct PartitionedFiles {
    root: Location,
    options: LayoutOptions,
    schema: SchemaRef,
    /// The columns the files hold (all but the partition columns), by index in `schema`.
    file_columns: Vec<usize>,
    file_schema: SchemaRef,
    partition_columns: Vec<usize>,
    partitioning: HivePartitioning,
    name: FileNamer,
    /// Open files by partition directory.
    open: HashMap<String, OpenFile>,
    /// Files finished so far.
    written: Vec<WrittenFile>,
    files_started: u64,
    writes: u64,
}

impl PartitionedFiles {
    /// # Errors
    /// [`Error::InvalidArgument`] for a partition column that is not a top-level column of a
    /// type directories can hold, or for every column being a partition column.
    pub fn try_new(root: Location, schema: SchemaRef, options: LayoutOptions, name: FileNamer) -> Result<Self> {
        let text = root.to_string();
        ensure!(options.max_open_files > 0, invalid, "max_open_files must be at least 1");
        ensure!(options.max_rows_per_file != Some(0), invalid, "max_rows_per_file must be at least 1");
        let mut partition_columns = Vec::new();
        for column in &options.partition_by {
            let index = schema
                .index_of(column)
                .map_err(|_| Error::invalid_argument(format!("{text}: no column {column:?} to partition by")))?;
            ensure!(!partition_columns.contains(&index), invalid, "{text}: {column:?} is partitioned by twice");
            partition_columns.push(index);
        }
        let partitioning =
            HivePartitioning::try_new(partition_columns.iter().map(|&i| schema.fields()[i].clone()).collect())
                .map_err(|e| e.with_location(&text))?;
        let file_columns: Vec<usize> = (0..schema.fields().len()).filter(|i| !partition_columns.contains(i)).collect();
        ensure!(
            !file_columns.is_empty(),
            invalid,
            "{text}: every column is a partition column: the files would hold none"
        );
        let file_schema = Arc::new(schema.project(&file_columns)?);
        Ok(Self {
            root,
            options,
            schema,
            file_columns,
            file_schema,
            partition_columns,
            partitioning,
            name,
            open: HashMap::new(),
            written: Vec::new(),
            files_started: 0,
            writes: 0,
        })
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn is_partitioned(&self) -> bool {
        !self.partition_columns.is_empty()
    }

    /// Whether no file was started yet.
    pub fn is_empty(&self) -> bool {
        self.written.is_empty() && self.open.is_empty()
    }

    /// Writes `batch` (of the schema).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a batch of another schema; errors of the files' writers.
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if !batch
            .schema()
            .fields()
            .iter()
            .zip(self.schema.fields())
            .all(|(a, b)| a.data_type() == b.data_type() && a.name() == b.name())
            || batch.num_columns() != self.schema.fields().len()
        {
            bail!(
                invalid,
                "{}: a batch of schema {} does not match the dataset's {}",
                self.root,
                batch.schema(),
                self.schema
            );
        }
        let file_batch = batch.project(&self.file_columns)?;
        if self.partition_columns.is_empty() {
            return self.write_to(String::new(), file_batch).await;
        }
        let keys: Vec<ArrayRef> = self.partition_columns.iter().map(|&i| batch.column(i).clone()).collect();
        for (directory, rows) in self.partitioning.group_rows(&keys, batch.num_rows())? {
            let part = if rows.len() == batch.num_rows() {
                file_batch.clone()
            } else {
                arrow_select::take::take_record_batch(&file_batch, &UInt32Array::from(rows))?
            };
            self.write_to(directory, part).await?;
        }
        Ok(())
    }

    /// Writes `batch` to the open file of `directory`, starting files as `max_rows_per_file`
    /// asks.
    async fn write_to(&mut self, directory: String, mut batch: RecordBatch) -> Result<()> {
        while batch.num_rows() > 0 {
            if !self.open.contains_key(&directory) {
                self.start_file(&directory).await?;
            }
            self.writes += 1;
            let writes = self.writes;
            let Some(file) = self.open.get_mut(&directory) else { bail!(internal, "no open file for {directory:?}") };
            let room = self.options.max_rows_per_file.map_or(u64::MAX, |max| max - file.writer.num_rows());
            let now = (batch.num_rows() as u64).min(room) as usize;
            file.writer.write(&batch.slice(0, now)).await?;
            file.last_write = writes;
            batch = batch.slice(now, batch.num_rows() - now);
            if self.options.max_rows_per_file.is_some_and(|max| file.writer.num_rows() >= max) {
                self.finish_file(&directory).await?;
            }
        }
        Ok(())
    }

    /// Starts the file of `directory` (empty: the root), finishing the least recently written
    /// one first if `max_open_files` are open.
    pub async fn start_file(&mut self, directory: &str) -> Result<()> {
        if self.open.len() >= self.options.max_open_files {
            let oldest = self.open.iter().min_by_key(|(_, f)| f.last_write).map(|(d, _)| d.clone());
            if let Some(oldest) = oldest {
                self.finish_file(&oldest).await?;
            }
        }
        let name = (self.name)(self.files_started);
        self.files_started += 1;
        let relative = if directory.is_empty() { name } else { format!("{directory}/{name}") };
        let location = self.root.child(&relative)?;
        let writer = FileWriter::create_location(
            &location,
            self.file_schema.clone(),
            self.options.writer.clone(),
            &self.options.storage,
        )
        .await?;
        let location = location.to_string();
        self.open.insert(directory.to_string(), OpenFile { writer, relative, location, last_write: self.writes });
        Ok(())
    }

    async fn finish_file(&mut self, directory: &str) -> Result<()> {
        if let Some(file) = self.open.remove(directory) {
            let finished = file.writer.finish().await?;
            self.written.push(WrittenFile {
                relative: file.relative,
                location: file.location,
                num_rows: finished.num_rows,
                num_bytes: finished.num_bytes,
            });
        }
        Ok(())
    }

    /// Finishes every open file; returns every file written, in the order they were finished.
    ///
    /// # Errors
    /// Errors of the files' writers.
    pub async fn finish(mut self) -> Result<Vec<WrittenFile>> {
        let mut directories: Vec<String> = self.open.keys().cloned().collect();
        directories.sort();
        for directory in directories {
            self.finish_file(&directory).await?;
        }
        Ok(self.written)
    }

    /// Discards every open file (never made visible); returns the files finished already.
    ///
    /// # Errors
    /// Errors of aborting the writers.
    pub async fn abort(self) -> Result<Vec<WrittenFile>> {
        for (_, file) in self.open {
            file.writer.abort().await?;
        }
        Ok(self.written)
    }
}

/// Writes batches as a dataset directory (see the module documentation).
pub struct DatasetWriter {
    files: PartitionedFiles,
    /// Data files there before, deleted at the end of an overwrite.
    replaced: Vec<String>,
    storage: StorageOptions,
}

impl DatasetWriter {
    /// Starts writing rows of `schema` into the directory `root`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a partition column that is not a top-level column of a
    /// type directories can hold, or for every column being a partition column; for data
    /// files already there with [`ExistingData::Error`], and for a directory with a commit
    /// log (the Spark data source's: write there through it); [`Error::Io`] if listing fails.
    pub async fn try_new(root: Location, schema: SchemaRef, options: DatasetWriteOptions) -> Result<Self> {
        let name = root.to_string();
        let storage = options.storage.clone();
        let token = unique_token();
        let files = PartitionedFiles::try_new(
            root.clone(),
            schema,
            LayoutOptions {
                storage: options.storage,
                writer: options.writer,
                partition_by: options.partition_by,
                max_rows_per_file: options.max_rows_per_file,
                max_open_files: options.max_open_files,
            },
            Box::new(move |n| format!("part-{token}-{n:05}{DATA_SUFFIX}")),
        )?;
        if CommitLog::read(&root, &storage).await?.is_some() {
            bail!(
                invalid,
                "{name}: the Spark data source writes this directory (it has a commit log): write through it"
            );
        }
        let existing: Vec<String> = super::directory_files(&root, &storage, true).await?;
        let replaced = match options.existing_data {
            ExistingData::Error if !existing.is_empty() => bail!(
                invalid,
                "{name}: holds {} data files already (say existing_data=\"append\" or \"overwrite\")",
                existing.len()
            ),
            ExistingData::Overwrite => existing,
            _ => Vec::new(),
        };
        Ok(Self { files, replaced, storage })
    }

    /// Writes `batch` (of the writer's schema).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a batch of another schema; errors of the files' writers.
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.files.write(batch).await
    }

    /// Finishes every file (and, for an overwrite, deletes the files there before); returns
    /// the files written, in the order they were finished. Without rows and partitions, one
    /// empty file is written, which keeps the schema.
    ///
    /// # Errors
    /// Errors of the files' writers, or of deleting the old files (the new ones are complete).
    pub async fn finish(mut self) -> Result<Vec<String>> {
        if self.files.is_empty() && !self.files.is_partitioned() {
            // No rows: one empty file keeps the schema (a partitioned dataset has no directory
            // to put it in, and is left empty).
            self.files.start_file("").await?;
        }
        let written = self.files.finish().await?;
        for old in &self.replaced {
            Location::parse(old)?.delete(&self.storage).await?;
        }
        Ok(written.into_iter().map(|f| f.location).collect())
    }

    /// Stops writing: every open file is discarded (never made visible); files finished
    /// already (by `max_rows_per_file` or `max_open_files`) stay.
    ///
    /// # Errors
    /// Errors of aborting the writers.
    pub async fn abort(self) -> Result<Vec<String>> {
        Ok(self.files.abort().await?.into_iter().map(|f| f.location).collect())
    }

    /// The schema of the rows written (partition columns included).
    pub fn schema(&self) -> &SchemaRef {
        self.files.schema()
    }
}

/// A name part that no other write (another process, or this one later) is likely to choose.
fn unique_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    // std's random hasher keys: a fresh random value per process.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}

/// The schema a dataset written with `partition_by` reads back as: the other columns, then the
/// partition columns.
pub fn read_back_schema(schema: &Schema, partition_by: &[String]) -> Schema {
    let mut fields: Vec<_> = schema.fields().iter().filter(|f| !partition_by.contains(f.name())).cloned().collect();
    fields
        .extend(partition_by.iter().filter_map(|name| schema.field_with_name(name).ok().map(|f| Arc::new(f.clone()))));
    Schema::new_with_metadata(fields, schema.metadata().clone())
}
