//! The Rust objects behind the JVM's `long` handles: an open file, a running scan, an encoded
//! batch; and the one tokio runtime they run on.

use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::RecordBatch;
use arrow_ipc::writer::{DictionaryTracker, IpcDataGenerator, IpcWriteContext, IpcWriteOptions};
use arrow_schema::SchemaRef;
use futures::StreamExt;
use looseleaf::filter::Predicate;
use looseleaf::{
    ColumnBounds, FileReader, Location, ReadOptions, RecordBatchStream, RowSelection, StorageOptions, spark_form,
};

use crate::policy::Failure;

/// Bytes of [`Batch`] bodies alive in this process.
static LIVE_BATCH_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Bytes of batch bodies allocated and not yet freed.
pub fn live_batch_bytes() -> usize {
    LIVE_BATCH_BYTES.load(Ordering::Relaxed)
}

/// The process's runtime, shared by every reader: Spark runs a task per core, each blocking its
/// own JVM thread on it while the runtime's workers do the I/O and decoding.
pub(crate) fn runtime() -> Result<&'static tokio::runtime::Runtime, Failure> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("looseleaf")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Failure::new(format!("cannot start the I/O runtime: {e}")))
}

/// Moves `value` to the heap and returns its address as a handle.
pub fn into_handle<T>(value: T) -> i64 {
    Box::into_raw(Box::new(value)) as i64
}

fn pointer<T>(handle: i64) -> Result<*mut T, Failure> {
    if handle == 0 {
        return Err(Failure::new(format!("a null {} handle", std::any::type_name::<T>())));
    }
    Ok(handle as *mut T)
}

/// Takes back the value behind `handle`.
///
/// # Safety
/// `handle` came from [`into_handle`] with the same `T` and is not used again.
pub unsafe fn from_handle<T>(handle: i64) -> Result<Box<T>, Failure> {
    // SAFETY: the caller's contract.
    Ok(unsafe { Box::from_raw(pointer::<T>(handle)?) })
}

/// Borrows the value behind `handle`.
///
/// # Safety
/// `handle` came from [`into_handle`] with the same `T` and is still live.
pub unsafe fn borrow<'a, T>(handle: i64) -> Result<&'a T, Failure> {
    // SAFETY: the caller's contract.
    Ok(unsafe { &*pointer::<T>(handle)? })
}

/// Borrows the value behind `handle` mutably.
///
/// # Safety
/// As [`borrow`], and no other borrow of it is alive (one Java thread uses it at a time).
pub unsafe fn borrow_mut<'a, T>(handle: i64) -> Result<&'a mut T, Failure> {
    // SAFETY: the caller's contract.
    Ok(unsafe { &mut *pointer::<T>(handle)? })
}

/// `schema` as an IPC schema message.
fn schema_message(schema: &SchemaRef) -> Vec<u8> {
    IpcDataGenerator::default()
        .schema_to_bytes_with_dictionary_tracker(
            schema,
            &mut DictionaryTracker::new(false),
            &IpcWriteOptions::default(),
        )
        .ipc_message
}

/// Storage options from `key=value` lines.
pub(crate) fn storage_options(lines: &[String]) -> Result<StorageOptions, Failure> {
    lines.iter().map(|line| line.split_once('=').ok_or_else(|| Failure::new("a storage option without '='"))).collect()
}

/// Schema metadata key of the dataset's schema file in [`dataset`]'s stream.
const SCHEMA_FILE_KEY: &str = "looseleaf.schema_file";

