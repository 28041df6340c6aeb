//! Python bindings of looseleaf: registration only; one module per Python concept.

mod arrow;
mod budget;
mod dataset;
mod errors;
mod options;
mod read;
mod reader;
mod runtime;
mod spark;
mod storage;
mod trace;
mod writer;

use pyo3::prelude::*;

/// The extension's allocator. A scan allocates and frees the buffers of every batch; glibc's
/// malloc hands such blocks back to the kernel and faults them in again batch after batch (a
/// fresh-process scan of the 313 MB embeddings file spent about as long in page faults as in
/// decoding), where mimalloc reuses them. Memory pyarrow allocates is not affected.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_arena_eager_commit` (4 in `mimalloc.h`, which `libmimalloc-sys` does
/// not name). Committing arenas only as they are used keeps the resident memory of a streaming
/// scan near what it holds live (the lineitem slow-consumer scan peaked at 207 MiB with eager
/// commit, 117 MiB without, 109 MiB with glibc), at no cost in scan time measured here.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// The native module behind the `looseleaf` package.
#[pymodule]
fn _looseleaf(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // SAFETY: sets a process-wide mimalloc option; mimalloc allows it at any time and applies it
    // to arenas reserved from then on.
    unsafe { libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0) };
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The core owns the defaults; Python shows them, never copies them.
    m.add("DEFAULT_BATCH_SIZE", looseleaf::DEFAULT_BATCH_SIZE.get())?;
    m.add("DEFAULT_PAGE_SIZE", looseleaf::DEFAULT_PAGE_SIZE)?;
    m.add("READ_OPTION_NAMES", looseleaf::READ_OPTION_NAMES.to_vec())?;
    m.add("ENCODINGS", looseleaf::EncodingKind::ALL.map(|kind| kind.name()).to_vec())?;
    m.add_class::<reader::PyFileReader>()?;
    m.add_class::<writer::PyFileWriter>()?;
    m.add_class::<arrow::PyReadStream>()?;
    m.add_class::<arrow::PyBatches>()?;
    m.add_class::<arrow::PyArrowSchema>()?;
    m.add_class::<dataset::PyWriteJob>()?;
    m.add_class::<dataset::PyTaskWriter>()?;
    m.add_class::<dataset::PyDataset>()?;
    m.add_function(wrap_pyfunction!(dataset::write_dataset, m)?)?;
    m.add_class::<budget::PyIoBudget>()?;
    m.add_class::<trace::PyTrace>()?;
    m.add_function(wrap_pyfunction!(budget::set_io_budget, m)?)?;
    m.add_function(wrap_pyfunction!(budget::get_io_budget, m)?)?;
    m.add_function(wrap_pyfunction!(options::check_read_options, m)?)?;
    m.add_function(wrap_pyfunction!(options::parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(options::read_option_name, m)?)?;
    m.add_function(wrap_pyfunction!(options::parse_location, m)?)?;
    m.add_function(wrap_pyfunction!(spark::pyspark_schema, m)?)?;
    m.add_function(wrap_pyfunction!(spark::cast_to_spark, m)?)?;
    m.add_function(wrap_pyfunction!(storage::list_objects, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::dataset_files, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::file_partition_values, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::read_commit_log, m)?)?;
    m.add_function(wrap_pyfunction!(storage::object_exists, m)?)?;
    m.add_function(wrap_pyfunction!(storage::child_location, m)?)?;
    m.add_function(wrap_pyfunction!(storage::read_object, m)?)?;
    m.add_function(wrap_pyfunction!(storage::write_object, m)?)?;
    m.add_function(wrap_pyfunction!(storage::delete_object, m)?)?;
    Ok(())
}
