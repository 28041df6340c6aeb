package io.looseleaf.spark;

import org.apache.arrow.vector.BaseLargeVariableWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark column over the native memory of one flat Arrow vector, read with plain loads: no
 * bounds or reference-count check per value (the batch's buffers stay alive while Spark reads
 * it, see {@link ColumnarPartitionReader}) and decimals of up to 18 digits read as longs, not
 * through {@code BigDecimal}. Spark's {@link ArrowColumnVector} does both per value, which
 * profiling showed as a third of TPC-H Q1. Nested vectors keep {@link ArrowColumnVector}.
 *
 * <p>Valid for the life of the vector's buffers; {@link #close} does nothing (the batch's root
 * owns them).
 */
final class NativeColumnVector extends ColumnVector {
  private final FieldVector vector;
  /** Address of the validity bitmap, 0 when the batch has no null in this column. */
  private final long validity;

  private final long values;
  /** Address of the offsets of a variable-width vector, else 0. */
  private final long offsets;

  private final boolean largeOffsets;
  private final int nulls;

  private NativeColumnVector(DataType type, FieldVector vector, boolean variableWidth, boolean largeOffsets) {
    super(type);
    this.vector = vector;
    this.nulls = vector.getNullCount();
    this.validity = nulls > 0 ? vector.getValidityBuffer().memoryAddress() : 0;
    this.values = vector.getDataBuffer().memoryAddress();
    this.offsets = variableWidth ? vector.getOffsetBuffer().memoryAddress() : 0;
    this.largeOffsets = largeOffsets;
  }

  /** The fastest Spark column over {@code vector}, whose Spark type is {@code type}. */
  static ColumnVector of(DataType type, FieldVector vector) {
    if (vector instanceof TinyIntVector
        || vector instanceof SmallIntVector
        || vector instanceof IntVector
        || vector instanceof BigIntVector
        || vector instanceof Float4Vector
        || vector instanceof Float8Vector
        || vector instanceof BitVector
        || vector instanceof DateDayVector
        || vector instanceof TimeStampMicroVector
        || vector instanceof TimeStampMicroTZVector
        || vector instanceof DecimalVector) {
      return new NativeColumnVector(type, vector, false, false);
    }
    if (vector instanceof BaseVariableWidthVector) {
      return new NativeColumnVector(type, vector, true, false);
    }
    if (vector instanceof BaseLargeVariableWidthVector) {
      return new NativeColumnVector(type, vector, true, true);
    }
    return new ArrowColumnVector(vector);
  }

  @Override
  public void close() {}

  @Override
  public boolean hasNull() {
    return nulls > 0;
  }

  @Override
  public int numNulls() {
    return nulls;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return validity != 0 && !bit(validity, rowId);
  }

  private static boolean bit(long bitmap, int index) {
    return ((Platform.getByte(null, bitmap + (index >>> 3)) >> (index & 7)) & 1) != 0;
  }

  @Override
  public boolean getBoolean(int rowId) {
    return bit(values, rowId);
  }

  @Override
  public byte getByte(int rowId) {
    return Platform.getByte(null, values + rowId);
  }

  @Override
  public short getShort(int rowId) {
    return Platform.getShort(null, values + 2L * rowId);
  }

  @Override
  public int getInt(int rowId) {
    return Platform.getInt(null, values + 4L * rowId);
  }

  @Override
  public long getLong(int rowId) {
    return Platform.getLong(null, values + 8L * rowId);
  }

  @Override
  public float getFloat(int rowId) {
    return Platform.getFloat(null, values + 4L * rowId);
  }

  @Override
  public double getDouble(int rowId) {
    return Platform.getDouble(null, values + 8L * rowId);
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    if (isNullAt(rowId)) {
      return null;
    }
    if (precision <= Decimal.MAX_LONG_DIGITS()) {
      // A decimal128 of at most 18 digits fits its low 64 bits (little-endian two's complement).
      return Decimal.createUnsafe(Platform.getLong(null, values + 16L * rowId), precision, scale);
    }
    return Decimal.apply(((DecimalVector) vector).getObject(rowId), precision, scale);
  }

  private long start(int rowId) {
    return largeOffsets ? Platform.getLong(null, offsets + 8L * rowId) : Platform.getInt(null, offsets + 4L * rowId);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    if (isNullAt(rowId)) {
      return null;
    }
    long start = start(rowId);
    return UTF8String.fromAddress(null, values + start, (int) (start(rowId + 1) - start));
  }

  @Override
  public byte[] getBinary(int rowId) {
    if (isNullAt(rowId)) {
      return null;
    }
    long start = start(rowId);
    byte[] out = new byte[(int) (start(rowId + 1) - start)];
    Platform.copyMemory(null, values + start, out, Platform.BYTE_ARRAY_OFFSET, out.length);
    return out;
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw new UnsupportedOperationException("a flat column has no arrays");
  }

  @Override
  public ColumnarMap getMap(int rowId) {
    throw new UnsupportedOperationException("a flat column has no maps");
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    throw new UnsupportedOperationException("a flat column has no children");
  }
}
