package io.looseleaf.spark;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.connector.expressions.Cast;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.GeneralScalarExpression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.expressions.aggregate.Max;
import org.apache.spark.sql.connector.expressions.aggregate.Min;
import org.apache.spark.sql.connector.expressions.aggregate.Sum;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's V2 aggregations in the core's aggregation language: the JSON form of {@code
 * looseleaf::aggregate::Aggregation}. This class only spells them; the core decides whether it
 * computes one exactly ({@link Dataset#aggregateSchema} is null when not, and Spark aggregates
 * as usual) and computes the partial results, which Spark merges, or the final ones (complete
 * pushdown, see {@link LooseleafScanBuilder}).
 *
 * <p>Spelled: {@code COUNT(*)}, and {@code COUNT}, {@code SUM}, {@code MIN}, {@code MAX} (not
 * {@code DISTINCT}) of top-level columns, integer and decimal literals, {@code + - *} and casts
 * to decimals and {@code bigint} of those, grouped by top-level columns of the files. Spark
 * translates arithmetic in ANSI mode only, and the core follows its rules for the result types,
 * rounding and overflow ({@code ansi}, {@code precisionLoss}: the session's settings).
 */
final class SparkAggregates {
  private SparkAggregates() {}

  /**
   * The JSON form of {@code aggregation} of the rows where {@code filter} (the core's JSON form,
   * or null) is true, or null if some part of it is not spelled here. {@code complete} asks for
   * final results (Spark's types of the functions' results) instead of partial ones.
   */
  static String translate(
      Aggregation aggregation,
      StructType fileSchema,
      String filter,
      boolean ansi,
      boolean precisionLoss,
      boolean complete) {
    List<String> groups = new ArrayList<>();
    for (Expression e : aggregation.groupByExpressions()) {
      String column = column(e, fileSchema);
      if (column == null) {
        return null;
      }
      groups.add(column);
    }
    List<String> functions = new ArrayList<>();
    for (AggregateFunc f : aggregation.aggregateExpressions()) {
      String function = function(f, fileSchema);
      if (function == null) {
        return null;
      }
      functions.add(function);
    }
    return "{\"group_by\": ["
        + String.join(", ", groups)
        + "], \"aggregates\": ["
        + String.join(", ", functions)
        + "], \"filter\": "
        + (filter == null ? "null" : filter)
        + ", \"ansi\": "
        + ansi
        + ", \"precision_loss\": "
        + precisionLoss
        + ", \"final\": "
        + complete
        + "}";
  }

  /** The top-level columns {@code aggregation} reads, grouping columns first. */
  static List<String> columns(Aggregation aggregation) {
    Set<String> columns = new LinkedHashSet<>();
    for (Expression e : aggregation.groupByExpressions()) {
      for (NamedReference ref : e.references()) {
        columns.add(ref.fieldNames()[0]);
      }
    }
    for (AggregateFunc f : aggregation.aggregateExpressions()) {
      for (NamedReference ref : f.references()) {
        columns.add(ref.fieldNames()[0]);
      }
    }
    return new ArrayList<>(columns);
  }

  private static String function(AggregateFunc f, StructType schema) {
    if (f instanceof CountStar) {
      return "{\"count\": null}";
    }
    String name;
    Expression argument;
    if (f instanceof Count count && !count.isDistinct()) {
      name = "count";
      argument = count.column();
    } else if (f instanceof Sum sum && !sum.isDistinct()) {
      name = "sum";
      argument = sum.column();
    } else if (f instanceof Min min) {
      name = "min";
      argument = min.column();
    } else if (f instanceof Max max) {
      name = "max";
      argument = max.column();
    } else {
      return null;
    }
    String value = expression(argument, schema);
    return value == null ? null : "{\"" + name + "\": " + value + "}";
  }

  private static String expression(Expression e, StructType schema) {
    if (e instanceof NamedReference) {
      String column = column(e, schema);
      return column == null ? null : "{\"column\": " + column + "}";
    }
    if (e instanceof Literal<?> literal) {
      String value = literal(literal);
      return value == null ? null : "{\"literal\": " + value + "}";
    }
    if (e instanceof Cast cast) {
      String value = expression(cast.expression(), schema);
      String to = type(cast.dataType());
      return value == null || to == null ? null : "{\"cast\": {\"value\": " + value + ", \"to\": " + to + "}}";
    }
    if (e instanceof GeneralScalarExpression g && g.children().length == 2) {
      String op =
          switch (g.name()) {
            case "+" -> "add";
            case "-" -> "subtract";
            case "*" -> "multiply";
            default -> null;
          };
      String left = expression(g.children()[0], schema);
      String right = expression(g.children()[1], schema);
      return op == null || left == null || right == null
          ? null
          : "{\"" + op + "\": [" + left + ", " + right + "]}";
    }
    return null;
  }

  /** A top-level column of the files, as a JSON string, or null. */
  private static String column(Expression e, StructType schema) {
    if (!(e instanceof NamedReference ref)) {
      return null;
    }
    String[] names = ref.fieldNames();
    if (names.length != 1 || schema.getFieldIndex(names[0]).isEmpty()) {
      return null;
    }
    return SparkFilters.string(names[0]);
  }

  private static String type(DataType type) {
    if (type instanceof DecimalType d) {
      return "{\"type\": \"decimal128\", \"precision\": " + d.precision() + ", \"scale\": " + d.scale() + "}";
    }
    return type instanceof LongType ? "{\"type\": \"int64\"}" : null;
  }

  /** An integer or decimal literal as a typed value of its own type, or null. */
  private static String literal(Literal<?> literal) {
    Object value = literal.value();
    DataType type = literal.dataType();
    if (value == null) {
      return null;
    }
    String integer =
        type instanceof ByteType
            ? "int8"
            : type instanceof ShortType
                ? "int16"
                : type instanceof IntegerType ? "int32" : type instanceof LongType ? "int64" : null;
    if (integer != null) {
      return "{\"type\": \"" + integer + "\", \"value\": \"" + ((Number) value).longValue() + "\"}";
    }
    if (type instanceof DecimalType decimal && value instanceof Decimal d) {
      return SparkFilters.decimal(decimal, d);
    }
    return null;
  }
}
