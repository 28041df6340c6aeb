//! `FileReader`: an open file, its metadata, and its reads.

use std::collections::HashMap;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_schema::DataType;
use futures::StreamExt;
use looseleaf::format::schema::FieldColumns;
use looseleaf::io::{IoPlan, RequestKind};
use looseleaf::{FileReader, IoOptions, IoStats, ReadBuilder, RowSelection, StatValue};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::arrow::{PyArrowSchema, PyBatches, PyReadStream, batch_stream};
use crate::errors::{IntoPyResult, invalid_argument};
use crate::runtime::{runtime, wait};
use crate::store::Location;

/// An open looseleaf file.
#[pyclass(name = "FileReader", module = "looseleaf._looseleaf", frozen)]
pub struct PyFileReader {
    file: FileReader,
    io: IoOptions,
    /// Rows per batch unless a read says otherwise; `None` for the core's default rule.
    batch_size: Option<usize>,
}

impl PyFileReader {
    fn io_options(&self, io_depth: Option<usize>, io_buffer_bytes: Option<u64>) -> PyResult<IoOptions> {
        if io_depth == Some(0) {
            return Err(invalid_argument("io_depth must be at least 1"));
        }
        if io_buffer_bytes == Some(0) {
            return Err(invalid_argument("io_buffer_bytes must be at least 1"));
        }
        Ok(IoOptions {
            io_depth: io_depth.unwrap_or(self.io.io_depth),
            buffer_bytes: io_buffer_bytes.unwrap_or(self.io.buffer_bytes),
            ..self.io
        })
    }

    fn builder(
        &self,
        columns: Option<Vec<String>>,
        start: Option<u64>,
        num_rows: Option<u64>,
        indices: Option<&[u64]>,
    ) -> PyResult<ReadBuilder> {
        let mut read = self.file.read();
        if let Some(columns) = columns {
            read = read.with_columns(columns);
        }
        if let Some(indices) = indices {
            let mut sorted = indices.to_vec();
            sorted.sort_unstable();
            read = read.with_selection(RowSelection::from_sorted_indices(&sorted));
        } else if start.is_some() || num_rows.is_some() {
            let start = start.unwrap_or(0);
            let end = match num_rows {
                Some(n) => start.checked_add(n).ok_or_else(|| invalid_argument("start + num_rows overflows"))?,
                None => self.file.num_rows().max(start),
            };
            read = read.with_row_range(start..end);
        }
        Ok(read)
    }
}

/// Reads row indices given as a pyarrow integer array.
fn indices_from(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    let array = crate::arrow::import_array(obj)?;
    let ints = arrow_cast_to_i64(&array)?;
    ints.values()
        .iter()
        .zip(0..)
        .map(|(v, i)| {
            if ints.is_null(i) {
                return Err(invalid_argument("row indices cannot be null"));
            }
            u64::try_from(*v).map_err(|_| invalid_argument(format!("row index {v} is negative")))
        })
        .collect()
}

fn arrow_cast_to_i64(array: &arrow_array::ArrayRef) -> PyResult<arrow_array::PrimitiveArray<Int64Type>> {
    match array.data_type() {
        DataType::Int64 => Ok(array.as_primitive::<Int64Type>().clone()),
        other => Err(invalid_argument(format!("row indices must be int64, got {other}"))),
    }
}

#[pymethods]
impl PyFileReader {
    /// Opens a file.
    #[staticmethod]
    #[pyo3(signature = (path, *, batch_size = None, io_depth = None, io_buffer_bytes = None))]
    fn open(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        batch_size: Option<usize>,
        io_depth: Option<usize>,
        io_buffer_bytes: Option<u64>,
    ) -> PyResult<Self> {
        let (location, display) = Location::parse(path)?;
        let reader = location.reader(&display)?;
        let file = wait(py, FileReader::open(reader))?.py_err()?;
        let io = file.io_defaults();
        let mut this = Self { file, io, batch_size: None };
        this.io = this.io_options(io_depth, io_buffer_bytes)?;
        if let Some(batch_size) = batch_size {
            if batch_size == 0 {
                return Err(invalid_argument("batch_size must be at least 1"));
            }
            this.batch_size = Some(batch_size);
        }
        Ok(this)
    }

    #[getter]
    fn schema(&self) -> PyArrowSchema {
        PyArrowSchema::new(self.file.schema().clone())
    }

    #[getter]
    fn num_rows(&self) -> u64 {
        self.file.num_rows()
    }

    #[getter]
    fn num_columns(&self) -> u32 {
        self.file.num_columns()
    }

    #[getter]
    fn location(&self) -> String {
        self.file.location().to_string()
    }

