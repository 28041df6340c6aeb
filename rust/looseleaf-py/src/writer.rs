//! `FileWriter`: writing record batches to a file.

use std::sync::Mutex;

use std::collections::HashMap;

use looseleaf::{EncodingKind, EncodingPolicy, FileWriter, Location, WriterOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow::{PyArrowSchema, import_batch, import_schema, import_stream};
use crate::errors::{IntoPyResult, invalid_argument};
use crate::runtime::{runtime, wait};

/// An encoding policy from Python: the forced encoding, if any, and the forbidden ones.
pub type PolicySpec = (Option<String>, Vec<String>);

/// Writes record batches to a looseleaf file; nothing is visible at the path until `finish`.
#[pyclass(name = "FileWriter", module = "looseleaf._looseleaf", frozen)]
pub struct PyFileWriter {
    /// `None` once finished or aborted. Never held while waiting for the GIL.
    writer: Mutex<Option<FileWriter>>,
    location: String,
}

impl PyFileWriter {
    /// Runs `f` on the writer, which must be open and not in use by another thread.
    fn with_writer<T>(&self, f: impl FnOnce(&mut FileWriter) -> PyResult<T>) -> PyResult<T> {
        let mut guard = self
            .writer
            .try_lock()
            .map_err(|_| invalid_argument(format!("the writer of {} is in use by another thread", self.location)))?;
        let writer = guard
            .as_mut()
            .ok_or_else(|| invalid_argument(format!("the writer of {} is already closed", self.location)))?;
        f(writer)
    }

    fn take_writer(&self) -> PyResult<Option<FileWriter>> {
        let mut guard = self
            .writer
            .try_lock()
            .map_err(|_| invalid_argument(format!("the writer of {} is in use by another thread", self.location)))?;
        Ok(guard.take())
    }
}

/// How long the collection of an unfinished writer waits for its abort (see `Drop`).
const DROP_ABORT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// A writer collected unfinished (never closed nor aborted) abandons its file. Its abort gets a
/// moment, so that a local staging file is gone when the collection returns (a `del` followed by
/// a listing of the directory sees nothing), and goes on in the background past it: a store
/// that stalls must not hold the interpreter.
impl Drop for PyFileWriter {
    fn drop(&mut self) {
        let writer = self.writer.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        let (Some(writer), Ok(runtime)) = (writer, runtime()) else { return };
        let abort = runtime.spawn(async move {
            let _ = writer.abort().await;
        });
        // Blocking is only possible outside a runtime (a collection on a runtime's thread
        // leaves the abort to run on its own).
        if tokio::runtime::Handle::try_current().is_err() {
            // The timer is made inside the runtime, which it needs.
            let _ = runtime.block_on(async { tokio::time::timeout(DROP_ABORT_WAIT, abort).await });
        }
    }
}

#[pymethods]
impl PyFileWriter {
    #[new]
    #[pyo3(signature = (path, schema, *, page_size = None, compression = None, compression_level = None, encodings = None, statistics = true, checksums = true, zone_map_rows = None, storage_options = None))]
    // The Python constructor's keywords, one parameter each, as PyO3 maps them; they become one
    // `WriterOptions` at once below.
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        schema: &Bound<'_, PyAny>,
        page_size: Option<i128>,
        compression: Option<String>,
        compression_level: Option<i32>,
        encodings: Option<HashMap<String, PolicySpec>>,
        statistics: bool,
        checksums: bool,
        zone_map_rows: Option<i128>,
        storage_options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let display: String = py.import("os")?.call_method1("fspath", (path,))?.extract()?;
        let location = Location::parse(&display).py_err()?;
        let storage = crate::storage::storage_options(storage_options)?;
        let schema = import_schema(schema)?;
        let options = writer_options(WriterSettings {
            page_size,
            compression,
            compression_level,
            encodings,
            statistics,
            checksums,
            zone_map_rows,
        })?;
        let writer = wait(py, async move { FileWriter::create_location(&location, schema, options, &storage).await })?
            .py_err()?;
        Ok(Self { writer: Mutex::new(Some(writer)), location: display })
    }

    /// The schema being written.
    #[getter]
    fn schema(&self) -> PyResult<PyArrowSchema> {
        self.with_writer(|w| Ok(PyArrowSchema::new(w.schema().clone())))
    }

    /// Rows written so far.
    #[getter]
    fn num_rows(&self) -> PyResult<u64> {
        self.with_writer(|w| Ok(w.num_rows()))
    }

    /// Appends one record batch (an object with `__arrow_c_array__`).
    fn write_batch(&self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = import_batch(batch)?;
        self.with_writer(|w| wait(py, w.write(&batch))?.py_err())
    }

    /// Appends every batch of a stream (an object with `__arrow_c_stream__`: a table, a reader).
    fn write_stream(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let reader = import_stream(data)?;
        let runtime = runtime()?;
        self.with_writer(|w| {
            // The producer takes the GIL itself if it needs it (a Python generator behind a
            // pyarrow reader), so batches are pulled with the GIL released.
            crate::runtime::detached(py, || {
                for batch in reader {
                    let batch = batch.map_err(|e| invalid_argument(format!("reading the input stream failed: {e}")))?;
                    crate::runtime::block_on_py(&runtime, w.write(&batch))?.py_err()?;
                }
                Ok(())
            })
        })
    }

    /// Writes the metadata and makes the file visible; returns its row and byte counts.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let writer = self
            .take_writer()?
            .ok_or_else(|| invalid_argument(format!("the writer of {} is already closed", self.location)))?;
        let finished = wait(py, writer.finish())?.py_err()?;
        let out = PyDict::new(py);
        out.set_item("num_rows", finished.num_rows)?;
        out.set_item("num_bytes", finished.num_bytes)?;
        Ok(out)
    }

    /// Abandons the file: nothing is left at its path. Does nothing if already closed.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(writer) = self.take_writer()? {
            wait(py, writer.abort())?.py_err()?;
        }
        Ok(())
    }

    /// Whether the writer was finished or aborted.
    #[getter]
    fn closed(&self) -> bool {
        self.writer.try_lock().map(|g| g.is_none()).unwrap_or(false)
    }
}

