#!/usr/bin/env bash
# Set up the ns-3 side of `make bench`: a throw-away virtualenv OUTSIDE the repository holding the
# PyPI wheel ns3==3.44.post0, and the C++ driver bench/fanin_ns3.cc compiled against the headers
# and shared libraries inside that wheel; the same for bench/fattree_ns3.cc (no ns-3 source tree, no CMake).
#
# Only the wheel is installed (`pip install --no-deps`): its include/ and lib64/ are all the C++
# build needs; its Python dependency (cppyy, built from source in minutes) is for the Python
# bindings, which this benchmark does not use.
#
# Idempotent: does nothing when the drivers are already built from the current sources.
# Prints the paths of the fan-in and the fat-tree drivers as its last two lines.
#
# Usage: bench/setup_ns3.sh            (environment: CNSIM_BENCH_DIR, default ~/.cache/cnsim-bench;
#                                       PYTHON, default python3; CXX, default g++)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${CNSIM_BENCH_DIR:-$HOME/.cache/cnsim-bench}
VENV=$DIR/ns3venv
OUT=$DIR/ns3cc
PYTHON=${PYTHON:-python3}
CXX=${CXX:-g++}
NS3_PIN="ns3==3.44.post0"

mkdir -p "$DIR" "$OUT"

# 1. the wheel
if ! ls -d "$VENV"/lib/python3*/site-packages/ns3/lib64 >/dev/null 2>&1; then
    echo "setup_ns3: installing $NS3_PIN (wheel only) into $VENV" >&2
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    nice -n 10 "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps "$NS3_PIN" >&2
fi
NS3=$(ls -d "$VENV"/lib/python3*/site-packages/ns3 | head -1)

# 2. the drivers (each rebuilt when its source or the compile line changes)
FLAGS=(-std=c++20 -O3 -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE)
# The wheel's libraries carry NS3_BUILD_PROFILE_RELEASE + NS3_LOG_ENABLE + NS3_ASSERT_ENABLE
# (see lib64/cmake/ns3Targets.cmake); the same defines make inline header code match them.
LIBS=(-lns3.44-applications -lns3.44-internet -lns3.44-point-to-point -lns3.44-traffic-control
      -lns3.44-network -lns3.44-bridge -lns3.44-stats -lns3.44-core)
build() {  # build NAME: $HERE/NAME.cc -> $OUT/NAME
    local src=$HERE/$1.cc bin=$OUT/$1
    local key
    key=$( { cat "$src"; echo "${FLAGS[*]} ${LIBS[*]} $NS3 $($CXX --version | head -1)"; } | sha256sum | cut -c1-16)
    if [[ -x "$bin" && -f "$OUT/$1.stamp" && "$(cat "$OUT/$1.stamp")" == "$key" ]]; then
        return 0
    fi
    echo "setup_ns3: compiling $src against $NS3" >&2
    nice -n 10 "$CXX" "${FLAGS[@]}" -I"$NS3/include" "$src" -o "$bin.tmp" \
        -L"$NS3/lib64" -Wl,-rpath,"$NS3/lib64" "${LIBS[@]}"
    mv "$bin.tmp" "$bin"
    echo "$key" >"$OUT/$1.stamp"
}
build fanin_ns3
build fattree_ns3
# smoke test: 1 ms of fan-in-4 must deliver something
"$OUT/fanin_ns3" --n=4 --rateGbps=5 --ms=1 | grep -q ' delivered=[1-9]' \
    || { echo "setup_ns3: smoke run of $OUT/fanin_ns3 failed" >&2; exit 1; }
echo "$OUT/fanin_ns3"
echo "$OUT/fattree_ns3"
