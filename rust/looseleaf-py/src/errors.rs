//! Mapping core errors onto the Python exception classes of `looseleaf.exceptions`.

use looseleaf::{Error, ErrorKind};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static EXCEPTIONS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn exception_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module = EXCEPTIONS.get_or_try_init(py, || py.import("looseleaf.exceptions").map(|m| m.unbind()))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// Converts a core error into the matching Python exception.
pub fn to_py_err(error: Error) -> PyErr {
    Python::attach(|py| {
        let name = match error.kind() {
            ErrorKind::NotFound => "NotFoundError",
            ErrorKind::PermissionDenied => "PermissionDeniedError",
            ErrorKind::Changed => "ObjectChangedError",
            ErrorKind::Io => "LooseleafIOError",
            ErrorKind::Corrupt => "CorruptFileError",
            ErrorKind::Unsupported => "UnsupportedError",
            ErrorKind::InvalidArgument => "InvalidArgumentError",
            ErrorKind::Schema => "SchemaMismatchError",
            ErrorKind::OutOfMemory => "OutOfMemoryError",
            _ => "LooseleafError",
        };
        let message = error.to_string();
        match exception_class(py, name) {
            Ok(class) => PyErr::from_type(class, message),
            Err(import_error) => import_error,
        }
    })
}

/// `Result` conversion for core results.
pub trait IntoPyResult<T> {
    /// Converts the error into the matching Python exception.
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for looseleaf::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py_err)
    }
}

/// A Python `ValueError`-derived `InvalidArgumentError` with `message`, for arguments the
/// bindings cannot even translate (a string where a list of names is expected, say).
pub fn invalid_argument(message: impl Into<String>) -> PyErr {
    to_py_err(Error::invalid_argument(message))
}
