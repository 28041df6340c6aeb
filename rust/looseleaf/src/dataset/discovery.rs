//! Which files a dataset path names: a `.leaf` file, a directory (or prefix) at any depth, a
//! glob, or a list of files; each with its path relative to the dataset's root, where its
//! partition directories are read from.

use crate::error::{Error, Result, ensure};
use crate::storage::{Location, StorageOptions, without_query};

use super::{CommitLog, DATA_SUFFIX, LEGACY_SCHEMA_FILE, is_hidden};

/// What a dataset is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatasetSource {
    /// A `.leaf` file, a directory or prefix (its files at any depth: partition directories),
    /// or a glob (`*`, `?`, `[...]` within a name, `**` across directories) over one.
    Uri(String),
    /// These files, in this order (no partition directories: they have no common root).
    Files(Vec<String>),
}

/// A data file found: where it is, and its path below the dataset's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundFile {
    pub location: String,
    pub relative: String,
}

/// The files `source` names, sorted (a commit log's in commit order), and the file holding the
/// schema of a dataset that may have no data file (a commit log's schema or `_schema.leaf`).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the path if it names no data file and no schema;
/// [`Error::Io`] if the store fails.
pub(crate) async fn find_files(
    source: &DatasetSource,
    options: &StorageOptions,
) -> Result<(Vec<FoundFile>, Option<String>)> {
    let uri = match source {
        DatasetSource::Files(files) => {
            ensure!(!files.is_empty(), invalid, "a dataset of a list of files needs at least one file");
            let found = files
                .iter()
                .map(|f| {
                    let location = Location::parse(f)?.to_string();
                    let relative = location.rsplit('/').next().unwrap_or_default().to_string();
                    Ok(FoundFile { location, relative })
                })
                .collect::<Result<_>>()?;
            return Ok((found, None));
        }
        DatasetSource::Uri(uri) => uri,
    };
    if let Some(glob_at) = uri.find(['*', '?', '[']) {
        return Ok((glob_files(uri, glob_at, options).await?, None));
    }
    let location = Location::parse(uri)?;
    let text = location.to_string();
    if text.ends_with(DATA_SUFFIX) && location.exists(options).await? {
        let relative = text.rsplit('/').next().unwrap_or_default().to_string();
        return Ok((vec![FoundFile { location: text, relative }], None));
    }
    let (files, schema_file) = match CommitLog::read(&location, options).await? {
        Some(log) => (super::committed_entries(&log, &location)?, Some(log.schema_file(&location)?)),
        None => {
            let legacy = location.child(LEGACY_SCHEMA_FILE)?;
            let schema_file = legacy.exists(options).await?.then(|| legacy.to_string());
            (super::listed_entries(&location, options, true).await?, schema_file)
        }
    };
    if files.is_empty() && schema_file.is_none() {
        return Err(super::no_files(&location));
    }
    Ok((files.into_iter().map(|(location, relative)| FoundFile { location, relative }).collect(), schema_file))
}

/// The files a glob matches: the directory before its first wildcard, listed at any depth,
/// filtered by the pattern (hidden names skipped, as in a directory).
async fn glob_files(uri: &str, glob_at: usize, options: &StorageOptions) -> Result<Vec<FoundFile>> {
    let base_end = uri[..glob_at].rfind('/').map_or(0, |i| i + 1);
    let (base, pattern) = uri.split_at(base_end);
    // A URL's query may hold a token: errors show the URL without it.
    let shown = without_query(uri);
    let pattern = glob::Pattern::new(pattern)
        .map_err(|e| Error::invalid_argument(format!("{shown}: not a valid glob: {}", e.msg)))?;
    let directory = Location::parse(if base.is_empty() { "." } else { base })?;
    let matching = glob::MatchOptions { require_literal_separator: true, ..Default::default() };
    let mut out = Vec::new();
    for object in directory.list(options, true).await? {
        if object.relative.split('/').any(is_hidden) || !pattern.matches_with(&object.relative, matching) {
            continue;
        }
        out.push(FoundFile { relative: object.relative, location: object.location });
    }
    if out.is_empty() {
        return Err(Error::invalid_argument(format!("{shown}: the glob matches no file")));
    }
    Ok(out)
}
