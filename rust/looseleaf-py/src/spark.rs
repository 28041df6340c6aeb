//! Spark's Arrow forms (`looseleaf::spark_form`) for the Python data source: PySpark's form of
//! a file's schema, and the exact cast of batches to a PySpark form, so that the mapping and the
//! casts exist once, in the core, for the Python and the JVM paths alike.

use looseleaf::Error;
use looseleaf::spark_form::{self, Flavor};
use pyo3::prelude::*;

use crate::arrow::{PyArrowSchema, PyBatches, batch_stream, import_batch, import_schema};
use crate::errors::IntoPyResult;

/// PySpark's Arrow form of `schema` (what `to_arrow_schema(schema, timezone="UTC")` makes for
/// the Spark schema it reads as); unmappable types raise `UnsupportedError` naming the column.
#[pyfunction]
pub fn pyspark_schema(schema: &Bound<'_, PyAny>) -> PyResult<PyArrowSchema> {
    let schema = import_schema(schema)?;
    Ok(PyArrowSchema::new(spark_form::schema_in(&schema, Flavor::PySpark).py_err()?))
}

/// `batch` cast exactly to `schema` (a Spark form of its schema), columns by position; errors
/// name `source` (a file) when given.
#[pyfunction]
#[pyo3(signature = (batch, schema, *, source = None))]
pub fn cast_to_spark(batch: &Bound<'_, PyAny>, schema: &Bound<'_, PyAny>, source: Option<&str>) -> PyResult<PyBatches> {
    let (batch, target) = (import_batch(batch)?, import_schema(schema)?);
    let cast = spark_form::batch(&batch, &target).map_err(|e| match (e, source) {
        (Error::Schema(message), Some(source)) => Error::Schema(format!("{source}: {message}")),
        (e, Some(source)) => e.with_location(source),
        (e, None) => e,
    });
    Ok(batch_stream(cast.py_err()?))
}
