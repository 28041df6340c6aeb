package io.looseleaf.spark;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The native reader's counters as Spark SQL metrics of the scan node, shown in the SQL tab of the
 * UI and summed over tasks (DataSource V2's {@code supportedCustomMetrics} and {@code
 * currentMetricsValues}): bytes read from storage, storage reads and requests, retries, the zones,
 * rows and pages a filter spared, and the time spent decoding and waiting for I/O. The names are
 * those of {@code Scan::metrics} in {@code rust/looseleaf-jni/src/reading.rs}.
 */
final class ScanMetrics {
  /** Each metric: the native counter's name, Spark's name (prefixed), and its description. */
  private static final String[][] METRICS = {
    {"bytesRead", "looseleaf bytes read from storage"},
    {"reads", "looseleaf storage reads"},
    {"requests", "looseleaf requests (about a page each)"},
    {"retries", "looseleaf storage requests retried"},
    {"zonesSkipped", "looseleaf zones ruled out by filters"},
    {"rowsSkipped", "looseleaf rows ruled out by filters"},
    {"pagesSkipped", "looseleaf pages not read thanks to filters"},
    {"decodeNanos", "looseleaf decode time (ns, summed over threads)"},
    {"ioWaitNanos", "looseleaf time waiting for I/O (ns)"},
  };

  private ScanMetrics() {}

  static String sparkName(String nativeName) {
    return "looseleaf" + Character.toUpperCase(nativeName.charAt(0)) + nativeName.substring(1);
  }

  /** The metrics a scan declares. */
  static CustomMetric[] supported() {
    CustomMetric[] out = new CustomMetric[METRICS.length];
    for (int i = 0; i < METRICS.length; i++) {
      out[i] = new Sum(sparkName(METRICS[i][0]), METRICS[i][1]);
    }
    return out;
  }

  /** Task values from a {@code scanStats} answer ({@code name=value} lines). */
  static CustomTaskMetric[] values(byte[] stats) {
    Map<String, Long> values = new HashMap<>();
    for (String line : new String(stats, StandardCharsets.UTF_8).split("\n")) {
      String[] kv = line.split("=", 2);
      if (kv.length == 2) {
        values.put(kv[0], Long.parseLong(kv[1]));
      }
    }
    CustomTaskMetric[] out = new CustomTaskMetric[METRICS.length];
    for (int i = 0; i < METRICS.length; i++) {
      out[i] = task(sparkName(METRICS[i][0]), values.getOrDefault(METRICS[i][0], 0L));
    }
    return out;
  }

  static CustomTaskMetric[] zero() {
    return values(new byte[0]);
  }

  private static CustomTaskMetric task(String name, long value) {
    return new CustomTaskMetric() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public long value() {
        return value;
      }
    };
  }

  /**
   * A metric summed over tasks. Spark makes the driver's instances from the class name with a
   * no-argument constructor, so each metric is known here by its name only.
   */
  public static final class Sum extends CustomSumMetric {
    private final String name;
    private final String description;

    public Sum() {
      this("looseleafUnknown", "looseleaf");
    }

    Sum(String name, String description) {
      this.name = name;
      this.description = description;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public String description() {
      return description;
    }
  }
}
