package io.looseleaf.spark;

/** A {@link LooseleafException}: the storage failed (a network error, a store's error, a disk's). */
public class LooseleafIOException extends LooseleafException {
  public LooseleafIOException(String message, String location) {
    super(message, location);
  }
}
