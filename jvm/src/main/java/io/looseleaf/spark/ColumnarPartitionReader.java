package io.looseleaf.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.ColumnVectorUtils;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads one {@link FileRange} as columnar batches whose Arrow buffers are the native decoder's
 * output: each batch's IPC body stays in native memory, wrapped in one {@link ArrowBuf} whose
 * release frees it ({@link NativeReader#freeBatch}). A batch stays valid until the next call to
 * {@link #next} (Spark's contract), which closes its vectors and so releases its body;
 * {@link #close} releases the last one. The reader's own allocator is closed last, so a leaked
 * buffer fails the task instead of growing the JVM's native memory.
 *
 * <p>A range with an aggregation reads one batch, the results of its rows: partial, or final
 * for a complete aggregation, which covers further ranges (files) too.
 *
 * <p>The file's partition values (if the read has partition columns) follow its columns in every
 * batch as Spark's {@link ConstantColumnVector}s; a read of partition columns only reads no
 * column of the file, only its row count.
 */
final class ColumnarPartitionReader implements PartitionReader<ColumnarBatch> {
  private final FileRange range;
  private final LooseleafFile file;
  /** The files of the further ranges a complete aggregation covers. */
  private final List<LooseleafFile> aggregatedFiles = new ArrayList<>();
  private final BufferAllocator allocator;
  private long scan;
  private Schema schema;
  private DataType[] sparkTypes;
  private VectorSchemaRoot root;
  private ColumnarBatch batch;
  /** The scan's I/O counters as of the last batch (kept after the scan is closed). */
  private CustomTaskMetric[] metrics = ScanMetrics.zero();
  /** Without file columns to read: the next row of the range to hand out. */
  private long nextRow;

  private ConstantColumnVector[] constants = new ConstantColumnVector[0];

  ColumnarPartitionReader(FileRange range) {
    this.range = range;
    this.file = new LooseleafFile(range.file, range.storageOptions);
    this.allocator = new RootAllocator();
    this.nextRow = range.start;
    if (range.aggregate == null && range.columns != null && range.columns.isEmpty()) {
      return; // partition columns only: no scan of the file
    }
    try {
      this.scan =
          range.aggregate != null
              ? aggregate()
              : NativeReader.scan(
                  file.handle(),
                  LooseleafFile.linesRequest(range.columns),
                  range.start,
                  range.end,
                  LooseleafFile.linesRequest(range.readOptions),
                  utf8(range.filter),
                  utf8(range.rowFilter));
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** Starts the range's aggregation, of its rows and those of the ranges it covers too. */
  private long aggregate() {
    long[] handles = new long[1 + range.aggregatedWith.size()];
    long[] rows = new long[2 * handles.length];
    handles[0] = file.handle();
    rows[0] = range.start;
    rows[1] = range.end;
    for (int i = 1; i < handles.length; i++) {
      FileRange other = range.aggregatedWith.get(i - 1);
      LooseleafFile opened = new LooseleafFile(other.file, other.storageOptions);
      aggregatedFiles.add(opened);
      handles[i] = opened.handle();
      rows[2 * i] = other.start;
      rows[2 * i + 1] = other.end;
    }
    return NativeReader.aggregate(
        handles, rows, utf8(range.aggregate), LooseleafFile.linesRequest(range.readOptions));
  }

  private static byte[] utf8(String text) {
    return text == null ? null : text.getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  /** The partition values as constant vectors of {@code rows} rows. */
  private ColumnVector[] constants(int rows) {
    closeConstants();
    constants = new ConstantColumnVector[range.partitionColumns == null ? 0 : range.partitionColumns.length];
    for (int i = 0; i < constants.length; i++) {
      int column = range.partitionColumns[i];
      constants[i] = new ConstantColumnVector(rows, range.partitionSchema.fields()[column].dataType());
      ColumnVectorUtils.populate(constants[i], range.partitionValues, column);
    }
    return constants;
  }

  private void closeConstants() {
    for (ConstantColumnVector constant : constants) {
      constant.close();
    }
    constants = new ConstantColumnVector[0];
  }

  @Override
  public boolean next() {
    if (scan == 0) {
      // Partition columns only: batches of the range's row count.
      if (nextRow >= range.end) {
        return false;
      }
      int rows = (int) Math.min(range.constantBatchRows, range.end - nextRow);
      nextRow += rows;
      batch = new ColumnarBatch(constants(rows));
      batch.setNumRows(rows);
      return true;
    }
    long handle = NativeReader.next(scan);
    metrics = ScanMetrics.values(NativeReader.scanStats(scan));
    if (handle == 0) {
      return false;
    }
    RecordBatch header;
    long address;
    long length;
    try {
      byte[] headerBytes = NativeReader.batchHeader(handle);
      address = NativeReader.batchBodyAddress(handle);
      length = NativeReader.batchBodyLength(handle);
      header = (RecordBatch) Message.getRootAsMessage(ByteBuffer.wrap(headerBytes)).header(new RecordBatch());
    } catch (RuntimeException e) {
      NativeReader.freeBatch(handle);
      throw e;
    }
    // From here the allocation owns the batch: if wrapping fails, Arrow releases it (and so
    // frees the batch) before throwing, so it must not be freed again here.
    ArrowBuf body = allocator.wrapForeignAllocation(new NativeBody(handle, address, length));
    // deserializeRecordBatch takes over the reader's reference to the body (it releases it once
    // the batch's buffers hold theirs).
    try (ArrowRecordBatch arrow = MessageSerializer.deserializeRecordBatch(header, body)) {
      // A root per batch: Spark may close a batch's vectors (which drops a struct's children),
      // so vectors are never reused; closing the previous root releases its native body.
      if (schema == null) {
        schema = LooseleafFile.schemaOf(NativeReader.scanSchema(scan));
        sparkTypes = new DataType[schema.getFields().size()];
        for (int i = 0; i < sparkTypes.length; i++) {
          sparkTypes[i] = ArrowUtils.fromArrowField(schema.getFields().get(i));
        }
      }
      closeRoot();
      root = VectorSchemaRoot.create(schema, allocator);
      new VectorLoader(root).load(arrow);
      int fileColumns = root.getFieldVectors().size();
      ColumnVector[] partitionVectors = constants(root.getRowCount());
      ColumnVector[] vectors = new ColumnVector[fileColumns + partitionVectors.length];
      for (int i = 0; i < fileColumns; i++) {
        vectors[i] = NativeColumnVector.of(sparkTypes[i], root.getVector(i));
      }
      System.arraycopy(partitionVectors, 0, vectors, fileColumns, partitionVectors.length);
      batch = new ColumnarBatch(vectors);
    } catch (IOException e) {
      throw new UncheckedIOException(range.file + ": a batch the JVM cannot read", e);
    }
    batch.setNumRows(root.getRowCount());
    return true;
  }

  private void closeRoot() {
    if (root != null) {
      root.close();
      root = null;
    }
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    return metrics;
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  @Override
  public void close() {
    closeRoot();
    closeConstants();
    if (scan != 0) {
      long s = scan;
      scan = 0;
      NativeReader.closeScan(s);
    }
    file.close();
    for (LooseleafFile opened : aggregatedFiles) {
      opened.close();
    }
    allocator.close();
  }

  /** A batch body in native memory, freed when its last Arrow reference is released. */
  private static final class NativeBody extends ForeignAllocation {
    private final long handle;

    NativeBody(long handle, long address, long length) {
      super(length, address);
      this.handle = handle;
    }

    @Override
    protected void release0() {
      NativeReader.freeBatch(handle);
    }
  }
}
