//! `Trace`: the core's [`looseleaf::Trace`], filled by every read given it (`trace=`), read back
//! as plain Python values or as Chrome trace JSON. The core records and exports; the Python
//! subclass (`looseleaf.trace.Trace`) draws.

use looseleaf::Trace;
use looseleaf::trace::{SpanKind, TraceSnapshot};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// A recorder of a read's I/O requests, scheduling, decode tasks and batches (``trace=`` of any
/// read method). Subclassed by ``looseleaf.Trace``, which adds the pictures.
#[pyclass(name = "Trace", module = "looseleaf._looseleaf", subclass, frozen)]
pub struct PyTrace {
    pub trace: Trace,
}

#[pymethods]
impl PyTrace {
    /// An empty trace whose clock starts now.
    #[new]
    fn new() -> Self {
        Self { trace: Trace::new() }
    }

    /// Everything recorded so far, in Chrome's Trace Event Format (a JSON string).
    fn chrome_json(&self, py: Python<'_>) -> String {
        let trace = self.trace.clone();
        py.detach(move || trace.to_chrome_json())
    }

    /// Everything recorded so far: `{"reads": [...], "spans": [...], "budget": [...],
    /// "info": {...}}`, times in µs since the trace was created.
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let trace = self.trace.clone();
        let snapshot = py.detach(move || trace.snapshot());
        snapshot_dict(py, &snapshot)
    }
}

fn snapshot_dict<'py>(py: Python<'py>, snapshot: &TraceSnapshot) -> PyResult<Bound<'py, PyDict>> {
    let reads = PyList::empty(py);
    for read in &snapshot.reads {
        let entry = PyDict::new(py);
        entry.set_item("request", read.request)?;
        entry.set_item("read", read.index)?;
        entry.set_item("column", read.column)?;
        entry.set_item("priority", read.priority)?;
        entry.set_item("known", read.known)?;
        entry.set_item("offset", read.range.start)?;
        entry.set_item("end", read.range.end)?;
        entry.set_item("bytes", read.num_bytes())?;
        entry.set_item("queued_us", read.queued)?;
        entry.set_item("issued_us", read.issued)?;
        entry.set_item("completed_us", read.completed)?;
        entry.set_item("bypassed", read.bypassed)?;
        entry.set_item("urgent", read.urgent)?;
        entry.set_item("failed", read.failed)?;
        reads.append(entry)?;
    }
    let spans = PyList::empty(py);
    for span in &snapshot.spans {
        let entry = PyDict::new(py);
        entry.set_item("lane", span.kind.lane().name())?;
        entry.set_item("name", span.kind.name())?;
        entry.set_item("thread", span.thread)?;
        entry.set_item("start_us", span.start)?;
        entry.set_item("end_us", span.end)?;
        match span.kind {
            SpanKind::SchedulingLoop | SpanKind::WaitForRoom => {}
            SpanKind::SchedulePage { priority } => entry.set_item("priority", priority)?,
            SpanKind::Indirect { column, priority } => {
                entry.set_item("column", column)?;
                entry.set_item("priority", priority)?;
            }
            SpanKind::WaitForPages { step, rows } | SpanKind::Decode { step, rows } => {
                entry.set_item("step", step)?;
                entry.set_item("rows", rows)?;
            }
            SpanKind::Batch { index, rows, bytes } => {
                entry.set_item("batch", index)?;
                entry.set_item("rows", rows)?;
                entry.set_item("bytes", bytes)?;
            }
        }
        spans.append(entry)?;
    }
    let budget = PyList::empty(py);
    for sample in &snapshot.budget {
        let entry = PyDict::new(py);
        entry.set_item("at_us", sample.at)?;
        entry.set_item("reserved_bytes", sample.reserved_bytes)?;
        entry.set_item("reads_in_flight", sample.reads_in_flight)?;
        budget.append(entry)?;
    }
    let info = PyDict::new(py);
    info.set_item("location", snapshot.info.location.clone())?;
    info.set_item("io_buffer_bytes", snapshot.info.io_buffer_bytes)?;
    info.set_item("io_depth", snapshot.info.io_depth.clone())?;
    let out = PyDict::new(py);
    out.set_item("reads", reads)?;
    out.set_item("spans", spans)?;
    out.set_item("budget", budget)?;
    out.set_item("info", info)?;
    Ok(out)
}
