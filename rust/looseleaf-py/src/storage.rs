//! `storage_options` from Python (a mapping of `object_store` keys to values, as pylance,
//! delta-rs and polars take it), and whole objects at any location, for the dataset layers
//! (the Spark data source lists and reads small files through these).

use looseleaf::{Location, StorageOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict};

use crate::errors::{IntoPyResult, invalid_argument};
use crate::runtime::wait;

/// The storage options of a Python mapping (`None`: the environment's configuration). Values
/// are passed as text: `True` becomes `"true"`, numbers their decimal form.
pub fn storage_options(options: Option<&Bound<'_, PyAny>>) -> PyResult<StorageOptions> {
    let Some(options) = options.filter(|o| !o.is_none()) else { return Ok(StorageOptions::new()) };
    let options = options
        .cast::<PyDict>()
        .map_err(|_| invalid_argument("storage_options must be a dict of option names to values"))?;
    let mut out = StorageOptions::new();
    for (key, value) in options {
        let key: String =
            key.extract().map_err(|_| invalid_argument("storage_options: option names must be strings"))?;
        if value.is_none() {
            continue;
        }
        let value = match value.cast::<PyBool>() {
            Ok(flag) => flag.is_true().to_string(),
            Err(_) => value.str()?.to_string(),
        };
        out.insert(key, value);
    }
    Ok(out)
}

/// The location and storage options of a call.
pub fn at(location: &str, options: Option<&Bound<'_, PyAny>>) -> PyResult<(Location, StorageOptions)> {
    Ok((Location::parse(location).py_err()?, storage_options(options)?))
}

/// `(location, size)` of the objects under `location` (a directory or prefix), sorted.
#[pyfunction]
#[pyo3(signature = (location, *, storage_options = None, recursive = false))]
pub fn list_objects(
    py: Python<'_>,
    location: &str,
    storage_options: Option<&Bound<'_, PyAny>>,
    recursive: bool,
) -> PyResult<Vec<(String, u64)>> {
    let (location, options) = at(location, storage_options)?;
    let objects = wait(py, async move { location.list(&options, recursive).await })?.py_err()?;
    Ok(objects.into_iter().map(|o| (o.location, o.size)).collect())
}

/// The location of `name` (a path below a directory, as stored) inside the directory
/// `location`: the core's rule, which keeps escapes such as `k=a%2Fb` part of the key.
#[pyfunction]
pub fn child_location(location: &str, name: &str) -> PyResult<String> {
    Ok(Location::parse(location).py_err()?.child(name).py_err()?.to_string())
}

/// Whether an object exists at `location`.
#[pyfunction]
#[pyo3(signature = (location, *, storage_options = None))]
pub fn object_exists(py: Python<'_>, location: &str, storage_options: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    let (location, options) = at(location, storage_options)?;
    wait(py, async move { location.exists(&options).await })?.py_err()
}

/// The whole (small) object at `location`.
#[pyfunction]
#[pyo3(signature = (location, *, storage_options = None))]
pub fn read_object<'py>(
    py: Python<'py>,
    location: &str,
    storage_options: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (location, options) = at(location, storage_options)?;
    let bytes = wait(py, async move { location.read_all(&options).await })?.py_err()?;
    Ok(PyBytes::new(py, &bytes))
}

/// Writes `data` as the whole object at `location`, visible at once or not at all.
#[pyfunction]
#[pyo3(signature = (location, data, *, storage_options = None))]
pub fn write_object(
    py: Python<'_>,
    location: &str,
    data: Vec<u8>,
    storage_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let (location, options) = at(location, storage_options)?;
    wait(py, async move { location.write_all(bytes::Bytes::from(data), &options).await })?.py_err()
}

/// Deletes the object at `location` (a missing one is not an error).
#[pyfunction]
#[pyo3(signature = (location, *, storage_options = None))]
pub fn delete_object(py: Python<'_>, location: &str, storage_options: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let (location, options) = at(location, storage_options)?;
    wait(py, async move { location.delete(&options).await })?.py_err()
}
