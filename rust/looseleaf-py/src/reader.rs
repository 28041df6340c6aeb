//! `FileReader`: an open file, its metadata, and its reads.
//!
//! Every read method takes the same keywords, the read options of the core
//! ([`looseleaf::ReadOptions`]), which [`read_options`] passes to the core by name: the core
//! checks them, so every front end reports a bad value the same way.

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_schema::DataType;
use futures::TryStreamExt;
use looseleaf::filter::Predicate;
use looseleaf::io::{ColumnPlan, IoPlan, RequestKind};
use looseleaf::read::FilteredPlan;
use looseleaf::selection::row_numbers;
use looseleaf::{FileReader, IoStats, Location, OptionValue, ReadBuilder, ReadOptions, StatValue};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString};
use std::collections::HashMap;

use crate::arrow::{PyArrowSchema, PyBatches, PyReadStream, batch_stream};
use crate::errors::{IntoPyResult, invalid_argument};
use crate::runtime::{runtime, wait};

/// Read options given by name (Python keywords), as the core's [`ReadOptions`]. `None` values
/// are left unset.
pub fn read_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<ReadOptions> {
    let mut out = ReadOptions::default();
    for (name, value) in options.into_iter().flatten() {
        if value.is_none() {
            continue;
        }
        let name: String = name.extract()?;
        out.set(&name, option_value(&value)?).py_err()?;
    }
    Ok(out)
}

/// A Python value as an [`OptionValue`]; the core decides whether it suits the option.
pub fn option_value(value: &Bound<'_, PyAny>) -> PyResult<OptionValue> {
    if let Ok(budget) = value.cast::<crate::budget::PyIoBudget>() {
        return Ok(OptionValue::Budget(budget.get().budget.clone()));
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(OptionValue::Bool(flag.is_true()));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(OptionValue::Text(text.to_str()?.to_string()));
    }
    if let Ok(number) = value.extract::<i128>() {
        return Ok(OptionValue::Int(number));
    }
    if let Ok(names) = value.extract::<Vec<String>>() {
        return Ok(OptionValue::List(names));
    }
    Ok(OptionValue::Text(value.repr()?.to_str()?.to_string()))
}

