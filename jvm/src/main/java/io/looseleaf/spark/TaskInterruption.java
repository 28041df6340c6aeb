package io.looseleaf.spark;

import org.apache.spark.TaskContext;

/**
 * Whether the thread calling is one whose Spark task was killed or which was interrupted: what a
 * native method that waits for I/O asks every 100 ms ({@code rust/looseleaf-jni/src/jvm.rs}),
 * since a thread blocked in native code does not see Java's interruption. Spark marks a killed
 * task's context interrupted, and interrupts its thread when {@code interruptOnCancel} is set.
 */
final class TaskInterruption {
  private TaskInterruption() {}

  static boolean isInterrupted() {
    if (Thread.currentThread().isInterrupted()) {
      return true;
    }
    TaskContext context = TaskContext.get();
    return context != null && context.isInterrupted();
  }
}
