package io.looseleaf.spark;

import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Writes a DataFrame as a dataset directory, one file per task, made visible by one commit when
 * the job ends: {@code mode("append")} adds files, {@code mode("overwrite")} ({@link #truncate})
 * replaces them. With {@code partitionBy}, each task writes one file per {@code key=value/}
 * directory its rows fall in (the core's task writer; the columns are left out of the files). The job's steps are the core's ({@code looseleaf::dataset::WriteJob}), the
 * same as the Python data source's, so either path reads what the other wrote.
 */
final class LooseleafWriteBuilder implements WriteBuilder, SupportsTruncate {
  private final CaseInsensitiveStringMap options;
  private final StructType schema;
  private final java.util.List<String> partitionBy;
  private boolean overwrite;

  LooseleafWriteBuilder(CaseInsensitiveStringMap options, StructType schema, java.util.List<String> partitionBy) {
    this.options = options;
    this.schema = schema;
    this.partitionBy = partitionBy;
  }

  @Override
  public WriteBuilder truncate() {
    overwrite = true;
    return this;
  }

  @Override
  public Write build() {
    WriteJobSpec job = new WriteJobSpec(options, schema, overwrite, partitionBy);
    return new Write() {
      @Override
      public String description() {
        return "looseleaf " + (job.overwrite ? "overwrite " : "append ") + job.directory;
      }

      @Override
      public BatchWrite toBatch() {
        job.begin();
        return new JobWrite(job);
      }
    };
  }

  /** The driver's side of a begun job. */
  private static final class JobWrite implements BatchWrite {
    private final WriteJobSpec job;

    JobWrite(WriteJobSpec job) {
      this.job = job;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      WriteJobSpec spec = job; // the factory is sent to the tasks: it must not capture `this`
      return (partitionId, taskId) -> new LooseleafDataWriter(spec, partitionId, taskId);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      StringBuilder files = new StringBuilder();
      for (WriterCommitMessage message : messages) {
        if (message instanceof LooseleafDataWriter.TaskFiles written) {
          for (String name : written.names()) {
            files.append(files.length() > 0 ? "\n" : "").append(name);
          }
        }
      }
      NativeWriter.commitWrite(
          job.jobRequest(), files.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8), job.schemaMessage());
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      NativeWriter.abortWrite(job.jobRequest());
    }
  }
}
