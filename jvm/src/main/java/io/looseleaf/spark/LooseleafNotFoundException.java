package io.looseleaf.spark;

/** A {@link LooseleafException}: the file, object or bucket does not exist. */
public class LooseleafNotFoundException extends LooseleafException {
  public LooseleafNotFoundException(String message, String location) {
    super(message, location);
  }
}
