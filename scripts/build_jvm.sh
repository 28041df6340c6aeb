#!/usr/bin/env bash
# Builds the JVM Spark connector from this checkout: looseleaf-spark.jar, holding the connector's
# classes and this platform's JNI library (rust/looseleaf-jni) as a resource. `pip install .`
# builds the same jar into the wheel (packaging/looseleaf_build.py, which this script calls);
# this script is for a connector of a checkout, e.g. a debug build for the tests.
#
#   scripts/build_jvm.sh [--debug] [OUT_DIR]   # default: $LOOSELEAF_JVM_DIR or ~/.cache/looseleaf/jvm
#
# Needs cargo, a JDK (javac) and PySpark (its jars are what the classes compile against). A
# session uses the jar through looseleaf.spark.configure(builder, "OUT_DIR/looseleaf-spark.jar").
set -euo pipefail

debug=()
if [ "${1:-}" = "--debug" ]; then
    debug=(--debug)
    shift
fi
out="${1:-${LOOSELEAF_JVM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/looseleaf/jvm}}"
cd "$(dirname "$0")/.."
exec python3 packaging/looseleaf_build.py connector "$out" "${debug[@]}"
