package io.looseleaf.spark;

/**
 * The native methods of {@code rust/looseleaf-jni}. Handles are owned by the wrappers
 * ({@link LooseleafFile}, {@link ColumnarPartitionReader}), which destroy each exactly once.
 * Every method throws a {@link LooseleafException} of the failure's kind on failure, naming the
 * file (never crashes the JVM: the native side catches its panics and checks every handle, so a
 * stale or wrong handle is an exception too), and a {@link LooseleafInterruptedException} when
 * its Spark task is killed while it waits.
 *
 * <p>Requests are UTF-8 text, one item per line: {@code open} takes the location then {@code
 * key=value} storage options; column lists are one column (a dotted path) per line, {@code null}
 * meaning every column.
 */
final class NativeReader {
  private NativeReader() {}

  /** Loads the native library once per JVM (see {@link NativeLibrary}). */
  static void load() {
    NativeLibrary.load();
  }

  static native long open(byte[] request);

  /**
   * The dataset a path names ({@code looseleaf::dataset::Dataset}): an Arrow IPC stream of one
   * batch, a {@code file} column then the partition columns, the schema file in the schema's
   * metadata ({@code looseleaf.schema_file}).
   */
  static native byte[] dataset(byte[] request);

  /**
   * The indices of the files of a {@link #dataset} stream that a filter (the core's JSON form,
   * see {@link SparkFilters}) does not rule out by their partition values.
   */
  static native long[] keptFiles(byte[] dataset, byte[] filter);

  /**
   * Read options ({@code name=value} lines, any spelling the core knows: {@code batchSize},
   * {@code batch_size}) checked by the core and returned in its names; throws naming a bad one.
   */
  static native byte[] readOptions(byte[] options);

  /** The core's default rows per batch. */
  static native int defaultBatchSize();

  static native void close(long reader);

  static native long numRows(long reader);

  static native byte[] schema(long reader);

  static native long projectedBytes(long reader, byte[] columns);

  static native byte[] columnBounds(long reader, byte[] column);

  /** Row ranges ({@code start, end} pairs) whose zones a filter (JSON) does not rule out. */
  static native long[] matchingRows(long reader, byte[] filter);

  /**
   * A read of rows {@code start..end} with read options (lines), a filter ruling zones out and a
   * filter the core evaluates exactly ({@code rowFilter}: only the rows where it is true).
   */
  static native long scan(
      long reader, byte[] columns, long start, long end, byte[] options, byte[] filter, byte[] rowFilter);

  /**
   * The schema (an IPC schema message) of the partial results of an aggregation (the JSON form
   * of {@code looseleaf::aggregate::Aggregation}, see {@link SparkAggregates}); throws a {@link
   * LooseleafException} if the core does not compute it.
   */
  static native byte[] aggregateSchema(long reader, byte[] request);

  /**
   * An aggregation of rows of one or more files ({@code readers}, with their row ranges as
   * {@code start, end} pairs in {@code rows}), read concurrently: a scan whose one batch is the
   * results, partial or final as the request asks.
   */
  static native long aggregate(long[] readers, long[] rows, byte[] request, byte[] options);

  static native long next(long scan);

  /** The Arrow schema of a scan's batches, as an IPC schema message. */
  static native byte[] scanSchema(long scan);

  static native void closeScan(long scan);

  /** A scan's I/O counters so far ({@code name=value} lines, see {@link ScanMetrics}). */
  static native byte[] scanStats(long scan);

  static native byte[] batchHeader(long batch);

  static native long batchBodyAddress(long batch);

  static native long batchBodyLength(long batch);

  static native void freeBatch(long batch);

  static native long liveBatchBytes();

  /** Native objects behind live handles in this JVM (files, scans, batches, writers). */
  static native long liveHandles();
}
