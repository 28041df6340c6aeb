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
//! A job is plain data (directory, storage options, id, mode), rebuilt where each step runs with
//! [`WriteJob::resume`]. A driver dying at any point leaves files no reader sees, never a
//! dataset that reads part of a job.

use std::hash::{BuildHasher, RandomState};
use std::time::{SystemTime, UNIX_EPOCH};

use arrow_schema::{Schema, SchemaRef};
use bytes::Bytes;

use super::commit_log::{COMMITS_DIR, Commit, CommitLog, CommitMode, FORMAT_VERSION};
use super::{DATA_SUFFIX, LEGACY_SCHEMA_FILE, directory_files};
use crate::error::{Error, Result};
use crate::spark_form;
use crate::storage::{Location, StorageOptions};
use crate::writer::WriterOptions;

/// The directory of a dataset's schema files (one per commit, a file with no rows).
pub const SCHEMAS_DIR: &str = "_schemas";

/// One job writing into a dataset directory (see the module docs for its steps).
#[derive(Debug, Clone)]
pub struct WriteJob {
    directory: Location,
    options: StorageOptions,
    id: String,
    mode: CommitMode,
}

impl WriteJob {
    /// Begins a job on the driver, before any task writes: checks the directory, an append's
    /// `schema` against the dataset's, and starts the commit log if there is none.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `directory` is a file; [`Error::Schema`] if an append's
    /// schema reads in Spark as another than the dataset's (nullability aside);
    /// [`Error::Io`] if the store fails.
    pub async fn begin(
        directory: &Location,
        options: &StorageOptions,
        schema: &Schema,
        mode: CommitMode,
    ) -> Result<Self> {
        if directory.exists(options).await? {
            return Err(Error::invalid_argument(format!("{directory}: not a directory")));
        }
        let log = CommitLog::read(directory, options).await?;
        if mode == CommitMode::Append {
            check_append(directory, options, log.as_ref(), schema).await?;
        }
        let mut after = None;
        if log.is_none() {
            after = Some(start_log(directory, options, schema).await?);
        }
        let id = new_job_id(after.as_deref());
        Ok(Self::resume(directory.clone(), options.clone(), id, mode))
    }

    /// The job `id` begun earlier (by [`WriteJob::begin`], maybe in another process).
    pub fn resume(directory: Location, options: StorageOptions, id: String, mode: CommitMode) -> Self {
        Self { directory, options, id, mode }
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
        format!("part-{partition:05}-{}-{attempt}{DATA_SUFFIX}", self.id)
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
    /// before it made visible. A failure after the commit is written leaves only files no reader
    /// sees.
    ///
    /// # Errors
    /// [`Error::Io`] if the store fails.
    pub async fn commit(&self, files: &[String], schema: &SchemaRef) -> Result<()> {
        let before = CommitLog::read(&self.directory, &self.options).await?;
        let schema_file = format!("{SCHEMAS_DIR}/{}.leaf", self.id);
        write_schema_file(&self.directory.child(&schema_file)?, &self.options, schema).await?;
        let commit = Commit { job: self.id.clone(), mode: self.mode, files: files.to_vec(), schema: schema_file };
        write_commit(&self.directory, &self.options, &commit).await?;
        self.delete_job_files(files).await?;
        if let (CommitMode::Overwrite, Some(before)) = (self.mode, before) {
            for old in before.commits {
                for name in old.files.iter().chain([&old.schema, &format!("{COMMITS_DIR}/{}.json", old.job)]) {
                    self.directory.child(name)?.delete(&self.options).await?;
                }
            }
        }
        Ok(())
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

    async fn delete_job_files(&self, keep: &[String]) -> Result<()> {
        for object in self.directory.list(&self.options, false).await? {
            let name = object.location.rsplit('/').next().unwrap_or_default();
            if name.contains(&self.id) && name.ends_with(DATA_SUFFIX) && !keep.iter().any(|k| k == name) {
                Location::parse(&object.location)?.delete(&self.options).await?;
            }
        }
        Ok(())
    }
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
    let legacy = directory_files(directory, options, false).await?;
    let existing = existing_schema(directory, options, None, &legacy).await?;
    let schema = existing.unwrap_or_else(|| SchemaRef::new(schema.clone()));
    let id = new_job_id(None);
    let schema_file = format!("{SCHEMAS_DIR}/{id}.leaf");
    write_schema_file(&directory.child(&schema_file)?, options, &schema).await?;
    let files = legacy.iter().map(|f| f.rsplit('/').next().unwrap_or_default().to_owned()).collect();
    write_commit(
        directory,
        options,
        &Commit { job: id.clone(), mode: CommitMode::Overwrite, files, schema: schema_file },
    )
    .await?;
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
        Some(source) => Ok(Some(Location::parse(&source)?.open(options).await?.schema().clone())),
        None => Ok(None),
    }
}

/// Refuses an append whose rows Spark would read with another schema than the dataset's.
async fn check_append(
    directory: &Location,
    options: &StorageOptions,
    log: Option<&CommitLog>,
    new: &Schema,
) -> Result<()> {
    let files = if log.is_none() { directory_files(directory, options, false).await? } else { Vec::new() };
    let Some(existing) = existing_schema(directory, options, log, &files).await? else {
        return Ok(());
    };
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
    location.create(schema.clone(), WriterOptions::default(), options).await?.finish().await?;
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
        let mut writer = location.create(schema, WriterOptions::default(), &StorageOptions::new()).await.unwrap();
        writer.write(&batch).await.unwrap();
        writer.finish().await.unwrap();
        name
    }

