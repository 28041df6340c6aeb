package io.looseleaf.spark;

/**
 * The native methods of the write path ({@code rust/looseleaf-jni/src/native_writer.rs}): the
 * steps of a dataset write job ({@code looseleaf::dataset::WriteJob}, the protocol the Python
 * data source follows too) and the file each task writes. Requests are UTF-8 lines, built by
 * {@link WriteJobSpec}; every method throws {@link LooseleafException} on failure.
 */
final class NativeWriter {
  private NativeWriter() {}

  /**
   * Begins a job: {@code request} is directory, mode, pageSize, compression, partition columns
   * (tab-separated), then storage options; {@code schema} an Arrow IPC schema message. Returns
   * the job id (UTF-8).
   */
  static native byte[] beginWrite(byte[] request, byte[] schema);

  /** Commits a job (directory, mode, id, partition columns, storage options) with its tasks' files. */
  static native void commitWrite(byte[] request, byte[] files, byte[] schema);

  static native void abortWrite(byte[] request);

  /**
   * Opens one task attempt's files: directory, mode, id, partition columns, partition, attempt,
   * pageSize, compression, then storage options.
   */
  static native long openWriter(byte[] request);

  /** Writes the next piece of the task's Arrow IPC stream (a schema, then record batches). */
  static native void write(long writer, byte[] stream);

  /**
   * Finishes the files and destroys the handle: one {@code name<TAB>rows<TAB>bytes} line per file
   * to commit (a path below the directory), none when the task wrote nothing or its job ended
   * without it.
   */
  static native byte[] finishWriter(long writer);

  /** Deletes the files and destroys the handle. */
  static native void abortWriter(long writer);
}
