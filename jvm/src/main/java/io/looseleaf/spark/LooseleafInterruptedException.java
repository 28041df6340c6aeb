package io.looseleaf.spark;

/** A {@link LooseleafException}: a read or write was stopped because its Spark task was killed or its thread interrupted. */
public class LooseleafInterruptedException extends LooseleafException {
  public LooseleafInterruptedException(String message, String location) {
    super(message, location);
  }
}
