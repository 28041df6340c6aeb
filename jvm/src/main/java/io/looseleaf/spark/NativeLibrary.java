package io.looseleaf.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import org.apache.spark.SparkEnv;

/**
 * Loads the JNI library ({@code rust/looseleaf-jni}) once per JVM, the way zstd-jni, snappy-java
 * and DuckDB's JDBC driver load theirs: from this jar, where the build put it as a resource for
 * the platform it was built on ({@code io/looseleaf/spark/native/<os>-<arch>/}, with its
 * SHA-256), extracted to a private temporary file, checked against the digest, {@link
 * System#load}ed and deleted. Executors need nothing but the jar that {@code spark.jars} ships.
 *
 * <p>Those who install the library themselves name it, first found wins: the system property
 * {@code looseleaf.native.library}, the environment variable {@code LOOSELEAF_NATIVE_LIBRARY},
 * or the Spark setting {@code spark.looseleaf.nativeLibrary}. The system property {@code
 * looseleaf.native.tmpdir} chooses where the resource is extracted (default {@code
 * java.io.tmpdir}).
 */
final class NativeLibrary {
  static final String LIBRARY_PROPERTY = "looseleaf.native.library";
  static final String LIBRARY_ENV = "LOOSELEAF_NATIVE_LIBRARY";
  static final String LIBRARY_CONF = "spark.looseleaf.nativeLibrary";
  static final String TMPDIR_PROPERTY = "looseleaf.native.tmpdir";
  private static final String RESOURCES = "/io/looseleaf/spark/native/";

  private static boolean loaded;

  private NativeLibrary() {}

  /** Loads the library if this JVM has not yet; throws {@link LooseleafException} saying why not. */
  static synchronized void load() {
    if (loaded) {
      return;
    }
    String path = System.getProperty(LIBRARY_PROPERTY);
    if (path == null) {
      path = System.getenv(LIBRARY_ENV);
    }
    if (path == null && SparkEnv.get() != null) {
      path = SparkEnv.get().conf().get(LIBRARY_CONF, null);
    }
    try {
      if (path != null) {
        System.load(path);
      } else {
        loadResource();
      }
    } catch (UnsatisfiedLinkError e) {
      throw new LooseleafException(
          "looseleaf: cannot load the native library "
              + (path != null ? path : "of " + platform() + " from looseleaf-spark.jar")
              + ": "
              + e.getMessage(),
          e);
    }
    loaded = true;
  }

  /** This JVM's platform as the build names it: {@code linux-x86_64}, {@code osx-aarch64}, ... */
  static String platform() {
    String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
    String system = os.startsWith("mac") || os.startsWith("darwin") ? "osx" : os.startsWith("windows") ? "windows" : os.split(" ")[0];
    String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
    switch (arch) {
      case "amd64":
      case "x64":
        arch = "x86_64";
        break;
      case "arm64":
        arch = "aarch64";
        break;
      default:
    }
    return system + "-" + arch;
  }

  private static void loadResource() {
    String name = System.mapLibraryName("looseleaf_jni");
    String resource = RESOURCES + platform() + "/" + name;
    String expected;
    try (InputStream digest = NativeLibrary.class.getResourceAsStream(resource + ".sha256")) {
      if (digest == null) {
        throw new LooseleafException(
            "looseleaf: this looseleaf-spark.jar holds no native library for "
                + platform()
                + " (it holds the platform its wheel was built on): build the wheel on "
                + platform()
                + ", or set "
                + LIBRARY_CONF
                + " to a library built there");
      }
      expected = new String(digest.readAllBytes(), StandardCharsets.US_ASCII).trim();
    } catch (IOException e) {
      throw new LooseleafException("looseleaf: cannot read " + resource + ".sha256 from looseleaf-spark.jar", e);
    }
    Path directory = null;
    Path file = null;
    try {
      String base = System.getProperty(TMPDIR_PROPERTY, System.getProperty("java.io.tmpdir"));
      directory = Files.createTempDirectory(Paths.get(base), "looseleaf-jni-", owner());
      file = directory.resolve(name);
      String actual = extract(resource, file);
      if (!actual.equals(expected)) {
        throw new LooseleafException(
            "looseleaf: the native library extracted to " + file + " has SHA-256 " + actual + ", not " + expected);
      }
      System.load(file.toString());
    } catch (IOException e) {
      throw new LooseleafException("looseleaf: cannot extract the native library " + resource + ": " + e, e);
    } finally {
      // A loaded library stays mapped: its file is no longer needed (on POSIX systems).
      deleteQuietly(file);
      deleteQuietly(directory);
    }
  }

  /** Copies {@code resource} to {@code file} (readable by its owner only); its SHA-256. */
  private static String extract(String resource, Path file) throws IOException {
    MessageDigest sha;
    try {
      sha = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IOException("no SHA-256 in this JVM", e);
    }
    try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IOException("looseleaf-spark.jar has the digest of " + resource + " but not the library");
      }
      Files.createFile(file, owner());
      try (DigestInputStream digest = new DigestInputStream(in, sha);
          OutputStream out = Files.newOutputStream(file)) {
        digest.transferTo(out);
      }
    }
    return HexFormat.of().formatHex(sha.digest());
  }

  @SuppressWarnings("unchecked")
  private static java.nio.file.attribute.FileAttribute<?>[] owner() {
    if (!java.nio.file.FileSystems.getDefault().supportedFileAttributeViews().contains("posix")) {
      return new java.nio.file.attribute.FileAttribute<?>[0];
    }
    return new java.nio.file.attribute.FileAttribute<?>[] {
      PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"))
    };
  }

  private static void deleteQuietly(Path path) {
    if (path == null) {
      return;
    }
    try {
      Files.deleteIfExists(path);
    } catch (IOException e) {
      path.toFile().deleteOnExit();
    }
  }
}