    /// The reader's default batch size and I/O settings.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        out.set_item("batch_size", self.batch_size)?;
        out.set_item("default_batch_size", looseleaf::DEFAULT_BATCH_SIZE)?;
        out.set_item("default_batch_bytes", looseleaf::DEFAULT_BATCH_BYTES)?;
        out.set_item("io_depth", self.io.io_depth)?;
        out.set_item("io_buffer_bytes", self.io.buffer_bytes)?;
        Ok(out)
    }

    /// Columns, pages, encodings and sizes, as a dict.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let metadata = wait(py, self.file.metadata())?.py_err()?;
        let out = PyDict::new(py);
        out.set_item("location", &metadata.location)?;
        out.set_item("num_rows", metadata.num_rows)?;
        out.set_item("num_columns", metadata.columns.len())?;
        out.set_item("created_by", &metadata.created_by)?;
        out.set_item("format_version", format!("{}.{}", metadata.format_version.0, metadata.format_version.1))?;
        let columns = PyList::empty(py);
        for column in &metadata.columns {
            let entry = PyDict::new(py);
            entry.set_item("column", column.column)?;
            entry.set_item("field", &column.field)?;
            entry.set_item("type", column.data_type.to_string())?;
            entry.set_item("num_pages", column.pages.len())?;
            entry.set_item("num_values", column.pages.iter().map(|p| p.num_rows).sum::<u64>())?;
            entry.set_item("bytes", column.pages.iter().flat_map(|p| &p.buffer_sizes).sum::<u64>())?;
            let pages = PyList::empty(py);
            for page in &column.pages {
                let p = PyDict::new(py);
                p.set_item("num_rows", page.num_rows)?;
                p.set_item("encoding", &page.encoding)?;
                p.set_item("buffer_sizes", page.buffer_sizes.clone())?;
                p.set_item("bytes", page.buffer_sizes.iter().sum::<u64>())?;
                p.set_item("compression", format!("{:?}", page.compression).to_lowercase())?;
                p.set_item("null_count", page.null_count)?;
                p.set_item("min", page.min.as_ref().map(|v| stat_value(py, v)).transpose()?)?;
                p.set_item("max", page.max.as_ref().map(|v| stat_value(py, v)).transpose()?)?;
                pages.append(p)?;
            }
            entry.set_item("pages", pages)?;
            columns.append(entry)?;
        }
        out.set_item("columns", columns)?;
        Ok(out)
    }

    /// Starts a read; the result exports its batches through `__arrow_c_stream__`.
    #[pyo3(signature = (columns = None, start = None, num_rows = None, batch_size = None, io_depth = None, io_buffer_bytes = None, dictionary_columns = None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        start: Option<u64>,
        num_rows: Option<u64>,
        batch_size: Option<usize>,
        io_depth: Option<usize>,
        io_buffer_bytes: Option<u64>,
        dictionary_columns: Option<Vec<String>>,
    ) -> PyResult<PyReadStream> {
        if batch_size == Some(0) {
            return Err(invalid_argument("batch_size must be at least 1"));
        }
        let mut read = self
            .builder(columns, start, num_rows, None)?
            .with_io_options(self.io_options(io_depth, io_buffer_bytes)?)
            .with_dictionary_columns(dictionary_columns.unwrap_or_default());
        if let Some(batch_size) = batch_size.or(self.batch_size) {
            read = read.with_batch_size(batch_size);
        }
        let stream = wait(py, read.stream())?.py_err()?;
        Ok(PyReadStream::new(stream, runtime()?))
    }

    /// Reads to the end and returns all batches (errors raise looseleaf's exceptions, which a
    /// stream consumed by pyarrow cannot do).
    #[pyo3(signature = (columns = None, start = None, num_rows = None, batch_size = None, io_depth = None, io_buffer_bytes = None, dictionary_columns = None))]
    #[allow(clippy::too_many_arguments)]
    fn read_table(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        start: Option<u64>,
        num_rows: Option<u64>,
        batch_size: Option<usize>,
        io_depth: Option<usize>,
        io_buffer_bytes: Option<u64>,
        dictionary_columns: Option<Vec<String>>,
    ) -> PyResult<PyBatches> {
        if batch_size == Some(0) {
            return Err(invalid_argument("batch_size must be at least 1"));
        }
        let mut read = self
            .builder(columns, start, num_rows, None)?
            .with_io_options(self.io_options(io_depth, io_buffer_bytes)?)
            .with_dictionary_columns(dictionary_columns.unwrap_or_default());
        if let Some(batch_size) = batch_size.or(self.batch_size) {
            read = read.with_batch_size(batch_size);
        }
        let (schema, batches) = wait(py, async move {
            let mut stream = read.stream().await?;
            let schema = stream.schema().clone();
            let mut batches = Vec::new();
            while let Some(batch) = stream.next().await {
                batches.push(batch?);
            }
            Ok::<_, looseleaf::Error>((schema, batches))
        })?
        .py_err()?;
        Ok(PyBatches::new(schema, batches))
    }

    /// The rows at `indices` (an int64 Arrow array), in that order.
    #[pyo3(signature = (indices, columns = None))]
    fn take(&self, py: Python<'_>, indices: &Bound<'_, PyAny>, columns: Option<Vec<String>>) -> PyResult<PyBatches> {
        let indices = indices_from(indices)?;
        let file = self.file.clone();
        let batch = wait(py, async move { file.take(&indices, columns.as_deref()).await })?.py_err()?;
        Ok(batch_stream(batch))
    }

    /// The I/O a read would make, without making it.
    #[pyo3(signature = (columns = None, start = None, num_rows = None, indices = None))]
    fn plan<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
        start: Option<u64>,
        num_rows: Option<u64>,
        indices: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let indices = indices.map(|i| indices_from(&i)).transpose()?;
        if let Some(indices) = &indices
            && let Some(bad) = indices.iter().find(|i| **i >= self.file.num_rows())
        {
            return Err(invalid_argument(format!(
                "row index {bad} is out of range for a file of {} rows",
                self.file.num_rows()
            )));
        }
        let read = self.builder(columns, start, num_rows, indices.as_deref())?.with_io_options(self.io);
        let plan = wait(py, read.plan())?.py_err()?;
        plan_dict(py, &plan, &column_paths(self.file.field_columns()))
    }
}

