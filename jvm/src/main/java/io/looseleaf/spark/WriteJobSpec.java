package io.looseleaf.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * What every step of a write job needs, sent from the driver to the tasks: the directory, the
 * mode, the job's id once begun, the options and the schema. Options: {@code path}, {@code
 * pageSize} (a size such as {@code 8MiB}), {@code compression} ({@code none}, {@code lz4},
 * {@code zstd}), {@code batchSize} (rows per batch handed to the core, default 8192) and {@code
 * storage.KEY}.
 */
final class WriteJobSpec implements Serializable {
  /**
   * The time zone of the Arrow form of {@code TimestampType} in files: UTC, as the Python data
   * source writes them, whatever the session's zone (values are instants either way).
   */
  static final String FILE_TIME_ZONE = "UTC";

  final String directory;
  final boolean overwrite;
  final StructType schema;
  final int batchSize;
  /** The partition columns ({@code partitionBy}), empty for none. */
  final List<String> partitionBy;

  private final String pageSize;
  private final String compression;
  private final Map<String, String> storageOptions;
  private String id;

  WriteJobSpec(CaseInsensitiveStringMap options, StructType schema, boolean overwrite, List<String> partitionBy) {
    this.partitionBy = new ArrayList<>(partitionBy);
    this.directory = options.get("path");
    if (directory == null) {
      throw new IllegalArgumentException("looseleaf: no path (df.write.format(\"looseleaf\").save(path))");
    }
    this.overwrite = overwrite;
    this.schema = schema;
    this.batchSize = options.getInt("batchSize", 8192);
    if (batchSize <= 0) {
      throw new IllegalArgumentException("looseleaf: batchSize must be positive, not " + batchSize);
    }
    this.pageSize = options.getOrDefault("pageSize", "");
    this.compression = options.getOrDefault("compression", "none");
    this.storageOptions = new HashMap<>(Dataset.storageOptions(options));
    WritableTypes.check(schema);
  }

  /**
   * The Arrow schema of the files: Spark's own mapping, with UTC timestamps and plain (not
   * large) strings and binaries, as the Python data source stores them.
   */
  Schema arrowSchema() {
    boolean errorOnDuplicatedFieldNames = true;
    boolean largeVarTypes = false;
    return ArrowUtils.toArrowSchema(
        schema, FILE_TIME_ZONE, errorOnDuplicatedFieldNames, largeVarTypes, ArrowUtils.toArrowSchema$default$5());
  }

  /** The Arrow schema as an IPC schema message. */
  byte[] schemaMessage() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      MessageSerializer.serialize(new WriteChannel(Channels.newChannel(out)), arrowSchema());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  /** Begins the job on the driver (checks the options and an append's schema). */
  void begin() {
    NativeReader.load();
    List<String> lines = new ArrayList<>(List.of(directory, mode(), pageSize, compression, partitionLine()));
    id = new String(NativeWriter.beginWrite(request(lines), schemaMessage()), StandardCharsets.UTF_8);
  }

  String id() {
    if (id == null) {
      throw new IllegalStateException("the write job has not begun");
    }
    return id;
  }

  /** The request naming the job (commit, abort). */
  byte[] jobRequest() {
    return request(new ArrayList<>(List.of(directory, mode(), id(), partitionLine())));
  }

  /** The request opening one task attempt's file. */
  byte[] taskRequest(int partition, long attempt) {
    return request(
        new ArrayList<>(
            List.of(
                directory,
                mode(),
                id(),
                partitionLine(),
                Integer.toString(partition),
                Long.toString(attempt),
                pageSize,
                compression)));
  }

  /** The partition columns as one request line (tab-separated). */
  private String partitionLine() {
    return String.join("\t", partitionBy);
  }

  private String mode() {
    return overwrite ? "overwrite" : "append";
  }

  private byte[] request(List<String> lines) {
    for (Map.Entry<String, String> option : storageOptions.entrySet()) {
      lines.add(option.getKey() + "=" + option.getValue());
    }
    return String.join("\n", lines).getBytes(StandardCharsets.UTF_8);
  }
}
