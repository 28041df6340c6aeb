package io.looseleaf.spark;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * The files a read names, their storage options, their schema (that of the dataset's schema
 * file, else of its first file) and their partition columns: the core's {@code
 * looseleaf::dataset::Dataset} finds the files and reads {@code key=value/} directories as
 * partition columns (types discovered there), which come after the files' columns.
 */
final class Dataset implements Serializable {
  static final String STORAGE_PREFIX = "storage.";
  /** The read options the connector takes itself (lower-cased, as Spark compares them). */
  private static final java.util.Set<String> OWN_OPTIONS = java.util.Set.of("path", "paths", "maxpartitionbytes");
  private static final String SCHEMA_FILE_KEY = "looseleaf.schema_file";

  final List<String> files;
  /** The file holding the dataset's schema, if not its first data file (null). */
  final String schemaFile;
  final Map<String, String> storageOptions;
  /** The core's read options ({@code name=value} lines, checked and named by the core). */
  final List<String> readOptions;
  /** Rows per batch of a read of partition columns only (no file column to decode). */
  final int constantBatchRows;
  final long maxPartitionBytes;
  /** The partition columns (empty without {@code key=value/} directories). */
  final StructType partitionSchema;
  /** Each file's partition values, in the order of {@link #files}. */
  final List<InternalRow> partitionValues;
  /** The core's stream of the files and their partition values, for {@link #keptFiles}. */
  private final byte[] listing;
  private transient Schema arrowSchema;

