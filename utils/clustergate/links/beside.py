"""The retest driver as the link matrix's job starts it: beside the
matrix, waiting for its exit status (``--after FILE``), then
:func:`clustergate.links.retest.main` with the same arguments.

The driver's analysis modules take ~0.2 s of CPU to import. Imported at
once, they competed with the matrix's start (mpirun's daemons and the
ranks' MPI initialisation share the node's cores: 9 ranks on 2 cores in
the emulation), which took ~0.15 s longer than without the driver. So the
driver imports nothing until the matrix's output (``--output``) holds its
first result, when the ranks are into their rounds and wait on the links
(or until the exit status is there, whichever comes first). A lower
priority would not do it: the ranks run in other sessions, and the
kernel shares the cores between sessions before it looks at priorities.
This module itself imports only the standard library's os, sys and time.

``python -m clustergate.links.beside --output OUT --after FILE <retest
arguments>``
"""

import os
import sys
import time

#: seconds between two looks at the matrix's output and exit status
POLL_S = 0.02


def _option(argv, name):
    """The value of ``name`` in ``argv``, or None."""
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def has_results(output):
    """True once ``output`` holds something (the matrix's first CG line:
    rank 0 writes the lines of a round after it)."""
    try:
        return os.stat(output).st_size > 0
    except OSError:
        return False


def wait_for(ready, poll=POLL_S):
    """Returns once ``ready()`` is true (a stat or two per look: no
    exception raised, no file opened while the matrix runs)."""
    while not ready():
        time.sleep(poll)


def main(argv=None):
    """Waits for the matrix's first results, imports the analysis, waits
    for ``--after`` (if given), then runs the retest driver with
    ``argv``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    output, after = _option(argv, '--output'), _option(argv, '--after')
    if output and after:
        wait_for(lambda: has_results(output) or os.path.exists(after))
    from clustergate.links import retest
    from clustergate.links import topology  # noqa: F401 (first round)
    import shutil  # noqa: F401 (the retest's launch)
    if after:
        wait_for(lambda: os.path.exists(after))
    return retest.main(argv)


if __name__ == '__main__':
    _status = main()
    from clustergate.links import retest as _retest
    _retest._exit_now(_status)
