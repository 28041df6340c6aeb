package io.looseleaf.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** {@code COUNT(*)} answered from the files' row counts (their footers), reading no data. */
final class CountScan implements Scan, Batch {
  private final Dataset dataset;
  private final int columns;

  CountScan(Dataset dataset, int columns) {
    this.dataset = dataset;
    this.columns = columns;
  }

  @Override
  public StructType readSchema() {
    StructType schema = new StructType();
    for (int i = 0; i < columns; i++) {
      schema = schema.add("count(*)#" + i, DataTypes.LongType, false);
    }
    return schema;
  }

  @Override
  public String description() {
    return "looseleaf COUNT(*) from metadata, " + dataset.files.size() + " file(s)";
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    long rows = 0;
    for (String path : dataset.files) {
      try (LooseleafFile file = dataset.open(path)) {
        rows += file.numRows();
      }
    }
    return new InputPartition[] {new Count(rows, columns)};
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new CountReaderFactory();
  }

  /** Answers each {@link Count} partition with its one row. */
  static final class CountReaderFactory implements PartitionReaderFactory {
    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      Count count = (Count) partition;
      return new PartitionReader<InternalRow>() {
        private boolean done;

        @Override
        public boolean next() {
          boolean first = !done;
          done = true;
          return first;
        }

        @Override
        public InternalRow get() {
          Object[] values = new Object[count.columns];
          java.util.Arrays.fill(values, count.rows);
          return new GenericInternalRow(values);
        }

        @Override
        public void close() {}
      };
    }
  }

  static final class Count implements InputPartition {
    final long rows;
    final int columns;

    Count(long rows, int columns) {
      this.rows = rows;
      this.columns = columns;
    }
  }
}