  private Dataset(
      byte[] listing, Map<String, String> storageOptions, List<String> readOptions, long maxPartitionBytes) {
    this.listing = listing;
    this.storageOptions = storageOptions;
    this.readOptions = readOptions;
    this.maxPartitionBytes = maxPartitionBytes;
    int rows = NativeReader.defaultBatchSize();
    for (String option : readOptions) {
      if (option.startsWith("batch_size=")) {
        rows = Integer.parseInt(option.substring("batch_size=".length()));
      }
    }
    this.constantBatchRows = rows;
    List<String> names = new ArrayList<>();
    List<InternalRow> values = new ArrayList<>();
    try (BufferAllocator allocator = new RootAllocator();
        ArrowStreamReader reader = new ArrowStreamReader(new ByteArrayInputStream(listing), allocator)) {
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      Schema schema = root.getSchema();
      this.schemaFile = schema.getCustomMetadata().get(SCHEMA_FILE_KEY);
      List<Field> partitionFields = schema.getFields().subList(1, schema.getFields().size());
      List<StructField> sparkFields = new ArrayList<>();
      for (Field field : partitionFields) {
        sparkFields.add(new StructField(field.getName(), ArrowUtils.fromArrowField(field), true, org.apache.spark.sql.types.Metadata.empty()));
      }
      this.partitionSchema = new StructType(sparkFields.toArray(new StructField[0]));
      while (reader.loadNextBatch()) {
        ColumnVector[] vectors = new ColumnVector[partitionFields.size()];
        for (int i = 0; i < vectors.length; i++) {
          vectors[i] = new ArrowColumnVector(root.getVector(i + 1));
        }
        ColumnarBatch batch = new ColumnarBatch(vectors, root.getRowCount());
        org.apache.arrow.vector.VarCharVector fileColumn = (org.apache.arrow.vector.VarCharVector) root.getVector(0);
        for (int row = 0; row < root.getRowCount(); row++) {
          names.add(new String(fileColumn.get(row), java.nio.charset.StandardCharsets.UTF_8));
          values.add(batch.getRow(row).copy());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("looseleaf: the dataset's files do not decode", e);
    }
    this.files = Collections.unmodifiableList(names);
    this.partitionValues = Collections.unmodifiableList(values);
  }

  /**
   * The {@code maxPartitionBytes} option in Spark's spelling of sizes ({@code 134217728},
   * {@code 128m}, {@code 4k}: what {@code spark.sql.files.maxPartitionBytes} takes), 128 MiB if
   * unset.
   */
  static long maxPartitionBytes(String text) {
    if (text == null) {
      return 128L << 20;
    }
    long bytes;
    try {
      bytes = org.apache.spark.network.util.JavaUtils.byteStringAsBytes(text.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "looseleaf: maxPartitionBytes must be a size (134217728, 128m, 4k), got \"" + text + "\"", e);
    }
    if (bytes <= 0) {
      throw new IllegalArgumentException("looseleaf: maxPartitionBytes must be positive, got \"" + text + "\"");
    }
    return bytes;
  }

  static Dataset resolve(CaseInsensitiveStringMap options) {
    String path = options.get("path");
    if (path == null) {
      throw new IllegalArgumentException("looseleaf: no path (spark.read.format(\"looseleaf\").load(path))");
    }
    Map<String, String> storage = storageOptions(options);
    long maxPartitionBytes = maxPartitionBytes(options.get("maxPartitionBytes"));
    NativeReader.load();
    List<String> readOptions = readOptions(options);
    byte[] listing = NativeReader.dataset(LooseleafFile.request(path, storage));
    return new Dataset(listing, Collections.unmodifiableMap(storage), readOptions, maxPartitionBytes);
  }

  /**
   * The core's read options among a read's options (every option but the connector's own:
   * {@code path}, {@code paths}, {@code maxPartitionBytes} and {@code storage.KEY}), as the core
   * checked and named them ({@code batchSize} is {@code batch_size}): the core's parser and
   * defaults, the same as every other front end's. An unknown or bad option is an error naming it.
   */
  static List<String> readOptions(CaseInsensitiveStringMap options) {
    List<String> lines = new ArrayList<>();
    for (Map.Entry<String, String> e : options.asCaseSensitiveMap().entrySet()) {
      String key = e.getKey().toLowerCase(java.util.Locale.ROOT);
      if (OWN_OPTIONS.contains(key) || key.startsWith(STORAGE_PREFIX)) {
        continue;
      }
      lines.add(e.getKey() + "=" + e.getValue());
    }
    byte[] request = String.join("\n", lines).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    String checked;
    try {
      checked = new String(NativeReader.readOptions(request), java.nio.charset.StandardCharsets.UTF_8);
    } catch (LooseleafInvalidArgumentException e) {
      throw new LooseleafInvalidArgumentException(
          e.getMessage() + "; the connector's own options are path, maxPartitionBytes and storage.<key>",
          e.location());
    }
    return checked.isEmpty() ? List.of() : List.of(checked.split("\n"));
  }

  /** The storage options among a read's or a write's options ({@code storage.KEY}). */
  static Map<String, String> storageOptions(CaseInsensitiveStringMap options) {
    Map<String, String> storage = new HashMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      if (e.getKey().startsWith(STORAGE_PREFIX)) {
        storage.put(e.getKey().substring(STORAGE_PREFIX.length()), e.getValue());
      }
    }
    return storage;
  }

  /**
   * Which files (indices into {@link #files}) a filter on partition columns does not rule out,
   * decided by the core ({@code looseleaf::filter::partition_rules_out}, what its own dataset
   * reads skip): {@code filter} is the core's JSON form (see {@link SparkFilters}).
   */
  long[] keptFiles(String filter) {
    NativeReader.load();
    return NativeReader.keptFiles(listing, filter.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  LooseleafFile open(String file) {
    return new LooseleafFile(file, storageOptions);
  }

  Schema arrowSchema() {
    if (arrowSchema == null) {
      if (schemaFile == null && files.isEmpty()) {
        throw new LooseleafException("looseleaf: the dataset has no data file and no schema");
      }
      try (LooseleafFile file = open(schemaFile != null ? schemaFile : files.get(0))) {
        arrowSchema = file.arrowSchema();
      }
    }
    return arrowSchema;
  }

  /** The files' columns (no partition columns). */
  StructType fileSparkSchema() {
    return ArrowUtils.fromArrowSchema(arrowSchema());
  }

  /** The rows' schema: the files' columns, then the partition columns. */
  StructType sparkSchema() {
    StructType schema = fileSparkSchema();
    for (StructField field : partitionSchema.fields()) {
      schema = schema.add(field);
    }
    return schema;
  }

  /**
   * The Spark schema of the partial results of an aggregation (the JSON form, see {@link
   * SparkAggregates}) of these files, or null if the core does not compute it (or there are no
   * files): Spark then aggregates as usual.
   */
  StructType aggregateSchema(String request) {
    if (files.isEmpty()) {
      return null;
    }
    try (LooseleafFile file = open(files.get(0))) {
      byte[] message =
          NativeReader.aggregateSchema(file.handle(), request.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      return ArrowUtils.fromArrowSchema(LooseleafFile.schemaOf(message));
    } catch (LooseleafUnsupportedException | LooseleafInvalidArgumentException e) {
      return null;
    }
  }

  boolean isPartitionColumn(String name) {
    return partitionSchema.getFieldIndex(name).isDefined();
  }
}
