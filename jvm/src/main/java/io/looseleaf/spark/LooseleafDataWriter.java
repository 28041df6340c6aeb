package io.looseleaf.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.execution.arrow.ArrowWriter;

/**
 * One task attempt's files (one, or one per partition directory: split by the core): rows go into Arrow vectors (Spark's own {@code ArrowWriter}), each
 * full batch crosses to the core as a piece of an Arrow IPC stream, and the core writes the file
 * in place, finished by {@link #commit} (Spark commits one attempt per partition) or deleted by
 * {@link #abort}. {@link #close} frees the vectors and, if neither ran, abandons the file.
 */
final class LooseleafDataWriter implements DataWriter<InternalRow> {
  /** A batch is also handed over once its vectors hold this many bytes (wide or long rows). */
  private static final long BATCH_BYTES = 16L << 20;

  /**
   * What a task wrote: its files (paths below the directory; none if it had no rows), rows and
   * bytes.
   */
  record TaskFiles(java.util.List<String> names, long rows, long bytes) implements WriterCommitMessage {}

  private final int batchSize;
  private final BufferAllocator allocator = new RootAllocator();
  private final VectorSchemaRoot root;
  private final ArrowWriter rows;
  private final ByteArrayOutputStream stream = new ByteArrayOutputStream();
  private final ArrowStreamWriter streamWriter;
  private long handle;
  private int batchRows;

  LooseleafDataWriter(WriteJobSpec job, int partition, long attempt) {
    NativeReader.load();
    batchSize = job.batchSize;
    root = VectorSchemaRoot.create(job.arrowSchema(), allocator);
    rows = ArrowWriter.create(root);
    streamWriter = new ArrowStreamWriter(root, null, Channels.newChannel(stream));
    handle = NativeWriter.openWriter(job.taskRequest(partition, attempt));
    try {
      streamWriter.start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void write(InternalRow row) {
    rows.write(row);
    batchRows++;
    if (batchRows >= batchSize || (batchRows % 256 == 0 && rows.sizeInBytes() >= BATCH_BYTES)) {
      flush();
    }
  }

  private void flush() {
    if (batchRows == 0) {
      return;
    }
    rows.finish();
    try {
      streamWriter.writeBatch();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    send();
    rows.reset();
    batchRows = 0;
  }

  private void send() {
    NativeWriter.write(handle(), stream.toByteArray());
    stream.reset();
  }

  private long handle() {
    if (handle == 0) {
      throw new IllegalStateException("the task's file is already finished or abandoned");
    }
    return handle;
  }

  @Override
  public WriterCommitMessage commit() {
    flush();
    try {
      streamWriter.end();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    send();
    long h = handle();
    handle = 0;
    String outcome = new String(NativeWriter.finishWriter(h), StandardCharsets.UTF_8);
    java.util.List<String> names = new java.util.ArrayList<>();
    long rowsWritten = 0;
    long bytesWritten = 0;
    for (String line : outcome.isEmpty() ? new String[0] : outcome.split("\n")) {
      String[] fields = line.split("\t");
      names.add(fields[0]);
      rowsWritten += Long.parseLong(fields[1]);
      bytesWritten += Long.parseLong(fields[2]);
    }
    return new TaskFiles(names, rowsWritten, bytesWritten);
  }

  @Override
  public void abort() {
    if (handle != 0) {
      long h = handle;
      handle = 0;
      NativeWriter.abortWriter(h);
    }
  }

  @Override
  public void close() {
    try {
      abort();
    } finally {
      root.close();
      allocator.close();
    }
  }
}
