//! [`DatasetWriter`]: writes batches as a directory of looseleaf files, optionally in Hive-style
//! `key=value/` partition directories, as `pyarrow.dataset.write_dataset` and Spark's
//! `partitionBy` lay them out (partition columns are in the directory names, not in the files).
//!
//! # What is visible when
//! A write is one job of the directory's commit log ([`WriteJob`]), as a Spark write is: its
//! files are invisible to [`super::Dataset`] until its commit, one small write made after the
//! last file is finished. So whatever ends the write — an error, a dropped writer, a killed
//! process — readers see the dataset as it was before or as it is after, never part of the
//! write, and [`ExistingData::Overwrite`] replaces the old rows at once (the old files are
//! deleted after the commit). A write that fails deletes the files it finished; one whose
//! process died leaves them, invisible, behind. A directory without a commit log gets one, which
//! adopts the files already there.
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
use super::write_job::AppendCheck;
use super::{CommitMode, DATA_SUFFIX, WriteJob};
use crate::error::{Error, Result, bail, ensure};
use crate::storage::{Location, StorageOptions};
use crate::writer::{FileWriter, WriterOptions};

/// What to do with data files already in the directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExistingData {
    /// Refuse to write into a directory holding data files.
    #[default]
    Error,
    /// Add files next to them (of the same schema and partition columns).
    Append,
    /// Replace them, at once when the write commits; they are deleted after.
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
#[derive(Clone)]
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
    job: WriteJob,
}

impl std::fmt::Debug for DatasetWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatasetWriter")
            .field("directory", &self.job.directory().to_string())
            .field("job", &self.job.id())
            .finish()
    }
}

impl DatasetWriter {
    /// Starts writing rows of `schema` into the directory `root` (a job of its commit log,
    /// started if it has none).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a partition column that is not a top-level column of a
    /// type directories can hold, or for every column being a partition column; for data
    /// files already there with [`ExistingData::Error`], for an append partitioned otherwise
    /// than the dataset, and if `root` is a file; [`Error::Schema`] for an append whose files
    /// would differ from the dataset's (nullability aside); [`Error::Io`] if the store fails.
    pub async fn try_new(root: Location, schema: SchemaRef, options: DatasetWriteOptions) -> Result<Self> {
        let name = root.to_string();
        let storage = options.storage.clone();
        let layout = LayoutOptions {
            storage: options.storage,
            writer: options.writer,
            partition_by: options.partition_by,
            max_rows_per_file: options.max_rows_per_file,
            max_open_files: options.max_open_files,
        };
        // The layout's checks (partition columns) before the store is touched.
        PartitionedFiles::try_new(root.clone(), schema.clone(), layout.clone(), Box::new(|_| String::new()))?;
        let mode = match options.existing_data {
            ExistingData::Error => {
                let existing = super::directory_files(&root, &storage, true).await?;
                ensure!(
                    existing.is_empty(),
                    invalid,
                    "{name}: holds {} data files already (say existing_data=\"append\" or \"overwrite\")",
                    existing.len()
                );
                // Nothing visible to replace: an overwrite only sets the schema.
                CommitMode::Overwrite
            }
            ExistingData::Append => CommitMode::Append,
            ExistingData::Overwrite => CommitMode::Overwrite,
        };
        let job =
            WriteJob::begin_checking(&root, &storage, &schema, mode, &layout.partition_by, AppendCheck::FileSchema)
                .await?;
        let id = job.id().to_owned();
        let files = PartitionedFiles::try_new(
            root,
            schema,
            layout,
            Box::new(move |n| format!("part-{n:05}-{id}{DATA_SUFFIX}")),
        )?;
        Ok(Self { files, job })
    }

    /// Writes `batch` (of the writer's schema).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a batch of another schema; errors of the files' writers.
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.files.write(batch).await
    }

    /// Finishes every file and commits them (for an overwrite, then deletes the files there
    /// before); returns the files written, in the dataset's order. Without rows and
    /// partitions, one empty file is written, which keeps the schema for other readers.
    ///
    /// # Errors
    /// Errors of the files' writers (the job is then aborted: its files are deleted) or of the
    /// store before the commit is written. Once it is, the write has succeeded: failures to delete
    /// the files it replaced are not errors (see [`WriteJob::commit`]).
    pub async fn finish(self) -> Result<Vec<String>> {
        let Self { files, job } = self;
        let schema = files.schema().clone();
        let written = match finish_files(files).await {
            Ok(written) => written,
            Err(e) => {
                // The files finished are deleted; the error to report is the first.
                let _ = job.abort().await;
                return Err(e);
            }
        };
        let names: Vec<String> = written.iter().map(|f| f.relative.clone()).collect();
        job.commit(&names, &schema).await?;
        Ok(written.into_iter().map(|f| f.location).collect())
    }

    /// Stops writing: every open file is discarded, and the files finished already (by
    /// `max_rows_per_file` or `max_open_files`) are deleted; nothing was visible.
    ///
    /// # Errors
    /// Errors of aborting the writers or of the store.
    pub async fn abort(self) -> Result<()> {
        let discarded = self.files.abort().await;
        self.job.abort().await?;
        discarded.map(|_| ())
    }

    /// The schema of the rows written (partition columns included).
    pub fn schema(&self) -> &SchemaRef {
        self.files.schema()
    }
}

