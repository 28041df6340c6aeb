package io.looseleaf.spark;

/** A {@link LooseleafException}: the file uses a feature or type this build does not support. */
public class LooseleafUnsupportedException extends LooseleafException {
  public LooseleafUnsupportedException(String message, String location) {
    super(message, location);
  }
}