/// The writer keywords of `FileWriter` and `write_dataset`, as Python gives them.
pub struct WriterSettings {
    pub page_size: Option<i128>,
    pub compression: Option<String>,
    pub compression_level: Option<i32>,
    pub encodings: Option<HashMap<String, PolicySpec>>,
    pub statistics: bool,
    pub checksums: bool,
    pub zone_map_rows: Option<i128>,
}

/// The core's [`WriterOptions`] of the Python keywords, each checked.
pub fn writer_options(settings: WriterSettings) -> PyResult<WriterOptions> {
    let WriterSettings { page_size, compression, compression_level, encodings, statistics, checksums, zone_map_rows } =
        settings;
    let mut options = WriterOptions::default().with_statistics(statistics).with_checksums(checksums);
    if let Some(rows) = zone_map_rows {
        let rows = u64::try_from(rows)
            .map_err(|_| invalid_argument(format!("zone_map_rows must be 0 (none) or more, got {rows}")))?;
        options = options.with_zone_map_rows(rows);
    }
    if let Some(page_size) = page_size {
        let bytes = u64::try_from(page_size)
            .ok()
            .filter(|b| *b > 0)
            .ok_or_else(|| invalid_argument(format!("page_size must be at least 1 byte, got {page_size}")))?;
        options = options.with_page_size(bytes);
    }
    options = options
        .with_compression_named(compression.as_deref().unwrap_or("none"), compression_level.unwrap_or(3))
        .py_err()?;
    // `{column: (forced encoding, forbidden encodings)}`; the column "*" sets the default.
    for (column, (force, forbid)) in encodings.unwrap_or_default() {
        let policy = EncodingPolicy {
            force: force.map(|f| f.parse::<EncodingKind>()).transpose().py_err()?,
            forbid: forbid.iter().map(|f| f.parse::<EncodingKind>()).collect::<Result<_, _>>().py_err()?,
        };
        options = if column == "*" {
            options.with_default_encoding_policy(policy)
        } else {
            options.with_encoding_policy(column, policy)
        };
    }
    Ok(options)
}
