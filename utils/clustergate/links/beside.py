"""The retest driver as the link matrix's job starts it: beside the
matrix, waiting for its exit status (``--after FILE``), then
:func:`clustergate.links.retest.main` with the same arguments.

The driver's analysis modules take ~0.2 s of CPU to import. Imported
while the matrix starts, they took that from the matrix's ranks, which
share the node's cores (9 ranks on 2 cores in the emulation): the job
grew by about that. Here a thread imports them at a lower priority
(nice +:data:`IMPORT_NICE`, the thread alone), so the ranks are served
first and the imports take what the ranks leave; the main thread keeps
the driver's priority for the analysis after the matrix, and the
retest's launches inherit it. This module itself imports nothing else.

``python -m clustergate.links.beside --after FILE <retest arguments>``
"""

import os
import sys
import threading
import time

#: how much lower (nice) the importing thread runs than the driver
IMPORT_NICE = 10

#: seconds between two looks for the matrix's exit status
POLL_S = 0.02


def _import_analysis(seen):
    """The driver's imports (thread body); ``seen['nice']``: the
    thread's priority while it imported."""
    tid = threading.get_native_id()
    try:
        nice = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, nice + IMPORT_NICE))
    except OSError:      # not Linux or refused: import at full priority
        pass
    seen['nice'] = os.getpriority(os.PRIO_PROCESS, tid)
    from clustergate.links import retest  # noqa: F401
    from clustergate.links import topology  # noqa: F401 (first round)
    import shutil  # noqa: F401 (the retest's launch)


def start_imports():
    """The thread that imports the analysis (started); its ``seen``
    dict says at which priority it ran."""
    seen = {}
    loader = threading.Thread(target=_import_analysis, args=(seen,),
                              name='cg-imports', daemon=True)
    loader.seen = seen
    loader.start()
    return loader


def wait_for(path, poll=POLL_S):
    """Returns once ``path`` exists (a stat per look: no exception, no
    file opened while the matrix runs)."""
    while not os.path.exists(path):
        time.sleep(poll)


def main(argv=None):
    """Waits for ``--after`` (if given) while the analysis is imported,
    then runs the retest driver with ``argv``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    loader = start_imports()
    if '--after' in argv[:-1]:
        wait_for(argv[argv.index('--after') + 1])
    loader.join()
    from clustergate.links import retest
    return retest.main(argv)


if __name__ == '__main__':
    from clustergate.links import retest as _retest
    _retest._exit_now(main())