/// The dataset `location` names (`looseleaf::dataset::Dataset`: its files, with the partition
/// columns of `key=value/` directories), as an Arrow IPC stream of one batch: a `file` column
/// (its data files, in order) then the partition columns (each file's values), the schema
/// file (if any other than the first data file) in the schema's metadata.
pub fn dataset(location: &str, options: &[String]) -> Result<Vec<u8>, Failure> {
    use looseleaf::dataset::{Dataset, DatasetOptions, DatasetSource};
    let storage = storage_options(options)?;
    let runtime = runtime()?;
    let parsed = Location::parse(location)?;
    // Only a directory has a schema file (a glob or a file does not resolve as one).
    let schema_file = runtime.block_on(looseleaf::dataset::resolve(&parsed, &storage)).ok().and_then(|d| d.schema_file);
    let opening =
        Dataset::open(DatasetSource::Uri(location.to_owned()), DatasetOptions { storage, ..DatasetOptions::default() });
    let dataset = runtime.block_on(opening)?;
    let partitions = dataset.file_partitions()?;
    let files: Vec<&str> = dataset.files().iter().map(|f| f.reader.location()).collect();
    let mut fields = vec![std::sync::Arc::new(arrow_schema::Field::new("file", arrow_schema::DataType::Utf8, false))];
    fields.extend(partitions.schema().fields().iter().cloned());
    let mut columns: Vec<arrow_array::ArrayRef> = vec![std::sync::Arc::new(arrow_array::StringArray::from(files))];
    columns.extend(partitions.columns().iter().cloned());
    let metadata: std::collections::HashMap<String, String> =
        schema_file.map(|f| [(SCHEMA_FILE_KEY.to_owned(), f)].into()).unwrap_or_default();
    let schema = std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(fields, metadata));
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(partitions.num_rows()));
    let batch = RecordBatch::try_new_with_options(schema.clone(), columns, &options)
        .map_err(|e| Failure::new(format!("{location}: {e}")))?;
    let encode = || -> Result<Vec<u8>, arrow_schema::ArrowError> {
        let mut writer = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &schema)?;
        writer.write(&batch)?;
        writer.into_inner()
    };
    encode().map_err(|e| Failure::new(format!("{location}: encoding the dataset's files: {e}")))
}

/// The files of a [`dataset`] stream (`partitions`, as [`dataset`] made it) that `filter` does
/// not rule out by their partition values (`looseleaf::filter::partition_rules_out`), by
/// index. `filter` is the core's JSON form, its constants typed values in the tree.
pub fn kept_files(partitions: &[u8], filter: &str) -> Result<Vec<i64>, Failure> {
    use arrow_array::{Array, ArrayRef};
    let filter = Predicate::from_json(filter, &[])?;
    let reader = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(partitions), None)
        .map_err(|e| Failure::new(format!("a dataset stream that does not decode: {e}")))?;
    let mut kept = Vec::new();
    let mut index = 0i64;
    for batch in reader {
        let batch = batch.map_err(|e| Failure::new(format!("a dataset stream that does not decode: {e}")))?;
        let fields: arrow_schema::Fields = batch.schema().fields().iter().skip(1).cloned().collect();
        for row in 0..batch.num_rows() {
            let values: Vec<ArrayRef> = batch.columns().iter().skip(1).map(|c| c.slice(row, 1)).collect();
            if !looseleaf::filter::partition_rules_out(&filter, &fields, &values)? {
                kept.push(index);
            }
            index += 1;
        }
    }
    Ok(kept)
}

