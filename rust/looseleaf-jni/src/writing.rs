//! The write side: the steps of a dataset write job (`looseleaf::dataset::WriteJob`, the same
//! protocol the Python data source drives), and the file one task writes from the Arrow IPC
//! stream the JVM sends it.
//!
//! Requests are lines (see `NativeWriter.java`): a job is named by its directory, its mode
//! (`overwrite` or `append`), its id and its partition columns (one line, tab-separated, empty
//! for none); the storage options follow as `key=value` lines.

use arrow_buffer::Buffer;
use arrow_ipc::reader::StreamDecoder;
use arrow_schema::{Schema, SchemaRef};
use looseleaf::dataset::{CommitMode, TaskFile, WriteJob};
use looseleaf::{ByteCount, Location, WriterOptions};

use crate::jvm::JvmThread;
use crate::policy::Failure;
use crate::reading::storage_options;

fn mode(name: &str) -> Result<CommitMode, Failure> {
    match name {
        "overwrite" => Ok(CommitMode::Overwrite),
        "append" => Ok(CommitMode::Append),
        other => Err(Failure::new(format!("a write mode the writer does not know: {other:?}"))),
    }
}

/// The schema of an IPC schema message (as Java's `MessageSerializer.serialize` writes it).
pub fn schema_of(message: &[u8]) -> Result<SchemaRef, Failure> {
    let schema = arrow_ipc::convert::try_schema_from_ipc_buffer(message)
        .map_err(|e| Failure::new(format!("a schema message that does not parse: {e}")))?;
    Ok(SchemaRef::new(schema))
}

/// The writer options of a page size (a size such as `8MiB`, empty for the default) and a
/// compression (`none`, `lz4`, `zstd`), named after the Spark options in errors.
fn writer_options(page_size: &str, compression: &str) -> Result<WriterOptions, Failure> {
    let options = WriterOptions::default()
        .with_compression_named(&compression.to_ascii_lowercase(), 3)
        .map_err(|e| Failure::new(format!("option compression: {e}")))?;
    if page_size.is_empty() {
        return Ok(options);
    }
    match page_size.parse::<ByteCount>() {
        Ok(size) if size.get() > 0 => Ok(options.with_page_size(size.get())),
        Ok(_) => Err(Failure::new("option pageSize must be at least 1 byte")),
        Err(e) => Err(Failure::new(format!("option pageSize: {e}"))),
    }
}

/// The partition columns of a request line (tab-separated, empty for none).
fn partition_by(line: &str) -> Vec<String> {
    line.split('\t').filter(|c| !c.is_empty()).map(str::to_owned).collect()
}

/// Begins a job (`[directory, mode, page size, compression, partition columns, storage
/// options…]`) writing `schema`; returns its id. The page size, compression and partition
/// columns are checked here, before any task runs.
pub fn begin(jvm: &mut JvmThread<'_, '_>, lines: &[String], schema: &Schema) -> Result<String, Failure> {
    let [directory, mode_name, page_size, compression, partitions, options @ ..] = lines else {
        return Err(Failure::new(
            "beginWrite: expected a directory, a mode, a page size, a compression and partition columns",
        ));
    };
    writer_options(page_size, compression)?;
    let (directory, options) = (Location::parse(directory)?, storage_options(options)?);
    let partition_by = partition_by(partitions);
    let job = jvm.wait(WriteJob::begin(&directory, &options, schema, mode(mode_name)?, &partition_by))??;
    Ok(job.id().to_owned())
}

/// The job `[directory, mode, id, partition columns, storage options…]` names, and the lines
/// after its header.
fn job(lines: &[String], header: usize) -> Result<(WriteJob, &[String]), Failure> {
    let (Some([directory, mode_name, id, partitions]), Some(rest)) = (lines.get(..4), lines.get(4..)) else {
        return Err(Failure::new("expected a directory, a mode, a job id and partition columns"));
    };
    let (fields, options) = rest.split_at(header.min(rest.len()));
    let options = storage_options(options)?;
    let job = WriteJob::resume(Location::parse(directory)?, options, id.clone(), mode(mode_name)?)
        .with_partition_by(partition_by(partitions));
    Ok((job, fields))
}

