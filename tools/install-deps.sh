#!/bin/sh
# Installs the Debian packages dml needs to build, test and benchmark.
#   tools/install-deps.sh          build + test dependencies
#   tools/install-deps.sh --bench  also R, PyTorch and Fashion-MNIST for `make bench`
# Run as root (or with sudo available). Safe to run again.
set -eu
# openmpi-bin/libopenmpi-dev: paramserv across ranks (mpirun; mpi.h at build
# time, libmpi loaded only under mpirun) and its tests in tests/mpi/.
# libclang-rt-14-dev: the libFuzzer and sanitizer runtimes clang only
# recommends (CI builds the fuzz targets).
PKGS="build-essential pkg-config flex bison libopenblas-dev libreadline-dev zlib1g-dev libcairo2-dev fonts-dejavu-core tmux clang libclang-rt-14-dev openmpi-bin libopenmpi-dev"
# libzmq3-dev, libjansson-dev, libssl-dev: the Jupyter kernel (ZeroMQ sockets,
# JSON, HMAC-SHA256 signing); the python3-* Jupyter packages and
# jupyter-console test it (tests/jupyter/).
PKGS="$PKGS libzmq3-dev libjansson-dev libssl-dev python3-jupyter-client python3-jupyter-kernel-test jupyter-console python3-nbclient python3-nbformat python3-ipykernel"
if [ "${1:-}" = "--bench" ]; then
    PKGS="$PKGS r-base-core python3-torch python3-numpy dataset-fashion-mnist"
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    echo "installing:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
else
    echo "all build dependencies are installed"
fi
