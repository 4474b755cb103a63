#!/usr/bin/env bash
# Installs everything clustergate needs on a fresh Debian 12 machine:
# compilers, OpenMPI and MPICH with their headers (Debian's `mpich` alone
# has mpicc.mpich but no mpi.h: that is libmpich-dev), Slurm and munge (for
# the emulated cluster), hwloc/libnuma, HPC Challenge, NetPIPE and iperf3
# (real benchmarks from Debian), and the project venv (.venv) with
# `pip install -e .`. An MPI that still does not work is left out of the
# configuration with the reason (clustergate.siteinit.mpiprobe).
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
fi

PKGS=(build-essential gfortran openmpi-bin libopenmpi-dev mpich libmpich-dev lmod
      slurm-wlm munge libpmi2-0 hwloc libhwloc-dev libnuma-dev iproute2 procps
      python3 python3-venv python3-pip git
      hpcc netpipe-openmpi netpipe-tcp iperf3 ucx-utils)

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
        || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
        --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's Python, not a user-local one: the venv must be usable by the
# unprivileged user that runs jobs on the emulated cluster.
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with /usr/bin/python3"
    /usr/bin/python3 -m venv .venv
fi

.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test,report,intelmpi]'
# The package is installed editable, so pip compiles none of it; a job
# user who cannot write the checkout (or PYTHONDONTWRITEBYTECODE) would
# compile every module again in every job, where the link matrix's retest
# driver starts beside the matrix (0.11 s of CPU against 0.04 s compiled,
# 2 cores, docs/reports/fault-campaign.md#speed). Stale files are
# recompiled in memory by Python itself: this only saves time.
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m compileall -q utils >/dev/null
echo "setup: done ($(.venv/bin/reframe --version | head -1) in .venv)"