/// Commits the job of `lines` with its tasks' `files` and the dataset's `schema`.
pub fn commit(
    jvm: &mut JvmThread<'_, '_>,
    lines: &[String],
    files: &[String],
    schema: &SchemaRef,
) -> Result<(), Failure> {
    let (job, _) = job(lines, 0)?;
    Ok(jvm.wait(job.commit(files, schema))??)
}

/// Aborts the job of `lines`.
pub fn abort(jvm: &mut JvmThread<'_, '_>, lines: &[String]) -> Result<(), Failure> {
    let (job, _) = job(lines, 0)?;
    Ok(jvm.wait(job.abort())??)
}

/// The files one task attempt writes (`looseleaf::dataset::TaskWriter`: one, or one per
/// partition directory): created at its first row, from the IPC stream of its batches (a schema
/// message, then record batch messages), in whatever pieces they arrive.
pub struct TaskWriter {
    job: WriteJob,
    partition: u64,
    attempt: u64,
    location: Location,
    writer_options: WriterOptions,
    decoder: StreamDecoder,
    writer: Option<looseleaf::dataset::TaskWriter>,
}

impl TaskWriter {
    /// Number of header lines after the job's: partition, attempt, page size, compression (as
    /// for [`begin`]).
    const HEADER: usize = 4;

    /// A task's writer: `lines` are the job's, then the header fields, then storage options.
    pub fn open(lines: &[String]) -> Result<Self, Failure> {
        let (job, fields) = job(lines, Self::HEADER)?;
        let [partition, attempt, page_size, compression] = fields else {
            return Err(Failure::new("openWriter: expected a partition, an attempt, a page size and a compression"));
        };
        let number = |what: &str, text: &str| {
            text.parse::<u64>().map_err(|_| Failure::new(format!("openWriter: {what} {text:?} is not a number")))
        };
        let writer_options = writer_options(page_size, compression)?;
        let (partition, attempt) = (number("partition", partition)?, number("attempt", attempt)?);
        let location = job.directory().child(&job.task_file(partition, attempt))?;
        Ok(Self { job, partition, attempt, location, writer_options, decoder: StreamDecoder::new(), writer: None })
    }

    /// Writes the batches of the next piece of the IPC stream.
    pub fn write(&mut self, jvm: &mut JvmThread<'_, '_>, bytes: Vec<u8>) -> Result<(), Failure> {
        let mut buffer = Buffer::from(bytes);
        while !buffer.is_empty() {
            let Some(batch) = self.decoder.decode(&mut buffer).map_err(|e| self.fail(e.to_string()))? else {
                continue;
            };
            if batch.num_rows() == 0 {
                continue;
            }
            if self.writer.is_none() {
                let writer =
                    self.job.task_writer(self.partition, self.attempt, batch.schema(), self.writer_options.clone())?;
                self.writer = Some(writer);
            }
            if let Some(writer) = self.writer.as_mut() {
                jvm.wait(writer.write(&batch))??;
            }
        }
        Ok(())
    }

    fn fail(&self, why: String) -> Failure {
        Failure::new(format!("{}: a batch from Spark that does not decode: {why}", self.location))
    }

    /// Finishes the files and asks the job whether it still wants them (see
    /// `WriteJob::keep_task_file`): the files to commit.
    pub fn finish(&mut self, jvm: &mut JvmThread<'_, '_>) -> Result<Vec<TaskFile>, Failure> {
        self.decoder.finish().map_err(|e| self.fail(e.to_string()))?;
        let Some(writer) = self.writer.take() else {
            return Ok(Vec::new());
        };
        Ok(jvm.wait(writer.finish())??)
    }

    /// Abandons the files: nothing is left of them.
    pub fn abort(&mut self, jvm: &mut JvmThread<'_, '_>) -> Result<(), Failure> {
        if let Some(writer) = self.writer.take() {
            jvm.wait(writer.abort())??;
        }
        Ok(())
    }
}
