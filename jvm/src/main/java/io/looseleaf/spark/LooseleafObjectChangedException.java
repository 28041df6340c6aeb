package io.looseleaf.spark;

/**
 * A {@link LooseleafIOException}: the file or object changed since it was opened (overwritten,
 * truncated or rewritten in place); reading on would mix bytes of two versions.
 */
public class LooseleafObjectChangedException extends LooseleafIOException {
  public LooseleafObjectChangedException(String message, String location) {
    super(message, location);
  }
}
