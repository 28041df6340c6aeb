//! The core's parsers of options and locations, for the Python layers that receive them as
//! text (the Spark data source, the command line): they translate, the core decides.

use looseleaf::io::IoDepth;
use looseleaf::{ByteCount, Location};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::IntoPyResult;
use crate::read::read_options;

/// Checks read options given by name and returns them normalised (numbers as ints, sizes in
/// bytes), unset ones left out.
#[pyfunction]
#[pyo3(name = "read_options", signature = (**options))]
pub fn check_read_options<'py>(py: Python<'py>, options: Option<&Bound<'py, PyDict>>) -> PyResult<Bound<'py, PyDict>> {
    let options = read_options(options)?;
    let out = PyDict::new(py);
    if let Some(n) = options.batch_size {
        out.set_item("batch_size", n.get())?;
    }
    if let Some(depth) = options.io_depth {
        set_depth(&out, depth)?;
    }
    if let Some(bytes) = options.io_buffer {
        out.set_item("io_buffer_bytes", bytes.get())?;
    }
    if let Some(columns) = options.dictionary_columns {
        out.set_item("dictionary_columns", columns)?;
    }
    if let Some(n) = options.decode_parallelism {
        out.set_item("decode_parallelism", n.get())?;
    }
    if let Some(verify) = options.verify_checksums {
        out.set_item("verify_checksums", verify)?;
    }
    if let Some(views) = options.string_view {
        out.set_item("string_view", views)?;
    }
    if let Some(budget) = options.io_budget {
        out.set_item("io_budget", Py::new(py, crate::budget::PyIoBudget { budget })?)?;
    }
    Ok(out)
}

/// The read option `spelling` names (`batchSize`, `batchsize` and `batch_size` all name
/// `batch_size`), or `None`: the core's one table of names, for the Spark data source.
#[pyfunction]
pub fn read_option_name(spelling: &str) -> Option<&'static str> {
    looseleaf::read_option_name(spelling)
}

/// Sets `io_depth` (a number, or `"auto"` with `io_depth_min` and `io_depth_max`) in `out`.
pub fn set_depth(out: &Bound<'_, PyDict>, depth: IoDepth) -> PyResult<()> {
    match depth {
        IoDepth::Fixed(n) => out.set_item("io_depth", n.get()),
        IoDepth::Adaptive { min, max } => {
            out.set_item("io_depth", "auto")?;
            out.set_item("io_depth_min", min.get())?;
            out.set_item("io_depth_max", max.get())
        }
    }
}

/// A size in bytes from text such as `134217728`, `128m` or `64 MiB`.
#[pyfunction]
pub fn parse_size(text: &str) -> PyResult<u64> {
    text.parse::<ByteCount>().map(ByteCount::get).py_err()
}

/// A location as `(scheme, path)`: `("file", local path)`, `("memory", object path)`, or the
/// store's scheme (`s3`, `gs`, `az`, `http`) and the URL.
#[pyfunction]
pub fn parse_location(text: &str) -> PyResult<(&'static str, String)> {
    Ok(match Location::parse(text).py_err()? {
        Location::Local(path) => ("file", path.to_string_lossy().into_owned()),
        Location::Memory(path) => ("memory", path.to_string()),
        Location::Remote { kind, url, .. } => (kind.name(), url.to_string()),
    })
}
