"""Shared helpers of the test suite."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, 'checks', 'src')
FIXTURES = os.path.join(ROOT, 'tests', 'fixtures')
BINDIR = os.path.dirname(sys.executable)

# -- the suite writes nothing into the work tree ------------------------------

#: Where the ReFrame sessions the tests start, and the configuration they
#: load in process, keep perflogs, the results database and the session log
#: (config/common.py reads these variables; its defaults are the work
#: tree's perflogs/ and output/, which may be a site's archive). Set before
#: any test module loads the configuration; removed at the end.
SCRATCH = tempfile.mkdtemp(prefix='clustergate-tests-')
os.environ['CG_PERFLOG_DIR'] = os.path.join(SCRATCH, 'perflogs')
os.environ['CG_RESULTS_DB'] = os.path.join(SCRATCH, 'output', 'results.db')
os.environ['CG_DEBUG_LOG'] = os.path.join(SCRATCH, 'output', 'reframe.log')

#: Paths the tree may gain while the suite runs: the interpreter's and the
#: tools' caches, and what setup (pip install -e) makes
_NOT_THE_SUITE_S = ('.venv', '.pytest_cache', '.ruff_cache')
_NOT_THE_SUITE_S_GLOBS = ('**/__pycache__', '**/__pycache__/**',
                          '**/*.egg-info/**')


def worktree_status():
    """``git status --porcelain --ignored`` lines of the work tree, one per
    file (ignored ones too: perflogs/, output/, stage/ are ignored), but
    for caches; None when the tree is not a git checkout."""
    excludes = ([f':(exclude){p}' for p in _NOT_THE_SUITE_S] +
                [f':(exclude,glob){g}' for g in _NOT_THE_SUITE_S_GLOBS])
    try:
        proc = subprocess.run(
            ['git', 'status', '--porcelain', '--ignored',
             '--untracked-files=all', '--', '.', *excludes],
            cwd=ROOT, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None

    return set(proc.stdout.splitlines()) if proc.returncode == 0 else None


#: The tree before the first test (the last test compares)
WORKTREE_BEFORE = worktree_status()

#: The test that must run after every other
LAST = 'test_suite_wrote_nothing_into_the_work_tree'


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.originalname == LAST)


def pytest_sessionfinish(session):
    shutil.rmtree(SCRATCH, ignore_errors=True)


def reframe_cmd():
    """The reframe of the venv running the tests."""
    exe = os.path.join(BINDIR, 'reframe')
    return [exe] if os.path.exists(exe) else [sys.executable, '-m',
                                              'reframe']


def isolated_env(refs_dir, out):
    """The environment of a ReFrame session that reads the references of
    ``refs_dir`` and keeps its perflogs, results DB and log under
    ``out``. Its SLURM_CONF is an empty file: no Slurm is reached, and
    scontrol or srun fail at once (with SLURM_CONF='' they retry for 60 s
    to find the file, as in a ``site init`` config's topology lookup)."""
    os.makedirs(out, exist_ok=True)
    conf = os.path.join(out, 'slurm.conf')
    open(conf, 'a').close()
    return dict(os.environ, SLURM_CONF=conf, CG_REFERENCES_DIR=str(refs_dir),
                CG_PERFLOG_DIR=str(out / 'perflogs'),
                CG_RESULTS_DB=str(out / 'results.db'),
                CG_DEBUG_LOG=str(out / 'reframe.log'))


def edited_config(tmp_path, system, old, new):
    """A copy of config/ in ``tmp_path`` whose systems/``system`` has its
    first ``old`` (which must be there) replaced by ``new``: (its
    settings.py, the edited file)."""
    cfg = tmp_path / 'config'
    shutil.copytree(os.path.join(ROOT, 'config'), cfg)
    path = cfg / 'systems' / system
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))
    return cfg / 'settings.py', path


def run_with_refs(tmp, refs_text, *args):
    """A ReFrame session in ``tmp`` (OpenMPI, settings.py, ``args`` to
    select) whose references are ``refs_text`` as localhost.yaml:
    (the finished process, its references file, its output directory
    with report.json, perflogs and results DB)."""
    refs, out = tmp / 'refs', tmp / 'out'
    refs.mkdir()
    (refs / 'localhost.yaml').write_text(refs_text)
    cmd = reframe_cmd() + [
        '-C', os.path.join(ROOT, 'config', 'settings.py'), *args,
        '-S', 'valid_prog_environs=openmpi',
        '--report-file', str(out / 'report.json'), '-r']
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                         env=isolated_env(refs, out), cwd=str(tmp))
    return res, refs / 'localhost.yaml', out


