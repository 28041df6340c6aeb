//! Writing a dataset directory as one job of many tasks, made visible by one commit (the write
//! side of [`CommitLog`]; the Python data source and the JVM connector both drive it).
//!
//! A job runs in three places, and each step is one call here:
//!
//! 1. **The driver begins** the job ([`WriteJob::begin`]): it checks that an append keeps the
//!    dataset's schema, starts a commit log in a directory that has none (adopting the files
//!    already there, so that from then on only committed files are visible), and draws the job
//!    id, which sorts after every commit already in the log.
//! 2. **Each task** writes its own file, named by [`WriteJob::task_file`], directly in place,
//!    then asks [`WriteJob::keep_task_file`] whether the job still wants it: an attempt that
//!    finishes after the job was committed or aborted (Spark does not wait for the attempts it
//!    cancels or that lost) deletes its file itself, since the driver's cleanup may have listed
//!    the directory before the file was complete.
//! 3. **The driver commits** ([`WriteJob::commit`]: the schema file, then the commit, one
//!    write each, then the cleanup) **or aborts** ([`WriteJob::abort`]: a marker, then the
//!    cleanup).
//!
//! A job is plain data (directory, storage options, id, mode, partition columns), rebuilt where
//! each step runs with [`WriteJob::resume`].
//!
//! # Partition directories
//! A job with partition columns (Spark's `partitionBy`) writes each task's rows into Hive
//! `key=value/` directories ([`HivePartitioning::directory`](super::HivePartitioning), the
//! names `pyarrow` and [`super::Dataset`] read), one file per directory a task meets
//! ([`TaskWriter`]), the partition columns left out of the files. Commits then name files by
//! their path below the dataset directory (`k=1/part-….leaf`), record the partition columns,
//! and keep the files' schema (without the partition columns) as the dataset's schema file. A driver dying at any point leaves files no reader sees, never a
//! dataset that reads part of a job.

use std::hash::{BuildHasher, RandomState};
use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use bytes::Bytes;

use super::commit_log::{COMMITS_DIR, Commit, CommitLog, CommitMode, FORMAT_VERSION};
use super::writer::{LayoutOptions, PartitionedFiles};
use super::{DATA_SUFFIX, LEGACY_SCHEMA_FILE, directory_entries, directory_files};
use crate::error::{Error, Result};
use crate::read::FileReader;
use crate::spark_form;
use crate::storage::{Location, StorageOptions};
use crate::writer::{FileWriter, WriterOptions};

/// The directory of a dataset's schema files (one per commit, a file with no rows).
pub const SCHEMAS_DIR: &str = "_schemas";

/// One job writing into a dataset directory (see the module docs for its steps).
#[derive(Debug, Clone)]
pub struct WriteJob {
    directory: Location,
    options: StorageOptions,
    id: String,
    mode: CommitMode,
    partition_by: Vec<String>,
}

impl WriteJob {
    /// Begins a job on the driver, before any task writes: checks the directory, the
    /// partition columns (top-level columns of `schema` of a type directories hold), an
    /// append's `schema` and partition columns against the dataset's, and starts the commit
    /// log if there is none.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `directory` is a file, for a partition column `schema`
    /// does not have or cannot put in a directory name, or for an append partitioned otherwise
    /// than the dataset; [`Error::Schema`] if an append's schema reads in Spark as another
    /// than the dataset's (nullability aside); [`Error::Io`] if the store fails.
    pub async fn begin(
        directory: &Location,
        options: &StorageOptions,
        schema: &Schema,
        mode: CommitMode,
        partition_by: &[String],
    ) -> Result<Self> {
        Self::begin_checking(directory, options, schema, mode, partition_by, AppendCheck::SparkSchema).await
    }

