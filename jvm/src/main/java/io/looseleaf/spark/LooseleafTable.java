package io.looseleaf.spark;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A dataset of looseleaf files at a path, read in batches or written by a job. Its schema is
 * the one Spark passed: the dataset's (inferred), the reader's (a user schema, checked against
 * the dataset's and read as a projection) or the DataFrame's being written (a path that need not
 * exist yet). The files are listed only when a read needs them.
 */
final class LooseleafTable implements SupportsRead, SupportsWrite {
  private final CaseInsensitiveStringMap options;
  private final StructType schema;
  /** What a write's {@code partitionBy} gave (Spark checks a write's against the table's). */
  private final Transform[] partitioning;

  private Dataset dataset;

  LooseleafTable(CaseInsensitiveStringMap options, StructType schema, Dataset dataset, Transform[] partitioning) {
    this.options = options;
    this.schema = schema;
    this.dataset = dataset;
    this.partitioning = partitioning == null ? new Transform[0] : partitioning;
  }

  @Override
  public Transform[] partitioning() {
    return partitioning.clone();
  }

  /** The partition columns of a write ({@code partitionBy}: identity transforms only). */
  private List<String> partitionColumns() {
    List<String> columns = new ArrayList<>();
    for (Transform transform : partitioning) {
      if (!"identity".equals(transform.name()) || transform.references().length != 1) {
        throw new LooseleafException(
            options.get("path") + ": looseleaf partitions by columns (partitionBy), not by " + transform.describe());
      }
      String[] names = transform.references()[0].fieldNames();
      if (names.length != 1) {
        throw new LooseleafException(options.get("path") + ": a partition column must be a top-level column, not " + String.join(".", names));
      }
      columns.add(names[0]);
    }
    return columns;
  }

  private Dataset dataset() {
    if (dataset == null) {
      dataset = Dataset.resolve(options);
    }
    return dataset;
  }

  @Override
  public String name() {
    return "looseleaf " + options.get("path");
  }

  @Override
  public StructType schema() {
    return schema != null ? schema : dataset().sparkSchema();
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
    LooseleafScanBuilder builder = new LooseleafScanBuilder(dataset());
    StructType full = dataset().sparkSchema();
    if (schema != null && !schema.sameType(full)) {
      for (StructField field : schema.fields()) {
        boolean found = full.getFieldIndex(field.name()).isDefined();
        if (!found || !field.dataType().sameType(full.apply(field.name()).dataType())) {
          throw new LooseleafException(
              options.get("path")
                  + ": the schema given to the read has column "
                  + field.name()
                  + " of type "
                  + field.dataType().simpleString()
                  + ", the dataset "
                  + (found ? "has it as " + full.apply(field.name()).dataType().simpleString() : "has no such column"));
        }
      }
      builder.pruneColumns(schema);
    }
    return builder;
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new LooseleafWriteBuilder(info.options(), info.schema(), partitionColumns());
  }
}
