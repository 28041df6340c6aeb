//! Datasets: which data files a directory (or prefix) of looseleaf files shows a reader, the
//! same for every front end (the Python data source, the JVM connector, the CLI).
//!
//! A directory with a commit log (written by [`DatasetWriter`] and the Spark data sources, see
//! [`CommitLog`]) shows the files its commits make visible; any other directory shows its
//! `*.leaf` files whose names, and the names of the directories between, do not start with `_`
//! or `.` (other tools' hidden files: `_temporary`, `.crc`, ...).

mod commit_log;
mod discovery;
mod partitioning;
mod reader;
mod scan;
mod write_job;
mod writer;

pub use commit_log::{COMMITS_DIR, Commit, CommitLog, CommitMode, FORMAT_VERSION};
pub use discovery::DatasetSource;
pub use partitioning::{HivePartitioning, NULL_PARTITION, is_partition_type};
pub use reader::{Dataset, DatasetFile, DatasetOptions, OPEN_CONCURRENCY, Partitioning};
pub use scan::{DatasetPlan, FILES_AHEAD, FilePlan};
pub use write_job::{SCHEMAS_DIR, TASK_OPEN_FILES, TaskFile, TaskWriter, WriteJob};
pub use writer::{DatasetWriteOptions, DatasetWriter, ExistingData, read_back_schema};

use crate::error::{Error, Result};
use crate::storage::{Location, StorageOptions};

/// Suffix of data files.
pub const DATA_SUFFIX: &str = ".leaf";

/// The schema file of a directory without a commit log, if it has one (a dataset that may be
/// empty keeps its schema there).
pub const LEGACY_SCHEMA_FILE: &str = "_schema.leaf";

/// What a path names as a dataset: its data files and the file holding its schema, if any
/// other than the first data file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DatasetFiles {
    /// The data files, in order (see [`directory_files`]).
    pub files: Vec<String>,
    /// The dataset's schema file: its last commit's, or a directory's `_schema.leaf`.
    pub schema_file: Option<String>,
}

/// The dataset `location` names: itself if it is a `.leaf` file, else the dataset directory
/// (or prefix) there (see [`directory_files`]).
///
/// # Errors
/// [`Error::Io`] (not found) naming `location` if nothing is there, [`Error::InvalidArgument`] if
/// it names no data file and no schema;
/// [`Error::Io`] if the store fails; [`Error::Corrupt`] for a commit that does not parse.
pub async fn resolve(location: &Location, options: &StorageOptions) -> Result<DatasetFiles> {
    let text = location.to_string();
    if text.ends_with(DATA_SUFFIX) && location.exists(options).await? {
        return Ok(DatasetFiles { files: vec![text], schema_file: None });
    }
    let found = if let Some(log) = CommitLog::read(location, options).await? {
        DatasetFiles { files: log.files(location)?, schema_file: Some(log.schema_file(location)?) }
    } else {
        let legacy = location.child(LEGACY_SCHEMA_FILE)?;
        let schema_file = legacy.exists(options).await?.then(|| legacy.to_string());
        DatasetFiles { files: directory_files(location, options, false).await?, schema_file }
    };
    if found.files.is_empty() && found.schema_file.is_none() {
        return Err(no_files(location));
    }
    Ok(found)
}

/// The error of a location that shows no data file and no schema: not found if nothing is there
/// at all (a local path that does not exist: what `pyarrow.dataset` and Spark say too), else an
/// invalid argument (a directory or prefix without looseleaf files).
pub(crate) fn no_files(location: &Location) -> Error {
    if let Some(path) = location.local_path()
        && !path.exists()
    {
        let missing =
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory: no looseleaf files there");
        return Error::io(location.to_string(), missing);
    }
    Error::invalid_argument(format!("{location}: no looseleaf files there"))
}

/// Whether readers skip a file or directory of this name.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with(['_', '.'])
}

/// The data files a reader sees in `directory` (below it at any depth when `recursive`, for
/// a directory without a commit log), as locations in the form of `directory`, sorted (a
/// commit log's files in commit order). Nothing there is an empty list.
///
/// # Errors
/// [`crate::Error::Io`] if the store fails; [`crate::Error::Corrupt`] for a commit that does not
/// parse.
pub async fn directory_files(directory: &Location, options: &StorageOptions, recursive: bool) -> Result<Vec<String>> {
    Ok(directory_entries(directory, options, recursive).await?.into_iter().map(|(location, _)| location).collect())
}

/// [`directory_files`], each with its path below `directory` as stored (the name a commit
/// gives it; partition directories' escapes kept).
pub(crate) async fn directory_entries(
    directory: &Location,
    options: &StorageOptions,
    recursive: bool,
) -> Result<Vec<(String, String)>> {
    match CommitLog::read(directory, options).await? {
        Some(log) => committed_entries(&log, directory),
        None => listed_entries(directory, options, recursive).await,
    }
}

/// The files `log` makes visible, as `(location, name)`.
pub(crate) fn committed_entries(log: &CommitLog, directory: &Location) -> Result<Vec<(String, String)>> {
    let names = log.visible().iter().flat_map(|commit| commit.files.iter().cloned());
    names.map(|name| Ok((directory.child(&name)?.to_string(), name))).collect()
}

/// The data files of a directory without a commit log, as `(location, path below it)`.
pub(crate) async fn listed_entries(
    directory: &Location,
    options: &StorageOptions,
    recursive: bool,
) -> Result<Vec<(String, String)>> {
    let listed = directory.list(options, recursive).await?;
    Ok(listed
        .into_iter()
        .filter(|object| object.relative.ends_with(DATA_SUFFIX) && !object.relative.split('/').any(is_hidden))
        .map(|object| (object.location, object.relative))
        .collect())
}
