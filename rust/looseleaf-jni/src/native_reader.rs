//! The native methods of `io.looseleaf.spark.NativeReader`: files opened, datasets listed and
//! planned, scans run, batches handed out (see [`crate::reading`]). The contracts of the crate
//! docs hold: no panic crosses into the JVM, every handle is checked ([`crate::registry`]), and
//! every wait is interruptible ([`crate::jvm`]).

use std::sync::Mutex;

use jni::EnvUnowned;
use jni::objects::{JByteArray, JClass};
use jni::sys::{jint, jlong};

use crate::jvm::JvmThread;
use crate::lines;
use crate::policy::{Failure, ThrowLooseleafException};
use crate::reading::{self, Batch, Reader, Scan};
use crate::registry::registry;

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
        let reader = Reader::open(&mut JvmThread::new(env), location, options)?;
        Ok(registry().insert(reader))
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
        let stream = reading::dataset(&mut JvmThread::new(env), location, options)?;
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
        let kept = reading::kept_files(&partitions, &filter)?;
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
        let options = reading::read_options(&lines(env, &options)?)?;
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
        registry().remove::<Reader>(reader)?;
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
    env.with_env(|_| -> Result<jlong, Failure> { Ok(registry().get::<Reader>(reader)?.num_rows() as jlong) })
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
        let message = registry().get::<Reader>(reader)?.schema_message()?;
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
        let reader = registry().get::<Reader>(reader)?;
        Ok(reader.projected_bytes(&mut JvmThread::new(env), columns)? as jlong)
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
        let reader = registry().get::<Reader>(reader)?;
        let Some(bounds) = reader.column_bounds(&mut JvmThread::new(env), &column)? else {
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
        let reader = registry().get::<Reader>(reader)?;
        let bounds: Vec<jlong> = reader
            .matching_rows(&mut JvmThread::new(env), &filter)?
            .iter()
            .flat_map(|r| [r.start as jlong, r.end as jlong])
            .collect();
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
    row_filter: JByteArray<'local>,
) -> jlong {
    env.with_env(|env| -> Result<jlong, Failure> {
        let columns = (!columns.is_null()).then(|| lines(env, &columns)).transpose()?;
        let options = reading::read_options(&lines(env, &options)?)?;
        let filter = lines(env, &filter)?.join("\n");
        let row_filter = lines(env, &row_filter)?.join("\n");
        let rows = row_range(start, end)?;
        let reader = registry().get::<Reader>(reader)?;
        let scan = reader.scan(&mut JvmThread::new(env), columns, rows, options, &filter, &row_filter)?;
        Ok(registry().insert(Mutex::new(scan)))
    })
    .resolve::<ThrowLooseleafException>()
}

fn row_range(start: jlong, end: jlong) -> Result<std::ops::Range<u64>, Failure> {
    let rows = u64::try_from(start).ok().zip(u64::try_from(end).ok()).filter(|(s, e)| s <= e);
    let (start, end) = rows.ok_or_else(|| Failure::invalid(format!("scan: bad row range {start}..{end}")))?;
    Ok(start..end)
}

/// The schema of an aggregation's partial results (an IPC schema message); throws the core's
/// error (`LooseleafUnsupportedException` for what it does not compute).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_aggregateSchema<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    reader: jlong,
    request: JByteArray<'local>,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        let request = lines(env, &request)?.join("\n");
        let message = registry().get::<Reader>(reader)?.aggregate_schema(&request)?;
        Ok(env.byte_array_from_slice(&message)?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// An aggregation of rows of one or more files (a scan handle whose one batch is the results):
/// `readers` are file handles, `rows` their row ranges as `start, end` pairs.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_aggregate<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    readers: jni::objects::JLongArray<'local>,
    rows: jni::objects::JLongArray<'local>,
    request: JByteArray<'local>,
    options: JByteArray<'local>,
) -> jlong {
    env.with_env(|env| -> Result<jlong, Failure> {
        let request = lines(env, &request)?.join("\n");
        let options = reading::read_options(&lines(env, &options)?)?;
        let mut handles = vec![0; readers.len(env)?];
        readers.get_region(env, 0, &mut handles)?;
        let mut bounds = vec![0; rows.len(env)?];
        rows.get_region(env, 0, &mut bounds)?;
        if bounds.len() != 2 * handles.len() {
            return Err(Failure::invalid("aggregate: a row range for each file"));
        }
        let files = handles.iter().map(|h| registry().get::<Reader>(*h)).collect::<Result<Vec<_>, _>>()?;
        let ranges = files
            .iter()
            .zip(bounds.chunks_exact(2))
            .map(|(file, pair)| Ok((file.as_ref(), row_range(pair[0], pair[1])?)))
            .collect::<Result<Vec<_>, Failure>>()?;
        let scan = reading::aggregate(&mut JvmThread::new(env), &ranges, &request, options)?;
        Ok(registry().insert(Mutex::new(scan)))
    })
    .resolve::<ThrowLooseleafException>()
}

/// The next batch of a scan (a handle for `batch*`/`freeBatch`), 0 at the end. Throws a
/// `LooseleafInterruptedException` if the task is killed while it waits.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_next<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    scan: jlong,
) -> jlong {
    env.with_env(|env| -> Result<jlong, Failure> {
        let batch = registry().lock::<Scan, _>(scan, |scan| scan.next(&mut JvmThread::new(env)))??;
        Ok(batch.map_or(0, |batch| registry().insert(batch)))
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
        let message = registry().lock::<Scan, _>(scan, |scan| scan.schema_message.clone())?;
        Ok(env.byte_array_from_slice(&message)?)
    })
    .resolve::<ThrowLooseleafException>()
}

/// A scan's counters so far, as `name=value` lines (see `Scan::metrics`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_scanStats<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    scan: jlong,
) -> JByteArray<'local> {
    env.with_env(|env| -> Result<JByteArray<'local>, Failure> {
        let text = registry().lock::<Scan, _>(scan, |scan| scan.metrics())?;
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
        registry().remove::<Mutex<Scan>>(scan)?;
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
        let batch = registry().get::<Batch>(batch)?;
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
    env.with_env(|_| -> Result<jlong, Failure> { Ok(registry().get::<Batch>(batch)?.body.as_ptr() as jlong) })
        .resolve::<ThrowLooseleafException>()
}

/// The length of a batch's IPC body.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_batchBodyLength<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    batch: jlong,
) -> jlong {
    env.with_env(|_| -> Result<jlong, Failure> { Ok(registry().get::<Batch>(batch)?.body.len() as jlong) })
        .resolve::<ThrowLooseleafException>()
}

/// Frees a batch: its body must no longer be read. A batch freed twice is an exception.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_freeBatch<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    batch: jlong,
) {
    env.with_env(|_| -> Result<(), Failure> {
        registry().remove::<Batch>(batch)?;
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
    env.with_env(|_| -> Result<jlong, Failure> { Ok(reading::live_batch_bytes() as jlong) })
        .resolve::<ThrowLooseleafException>()
}

/// Native objects the JVM holds handles to, in this process (for leak tests).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_looseleaf_spark_NativeReader_liveHandles<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> jlong {
    env.with_env(|_| -> Result<jlong, Failure> { Ok(registry().len() as jlong) }).resolve::<ThrowLooseleafException>()
}
