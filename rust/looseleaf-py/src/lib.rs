//! Python bindings of looseleaf: registration only; one module per Python concept.

mod arrow;
mod errors;
mod reader;
mod runtime;
mod store;
mod writer;

use pyo3::prelude::*;

/// The extension's allocator. A scan allocates and frees the buffers of every batch; glibc's
/// malloc hands such blocks back to the kernel and faults them in again batch after batch (a
/// fresh-process scan of the 313 MB embeddings file spent about as long in page faults as in
/// decoding), where mimalloc reuses them. Memory pyarrow allocates is not affected.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
