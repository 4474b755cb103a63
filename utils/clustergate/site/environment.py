"""The environment variables clustergate reads: each one declared here,
with what it means, and read only through :func:`get`.

The configuration's second channel (beside ``config/``): a CI job or a
site points clustergate at its own directories, a test pins a date. A
module that needs one imports its constant::

    from clustergate.site import environment as cgenv
    path = cgenv.get(cgenv.RESULTS_DB, default)

``tests/test_environment_vars.py`` fails when a module reads a ``CG_``
variable from ``os.environ`` directly. (Variables clustergate *sets* in
a job's environment, such as ``CG_MPIRUN``, are not read here.)
"""

import contextlib
import os
import socket
from typing import Optional

from clustergate import PROJECT_ROOT

#: directory of ReFrame's perflogs (default: perflogs/ of the project)
PERFLOG_DIR = 'CG_PERFLOG_DIR'
#: ReFrame's results database (default: output/results.db)
RESULTS_DB = 'CG_RESULTS_DB'
#: ReFrame's debug log of a session (default: output/reframe.log)
DEBUG_LOG = 'CG_DEBUG_LOG'
#: the full performance table of the last session (default: beside the
#: debug log, performance.txt)
PERF_TABLE = 'CG_PERF_TABLE'
#: a JUnit XML report of the session (default: none)
JUNIT_REPORT = 'CG_JUNIT_REPORT'
#: directory of the reference files (default: config/references)
REFERENCES_DIR = 'CG_REFERENCES_DIR'
#: where an acceptance session writes its score JSON (default:
#: output/score-<session>.json)
SCORE_FILE = 'CG_SCORE_FILE'
#: a signed-off score JSON the session's score is compared with
SCORE_BASELINE = 'CG_SCORE_BASELINE'
#: the night the rotation plans (YYYY-MM-DD; default: today, UTC)
ROTATION_DATE = 'CG_ROTATION_DATE'
#: where the nightly rotation writes its plan's details (default: beside
#: the results database)
ROTATION_DETAILS = 'CG_ROTATION_DETAILS'
#: '0': no MPI probe at configuration load (every MPI is offered)
MPI_PROBE = 'CG_MPI_PROBE'
#: the file the MPI probe caches its findings in
MPI_PROBE_CACHE = 'CG_MPI_PROBE_CACHE'
#: set: the MPI probe does not print why it left an MPI out
MPI_PROBE_QUIET = 'CG_MPI_PROBE_QUIET'
#: the Intel MPI installation to probe first
IMPI_ROOT = 'CG_IMPI_ROOT'
#: the emulated cluster's state directory (its slurm.conf, its tree)
EMU_STATE_DIR = 'CG_EMU_STATE_DIR'
#: '0': no GPU probe (nvidia-smi -L) at configuration load
GPU_PROBE = 'CG_GPU_PROBE'
#: the file the GPU probe caches what it found in
GPU_PROBE_CACHE = 'CG_GPU_PROBE_CACHE'
#: a folder of prebuilt GPU benchmarks for the embedded localhost
#: (babelstream/, nvbandwidth/, nccl-tests/, gpu-burn/, each as its own
#: build leaves it)
GPU_BENCHMARKS = 'CG_GPU_BENCHMARKS'
#: the cores of this machine as the ``localhost`` system sees them
#: (default: os.cpu_count()): what its sweep and mode sizes would be on
#: a bigger node, listed here (``-l``) before it runs there
LOCALHOST_CORES = 'CG_LOCALHOST_CORES'

#: every variable and what it means
VARIABLES = {
    PERFLOG_DIR: 'directory of the perflogs',
    RESULTS_DB: "ReFrame's results database",
    DEBUG_LOG: "ReFrame's debug log of a session",
    PERF_TABLE: 'the performance table of the last session',
    JUNIT_REPORT: 'a JUnit XML report of the session',
    REFERENCES_DIR: 'directory of the reference files',
    SCORE_FILE: "the acceptance session's score JSON",
    SCORE_BASELINE: 'a signed-off score JSON to compare with',
    ROTATION_DATE: 'the night the rotation plans (YYYY-MM-DD)',
    ROTATION_DETAILS: "where the rotation writes its plan's details",
    MPI_PROBE: "'0': no MPI probe at configuration load",
    MPI_PROBE_CACHE: "the MPI probe's cache file",
    MPI_PROBE_QUIET: 'the MPI probe prints nothing',
    IMPI_ROOT: 'the Intel MPI installation to probe first',
    EMU_STATE_DIR: "the emulated cluster's state directory",
    GPU_PROBE: "'0': no GPU probe at configuration load",
    GPU_PROBE_CACHE: "the GPU probe's cache file",
    GPU_BENCHMARKS: 'prebuilt GPU benchmarks for localhost',
    LOCALHOST_CORES: "the cores of the localhost system (default: this "
                     "machine's)",
}


def get(name: str, default: Optional[str] = None) -> Optional[str]:
    """The value of the declared variable ``name`` (``default`` when it
    is not set; an empty value is returned as it is)."""
    if name not in VARIABLES:
        raise KeyError(f'{name}: not a declared clustergate variable')
    return os.environ.get(name, default)


def references_dir() -> str:
    """The directory of the site's reference files: ``$CG_REFERENCES_DIR``,
    else ``config/references`` of the project (the reference code takes
    it as an argument, so that it reads no variable itself)."""
    return get(REFERENCES_DIR, os.path.join(PROJECT_ROOT, 'config',
                                            'references'))


def probe_cache(name: str, stem: str) -> str:
    """The file a probe of this machine caches its findings in: the
    declared variable ``name`` when it is set, else
    ``<XDG cache>/clustergate/<stem>-<host>.json``."""
    path = get(name)
    if path:
        return path
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(
        os.path.expanduser('~'), '.cache')
    return os.path.join(base, 'clustergate',
                        f'{stem}-{socket.gethostname()}.json')


@contextlib.contextmanager
def overridden(name: str, value: str):
    """``name`` set to ``value`` for the block, then as it was."""
    old = get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old
