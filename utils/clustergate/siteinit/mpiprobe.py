"""Is an MPI programming environment usable here? Probe it before offering it.

A wrapper on PATH is no proof: Debian's ``mpich`` package ships
``mpicc.mpich`` but not ``mpi.h`` (that is ``libmpich-dev``), and a
configuration that offered the environment because the wrapper exists made
every MPICH test of a fresh machine fail to build. So each MPI environment
of the configuration is offered only when its wrapper compiles and links a
two-rank MPI hello and that MPI's own launcher runs it, locally.

The verdict is cached per machine (``$CG_MPI_PROBE_CACHE``, default
``~/.cache/clustergate/mpi-probe-<host>.json``), keyed by the path, mtime and
size of the wrapper, the launcher and the dpkg database, so installing a
package later invalidates it. An environment that fails is left out with a
one-line reason (:func:`left_out`), printed once per process to stderr when
the configuration is loaded (before ReFrame's session header), and by
``clustergate sweep``.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from clustergate.site import environment as cgenv

#: Seconds each step (compile, run) may take before the probe gives up
TIMEOUT = 60

#: Bump when the probe itself changes, so old verdicts are not trusted
_PROBE_VERSION = 1

_HELLO = r'''
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, token = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* one message each way: a launcher that starts two singletons
       (ranks that do not know each other) fails here, not silently */
    if (size == 2 && rank == 0) {
        MPI_Send(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (size == 2) {
        MPI_Recv(&token, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token = 42;
        MPI_Send(&token, 1, MPI_INT, 0, 8, MPI_COMM_WORLD);
    }
    printf("cg-probe rank %d of %d token %d\n", rank, size, token);
    MPI_Finalize();
    return 0;
}
'''

#: Launcher flags per MPI family: a machine with one core must still run
#: two ranks
_LAUNCH_FLAGS = {'openmpi': ['--oversubscribe']}

#: Reasons of the environments left out in this process, by name
_LEFT_OUT = {}
_PRINTED = set()


class ProbeFailed(Exception):
    """The environment does not work; the message is the one-line reason."""


def left_out():
    """``{environment name: one-line reason}`` of this process so far."""
    return dict(_LEFT_OUT)


def _cache_path():
    return cgenv.probe_cache(cgenv.MPI_PROBE_CACHE, 'mpi-probe')


def _stamp(path):
    try:
        stat = os.stat(path)
        return [os.path.realpath(path), stat.st_mtime_ns, stat.st_size]
    except OSError:
        return [path, None, None]


def _env_for(env_vars):
    """os.environ with the environment's variables applied in order
    (``$PATH`` in a value expands to the value so far, as in a job script)."""
    env = dict(os.environ)
    for name, value in env_vars:
        env[name] = re.sub(r'\$\{?(\w+)\}?',
                           lambda m: env.get(m.group(1), ''), str(value))

    return env


def _which(cmd, env):
    return shutil.which(cmd, path=env.get('PATH'))


def _key(environ, cc, launcher):
    parts = [_PROBE_VERSION, environ['name'], _stamp(cc), _stamp(launcher),
             _stamp('/var/lib/dpkg/status'), environ.get('env_vars', [])]
    return hashlib.sha256(json.dumps(parts, sort_keys=True,
                                     default=str).encode()).hexdigest()


def _first_error(text):
    """The line of compiler/linker/launcher output that says what failed,
    without the file:line prefix."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # the linker's own complaint, not collect2's "ld returned 1"
    for ln in lines:
        if 'undefined reference' in ln or 'cannot find' in ln:
            return re.sub(r'^.*?:\s*(?=undefined|cannot)', '', ln)

    for ln in lines:
        m = re.search(r'(?:fatal )?error:\s*(.*)', ln)
        if m and m.group(1):
            return m.group(1)

    return lines[-1] if lines else 'no output'


def _run(cmd, env, cwd, what):
    try:
        return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True,
                              text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ProbeFailed(f'{what} did not finish in {TIMEOUT} s') from None
    except OSError as err:
        raise ProbeFailed(f'{what}: {err.strerror}') from None


