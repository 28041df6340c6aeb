"""The build backend of the looseleaf wheel: maturin's, plus the JVM Spark connector.

``pip install .`` builds the Python extension with maturin and, where a JDK is installed, the
connector too: the JNI library (``rust/looseleaf-jni``, a release build) and the Java classes
(``jvm/``, compiled with ``javac`` against the jars of PySpark, which the build then requires),
packed into one ``looseleaf-spark.jar`` that holds the library as a resource for the platform it
was built on (``io/looseleaf/spark/native/<os>-<arch>/``, with its SHA-256). The jar goes into
the wheel as ``looseleaf/jars/looseleaf-spark.jar``; ``looseleaf.spark.jar_path()`` finds
it. Without ``javac`` the wheel is built without the connector and says so.

Also a command, for a connector built from a checkout (``scripts/build_jvm.sh`` calls it)::

    python3 packaging/looseleaf_build.py connector OUT_DIR [--debug]
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
JAR_NAME = "looseleaf-spark.jar"
#: Where the wheel carries the jar (inside the Python package's source tree while building).
WHEEL_JAR = ROOT / "python" / "looseleaf" / "jars" / JAR_NAME
#: What compiling the connector needs besides a JDK: Spark's and Arrow's API jars.
SPARK_REQUIREMENT = "pyspark>=4,<5"
#: Setting this to 0 builds the wheel without the connector even where a JDK is installed.
CONNECTOR_ENV = "LOOSELEAF_BUILD_CONNECTOR"


def _wants_connector() -> bool:
    if os.environ.get(CONNECTOR_ENV, "1") == "0":
        return False
    return shutil.which("javac") is not None and shutil.which("jar") is not None


# PEP 517's interface: maturin's, with the connector staged before a wheel is built. maturin is
# imported inside each hook, so that `main` (the connector alone) runs without it.


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    import maturin

    extra = [SPARK_REQUIREMENT] if _wants_connector() else []
    return [*maturin.get_requires_for_build_wheel(config_settings), *extra]


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    import maturin

    extra = [SPARK_REQUIREMENT] if _wants_connector() else []
    return [*maturin.get_requires_for_build_editable(config_settings), *extra]


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    import maturin

    _stage_connector()
    try:
        return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)
    finally:
        # The wheel has it now: a jar left in the tree would outlive the code it was built from.
        WHEEL_JAR.unlink(missing_ok=True)


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    import maturin

    _stage_connector()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    import maturin

    return maturin.get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    import maturin

    return maturin.build_sdist(sdist_directory, config_settings)


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    import maturin

    return maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    import maturin

    return maturin.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def _stage_connector() -> None:
    """Builds the connector into the package's source tree (or removes a stale one)."""
    WHEEL_JAR.unlink(missing_ok=True)
    if not _wants_connector():
        reason = f"{CONNECTOR_ENV}=0" if os.environ.get(CONNECTOR_ENV) == "0" else "javac or jar not found"
        print(f"looseleaf: building the wheel without the JVM Spark connector ({reason})", file=sys.stderr)
        return
    WHEEL_JAR.parent.mkdir(parents=True, exist_ok=True)
    build_connector(WHEEL_JAR, release=True)


def platform_key() -> str:
    """This machine as the connector names platforms: ``linux-x86_64``, ``osx-aarch64``, ..."""
    system = {"Darwin": "osx", "Windows": "windows"}.get(platform.system(), platform.system().lower())
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{system}-{machine}"


def _library_name() -> str:
    system = platform.system()
    if system == "Darwin":
        return "liblooseleaf_jni.dylib"
    if system == "Windows":
        return "looseleaf_jni.dll"
    return "liblooseleaf_jni.so"


def _spark_jars() -> Path:
    try:
        import pyspark
    except ImportError as e:
        raise RuntimeError(f"building the JVM connector needs {SPARK_REQUIREMENT} (its jars): {e}") from e
    return Path(pyspark.__file__).parent / "jars"


def build_connector(jar: Path, *, release: bool = True) -> Path:
    """Builds ``looseleaf-spark.jar`` at ``jar``: the Java classes, their resources and this
    platform's JNI library with its SHA-256. Returns the library built (in cargo's target)."""
    profile = "release" if release else "debug"
    cargo = ["cargo", "build", "--locked", "-p", "looseleaf-jni"] + (["--release"] if release else [])
    subprocess.run(cargo, cwd=ROOT, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    library = target / profile / _library_name()
    with tempfile.TemporaryDirectory(prefix="looseleaf-jvm-") as scratch:
        classes = Path(scratch) / "classes"
        sources = sorted(str(p) for p in (ROOT / "jvm" / "src" / "main" / "java").rglob("*.java"))
        classpath = f"{_spark_jars()}/*"
        javac = ["javac", "-nowarn", "--release", "17", "-d", str(classes), "-cp", classpath, *sources]
        subprocess.run(javac, cwd=ROOT, check=True)
        shutil.copytree(ROOT / "jvm" / "src" / "main" / "resources", classes, dirs_exist_ok=True)
        native = classes / "io" / "looseleaf" / "spark" / "native" / platform_key()
        native.mkdir(parents=True)
        data = library.read_bytes()
        (native / library.name).write_bytes(data)
        (native / f"{library.name}.sha256").write_text(hashlib.sha256(data).hexdigest() + "\n")
        partial = jar.with_suffix(".jar.partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            for path in sorted(classes.rglob("*")):
                if path.is_file():
                    out.write(path, path.relative_to(classes).as_posix())
        partial.replace(jar)
    return library


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "connector":
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    build_connector(out / JAR_NAME, release="--debug" not in argv)
    print(out / JAR_NAME)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