    /// [`WriteJob::begin`], an append's schema checked as `check` says.
    pub(crate) async fn begin_checking(
        directory: &Location,
        options: &StorageOptions,
        schema: &Schema,
        mode: CommitMode,
        partition_by: &[String],
        check: AppendCheck,
    ) -> Result<Self> {
        if directory.exists(options).await? {
            return Err(Error::invalid_argument(format!("{directory}: not a directory")));
        }
        // The layout's own checks of the partition columns, before any task runs.
        let layout = LayoutOptions {
            storage: options.clone(),
            writer: WriterOptions::default(),
            partition_by: partition_by.to_vec(),
            max_rows_per_file: None,
            max_open_files: 1,
        };
        PartitionedFiles::try_new(
            directory.clone(),
            SchemaRef::new(schema.clone()),
            layout,
            Box::new(|_| String::new()),
        )?;
        let file_schema = file_schema(schema, partition_by);
        let log = CommitLog::read(directory, options).await?;
        if mode == CommitMode::Append {
            check_append(directory, options, log.as_ref(), &file_schema, partition_by, check).await?;
        }
        let mut after = None;
        if log.is_none() {
            after = Some(start_log(directory, options, &file_schema).await?);
        }
        let id = new_job_id(after.as_deref());
        Ok(Self::resume(directory.clone(), options.clone(), id, mode).with_partition_by(partition_by.to_vec()))
    }

    /// The job `id` begun earlier (by [`WriteJob::begin`], maybe in another process), without
    /// partition columns unless [`with_partition_by`](Self::with_partition_by) gives them.
    pub fn resume(directory: Location, options: StorageOptions, id: String, mode: CommitMode) -> Self {
        Self { directory, options, id, mode, partition_by: Vec::new() }
    }

    /// The job with these partition columns (those it was begun with).
    pub fn with_partition_by(mut self, partition_by: Vec<String>) -> Self {
        self.partition_by = partition_by;
        self
    }

    /// The partition columns (empty: none).
    pub fn partition_by(&self) -> &[String] {
        &self.partition_by
    }

    /// The job's id (sorts by the job's start time).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The directory written.
    pub fn directory(&self) -> &Location {
        &self.directory
    }

    /// The storage options of the directory.
    pub fn options(&self) -> &StorageOptions {
        &self.options
    }

    /// The name, inside the directory, of the file of one task attempt.
    pub fn task_file(&self, partition: u64, attempt: u64) -> String {
        self.task_file_numbered(partition, attempt, 0)
    }

    /// The name of the `n`-th file of one task attempt (in its partition directory).
    fn task_file_numbered(&self, partition: u64, attempt: u64, n: u64) -> String {
        match n {
            0 => format!("part-{partition:05}-{}-{attempt}{DATA_SUFFIX}", self.id),
            n => format!("part-{partition:05}-{}-{attempt}-{n}{DATA_SUFFIX}", self.id),
        }
    }

    /// The writer of one task attempt's files (see [`TaskWriter`]).
    ///
    /// # Errors
    /// As [`WriteJob::begin`] for the partition columns.
    pub fn task_writer(
        &self,
        partition: u64,
        attempt: u64,
        schema: SchemaRef,
        writer: WriterOptions,
    ) -> Result<TaskWriter> {
        let job = self.clone();
        let layout = LayoutOptions {
            storage: self.options.clone(),
            writer,
            partition_by: self.partition_by.clone(),
            max_rows_per_file: None,
            max_open_files: TASK_OPEN_FILES,
        };
        let name = Box::new(move |n| job.task_file_numbered(partition, attempt, n));
        let files = PartitionedFiles::try_new(self.directory.clone(), schema, layout, name)?;
        Ok(TaskWriter { job: self.clone(), files })
    }

