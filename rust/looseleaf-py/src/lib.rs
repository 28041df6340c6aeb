//! Python bindings of looseleaf: registration only; one module per Python concept.

mod arrow;
mod errors;
mod reader;
mod runtime;
mod store;
mod writer;

use pyo3::prelude::*;

/// The native module behind the `looseleaf` package.
#[pymodule]
fn _looseleaf(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<reader::PyFileReader>()?;
    m.add_class::<writer::PyFileWriter>()?;
    m.add_class::<arrow::PyReadStream>()?;
    m.add_class::<arrow::PyBatches>()?;
    m.add_class::<arrow::PyArrowSchema>()?;
    Ok(())
}
