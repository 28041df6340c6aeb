package io.looseleaf.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A dataset of looseleaf files, readable in batches. */
final class LooseleafTable implements SupportsRead {
  private final Dataset dataset;

  LooseleafTable(Dataset dataset) {
    this.dataset = dataset;
  }

  @Override
  public String name() {
    return "looseleaf " + String.join(", ", dataset.files);
  }

  @Override
  public StructType schema() {
    return dataset.sparkSchema();
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new LooseleafScanBuilder(dataset);
  }
}
