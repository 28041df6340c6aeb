package io.looseleaf.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The JVM read path: {@code spark.read.format("looseleaf-jvm").load(path)} reads through the
 * Rust core over JNI and hands Spark columnar batches. The short name {@code looseleaf} stays
 * with the Python data source (reads and writes): Spark refuses a name that both a JVM and a
 * Python source answer to, and writes have no JVM path yet.
 *
 * <p>Options: {@code path} (a file, any location the core parses, or a local directory of
 * {@code *.leaf} files), {@code storage.KEY} (storage options), {@code batchSize} (rows per
 * batch, default 8192), {@code maxPartitionBytes} (projected bytes per partition, default
 * Spark's {@code spark.sql.files.maxPartitionBytes}).
 */
public final class LooseleafDataSource implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "looseleaf-jvm";
  }

  /** Bytes of batch bodies handed to the JVM and not yet released, in this process. */
  public static long liveNativeBytes() {
    NativeReader.load();
    return NativeReader.liveBatchBytes();
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return Dataset.resolve(options).sparkSchema();
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new LooseleafTable(Dataset.resolve(new CaseInsensitiveStringMap(properties)));
  }
}