def probe(environ):
    """Compile, link and run the two-rank hello with ``environ`` (a ReFrame
    environment dict: ``cc``, ``env_vars`` with ``CG_MPIRUN``, ``extras``
    with ``mpi_family``). Returns None when it works; raises
    :class:`ProbeFailed` with the reason otherwise. Not cached."""
    env = _env_for(environ.get('env_vars', []))
    cc_name = environ['cc']
    cc = _which(cc_name, env)
    if cc is None:
        raise ProbeFailed(f'{cc_name} not found')

    launcher_name = env.get('CG_MPIRUN', 'mpirun')
    launcher = _which(launcher_name, env)
    if launcher is None:
        raise ProbeFailed(f'launcher {launcher_name} not found')

    family = environ.get('extras', {}).get('mpi_family')
    with tempfile.TemporaryDirectory(prefix='cg-mpiprobe-') as tmp:
        with open(os.path.join(tmp, 'hello.c'), 'w') as fp:
            fp.write(_HELLO)

        res = _run([cc, '-c', 'hello.c', '-o', 'hello.o'], env, tmp,
                   f'{cc_name} compiling an MPI program')
        if res.returncode != 0:
            raise ProbeFailed(f'{cc_name} cannot compile an MPI program: '
                              f'{_first_error(res.stderr + res.stdout)}')

        res = _run([cc, 'hello.o', '-o', 'hello'], env, tmp,
                   f'{cc_name} linking an MPI program')
        if res.returncode != 0:
            raise ProbeFailed(f'{cc_name} cannot link an MPI program: '
                              f'{_first_error(res.stderr + res.stdout)}')

        cmd = [launcher, *_LAUNCH_FLAGS.get(family, []), '-np', '2',
               './hello']
        res = _run(cmd, env, tmp,
                   f'{launcher_name} running a two-rank MPI program')
        ranks = set(re.findall(r'^cg-probe rank (\d) of 2 token 42$',
                               res.stdout, re.M))
        if res.returncode != 0 or ranks != {'0', '1'}:
            why = (f'exit code {res.returncode}' if res.returncode != 0
                   else 'the ranks did not both report as 2 ranks')
            detail = _first_error(res.stderr + res.stdout)
            raise ProbeFailed(f'{launcher_name} cannot run a two-rank MPI '
                              f'program ({why}): {detail}')

    return None


def _load_cache(path):
    try:
        with open(path) as fp:
            data = json.load(fp)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_cache(path, data):
    # atomic: several sessions may probe at the same time
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path),
                                   prefix='.mpi-probe-')
        with os.fdopen(fd, 'w') as fp:
            json.dump(data, fp, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass   # no cache: the probe runs again next time, nothing worse


def verdict(environ, cache=True):
    """``None`` when ``environ`` works, else the one-line reason; cached."""
    env = _env_for(environ.get('env_vars', []))
    cc = _which(environ['cc'], env) or environ['cc']
    launcher_name = env.get('CG_MPIRUN', 'mpirun')
    launcher = _which(launcher_name, env) or launcher_name
    key = _key(environ, cc, launcher)
    path = _cache_path()
    data = _load_cache(path) if cache else {}
    if key in data:
        return data[key]['reason']

    try:
        reason = probe(environ)
    except ProbeFailed as err:
        reason = str(err)

    if cache:
        data = _load_cache(path)
        data[key] = {'environ': environ['name'], 'reason': reason}
        _save_cache(path, data)

    return reason


def report(name, reason, stream=None):
    """Print ``<name> left out: <reason>`` once per process."""
    if (name, reason) in _PRINTED or cgenv.get(cgenv.MPI_PROBE_QUIET):
        return

    _PRINTED.add((name, reason))
    print(f'clustergate: {name} left out: {reason}',
          file=stream or sys.stderr)


def working(environs):
    """The environments of ``environs`` that work here; the others are
    recorded in :func:`left_out` and reported. ``CG_MPI_PROBE=0`` turns the
    probe off (every environment offered, e.g. to see a build fail)."""
    if cgenv.get(cgenv.MPI_PROBE) == '0':
        return list(environs)

    out = []
    for environ in environs:
        reason = verdict(environ)
        if reason is None:
            out.append(environ)
        else:
            _LEFT_OUT[environ['name']] = reason
            report(environ['name'], reason)

    return out


def not_installed(name, reason):
    """Record an environment that the configuration could not even
    describe (e.g. Intel MPI not installed), as :func:`working` does."""
    _LEFT_OUT[name] = reason
    report(name, reason)
