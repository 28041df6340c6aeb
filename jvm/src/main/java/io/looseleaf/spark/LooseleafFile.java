package io.looseleaf.spark;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.vector.types.pojo.Schema;

/** An open looseleaf file (a native reader handle), closed exactly once. */
final class LooseleafFile implements AutoCloseable {
  private long handle;

  LooseleafFile(String location, Map<String, String> storageOptions) {
    NativeReader.load();
    handle = NativeReader.open(request(location, storageOptions));
  }

  /** A location and its storage options as a native request. */
  static byte[] request(String location, Map<String, String> storageOptions) {
    StringBuilder request = new StringBuilder(location);
    for (Map.Entry<String, String> option : storageOptions.entrySet()) {
      request.append('\n').append(option.getKey()).append('=').append(option.getValue());
    }
    return request.toString().getBytes(StandardCharsets.UTF_8);
  }

  long handle() {
    if (handle == 0) {
      throw new IllegalStateException("the file is closed");
    }
    return handle;
  }

  long numRows() {
    return NativeReader.numRows(handle());
  }

  /** The file's Arrow schema in the form Spark reads (or an error naming the column it cannot). */
  Schema arrowSchema() {
    return schemaOf(NativeReader.schema(handle()));
  }

  /**
   * A column's smallest and largest stored values from its statistics (either null when every
   * value is), or null when the statistics cannot tell.
   */
  java.math.BigInteger[] columnBounds(String column) {
    return MetadataAggregateScan.parseBounds(
        NativeReader.columnBounds(handle(), column.getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * The row ranges ({@code start, end} pairs, ascending) whose zones {@code filter} (the core's
   * JSON form, see {@link SparkFilters}) does not rule out.
   */
  long[] matchingRows(String filter) {
    return NativeReader.matchingRows(handle(), filter.getBytes(StandardCharsets.UTF_8));
  }

  long projectedBytes(List<String> columns) {
    return NativeReader.projectedBytes(handle(), linesRequest(columns));
  }

  static Schema schemaOf(byte[] message) {
    Message m = Message.getRootAsMessage(ByteBuffer.wrap(message));
    org.apache.arrow.flatbuf.Schema schema =
        (org.apache.arrow.flatbuf.Schema) m.header(new org.apache.arrow.flatbuf.Schema());
    return Schema.convertSchema(schema);
  }

  /** The request form of a list of lines (columns, options): {@code null} stays null. */
  static byte[] linesRequest(List<String> columns) {
    return columns == null ? null : String.join("\n", columns).getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    if (handle != 0) {
      long h = handle;
      handle = 0;
      NativeReader.close(h);
    }
  }
}
