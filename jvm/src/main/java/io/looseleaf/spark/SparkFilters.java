package io.looseleaf.spark;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark's V2 predicates in the core's one filter language: its JSON form ({@code
 * looseleaf::filter::Predicate::from_json}), constants written as typed values in the tree. The
 * core decides what a filter means for a file's partition values ({@link Dataset#keptFiles}) and
 * for its zones of rows ({@link LooseleafFile#matchingRows}); this class only spells predicates.
 *
 * <p>Translated: comparisons ({@code = <> < <= > >=}) of a top-level column with a literal,
 * {@code IN}, null tests, and {@code AND}/{@code OR}/{@code NOT} of those, on columns of types
 * whose order Spark and the core agree on: integers, dates, timestamps, decimals, booleans, and
 * strings of the binary collation. Floats are left out (Spark orders NaN above every number and
 * makes it equal to itself; the core follows IEEE 754), and so are other collations and types. A
 * predicate with a part that is not translated is not translated at all, except that the parts of
 * an {@code AND} that are may stand for it where only ruling rows out matters ({@link
 * #implied}).
 */
final class SparkFilters {
  private SparkFilters() {}

  /** The conjunction of {@code parts} (JSON filters), or null for none. */
  static String and(List<String> parts) {
    if (parts.isEmpty()) {
      return null;
    }
    return parts.size() == 1 ? parts.get(0) : "{\"and\": [" + String.join(", ", parts) + "]}";
  }

  /**
   * {@code predicate} as a filter on the columns of {@code schema}, exactly, or null if some part
   * of it cannot be translated.
   */
  static String exact(Predicate predicate, StructType schema) {
    return translate(predicate, schema, false);
  }

  /**
   * A filter on the columns of {@code schema} true wherever {@code predicate} is (the
   * translatable parts of a top-level {@code AND}), or null if none: sound for ruling rows out,
   * not for deciding which rows match.
   */
  static String implied(Predicate predicate, StructType schema) {
    return translate(predicate, schema, true);
  }

  /** Whether every column {@code predicate} names is one of {@code schema}'s top-level columns. */
  static boolean readsOnly(Predicate predicate, StructType schema) {
    for (NamedReference ref : predicate.references()) {
      String[] names = ref.fieldNames();
      if (names.length != 1 || schema.getFieldIndex(names[0]).isEmpty()) {
        return false;
      }
    }
    return true;
  }

  private static String translate(Expression e, StructType schema, boolean implied) {
    if (!(e instanceof Predicate p)) {
      return null;
    }
    Expression[] children = p.children();
    switch (p.name()) {
      case "AND":
        {
          List<String> inner = new ArrayList<>();
          for (Expression child : children) {
            String t = translate(child, schema, implied);
            if (t == null && !implied) {
              return null;
            }
            if (t != null) {
              inner.add(t);
            }
          }
          return and(inner);
        }
      case "OR":
        {
          List<String> inner = new ArrayList<>();
          for (Expression child : children) {
            // A disjunct left out would rule out rows it keeps: all or nothing.
            String t = translate(child, schema, false);
            if (t == null) {
              return null;
            }
            inner.add(t);
          }
          return "{\"or\": [" + String.join(", ", inner) + "]}";
        }
      case "NOT":
        {
          String t = children.length == 1 ? translate(children[0], schema, false) : null;
          return t == null ? null : "{\"not\": " + t + "}";
        }
      case "IS_NULL":
      case "IS_NOT_NULL":
        {
          String column = children.length == 1 ? column(children[0], schema) : null;
          if (column == null) {
            return null;
          }
          String name = p.name().equals("IS_NULL") ? "is_null" : "is_valid";
          return "{\"" + name + "\": {\"column\": " + column + "}}";
        }
      case "IN":
        {
          String column = children.length > 0 ? column(children[0], schema) : null;
          if (column == null) {
            return null;
          }
          DataType type = type(children[0], schema);
          List<String> alternatives = new ArrayList<>();
          for (int i = 1; i < children.length; i++) {
            String literal = literal(children[i], type);
            if (literal == null) {
              return null;
            }
            alternatives.add(compare(column, "eq", literal));
          }
          return alternatives.isEmpty() ? null : "{\"or\": [" + String.join(", ", alternatives) + "]}";
        }
      case "=":
      case "<>":
      case "<":
      case "<=":
      case ">":
      case ">=":
        {
          if (children.length != 2) {
            return null;
          }
          String op = p.name();
          Expression left = children[0];
          Expression right = children[1];
          if (left instanceof Literal && right instanceof NamedReference) {
            Expression swap = left;
            left = right;
            right = swap;
            op = flipped(op);
          }
          String column = column(left, schema);
          String literal = column == null ? null : literal(right, type(left, schema));
          return literal == null ? null : compare(column, opName(op), literal);
        }
      default:
        return null;
    }
  }

  private static String compare(String column, String op, String literal) {
    return "{\"compare\": {\"column\": " + column + ", \"op\": \"" + op + "\", \"literal\": " + literal + "}}";
  }

  private static String opName(String op) {
    switch (op) {
      case "=":
        return "eq";
      case "<>":
        return "not_eq";
      case "<":
        return "lt";
      case "<=":
        return "lt_eq";
      case ">":
        return "gt";
      default:
        return "gt_eq";
    }
  }

  private static String flipped(String op) {
    switch (op) {
      case "<":
        return ">";
      case "<=":
        return ">=";
      case ">":
        return "<";
      case ">=":
        return "<=";
      default:
        return op;
    }
  }

  /** A top-level column of {@code schema} of a type the core compares as Spark does, as a JSON path. */
  private static String column(Expression e, StructType schema) {
    if (!(e instanceof NamedReference ref)) {
      return null;
    }
    String[] names = ref.fieldNames();
    if (names.length != 1 || schema.getFieldIndex(names[0]).isEmpty()) {
      return null;
    }
    return comparable(schema.apply(names[0]).dataType()) ? "[" + string(names[0]) + "]" : null;
  }

  private static DataType type(Expression e, StructType schema) {
    return schema.apply(((NamedReference) e).fieldNames()[0]).dataType();
  }

  private static boolean comparable(DataType type) {
    return type instanceof ByteType
        || type instanceof ShortType
        || type instanceof IntegerType
        || type instanceof LongType
        || type instanceof DateType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType
        || type instanceof DecimalType
        || type instanceof BooleanType
        || (type instanceof StringType s && s.isUTF8BinaryCollation());
  }

  /**
   * A literal compared with a column of {@code columnType}, as a typed value, or null if it is
   * not of a kind the column is compared with. A null literal is the typed null (the comparison
   * is then null, as in Spark).
   */
  private static String literal(Expression e, DataType columnType) {
    if (!(e instanceof Literal<?> literal)) {
      return null;
    }
    Object value = literal.value();
    DataType type = literal.dataType();
    if (value == null) {
      return "{\"type\": \"null\"}";
    }
    if (type instanceof ByteType || type instanceof ShortType || type instanceof IntegerType || type instanceof LongType) {
      return typed("int64", "\"" + ((Number) value).longValue() + "\"");
    }
    if (type instanceof DateType && columnType instanceof DateType) {
      return typed("date32", Integer.toString((Integer) value));
    }
    if (type instanceof TimestampType && columnType instanceof TimestampType) {
      return "{\"type\": \"timestamp[us]\", \"tz\": \"UTC\", \"value\": \"" + value + "\"}";
    }
    if (type instanceof TimestampNTZType && columnType instanceof TimestampNTZType) {
      return typed("timestamp[us]", "\"" + value + "\"");
    }
    if (type instanceof DecimalType decimal && value instanceof Decimal d) {
      return decimal(decimal, d);
    }
    if (type instanceof BooleanType && columnType instanceof BooleanType) {
      return typed("boolean", value.toString());
    }
    if (type instanceof StringType s && s.isUTF8BinaryCollation() && value instanceof UTF8String text) {
      return typed("utf8", string(text.toString()));
    }
    return null;
  }

  /** A decimal constant as a typed value of its own type (the unscaled integer as text). */
  static String decimal(DecimalType type, Decimal value) {
    BigDecimal exact = value.toJavaBigDecimal().setScale(type.scale());
    return "{\"type\": \"decimal128\", \"precision\": "
        + type.precision()
        + ", \"scale\": "
        + type.scale()
        + ", \"value\": \""
        + exact.unscaledValue()
        + "\"}";
  }

  private static String typed(String type, String value) {
    return "{\"type\": \"" + type + "\", \"value\": " + value + "}";
  }

  /** {@code text} as a JSON string. */
  static String string(String text) {
    StringBuilder out = new StringBuilder(text.length() + 2).append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"':
          out.append("\\\"");
          break;
        case '\\':
          out.append("\\\\");
          break;
        default:
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
      }
    }
    return out.append('"').toString();
  }
}
