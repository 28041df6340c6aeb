"""The JVM connector (``format("looseleaf")`` in a session configured with it): where its jar
and native library are, and how a session is configured to use them.

The jar (``jvm/``) and the JNI library (``rust/looseleaf-jni``) are built from a source checkout
by ``scripts/build_jvm.sh`` into :func:`default_dir` (``$LOOSELEAF_JVM_DIR``, else
``~/.cache/looseleaf/jvm``); the wheel does not ship them yet. :func:`configure` adds them to a
``SparkSession.builder``: the jar to ``spark.jars``, the library's path to
``spark.looseleaf.nativeLibrary``, which the connector reads on the driver and on executors.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: The connector's data source name.
JVM_FORMAT = "looseleaf"
#: The Python data source's name in a session with the connector (Spark refuses a name that a
#: JVM and a Python source both answer to).
PYTHON_FORMAT = "looseleaf-python"
JAR_NAME = "looseleaf-spark.jar"
LIBRARY_NAME = "liblooseleaf_jni.so"
#: Spark setting naming the native library (read by ``NativeReader.load``).
LIBRARY_CONF = "spark.looseleaf.nativeLibrary"


def default_dir() -> Path:
    """Where ``scripts/build_jvm.sh`` puts the connector by default."""
    configured = os.environ.get("LOOSELEAF_JVM_DIR")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "looseleaf" / "jvm"


def connector_files(directory: str | os.PathLike[str] | None = None) -> tuple[Path, Path]:
    """The jar and the native library in ``directory`` (default :func:`default_dir`); raises
    ``FileNotFoundError`` saying how to build them when either is missing."""
    base = Path(directory) if directory is not None else default_dir()
    jar, library = base / JAR_NAME, base / LIBRARY_NAME
    missing = [str(p) for p in (jar, library) if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"the looseleaf JVM connector is not built ({', '.join(missing)} missing): run "
            f"scripts/build_jvm.sh {base} from a looseleaf source checkout (needs cargo and javac)"
        )
    return jar, library


def configure(builder: Any, directory: str | os.PathLike[str] | None = None) -> Any:
    """Adds the JVM connector to a ``SparkSession.builder`` (before ``getOrCreate()``) and
    returns the builder; ``format("looseleaf")`` then reads and writes through it."""
    jar, library = connector_files(directory)
    options = getattr(builder, "_options", {})
    jars = [j for j in str(options.get("spark.jars", "")).split(",") if j]
    builder = builder.config("spark.jars", ",".join([*jars, str(jar)]))
    return builder.config(LIBRARY_CONF, str(library))


def jvm_enabled(spark: Any) -> bool:
    """Whether the session was configured with the JVM connector (:func:`configure`)."""
    try:
        return JAR_NAME in str(spark.conf.get("spark.jars", "")) and bool(spark.conf.get(LIBRARY_CONF, ""))
    except Exception:
        return False


def python_format(spark: Any) -> str:
    """The name :func:`looseleaf.spark.register` gives the Python data source in ``spark``:
    ``looseleaf``, or ``looseleaf-python`` when the JVM connector holds that name."""
    return PYTHON_FORMAT if jvm_enabled(spark) else JVM_FORMAT
