package io.looseleaf.spark;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The files a read names, their storage options and their schema (that of the dataset's schema
 * file, else of its first file).
 */
final class Dataset implements Serializable {
  static final String STORAGE_PREFIX = "storage.";

  final List<String> files;
  /** The file holding the dataset's schema, if not its first data file (null). */
  final String schemaFile;
  final Map<String, String> storageOptions;
  final int batchSize;
  final long maxPartitionBytes;
  private transient Schema arrowSchema;

  private Dataset(
      List<String> listing, Map<String, String> storageOptions, int batchSize, long maxPartitionBytes) {
    this.schemaFile = listing.get(0).isEmpty() ? null : listing.get(0);
    this.files = listing.subList(1, listing.size());
    this.storageOptions = storageOptions;
    this.batchSize = batchSize;
    this.maxPartitionBytes = maxPartitionBytes;
  }

  static Dataset resolve(CaseInsensitiveStringMap options) {
    String path = options.get("path");
    if (path == null) {
      throw new IllegalArgumentException("looseleaf: no path (spark.read.format(\"looseleaf\").load(path))");
    }
    Map<String, String> storage = storageOptions(options);
    int batchSize = options.getInt("batchSize", 8192);
    if (batchSize <= 0) {
      throw new IllegalArgumentException("looseleaf: batchSize must be positive, not " + batchSize);
    }
    long maxPartitionBytes = options.getLong("maxPartitionBytes", 128L << 20);
    if (maxPartitionBytes <= 0) {
      throw new IllegalArgumentException("looseleaf: maxPartitionBytes must be positive");
    }
    return new Dataset(
        listFiles(path, storage), Collections.unmodifiableMap(storage), batchSize, maxPartitionBytes);
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
   * The schema file (an empty string if none) then the data files a path names, chosen by the
   * core ({@code looseleaf::dataset::resolve}): the path itself if it is a {@code .leaf} file,
   * else the files a reader sees in the directory (those its commit log makes visible, or its
   * visible {@code *.leaf} files).
   */
  private static List<String> listFiles(String path, Map<String, String> storageOptions) {
    NativeReader.load();
    String listed =
        new String(
            NativeReader.datasetFiles(LooseleafFile.request(path, storageOptions)), StandardCharsets.UTF_8);
    return List.of(listed.split("\n", -1));
  }

  LooseleafFile open(String file) {
    return new LooseleafFile(file, storageOptions);
  }

  Schema arrowSchema() {
    if (arrowSchema == null) {
      try (LooseleafFile file = open(schemaFile != null ? schemaFile : files.get(0))) {
        arrowSchema = file.arrowSchema();
      }
    }
    return arrowSchema;
  }

  StructType sparkSchema() {
    return ArrowUtils.fromArrowSchema(arrowSchema());
  }
}
