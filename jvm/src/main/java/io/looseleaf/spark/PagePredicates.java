package io.looseleaf.spark;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
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
 * Spark predicates as the page predicates of the native reader ({@code
 * looseleaf::PagePredicate}): comparisons of a top-level column of an integer-ordered type
 * (integers, dates, timestamps, decimals, compared in their stored units) with a literal, null
 * tests, and conjunctions of those. What cannot be translated is left out, which is sound: page
 * skipping only narrows the rows read, and Spark filters every row read again.
 */
final class PagePredicates {
  private PagePredicates() {}

  /** The page predicates {@code predicate} implies (empty: it rules nothing out). */
  static List<String> translate(Predicate predicate, StructType schema) {
    List<String> out = new ArrayList<>();
    collect(predicate, schema, out);
    return out;
  }

  private static void collect(Predicate p, StructType schema, List<String> out) {
    Expression[] children = p.children();
    switch (p.name()) {
      case "AND":
        for (Expression child : children) {
          if (child instanceof Predicate) {
            collect((Predicate) child, schema, out);
          }
        }
        return;
      case "IS_NULL":
      case "IS_NOT_NULL":
        String column = column(children[0], schema);
        if (column != null) {
          out.add(column + "\t" + (p.name().equals("IS_NULL") ? "isnull" : "isnotnull"));
        }
        return;
      case "=":
      case "<":
      case "<=":
      case ">":
      case ">=":
        if (children.length != 2) {
          return;
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
        String name = column(left, schema);
        if (name == null || !(right instanceof Literal)) {
          return;
        }
        String value = storedValue(((Literal<?>) right).value(), schema.apply(name).dataType());
        if (value != null) {
          out.add(name + "\t" + op + "\t" + value);
        }
        return;
      default:
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

  /** The top-level column an expression names, if it names one of {@code schema}. */
  private static String column(Expression e, StructType schema) {
    if (!(e instanceof NamedReference)) {
      return null;
    }
    String[] names = ((NamedReference) e).fieldNames();
    if (names.length != 1 || schema.getFieldIndex(names[0]).isEmpty()) {
      return null;
    }
    return names[0];
  }

  /** A literal in the stored units of a column of {@code type}, or null if not comparable so. */
  private static String storedValue(Object value, DataType type) {
    if (value == null) {
      return null;
    }
    if (type instanceof ByteType
        || type instanceof ShortType
        || type instanceof IntegerType
        || type instanceof LongType
        || type instanceof DateType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType) {
      return value instanceof Number ? Long.toString(((Number) value).longValue()) : null;
    }
    if (type instanceof DecimalType && value instanceof Decimal) {
      BigDecimal exact = ((Decimal) value).toJavaBigDecimal();
      try {
        return exact.setScale(((DecimalType) type).scale()).unscaledValue().toString();
      } catch (ArithmeticException e) {
        return null; // the literal has more digits than the column: not compared by pages
      }
    }
    return null;
  }
}
