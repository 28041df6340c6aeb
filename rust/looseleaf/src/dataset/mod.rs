//! Datasets: which data files a directory (or prefix) of looseleaf files shows a reader, the
//! same for every front end (the Python data source, the JVM connector, the CLI).
//!
//! A directory with a commit log (written by the Spark data source, see [`CommitLog`]) shows the
//! files its commits make visible; any other directory shows its `*.leaf` files whose names, and
//! the names of the directories between, do not start with `_` or `.` (other tools' hidden
//! files: `_temporary`, `.crc`, ...).

mod commit_log;

pub use commit_log::{COMMITS_DIR, Commit, CommitLog, CommitMode, FORMAT_VERSION};

use crate::error::Result;
use crate::storage::{Location, StorageOptions};

/// Suffix of data files.
pub const DATA_SUFFIX: &str = ".leaf";

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
    if let Some(log) = CommitLog::read(directory, options).await? {
        return log.files(directory);
    }
    let base = directory.to_string();
    let listed = directory.list(options, recursive).await?;
    Ok(listed
        .into_iter()
        .filter(|object| {
            let relative = object.location.get(base.len()..).unwrap_or_default().trim_start_matches('/');
            object.location.ends_with(DATA_SUFFIX) && !relative.split('/').any(is_hidden)
        })
        .map(|object| object.location)
        .collect())
}
