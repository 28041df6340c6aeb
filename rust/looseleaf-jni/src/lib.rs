//! JNI bindings of looseleaf for the JVM Spark connector (`jvm/`, classes
//! `io.looseleaf.spark.NativeReader`, whose methods are here, and `NativeWriter`, whose methods
//! are in [`native_writer`]).
//!
//! The bindings translate only: a reader and a scan are Rust objects behind `long` handles, and
//! every batch crosses to the JVM as an Arrow IPC record batch message whose body stays in
//! native memory. The JVM wraps that body in an `ArrowBuf` (no copy) and frees it through
//! [`Java_io_looseleaf_spark_NativeReader_freeBatch`] when Spark is done with the batch.
//!
//! Contracts every entry point keeps:
//! - **No panic crosses into the JVM**: each body runs in `EnvUnowned::with_env`, which catches
//!   panics; errors and panics become a `io.looseleaf.spark.LooseleafException` naming the file.
//! - **Handles** are created by `open`/`scan`/`next` and destroyed exactly once by
//!   `close`/`closeScan`/`freeBatch`; the Java side owns them (`AutoCloseable` wrappers) and
//!   never passes a handle after destroying it. A handle of 0 is refused, never dereferenced.

mod handles;
mod native_writer;
mod policy;
mod writing;

use jni::EnvUnowned;
use jni::objects::{JByteArray, JClass};
use jni::sys::{jint, jlong};

use handles::{Batch, Reader, Scan};
use policy::{Failure, ThrowLooseleafException};

/// The strings of a request (UTF-8, `\n`-separated: see `NativeReader.java`).
pub(crate) fn lines(env: &mut jni::Env<'_>, bytes: &JByteArray<'_>) -> Result<Vec<String>, Failure> {
    if bytes.is_null() {
        return Ok(Vec::new());
    }
    let bytes = env.convert_byte_array(bytes)?;
    let text = String::from_utf8(bytes).map_err(|_| Failure::new("a request that is not UTF-8"))?;
    Ok(if text.is_empty() { Vec::new() } else { text.split('\n').map(str::to_owned).collect() })
}

/// Opens a file: `request` is the location on the first line, then `key=value` storage options.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_open<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    request: JByteArray<'local>,
) -> jlong {
    env.with_env(|env| -> Result<jlong, Failure> {
        let lines = lines(env, &request)?;
        let (location, options) = lines.split_first().ok_or_else(|| Failure::new("open: no location"))?;
        let reader = Reader::open(location, options)?;
        Ok(handles::into_handle(reader))
    })
    .resolve::<ThrowLooseleafException>()
}

