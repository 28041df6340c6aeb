package io.looseleaf.spark;

/** A {@link LooseleafException}: an option, a row range or another argument is wrong (the message names it). */
public class LooseleafInvalidArgumentException extends LooseleafException {
  public LooseleafInvalidArgumentException(String message, String location) {
    super(message, location);
  }
}
