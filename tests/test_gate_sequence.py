"""The "Done when" sequence of references and gating, on the emulated
cluster (docs/guide/references.md, docs/guide/ci.md):

1. three healthy nightly runs (three ReFrame sessions) -> ``clustergate
   baseline`` writes ``emucluster.yaml`` (into a temporary copy of
   config/references: the repository's file is never touched);
2. a nightly run against it passes;
3. n4's link on fab0 throttled to 25% of the nominal rate: the nightly run
   exits non-zero, its output names n4 and fab0, the link matrix names the
   pairs of n4, the JUnit report records failures, the HTML report shows it;
4. links restored: the nightly run passes again.

A small set of checks keeps it within minutes on two cores: the link matrix
on fab0 and the 1 MB ping-pong from n1 to every node over fab0.

Needs root and the emulated cluster's packages. An emulated cluster that is
already up is used (and left up); otherwise one is started and taken down.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import cluster_session as cs
from conftest import reframe_failures

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)

pytestmark = pytest.mark.cluster

#: The checks of the sequence (ReFrame -n filters, OR-ed)
SELECT = ['-n', 'LinkMatrix.*fab0',
          # the 1 MB ping-pong from n1 to every node: a baseline learnt
          # from three sessions gates on what this sequence is about (a
          # slow link). The ContentionSuite's 8-byte and 10 kB latencies,
          # learnt on a quiet machine, ran 1.3-7x above them when the
          # machine got busy (healthy pass1, 2026-11-23 00:58): noise, not
          # a link; the suite is gated by the drills instead.
          '-n', 'PingPongDistance%num_nodes=4%ppn=1%interconnect=fab0'
                '%msg_bytes=1000000',
          # Debian's OpenMPI only: the emulated fabrics are measured by it
          '-S', 'valid_prog_environs=openmpi',
          # every night, not only on its rotation night: emucluster's
          # nightly runs tonight's share (-E 'cg_tonight()'), which holds
          # neither check on most nights (0 found); a -E given here
          # replaces the mode's (docs/reports/cost-model.md)
          '-E', 'True']

#: The emulated cluster is noisy (4 nodes on the 2 cores of one machine,
#: shared with other work): a wider floor than a real system's 5%
FLOOR = '0.3'


def _tool(name):
    exe = os.path.join(BIN, name)
    return exe if os.path.exists(exe) else shutil.which(name)


def _why_skip():
    if os.geteuid() != 0:
        return 'needs root (the emulated cluster uses network namespaces)'

    if _tool('clustergate') is None or _tool('clustergate-lab') is None:
        return 'the clustergate command is not installed'

    try:
        from clustergate_lab.cluster import lifecycle
    except ImportError:
        return 'the cluster tool (clustergate_lab.cluster) is missing'

    missing = lifecycle.missing_packages()
    if missing:
        return 'missing: ' + ', '.join(f'{c} ({p})'
                                       for c, p in missing.items())

    if not shutil.which('mpicc.openmpi'):
        return 'missing mpicc.openmpi (libopenmpi-dev)'

    return None


_reason = _why_skip()
if _reason:
    pytestmark = [pytestmark, pytest.mark.skip(reason=_reason)]


def _cg(*args, check=True, timeout=120):
    proc = subprocess.run([_tool('clustergate-lab'), 'cluster', *args],
                          capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f'clustergate {" ".join(args)} failed '
                             f'({proc.returncode}):\n{proc.stdout}\n'
                             f'{proc.stderr}')
    return proc


def _state():
    from clustergate_lab.cluster import state as st
    return st.load()


@pytest.fixture(scope='module')
def cluster():
    """The emulated cluster: the one that is up, or one of ours."""
    state = _state()
    ours = state is None or state.get('phase') != 'up'
    if ours:
        _cg('up', timeout=180)
        state = _state()
    elif state.get('rates'):
        pytest.skip(f'the emulated cluster that is up has degraded links '
                    f'({state["rates"]}): someone else is using it')

    from clustergate_lab.cluster import lifecycle
    env = dict(line.split(' ', 1)[1].split('=', 1)
               for line in lifecycle.env_lines() if line.startswith('export'))
    try:
        yield {'env': env, 'rate': int(state['rate'])}
    finally:
        if ours:
            _cg('down', check=False, timeout=180)


@pytest.fixture(scope='module')
def work(tmp_path_factory, cluster):
    tmp = tmp_path_factory.mktemp('gate')
    refs = tmp / 'references'
    src = os.path.join(ROOT, 'config', 'references')
    if os.path.isdir(src):
        shutil.copytree(src, refs)
    else:
        refs.mkdir()
    # the sequence writes its own baseline: never an old one
    (refs / 'emucluster.yaml').unlink(missing_ok=True)
    env = dict(os.environ)
    env.update(cluster['env'])
    env.update({
        'CG_PERFLOG_DIR': str(tmp / 'perflogs'),
        'CG_RESULTS_DB': str(tmp / 'results.db'),
        'CG_REFERENCES_DIR': str(refs),
        'CG_DEBUG_LOG': str(tmp / 'reframe.log'),
        'PYTHONUNBUFFERED': '1',
    })
    return {'tmp': tmp, 'refs': refs, 'env': env, 'rate': cluster['rate']}


def _nightly(work, phase, *extra, timeout=600):
    tmp = work['tmp']
    env = dict(work['env'], CG_JUNIT_REPORT=str(tmp / f'junit-{phase}.xml'))
    cmd = [_tool('reframe'), '-C', os.path.join(ROOT, 'config',
                                                'settings.py'),
           '--prefix', str(tmp / phase), '--mode', 'nightly', *SELECT,
           cs.RETRY, *extra, '-r']
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout)
    out = proc.stdout + proc.stderr
    (tmp / f'{phase}.out').write_text(out)
    return proc.returncode, out


def _junit_failures(path):
    """Test cases whose last attempt failed: ReFrame writes one testsuite
    per run, so a case retried (cs.RETRY) appears again in the next one."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == 'testsuite' else root.iter('testsuite')
    failed = {}
    for suite in suites:
        for case in suite.iter('testcase'):
            failed[case.get('name')] = any(
                child.tag in ('failure', 'error') for child in case)

    return sum(failed.values())


