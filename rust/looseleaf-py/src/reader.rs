//! `FileReader`: an open file, its metadata, and its reads (translated in `read.rs`, which
//! the dataset's reads share).

use std::collections::HashMap;

use looseleaf::io::{ColumnPlan, IoPlan, RequestKind};
use looseleaf::read::FilteredPlan;
use looseleaf::{FileReader, IoStats, Location, StatValue};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::arrow::{PyArrowSchema, PyBatches, PyReadStream};
use crate::errors::IntoPyResult;
use crate::read::{Rows, describe, indices_from, read_options};
use crate::runtime::wait;

/// An open looseleaf file.
#[pyclass(name = "FileReader", module = "looseleaf._looseleaf", frozen)]
pub struct PyFileReader {
    file: FileReader,
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
        crate::arrow::check_exportable(file.schema(), file.location())?;
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
    fn stream(
        &self,
        py: Python<'_>,
        columns: Option<&Bound<'_, PyAny>>,
        start: Option<i64>,
        num_rows: Option<i64>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyReadStream> {
        let read = describe(self.file.read(), columns, Rows::of(start, num_rows, None)?, options)?;
        crate::read::stream(py, read)
    }

    /// Reads to the end and returns all batches.
    #[pyo3(signature = (columns = None, start = None, num_rows = None, **options))]
    fn read_table(
        &self,
        py: Python<'_>,
        columns: Option<&Bound<'_, PyAny>>,
        start: Option<i64>,
        num_rows: Option<i64>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyBatches> {
        let read = describe(self.file.read(), columns, Rows::of(start, num_rows, None)?, options)?;
        crate::read::read_table(py, read)
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
        let read = describe(self.file.read(), columns, Rows::All, options)?;
        crate::read::take(py, read, indices)
    }

    /// Rows the read would return (without a filter, from the rows asked for alone).
    #[pyo3(signature = (start = None, num_rows = None, **options))]
    fn count_rows(
        &self,
        py: Python<'_>,
        start: Option<i64>,
        num_rows: Option<i64>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        let read = describe(self.file.read(), None, Rows::of(start, num_rows, None)?, options)?;
        crate::read::count_rows(py, read)
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
        let read = describe(self.file.read(), columns, Rows::of(start, num_rows, indices)?, options)?;
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
