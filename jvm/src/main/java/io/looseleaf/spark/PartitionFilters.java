package io.looseleaf.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark predicates that read only partition columns, in the core's JSON filter form ({@code
 * looseleaf::filter::Predicate::from_json}), which the core evaluates on each file's partition
 * values ({@link Dataset#keptFiles}): comparisons with integer or string literals, {@code IN},
 * null tests, and {@code AND}/{@code OR}/{@code NOT} of those. This only spells predicates; what
 * they mean for a file is the core's. A predicate with another part is not translated (no file
 * is pruned by it; Spark evaluates it on the rows).
 */
final class PartitionFilters {
  /** The conjunction of the translated predicates, and its literals. */
  private final List<String> parts = new ArrayList<>();

  final List<String> literals = new ArrayList<>();

  /** Translates {@code predicate} if it reads only partition columns; whether it did. */
  boolean add(Predicate predicate, StructType partitions) {
    List<String> literalsBefore = new ArrayList<>(literals);
    String json = translate(predicate, partitions);
    if (json == null) {
      literals.clear();
      literals.addAll(literalsBefore);
      return false;
    }
    parts.add(json);
    return true;
  }

  boolean isEmpty() {
    return parts.isEmpty();
  }

  /** The JSON filter (the conjunction of every predicate added). */
  String json() {
    return "{\"and\": [" + String.join(", ", parts) + "]}";
  }

  /** A readable form for the plan. */
  String describe() {
    return parts.size() + " partition filter(s)";
  }

  private String translate(Expression e, StructType partitions) {
    if (!(e instanceof Predicate p)) {
      return null;
    }
    Expression[] children = p.children();
    switch (p.name()) {
      case "AND":
      case "OR":
        {
          List<String> inner = new ArrayList<>();
          for (Expression child : children) {
            String t = translate(child, partitions);
            if (t == null) {
              return null;
            }
            inner.add(t);
          }
          return "{\"" + p.name().toLowerCase() + "\": [" + String.join(", ", inner) + "]}";
        }
      case "NOT":
        {
          String t = children.length == 1 ? translate(children[0], partitions) : null;
          return t == null ? null : "{\"not\": " + t + "}";
        }
      case "IS_NULL":
      case "IS_NOT_NULL":
        {
          String column = column(children[0], partitions);
          if (column == null) {
            return null;
          }
          return "{\"" + (p.name().equals("IS_NULL") ? "is_null" : "is_valid") + "\": {\"column\": " + column + "}}";
        }
      case "IN":
        {
          String column = column(children[0], partitions);
          if (column == null) {
            return null;
          }
          List<String> alternatives = new ArrayList<>();
          for (int i = 1; i < children.length; i++) {
            String literal = literal(children[i]);
            if (literal == null) {
              return null;
            }
            alternatives.add("{\"compare\": {\"column\": " + column + ", \"op\": \"eq\", \"literal\": " + literal + "}}");
          }
          return "{\"or\": [" + String.join(", ", alternatives) + "]}";
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
          String column = column(left, partitions);
          String literal = column == null ? null : literal(right);
          if (literal == null) {
            return null;
          }
          return "{\"compare\": {\"column\": " + column + ", \"op\": \"" + opName(op) + "\", \"literal\": " + literal + "}}";
        }
      default:
        return null;
    }
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

  /** A partition column as a JSON path, or null. */
  private static String column(Expression e, StructType partitions) {
    if (!(e instanceof NamedReference ref)) {
      return null;
    }
    String[] names = ref.fieldNames();
    if (names.length != 1 || partitions.getFieldIndex(names[0]).isEmpty()) {
      return null;
    }
    return "[\"" + names[0].replace("\\", "\\\\").replace("\"", "\\\"") + "\"]";
  }

  /** Adds an integer or string literal; its index, or null for another kind. */
  private String literal(Expression e) {
    if (!(e instanceof Literal<?> literal)) {
      return null;
    }
    Object value = literal.value();
    String line;
    if (value instanceof Byte || value instanceof Short || value instanceof Integer || value instanceof Long) {
      line = "i:" + ((Number) value).longValue();
    } else if (value instanceof UTF8String text) {
      StringBuilder hex = new StringBuilder("s:");
      for (byte b : text.toString().getBytes(StandardCharsets.UTF_8)) {
        hex.append(String.format("%02x", b));
      }
      line = hex.toString();
    } else {
      return null;
    }
    literals.add(line);
    return Integer.toString(literals.size() - 1);
  }
}
