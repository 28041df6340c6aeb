//! The commit log of a dataset directory: which data files a reader sees, made visible by one
//! small write per job, so that no step needs an atomic rename (object stores have none).
//!
//! Layout (written through [`super::WriteJob`] by `write_dataset` and the Spark data sources):
//!
//! ```text
//! part-00000-<job>-<attempt>.leaf     data files, written by the tasks directly in place
//! _commits/<job>.json                 one per committed job, written last by the driver
//! _commits/<job>.aborted              one per aborted job (empty), written before its cleanup
//! _schemas/<job>.leaf                 the dataset's schema (a file with no rows)
//! ```
//!
//! `<job>` starts with the job's start time, so commits sort in the order jobs started. A
//! commit is `{"version": 1, "job": …, "mode": "append" | "overwrite", "files": […],
//! "schema": …}`, and `"partition_by": […]` when its files are in `key=value/` directories
//! (file names are then paths below the directory: `k=1/part-….leaf`). **A reader sees** the files of the last `overwrite` commit and of every later
//! commit, with the schema of the last commit; data files no commit names (a job running,
//! failed, or whose driver died before committing) are invisible.

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::storage::{Location, StorageOptions};

/// The log's directory inside a dataset directory.
pub const COMMITS_DIR: &str = "_commits";
/// Times [`CommitLog::read`] lists the log again when a listed commit is gone.
const RELISTS: usize = 4;

/// The version of the commit format this reader understands.
pub const FORMAT_VERSION: u64 = 1;

/// What a commit does to the files before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CommitMode {
    /// Adds its files to those visible.
    Append,
    /// Replaces every file visible before it.
    Overwrite,
}

/// One committed job.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Commit {
    /// The job's id (sorts by start time).
    pub job: String,
    /// What it does to the files before it.
    pub mode: CommitMode,
    /// Its data files, relative to the dataset directory.
    pub files: Vec<String>,
    /// Its schema file, relative to the dataset directory (the files' schema: partition
    /// columns are not in it).
    pub schema: String,
    /// Its partition columns (`key=value/` directories of its files), none if absent.
    #[serde(default)]
    pub partition_by: Vec<String>,
}

#[derive(Deserialize)]
struct Versioned {
    version: u64,
}

impl Commit {
    /// Parses the commit stored at `location`.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming `location` if it is not a commit of [`FORMAT_VERSION`].
    pub fn parse(location: &str, bytes: &[u8]) -> Result<Self> {
        let corrupt = |why: String| Error::corrupt(format!("not a looseleaf commit ({why})")).with_location(location);
        let version: Versioned = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        if version.version != FORMAT_VERSION {
            return Err(corrupt(format!("version {}, this reader knows {FORMAT_VERSION}", version.version)));
        }
        serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))
    }
}

/// The commits of a directory, oldest first (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitLog {
    /// The commits, sorted by job.
    pub commits: Vec<Commit>,
}

impl CommitLog {
    /// The commit log of `directory`, `None` if it has none.
    ///
    /// An overwrite deletes the commits before it once it is written: a commit listed but gone
    /// when read means a newer overwrite, so the log is listed again (a few times at most)
    /// rather than read without it, which would show the files of the commits left.
    ///
    /// # Errors
    /// [`Error::Io`] if the store fails; [`Error::Corrupt`] for a commit that does not parse.
    pub async fn read(directory: &Location, options: &StorageOptions) -> Result<Option<Self>> {
        let mut attempt = 0;
        loop {
            match Self::read_listed(directory, options).await {
                Err(e) if e.kind() == ErrorKind::NotFound && attempt < RELISTS => attempt += 1,
                result => return result,
            }
        }
    }

    async fn read_listed(directory: &Location, options: &StorageOptions) -> Result<Option<Self>> {
        let log = directory.child(COMMITS_DIR)?;
        let mut commits = Vec::new();
        for object in log.list(options, false).await? {
            if object.location.ends_with(".json") {
                let bytes = Location::parse(&object.location)?.read_all(options).await?;
                commits.push(Commit::parse(&object.location, &bytes)?);
            }
        }
        if commits.is_empty() {
            return Ok(None);
        }
        commits.sort_by(|a, b| a.job.cmp(&b.job));
        Ok(Some(Self { commits }))
    }

    /// The commits whose files a reader sees: from the last overwrite on.
    pub fn visible(&self) -> &[Commit] {
        let last_overwrite = self.commits.iter().rposition(|c| c.mode == CommitMode::Overwrite).unwrap_or(0);
        &self.commits[last_overwrite..]
    }

    /// The visible data files, as locations inside `directory`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a file name that is not a relative path.
    pub fn files(&self, directory: &Location) -> Result<Vec<String>> {
        self.visible()
            .iter()
            .flat_map(|commit| &commit.files)
            .map(|name| Ok(directory.child(name)?.to_string()))
            .collect()
    }

    /// The schema file of the dataset (that of the last commit).
    pub fn schema_file(&self, directory: &Location) -> Result<String> {
        let last = self.commits.last().ok_or_else(|| Error::internal("an empty commit log"))?;
        Ok(directory.child(&last.schema)?.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(job: &str, mode: CommitMode, files: &[&str]) -> Commit {
        Commit {
            job: job.into(),
            mode,
            files: files.iter().map(|f| f.to_string()).collect(),
            schema: format!("_schemas/{job}.leaf"),
            partition_by: Vec::new(),
        }
    }

    #[test]
    fn readers_see_from_the_last_overwrite_on() {
        let log = CommitLog {
            commits: vec![
                commit("1", CommitMode::Overwrite, &["a.leaf"]),
                commit("2", CommitMode::Append, &["b.leaf"]),
                commit("3", CommitMode::Overwrite, &["c.leaf"]),
                commit("4", CommitMode::Append, &["d.leaf", "e.leaf"]),
            ],
        };
        let dir = Location::parse("memory://data/set").unwrap();
        assert_eq!(
            log.files(&dir).unwrap(),
            ["memory://data/set/c.leaf", "memory://data/set/d.leaf", "memory://data/set/e.leaf"]
        );
        assert_eq!(log.schema_file(&dir).unwrap(), "memory://data/set/_schemas/4.leaf");
        let appends = CommitLog { commits: vec![commit("1", CommitMode::Append, &["a.leaf"])] };
        assert_eq!(appends.visible().len(), 1);
    }

    #[test]
    fn commits_parse_or_fail_naming_the_file() {
        let good = br#"{"version": 1, "job": "j", "mode": "append", "files": ["x.leaf"], "schema": "_schemas/j.leaf"}"#;
        assert_eq!(Commit::parse("c.json", good).unwrap(), commit("j", CommitMode::Append, &["x.leaf"]));
        for bad in [
            &br#"{"version": 2, "job": "j", "mode": "append", "files": [], "schema": "s"}"#[..],
            br#"{"version": 1, "job": "j", "mode": "replace", "files": [], "schema": "s"}"#,
            br#"{"version": 1, "job": "j", "mode": "append", "schema": "s"}"#,
            b"not json",
        ] {
            let e = Commit::parse("memory://d/_commits/c.json", bad).unwrap_err();
            assert!(matches!(e, Error::Corrupt { .. }), "{e}");
            assert!(e.to_string().contains("_commits/c.json"), "{e}");
        }
    }
}
