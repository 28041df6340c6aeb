//! Mapping core errors onto the Python exception classes of `looseleaf.exceptions`.

use looseleaf::Error;
use looseleaf::storage::{StoreError, StoreErrorKind};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static EXCEPTIONS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn exception_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module = EXCEPTIONS.get_or_try_init(py, || py.import("looseleaf.exceptions").map(|m| m.unbind()))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// Whether an I/O error means the file does not exist.
fn is_not_found(source: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(e) = source.downcast_ref::<std::io::Error>() {
        return e.kind() == std::io::ErrorKind::NotFound;
    }
    if let Some(e) = source.downcast_ref::<object_store::Error>() {
        return matches!(e, object_store::Error::NotFound { .. });
    }
    source.downcast_ref::<StoreError>().is_some_and(|e| e.kind() == StoreErrorKind::NotFound)
}

/// Whether an I/O error means access was denied.
fn is_denied(source: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(e) = source.downcast_ref::<std::io::Error>() {
        return e.kind() == std::io::ErrorKind::PermissionDenied;
    }
    source.downcast_ref::<StoreError>().is_some_and(|e| e.kind() == StoreErrorKind::PermissionDenied)
}

/// Converts a core error into the matching Python exception.
pub fn to_py_err(error: Error) -> PyErr {
    Python::attach(|py| {
        let name = match &error {
            Error::Io { source, .. } if is_not_found(source.as_ref()) => "NotFoundError",
            Error::Io { source, .. } if is_denied(source.as_ref()) => "PermissionDeniedError",
            Error::Io { .. } => "LooseleafIOError",
            Error::Corrupt { .. } => "CorruptFileError",
            Error::Unsupported { .. } => "UnsupportedError",
            Error::InvalidArgument { .. } => "InvalidArgumentError",
            Error::Schema(_) => "SchemaMismatchError",
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
