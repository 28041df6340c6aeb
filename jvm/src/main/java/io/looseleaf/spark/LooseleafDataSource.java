package io.looseleaf.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The JVM data source: {@code spark.read.format("looseleaf").load(path)} reads through the Rust
 * core over JNI and hands Spark columnar batches; {@code df.write.format("looseleaf")} writes a
 * dataset directory through the core's write job ({@link LooseleafWriteBuilder}). In a session
 * with this connector the Python data source registers as {@code looseleaf-python}: Spark
 * refuses a name that both a JVM and a Python source answer to.
 *
 * <p>Read options: {@code path} (a file or a dataset directory, at any location the core
 * parses), {@code storage.KEY} (storage options), {@code maxPartitionBytes} (projected bytes per
 * partition, default 128 MiB), and the core's read options in any spelling ({@code batchSize},
 * {@code ioDepth}, {@code ioBufferBytes}, {@code decodeParallelism}, {@code verifyChecksums}, …),
 * parsed and defaulted by the core as for every front end. Write options: see {@link
 * WriteJobSpec}.
 */
public final class LooseleafDataSource implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "looseleaf";
  }

  /** Bytes of batch bodies handed to the JVM and not yet released, in this process. */
  public static long liveNativeBytes() {
    NativeReader.load();
    return NativeReader.liveBatchBytes();
  }

  /** Native objects behind live handles (files, scans, batches, writers), in this process. */
  public static long liveNativeHandles() {
    NativeReader.load();
    return NativeReader.liveHandles();
  }

  /** The dataset {@link #inferSchema} resolved, for the {@link #getTable} call that follows. */
  private Dataset inferred;

  private Map<String, String> inferredFor;

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    inferred = Dataset.resolve(options);
    inferredFor = options.asCaseSensitiveMap();
    return inferred.sparkSchema();
  }

  /** Writes pass the DataFrame's schema for a path that may not exist, reads a user schema. */
  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    // Spark infers the schema, then asks this provider for the table with the same options:
    // the files are listed once per load.
    Dataset known = properties.equals(inferredFor) ? inferred : null;
    return new LooseleafTable(new CaseInsensitiveStringMap(properties), schema, known, partitioning);
  }
}
