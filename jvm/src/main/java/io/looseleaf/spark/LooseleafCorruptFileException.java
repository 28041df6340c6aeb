package io.looseleaf.spark;

/** A {@link LooseleafException}: the file is damaged, truncated or not a finished looseleaf file. */
public class LooseleafCorruptFileException extends LooseleafException {
  public LooseleafCorruptFileException(String message, String location) {
    super(message, location);
  }
}
