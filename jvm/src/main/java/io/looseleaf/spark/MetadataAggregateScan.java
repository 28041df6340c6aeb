package io.looseleaf.spark;

import java.io.Serializable;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Aggregates without grouping answered from metadata, reading no data: {@code COUNT(*)} from
 * the files' row counts, {@code MIN}/{@code MAX} of a top-level integer-ordered column (integers,
 * dates, timestamps, decimals) from its pages' statistics. The answers are computed on the
 * driver when the aggregation is pushed ({@link #answer}), which declines when a file's
 * statistics cannot tell.
 */
final class MetadataAggregateScan implements Scan, Batch {
  private final Dataset dataset;
  private final StructType schema;
  private final Object[] values;

  private MetadataAggregateScan(Dataset dataset, StructType schema, Object[] values) {
    this.dataset = dataset;
    this.schema = schema;
    this.values = values;
  }

  /** The scan answering {@code aggregation}, or null if metadata cannot answer it exactly. */
  static MetadataAggregateScan answer(Dataset dataset, Aggregation aggregation) {
    if (aggregation.groupByExpressions().length != 0) {
      return null;
    }
    // Partition columns are not in the files: their aggregates are left to Spark.
    StructType columns = dataset.fileSparkSchema();
    AggregateFunc[] functions = aggregation.aggregateExpressions();
    StructType schema = new StructType();
    String[] bounded = new String[functions.length];
    for (int i = 0; i < functions.length; i++) {
      AggregateFunc f = functions[i];
      if (f instanceof CountStar) {
        schema = schema.add("count(*)#" + i, DataTypes.LongType, false);
        continue;
      }
      Expression argument = f instanceof Min ? ((Min) f).column() : f instanceof Max ? ((Max) f).column() : null;
      String column = argument instanceof NamedReference ? topLevel((NamedReference) argument, columns) : null;
      if (column == null || !integerOrdered(columns.apply(column).dataType())) {
        return null;
      }
      bounded[i] = column;
      schema = schema.add(f.toString() + "#" + i, columns.apply(column).dataType(), true);
    }
    Object[] values = new Object[functions.length];
    BigInteger[] extremes = new BigInteger[functions.length];
    long rows = 0;
    for (String path : dataset.files) {
      try (LooseleafFile file = dataset.open(path)) {
        rows += file.numRows();
        for (int i = 0; i < functions.length; i++) {
          if (bounded[i] == null) {
            continue;
          }
          BigInteger[] bounds = file.columnBounds(bounded[i]);
          if (bounds == null) {
            return null;
          }
          BigInteger value = functions[i] instanceof Min ? bounds[0] : bounds[1];
          if (value == null) {
            continue;
          }
          BigInteger best = extremes[i];
          if (best == null || (functions[i] instanceof Min ? value.compareTo(best) < 0 : value.compareTo(best) > 0)) {
            extremes[i] = value;
          }
        }
      }
    }
    for (int i = 0; i < functions.length; i++) {
      if (bounded[i] == null) {
        values[i] = rows;
      } else if (extremes[i] != null) {
        values[i] = sparkValue(extremes[i], columns.apply(bounded[i]).dataType());
      }
    }
    return new MetadataAggregateScan(dataset, schema, values);
  }

  private static String topLevel(NamedReference reference, StructType columns) {
    String[] names = reference.fieldNames();
    return names.length == 1 && columns.getFieldIndex(names[0]).isDefined() ? names[0] : null;
  }

  private static boolean integerOrdered(DataType type) {
    return type instanceof ByteType
        || type instanceof ShortType
        || type instanceof IntegerType
        || type instanceof LongType
        || type instanceof DateType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType
        || type instanceof DecimalType;
  }

  /** A stored value as Spark holds it in a row. */
  private static Object sparkValue(BigInteger stored, DataType type) {
    if (type instanceof ByteType) {
      return stored.byteValueExact();
    }
    if (type instanceof ShortType) {
      return stored.shortValueExact();
    }
    if (type instanceof IntegerType || type instanceof DateType) {
      return stored.intValueExact();
    }
    if (type instanceof DecimalType) {
      DecimalType decimal = (DecimalType) type;
      return Decimal.apply(new BigDecimal(stored, decimal.scale()), decimal.precision(), decimal.scale());
    }
    return stored.longValueExact();
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public String description() {
    return "looseleaf aggregates from metadata, " + dataset.files.size() + " file(s)";
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    return new InputPartition[] {new Answer(values)};
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new AnswerReaderFactory();
  }

  /** The one row of answers. */
  static final class Answer implements InputPartition, Serializable {
    final Object[] values;

    Answer(Object[] values) {
      this.values = values;
    }
  }

  /** Reads each {@link Answer} partition as its one row. */
  static final class AnswerReaderFactory implements PartitionReaderFactory {
    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      Object[] values = ((Answer) partition).values;
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
          return new GenericInternalRow(values.clone());
        }

        @Override
        public void close() {}
      };
    }
  }

  /** Decodes {@code columnBounds}' answer: two values, either null when all are null. */
  static BigInteger[] parseBounds(byte[] answer) {
    if (answer == null) {
      return null;
    }
    String[] lines = new String(answer, StandardCharsets.UTF_8).split("\n");
    BigInteger[] out = new BigInteger[2];
    for (int i = 0; i < 2; i++) {
      out[i] = lines[i].equals("null") ? null : new BigInteger(lines[i]);
    }
    return out;
  }
}
