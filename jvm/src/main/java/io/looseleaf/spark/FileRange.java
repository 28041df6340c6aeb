package io.looseleaf.spark;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * Rows {@code start..end} of one file, with the columns to read ({@code null}: all) and the page
 * predicates that rule pages out ({@code null}: none).
 */
final class FileRange implements InputPartition {
  final String file;
  final Map<String, String> storageOptions;
  final List<String> columns;
  final long start;
  final long end;
  final int batchSize;
  final List<String> predicates;

  FileRange(
      String file,
      Map<String, String> storageOptions,
      List<String> columns,
      long start,
      long end,
      int batchSize,
      List<String> predicates) {
    this.file = file;
    this.storageOptions = storageOptions;
    this.columns = columns;
    this.start = start;
    this.end = end;
    this.batchSize = batchSize;
    this.predicates = predicates;
  }
}
