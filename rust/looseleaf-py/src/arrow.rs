//! Moving Arrow data across the boundary without copies, through the Arrow PyCapsule interface
//! (`__arrow_c_array__`, `__arrow_c_stream__`, `__arrow_c_schema__`).

use std::sync::{Arc, Mutex};

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array, RecordBatch, RecordBatchReader, StructArray};
use arrow_schema::{ArrowError, SchemaRef};
use futures::StreamExt;
use futures::stream::BoxStream;
use looseleaf::{ReadStats, RecordBatchStream};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::invalid_argument;

const ARRAY_STREAM: &std::ffi::CStr = c"arrow_array_stream";
const SCHEMA: &std::ffi::CStr = c"arrow_schema";
const ARRAY: &std::ffi::CStr = c"arrow_array";

/// Imports a record batch from an object with `__arrow_c_array__` (a `pyarrow.RecordBatch`).
pub fn import_batch(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatch> {
    let data = import_array_data(obj, "a record batch")?;
    let struct_array = StructArray::from(data);
    if struct_array.null_count() > 0 {
        return Err(invalid_argument("a record batch cannot have top-level nulls"));
    }
    Ok(RecordBatch::from(struct_array))
}

/// Imports an array from an object with `__arrow_c_array__` (a `pyarrow.Array`).
pub fn import_array(obj: &Bound<'_, PyAny>) -> PyResult<arrow_array::ArrayRef> {
    Ok(arrow_array::make_array(import_array_data(obj, "an Arrow array")?))
}

/// The data of an object with `__arrow_c_array__`; `what` names what was expected in errors.
fn import_array_data(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<arrow_data::ArrayData> {
    let capsules = obj
        .call_method0("__arrow_c_array__")
        .map_err(|_| invalid_argument(format!("expected {what} (an object with __arrow_c_array__)")))?;
    let (schema, array): (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>) = capsules.extract()?;
    let schema_ptr = schema.pointer_checked(Some(SCHEMA))?.cast::<FFI_ArrowSchema>();
    let array_ptr = array.pointer_checked(Some(ARRAY))?.cast::<FFI_ArrowArray>();
    // SAFETY: the capsules were just produced by `__arrow_c_array__` under their protocol
    // names, so they point at valid, initialised C data interface structs. `from_raw` moves the
    // array out (leaving a released struct behind for the capsule's destructor), and the schema
    // is only borrowed while the capsule is alive.
    unsafe {
        let array = FFI_ArrowArray::from_raw(array_ptr.as_ptr());
        from_ffi(array, schema_ptr.as_ref())
    }
    .map_err(|e| invalid_argument(format!("cannot import {what}: {e}")))
}

/// Imports a stream of record batches from an object with `__arrow_c_stream__` (a
/// `pyarrow.Table`, `RecordBatchReader`, ...).
pub fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let capsule = obj
        .call_method0("__arrow_c_stream__")
        .map_err(|_| invalid_argument("expected Arrow data (an object with __arrow_c_stream__)"))?;
    let capsule = capsule.cast_into::<PyCapsule>()?;
    let stream_ptr = capsule.pointer_checked(Some(ARRAY_STREAM))?.cast::<FFI_ArrowArrayStream>();
    // SAFETY: the capsule was produced by `__arrow_c_stream__` under the protocol's name, so it
    // points at a valid stream struct; `from_raw` moves the stream out and leaves a released
    // struct for the capsule's destructor.
    unsafe { RecordBatchStreamReader::from_raw(stream_ptr.as_ptr()) }
        .map_err(|e| invalid_argument(format!("cannot import the Arrow stream: {e}")))
}

/// A schema, exported through `__arrow_c_schema__`.
#[pyclass(name = "ArrowSchema", module = "looseleaf._looseleaf", frozen)]
pub struct PyArrowSchema {
    schema: SchemaRef,
}

impl PyArrowSchema {
    pub fn new(schema: SchemaRef) -> Self {
        Self { schema }
    }
}

#[pymethods]
impl PyArrowSchema {
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let ffi = FFI_ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| invalid_argument(format!("cannot export the schema: {e}")))?;
        PyCapsule::new_with_value(py, ffi, SCHEMA)
    }
}

