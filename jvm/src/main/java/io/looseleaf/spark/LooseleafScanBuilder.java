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
 * reads alone), filters in the core's filter language ({@link SparkFilters}): those on partition
 * columns rule whole files out, those on the files' columns rule zones of rows out (no filter is
 * exact here: Spark evaluates each on the rows read), and aggregates without grouping that
 * metadata answers ({@link MetadataAggregateScan}: {@code COUNT(*)}, {@code MIN}/{@code MAX} from
 * statistics).
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
  private Predicate[] pushed = new Predicate[0];

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
    StructType fileSchema = dataset.fileSparkSchema();
    for (Predicate predicate : predicates) {
      String filter = null;
      if (SparkFilters.readsOnly(predicate, dataset.partitionSchema)) {
        filter = SparkFilters.exact(predicate, dataset.partitionSchema);
        if (filter != null) {
          partitionFilters.add(filter);
        }
      } else if (SparkFilters.readsOnly(predicate, fileSchema)) {
        filter = SparkFilters.implied(predicate, fileSchema);
        if (filter != null) {
          fileFilters.add(filter);
        }
      }
      if (filter != null) {
        used.add(predicate);
      }
    }
    pushed = used.toArray(new Predicate[0]);
    // Neither files nor zones ruled out make a filter exact: Spark evaluates every predicate
    // again on the rows read.
    return predicates;
  }

  @Override
  public Predicate[] pushedPredicates() {
    return pushed;
  }

  @Override
  public boolean supportCompletePushDown(Aggregation aggregation) {
    return answered(aggregation) != null;
  }

  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    aggregateScan = answered(aggregation);
    return aggregateScan != null;
  }

  private MetadataAggregateScan answered(Aggregation aggregation) {
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
    return new LooseleafScan(
        dataset, columns, readSchema, SparkFilters.and(fileFilters), SparkFilters.and(partitionFilters), pushed);
  }
}