    /// Called by a task once its file `name` is complete: whether the job may still commit it.
    /// If the job was committed or aborted meanwhile, the file is deleted and this is `false`.
    ///
    /// # Errors
    /// [`Error::Io`] if the store fails.
    pub async fn keep_task_file(&self, name: &str) -> Result<bool> {
        for end in [".json", ".aborted"] {
            let marker = self.directory.child(&format!("{COMMITS_DIR}/{}{end}", self.id))?;
            if marker.exists(&self.options).await? {
                self.directory.child(name)?.delete(&self.options).await?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Makes the task files `files` visible with `schema` as the dataset's schema, then deletes
    /// the job's other files (attempts that lost) and, for an overwrite, everything the commits
    /// before it made visible.
    ///
    /// Once its commit is written the job has succeeded, whatever follows: the deletions remove
    /// only files no reader sees any more, so they are tried and their failures left behind
    /// (not reported: the write did happen). An old commit's record is deleted after its files,
    /// and only if they all went, so that a later overwrite finds it and deletes what is left.
    ///
    /// # Errors
    /// [`Error::Io`] if the store fails before the commit is written (nothing is then visible).
    pub async fn commit(&self, files: &[String], schema: &SchemaRef) -> Result<()> {
        let before = CommitLog::read(&self.directory, &self.options).await?;
        let schema_file = format!("{SCHEMAS_DIR}/{}.leaf", self.id);
        let file_schema = SchemaRef::new(file_schema(schema, &self.partition_by));
        write_schema_file(&self.directory.child(&schema_file)?, &self.options, &file_schema).await?;
        let commit = Commit {
            job: self.id.clone(),
            mode: self.mode,
            files: files.to_vec(),
            schema: schema_file,
            partition_by: self.partition_by.clone(),
        };
        write_commit(&self.directory, &self.options, &commit).await?;
        let _ = self.delete_job_files(files).await;
        if let (CommitMode::Overwrite, Some(before)) = (self.mode, before) {
            for old in before.commits {
                let mut files_gone = true;
                for name in old.files.iter().chain([&old.schema]) {
                    files_gone &= self.delete(name).await.is_ok();
                }
                if files_gone {
                    let _ = self.delete(&format!("{COMMITS_DIR}/{}.json", old.job)).await;
                }
            }
        }
        Ok(())
    }

    /// Deletes `name` (a path below the directory).
    async fn delete(&self, name: &str) -> Result<()> {
        self.directory.child(name)?.delete(&self.options).await
    }

    /// Abandons the job: records that it ended, then deletes its files.
    ///
    /// # Errors
    /// [`Error::Io`] if the store fails.
    pub async fn abort(&self) -> Result<()> {
        // The marker first: an attempt still running sees it once its file is complete and
        // deletes the file, which the listing below may not find yet.
        let marker = self.directory.child(&format!("{COMMITS_DIR}/{}.aborted", self.id))?;
        marker.write_all(Bytes::new(), &self.options).await?;
        self.delete_job_files(&[]).await
    }

    /// Deletes the job's data files (at any depth: partition directories) but `keep` (paths
    /// below the directory).
    async fn delete_job_files(&self, keep: &[String]) -> Result<()> {
        let recursive = !self.partition_by.is_empty();
        for object in self.directory.list(&self.options, recursive).await? {
            let relative = object.relative.as_str();
            let name = relative.rsplit('/').next().unwrap_or_default();
            let data = name.ends_with(DATA_SUFFIX) && !relative.split('/').any(super::is_hidden);
            if data && name.contains(&self.id) && !keep.iter().any(|k| k == relative) {
                Location::parse(&object.location)?.delete(&self.options).await?;
            }
        }
        Ok(())
    }
}

/// Files a task writes at once at most (one per partition directory it meets; the least
/// recently written is finished first, and that directory's later rows start another file).
pub const TASK_OPEN_FILES: usize = 16;

/// The files of one task attempt ([`WriteJob::task_writer`]): one file in the job's directory,
/// or with partition columns one file per partition directory the task's rows fall in (at most
/// [`TASK_OPEN_FILES`] open at once), named from [`WriteJob::task_file`]. A file appears only
/// once finished; none is visible before the job commits.
pub struct TaskWriter {
    job: WriteJob,
    files: PartitionedFiles,
}

/// A file a task wrote and its job may commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFile {
    /// Its path below the dataset directory (the name to commit).
    pub name: String,
    /// Rows in it.
    pub num_rows: u64,
    /// Its size.
    pub num_bytes: u64,
}

impl TaskWriter {
    /// Writes `batch` (of the task writer's schema, partition columns included).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a batch of another schema; errors of the files' writers.
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.files.write(batch).await
    }

    /// Finishes the files and asks the job whether it still wants them (see
    /// [`WriteJob::keep_task_file`]): the files to commit, none if the task had no rows or the
    /// job ended without it.
    ///
    /// # Errors
    /// Errors of the writers and of the store.
    pub async fn finish(self) -> Result<Vec<TaskFile>> {
        let mut out = Vec::new();
        for file in self.files.finish().await? {
            if self.job.keep_task_file(&file.relative).await? {
                out.push(TaskFile { name: file.relative, num_rows: file.num_rows, num_bytes: file.num_bytes });
            }
        }
        Ok(out)
    }

    /// Abandons the task: open files are discarded, finished ones deleted.
    ///
    /// # Errors
    /// Errors of the writers and of the store.
    pub async fn abort(self) -> Result<()> {
        for file in self.files.abort().await? {
            Location::parse(&file.location)?.delete(&self.job.options).await?;
        }
        Ok(())
    }
}

/// `schema` without the columns of `partition_by` (which the files do not hold).
fn file_schema(schema: &Schema, partition_by: &[String]) -> Schema {
    let fields: Vec<_> = schema.fields().iter().filter(|f| !partition_by.contains(f.name())).cloned().collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// A job id: the start time in nanoseconds (20 digits, so that ids sort by time) and a random
/// suffix; later than `after` when given.
fn new_job_id(after: Option<&str>) -> String {
    let mut nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    if let Some(previous) = after.and_then(|a| a.split('-').next()).and_then(|n| n.parse::<u128>().ok()) {
        nanos = nanos.max(previous + 1);
    }
    let random = RandomState::new().hash_one(nanos) & 0xffff_ffff_ffff;
    format!("{nanos:020}-{random:012x}")
}

/// Starts the log of a directory that has none: a first commit adopts the data files already
/// there, with the directory's schema file, else its first data file's schema, else `schema`.
/// Returns the commit's job id.
async fn start_log(directory: &Location, options: &StorageOptions, schema: &Schema) -> Result<String> {
    let legacy = directory_entries(directory, options, true).await?;
    let locations: Vec<String> = legacy.iter().map(|(location, _)| location.clone()).collect();
    let existing = existing_schema(directory, options, None, &locations).await?;
    let schema = existing.unwrap_or_else(|| SchemaRef::new(schema.clone()));
    let id = new_job_id(None);
    let schema_file = format!("{SCHEMAS_DIR}/{id}.leaf");
    write_schema_file(&directory.child(&schema_file)?, options, &schema).await?;
    let files: Vec<String> = legacy.into_iter().map(|(_, relative)| relative).collect();
    // Adopted files in `key=value` directories keep their partition columns.
    let partition_by = super::HivePartitioning::discover(files.iter().map(String::as_str))
        .map(|p| p.fields().iter().map(|f| f.name().clone()).collect())
        .unwrap_or_default();
    let commit = Commit { job: id.clone(), mode: CommitMode::Overwrite, files, schema: schema_file, partition_by };
    write_commit(directory, options, &commit).await?;
    Ok(id)
}

/// The schema of the dataset in `directory`: its last commit's schema file, its legacy schema
/// file, or the schema of its first data file; `None` for an empty directory.
async fn existing_schema(
    directory: &Location,
    options: &StorageOptions,
    log: Option<&CommitLog>,
    files: &[String],
) -> Result<Option<SchemaRef>> {
    let source = match log {
        Some(log) => Some(log.schema_file(directory)?),
        None => {
            let legacy = directory.child(LEGACY_SCHEMA_FILE)?;
            if legacy.exists(options).await? { Some(legacy.to_string()) } else { files.first().cloned() }
        }
    };
    match source {
        Some(source) => {
            Ok(Some(FileReader::open_location(&Location::parse(&source)?, options).await?.schema().clone()))
        }
        None => Ok(None),
    }
}

/// How an append's schema must match the dataset's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppendCheck {
    /// Spark reads both the same (string and binary offsets may differ).
    SparkSchema,
    /// The files' columns are the same (nullability aside), as [`super::Dataset`] requires.
    FileSchema,
}

/// Refuses an append whose rows would be read with another schema than the dataset's (`new`
/// is the files' schema, without partition columns; `check` says by whom), or that is
/// partitioned otherwise than the dataset's visible files.
async fn check_append(
    directory: &Location,
    options: &StorageOptions,
    log: Option<&CommitLog>,
    new: &Schema,
    partition_by: &[String],
    check: AppendCheck,
) -> Result<()> {
    if let Some(log) = log
        && let Some(last) = log.visible().iter().rev().find(|c| !c.files.is_empty())
        && last.partition_by != partition_by
    {
        return Err(Error::invalid_argument(format!(
            "{directory}: cannot append rows partitioned by {partition_by:?} to a dataset partitioned by {:?}",
            last.partition_by
        )));
    }
    let files = if log.is_none() { directory_files(directory, options, false).await? } else { Vec::new() };
    let Some(existing) = existing_schema(directory, options, log, &files).await? else {
        return Ok(());
    };
    if check == AppendCheck::FileSchema {
        let fields: Vec<_> = existing.fields().iter().map(|f| f.as_ref().clone()).collect();
        return match super::reader::difference(&fields, new.fields()) {
            Some(difference) => Err(Error::Schema(format!(
                "{directory}: cannot append files of another schema than the dataset's: {difference}"
            ))),
            None => Ok(()),
        };
    }
    let (have, want) = (spark_form::schema(&existing)?, spark_form::schema(new)?);
    if !spark_form::same_spark_schema(&have, &want) {
        return Err(Error::Schema(format!(
            "{directory}: cannot append rows of schema ({}) to a dataset of schema ({})",
            describe(&want),
            describe(&have)
        )));
    }
    Ok(())
}

fn describe(schema: &Schema) -> String {
    schema.fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect::<Vec<_>>().join(", ")
}

/// Writes a file of `schema` with no rows (visible whole or not at all).
async fn write_schema_file(location: &Location, options: &StorageOptions, schema: &SchemaRef) -> Result<()> {
    FileWriter::create_location(location, schema.clone(), WriterOptions::default(), options).await?.finish().await?;
    Ok(())
}

/// Makes `commit` visible: one write, seen whole or not at all.
async fn write_commit(directory: &Location, options: &StorageOptions, commit: &Commit) -> Result<()> {
    let json = serde_json::json!({
        "version": FORMAT_VERSION,
        "job": commit.job,
        "mode": commit.mode,
        "files": commit.files,
        "schema": commit.schema,
    });
    let mut json = json;
    if !commit.partition_by.is_empty() {
        json["partition_by"] = serde_json::json!(commit.partition_by);
    }
    let location = directory.child(&format!("{COMMITS_DIR}/{}.json", commit.job))?;
    location.write_all(Bytes::from(json.to_string()), options).await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field};