/// The dataset a path names (`looseleaf::dataset::Dataset`): an Arrow IPC stream of its files
/// and their partition values (see `handles::dataset`). `request` is as for `open`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_dataset<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    request: JByteArray<'local>,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        let lines = lines(env, &request)?;
        let (location, options) = lines.split_first().ok_or_else(|| Failure::new("dataset: no location"))?;
        let stream = handles::dataset(location, options)?;
        Ok(env.byte_array_from_slice(&stream)?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// The indices of the files of a `dataset` stream that a filter on partition columns does not
/// rule out (see `handles::kept_files`): `filter` is the core's JSON form.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_keptFiles<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    partitions: JByteArray<'local>,
    filter: JByteArray<'local>,
) -> jni::objects::JLongArray<'local> {
    env.with_env(|env| -> Result<jni::objects::JLongArray<'local>, Failure> {
        let partitions = env.convert_byte_array(&partitions)?;
        let filter = lines(env, &filter)?.join("\n");
        let kept = handles::kept_files(&partitions, &filter)?;
        let out = env.new_long_array(kept.len())?;
        out.set_region(env, 0, &kept)?;
        Ok(out)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Checks read options (`name=value` lines, Spark's spellings) and returns them in the core's
/// names and forms, the same lines; throws naming a bad or unknown option.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_readOptions<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    options: JByteArray<'local>,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        let options = handles::read_options(&lines(env, &options)?)?;
        let text: Vec<String> = options.to_text().into_iter().map(|(name, value)| format!("{name}={value}")).collect();
        Ok(env.byte_array_from_slice(text.join("\n").as_bytes())?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Rows per batch of a read that sets none and whose rows are not wide (the core's default).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_defaultBatchSize<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> jint {
    env.with_env(|_| -> Result<jint, Failure> { Ok(looseleaf::DEFAULT_BATCH_SIZE.get() as jint) })
        .resolve::<ThrowLooseleafException>()
}

/// Closes a reader.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_close<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    reader: jlong,
) {
    env.with_env(|_| -> Result<(), Failure> {
        // SAFETY: the Java side passes each handle from `open` to `close` once (module docs).
        drop(unsafe { handles::from_handle::<Reader>(reader)? });
        Ok(())
    })
    .resolve::<ThrowLooseleafException>()
}

/// The number of rows of a reader's file.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_numRows<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    reader: jlong,
) -> jlong {
    env.with_env(|_| -> Result<jlong, Failure> {
        // SAFETY: a live handle from `open` (module docs).
        let reader = unsafe { handles::borrow::<Reader>(reader)? };
        Ok(reader.num_rows() as jlong)
    })
    .resolve::<ThrowLooseleafException>()
}

/// The file's schema in the Arrow form Spark reads, as an IPC schema message.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_schema<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    reader: jlong,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        // SAFETY: a live handle from `open` (module docs).
        let reader = unsafe { handles::borrow::<Reader>(reader)? };
        let message = reader.schema_message()?;
        Ok(env.byte_array_from_slice(&message)?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Bytes a read of `columns` (all when `null`) over every row fetches, from its I/O plan.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_projectedBytes<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    reader: jlong,
    columns: JByteArray<'local>,
) -> jlong {
    env.with_env(|env| -> Result<jlong, Failure> {
        let columns = (!columns.is_null()).then(|| lines(env, &columns)).transpose()?;
        // SAFETY: a live handle from `open` (module docs).
        let reader = unsafe { handles::borrow::<Reader>(reader)? };
        Ok(reader.projected_bytes(columns)? as jlong)
    })
    .resolve::<ThrowLooseleafException>()
}

/// The smallest and largest values of a flat top-level column from its statistics, as two
/// lines (an integer in stored units, or `null` when every value is null), or `null` when the
/// statistics cannot tell (see `FileReader::column_bounds`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_columnBounds<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    reader: jlong,
    column: JByteArray<'local>,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        let column = lines(env, &column)?.join("\n");
        // SAFETY: a live handle from `open` (module docs).
        let reader = unsafe { handles::borrow::<Reader>(reader)? };
        let Some(bounds) = reader.column_bounds(&column)? else {
            return Ok(JByteArray::default());
        };
        let text = |v: Option<i128>| v.map_or_else(|| "null".to_owned(), |v| v.to_string());
        Ok(env.byte_array_from_slice(format!("{}\n{}", text(bounds.min), text(bounds.max)).as_bytes())?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// The row ranges of a reader's file whose zones `filter` (the core's JSON form) does not rule
/// out, as `start end` pairs of a `long[]`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_matchingRows<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    reader: jlong,
    filter: JByteArray<'local>,
) -> jni::objects::JLongArray<'local> {
    env.with_env(|env| -> Result<jni::objects::JLongArray<'local>, Failure> {
        let filter = lines(env, &filter)?.join("\n");
        // SAFETY: a live handle from `open` (module docs).
        let reader = unsafe { handles::borrow::<Reader>(reader)? };
        let bounds: Vec<jlong> =
            reader.matching_rows(&filter)?.iter().flat_map(|r| [r.start as jlong, r.end as jlong]).collect();
        let out = env.new_long_array(bounds.len())?;
        out.set_region(env, 0, &bounds)?;
        Ok(out)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Starts a read of `columns` (all when `null`) over rows `start..end` with the read options
/// `options` (`name=value` lines, see `readOptions`), skipping the zones `filter` (the core's
/// JSON form; empty or `null` for none) rules out.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_scan<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    reader: jlong,
    columns: JByteArray<'local>,
    start: jlong,
    end: jlong,
    options: JByteArray<'local>,
    filter: JByteArray<'local>,
) -> jlong {
    env.with_env(|env| -> Result<jlong, Failure> {
        let columns = (!columns.is_null()).then(|| lines(env, &columns)).transpose()?;
        let options = handles::read_options(&lines(env, &options)?)?;
        let filter = lines(env, &filter)?.join("\n");
        let rows = u64::try_from(start).ok().zip(u64::try_from(end).ok()).filter(|(s, e)| s <= e);
        let (start, end) = rows.ok_or_else(|| Failure::new(format!("scan: bad row range {start}..{end}")))?;
        // SAFETY: a live handle from `open` (module docs).
        let reader = unsafe { handles::borrow::<Reader>(reader)? };
        let scan = reader.scan(columns, start..end, options, &filter)?;
        Ok(handles::into_handle(scan))
    })
    .resolve::<ThrowLooseleafException>()
}

/// The next batch of a scan (a handle for `batch*`/`freeBatch`), 0 at the end.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_next<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    scan: jlong,
) -> jlong {
    env.with_env(|_| -> Result<jlong, Failure> {
        // SAFETY: a live handle from `scan`, used by one Java thread at a time (module docs).
        let scan = unsafe { handles::borrow_mut::<Scan>(scan)? };
        Ok(scan.next()?.map_or(0, handles::into_handle))
    })
    .resolve::<ThrowLooseleafException>()
}

