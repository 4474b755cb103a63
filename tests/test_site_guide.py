"""docs/guide/site-guide.md followed literally: the system file it shows, written
as it stands into a copy of config/, gives test cases on the new system
(``reframe -l`` and ``clustergate sweep`` agree), and each key it says is
required, taken out, stops the load with one line naming the file and the
key. A site system also ends localhost's catch-all."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, reframe_cmd

GUIDE = os.path.join(ROOT, 'docs', 'guide', 'site-guide.md')
MARKER = '<!-- the test suite writes this file as it stands'
ANSI = re.compile(r'\x1b\[[0-9;]*m')


def guide_system_file():
    """The ```python block that follows the guide's marker."""
    text = open(GUIDE).read()
    start = text.index('```python\n', text.index(MARKER)) + len('```python\n')
    return text[start:text.index('```\n', start)]


def site_config(tmp_path, edit=None):
    """A copy of config/ with the guide's file as systems/mysite.py
    (``edit(text)`` changes it first); the settings path and the file."""
    cfg = tmp_path / 'config'
    shutil.copytree(os.path.join(ROOT, 'config'), cfg,
                    ignore=shutil.ignore_patterns('__pycache__'))
    text = guide_system_file()
    path = cfg / 'systems' / 'mysite.py'
    path.write_text(edit(text) if edit else text)
    return cfg / 'settings.py', path


def reframe(settings, tmp_path, *args, env=None):
    out = tmp_path / 'out'
    full = {k: v for k, v in os.environ.items() if k != 'RFM_SYSTEM'}
    full.update(SLURM_CONF='', CG_DEBUG_LOG=str(out / 'rf.log'),
                CG_PERFLOG_DIR=str(out / 'perflogs'),
                CG_RESULTS_DB=str(out / 'results.db'), **(env or {}))
    res = subprocess.run(
        reframe_cmd() + ['-C', str(settings), '-c',
                         os.path.join(ROOT, 'checks'), '-R', *args],
        capture_output=True, text=True, env=full, timeout=600,
        cwd=str(tmp_path))
    return res.returncode, ANSI.sub('', res.stdout + res.stderr)


def test_the_guides_system_lists_checks(tmp_path):
    settings, _ = site_config(tmp_path)
    code, out = reframe(settings, tmp_path, '--system', 'mysite', '--mode',
                        'nightly', '-l')
    assert code == 0, out[-3000:]
    assert 'clustergate: system mysite: chosen with --system mysite' in out
    found = int(re.search(r'Found (\d+) check\(s\)', out)[1])
    listed = [ln for ln in out.splitlines() if ln.startswith('- ')]
    assert found > 0 and len(listed) == found
    # the nightly subset of the guide: 2 and 4 nodes, over ib0
    assert any('%num_nodes=4 %ppn=64 %interconnect=ib0' in ln
               for ln in listed), listed[:5]
    assert not [ln for ln in listed if '%num_nodes=1 ' in ln and
                'RightShift' in ln]



def sweep_rows(settings, system):
    res = subprocess.run([sys.executable, '-m', 'clustergate.cli', 'sweep',
                          '-C', str(settings), '--system', system],
                         capture_output=True, text=True, cwd=ROOT,
                         timeout=300, env=dict(os.environ, SLURM_CONF=''))
    assert res.returncode == 0, res.stdout + res.stderr
    return [ln.split() for ln in res.stdout.splitlines()
            if re.match(r'\s+\d+\s+\d+\s+\w', ln)]


def test_sweep_and_the_listing_agree_on_the_guides_system(tmp_path):
    # RightShift needs 2 ranks, as clustergate sweep assumes by default:
    # both must offer the same points of the new system
    settings, _ = site_config(tmp_path)
    rows = sweep_rows(settings, 'mysite')
    assert ['2', '1', 'shm', 'skip:', 'interconnect', "'shm'", 'is',
            'node-local', 'and', 'cannot', 'join', '2', 'nodes'] in rows
    runs = {(int(r[0]), int(r[1]), r[2]) for r in rows if r[3] == 'run'}
    code, out = reframe(settings, tmp_path, '--system', 'mysite', '-n',
                        '^RightShift', '-l')
    assert code == 0, out[-3000:]
    listed = {(int(m[1]), int(m[2]), m[3]) for m in re.finditer(
        r'^- RightShift %num_nodes=(\d+) %ppn=(\d+) %interconnect=(\w+)',
        out, re.M)}
    assert runs and listed == runs, sorted(listed ^ runs)


