//! Datasets of many files (`looseleaf::dataset`): which files a directory shows, and the write
//! job of the Spark data source, so that the Python and JVM data sources share one commit
//! protocol.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::Schema;
use looseleaf::StorageOptions;
use looseleaf::dataset::{
    CommitMode, Dataset, DatasetOptions, DatasetSource, DatasetWriteOptions, DatasetWriter, ExistingData, FilePlan,
    HivePartitioning, Partitioning, TaskWriter, WriteJob,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::arrow::{PyArrowSchema, PyBatches, PyReadStream, batch_stream, import_schema, import_stream};
use crate::errors::{IntoPyResult, invalid_argument};
use crate::read::{Rows, describe, indices_from, read_options};
use crate::reader::{filtered_plan_dict, plan_dict};
use crate::runtime::{runtime, wait};
use crate::storage::at;
use crate::writer::{PolicySpec, WriterSettings, writer_options};

/// The data files a reader sees in the dataset directory `location` (see
/// `looseleaf::dataset::directory_files`).
#[pyfunction]
#[pyo3(signature = (location, *, storage_options = None, recursive = false))]
pub fn dataset_files(
    py: Python<'_>,
    location: &str,
    storage_options: Option<&Bound<'_, PyAny>>,
    recursive: bool,
) -> PyResult<Vec<String>> {
    let (location, options) = at(location, storage_options)?;
    wait(py, async move { looseleaf::dataset::directory_files(&location, &options, recursive).await })?.py_err()
}

/// The partition values of the file at `location` for the partition columns `schema` (read
/// from the `key=value` directories above the file, in order), as a one-row batch.
#[pyfunction]
pub fn file_partition_values(location: &str, schema: &Bound<'_, PyAny>) -> PyResult<PyBatches> {
    let schema = import_schema(schema)?;
    let partitioning = HivePartitioning::try_new(schema.fields().clone()).py_err()?;
    let values = partitioning.values_of_file(&looseleaf::Location::parse(location).py_err()?).py_err()?;
    let batch = arrow_array::RecordBatch::try_new(schema, values).map_err(|e| invalid_argument(e.to_string()))?;
    Ok(batch_stream(batch))
}

/// A commit as Python receives it: `(job, mode, files, schema)`.
type PyCommit = (String, &'static str, Vec<String>, String);

/// The commits of the dataset directory `location`, oldest first, as `(job, mode, files,
/// schema)`; `None` without a commit log.
#[pyfunction]
#[pyo3(signature = (location, *, storage_options = None))]
pub fn read_commit_log(
    py: Python<'_>,
    location: &str,
    storage_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Vec<PyCommit>>> {
    let (location, options) = at(location, storage_options)?;
    let log = wait(py, async move { looseleaf::dataset::CommitLog::read(&location, &options).await })?.py_err()?;
    Ok(log.map(|log| {
        log.commits
            .into_iter()
            .map(|c| {
                let mode = match c.mode {
                    looseleaf::dataset::CommitMode::Append => "append",
                    looseleaf::dataset::CommitMode::Overwrite => "overwrite",
                };
                (c.job, mode, c.files, c.schema)
            })
            .collect()
    }))
}

fn mode(overwrite: bool) -> CommitMode {
    if overwrite { CommitMode::Overwrite } else { CommitMode::Append }
}

/// A job writing a dataset directory (`looseleaf::dataset::WriteJob`): begun on the driver
/// with [`PyWriteJob::begin`], then pickled to the tasks (as its directory, id, mode and
/// storage options) and back.
#[pyclass(name = "WriteJob", module = "looseleaf._looseleaf", frozen)]
pub struct PyWriteJob {
    job: WriteJob,
    overwrite: bool,
    options: StorageOptions,
}

/// The files of one task attempt of a [`PyWriteJob`] (`looseleaf::dataset::TaskWriter`: one,
/// or one per partition directory).
#[pyclass(name = "TaskWriter", module = "looseleaf._looseleaf", frozen)]
pub struct PyTaskWriter {
    /// Guarded by its own lock: the writer, `None` once finished or aborted.
    writer: std::sync::Mutex<Option<TaskWriter>>,
}

impl PyTaskWriter {
    fn take(&self) -> PyResult<Option<TaskWriter>> {
        let mut guard =
            self.writer.try_lock().map_err(|_| invalid_argument("the task writer is in use by another thread"))?;
        Ok(guard.take())
    }
}

#[pymethods]
impl PyTaskWriter {
    /// Writes one record batch (an object with `__arrow_c_array__`), partition columns included.
    fn write_batch(&self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = crate::arrow::import_batch(batch)?;
        let mut guard =
            self.writer.try_lock().map_err(|_| invalid_argument("the task writer is in use by another thread"))?;
        let writer = guard.as_mut().ok_or_else(|| invalid_argument("the task writer is already finished"))?;
        wait(py, writer.write(&batch))?.py_err()
    }

    /// Finishes the files: `(name, rows, bytes)` of each the job may commit.
    fn finish(&self, py: Python<'_>) -> PyResult<Vec<(String, u64, u64)>> {
        let Some(writer) = self.take()? else { return Err(invalid_argument("the task writer is already finished")) };
        let files = wait(py, writer.finish())?.py_err()?;
        Ok(files.into_iter().map(|f| (f.name, f.num_rows, f.num_bytes)).collect())
    }

    /// Abandons the files (nothing is left of them); nothing happens once finished.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        match self.take()? {
            Some(writer) => wait(py, writer.abort())?.py_err(),
            None => Ok(()),
        }
    }
}

#[pymethods]
impl PyWriteJob {
    /// The job `id` begun earlier, maybe in another process.
    #[new]
    #[pyo3(signature = (directory, id, overwrite, storage_options = None, partition_by = None))]
    fn new(
        directory: &str,
        id: String,
        overwrite: bool,
        storage_options: Option<&Bound<'_, PyAny>>,
        partition_by: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let (location, options) = at(directory, storage_options)?;
        let job = WriteJob::resume(location, options.clone(), id, mode(overwrite))
            .with_partition_by(partition_by.unwrap_or_default());
        Ok(Self { job, overwrite, options })
    }

    /// Begins a job writing `schema` into `directory`, in `key=value/` directories of the
    /// columns `partition_by` (see `WriteJob::begin`).
    #[staticmethod]
    #[pyo3(signature = (directory, schema, overwrite, *, storage_options = None, partition_by = None))]
    fn begin(
        py: Python<'_>,
        directory: &str,
        schema: &Bound<'_, PyAny>,
        overwrite: bool,
        storage_options: Option<&Bound<'_, PyAny>>,
        partition_by: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let (location, options) = at(directory, storage_options)?;
        let schema = import_schema(schema)?;
        let begin_options = options.clone();
        let partition_by = partition_by.unwrap_or_default();
        let job = wait(py, async move {
            WriteJob::begin(&location, &begin_options, &schema, mode(overwrite), &partition_by).await
        })?
        .py_err()?;
        Ok(Self { job, overwrite, options })
    }

    /// The partition columns.
    #[getter]
    fn partition_by(&self) -> Vec<String> {
        self.job.partition_by().to_vec()
    }

    /// The writer of one task attempt's files (`page_size` and `compression` as
    /// `looseleaf.FileWriter` takes them).
    #[pyo3(signature = (partition, attempt, schema, *, page_size = None, compression = None))]
    fn task_writer(
        &self,
        partition: u64,
        attempt: u64,
        schema: &Bound<'_, PyAny>,
        page_size: Option<i128>,
        compression: Option<String>,
    ) -> PyResult<PyTaskWriter> {
        let options = writer_options(WriterSettings {
            page_size,
            compression,
            compression_level: None,
            encodings: None,
            statistics: true,
            checksums: true,
            zone_map_rows: None,
        })?;
        let writer = self.job.task_writer(partition, attempt, import_schema(schema)?, options).py_err()?;
        Ok(PyTaskWriter { writer: std::sync::Mutex::new(Some(writer)) })
    }

    /// The job's id.
    #[getter]
    fn id(&self) -> &str {
        self.job.id()
    }

    /// The name of one task attempt's file inside the directory.
    fn task_file(&self, partition: u64, attempt: u64) -> String {
        self.job.task_file(partition, attempt)
    }

    /// The location of `name` inside the directory.
    fn location_of(&self, name: &str) -> PyResult<String> {
        Ok(self.job.directory().child(name).py_err()?.to_string())
    }

    /// Whether the job may still commit the finished file `name` (else it was deleted).
    fn keep_task_file(&self, py: Python<'_>, name: String) -> PyResult<bool> {
        let job = self.job.clone();
        wait(py, async move { job.keep_task_file(&name).await })?.py_err()
    }

    /// Makes `files` visible with `schema` as the dataset's schema.
    fn commit(&self, py: Python<'_>, files: Vec<String>, schema: &Bound<'_, PyAny>) -> PyResult<()> {
        let (job, schema) = (self.job.clone(), import_schema(schema)?);
        wait(py, async move { job.commit(&files, &schema).await })?.py_err()
    }

    /// Abandons the job and deletes its files.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        let job = self.job.clone();
        wait(py, async move { job.abort().await })?.py_err()
    }

    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (String, String, bool, Bound<'py, PyDict>, Vec<String>))> {
        let this = slf.get();
        let options = PyDict::new(slf.py());
        for (key, value) in this.options.iter() {
            options.set_item(key, value)?;
        }
        let args = (
            this.job.directory().to_string(),
            this.job.id().to_owned(),
            this.overwrite,
            options,
            this.job.partition_by().to_vec(),
        );
        Ok((slf.get_type().into_any(), args))
    }

    fn __repr__(&self) -> String {
        format!("WriteJob({:?}, {:?}, overwrite={})", self.job.directory().to_string(), self.job.id(), self.overwrite)
    }
}

