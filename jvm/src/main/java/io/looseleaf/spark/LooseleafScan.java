package io.looseleaf.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A columnar scan of the projected columns. Partitions are row ranges of files, each about
 * {@code maxPartitionBytes} of projected data (from the file's I/O plan), so one large file
 * feeds many tasks; a filter on partition columns drops whole files, and with a filter on the
 * files' columns each range shrinks to the rows its zones may hold and a range with none is
 * dropped (the task still skips the zones inside it). With a filter the core evaluates exactly,
 * only the rows where it is true are read; with an aggregation, each range reads the partial
 * results of its rows instead (one batch), which Spark merges, or, for a complete aggregation,
 * one partition covers every range and reads the final results.
 */
final class LooseleafScan implements SupportsReportStatistics, Batch {
  private final Dataset dataset;
  private final List<String> columns;
  private final StructType readSchema;
  /**
   * A filter on the files' columns (the core's JSON form, see {@link SparkFilters}) that rules
   * zones out, or null.
   */
  private final String fileFilter;
  /** A filter the core evaluates exactly: only the rows where it is true are read, or null. */
  private final String rowFilter;
  /**
   * An aggregation (see {@link SparkAggregates}) whose partial results each range reads instead
   * of its rows, or null.
   */
  private final String aggregate;

  /** Whether {@link #aggregate} is complete: one partition, final results. */
  private final boolean complete;
  /** A filter on partition columns (null for none), which rules out whole files. */
  private final String partitionFilter;
  /** Spark's predicates behind the two filters, for the plan's description. */
  private final org.apache.spark.sql.connector.expressions.filter.Predicate[] pushed;
  /** The files planned (after partition pruning), for the plan's description and tests. */
  private int filesPlanned = -1;

  private InputPartition[] planned;
  private long rows = -1;
  private long bytes;

  LooseleafScan(
      Dataset dataset,
      List<String> columns,
      StructType readSchema,
      String fileFilter,
      String rowFilter,
      String aggregate,
      boolean complete,
      String partitionFilter,
      org.apache.spark.sql.connector.expressions.filter.Predicate[] pushed) {
    this.dataset = dataset;
    this.columns = columns;
    this.readSchema = readSchema;
    this.fileFilter = fileFilter;
    this.rowFilter = rowFilter;
    this.aggregate = aggregate;
    this.complete = complete;
    this.partitionFilter = partitionFilter;
    this.pushed = pushed;
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    List<String> filters = new ArrayList<>();
    for (org.apache.spark.sql.connector.expressions.filter.Predicate p : pushed) {
      filters.add(p.describe());
    }
    String skipping = filters.isEmpty() ? "" : ", filters " + filters + " rule out files and zones";
    String exact = rowFilter == null ? "" : ", rows filtered by looseleaf";
    String aggregating =
        aggregate == null ? "" : ", " + (complete ? "complete" : "partial") + " aggregates by looseleaf " + aggregate;
    String pruning = partitionFilter == null || filesPlanned < 0 ? "" : ", " + filesPlanned + " file(s) read";
    return "looseleaf " + dataset.files.size() + " file(s), columns " + (columns == null ? "all" : columns)
        + skipping + exact + aggregating + pruning;
  }

  @Override
  public org.apache.spark.sql.connector.metric.CustomMetric[] supportedCustomMetrics() {
    return ScanMetrics.supported();
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    // Spark asks for statistics, then for the partitions: planned once.
    if (planned == null) {
      planned = plan();
    }
    return planned.clone();
  }

  private InputPartition[] plan() {
    List<InputPartition> partitions = new ArrayList<>();
    long totalRows = 0;
    long totalBytes = 0;
    long[] kept = partitionFilter == null ? null : dataset.keptFiles(partitionFilter);
    // The partition columns read, by their index among the dataset's.
    List<Integer> partitionIndices = new ArrayList<>();
    for (org.apache.spark.sql.types.StructField field : readSchema.fields()) {
      if (dataset.isPartitionColumn(field.name())) {
        partitionIndices.add(dataset.partitionSchema.fieldIndex(field.name()));
      }
    }
    int[] partitionColumns = partitionIndices.stream().mapToInt(Integer::intValue).toArray();
    int files = 0;
    for (int index = 0; index < dataset.files.size(); index++) {
      if (kept != null && java.util.Arrays.binarySearch(kept, index) < 0) {
        continue; // its partition values rule out every row
      }
      files++;
      String path = dataset.files.get(index);
      org.apache.spark.sql.catalyst.InternalRow partitionValues =
          partitionColumns.length == 0 ? null : dataset.partitionValues.get(index);
      try (LooseleafFile file = dataset.open(path)) {
        long numRows = file.numRows();
        long projected = file.projectedBytes(columns);
        totalRows += numRows;
        totalBytes += projected;
        // Ranges no page of which can match are not planned: no task opens the file for them.
        long[] matching = fileFilter == null ? new long[] {0, numRows} : file.matchingRows(fileFilter);
        long ranges = Math.max(1, Math.min(numRows, (projected + dataset.maxPartitionBytes - 1) / dataset.maxPartitionBytes));
        for (long i = 0; i < ranges; i++) {
          long[] hull = hull(matching, numRows * i / ranges, numRows * (i + 1) / ranges);
          if (hull != null) {
            partitions.add(
                new FileRange(
                    path,
                    dataset.storageOptions,
                    columns,
                    hull[0],
                    hull[1],
                    dataset.readOptions,
                    dataset.constantBatchRows,
                    fileFilter,
                    rowFilter,
                    aggregate,
                    partitionValues,
                    partitionColumns,
                    dataset.partitionSchema,
                    List.of()));
          }
        }
      }
    }
    if (aggregate != null && partitions.isEmpty() && !dataset.files.isEmpty()) {
      // An aggregation without grouping is one row even of no rows: one range of none.
      partitions.add(
          new FileRange(
              dataset.files.get(0),
              dataset.storageOptions,
              columns,
              0,
              0,
              dataset.readOptions,
              dataset.constantBatchRows,
              null,
              null,
              aggregate,
              null,
              new int[0],
              dataset.partitionSchema,
              List.of()));
    }
    if (complete && partitions.size() > 1) {
      // One task aggregates every range: the final results are one partition's rows.
      List<FileRange> ranges = new ArrayList<>();
      for (InputPartition partition : partitions) {
        ranges.add((FileRange) partition);
      }
      partitions = List.of(ranges.get(0).aggregatingAlso(ranges.subList(1, ranges.size())));
    }
    rows = totalRows;
    bytes = totalBytes;
    filesPlanned = files;
    return partitions.toArray(new InputPartition[0]);
  }

  /**
   * The smallest row range holding every row of {@code start..end} that lies in one of the
   * ascending {@code start, end} pairs of {@code matching}, or null if none does.
   */
  static long[] hull(long[] matching, long start, long end) {
    long lo = Long.MAX_VALUE;
    long hi = Long.MIN_VALUE;
    for (int i = 0; i + 1 < matching.length; i += 2) {
      long from = Math.max(start, matching[i]);
      long to = Math.min(end, matching[i + 1]);
      if (from < to) {
        lo = Math.min(lo, from);
        hi = Math.max(hi, to);
      }
    }
    return lo < hi ? new long[] {lo, hi} : null;
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new ReaderFactory();
  }

  @Override
  public Statistics estimateStatistics() {
    if (rows < 0) {
      planInputPartitions();
    }
    long r = rows;
    long b = bytes;
    return new Statistics() {
      @Override
      public OptionalLong sizeInBytes() {
        return OptionalLong.of(b);
      }

      @Override
      public OptionalLong numRows() {
        return OptionalLong.of(r);
      }
    };
  }

  /** Columnar readers only. */
  static final class ReaderFactory implements PartitionReaderFactory {
    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("looseleaf reads columnar batches");
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      return new ColumnarPartitionReader((FileRange) partition);
    }
  }
}
