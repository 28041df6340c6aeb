//! The native methods of `io.looseleaf.spark.NativeWriter`: a dataset write job's steps and the
//! file of each task (see [`crate::writing`]). The contracts of the crate docs hold: no panic
//! crosses into the JVM, every handle is checked ([`crate::registry`]: a writer finished or
//! aborted twice is an exception), and every wait is interruptible.

use jni::EnvUnowned;
use jni::objects::{JByteArray, JClass};
use jni::sys::jlong;

use std::sync::Mutex;

use crate::jvm::JvmThread;
use crate::lines;
use crate::policy::{Failure, ThrowLooseleafException};
use crate::registry::registry;
use crate::writing::{self, TaskWriter};

/// Begins a job: `request` is `directory`, `mode`, `pageSize`, `compression`, the partition
/// columns (tab-separated), then storage options; `schema` an IPC schema message. Returns the job's id.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeWriter_beginWrite<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    request: JByteArray<'local>,
    schema: JByteArray<'local>,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        let lines = lines(env, &request)?;
        let schema = writing::schema_of(&env.convert_byte_array(&schema)?)?;
        let id = writing::begin(&mut JvmThread::new(env), &lines, &schema)?;
        Ok(env.byte_array_from_slice(id.as_bytes())?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Commits a job: `request` is `directory`, `mode`, `id`, partition columns, then storage
/// options; `files` the
/// tasks' file names, one per line; `schema` the dataset's, as an IPC schema message.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeWriter_commitWrite<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    request: JByteArray<'local>,
    files: JByteArray<'local>,
    schema: JByteArray<'local>,
) {
    env.with_env(|env| -> Result<(), Failure> {
        let (lines, files) = (lines(env, &request)?, lines(env, &files)?);
        let schema = writing::schema_of(&env.convert_byte_array(&schema)?)?;
        writing::commit(&mut JvmThread::new(env), &lines, &files, &schema)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Aborts a job (`request` as for `commitWrite`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeWriter_abortWrite<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    request: JByteArray<'local>,
) {
    env.with_env(|env| -> Result<(), Failure> {
        let lines = lines(env, &request)?;
        writing::abort(&mut JvmThread::new(env), &lines)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Opens the files of one task attempt: `request` is `directory`, `mode`, `id`, partition
/// columns, partition, attempt, `pageSize`, `compression`, then the storage options.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeWriter_openWriter<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    request: JByteArray<'local>,
) -> jlong {
    env.with_env(|env| -> Result<jlong, Failure> {
        Ok(registry().insert(Mutex::new(TaskWriter::open(&lines(env, &request)?)?)))
    })
    .resolve::<ThrowLooseleafException>()
}

/// Writes the next piece of a task's Arrow IPC stream.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeWriter_write<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    writer: jlong,
    bytes: JByteArray<'local>,
) {
    env.with_env(|env| -> Result<(), Failure> {
        let bytes = env.convert_byte_array(&bytes)?;
        registry().lock::<TaskWriter, _>(writer, |w| w.write(&mut JvmThread::new(env), bytes))?
    })
    .resolve::<ThrowLooseleafException>()
}

/// Finishes a task's files and destroys the handle: returns one `name<TAB>rows<TAB>bytes` line
/// per file the job may commit (names are paths below the directory), none if the task wrote
/// no file or the job no longer wants them.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeWriter_finishWriter<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    writer: jlong,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        let writer = registry().remove::<Mutex<TaskWriter>>(writer)?;
        let files = lock(&writer).finish(&mut JvmThread::new(env))?;
        let lines: Vec<String> = files.iter().map(|f| format!("{}\t{}\t{}", f.name, f.num_rows, f.num_bytes)).collect();
        let text = lines.join("\n");
        Ok(env.byte_array_from_slice(text.as_bytes())?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Abandons a task's file and destroys the handle.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeWriter_abortWriter<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    writer: jlong,
) {
    env.with_env(|env| -> Result<(), Failure> {
        let writer = registry().remove::<Mutex<TaskWriter>>(writer)?;
        lock(&writer).abort(&mut JvmThread::new(env))
    })
    .resolve::<ThrowLooseleafException>()
}

/// The task writer of a removed handle (no other thread can reach it any more).
fn lock(writer: &Mutex<TaskWriter>) -> std::sync::MutexGuard<'_, TaskWriter> {
    writer.lock().unwrap_or_else(|p| p.into_inner())
}
