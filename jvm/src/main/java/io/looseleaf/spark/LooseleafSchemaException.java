package io.looseleaf.spark;

/** A {@link LooseleafException}: data does not match the schema it is written with. */
public class LooseleafSchemaException extends LooseleafException {
  public LooseleafSchemaException(String message, String location) {
    super(message, location);
  }
}
