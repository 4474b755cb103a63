"""The emulated cluster for end-to-end tests: bring it up (or use the one
that is up), run ReFrame on it as the unprivileged user ``cgrunner`` the
way a site's users do, and tear down what we started, checking that
nothing is left behind."""

import json
import os
import pwd
import shutil
import subprocess
import tempfile

from clustergate_lab.sensitivity import named_subjects
from conftest import BINDIR, ROOT, reframe_cmd, reframe_failures

CLI = os.path.join(BINDIR, 'clustergate-lab')
STATE_DIR = os.environ.get('CG_EMU_STATE_DIR', '/run/clustergate-emu')
SLURM_CONF = os.path.join(STATE_DIR, 'slurm.conf')
USER = 'cgrunner'

#: ReFrame runs on the emulated cluster retry a failed test once. Debian's
#: OpenMPI 4.1.4 under Slurm's PMIx sometimes crashes in MPI_Init on this
#: 2-core machine (8-rank jobs: 0 of 20 on a quiet machine, 3 of 20 with
#: both cores busy, 3 of 67 in a nightly run at 4 nodes x 2 ppn; a core
#: shows an ob1 fragment arriving before ob1 registered its callbacks;
#: docs/reports/emulated-cluster.md). A real regression fails both tries; a run
#: that must fail still fails.
RETRY = '--max-retries=1'


#: sessions of one ReFrame run at most, when only OpenMPI's start-up crash
#: failed it (see :func:`run`)
SESSIONS = 3


def startup_crash_only(report_path):
    """Whether every test case that failed in the last run of the ReFrame
    report at ``report_path`` is a job whose rank died of a segmentation
    fault before its program completed: OpenMPI 4.1.4's start-up crash
    under ``srun --mpi=pmix`` (docs/reports/emulated-cluster.md). False
    when the report is missing or nothing failed."""
    try:
        with open(report_path) as fp:
            cases = json.load(fp)['runs'][-1]['testcases']
    except (OSError, ValueError, KeyError, IndexError):
        return False

    failed = [c.get('fail_reason') or '' for c in cases
              if c.get('result') == 'fail']
    return bool(failed) and all(
        'no CG_DONE completion line' in r and
        'died of Segmentation fault' in r for r in failed)



def why_not_available():
    """Reason the cluster cannot be used here, or None."""
    if os.geteuid() != 0:
        return 'needs root (network namespaces, Slurm daemons)'

    for cmd in ('slurmctld', 'slurmd', 'munged', 'ip', 'mpicc.openmpi'):
        if not shutil.which(cmd) and not os.path.exists(f'/usr/sbin/{cmd}'):
            return f'{cmd} not installed (bash ci/setup-debian.sh)'

    return None


