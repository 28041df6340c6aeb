package io.looseleaf.spark;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.CalendarIntervalType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.VariantType;
import org.apache.spark.sql.types.YearMonthIntervalType;

/**
 * The Spark types a write refuses: those whose Arrow form would not read back as the same
 * Spark type (the Python data source refuses the same ones, {@code _types._check_writable}).
 */
final class WritableTypes {
  private WritableTypes() {}

  static void check(StructType schema) {
    for (StructField field : schema.fields()) {
      check(field.dataType(), field.name());
    }
  }

  private static void check(DataType type, String column) {
    if (type instanceof VariantType
        || type instanceof CalendarIntervalType
        || type instanceof YearMonthIntervalType
        || type.typeName().startsWith("geo")) {
      throw new LooseleafException(
          "column '" + column + "': Spark type " + type.simpleString() + " cannot be stored in looseleaf");
    }
    if (type instanceof ArrayType array) {
      check(array.elementType(), column + ".element");
    } else if (type instanceof MapType map) {
      check(map.keyType(), column + ".key");
      check(map.valueType(), column + ".value");
    } else if (type instanceof StructType struct) {
      for (StructField field : struct.fields()) {
        check(field.dataType(), column + "." + field.name());
      }
    }
  }
}
