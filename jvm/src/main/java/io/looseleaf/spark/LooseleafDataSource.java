package io.looseleaf.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The {@code looseleaf} data source on the JVM: {@code spark.read.format("looseleaf").load(path)}
 * reads through the Rust core over JNI and hands Spark columnar batches.
 *
 * <p>Options: {@code path} (a file, any location the core parses, or a local directory of
 * {@code *.leaf} files), {@code storage.KEY} (storage options), {@code batchSize} (rows per
 * batch, default 8192), {@code maxPartitionBytes} (projected bytes per partition, default
 * Spark's {@code spark.sql.files.maxPartitionBytes}).
 */
public final class LooseleafDataSource implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "looseleaf";
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