/// How a Python caller names a dataset: a path or URL (a directory, prefix, glob or file), or a
/// list of files.
fn source(value: &Bound<'_, PyAny>) -> PyResult<DatasetSource> {
    let os = value.py().import("os")?;
    if let Ok(text) = os.call_method1("fspath", (value,)) {
        return Ok(DatasetSource::Uri(text.extract()?));
    }
    if let Ok(items) = value.try_iter() {
        let files = items
            .map(|item| os.call_method1("fspath", (item?,))?.extract::<String>())
            .collect::<PyResult<Vec<_>>>()
            .map_err(|_| invalid_argument("a dataset is a path, a URL, or a list of them"))?;
        return Ok(DatasetSource::Files(files));
    }
    Err(invalid_argument("a dataset is a path, a URL, or a list of them"))
}

/// `partitioning=`: `"hive"` (discovered; the default), `None` or `"none"` (no partition
/// columns), or a schema of the partition columns.
fn partitioning(value: Option<&Bound<'_, PyAny>>) -> PyResult<Partitioning> {
    let Some(value) = value else { return Ok(Partitioning::Hive) };
    if value.is_none() {
        return Ok(Partitioning::None);
    }
    if let Ok(text) = value.extract::<String>() {
        return match text.as_str() {
            "hive" => Ok(Partitioning::Hive),
            "none" => Ok(Partitioning::None),
            other => Err(invalid_argument(format!("partitioning must be \"hive\", None or a schema, got {other:?}"))),
        };
    }
    let schema = import_schema(value)
        .map_err(|_| invalid_argument("partitioning must be \"hive\", None or a schema of the partition columns"))?;
    Ok(Partitioning::HiveWith(schema.fields().clone()))
}

