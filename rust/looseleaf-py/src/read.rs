//! The read methods `FileReader` and `Dataset` share: every keyword a read takes is translated
//! here, once, into the core's one description of a read ([`ReadBuilder`]), which the core then
//! carries out ([`ReadSource`]: the same terminal methods for a file and a dataset). The
//! classes' methods only call these.
//!
//! Every read method takes the same keywords: `columns`, the rows (`start`/`num_rows`, or
//! `indices`), `filter`, `trace` and the core's read options ([`looseleaf::ReadOptions`]),
//! which [`read_options`] passes to the core by name: the core checks them, so every front end
//! reports a bad value the same way.

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_schema::DataType;
use futures::TryStreamExt;
use looseleaf::filter::Predicate;
use looseleaf::selection::row_numbers;
use looseleaf::{OptionValue, ReadBuilder, ReadOptions, ReadSource};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};

use crate::arrow::{PyBatches, PyReadStream, batch_stream};
use crate::errors::{IntoPyResult, invalid_argument};
use crate::runtime::{runtime, wait};

/// The rows a Python read names.
pub(crate) enum Rows {
    All,
    Range { start: Option<i64>, num_rows: Option<i64> },
    Indices(Vec<u64>),
}

impl Rows {
    /// The rows of `start`/`num_rows` or `indices` (not both).
    pub(crate) fn of(start: Option<i64>, num_rows: Option<i64>, indices: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        if let Some(indices) = indices.filter(|i| !i.is_none()) {
            if start.is_some() || num_rows.is_some() {
                return Err(invalid_argument("give indices or start/num_rows, not both"));
            }
            return Ok(Self::Indices(indices_from(indices)?));
        }
        Ok(match (start, num_rows) {
            (None, None) => Self::All,
            (start, num_rows) => Self::Range { start, num_rows },
        })
    }
}

