package io.looseleaf.spark;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.types.StructType;

/**
 * Rows {@code start..end} of one file, with the columns to read ({@code null}: all), the read
 * options ({@code name=value} lines the core checked), the filter that rules zones out (the
 * core's JSON form, {@code null}: none), the filter the core evaluates exactly on the rows
 * ({@code rowFilter}), or instead of the rows an aggregation whose partial results the range
 * reads ({@code aggregate}, see {@link SparkAggregates}), and the file's partition values: those of the columns
 * {@code partitionColumns} (indices into {@code partitionSchema}) are added to every batch as
 * constants, after the file's columns. A range with a complete aggregation may cover further
 * ranges ({@code aggregatedWith}): its one task computes the results of all their rows.
 */
final class FileRange implements InputPartition {
  final String file;
  final Map<String, String> storageOptions;
  final List<String> columns;
  final long start;
  final long end;
  final List<String> readOptions;
  /** Rows per batch when no file column is read (partition columns only). */
  final int constantBatchRows;
  final String filter;
  final String rowFilter;
  final String aggregate;
  final InternalRow partitionValues;
  final int[] partitionColumns;
  final StructType partitionSchema;
  /** Further ranges whose rows the same aggregation covers (empty but for a complete one). */
  final List<FileRange> aggregatedWith;

  FileRange(
      String file,
      Map<String, String> storageOptions,
      List<String> columns,
      long start,
      long end,
      List<String> readOptions,
      int constantBatchRows,
      String filter,
      String rowFilter,
      String aggregate,
      InternalRow partitionValues,
      int[] partitionColumns,
      StructType partitionSchema,
      List<FileRange> aggregatedWith) {
    this.file = file;
    this.storageOptions = storageOptions;
    this.columns = columns;
    this.start = start;
    this.end = end;
    this.readOptions = readOptions;
    this.constantBatchRows = constantBatchRows;
    this.filter = filter;
    this.rowFilter = rowFilter;
    this.aggregate = aggregate;
    this.partitionValues = partitionValues;
    this.partitionColumns = partitionColumns;
    this.partitionSchema = partitionSchema;
    this.aggregatedWith = aggregatedWith;
  }

  /** This range, its aggregation covering the rows of {@code others} too. */
  FileRange aggregatingAlso(List<FileRange> others) {
    return new FileRange(file, storageOptions, columns, start, end, readOptions, constantBatchRows, filter, rowFilter,
        aggregate, partitionValues, partitionColumns, partitionSchema, List.copyOf(others));
  }
}