@pytest.fixture(scope='session')
def built_programs(tmp_path_factory):
    """checks/src built with OpenMPI's wrapper into a temporary directory."""
    cc = shutil.which('mpicc.openmpi') or shutil.which('mpicc')
    if cc is None:
        pytest.skip('no MPI compiler wrapper (apt-get install libopenmpi-dev)')

    out = tmp_path_factory.mktemp('cgbuild')
    shutil.copytree(SRC, out, dirs_exist_ok=True)
    subprocess.run(['make', '-s', f'CC={cc}', 'clean', 'all'], cwd=out,
                   check=True, capture_output=True, text=True)
    return out


def mpirun_env():
    env = dict(os.environ)
    env.update({'OMPI_ALLOW_RUN_AS_ROOT': '1',
                'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
                'OMPI_MCA_btl': 'self,vader', 'OMPI_MCA_pml': 'ob1'})
    return env


def run_linkmatrix(built, *args, trials=4):
    """cg_linkmatrix of ``built`` (the programs' build folder) on 4 ranks
    of this machine, with ``args``: the finished process."""
    exe = shutil.which('mpirun.openmpi') or shutil.which('mpirun')
    if exe is None:
        pytest.skip('OpenMPI not installed (apt-get install openmpi-bin)')
    return subprocess.run([exe, '-np', '4', '--bind-to', 'none',
                           '--oversubscribe', '--mca', 'mpi_yield_when_idle',
                           '1', os.path.join(built, 'cg_linkmatrix'),
                           '--any-placement', '--trials', str(trials),
                           *args],
                          env=mpirun_env(), capture_output=True, text=True,
                          timeout=120)


def fixture_text(*parts):
    with open(os.path.join(FIXTURES, *parts)) as fp:
        return fp.read()


def cut_before(text, marker, occurrence=1):
    """``text`` up to (not including) the ``occurrence``-th line containing
    ``marker``: a real output cut short, as a killed run leaves it."""
    lines = text.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if marker in line]
    return ''.join(lines[:hits[occurrence - 1]])


class BenchmarkOutputs:
    """The real outputs of one benchmark, made here by running it:
    tests/fixtures/benchmark-outputs/<benchmark>/*.out."""

    def __init__(self, benchmark):
        self.dir = Path(FIXTURES) / 'benchmark-outputs' / benchmark
        #: every output, for the tests that parse them all
        self.all = sorted(self.dir.glob('*.out'))

    def read(self, name):
        return (self.dir / name).read_text()

    @property
    def each(self):
        """The decorator that runs a test on every output (argument
        ``path``), named by file."""
        return pytest.mark.parametrize('path', self.all, ids=lambda p: p.name)


def reframe_failures(out, limit=6000):
    """What to show of a ReFrame run that went wrong: its "SUMMARY OF
    FAILURES" (where ReFrame says which check failed and why), else its
    tail. The tail alone is the performance table, which hides the cause."""
    start = out.find('SUMMARY OF FAILURES')
    if start < 0:
        return out[-limit:]

    end = out.find('PERFORMANCE REPORT', start)
    section = out[start:end if end > 0 else None]
    return section[:limit] + ('\n[...]' if len(section) > limit else '')


def linkmatrix_on(topo, monkeypatch, stagedir, nodes=24, fabric='fab0'):
    """The LinkMatrix check of ``checks/``, set up as on a ``nodes``-node
    job of ``fabric`` judged against the declared ``topo`` (its stage
    ``stagedir``), ready for ``set_command``: no ReFrame session. A copy:
    the loaded instances are shared by the test modules, and
    ``set_command`` changes the one it runs on (a 24-node schedule left
    there failed 4 flat-matrix tests of another module)."""
    import copy
    from rfm_loader import load_checks
    checks = load_checks('checks/linkmatrix/linkmatrix_check.py')
    c = copy.deepcopy(next(c for c in checks
                           if type(c).__name__ == 'LinkMatrix'))
    for name, value in (('num_nodes', nodes), ('ppn', 1),
                        ('num_tasks', nodes), ('interconnect', fabric),
                        ('_stagedir', str(stagedir)),
                        ('program_path', lambda: '/x/cg_linkmatrix'),
                        ('declared', lambda: topo)):
        monkeypatch.setattr(c, name, value, raising=False)
    return c
