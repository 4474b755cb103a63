"""Running commands, and starting/stopping the cluster's daemons by PID.

Daemons run in the foreground (``-D``/``-F``) as children detached into
their own session, so the PID we get from ``Popen`` IS the daemon's PID
(``nsenter``, ``unshare`` and ``sh -c 'exec ...'`` all exec, they do not
fork). Each PID is recorded with its start time from ``/proc/PID/stat``;
a PID whose start time differs has been recycled and is left alone.
"""

import os
import signal
import subprocess
import time


class ClusterError(Exception):
    """A failure with a message meant for the user; ``daemons`` names the
    daemons (as recorded in the state) whose log tails explain it."""

    def __init__(self, message, daemons=()):
        super().__init__(message)
        self.daemons = list(daemons)


def run(cmd, input=None, timeout=30, check=True):
    """Run ``cmd`` (a list), return its CompletedProcess; on failure raise
    ClusterError naming the command and its stderr."""
    try:
        cp = subprocess.run(cmd, input=input, capture_output=True,
                            text=True, timeout=timeout)
    except FileNotFoundError as err:
        raise ClusterError(f'command not found: {cmd[0]}') from err
    except subprocess.TimeoutExpired as err:
        raise ClusterError(f'timed out after {timeout} s: '
                           f'{" ".join(cmd)}') from err

    if check and cp.returncode != 0:
        detail = (cp.stderr or cp.stdout).strip()
        raise ClusterError(f'failed ({cp.returncode}): {" ".join(cmd)}\n'
                           f'{detail}')

    return cp


def run_batch(cmd, lines):
    """Apply ``lines`` with one ``-batch -`` process of ``cmd`` (``ip``,
    ``tc``, ``bridge``, with its options)."""
    run(cmd + ['-batch', '-'], input='\n'.join(lines) + '\n')


def _stat(pid):
    try:
        with open(f'/proc/{pid}/stat') as fp:
            data = fp.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None

    # comm may contain spaces and parentheses: split after the last ')'
    fields = data[data.rindex(')') + 2:].split()
    return fields


def start_time(pid):
    """Start time of ``pid`` (clock ticks since boot), None if gone."""
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def alive(rec):
    """Is the process of record ``rec`` (``{'pid', 'start'}``) running?"""
    _reap(rec['pid'])
    fields = _stat(rec['pid'])
    if not fields or fields[0] in ('Z', 'X'):
        return False

    return int(fields[19]) == rec['start']


def spawn(cmd, log, env=None):
    """Start ``cmd`` detached (own session, stdin from /dev/null, output
    appended to ``log``); return its record ``{'pid', 'start', 'cmd'}``."""
    with open(log, 'ab') as out:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, env=env,
                             start_new_session=True, close_fds=True)

    start = None
    deadline = time.monotonic() + 2
    while start is None and time.monotonic() < deadline:
        start = start_time(p.pid)
        if start is None:
            time.sleep(0.005)

    return {'pid': p.pid, 'start': start or 0, 'cmd': cmd}


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def stop_all(recs, timeout=8.0, kill_timeout=2.0):
    """SIGTERM all live records at once, wait up to ``timeout`` s, SIGKILL
    the rest and wait up to ``kill_timeout`` s. Returns the records still
    alive (should be empty)."""
    live = [r for r in recs if alive(r)]
    for r in live:
        _signal(r['pid'], signal.SIGTERM)

    for sig, limit in ((signal.SIGKILL, timeout), (None, kill_timeout)):
        deadline = time.monotonic() + limit
        while live and time.monotonic() < deadline:
            time.sleep(0.05)
            live = [r for r in live if alive(r)]

        if sig is not None:
            for r in live:
                _signal(r['pid'], sig)

    return live


def kill_pids(pids):
    """SIGKILL bare PIDs (processes left in a namespace being removed)."""
    for pid in pids:
        if pid != os.getpid():
            _signal(pid, signal.SIGKILL)


def tail(path, lines=20):
    """Last ``lines`` lines of a file (for error messages)."""
    try:
        with open(path, errors='replace') as fp:
            return ''.join(fp.readlines()[-lines:])
    except OSError as err:
        return f'(cannot read {path}: {err})\n'