/// Many looseleaf files read as one table (`looseleaf::dataset::Dataset`).
#[pyclass(name = "Dataset", module = "looseleaf._looseleaf", frozen)]
pub struct PyDataset {
    dataset: Dataset,
}

#[pymethods]
impl PyDataset {
    /// Opens a dataset; the options become the defaults of its reads.
    #[staticmethod]
    #[pyo3(signature = (source, *, storage_options = None, partitioning = None, **options))]
    fn open(
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        storage_options: Option<&Bound<'_, PyAny>>,
        partitioning: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let options = DatasetOptions {
            storage: crate::storage::storage_options(storage_options)?,
            read: read_options(options)?,
            partitioning: self::partitioning(partitioning)?,
        };
        let source = self::source(source)?;
        let dataset = wait(py, async move { Dataset::open(source, options).await })?.py_err()?;
        crate::arrow::check_exportable(dataset.schema(), dataset.name())?;
        Ok(Self { dataset })
    }

    #[getter]
    fn schema(&self) -> PyArrowSchema {
        PyArrowSchema::new(self.dataset.schema().clone())
    }

    #[getter]
    fn partition_schema(&self) -> PyArrowSchema {
        PyArrowSchema::new(Arc::new(Schema::new(self.dataset.partitioning().fields().clone())))
    }