/// Dotted field path of every column.
fn column_paths(fields: &[FieldColumns]) -> HashMap<u32, String> {
    fn walk(tree: &FieldColumns, prefix: &str, out: &mut HashMap<u32, String>) {
        let path =
            if prefix.is_empty() { tree.field.name().clone() } else { format!("{prefix}.{}", tree.field.name()) };
        if let Some(column) = tree.column {
            out.insert(column, path.clone());
        }
        for child in &tree.children {
            walk(child, &path, out);
        }
    }
    let mut out = HashMap::new();
    for tree in fields {
        walk(tree, "", &mut out);
    }
    out
}

fn plan_dict<'py>(py: Python<'py>, plan: &IoPlan, paths: &HashMap<u32, String>) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let total = plan.total();
    out.set_item("requests", total.requests)?;
    out.set_item("reads", total.reads)?;
    out.set_item("bytes", total.bytes)?;
    out.set_item("read_bytes", total.read_bytes)?;
    out.set_item("indirect_requests", total.indirect_requests)?;
    out.set_item("indirect_max_bytes", total.indirect_max_bytes)?;
    let columns = PyDict::new(py);
    for (column, c) in plan.by_column() {
        let entry = PyDict::new(py);
        entry.set_item("column", column)?;
        entry.set_item("requests", c.requests)?;
        entry.set_item("reads", c.reads)?;
        entry.set_item("bytes", c.bytes)?;
        entry.set_item("read_bytes", c.read_bytes)?;
        entry.set_item("indirect_requests", c.indirect_requests)?;
        entry.set_item("indirect_max_bytes", c.indirect_max_bytes)?;
        let name = paths.get(&column).cloned().unwrap_or_else(|| column.to_string());
        columns.set_item(name, entry)?;
    }
    out.set_item("columns", columns)?;
    let requests = PyList::empty(py);
    for request in &plan.requests {
        let entry = PyDict::new(py);
        entry.set_item("column", request.column)?;
        entry.set_item("field", paths.get(&request.column))?;
        entry.set_item("priority", request.priority.0)?;
        entry.set_item("known", request.kind == RequestKind::Direct)?;
        entry.set_item("bytes", request.bytes)?;
        entry.set_item("reads", request.reads.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>())?;
        requests.append(entry)?;
    }
    out.set_item("request_list", requests)?;
    Ok(out)
}

/// A statistics bound as a Python value.
fn stat_value<'py>(py: Python<'py>, value: &StatValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        StatValue::Int(v) => v.into_pyobject(py)?.into_any(),
        StatValue::Float(v) => v.into_pyobject(py)?.into_any(),
        StatValue::Bool(v) => v.into_pyobject(py)?.to_owned().into_any(),
        StatValue::Utf8(v) => v.into_pyobject(py)?.into_any(),
        StatValue::Bytes(v) => pyo3::types::PyBytes::new(py, v).into_any(),
    })
}

/// I/O counters as a dict.
pub fn io_stats_dict<'py>(py: Python<'py>, stats: &IoStats) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("requests", stats.requests)?;
    out.set_item("indirect_requests", stats.indirect_requests)?;
    out.set_item("reads", stats.reads)?;
    out.set_item("bytes_read", stats.bytes_read)?;
    out.set_item("peak_reserved_bytes", stats.peak_reserved_bytes)?;
    out.set_item("bypassed_reads", stats.bypassed_reads)?;
    Ok(out)
}
