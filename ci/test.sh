#!/usr/bin/env bash
# The test command of the README: sets up the machine (ci/setup-debian.sh)
# and runs the whole test suite: unit tests, the end-to-end ReFrame run on
# localhost, and, as root, the emulated Slurm cluster with its fault drills.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup-debian.sh

# The linter first: a lint error (undefined name, unused import ...) fails
# the command before the minutes of tests (rules in pyproject.toml).
.venv/bin/ruff check .

# Tests that need a given system select it themselves. (No dummy SLURM_CONF
# here: with a path that does not exist, srun retries for 60 s per call.)
exec .venv/bin/python -m pytest -ra "$@" tests
