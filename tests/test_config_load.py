"""Loading the configuration has no side effect beyond the cached MPI
probe: no ``atexit`` handler (the end of a session is armed when ReFrame
loads the checks, clustergate.rfm.session), no module of ``checks/``
imported (references are validated against names read from the source),
and no MPI program run once the probe's cache is warm.

Each load runs in a fresh interpreter that calls itself ``reframe`` (the
command in which the end-of-session handler would be registered) and
records every process it starts."""

import json
import os
import subprocess
import sys

from conftest import ROOT

# run in a subprocess: argv[1] is the project's root
LOAD = r'''
import atexit, json, os, subprocess, sys
root = sys.argv[1]
sys.argv = [os.path.join(os.path.dirname(sys.executable), 'reframe')]
started, hooks = [], []
_popen, _register = subprocess.Popen.__init__, atexit.register


def _recorded(self, args, *a, **kw):
    started.append(args if isinstance(args, str) else
                   ' '.join(str(x) for x in args))
    return _popen(self, args, *a, **kw)


def _hook(func, *a, **kw):
    hooks.append(f'{func.__module__}.{func.__qualname__}')
    return _register(func, *a, **kw)


subprocess.Popen.__init__ = _recorded
import reframe.core.config as config
handlers = atexit._ncallbacks()
atexit.register = _hook
config.load_config(os.path.join(root, 'config', 'settings.py'))
checks = os.path.join(os.path.realpath(root), 'checks') + os.sep
print(json.dumps({
    'atexit': atexit._ncallbacks() - handlers, 'hooks': hooks,
    'checks': sorted(n for n, m in list(sys.modules.items())
                     if os.path.realpath(getattr(m, '__file__', None) or '')
                     .startswith(checks)),
    'started': started}))
'''


def _load(tmp_path):
    env = dict(os.environ, SLURM_CONF='',
               CG_MPI_PROBE_CACHE=str(tmp_path / 'probe.json'),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
               CG_RESULTS_DB=str(tmp_path / 'out' / 'results.db'),
               CG_DEBUG_LOG=str(tmp_path / 'out' / 'reframe.log'))
    cp = subprocess.run([sys.executable, '-c', LOAD, ROOT], env=env,
                        capture_output=True, text=True, timeout=600,
                        cwd=str(tmp_path))
    assert cp.returncode == 0, cp.stderr[-3000:]
    return json.loads(cp.stdout.strip().splitlines()[-1])


def test_loading_the_configuration_has_no_side_effect(tmp_path):
    cold = _load(tmp_path)          # probes the MPIs, fills the cache
    # (the probe's temporary directory is cleaned by Python's own hook)
    ours = [h for h in cold['hooks'] if not h.startswith('weakref.')]
    assert ours == [], f'the configuration registered {ours} at exit'
    assert cold['checks'] == [], cold['checks']

    warm = _load(tmp_path)
    assert warm['atexit'] == 0, warm['hooks']
    assert warm['checks'] == [], warm['checks']
    assert warm['started'] == [], (
        f'with a warm probe cache the load started {warm["started"]}')