/// A list of column names given as `argument`.
pub(crate) fn names(argument: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<String>>> {
    let Some(value) = value.filter(|v| !v.is_none()) else { return Ok(None) };
    if value.is_instance_of::<PyString>() {
        return Err(invalid_argument(format!("{argument} must be a list of column names, not a string")));
    }
    value
        .extract::<Vec<String>>()
        .map(Some)
        .map_err(|_| invalid_argument(format!("{argument} must be a list of column names, got {}", describe(value))))
}

fn describe(value: &Bound<'_, PyAny>) -> String {
    value.repr().map(|r| r.to_string()).unwrap_or_else(|_| "an unprintable value".into())
}

/// Row indices from a Python object: an Arrow integer array (`__arrow_c_array__`), an object
/// with the buffer protocol (a numpy array, `array.array`), or a sequence of integers. Nothing
/// here imports another Python module.
pub(crate) fn indices_from(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if obj.hasattr("__arrow_c_array__")? {
        return arrow_indices(&crate::arrow::import_array(obj)?);
    }
    if let Some(values) = buffer_indices(obj)? {
        return Ok(values);
    }
    if obj.is_instance_of::<PyString>() {
        return Err(invalid_argument("indices must be integers, not a string"));
    }
    let values: Vec<i64> = obj
        .extract()
        .map_err(|_| invalid_argument(format!("indices must be a sequence of integers, got {}", describe(obj))))?;
    row_numbers("indices", values).py_err()
}

/// Indices from a buffer of integers of any width, or `None` if `obj` has no buffer of them.
fn buffer_indices(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u64>>> {
    macro_rules! try_buffer {
        ($($t:ty),*) => {$(
            if let Ok(buffer) = PyBuffer::<$t>::get(obj) {
                let values = buffer.to_vec(obj.py())?;
                return row_numbers("indices", values).py_err().map(Some);
            }
        )*};
    }
    try_buffer!(i64, i32, u64, u32, i16, u16, i8, u8);
    Ok(None)
}

/// Indices from an Arrow array of any integer type.
fn arrow_indices(array: &arrow_array::ArrayRef) -> PyResult<Vec<u64>> {
    if array.null_count() > 0 {
        return Err(invalid_argument("indices cannot be null"));
    }
    macro_rules! values {
        ($t:ty) => {
            row_numbers("indices", array.as_primitive::<$t>().values().iter().copied()).py_err()
        };
    }
    match array.data_type() {
        DataType::Int8 => values!(Int8Type),
        DataType::Int16 => values!(Int16Type),
        DataType::Int32 => values!(Int32Type),
        DataType::Int64 => values!(Int64Type),
        DataType::UInt8 => values!(UInt8Type),
        DataType::UInt16 => values!(UInt16Type),
        DataType::UInt32 => values!(UInt32Type),
        DataType::UInt64 => values!(UInt64Type),
        DataType::Null => Ok(Vec::new()),
        other => Err(invalid_argument(format!("indices must be integers, got an array of {other}"))),
    }
}

/// An open looseleaf file.
#[pyclass(name = "FileReader", module = "looseleaf._looseleaf", frozen)]
pub struct PyFileReader {
    file: FileReader,
}

impl PyFileReader {
    /// A read of `columns`, rows `start..start + num_rows` (to the end without `num_rows`) or
    /// `indices`, with `options` over the reader's.
    fn read(
        &self,
        columns: Option<&Bound<'_, PyAny>>,
        rows: Rows,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<ReadBuilder> {
        // The filter and the trace travel with the options (every read method takes them) but
        // are not options.
        let (options, filter, trace) = match options {
            Some(options) => {
                let options = options.copy()?;
                let filter = options.get_item("filter")?;
                options.del_item("filter").ok();
                let trace = options.get_item("trace")?;
                options.del_item("trace").ok();
                (Some(options), filter.filter(|f| !f.is_none()), trace.filter(|t| !t.is_none()))
            }
            None => (None, None, None),
        };
        let mut read = self.file.read().with_options(read_options(options.as_ref())?);
        if let Some(trace) = trace {
            let trace = trace
                .cast::<crate::trace::PyTrace>()
                .map_err(|_| invalid_argument(format!("trace must be a looseleaf.Trace, got {}", describe(&trace))))?;
            read = read.with_trace(trace.get().trace.clone());
        }
        if let Some(columns) = names("columns", columns)? {
            read = read.with_columns(columns);
        }
        if let Some(filter) = filter {
            read = read.with_filter(predicate(&filter)?);
        }
        Ok(match rows {
            Rows::All => read,
            Rows::Indices(indices) => read.with_indices(indices),
            Rows::Range { start, num_rows } => {
                let start = row_numbers("start", start).py_err()?.first().copied().unwrap_or(0);
                let end = match num_rows {
                    Some(n) => {
                        let n = row_numbers("num_rows", [n]).py_err()?.first().copied().unwrap_or(0);
                        start.checked_add(n).ok_or_else(|| invalid_argument("start + num_rows overflows"))?
                    }
                    None => self.file.num_rows().max(start),
                };
                read.with_row_range(start..end)
            }
        })
    }
}

/// A filter in the form `looseleaf.filters.to_native` gives: `(json, [literal arrays])`.
pub(crate) fn predicate(filter: &Bound<'_, PyAny>) -> PyResult<Predicate> {
    let (json, literals): (String, Vec<Bound<'_, PyAny>>) = filter
        .extract()
        .map_err(|_| invalid_argument("filter: expected the (json, literals) pair of looseleaf.filters.to_native"))?;
    let literals = literals.iter().map(crate::arrow::import_array).collect::<PyResult<Vec<_>>>()?;
    Predicate::from_json(&json, &literals).py_err()
}

/// The rows a Python read names.
enum Rows {
    All,
    Range { start: Option<i64>, num_rows: Option<i64> },
    Indices(Vec<u64>),
}

impl Rows {
    fn of(start: Option<i64>, num_rows: Option<i64>, indices: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        if let Some(indices) = indices.filter(|i| !i.is_none()) {
            if start.is_some() || num_rows.is_some() {
                return Err(invalid_argument("give indices or start/num_rows, not both"));
            }
            return Ok(Self::Indices(indices_from(indices)?));
        }
        Ok(match (start, num_rows) {
            (None, None) => Self::All,
            (start, num_rows) => Self::Range { start, num_rows },
        })
    }
}

#[pymethods]
impl PyFileReader {
    /// Opens a file; the options become the defaults of its reads.
    #[staticmethod]
    #[pyo3(signature = (path, *, storage_options = None, **options))]
    fn open(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        storage_options: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let text: String = py.import("os")?.call_method1("fspath", (path,))?.extract()?;
        let options = read_options(options)?;
        let storage = crate::storage::storage_options(storage_options)?;
        let location = Location::parse(&text).py_err()?;
        let file = wait(py, async move { FileReader::open_location(&location, &storage).await })?.py_err()?;
        Ok(Self { file: file.with_options(options) })
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

    /// The reader's read options, with the storage's I/O defaults filled in.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let options = self.file.options();
        let io = options.io_options(self.file.io_defaults());
        let out = PyDict::new(py);
        out.set_item("batch_size", options.batch_size.map(|n| n.get()))?;
        out.set_item("default_batch_size", looseleaf::DEFAULT_BATCH_SIZE.get())?;
        out.set_item("default_batch_bytes", looseleaf::DEFAULT_BATCH_BYTES.get())?;
        out.set_item("default_batch_max_bytes", looseleaf::DEFAULT_BATCH_MAX_BYTES.get())?;
        crate::options::set_depth(&out, io.depth)?;
        out.set_item("io_buffer_bytes", io.buffer.get())?;
        out.set_item("dictionary_columns", options.dictionary_columns.clone())?;
        out.set_item("decode_parallelism", options.decode_parallelism.map(|n| n.get()))?;
        out.set_item("verify_checksums", options.verify_checksums.unwrap_or(true))?;
        out.set_item("string_view", options.string_view.unwrap_or(false))?;
        let budget = options.io_budget.clone().map(|budget| Py::new(py, crate::budget::PyIoBudget { budget }));
        out.set_item("io_budget", budget.transpose()?)?;
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
    #[pyo3(signature = (columns = None, start = None, num_rows = None, **options))]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<&Bound<'_, PyAny>>,
        start: Option<i64>,
        num_rows: Option<i64>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyReadStream> {
        let read = self.read(columns, Rows::of(start, num_rows, None)?, options)?;
        let stream = wait(py, read.stream())?.py_err()?;
        Ok(PyReadStream::new(stream, runtime()?))
    }

    /// Reads to the end and returns all batches (errors raise looseleaf's exceptions, which a
    /// stream consumed by pyarrow cannot do).
    #[pyo3(signature = (columns = None, start = None, num_rows = None, **options))]
    fn read_table(
        &self,
        py: Python<'_>,
        columns: Option<&Bound<'_, PyAny>>,
        start: Option<i64>,
        num_rows: Option<i64>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyBatches> {
        let read = self.read(columns, Rows::of(start, num_rows, None)?, options)?;
        let (schema, batches) = wait(py, async move {
            let stream = read.stream().await?;
            let schema = stream.schema().clone();
            Ok::<_, looseleaf::Error>((schema, stream.try_collect().await?))
        })?
        .py_err()?;
        Ok(PyBatches::new(schema, batches))
    }

    /// The rows at `indices`, in that order.
    #[pyo3(signature = (indices, columns = None, **options))]
    fn take(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        columns: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyBatches> {
        let indices = indices_from(indices)?;
        let read = self.read(columns, Rows::All, options)?;
        let batch = wait(py, async move { read.take(&indices).await })?.py_err()?;
        Ok(batch_stream(batch))
    }

    /// The I/O a read would make, without making it.
    #[pyo3(signature = (columns = None, start = None, num_rows = None, indices = None, **options))]
    fn plan<'py>(
        &self,
        py: Python<'py>,
        columns: Option<&Bound<'py, PyAny>>,
        start: Option<i64>,
        num_rows: Option<i64>,
        indices: Option<&Bound<'py, PyAny>>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let read = self.read(columns, Rows::of(start, num_rows, indices)?, options)?;
        if read.has_filter() {
            let plan = wait(py, read.filter_plan())?.py_err()?;
            return filtered_plan_dict(py, &plan, &self.file.column_paths());
        }
        let plan = wait(py, read.plan())?.py_err()?;
        plan_dict(py, &plan, &self.file.column_paths())
    }
}

pub(crate) fn plan_dict<'py>(
    py: Python<'py>,
    plan: &IoPlan,
    paths: &HashMap<u32, String>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = totals_dict(py, &plan.total())?;
    let columns = PyDict::new(py);
    for (column, c) in plan.by_column() {
        let entry = totals_dict(py, &c)?;
        entry.set_item("column", column)?;
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

/// The plan of a filtered read as a dict: its stage 2's requests, and a `"filter"` entry.
pub(crate) fn filtered_plan_dict<'py>(
    py: Python<'py>,
    plan: &FilteredPlan,
    paths: &HashMap<u32, String>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = plan_dict(py, &plan.filter_columns, paths)?;
    let filter = PyDict::new(py);
    filter.set_item("zones", plan.zones.total)?;
    filter.set_item("zones_skipped", plan.zones.skipped)?;
    filter.set_item("candidate_rows", plan.candidate_rows)?;
    filter.set_item(
        "stage3",
        "decided per chunk once the filter columns are read: a take of the matching rows when the \
         planner finds it reads less than a scan of the chunk",
    )?;
    out.set_item("filter", filter)?;
    Ok(out)
}

/// The totals of a plan (or of one of its columns) as a dict.
fn totals_dict<'py>(py: Python<'py>, totals: &ColumnPlan) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("requests", totals.requests)?;
    out.set_item("reads", totals.reads)?;
    out.set_item("bytes", totals.bytes)?;
    out.set_item("read_bytes", totals.read_bytes)?;
    out.set_item("indirect_requests", totals.indirect_requests)?;
    out.set_item("indirect_max_bytes", totals.indirect_max_bytes)?;
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
    out.set_item("urgent_reads", stats.urgent_reads)?;
    out.set_item("io_depth", stats.io_depth)?;
    out.set_item("peak_io_depth", stats.peak_io_depth)?;
    out.set_item("retries", stats.retries)?;
    out.set_item("throttled", stats.throttled)?;
    out.set_item("hedged", stats.hedged)?;
    Ok(out)
}