/// Imports a schema from an object with `__arrow_c_schema__` (a `pyarrow.Schema`).
pub fn import_schema(obj: &Bound<'_, PyAny>) -> PyResult<SchemaRef> {
    let capsule = obj
        .call_method0("__arrow_c_schema__")
        .map_err(|_| invalid_argument("expected a schema (an object with __arrow_c_schema__)"))?;
    let capsule = capsule.cast_into::<PyCapsule>()?;
    let ptr = capsule.pointer_checked(Some(SCHEMA))?.cast::<FFI_ArrowSchema>();
    // SAFETY: produced by `__arrow_c_schema__` under the protocol's name; only borrowed while
    // the capsule is alive.
    let schema = arrow_schema::Schema::try_from(unsafe { ptr.as_ref() })
        .map_err(|e| invalid_argument(format!("cannot import the schema: {e}")))?;
    Ok(Arc::new(schema))
}

/// Checks that `schema`, the schema of the file or dataset `location`, can cross Arrow's C data
/// interface, through which every read hands its batches to Python: a field name holding a NUL
/// byte cannot (names are C strings). Checked when the file is opened, so that the error names
/// it, instead of an `ArrowInvalid` without a name from whichever read meets it first.
pub fn check_exportable(schema: &SchemaRef, location: &str) -> PyResult<()> {
    FFI_ArrowSchema::try_from(schema.as_ref()).map(drop).map_err(|e| {
        crate::errors::to_py_err(
            looseleaf::Error::unsupported(format!(
                "its schema cannot cross Arrow's C data interface to Python ({e}): a field name with a NUL \
                 byte?"
            ))
            .with_location(location),
        )
    })
}

/// Turns the async batch stream of a read into the blocking reader the C stream interface
/// calls (pyarrow calls it with the GIL released).
///
/// `next` runs under Arrow's `extern "C"` callback, which a panic must never cross (it would
/// abort the process): a panic becomes an error, and the stream ends. It also answers Ctrl-C
/// while it waits, and refuses to run in a process forked after the read started (whose
/// runtime has no threads left: it would wait forever).
struct BlockingReader {
    schema: SchemaRef,
    stream: Option<BoxStream<'static, looseleaf::Result<RecordBatch>>>,
    runtime: Arc<tokio::runtime::Runtime>,
    /// The process the read started in.
    pid: u32,
}

impl BlockingReader {
    fn next_batch(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        if std::process::id() != self.pid {
            self.stream = None;
            return Some(Err(external(
                "this read was started in another process (before a fork): start it again in this one",
            )));
        }
        let stream = self.stream.as_mut()?;
        let next = crate::runtime::block_on_interruptible(&self.runtime, stream.next());
        match next {
            Ok(Some(batch)) => Some(batch.map_err(|e| ArrowError::ExternalError(Box::new(e)))),
            Ok(None) => {
                self.stream = None;
                None
            }
            Err(interrupted) => {
                // Dropping the read stops its I/O; the interrupt is raised again in Python.
                self.stream = None;
                Some(Err(external(&interrupted)))
            }
        }
    }
}

fn external(message: &str) -> ArrowError {
    ArrowError::ExternalError(Box::new(looseleaf::Error::internal(message.to_string())))
}

impl Iterator for BlockingReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.next_batch())) {
            Ok(next) => next,
            Err(panic) => {
                self.stream = None;
                Some(Err(external(&format!("the read failed: {}", crate::runtime::panic_message(&panic)))))
            }
        }
    }
}

impl RecordBatchReader for BlockingReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The batches of a read, exported once through `__arrow_c_stream__`, with its I/O counters.
#[pyclass(name = "ReadStream", module = "looseleaf._looseleaf", frozen)]
pub struct PyReadStream {
    schema: SchemaRef,
    reader: Mutex<Option<BlockingReader>>,
    stats: ReadStats,
}

impl PyReadStream {
    pub fn new(stream: RecordBatchStream, runtime: Arc<tokio::runtime::Runtime>) -> Self {
        let schema = stream.schema().clone();
        let stats = stream.stats();
        Self {
            stats,
            schema: schema.clone(),
            reader: Mutex::new(Some(BlockingReader {
                schema,
                stream: Some(stream.boxed()),
                runtime,
                pid: std::process::id(),
            })),
        }
    }
}

