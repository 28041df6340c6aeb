"""The JVM connector (``format("looseleaf")`` in a session configured with it): where its jar is,
and how a session is configured to use it.

The wheel carries ``looseleaf-spark.jar`` (built by ``pip install .`` where a JDK is installed,
see ``packaging/looseleaf_build.py``): the connector's classes and the JNI library of the platform
the wheel was built on, which every JVM extracts from the jar and loads itself. A session needs
only the jar in ``spark.jars`` (shipped to the executors by Spark); :func:`configure` adds it.
For ``spark-submit --jars``, ``spark-defaults.conf`` and cluster managers, :func:`jar_path` (or
``looseleaf spark-jar`` on the command line) says where it is.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._connector import JAR_NAME, jar_path

#: The connector's data source name.
JVM_FORMAT = "looseleaf"
#: The Python data source's name in a session with the connector (Spark refuses a name that a
#: JVM and a Python source both answer to).
PYTHON_FORMAT = "looseleaf-python"
#: Spark setting naming a native library installed apart from the jar (read by
#: ``NativeLibrary.load``); unset, each JVM loads the library the jar carries.
LIBRARY_CONF = "spark.looseleaf.nativeLibrary"


def configure(
    builder: Any,
    jar: str | os.PathLike[str] | None = None,
    *,
    native_library: str | os.PathLike[str] | None = None,
) -> Any:
    """Adds the JVM connector to a ``SparkSession.builder`` (before ``getOrCreate()``) and
    returns the builder; ``format("looseleaf")`` then reads and writes through it.

    ``jar`` is the connector's jar (default: this installation's, :func:`jar_path`), or a
    directory holding ``looseleaf-spark.jar`` (what ``scripts/build_jvm.sh`` makes). Only
    ``spark.jars`` is set: Spark ships the jar to every executor, and each loads the native
    library the jar carries. ``native_library`` names a library installed apart, at a path that
    must exist on the driver and on every executor (``spark.looseleaf.nativeLibrary``)."""
    if jar is None:
        path = jar_path()
    else:
        path = Path(jar)
        if path.is_dir():
            path = path / JAR_NAME
        if not path.is_file():
            raise FileNotFoundError(f"no looseleaf connector jar at {path}")
    options = getattr(builder, "_options", {})
    jars = [j for j in str(options.get("spark.jars", "")).split(",") if j]
    builder = builder.config("spark.jars", ",".join([*jars, str(path)]))
    if native_library is not None:
        builder = builder.config(LIBRARY_CONF, str(native_library))
    return builder


def jvm_enabled(spark: Any) -> bool:
    """Whether the session was configured with the JVM connector (:func:`configure`, or
    ``spark.jars`` naming the jar)."""
    try:
        return JAR_NAME in str(spark.conf.get("spark.jars", ""))
    except Exception:
        return False


def python_format(spark: Any) -> str:
    """The name :func:`looseleaf.spark.register` gives the Python data source in ``spark``:
    ``looseleaf``, or ``looseleaf-python`` when the JVM connector holds that name."""
    return PYTHON_FORMAT if jvm_enabled(spark) else JVM_FORMAT
