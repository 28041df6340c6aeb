package io.looseleaf.spark;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The files a read names, their storage options and their schema (that of the first file). */
final class Dataset implements Serializable {
  static final String STORAGE_PREFIX = "storage.";

  final List<String> files;
  final Map<String, String> storageOptions;
  final int batchSize;
  final long maxPartitionBytes;
  private transient Schema arrowSchema;

  private Dataset(
      List<String> files, Map<String, String> storageOptions, int batchSize, long maxPartitionBytes) {
    this.files = files;
    this.storageOptions = storageOptions;
    this.batchSize = batchSize;
    this.maxPartitionBytes = maxPartitionBytes;
  }

  static Dataset resolve(CaseInsensitiveStringMap options) {
    String path = options.get("path");
    if (path == null) {
      throw new IllegalArgumentException("looseleaf: no path (spark.read.format(\"looseleaf\").load(path))");
    }
    Map<String, String> storage = new HashMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      if (e.getKey().startsWith(STORAGE_PREFIX)) {
        storage.put(e.getKey().substring(STORAGE_PREFIX.length()), e.getValue());
      }
    }
    int batchSize = options.getInt("batchSize", 8192);
    if (batchSize <= 0) {
      throw new IllegalArgumentException("looseleaf: batchSize must be positive, not " + batchSize);
    }
    long maxPartitionBytes = options.getLong("maxPartitionBytes", 128L << 20);
    if (maxPartitionBytes <= 0) {
      throw new IllegalArgumentException("looseleaf: maxPartitionBytes must be positive");
    }
    return new Dataset(listFiles(path), Collections.unmodifiableMap(storage), batchSize, maxPartitionBytes);
  }

  /** A local directory's visible {@code *.leaf} files, sorted; any other path as it is. */
  private static List<String> listFiles(String path) {
    Path local = path.contains("://") ? null : Paths.get(path);
    if (local == null || !Files.isDirectory(local)) {
      return List.of(path);
    }
    if (Files.isDirectory(local.resolve("_commits"))) {
      throw new LooseleafException(
          path
              + ": a directory with a commit log; the JVM reader does not read commit logs yet, read it"
              + " with the Python data source (looseleaf.spark.register(spark, jvm=False))");
    }
    List<String> out = new ArrayList<>();
    try (Stream<Path> entries = Files.list(local)) {
      entries
          .filter(p -> p.getFileName().toString().endsWith(".leaf"))
          .filter(p -> !p.getFileName().toString().startsWith("_"))
          .filter(p -> !p.getFileName().toString().startsWith("."))
          .forEach(p -> out.add(p.toString()));
    } catch (IOException e) {
      throw new UncheckedIOException(path + ": cannot list the directory", e);
    }
    if (out.isEmpty()) {
      throw new LooseleafException(path + ": no .leaf files in the directory");
    }
    Collections.sort(out);
    return out;
  }

  LooseleafFile open(String file) {
    return new LooseleafFile(file, storageOptions);
  }

  Schema arrowSchema() {
    if (arrowSchema == null) {
      try (LooseleafFile file = open(files.get(0))) {
        arrowSchema = file.arrowSchema();
      }
    }
    return arrowSchema;
  }

  StructType sparkSchema() {
    return ArrowUtils.fromArrowSchema(arrowSchema());
  }
}
