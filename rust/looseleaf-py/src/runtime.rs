//! The process's one tokio runtime, and blocking on it with the GIL released.
//!
//! Spark forks Python workers after the parent may have started the runtime; a forked child
//! inherits the runtime's memory but none of its threads. The runtime is therefore kept with
//! the id of the process that made it and made again in a child.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;

static RUNTIME: Mutex<Option<(u32, Arc<tokio::runtime::Runtime>)>> = Mutex::new(None);

/// How often a blocked call checks for Ctrl-C.
const SIGNAL_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// The runtime of this process.
pub fn runtime() -> PyResult<Arc<tokio::runtime::Runtime>> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, runtime)) = slot.as_ref()
        && *owner == pid
    {
        return Ok(runtime.clone());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("looseleaf")
        .build()
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("cannot start the I/O runtime: {e}")))?;
    let runtime = Arc::new(runtime);
    if let Some((_, inherited)) = slot.replace((pid, runtime.clone())) {
        // The parent's runtime has no threads in this process: leak it rather than run its
        // destructor, which would wait for threads that do not exist.
        std::mem::forget(inherited);
    }
    Ok(runtime)
}

/// Runs `future` to completion on the runtime with the GIL released, raising
/// `KeyboardInterrupt` (and dropping the future) if Ctrl-C is pressed meanwhile. A panic while
/// it runs is raised as a `LooseleafError`, never as pyo3's `PanicException` (which `except
/// Exception` does not catch).
pub fn wait<F>(py: Python<'_>, future: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let runtime = runtime()?;
    detached(py, || {
        runtime.block_on(async {
            tokio::pin!(future);
            loop {
                tokio::select! {
                    output = &mut future => return Ok(output),
                    _ = tokio::time::sleep(SIGNAL_CHECK_INTERVAL) => {
                        Python::attach(|py| py.check_signals())?;
                    }
                }
            }
        })
    })
}

/// Runs `work` with the GIL released: the one envelope of every blocking call of the bindings.
/// A panic inside is raised as a `LooseleafError` saying it is a bug, never as pyo3's
/// `PanicException` (which `except Exception` does not catch).
pub fn detached<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    F: FnOnce() -> PyResult<T> + Send,
    T: Send,
{
    py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))).unwrap_or_else(|panic| {
        Err(crate::errors::to_py_err(looseleaf::Error::internal(format!(
            "looseleaf failed unexpectedly (a bug; please report it): {}",
            panic_message(&panic)
        ))))
    })
}

/// [`block_on_interruptible`] from a thread that may hold the GIL again: Ctrl-C as an error
/// for Python to raise (the interrupt itself is armed again).
pub fn block_on_py<F: Future>(runtime: &tokio::runtime::Runtime, future: F) -> PyResult<F::Output> {
    block_on_interruptible(runtime, future)
        .map_err(|interrupted| crate::errors::to_py_err(looseleaf::Error::internal(interrupted)))
}

/// Runs `future` on `runtime` from a thread that does not hold the GIL (an Arrow consumer
/// calling a stream), checking for Ctrl-C every [`SIGNAL_CHECK_INTERVAL`]. On Ctrl-C the future
/// is dropped, the interrupt is armed again for Python to raise, and the error says so.
pub fn block_on_interruptible<F: Future>(runtime: &tokio::runtime::Runtime, future: F) -> Result<F::Output, String> {
    runtime.block_on(async {
        tokio::pin!(future);
        loop {
            tokio::select! {
                output = &mut future => return Ok(output),
                _ = tokio::time::sleep(SIGNAL_CHECK_INTERVAL) => {
                    let interrupted = Python::attach(|py| py.check_signals().is_err());
                    if interrupted {
                        // SAFETY: `PyErr_SetInterrupt` only sets a flag the interpreter checks
                        // later; it is documented as callable from any thread, with or without
                        // the GIL.
                        unsafe { pyo3::ffi::PyErr_SetInterrupt() };
                        return Err("interrupted (Ctrl-C)".to_string());
                    }
                }
            }
        }
    })
}

/// The message of a panic payload.
pub fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}