def cluster(*args, timeout=120, check=True):
    res = subprocess.run([CLI, 'cluster', *args], capture_output=True,
                         text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise RuntimeError(f'clustergate-lab cluster {" ".join(args)} failed:\n'
                           f'{res.stdout}\n{res.stderr}')

    return res


def _recorded_daemons_alive():
    """How many daemons of the recorded state still run (None: no state)."""
    from clustergate_lab.cluster import procs, state as cluster_state
    st = cluster_state.load(cluster_state.Paths(STATE_DIR))
    if st is None:
        return None

    return sum(procs.alive(r) for r in st.get('procs', {}).values())


def is_up():
    """A cluster is up: its state is recorded and a daemon of it runs. (A
    state whose daemons all died, e.g. the machine's processes were killed
    under a running test, is stale: clear_stale() removes it.)"""
    if not os.path.exists(os.path.join(STATE_DIR, 'state.json')):
        return False

    return bool(_recorded_daemons_alive())


def clear_stale():
    """Tear down a cluster left behind with no daemon running (namespaces,
    bridges and state of a killed session); returns what was done."""
    if why_not_available() or not os.path.exists(
            os.path.join(STATE_DIR, 'state.json')) or is_up():
        return None

    res = cluster('down', timeout=120, check=False)
    if res.returncode != 0:
        raise RuntimeError('a stale emulated cluster (no daemon running) '
                           f'could not be taken down:\n{res.stdout}\n'
                           f'{res.stderr}')

    return 'stale emulated cluster taken down'


#: at collection, before the cluster tests decide whether a cluster is up
STALE = clear_stale()


def leftovers():
    """What a torn-down cluster must not leave: namespaces, daemons."""
    found = []
    ns = subprocess.run(['ip', 'netns', 'list'], capture_output=True,
                        text=True).stdout.split()
    found += [f'namespace {n}' for n in ns if n.startswith('n') and
              n[1:].isdigit()]
    ps = subprocess.run(['ps', '-eo', 'stat=,comm='], capture_output=True,
                        text=True).stdout.splitlines()
    for line in ps:
        stat, _, comm = line.strip().partition(' ')
        if comm.strip() in ('slurmctld', 'slurmd', 'munged') and \
                not stat.startswith('Z'):
            found.append(f'process {comm.strip()}')

    return found


class Session:
    """A cluster and a place where ``cgrunner`` (or root, if the project
    is not readable by it) runs ReFrame."""

    def __init__(self, nodes=4, up_args=()):
        self.nodes = nodes
        #: more options of ``clustergate-lab cluster up`` (e.g. a topology)
        self.up_args = list(up_args)
        self.started = False
        self.workdir = tempfile.mkdtemp(prefix='cg-cluster-')
        os.chmod(self.workdir, 0o755)
        self.user = None

    def __enter__(self):
        if not is_up():
            cluster('up', '--nodes', str(self.nodes), *self.up_args,
                    timeout=180)
            self.started = True

        self.user = USER if self._user_can_run() else None
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(self.workdir, pw.pw_uid, pw.pw_gid)

        return self

    def __exit__(self, *exc):
        if self.started:
            cluster('down', timeout=120, check=False)

    def _user_can_run(self):
        try:
            pwd.getpwnam(USER)
        except KeyError:
            return False

        probe = subprocess.run(
            ['runuser', '-u', USER, '--', reframe_cmd()[0], '--version'],
            capture_output=True, text=True, cwd='/', timeout=60
        )
        return probe.returncode == 0 and os.access(ROOT, os.R_OK)

    def reframe(self, *args, tag='run', timeout=1800, config=None,
                system='emucluster', env=None):
        """Run ReFrame on the emulated cluster; returns (returncode, out).
        ``config``: another settings.py; ``env``: more variables."""
        base = os.path.join(self.workdir, tag)
        env = {
            'SLURM_CONF': SLURM_CONF,
            'CG_PERFLOG_DIR': os.path.join(self.workdir, 'perflogs'),
            'CG_RESULTS_DB': os.path.join(self.workdir, 'results.db'),
            'CG_DEBUG_LOG': os.path.join(base, 'reframe.log'),
            'HOME': os.path.expanduser(f'~{self.user}') if self.user
            else os.environ.get('HOME', '/root'),
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
            **(env or {}),
        }
        config = config or os.path.join(ROOT, 'config', 'settings.py')
        cmd = reframe_cmd() + ['-C', config,
                               '--system', system, '--prefix', base,
                               '--report-file', os.path.join(base,
                                                             'report.json'),
                               RETRY, *args]
        env_args = ['env'] + [f'{k}={v}' for k, v in env.items()]
        if self.user:
            cmd = ['runuser', '-u', self.user, '--'] + env_args + cmd
        else:
            cmd = env_args + cmd

        os.makedirs(base, exist_ok=True)
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(base, pw.pw_uid, pw.pw_gid)

        res = subprocess.run(cmd, capture_output=True, text=True,
                             timeout=timeout, cwd=self.workdir)
        out = res.stdout + res.stderr
        with open(os.path.join(self.workdir, f'{tag}.out'), 'w') as fp:
            fp.write(out)

        return res.returncode, out


#: the fabric-0 link matrix of a switch-tree drill, under OpenMPI
DRILL_LINKMATRIX = ('-n', '^LinkMatrix.*fab0', '-S',
                    'valid_prog_environs=openmpi')


def tree_session(nodes, up_args):
    """A drill module's switch tree (a generator for a module fixture):
    the cluster up with ``up_args``, then down, with nothing of it left
    behind: no namespace, daemon, bridge, uplink or trunk."""
    with Session(nodes=nodes, up_args=up_args) as s:
        yield s

    assert leftovers() == [], 'cluster down left things behind'
    links = subprocess.run(['ip', '-br', 'link'], capture_output=True,
                           text=True).stdout.split()
    assert not [w for w in links if w.startswith(('cgl', 'cgu', 'cgs',
                                                  'cgfab'))], links


def drill_linkmatrix(session, tag, *faults, timeout=900, options=()):
    """The drill's link matrix run with the cluster commands ``faults``
    applied (each a tuple of arguments), the cluster restored after;
    ``options``: more ReFrame options (e.g. ``-S trials=4``)."""
    try:
        for fault in faults:
            cluster(*fault)
        return session.reframe(*DRILL_LINKMATRIX, *options, '-r', tag=tag,
                               timeout=timeout)
    finally:
        if faults:
            cluster('restore')


def drill_passes(session, tag, timeout=900):
    """The drill's link matrix on the cluster as it is: green, and the
    LinkMatrix case ran."""
    rc, out = drill_linkmatrix(session, tag, timeout=timeout)
    assert rc == 0, reframe_failures(out)
    assert 'LinkMatrix' in out, out


def drill_names(session, tag, fault, subjects, *phrases, timeout=900,
                options=()):
    """The drill's link matrix with the cluster command ``fault`` applied:
    red, its failures naming exactly ``subjects`` (``named_subjects``:
    a healthy node or link named once sends a technician to the wrong
    cable) and containing each of ``phrases``; gives the failures."""
    rc, out = drill_linkmatrix(session, tag, fault, timeout=timeout,
                               options=options)
    failures = reframe_failures(out)
    assert rc != 0, f'{" ".join(fault)} went unnoticed'
    for phrase in phrases:
        assert phrase in failures, failures
    assert named_subjects(failures) == sorted(subjects), failures
    return failures


def declared_topology():
    """The topology.conf the cluster's Slurm reads, as text."""
    with open(os.path.join(STATE_DIR, 'topology.conf')) as fp:
        return fp.read()


def matrix_rounds(session, tag):
    """The round labels, in order, that the first run of the drill's link
    matrix job ``tag`` measured (its ``round=`` lines: ``I1``, ``S2``,
    ``C00`` ... on a schedule, shift numbers on every pair); [] when no
    job output is found. The first run's directory (stage if it failed,
    output if it passed), not a retry's, nor the retest's lines."""
    import glob
    import re
    base = os.path.join(session.workdir, tag)
    for where in ('stage', 'output'):
        for path in sorted(glob.glob(os.path.join(
                base, where, '*', '*', '*', 'LinkMatrix_*', 'rfm_job.out'))):
            if '_retry' in os.path.basename(os.path.dirname(path)):
                continue
            with open(path) as fp:
                # not a retest's lines (alone=1), should it write here
                labels = [m.group(1) for m in (
                    re.search(r'\bround=(\S+)', ln) for ln in fp
                    if 'alone=' not in ln) if m]
            return list(dict.fromkeys(labels))

    return []