    use super::*;
    use crate::dataset::resolve;

    fn schema(second: DataType) -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false), Field::new("name", second, true)]))
    }

    async fn write_task(job: &WriteJob, partition: u64, rows: &[i64]) -> String {
        let name = job.task_file(partition, 0);
        let schema = schema(DataType::Utf8);
        let names: Vec<String> = rows.iter().map(|r| format!("row {r}")).collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(rows.to_vec())), Arc::new(StringArray::from(names))],
        )
        .unwrap();
        let location = job.directory().child(&name).unwrap();
        let mut writer =
            FileWriter::create_location(&location, schema, WriterOptions::default(), &StorageOptions::new())
                .await
                .unwrap();
        writer.write(&batch).await.unwrap();
        writer.finish().await.unwrap();
        name
    }

    #[tokio::test]
    async fn a_job_is_seen_whole_once_committed_and_an_overwrite_replaces_what_was_there() {
        let options = StorageOptions::new();
        let dir = Location::parse("memory://jobs/a").unwrap();
        let first = WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Overwrite, &[]).await.unwrap();
        let a = write_task(&first, 0, &[1, 2]).await;
        let lost = write_task(&first, 1, &[3]).await;
        assert!(first.keep_task_file(&a).await.unwrap());
        assert!(resolve(&dir, &options).await.unwrap().files.is_empty(), "nothing visible before the commit");
        first.commit(std::slice::from_ref(&a), &schema(DataType::Utf8)).await.unwrap();
        assert_eq!(resolve(&dir, &options).await.unwrap().files, [dir.child(&a).unwrap().to_string()]);
        assert!(!dir.child(&lost).unwrap().exists(&options).await.unwrap(), "the losing attempt is deleted");

        // A late attempt of the committed job deletes its own file.
        let late = write_task(&first, 2, &[4]).await;
        assert!(!first.keep_task_file(&late).await.unwrap());
        assert!(!dir.child(&late).unwrap().exists(&options).await.unwrap());

        let append =
            WriteJob::begin(&dir, &options, &schema(DataType::LargeUtf8), CommitMode::Append, &[]).await.unwrap();
        assert!(append.id() > first.id());
        let b = write_task(&append, 0, &[5]).await;
        append.commit(std::slice::from_ref(&b), &schema(DataType::Utf8)).await.unwrap();
        assert_eq!(resolve(&dir, &options).await.unwrap().files.len(), 2);

        let replace =
            WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Overwrite, &[]).await.unwrap();
        let c = write_task(&replace, 0, &[6]).await;
        replace.commit(std::slice::from_ref(&c), &schema(DataType::Utf8)).await.unwrap();
        let listed: Vec<String> = dir.list(&options, true).await.unwrap().into_iter().map(|o| o.location).collect();
        assert_eq!(
            listed,
            [
                dir.child(&format!("{COMMITS_DIR}/{}.json", replace.id())).unwrap().to_string(),
                dir.child(&format!("{SCHEMAS_DIR}/{}.leaf", replace.id())).unwrap().to_string(),
                dir.child(&c).unwrap().to_string(),
            ],
            "an overwrite leaves only its own files"
        );
    }

    #[tokio::test]
    async fn an_overwrite_whose_cleanup_fails_has_still_happened() {
        let options = StorageOptions::new();
        let tmp = tempfile::tempdir().unwrap();
        let dir = Location::Local(tmp.path().to_path_buf());
        let first = WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Overwrite, &[]).await.unwrap();
        let a = write_task(&first, 0, &[1]).await;
        first.commit(std::slice::from_ref(&a), &schema(DataType::Utf8)).await.unwrap();
        // The old file cannot be deleted (a directory in its place: even root cannot).
        let old = tmp.path().join(&a);
        std::fs::remove_file(&old).unwrap();
        std::fs::create_dir_all(old.join("held")).unwrap();

        let second =
            WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Overwrite, &[]).await.unwrap();
        let b = write_task(&second, 0, &[2]).await;
        second.commit(std::slice::from_ref(&b), &schema(DataType::Utf8)).await.unwrap();
        assert_eq!(resolve(&dir, &options).await.unwrap().files, [dir.child(&b).unwrap().to_string()]);
        let first_commit = dir.child(&format!("{COMMITS_DIR}/{}.json", first.id())).unwrap();
        assert!(first_commit.exists(&options).await.unwrap(), "kept for a later overwrite to finish");

        // Once the obstacle is gone, the next overwrite deletes what was left.
        std::fs::remove_dir_all(&old).unwrap();
        let third = WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Overwrite, &[]).await.unwrap();
        let c = write_task(&third, 0, &[3]).await;
        third.commit(std::slice::from_ref(&c), &schema(DataType::Utf8)).await.unwrap();
        assert!(!first_commit.exists(&options).await.unwrap());
        assert_eq!(resolve(&dir, &options).await.unwrap().files, [dir.child(&c).unwrap().to_string()]);
    }

    #[tokio::test]
    async fn an_aborted_job_leaves_nothing_visible_and_an_append_keeps_the_schema() {
        let options = StorageOptions::new();
        let dir = Location::parse("memory://jobs/b").unwrap();
        let job = WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Append, &[]).await.unwrap();
        let a = write_task(&job, 0, &[1]).await;
        job.abort().await.unwrap();
        assert!(!dir.child(&a).unwrap().exists(&options).await.unwrap());
        assert!(resolve(&dir, &options).await.unwrap().files.is_empty());

        let resumed = WriteJob::resume(dir.clone(), options.clone(), job.id().to_owned(), CommitMode::Append);
        let late = write_task(&resumed, 1, &[2]).await;
        assert!(!resumed.keep_task_file(&late).await.unwrap(), "the job was aborted");

        let e = WriteJob::begin(&dir, &options, &schema(DataType::Int32), CommitMode::Append, &[]).await.unwrap_err();
        assert!(matches!(e, Error::Schema(_)) && e.to_string().contains("cannot append rows of schema"), "{e}");
        write_task(&WriteJob::resume(dir.clone(), options.clone(), "x".into(), CommitMode::Append), 0, &[1]).await;
        let real = dir.child("part-00000-x-0.leaf").unwrap();
        let e = WriteJob::begin(&real, &options, &schema(DataType::Utf8), CommitMode::Append, &[]).await.unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    #[tokio::test]
    async fn a_directory_without_a_log_adopts_its_files() {
        let options = StorageOptions::new();
        let dir = Location::parse("memory://jobs/c").unwrap();
        let legacy =
            write_task(&WriteJob::resume(dir.clone(), options.clone(), "old".into(), CommitMode::Append), 0, &[1])
                .await;
        let job = WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Append, &[]).await.unwrap();
        let log = CommitLog::read(&dir, &options).await.unwrap().unwrap();
        assert_eq!(log.commits.len(), 1);
        assert_eq!(log.commits[0].files, [legacy]);
        assert!(job.id() > log.commits[0].job.as_str());
        let new = write_task(&job, 0, &[2]).await;
        job.commit(std::slice::from_ref(&new), &schema(DataType::Utf8)).await.unwrap();
        assert_eq!(resolve(&dir, &options).await.unwrap().files.len(), 2);
    }

    #[tokio::test]
    async fn partitioned_tasks_write_key_value_directories_that_datasets_read() {
        use crate::dataset::{Dataset, DatasetOptions, DatasetSource};
        let options = StorageOptions::new();
        let dir = Location::parse("memory://jobs/d").unwrap();
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("k", DataType::Utf8, true),
        ]));
        let by = vec!["k".to_string()];
        let job = WriteJob::begin(&dir, &options, &schema, CommitMode::Overwrite, &by).await.unwrap();
        let mut task = job.task_writer(3, 0, schema.clone(), WriterOptions::default()).unwrap();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 3])),
                Arc::new(StringArray::from(vec![Some("a b/c"), None, Some("a b/c")])),
            ],
        )
        .unwrap();
        task.write(&batch).await.unwrap();
        let files = task.finish().await.unwrap();
        // One file per directory, named after the task (numbered after its first).
        let mut names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        names.sort();
        assert_eq!(names.len(), 2);
        assert!(names[0].starts_with("k=__HIVE_DEFAULT_PARTITION__/part-00003-"), "{names:?}");
        assert_eq!(names[1], format!("k=a%20b%2Fc/{}", job.task_file(3, 0)));
        // A losing attempt in a partition directory is deleted at commit.
        let mut lost = job.task_writer(3, 1, schema.clone(), WriterOptions::default()).unwrap();
        lost.write(&batch).await.unwrap();
        let lost = lost.finish().await.unwrap();
        let kept: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
        job.commit(&kept, &schema).await.unwrap();
        for file in &lost {
            assert!(!dir.child(&file.name).unwrap().exists(&options).await.unwrap(), "{}", file.name);
        }
        let log = CommitLog::read(&dir, &options).await.unwrap().unwrap();
        assert_eq!(log.commits.last().unwrap().partition_by, by);
        let dataset =
            Dataset::open(DatasetSource::Uri("memory://jobs/d".into()), DatasetOptions::default()).await.unwrap();
        let names: Vec<&str> = dataset.schema().fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["id", "k"]);
        assert_eq!(dataset.num_rows(), 3);
        // An append must keep the partitioning.
        let e = WriteJob::begin(&dir, &options, &schema, CommitMode::Append, &[]).await.unwrap_err();
        assert!(e.to_string().contains("partitioned by"), "{e}");
        WriteJob::begin(&dir, &options, &schema, CommitMode::Append, &by).await.unwrap();
        let e = WriteJob::begin(&dir, &options, &schema, CommitMode::Append, &["nope".to_string()]).await.unwrap_err();
        assert!(e.to_string().contains("no column \"nope\""), "{e}");
    }
}
