//! `IoBudget`: the core's [`looseleaf::IoBudget`], a byte budget and I/O depth shared by reads,
//! and the process-wide default. The core checks the values and does all the work.

use looseleaf::IoBudget;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::IntoPyResult;
use crate::read::option_value;

/// A byte budget and an I/O depth shared by every read it is given to.
///
/// ``IoBudget(bytes, depth=None)``: ``bytes`` is a size of at least one byte (a number, or text
/// such as ``"1 GiB"``), ``depth`` the most reads in flight at once over all the reads sharing
/// it (``None``: no shared cap). Give it to reads as ``io_budget=`` (to :func:`looseleaf.open`
/// or any read method), or to every read of the process with :func:`looseleaf.set_io_budget`.
/// Each read still has its own ``io_buffer_bytes`` and ``io_depth``; the budget caps what they
/// hold together: at most the budget, plus each read's own minimum progress (the pages its
/// decoders wait for) and batches in flight, plus a small constant. A read never waits forever
/// for bytes another read holds.
#[pyclass(name = "IoBudget", module = "looseleaf._looseleaf", frozen)]
pub struct PyIoBudget {
    pub budget: IoBudget,
}

#[pymethods]
impl PyIoBudget {
    /// `bytes`: a size of at least 1 byte (a number, or text such as `"1 GiB"`); `depth`: the
    /// most reads in flight at once over every read sharing the budget, or `None`.
    #[new]
    #[pyo3(signature = (bytes, depth = None))]
    fn new(bytes: &Bound<'_, PyAny>, depth: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let bytes = option_value(bytes)?;
        let depth = depth.filter(|d| !d.is_none()).map(option_value).transpose()?;
        Ok(Self { budget: IoBudget::from_values(&bytes, depth.as_ref()).py_err()? })
    }

    /// The bytes the reads may hold at once.
    #[getter]
    fn bytes(&self) -> u64 {
        self.budget.bytes().get()
    }

    /// The most reads in flight at once, or `None`.
    #[getter]
    fn depth(&self) -> Option<usize> {
        self.budget.depth().map(|d| d.get())
    }

    /// The reads using the budget now.
    #[getter]
    fn active_reads(&self) -> usize {
        self.budget.active_reads()
    }

    /// Counters over every read that used the budget.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.budget.stats();
        let out = PyDict::new(py);
        out.set_item("reserved_bytes", stats.reserved_bytes)?;
        out.set_item("peak_reserved_bytes", stats.peak_reserved_bytes)?;
        out.set_item("in_flight", stats.in_flight)?;
        out.set_item("peak_in_flight", stats.peak_in_flight)?;
        out.set_item("reads", stats.reads)?;
        out.set_item("bypassed_reads", stats.bypassed_reads)?;
        Ok(out)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyIoBudget>().is_ok_and(|o| o.get().budget == self.budget)
    }

    fn __hash__(&self) -> u64 {
        // Equal budgets are the same budget: the address of the shared state identifies it.
        self.budget.id() as u64
    }

    fn __repr__(&self) -> String {
        match self.budget.depth() {
            Some(depth) => format!("IoBudget(bytes={}, depth={depth})", self.bytes()),
            None => format!("IoBudget(bytes={})", self.bytes()),
        }
    }
}

/// Makes `budget` the budget of every read started from now on that is given none (`None`:
/// reads have only their own buffer and depth again).
#[pyfunction]
#[pyo3(signature = (budget))]
pub fn set_io_budget(budget: Option<&Bound<'_, PyIoBudget>>) {
    IoBudget::set_process_default(budget.map(|b| b.get().budget.clone()));
}

/// The process-wide budget, if one is set.
#[pyfunction]
pub fn get_io_budget(py: Python<'_>) -> PyResult<Option<Py<PyIoBudget>>> {
    IoBudget::process_default().map(|budget| Py::new(py, PyIoBudget { budget })).transpose()
}