/// The schema of a scan's batches, as an IPC schema message.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_scanSchema<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    scan: jlong,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        // SAFETY: a live handle from `scan` (module docs).
        let scan = unsafe { handles::borrow::<Scan>(scan)? };
        Ok(env.byte_array_from_slice(&scan.schema_message)?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// A scan's I/O so far, as `name=value` lines: `bytesRead` and `reads` (storage reads).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_scanStats<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    scan: jlong,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        // SAFETY: a live handle from `scan` (module docs).
        let scan = unsafe { handles::borrow::<Scan>(scan)? };
        let stats = scan.io_stats();
        let text = format!("bytesRead={}\nreads={}", stats.bytes_read, stats.reads);
        Ok(env.byte_array_from_slice(text.as_bytes())?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Ends a scan (before its end or after).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_closeScan<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    scan: jlong,
) {
    env.with_env(|_| -> Result<(), Failure> {
        // SAFETY: each handle from `scan` is closed once (module docs).
        drop(unsafe { handles::from_handle::<Scan>(scan)? });
        Ok(())
    })
    .resolve::<ThrowLooseleafException>()
}

/// A batch's IPC message header (a flatbuffer `Message` holding a `RecordBatch`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_batchHeader<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    batch: jlong,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        // SAFETY: a live handle from `next` (module docs).
        let batch = unsafe { handles::borrow::<Batch>(batch)? };
        Ok(env.byte_array_from_slice(&batch.header)?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// The address of a batch's IPC body; valid until `freeBatch`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_batchBodyAddress<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    batch: jlong,
) -> jlong {
    env.with_env(|_| -> Result<jlong, Failure> {
        // SAFETY: a live handle from `next` (module docs).
        let batch = unsafe { handles::borrow::<Batch>(batch)? };
        Ok(batch.body.as_ptr() as jlong)
    })
    .resolve::<ThrowLooseleafException>()
}

/// The length of a batch's IPC body.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_batchBodyLength<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    batch: jlong,
) -> jlong {
    env.with_env(|_| -> Result<jlong, Failure> {
        // SAFETY: a live handle from `next` (module docs).
        let batch = unsafe { handles::borrow::<Batch>(batch)? };
        Ok(batch.body.len() as jlong)
    })
    .resolve::<ThrowLooseleafException>()
}

/// Frees a batch: its body must no longer be read.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_freeBatch<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    batch: jlong,
) {
    env.with_env(|_| -> Result<(), Failure> {
        // SAFETY: each handle from `next` is freed once, after its last use (module docs).
        drop(unsafe { handles::from_handle::<Batch>(batch)? });
        Ok(())
    })
    .resolve::<ThrowLooseleafException>()
}

/// Bytes of batch bodies allocated and not yet freed, in this process (for leak tests).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_liveBatchBytes<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> jlong {
    env.with_env(|_| -> Result<jlong, Failure> { Ok(handles::live_batch_bytes() as jlong) })
        .resolve::<ThrowLooseleafException>()
}