def test_a_partition_without_the_mpi_feature_is_refused_by_sweep_too(
        tmp_path):
    settings, path = site_config(tmp_path, REQUIRED[0][1])
    res = subprocess.run([sys.executable, '-m', 'clustergate.cli', 'sweep',
                          '-C', str(settings), '--system', 'mysite'],
                         capture_output=True, text=True, cwd=ROOT,
                         timeout=300, env=dict(os.environ, SLURM_CONF=''))
    assert res.returncode == 1
    assert res.stderr.strip() == (
        f'clustergate sweep: failed to load configuration: {path}: '
        f'{REQUIRED[0][2]}')


REQUIRED = [
    ('partition mpi feature',
     lambda t: t.replace("                    'features': ['mpi'],\n", ''),
     "partition mysite:batch: features: no 'mpi': every clustergate check "
     "needs it (valid_systems '+mpi'); add 'features': ['mpi']"),
    ('environment mpi_family',
     lambda t: t.replace("'extras': {'mpi_family': 'openmpi',\n"
                         "                       'srun_options'",
                         "'extras': {'srun_options'"),
     "environment openmpi: extras.mpi_family: missing: an environment with "
     "the 'mpi' feature must say its MPI family (openmpi, mpich, intelmpi)"),
    ('environment mpi feature',
     lambda t: t.replace("'features': ['mpi', 'primary'],",
                         "'features': ['primary'],"),
     "environment openmpi: features: no 'mpi': it has mpi_family 'openmpi', "
     "but checks select environments by the 'mpi' feature, so it would run "
     "nothing"),
    ('interconnect env not keyed by MPI family',
     lambda t: t.replace("""'ib0': {'scope': 'network', 'env': {
                                'openmpi': {'OMPI_MCA_pml': 'ucx',
                                            'UCX_NET_DEVICES': 'mlx5_0:1'},
                            }},""", """'ib0': {'scope': 'network', 'env': {
                                'OMPI_MCA_pml': 'ucx',
                            }},"""),
     'partition mysite:batch: extras.interconnects.ib0.env.OMPI_MCA_pml: '
     'not an MPI family: env is keyed by MPI family (openmpi, mpich, '
     'intelmpi), each mapping to its variables'),
    ("no interconnect for the environments' MPI family",
     lambda t: t.replace("'openmpi': {'OMPI_MCA_pml'", "'mpich': {'OMPI_MCA"
                         "_pml'"),
     "partition mysite:batch: extras.interconnects: no interconnect has "
     "variables for MPI family 'openmpi' (environment openmpi): add "
     "'openmpi' to an interconnect's env"),
]


@pytest.mark.parametrize('what,edit,message', REQUIRED,
                         ids=[r[0] for r in REQUIRED])
def test_a_required_key_missing_is_one_line(tmp_path, what, edit, message):
    settings, path = site_config(tmp_path, edit)
    assert path.read_text() != guide_system_file(), 'the edit did nothing'
    code, out = reframe(settings, tmp_path, '--system', 'mysite', '-l')
    assert code == 1
    assert 'Traceback' not in out
    errors = [ln for ln in out.splitlines() if ln.startswith('ERROR')]
    assert errors == [f'ERROR: failed to load configuration: {path}: '
                      f'{message}'], out[-2000:]


def test_a_host_no_site_pattern_matches_is_refused(tmp_path):
    # this machine is not a mysite login node; with a site system
    # configured, localhost no longer catches it
    settings, _ = site_config(tmp_path)
    code, out = reframe(settings, tmp_path, '-l')
    assert code == 1
    host = __import__('socket').gethostname()
    errors = [ln for ln in out.splitlines() if ln.startswith('ERROR')]
    assert errors == [
        f'ERROR: failed to load configuration: {settings}: no system for '
        f"host {host!r}: it matches none of the site systems' hostnames "
        r"(mysite '^mysite-login\\d+$'); choose one with --system NAME or "
        'RFM_SYSTEM=NAME (--system localhost runs on this machine alone)'
    ], out[-2000:]


def test_localhost_still_runs_when_named(tmp_path):
    settings, _ = site_config(tmp_path)
    code, out = reframe(settings, tmp_path, '-n', 'RightShift', '-l',
                        env={'RFM_SYSTEM': 'localhost'})
    assert code == 0, out[-2000:]
    assert 'clustergate: system localhost: chosen with RFM_SYSTEM=localhost' \
        in out
    assert "selected system:   'localhost'" in out
