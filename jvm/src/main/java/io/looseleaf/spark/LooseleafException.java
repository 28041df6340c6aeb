package io.looseleaf.spark;

/** An error of the native reader: the message names the file and what is wrong with it. */
public class LooseleafException extends RuntimeException {
  public LooseleafException(String message) {
    super(message);
  }

  public LooseleafException(String message, Throwable cause) {
    super(message, cause);
  }
}
