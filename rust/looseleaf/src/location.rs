//! [`Location`]: where a file is, parsed once from what a user wrote, for every front end.
//!
//! Accepted forms: a plain path (relative or absolute, `~` not expanded), a `file://` URL
//! (percent-decoded, host empty or `localhost`), and `memory://name`, an object of one
//! in-memory store shared by the whole process (for tests and examples). Any other scheme is
//! [`Error::Unsupported`].

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use arrow_schema::SchemaRef;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;

use crate::error::{Error, Result, bail};
use crate::io::{IoOptions, LocalFileReader, ObjectStoreReader, RangeReader};
use crate::{FileReader, FileWriter, WriterOptions};

/// The store behind `memory://` locations, shared by every reader and writer of the process.
static MEMORY: LazyLock<Arc<InMemory>> = LazyLock::new(|| Arc::new(InMemory::new()));

/// A parsed location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file of the local file system.
    Local(PathBuf),
    /// An object of the process's in-memory store.
    Memory(ObjectPath),
}

impl Location {
    /// Parses a path or URL (see the module documentation).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a scheme this build cannot read; [`Error::InvalidArgument`]
    /// for a malformed URL or a `file://` URL naming another host.
    pub fn parse(text: &str) -> Result<Self> {
        if text.is_empty() {
            bail!(invalid, "a location cannot be empty");
        }
        let Some((scheme, rest)) = text.split_once("://") else {
            // `C:\data\x.leaf` has no `://`: a path, as is anything else without one.
            return Ok(Self::Local(PathBuf::from(text)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "file" => {
                let url = url::Url::parse(text)
                    .map_err(|e| Error::invalid_argument(format!("{text:?} is not a valid file:// URL: {e}")))?;
                let path = url.to_file_path().map_err(|()| {
                    Error::invalid_argument(format!(
                        "{text:?}: a file:// URL must name a local path (host empty or localhost)"
                    ))
                })?;
                Ok(Self::Local(path))
            }
            "memory" => {
                let path = ObjectPath::parse(rest)
                    .map_err(|e| Error::invalid_argument(format!("{text:?} is not a valid memory:// location: {e}")))?;
                Ok(Self::Memory(path))
            }
            other => {
                bail!(
                    unsupported,
                    "storage scheme {other:?} of {text:?} (local paths, file:// and memory:// are supported)"
                )
            }
        }
    }

    /// A reader of the file at this location; `display` names it in errors.
    ///
    /// # Errors
    /// [`Error::Io`] if a local file cannot be opened.
    pub fn range_reader(&self, display: &str) -> Result<Arc<dyn RangeReader>> {
        Ok(match self {
            Self::Local(path) => Arc::new(LocalFileReader::open(path)?),
            // An in-process store answers as fast as a local disk: local I/O settings.
            Self::Memory(path) => Arc::new(
                ObjectStoreReader::new(MEMORY.clone(), path.clone(), display).with_io_defaults(IoOptions::LOCAL),
            ),
        })
    }

    /// Opens the file at this location; `display` names it in errors.
    ///
    /// # Errors
    /// As [`FileReader::open`].
    pub async fn open(&self, display: &str) -> Result<FileReader> {
        FileReader::open(self.range_reader(display)?).await
    }

    /// Starts writing a file at this location (visible only once finished).
    ///
    /// # Errors
    /// As [`FileWriter::try_new`].
    pub async fn create(&self, schema: SchemaRef, options: WriterOptions) -> Result<FileWriter> {
        match self {
            Self::Local(path) => FileWriter::create_path(path, schema, options).await,
            Self::Memory(path) => FileWriter::try_new(MEMORY.clone(), path, schema, options).await,
        }
    }

    /// The local path, for a local file.
    pub fn local_path(&self) -> Option<&std::path::Path> {
        match self {
            Self::Local(path) => Some(path),
            Self::Memory(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths_and_urls() {
        assert_eq!(Location::parse("data/x.leaf").unwrap(), Location::Local("data/x.leaf".into()));
        assert_eq!(Location::parse("/tmp/a b.leaf").unwrap(), Location::Local("/tmp/a b.leaf".into()));
        assert_eq!(Location::parse("file:///tmp/a%20b.leaf").unwrap(), Location::Local("/tmp/a b.leaf".into()));
        assert_eq!(Location::parse("file://localhost/tmp/x").unwrap(), Location::Local("/tmp/x".into()));
        assert_eq!(Location::parse("memory://t/x.leaf").unwrap(), Location::Memory(ObjectPath::from("t/x.leaf")));
        assert!(matches!(Location::parse("file://elsewhere/x"), Err(Error::InvalidArgument { .. })));
        assert!(matches!(Location::parse("s3://bucket/x"), Err(Error::Unsupported { .. })));
        assert!(matches!(Location::parse(""), Err(Error::InvalidArgument { .. })));
    }
}