/// Read options from `name=value` lines (Spark's spellings, see `looseleaf::read_option_name`).
pub fn read_options(lines: &[String]) -> Result<ReadOptions, Failure> {
    let pairs = lines
        .iter()
        .map(|line| line.split_once('=').ok_or_else(|| Failure::new(format!("a read option without '=': {line:?}"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReadOptions::from_text(pairs)?)
}

/// A filter in the core's JSON form (`None` for an empty request).
fn filter(json: &str) -> Result<Option<Predicate>, Failure> {
    if json.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(Predicate::from_json(json, &[])?))
}

/// An open file.
pub struct Reader {
    reader: FileReader,
    /// The Arrow schema Spark reads, as an IPC schema message.
    schema_message: Result<Vec<u8>, String>,
}

impl Reader {
    /// Opens `location` with `options` (`key=value` lines).
    pub fn open(location: &str, options: &[String]) -> Result<Self, Failure> {
        let options = storage_options(options)?;
        let location = Location::parse(location)?;
        let reader = runtime()?.block_on(FileReader::open_location(&location, &options))?;
        let schema_message = spark_form::schema(reader.schema())
            .map(|schema| schema_message(&schema))
            .map_err(|e| e.with_location(reader.location()).to_string());
        Ok(Self { reader, schema_message })
    }

    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        self.reader.num_rows()
    }

    /// The schema message, or why Spark cannot read the file.
    pub fn schema_message(&self) -> Result<Vec<u8>, Failure> {
        self.schema_message.clone().map_err(Failure::new)
    }

    /// The bounds of a column from its statistics (see `FileReader::column_bounds`).
    pub fn column_bounds(&self, column: &str) -> Result<Option<ColumnBounds>, Failure> {
        Ok(runtime()?.block_on(self.reader.column_bounds(column))?)
    }

    /// The row ranges whose zones `filter` (the core's JSON form) does not rule out (see
    /// `FileReader::rows_matching_statistics`).
    pub fn matching_rows(&self, filter_json: &str) -> Result<Vec<Range<u64>>, Failure> {
        let Some(filter) = filter(filter_json)? else { return Ok(vec![0..self.reader.num_rows()]) };
        let selection = runtime()?.block_on(self.reader.rows_matching_statistics(&filter))?;
        Ok(selection.ranges().to_vec())
    }

    /// Bytes a read of `columns` fetches.
    pub fn projected_bytes(&self, columns: Option<Vec<String>>) -> Result<u64, Failure> {
        let read = match columns {
            Some(columns) => self.reader.read().with_columns(columns),
            None => self.reader.read(),
        };
        Ok(runtime()?.block_on(read.plan())?.total().bytes)
    }

    /// Starts a read of `rows` with `options`, less the zones `filter_json` rules out.
    pub fn scan(
        &self,
        columns: Option<Vec<String>>,
        rows: Range<u64>,
        options: ReadOptions,
        filter_json: &str,
    ) -> Result<Scan, Failure> {
        self.schema_message()?;
        let filter = filter(filter_json)?;
        let runtime = runtime()?;
        RowSelection::try_range(rows.clone(), self.reader.num_rows())?;
        let mut selection = RowSelection::range(rows);
        if let Some(filter) = &filter {
            selection = selection.intersect(&runtime.block_on(self.reader.rows_matching_statistics(filter))?);
        }
        let read = self.reader.read().with_selection(selection).with_options(options);
        let read = match columns {
            Some(columns) => read.with_columns(columns),
            None => read,
        };
        let stream = runtime.block_on(read.stream())?;
        let spark_schema = spark_form::schema(stream.schema()).map_err(|e| e.with_location(self.reader.location()))?;
        Ok(Scan {
            stream,
            schema_message: schema_message(&spark_schema),
            spark_schema,
            location: self.reader.location().to_owned(),
            generator: IpcDataGenerator::default(),
            dictionaries: DictionaryTracker::new(false),
            options: IpcWriteOptions::default(),
            context: IpcWriteContext::default(),
        })
    }
}

/// A running read, encoding each batch as an IPC message.
pub struct Scan {
    stream: RecordBatchStream,
    /// The schema of the batches, as an IPC schema message.
    pub schema_message: Vec<u8>,
    /// The Arrow form Spark reads of the stream's batches.
    spark_schema: SchemaRef,
    location: String,
    generator: IpcDataGenerator,
    dictionaries: DictionaryTracker,
    options: IpcWriteOptions,
    context: IpcWriteContext,
}

impl Scan {
    /// The read's I/O counters so far.
    pub fn io_stats(&self) -> looseleaf::IoStats {
        self.stream.io_stats()
    }

    /// The next batch, `None` at the end.
    pub fn next(&mut self) -> Result<Option<Batch>, Failure> {
        let Some(batch) = runtime()?.block_on(self.stream.next()).transpose()? else {
            return Ok(None);
        };
        let batch = spark_form::batch(&batch, &self.spark_schema).map_err(|e| e.with_location(&self.location))?;
        self.encode(&batch).map(Some)
    }

    fn encode(&mut self, batch: &RecordBatch) -> Result<Batch, Failure> {
        let (dictionaries, encoded) = self
            .generator
            .encode(batch, &mut self.dictionaries, &self.options, &mut self.context)
            .map_err(|e| Failure::new(format!("encoding a batch for the JVM: {e}")))?;
        if !dictionaries.is_empty() {
            return Err(Failure::new("dictionary-encoded batches do not cross to the JVM"));
        }
        Ok(Batch::new(encoded.ipc_message, encoded.arrow_data))
    }
}

/// One encoded batch: an IPC `RecordBatch` message header and its body.
pub struct Batch {
    /// The flatbuffer `Message`.
    pub header: Vec<u8>,
    /// The body the message's buffers point into.
    pub body: Vec<u8>,
}

impl Batch {
    fn new(header: Vec<u8>, body: Vec<u8>) -> Self {
        LIVE_BATCH_BYTES.fetch_add(body.len(), Ordering::Relaxed);
        Self { header, body }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        LIVE_BATCH_BYTES.fetch_sub(self.body.len(), Ordering::Relaxed);
    }
}