/// Finishes `files`; returns them in the dataset's order: partition directories in order, each
/// directory's files in the order written (their rows' order).
async fn finish_files(mut files: PartitionedFiles) -> Result<Vec<WrittenFile>> {
    if files.is_empty() && !files.is_partitioned() {
        // No rows: one empty file keeps the schema for readers without the commit log (a
        // partitioned dataset has no directory to put it in).
        files.start_file("").await?;
    }
    let mut written = files.finish().await?;
    written.sort_by(|a, b| parent(&a.relative).cmp(parent(&b.relative)));
    Ok(written)
}

/// The directory part of a relative path (empty at the root).
fn parent(relative: &str) -> &str {
    relative.rsplit_once('/').map_or("", |(directory, _)| directory)
}

/// The schema a dataset written with `partition_by` reads back as: the other columns, then the
/// partition columns.
pub fn read_back_schema(schema: &Schema, partition_by: &[String]) -> Schema {
    let mut fields: Vec<_> = schema.fields().iter().filter(|f| !partition_by.contains(f.name())).cloned().collect();
    fields
        .extend(partition_by.iter().filter_map(|name| schema.field_with_name(name).ok().map(|f| Arc::new(f.clone()))));
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

#[cfg(test)]
mod tests {
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field};

    use super::*;
    use crate::dataset::{DatasetFiles, resolve};

    fn ids(range: std::ops::Range<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(range))]).unwrap()
    }

    fn options(existing_data: ExistingData) -> DatasetWriteOptions {
        DatasetWriteOptions { max_rows_per_file: Some(10), existing_data, ..Default::default() }
    }

    async fn data_objects(root: &Location) -> Vec<String> {
        let listed = root.list(&StorageOptions::new(), true).await.unwrap();
        listed.into_iter().map(|o| o.location).filter(|l| l.ends_with(DATA_SUFFIX) && !l.contains("/_")).collect()
    }

    async fn visible(root: &Location) -> DatasetFiles {
        resolve(root, &StorageOptions::new()).await.unwrap()
    }

    #[tokio::test]
    async fn a_write_is_invisible_until_finished_and_a_failed_one_leaves_nothing() {
        let root = Location::parse("memory://dataset-writer/a").unwrap();
        let first = {
            let mut writer =
                DatasetWriter::try_new(root.clone(), ids(0..1).schema(), options(ExistingData::Error)).await.unwrap();
            writer.write(&ids(0..25)).await.unwrap();
            assert_eq!(data_objects(&root).await.len(), 2, "two files of ten rows finished");
            assert!(visible(&root).await.files.is_empty(), "none visible before the commit");
            writer.finish().await.unwrap()
        };
        assert_eq!(visible(&root).await.files, first);

        // A write that fails part way (a batch of another schema) deletes the files it finished.
        let mut writer =
            DatasetWriter::try_new(root.clone(), ids(0..1).schema(), options(ExistingData::Append)).await.unwrap();
        writer.write(&ids(100..130)).await.unwrap();
        let other = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, true)])),
            vec![Arc::new(arrow_array::Int32Array::from(vec![1]))],
        )
        .unwrap();
        assert!(writer.write(&other).await.is_err());
        writer.abort().await.unwrap();
        assert_eq!(data_objects(&root).await, first, "only the first write's files are left");

        // A writer dropped (a process that died) leaves files no reader sees.
        let mut writer =
            DatasetWriter::try_new(root.clone(), ids(0..1).schema(), options(ExistingData::Overwrite)).await.unwrap();
        writer.write(&ids(200..230)).await.unwrap();
        drop(writer);
        assert_eq!(visible(&root).await.files, first);
    }

    #[tokio::test]
    async fn an_overwrite_replaces_the_dataset_at_its_commit() {
        let root = Location::parse("memory://dataset-writer/b").unwrap();
        for existing in [ExistingData::Error, ExistingData::Append] {
            let mut writer = DatasetWriter::try_new(root.clone(), ids(0..1).schema(), options(existing)).await.unwrap();
            writer.write(&ids(0..15)).await.unwrap();
            writer.finish().await.unwrap();
        }
        assert_eq!(visible(&root).await.files.len(), 4);
        let mut writer =
            DatasetWriter::try_new(root.clone(), ids(0..1).schema(), options(ExistingData::Overwrite)).await.unwrap();
        writer.write(&ids(50..55)).await.unwrap();
        assert_eq!(visible(&root).await.files.len(), 4, "the old dataset until the commit");
        let new = writer.finish().await.unwrap();
        assert_eq!(visible(&root).await.files, new);
        assert_eq!(data_objects(&root).await, new, "the old files are deleted after the commit");
    }
}
