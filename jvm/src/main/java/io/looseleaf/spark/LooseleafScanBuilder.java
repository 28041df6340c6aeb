package io.looseleaf.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Pushes down column pruning (top-level columns and fields of structs, as dotted paths the core
 * reads alone), filters in the core's filter language ({@link SparkFilters}) and aggregates.
 *
 * <p>Filters: those on partition columns rule whole files out (Spark evaluates them again);
 * those on the files' columns that translate exactly are evaluated by the core on the rows (only
 * matching rows are read, and Spark does not evaluate them again); the others rule zones of
 * rows out by the translatable parts of their {@code AND}s, and Spark evaluates them on the rows
 * read.
 *
 * <p>Aggregates: without a filter on the files' columns, those that metadata answers ({@link
 * MetadataAggregateScan}: {@code COUNT(*)}, {@code MIN}/{@code MAX} from statistics) are answered
 * completely; otherwise those the core computes ({@link SparkAggregates}; Spark tries only when
 * every filter was pushed exactly) are pushed completely when they have no {@code GROUP BY} and
 * the columns they read (with the filters') fit one partition ({@code maxPartitionBytes}, as
 * Spark sizes a task), and partially otherwise. Complete: one task aggregates every file's rows (read concurrently) to the final
 * results, and Spark runs no aggregation, exchange or second stage of its own; {@code AVG} is
 * left for Spark to split into {@code SUM} and {@code COUNT}, which are. Partial: each range
 * reads its rows' partial results, and Spark merges them.
 */