    #[tokio::test]
    async fn a_job_is_seen_whole_once_committed_and_an_overwrite_replaces_what_was_there() {
        let options = StorageOptions::new();
        let dir = Location::parse("memory://jobs/a").unwrap();
        let first = WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Overwrite).await.unwrap();
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

        let append = WriteJob::begin(&dir, &options, &schema(DataType::LargeUtf8), CommitMode::Append).await.unwrap();
        assert!(append.id() > first.id());
        let b = write_task(&append, 0, &[5]).await;
        append.commit(std::slice::from_ref(&b), &schema(DataType::Utf8)).await.unwrap();
        assert_eq!(resolve(&dir, &options).await.unwrap().files.len(), 2);

        let replace = WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Overwrite).await.unwrap();
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
    async fn an_aborted_job_leaves_nothing_visible_and_an_append_keeps_the_schema() {
        let options = StorageOptions::new();
        let dir = Location::parse("memory://jobs/b").unwrap();
        let job = WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Append).await.unwrap();
        let a = write_task(&job, 0, &[1]).await;
        job.abort().await.unwrap();
        assert!(!dir.child(&a).unwrap().exists(&options).await.unwrap());
        assert!(resolve(&dir, &options).await.unwrap().files.is_empty());

        let resumed = WriteJob::resume(dir.clone(), options.clone(), job.id().to_owned(), CommitMode::Append);
        let late = write_task(&resumed, 1, &[2]).await;
        assert!(!resumed.keep_task_file(&late).await.unwrap(), "the job was aborted");

        let e = WriteJob::begin(&dir, &options, &schema(DataType::Int32), CommitMode::Append).await.unwrap_err();
        assert!(matches!(e, Error::Schema(_)) && e.to_string().contains("cannot append rows of schema"), "{e}");
        write_task(&WriteJob::resume(dir.clone(), options.clone(), "x".into(), CommitMode::Append), 0, &[1]).await;
        let real = dir.child("part-00000-x-0.leaf").unwrap();
        let e = WriteJob::begin(&real, &options, &schema(DataType::Utf8), CommitMode::Append).await.unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    #[tokio::test]
    async fn a_directory_without_a_log_adopts_its_files() {
        let options = StorageOptions::new();
        let dir = Location::parse("memory://jobs/c").unwrap();
        let legacy =
            write_task(&WriteJob::resume(dir.clone(), options.clone(), "old".into(), CommitMode::Append), 0, &[1])
                .await;
        let job = WriteJob::begin(&dir, &options, &schema(DataType::Utf8), CommitMode::Append).await.unwrap();
        let log = CommitLog::read(&dir, &options).await.unwrap().unwrap();
        assert_eq!(log.commits.len(), 1);
        assert_eq!(log.commits[0].files, [legacy]);
        assert!(job.id() > log.commits[0].job.as_str());
        let new = write_task(&job, 0, &[2]).await;
        job.commit(std::slice::from_ref(&new), &schema(DataType::Utf8)).await.unwrap();
        assert_eq!(resolve(&dir, &options).await.unwrap().files.len(), 2);
    }
}
