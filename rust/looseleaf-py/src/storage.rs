//! `storage_options` from Python: a mapping of `object_store` keys to values, as pylance,
//! delta-rs and polars take it.

use looseleaf::StorageOptions;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};

use crate::errors::invalid_argument;

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
