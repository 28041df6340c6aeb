//! Datasets of many files (`looseleaf::dataset`): which files a directory shows, and the write
//! job of the Spark data source, so that the Python and JVM data sources share one commit
//! protocol.

use looseleaf::StorageOptions;
use looseleaf::dataset::{CommitMode, WriteJob};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow::import_schema;
use crate::errors::IntoPyResult;
use crate::runtime::wait;
use crate::storage::at;

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

#[pymethods]
impl PyWriteJob {
    /// The job `id` begun earlier, maybe in another process.
    #[new]
    #[pyo3(signature = (directory, id, overwrite, storage_options = None))]
    fn new(directory: &str, id: String, overwrite: bool, storage_options: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let (location, options) = at(directory, storage_options)?;
        let job = WriteJob::resume(location, options.clone(), id, mode(overwrite));
        Ok(Self { job, overwrite, options })
    }

    /// Begins a job writing `schema` into `directory` (see `WriteJob::begin`).
    #[staticmethod]
    #[pyo3(signature = (directory, schema, overwrite, *, storage_options = None))]
    fn begin(
        py: Python<'_>,
        directory: &str,
        schema: &Bound<'_, PyAny>,
        overwrite: bool,
        storage_options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (location, options) = at(directory, storage_options)?;
        let schema = import_schema(schema)?;
        let begin_options = options.clone();
        let job = wait(py, async move { WriteJob::begin(&location, &begin_options, &schema, mode(overwrite)).await })?
            .py_err()?;
        Ok(Self { job, overwrite, options })
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
    ) -> PyResult<(Bound<'py, PyAny>, (String, String, bool, Bound<'py, PyDict>))> {
        let this = slf.get();
        let options = PyDict::new(slf.py());
        for (key, value) in this.options.iter() {
            options.set_item(key, value)?;
        }
        let args = (this.job.directory().to_string(), this.job.id().to_owned(), this.overwrite, options);
        Ok((slf.get_type().into_any(), args))
    }

    fn __repr__(&self) -> String {
        format!("WriteJob({:?}, {:?}, overwrite={})", self.job.directory().to_string(), self.job.id(), self.overwrite)
    }
}
