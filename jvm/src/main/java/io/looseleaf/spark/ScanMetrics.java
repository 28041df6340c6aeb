package io.looseleaf.spark;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The native reader's I/O counters as Spark SQL metrics of the scan node (shown in the SQL tab
 * of the UI, summed over tasks): bytes read from storage and storage reads.
 */
final class ScanMetrics {
  static final String BYTES_READ = "looseleafBytesRead";
  static final String READS = "looseleafReads";

  private ScanMetrics() {}

  /** The metrics a scan declares. */
  static CustomMetric[] supported() {
    return new CustomMetric[] {new BytesRead(), new Reads()};
  }

  /** Task values from a {@code scanStats} answer ({@code name=value} lines). */
  static CustomTaskMetric[] values(byte[] stats) {
    long bytes = 0;
    long reads = 0;
    for (String line : new String(stats, StandardCharsets.UTF_8).split("\n")) {
      String[] kv = line.split("=", 2);
      if (kv.length == 2 && kv[0].equals("bytesRead")) {
        bytes = Long.parseLong(kv[1]);
      } else if (kv.length == 2 && kv[0].equals("reads")) {
        reads = Long.parseLong(kv[1]);
      }
    }
    return new CustomTaskMetric[] {task(BYTES_READ, bytes), task(READS, reads)};
  }

  static CustomTaskMetric[] zero() {
    return new CustomTaskMetric[] {task(BYTES_READ, 0), task(READS, 0)};
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

  /** Bytes read from storage (public with a no-argument constructor: Spark makes it by name). */
  public static final class BytesRead extends CustomSumMetric {
    @Override
    public String name() {
      return BYTES_READ;
    }

    @Override
    public String description() {
      return "looseleaf bytes read from storage";
    }
  }

  /** Storage reads (public with a no-argument constructor: Spark makes it by name). */
  public static final class Reads extends CustomSumMetric {
    @Override
    public String name() {
      return READS;
    }

    @Override
    public String description() {
      return "looseleaf storage reads";
    }
  }
}
