package io.looseleaf.spark;

/** A {@link LooseleafException}: access to the file or object was denied. */
public class LooseleafPermissionException extends LooseleafException {
  public LooseleafPermissionException(String message, String location) {
    super(message, location);
  }
}
