//! Where a Python path points: a local file, or an object in the process's memory store.

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use looseleaf::io::{LocalFileReader, ObjectStoreReader, RangeReader};
use looseleaf::{FileWriter, IoOptions, WriterOptions};
use object_store::memory::InMemory;
use object_store::path::Path;
use pyo3::prelude::*;

use crate::errors::{IntoPyResult, to_py_err};

/// The store behind `memory://` paths, shared by every reader and writer of the process.
static MEMORY: LazyLock<Arc<InMemory>> = LazyLock::new(|| Arc::new(InMemory::new()));

/// A resolved path.
pub enum Location {
    /// A file on the local file system.
    Local(PathBuf),
    /// An object of the in-memory store.
    Memory(Path),
}

impl Location {
    /// Resolves a `str` or `os.PathLike`: `memory://name` is the process's in-memory store,
    /// `file:///path` or a plain path a local file.
    pub fn parse(path: &Bound<'_, PyAny>) -> PyResult<(Self, String)> {
        let os = path.py().import("os")?;
        let text: String = os.call_method1("fspath", (path,))?.extract()?;
        if let Some(rest) = text.strip_prefix("memory://") {
            let object =
                Path::parse(rest).map_err(|e| crate::errors::invalid_argument(format!("bad path {text:?}: {e}")))?;
            return Ok((Self::Memory(object), text));
        }
        if let Some(rest) = text.strip_prefix("file://") {
            return Ok((Self::Local(PathBuf::from(rest)), text));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(to_py_err(looseleaf::Error::Unsupported(format!(
                "storage scheme {scheme:?} of {text:?} (local paths, file:// and memory:// are supported)"
            ))));
        }
        Ok((Self::Local(PathBuf::from(&text)), text))
    }

    /// A reader of the file.
    pub fn reader(&self, display: &str) -> PyResult<Arc<dyn RangeReader>> {
        Ok(match self {
            Self::Local(path) => Arc::new(LocalFileReader::open(path).py_err()?),
            Self::Memory(path) => Arc::new(
                ObjectStoreReader::new(MEMORY.clone(), path.clone(), display).with_io_defaults(IoOptions::LOCAL),
            ),
        })
    }

    /// Starts writing the file.
    pub async fn create(
        &self,
        schema: arrow_schema::SchemaRef,
        options: WriterOptions,
    ) -> looseleaf::Result<FileWriter> {
        match self {
            Self::Local(path) => FileWriter::create_path(path, schema, options).await,
            Self::Memory(path) => FileWriter::try_new(MEMORY.clone(), path, schema, options).await,
        }
    }
}