    #[getter]
    fn files(&self) -> Vec<String> {
        self.dataset.files().iter().map(|f| f.reader.location().to_string()).collect()
    }

    #[getter]
    fn num_rows(&self) -> u64 {
        self.dataset.num_rows()
    }

    /// The partition values of every file: one row per file, in order.
    fn file_partitions(&self) -> PyResult<PyBatches> {
        let batch = self.dataset.file_partitions().py_err()?;
        Ok(batch_stream(batch))
    }

    /// Rows per file, in order.
    #[getter]
    fn file_rows(&self) -> Vec<u64> {
        self.dataset.files().iter().map(|f| f.reader.num_rows()).collect()
    }

    /// Starts a read across the files; the result exports its batches through
    /// `__arrow_c_stream__`.
    #[pyo3(signature = (columns = None, start = None, num_rows = None, **options))]
    fn stream(
        &self,
        py: Python<'_>,
        columns: Option<&Bound<'_, PyAny>>,
        start: Option<i64>,
        num_rows: Option<i64>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyReadStream> {
        let read = describe(self.dataset.read(), columns, Rows::of(start, num_rows, None)?, options)?;
        crate::read::stream(py, read)
    }

    /// Reads to the end and returns all batches.
    #[pyo3(signature = (columns = None, start = None, num_rows = None, **options))]
    fn read_table(
        &self,
        py: Python<'_>,
        columns: Option<&Bound<'_, PyAny>>,
        start: Option<i64>,
        num_rows: Option<i64>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyBatches> {
        let read = describe(self.dataset.read(), columns, Rows::of(start, num_rows, None)?, options)?;
        crate::read::read_table(py, read)
    }

    /// The rows at dataset row numbers `indices`, in that order.
    #[pyo3(signature = (indices, columns = None, **options))]
    fn take(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        columns: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyBatches> {
        let indices = indices_from(indices)?;
        let read = describe(self.dataset.read(), columns, Rows::All, options)?;
        crate::read::take(py, read, indices)
    }

    /// Rows the read would return.
    #[pyo3(signature = (start = None, num_rows = None, **options))]
    fn count_rows(
        &self,
        py: Python<'_>,
        start: Option<i64>,
        num_rows: Option<i64>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        let read = describe(self.dataset.read(), None, Rows::of(start, num_rows, None)?, options)?;
        crate::read::count_rows(py, read)
    }

    /// The I/O a read would make, per file, without making it.
    #[pyo3(signature = (columns = None, start = None, num_rows = None, indices = None, **options))]
    fn plan<'py>(
        &self,
        py: Python<'py>,
        columns: Option<&Bound<'py, PyAny>>,
        start: Option<i64>,
        num_rows: Option<i64>,
        indices: Option<&Bound<'py, PyAny>>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let read = describe(self.dataset.read(), columns, Rows::of(start, num_rows, indices)?, options)?;
        let plan = wait(py, read.plan())?.py_err()?;
        let out = PyList::empty(py);
        for ((location, plan), file) in plan.files.iter().zip(self.dataset.files()) {
            let paths = file.reader.column_paths();
            let entry = match plan {
                None => PyDict::new(py),
                Some(FilePlan::Read(plan)) => plan_dict(py, plan, &paths)?,
                Some(FilePlan::Filtered(plan)) => filtered_plan_dict(py, plan, &paths)?,
            };
            entry.set_item("file", location)?;
            entry.set_item("pruned", plan.is_none())?;
            out.append(entry)?;
        }
        Ok(out)
    }
}

/// Writes Arrow data (anything with `__arrow_c_stream__`) as a dataset directory; returns the
/// files written.
#[pyfunction]
#[pyo3(signature = (data, uri, *, partition_by = None, max_rows_per_file = None, max_open_files = None, existing_data = "error", storage_options = None, page_size = None, compression = None, compression_level = None, encodings = None, statistics = true, checksums = true, zone_map_rows = None))]
// Python's keywords, one parameter each, as PyO3 maps them; they become one options struct below.
#[allow(clippy::too_many_arguments)]
pub fn write_dataset(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    uri: &str,
    partition_by: Option<Vec<String>>,
    max_rows_per_file: Option<u64>,
    max_open_files: Option<usize>,
    existing_data: &str,
    storage_options: Option<&Bound<'_, PyAny>>,
    page_size: Option<i128>,
    compression: Option<String>,
    compression_level: Option<i32>,
    encodings: Option<HashMap<String, PolicySpec>>,
    statistics: bool,
    checksums: bool,
    zone_map_rows: Option<i128>,
) -> PyResult<Vec<String>> {
    let (root, storage) = at(uri, storage_options)?;
    let writer = writer_options(WriterSettings {
        page_size,
        compression,
        compression_level,
        encodings,
        statistics,
        checksums,
        zone_map_rows,
    })?;
    let existing_data = match existing_data {
        "error" => ExistingData::Error,
        "append" => ExistingData::Append,
        "overwrite" => ExistingData::Overwrite,
        other => {
            return Err(invalid_argument(format!(
                "existing_data must be \"error\", \"append\" or \"overwrite\", got {other:?}"
            )));
        }
    };
    let defaults = DatasetWriteOptions::default();
    let options = DatasetWriteOptions {
        storage,
        writer,
        partition_by: partition_by.unwrap_or_default(),
        max_rows_per_file,
        max_open_files: max_open_files.unwrap_or(defaults.max_open_files),
        existing_data,
    };
    let reader = import_stream(data)?;
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let runtime = runtime()?;
    let mut writer = wait(py, DatasetWriter::try_new(root, schema, options))?.py_err()?;
    // The producer takes the GIL itself if it needs it (a Python generator behind a reader).
    crate::runtime::detached(py, || {
        for batch in reader {
            let batch = match batch {
                Ok(batch) => batch,
                Err(e) => {
                    let _ = crate::runtime::block_on_interruptible(&runtime, writer.abort());
                    return Err(invalid_argument(format!("reading the input stream failed: {e}")));
                }
            };
            let result = crate::runtime::block_on_py(&runtime, writer.write(&batch)).and_then(|r| r.py_err());
            if let Err(e) = result {
                let _ = crate::runtime::block_on_interruptible(&runtime, writer.abort());
                return Err(e);
            }
        }
        crate::runtime::block_on_py(&runtime, writer.finish())?.py_err()
    })
}
