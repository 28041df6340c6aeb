package io.looseleaf.spark;

/**
 * An error of looseleaf: the message names the file and what is wrong with it. Errors of the
 * core come as the subclass of their kind (not found, permission, I/O, corrupt file,
 * unsupported, invalid argument, schema, interrupted), so that callers and Spark's retry logic
 * can tell them apart; {@link #location()} is the file, where known.
 */
public class LooseleafException extends RuntimeException {
  private final String location;

  public LooseleafException(String message) {
    this(message, (String) null);
  }

  public LooseleafException(String message, Throwable cause) {
    super(message, cause);
    this.location = null;
  }

  /** Made by the native side: the error's message and the file it is about (or null). */
  public LooseleafException(String message, String location) {
    super(message);
    this.location = location;
  }

  /** The file or object the error is about, if known. */
  public String location() {
    return location;
  }
}