final class LooseleafScanBuilder
    implements SupportsPushDownRequiredColumns, SupportsPushDownV2Filters, SupportsPushDownAggregates {
  private final Dataset dataset;
  private List<String> columns;
  private StructType readSchema;
  private MetadataAggregateScan aggregateScan;
  /** The last aggregation answered (Spark asks twice: whether, then push). */
  private Aggregation answersFor;

  private MetadataAggregateScan answers;
  /** Filters (the core's JSON form) on partition columns, exact: they rule files out. */
  private final List<String> partitionFilters = new ArrayList<>();
  /** Filters on the files' columns, implied by Spark's: they rule zones of rows out. */
  private final List<String> fileFilters = new ArrayList<>();
  /** Filters on the files' columns, translated exactly: the core evaluates them on the rows. */
  private final List<String> rowFilters = new ArrayList<>();
  private Predicate[] pushed = new Predicate[0];
  /** An aggregation the core computes (JSON), its results' schema and its columns. */
  private String coreAggregate;

  /** Whether {@link #coreAggregate} asks for final results, of every row in one task. */
  private boolean completeAggregate;

  /** The last aggregation asked about for complete pushdown (Spark asks several times). */
  private Aggregation completeFor;

  /** The core's request of final results for {@link #completeFor}, or null: not complete. */
  private String completeRequest;

  /** The schema of {@link #completeRequest}'s results. */
  private StructType completeSchema;

  private StructType coreAggregateSchema;
  private List<String> coreAggregateColumns;

  LooseleafScanBuilder(Dataset dataset) {
    this.dataset = dataset;
    this.readSchema = dataset.sparkSchema();
  }

  @Override
  public void pruneColumns(StructType required) {
    StructType full = dataset.sparkSchema();
    List<String> paths = new ArrayList<>();
    List<StructField> fields = new ArrayList<>();
    List<StructField> partitions = new ArrayList<>();
    for (StructField field : required.fields()) {
      StructField original = full.apply(field.name());
      if (dataset.isPartitionColumn(field.name())) {
        partitions.add(original);
      } else {
        fields.add(prune(original, field.dataType(), original.name(), paths));
      }
    }
    // The batches hold the files' columns, then the partition columns (as constants).
    fields.addAll(partitions);
    columns = paths;
    readSchema = new StructType(fields.toArray(new StructField[0]));
  }

  /** The field read for {@code original} when Spark requires {@code required} of it. */
  private static StructField prune(StructField original, DataType required, String path, List<String> paths) {
    if (required.sameType(original.dataType())
        || !(required instanceof StructType)
        || !(original.dataType() instanceof StructType)) {
      paths.add(path);
      return original;
    }
    StructType wanted = (StructType) required;
    StructType have = (StructType) original.dataType();
    List<StructField> children = new ArrayList<>();
    // The core returns a struct's children in the file's order, as Spark prunes them.
    for (StructField child : have.fields()) {
      if (wanted.getFieldIndex(child.name()).isDefined()) {
        children.add(prune(child, wanted.apply(child.name()).dataType(), path + "." + child.name(), paths));
      }
    }
    return new StructField(
        original.name(), new StructType(children.toArray(new StructField[0])), original.nullable(), original.metadata());
  }

  @Override
  public Predicate[] pushPredicates(Predicate[] predicates) {
    List<Predicate> used = new ArrayList<>();
    List<Predicate> left = new ArrayList<>();
    StructType fileSchema = dataset.fileSparkSchema();
    for (Predicate predicate : predicates) {
      String filter = null;
      boolean exact = false;
      if (SparkFilters.readsOnly(predicate, dataset.partitionSchema)) {
        filter = SparkFilters.exact(predicate, dataset.partitionSchema);
        if (filter != null) {
          partitionFilters.add(filter);
        }
      } else if (SparkFilters.readsOnly(predicate, fileSchema)) {
        filter = SparkFilters.exact(predicate, fileSchema);
        exact = filter != null;
        if (exact) {
          rowFilters.add(filter);
        } else {
          filter = SparkFilters.implied(predicate, fileSchema);
          if (filter != null) {
            fileFilters.add(filter);
          }
        }
      }
      if (filter != null) {
        used.add(predicate);
      }
      // Files ruled out by partition values and zones ruled out by statistics leave rows Spark
      // must still test; the core's exact evaluation does not.
      if (!exact) {
        left.add(predicate);
      }
    }
    pushed = used.toArray(new Predicate[0]);
    return left.toArray(new Predicate[0]);
  }

  @Override
  public Predicate[] pushedPredicates() {
    return pushed;
  }

  @Override
  public boolean supportCompletePushDown(Aggregation aggregation) {
    return answered(aggregation) != null || completeRequest(aggregation) != null;
  }

  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    aggregateScan = answered(aggregation);
    if (aggregateScan != null) {
      return true;
    }
    String request = completeRequest(aggregation);
    completeAggregate = request != null;
    StructType schema = completeSchema;
    if (request == null) {
      request = translate(aggregation, false);
      schema = request == null ? null : dataset.aggregateSchema(request);
    }
    if (schema == null) {
      return false;
    }
    coreAggregate = request;
    coreAggregateSchema = schema;
    coreAggregateColumns = SparkAggregates.columns(aggregation);
    return true;
  }

  /** {@code aggregation} of the rows the exact filters keep, in the core's JSON form, or null. */
  private String translate(Aggregation aggregation, boolean complete) {
    org.apache.spark.sql.internal.SQLConf conf = org.apache.spark.sql.internal.SQLConf.get();
    return SparkAggregates.translate(
        aggregation,
        dataset.fileSparkSchema(),
        SparkFilters.and(rowFilters),
        conf.ansiEnabled(),
        conf.decimalOperationsAllowPrecisionLoss(),
        complete);
  }

  /**
   * The request of {@code aggregation}'s final results when the core computes them and one task
   * can read every file for them: the columns it and the filters read come to at most {@code
   * maxPartitionBytes} over all files (a filter on partition columns, which Spark evaluates
   * again, rules it out). Null otherwise, and for an aggregation with {@code GROUP BY}: its rows
   * are usually sorted or joined next, and Spark's range partitioning for a sort samples its
   * input by running it (a V2 scan cannot report that it is one partition), so a complete
   * aggregation would be computed twice; merging partial results costs Spark little.
   */
  private String completeRequest(Aggregation aggregation) {
    if (completeFor == aggregation) {
      return completeRequest;
    }
    completeFor = aggregation;
    completeRequest = null;
    if (dataset.files.isEmpty() || !partitionFilters.isEmpty() || aggregation.groupByExpressions().length > 0) {
      return null;
    }
    String request = translate(aggregation, true);
    StructType schema = request == null ? null : dataset.aggregateSchema(request);
    if (schema == null) {
      return null;
    }
    java.util.Set<String> read = new java.util.LinkedHashSet<>(SparkAggregates.columns(aggregation));
    StructType fileSchema = dataset.fileSparkSchema();
    for (Predicate predicate : pushed) {
      for (org.apache.spark.sql.connector.expressions.NamedReference ref : predicate.references()) {
        if (fileSchema.getFieldIndex(ref.fieldNames()[0]).isDefined()) {
          read.add(ref.fieldNames()[0]);
        }
      }
    }
    List<String> columns = new ArrayList<>(read);
    long bytes = 0;
    for (String path : dataset.files) {
      try (LooseleafFile file = dataset.open(path)) {
        bytes += file.projectedBytes(columns);
      }
      if (bytes > dataset.maxPartitionBytes) {
        return null;
      }
    }
    completeRequest = request;
    completeSchema = schema;
    return request;
  }

  /** Metadata's answer to {@code aggregation}, or null (always with a filter on the rows). */
  private MetadataAggregateScan answered(Aggregation aggregation) {
    if (!rowFilters.isEmpty()) {
      return null;
    }
    if (answers == null || answersFor != aggregation) {
      answersFor = aggregation;
      answers = MetadataAggregateScan.answer(dataset, aggregation);
    }
    return answers;
  }

  @Override
  public Scan build() {
    if (aggregateScan != null) {
      return aggregateScan;
    }
    // Exact filters rule zones out too.
    List<String> zoneFilters = new ArrayList<>(fileFilters);
    zoneFilters.addAll(rowFilters);
    if (coreAggregate != null) {
      // The aggregation evaluates the exact filters itself.
      return new LooseleafScan(
          dataset,
          coreAggregateColumns,
          coreAggregateSchema,
          SparkFilters.and(zoneFilters),
          null,
          coreAggregate,
          completeAggregate,
          SparkFilters.and(partitionFilters),
          pushed);
    }
    return new LooseleafScan(
        dataset,
        columns,
        readSchema,
        SparkFilters.and(zoneFilters),
        SparkFilters.and(rowFilters),
        null,
        false,
        SparkFilters.and(partitionFilters),
        pushed);
  }
}
