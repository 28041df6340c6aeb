//! JNI bindings of looseleaf for the JVM Spark connector (`jvm/`, classes
//! `io.looseleaf.spark.NativeReader`, whose methods are in [`native_reader`], and
//! `NativeWriter`, whose methods are in [`native_writer`]).
//!
//! The bindings translate only: a reader and a scan are Rust objects behind `long` handles, and
//! every batch crosses to the JVM as an Arrow IPC record batch message whose body stays in
//! native memory. The JVM wraps that body in an `ArrowBuf` (no copy) and frees it through
//! `NativeReader.freeBatch` ([`native_reader`]) when Spark is done with the batch.
//!
//! Contracts every entry point keeps:
//! - **No panic crosses into the JVM**: each body runs in `EnvUnowned::with_env`, which catches
//!   panics; errors and panics become an exception of the error's kind
//!   (`io.looseleaf.spark.LooseleafNotFoundException`, `...CorruptFileException`, ... all
//!   `LooseleafException`s) naming the file ([`policy`]).
//! - **Handles are checked, never trusted**: a handle is an index into a table of the objects
//!   the JVM holds ([`registry`]), not an address; a stale, closed, forged or wrong handle is an
//!   exception, never undefined behaviour.
//! - **Waits are interruptible**: a method that waits for I/O gives up within
//!   [`jvm::INTERRUPT_POLL`] of its Spark task being killed ([`jvm::JvmThread::wait`]).

mod jvm;
mod native_reader;
mod native_writer;
mod policy;
mod reading;
mod registry;
mod writing;

use jni::objects::JByteArray;

use policy::Failure;

/// The strings of a request (UTF-8, `\n`-separated: see `NativeReader.java`).
pub(crate) fn lines(env: &mut jni::Env<'_>, bytes: &JByteArray<'_>) -> Result<Vec<String>, Failure> {
    if bytes.is_null() {
        return Ok(Vec::new());
    }
    let bytes = env.convert_byte_array(bytes)?;
    let text = String::from_utf8(bytes).map_err(|_| Failure::new("a request that is not UTF-8"))?;
    Ok(if text.is_empty() { Vec::new() } else { text.split('\n').map(str::to_owned).collect() })
}