def _baseline_of_three_healthy_nights(work):
    """Three sessions, as three nights: ReFrame 4.10 retries (cs.RETRY)
    only the first run of a session, so one session with --reruns 2 would
    fail on any crash in its reruns. Then ``clustergate baseline`` writes
    the references of the work directory."""
    env, refs = work['env'], work['refs']
    for night in range(3):
        rc, out = _nightly(work, f'healthy{night}')
        assert rc == 0, (f'healthy run {night} failed:\n'
                         f'{reframe_failures(out)}')

    proc = subprocess.run(
        [_tool('clustergate'), 'baseline', '--system', 'emucluster',
         '--perflogs', env['CG_PERFLOG_DIR'], '--min-runs', '3',
         '--floor', FLOOR],
        capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    print(proc.stdout)
    from clustergate.refs import references
    # the file the partition reads: emucluster.yaml on the flat cluster,
    # its reference set's on a tree
    wrote = [line[len('wrote '):] for line in proc.stdout.splitlines()
             if line.startswith('wrote ')]
    assert len(wrote) == 1 and os.path.dirname(wrote[0]) == str(refs), wrote
    refset = references.load(wrote[0], 'emucluster')
    assert refset is not None
    checks = {c for c, *_ in references.metric_entries(refset)}
    assert {'LinkMatrix', 'PingPongDistance'} <= checks
    # the repository's file is not the one written
    assert not os.path.samefile(refs, os.path.join(ROOT, 'config',
                                                   'references'))


def test_gate_sequence(work):
    env = work['env']

    # 1. three healthy runs -> baseline
    _baseline_of_three_healthy_nights(work)

    # 2. nightly against the new references passes
    rc, out = _nightly(work, 'pass1')
    assert rc == 0, f'nightly after baseline failed:\n{reframe_failures(out)}'
    assert _junit_failures(work['tmp'] / 'junit-pass1.xml') == 0

    # 3. n4 on fab0 at 25%: fails, names n4, fab0 and the pairs
    quarter = f'{work["rate"] // 4 // 10**6}mbit'
    _cg('degrade', '--node', 'n4', '--fabric', 'fab0', '--rate', quarter)
    try:
        rc, out = _nightly(work, 'degraded')
    finally:
        _cg('restore')

    print('\n'.join(line for line in out.splitlines()
                    if 'suspect' in line or 'FAIL' in line))
    assert rc != 0, f'the degraded run passed:\n{reframe_failures(out)}'
    assert 'suspect node n4 on fabric fab0' in out, reframe_failures(out)
    for pair in ('n1->n4', 'n4->n1', 'n2->n4', 'n4->n2', 'n3->n4',
                 'n4->n3'):
        assert pair in out, f'{pair} not named:\n{reframe_failures(out)}'

    # one node, not links (the link matrix's link verdicts: "suspect link
    # n1<->n3 ..."; the ping-pong's own message says "suspect link/node")
    assert not re.search(r'suspect link n\d', out), reframe_failures(out)
    assert _junit_failures(work['tmp'] / 'junit-degraded.xml') >= 1
    csv = glob.glob(str(work['tmp'] / 'degraded' / '**' /
                        'linkmatrix_fab0.csv'), recursive=True)
    assert csv, 'no link-matrix CSV kept'

    # the HTML report shows the verdict
    report = work['tmp'] / 'report'
    proc = subprocess.run(
        [_tool('clustergate'), 'report', '--perflogs', env['CG_PERFLOG_DIR'],
         '--matrices', str(work['tmp'] / 'degraded'),
         '-o', str(report / 'index.html')],
        capture_output=True, text=True, env=env, timeout=300
    )
    # a red night: the report's exit status gates a CI job on it
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith('RED: '), proc.stdout
    page = (report / 'index.html').read_text()
    assert 'suspect node n4 on fabric fab0' in page

    # 4. restored: passes again
    rc, out = _nightly(work, 'pass2')
    assert rc == 0, f'nightly after restore failed:\n{reframe_failures(out)}'
