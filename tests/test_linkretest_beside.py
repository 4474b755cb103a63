"""The retest driver started beside the matrix (clustergate.links.beside):
its analysis is imported by a thread at a lower priority than the ranks,
while the driver itself keeps its priority for the work after the matrix;
it waits for the matrix's exit status, then runs the retest driver."""

import os
import subprocess
import sys
import threading
import time

from clustergate.links import beside


def test_the_imports_run_below_the_driver_and_the_driver_keeps_its_rank():
    main_before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    loader = beside.start_imports()
    loader.join(60)
    assert not loader.is_alive()
    # (a test run already at nice 19 has no lower priority to give)
    assert loader.seen['nice'] == min(19, main_before + beside.IMPORT_NICE)
    # the driver's own thread (the analysis, the retest's launches) and
    # the process as a whole are untouched
    assert os.getpriority(os.PRIO_PROCESS,
                          threading.get_native_id()) == main_before
    assert os.getpriority(os.PRIO_PROCESS, 0) == main_before


def test_a_fresh_driver_imports_nothing_heavy_before_its_thread():
    # the module as the job starts it: its own imports are the standard
    # library's only, so the analysis' ~0.2 s of CPU is all in the thread
    code = ('import sys; import clustergate.links.beside; '
            'print(sorted(m for m in sys.modules '
            'if m.startswith("clustergate")))')
    cp = subprocess.run([sys.executable, '-c', code], capture_output=True,
                        text=True, timeout=60)
    assert cp.stdout.strip() == ("['clustergate', 'clustergate.links', "
                                 "'clustergate.links.beside']"), cp.stderr


def test_waits_for_the_exit_status_file(tmp_path):
    path = tmp_path / 'rc'

    def later():
        time.sleep(0.3)
        (tmp_path / 'rc.new').write_text('0\n')
        os.rename(tmp_path / 'rc.new', path)

    writer = threading.Thread(target=later)
    t0 = time.monotonic()
    writer.start()
    beside.wait_for(str(path), poll=0.01)
    waited = time.monotonic() - t0
    writer.join()
    assert path.exists() and waited >= 0.3