#[pymethods]
impl PyReadStream {
    /// Hands the stream to an Arrow consumer; can be called once.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The protocol lets a producer ignore the requested schema; casting is the caller's.
        let _ = requested_schema;
        let reader = self.reader.lock().unwrap_or_else(|p| p.into_inner()).take();
        let reader = reader.ok_or_else(|| invalid_argument("this read stream has already been consumed"))?;
        let ffi = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, ffi, ARRAY_STREAM)
    }

    /// The schema of the batches.
    #[getter]
    fn schema(&self) -> PyArrowSchema {
        PyArrowSchema::new(self.schema.clone())
    }

    /// The next batch, as a one-batch stream, or `None` at the end. Errors raise looseleaf's
    /// exceptions, naming the file (a consumer of `__arrow_c_stream__` gets Arrow's instead):
    /// what `FileReader.read_all` and `Dataset.read_all` hand pyarrow batch by batch.
    fn next_batch(&self, py: Python<'_>) -> PyResult<Option<PyBatches>> {
        let mut guard = self.reader.lock().unwrap_or_else(|p| p.into_inner());
        let reader = guard.as_mut().ok_or_else(|| invalid_argument("this read stream has already been consumed"))?;
        match py.detach(|| reader.next()) {
            None => Ok(None),
            Some(Ok(batch)) => Ok(Some(batch_stream(batch))),
            Some(Err(ArrowError::ExternalError(error))) => match error.downcast::<looseleaf::Error>() {
                Ok(error) => Err(crate::errors::to_py_err(*error)),
                Err(other) => Err(crate::errors::to_py_err(looseleaf::Error::internal(other.to_string()))),
            },
            Some(Err(other)) => Err(crate::errors::to_py_err(looseleaf::Error::internal(other.to_string()))),
        }
    }

    /// The read's I/O counters and timings so far, as a dict.
    fn io_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let out = crate::reader::io_stats_dict(py, &self.stats.io_stats())?;
        let timings = self.stats.timings();
        out.set_item("scheduling_seconds", timings.scheduling.as_secs_f64())?;
        out.set_item("io_wait_seconds", timings.waiting_for_io.as_secs_f64())?;
        out.set_item("decode_seconds", timings.decoding.as_secs_f64())?;
        out.set_item("batches", timings.batches)?;
        out.set_item("files_read", self.stats.files_read())?;
        if let Some(counts) = self.stats.filter_stats() {
            out.set_item("zones_read", counts.zones_total - counts.zones_skipped)?;
            out.set_item("zones_skipped", counts.zones_skipped)?;
            out.set_item("candidate_rows", counts.candidate_rows)?;
            out.set_item("rows_matched", counts.rows_matched)?;
            out.set_item("chunks_scanned", counts.chunks_scanned)?;
            out.set_item("chunks_taken", counts.chunks_taken)?;
            out.set_item("one_pass", counts.one_pass)?;
        }
        Ok(out)
    }
}

/// A finished batch exported as a one-batch stream (for `take`).
pub fn batch_stream(batch: RecordBatch) -> PyBatches {
    PyBatches::new(batch.schema(), vec![batch])
}

/// Batches already in memory, exported once through `__arrow_c_stream__`.
#[pyclass(name = "Batches", module = "looseleaf._looseleaf", frozen)]
pub struct PyBatches {
    schema: SchemaRef,
    batches: Mutex<Option<Vec<RecordBatch>>>,
}

impl PyBatches {
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self { schema, batches: Mutex::new(Some(batches)) }
    }
}

#[pymethods]
impl PyBatches {
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches = self.batches.lock().unwrap_or_else(|p| p.into_inner()).take();
        let batches = batches.ok_or_else(|| invalid_argument("these batches have already been consumed"))?;
        let reader = arrow_array::RecordBatchIterator::new(batches.into_iter().map(Ok), self.schema.clone());
        PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(Box::new(reader)), ARRAY_STREAM)
    }
}