/// `read` narrowed to `columns` and `rows`, with the keywords `options`: the filter and the
/// trace (which every read method takes, but are not options), then the read options.
pub(crate) fn describe<S: ReadSource>(
    read: ReadBuilder<S>,
    columns: Option<&Bound<'_, PyAny>>,
    rows: Rows,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<ReadBuilder<S>> {
    let (options, filter, trace) = match options {
        Some(options) => {
            let options = options.copy()?;
            let filter = options.get_item("filter")?;
            options.del_item("filter").ok();
            let trace = options.get_item("trace")?;
            options.del_item("trace").ok();
            (Some(options), filter.filter(|f| !f.is_none()), trace.filter(|t| !t.is_none()))
        }
        None => (None, None, None),
    };
    let num_rows = read.source().num_rows();
    let mut read = read.with_options(read_options(options.as_ref())?);
    if let Some(trace) = trace {
        let trace = trace.cast::<crate::trace::PyTrace>().map_err(|_| {
            invalid_argument(format!("trace must be a looseleaf.Trace, got {}", describe_value(&trace)))
        })?;
        read = read.with_trace(trace.get().trace.clone());
    }
    if let Some(columns) = names("columns", columns)? {
        read = read.with_columns(columns);
    }
    if let Some(filter) = filter {
        read = read.with_filter(predicate(&filter)?);
    }
    Ok(match rows {
        Rows::All => read,
        Rows::Indices(indices) => read.with_indices(indices),
        Rows::Range { start, num_rows: count } => {
            let start = row_numbers("start", start).py_err()?.first().copied().unwrap_or(0);
            let end = match count {
                Some(n) => {
                    let n = row_numbers("num_rows", [n]).py_err()?.first().copied().unwrap_or(0);
                    start.checked_add(n).ok_or_else(|| invalid_argument("start + num_rows overflows"))?
                }
                None => num_rows.max(start),
            };
            read.with_row_range(start..end)
        }
    })
}

/// Starts `read`; the result exports its batches through `__arrow_c_stream__`.
pub(crate) fn stream<S: ReadSource>(py: Python<'_>, read: ReadBuilder<S>) -> PyResult<PyReadStream> {
    let stream = wait(py, S::stream(read))?.py_err()?;
    Ok(PyReadStream::new(stream, runtime()?))
}

/// Reads `read` to the end and returns all its batches (errors raise looseleaf's exceptions,
/// which a stream consumed by pyarrow cannot do).
pub(crate) fn read_table<S: ReadSource>(py: Python<'_>, read: ReadBuilder<S>) -> PyResult<PyBatches> {
    let (schema, batches) = wait(py, async move {
        S::check_result_fits(&read).await?;
        let stream = S::stream(read).await?;
        let schema = stream.schema().clone();
        Ok::<_, looseleaf::Error>((schema, stream.try_collect().await?))
    })?
    .py_err()?;
    Ok(PyBatches::new(schema, batches))
}

/// The rows at `indices` of `read`'s source, in that order.
pub(crate) fn take<S: ReadSource>(py: Python<'_>, read: ReadBuilder<S>, indices: Vec<u64>) -> PyResult<PyBatches> {
    let batch = wait(py, S::take(read, indices))?.py_err()?;
    Ok(batch_stream(batch))
}

/// Rows `read` returns.
pub(crate) fn count_rows<S: ReadSource>(py: Python<'_>, read: ReadBuilder<S>) -> PyResult<u64> {
    wait(py, S::count_rows(read))?.py_err()
}

/// Read options given by name (Python keywords), as the core's [`ReadOptions`]. `None` values
/// are left unset.
pub fn read_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<ReadOptions> {
    let mut out = ReadOptions::default();
    for (name, value) in options.into_iter().flatten() {
        if value.is_none() {
            continue;
        }
        let name: String = name.extract()?;
        out.set(&name, option_value(&value)?).py_err()?;
    }
    Ok(out)
}

/// A Python value as an [`OptionValue`]; the core decides whether it suits the option.
pub fn option_value(value: &Bound<'_, PyAny>) -> PyResult<OptionValue> {
    if let Ok(budget) = value.cast::<crate::budget::PyIoBudget>() {
        return Ok(OptionValue::Budget(budget.get().budget.clone()));
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(OptionValue::Bool(flag.is_true()));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(OptionValue::Text(text.to_str()?.to_string()));
    }
    if let Ok(number) = value.extract::<i128>() {
        return Ok(OptionValue::Int(number));
    }
    if let Ok(names) = value.extract::<Vec<String>>() {
        return Ok(OptionValue::List(names));
    }
    Ok(OptionValue::Text(value.repr()?.to_str()?.to_string()))
}

/// A list of column names given as `argument`.
pub(crate) fn names(argument: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<String>>> {
    let Some(value) = value.filter(|v| !v.is_none()) else { return Ok(None) };
    if value.is_instance_of::<PyString>() {
        return Err(invalid_argument(format!("{argument} must be a list of column names, not a string")));
    }
    value.extract::<Vec<String>>().map(Some).map_err(|_| {
        invalid_argument(format!("{argument} must be a list of column names, got {}", describe_value(value)))
    })
}

fn describe_value(value: &Bound<'_, PyAny>) -> String {
    value.repr().map(|r| r.to_string()).unwrap_or_else(|_| "an unprintable value".into())
}

/// A filter in the form `looseleaf.filters.to_native` gives: `(json, [literal arrays])`.
pub(crate) fn predicate(filter: &Bound<'_, PyAny>) -> PyResult<Predicate> {
    let (json, literals): (String, Vec<Bound<'_, PyAny>>) = filter
        .extract()
        .map_err(|_| invalid_argument("filter: expected the (json, literals) pair of looseleaf.filters.to_native"))?;
    let literals = literals.iter().map(crate::arrow::import_array).collect::<PyResult<Vec<_>>>()?;
    Predicate::from_json(&json, &literals).py_err()
}

/// Row indices from a Python object: an Arrow integer array (`__arrow_c_array__`), an object
/// with the buffer protocol (a numpy array, `array.array`), or a sequence of integers. Nothing
/// here imports another Python module.
pub(crate) fn indices_from(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if obj.hasattr("__arrow_c_array__")? {
        return arrow_indices(&crate::arrow::import_array(obj)?);
    }
    if let Some(values) = buffer_indices(obj)? {
        return Ok(values);
    }
    if obj.is_instance_of::<PyString>() {
        return Err(invalid_argument("indices must be integers, not a string"));
    }
    let values: Vec<i64> = obj.extract().map_err(|_| {
        invalid_argument(format!("indices must be a sequence of integers, got {}", describe_value(obj)))
    })?;
    row_numbers("indices", values).py_err()
}

/// Indices from a buffer of integers of any width, or `None` if `obj` has no buffer of them.
fn buffer_indices(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u64>>> {
    macro_rules! try_buffer {
        ($($t:ty),*) => {$(
            if let Ok(buffer) = PyBuffer::<$t>::get(obj) {
                let values = buffer.to_vec(obj.py())?;
                return row_numbers("indices", values).py_err().map(Some);
            }
        )*};
    }
    try_buffer!(i64, i32, u64, u32, i16, u16, i8, u8);
    Ok(None)
}

/// Indices from an Arrow array of any integer type.
fn arrow_indices(array: &arrow_array::ArrayRef) -> PyResult<Vec<u64>> {
    if array.null_count() > 0 {
        return Err(invalid_argument("indices cannot be null"));
    }
    macro_rules! values {
        ($t:ty) => {
            row_numbers("indices", array.as_primitive::<$t>().values().iter().copied()).py_err()
        };
    }
    match array.data_type() {
        DataType::Int8 => values!(Int8Type),
        DataType::Int16 => values!(Int16Type),
        DataType::Int32 => values!(Int32Type),
        DataType::Int64 => values!(Int64Type),
        DataType::UInt8 => values!(UInt8Type),
        DataType::UInt16 => values!(UInt16Type),
        DataType::UInt32 => values!(UInt32Type),
        DataType::UInt64 => values!(UInt64Type),
        DataType::Null => Ok(Vec::new()),
        other => Err(invalid_argument(format!("indices must be integers, got an array of {other}"))),
    }
}
