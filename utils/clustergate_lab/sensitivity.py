"""clustergate-lab sensitivity: how small a link fault the LinkMatrix check
names, measured on the emulated leaf/spine cluster (docs/reports/sensitivity.md).

A *plan* is a list of runs. Each run lowers (or not) one node link of one
fabric to a share of its rate, runs one real ReFrame session of the
LinkMatrix check (that fabric, OpenMPI), reads the verdict from the
session's JSON report and restores the links. Runs are appended to
``runs.json`` in the work directory as they end, so that a campaign is
split into several sittings on the cluster (``--max-minutes``): the next
invocation skips what is done.

Plans:

* ``campaign``: ``--healthy`` healthy runs, then per level ``--runs`` runs,
  each on another node (deterministic: the k-th degraded run of the
  campaign degrades node ``1 + (4 k) mod N``, so successive runs hop
  leaves);
* ``nights``: ``--nights`` sessions into one results database, the node
  ``--node`` at ``--level`` % from night ``--from-night`` on;
* ``faults``: ``--healthy`` healthy runs (fabrics alternate), then the
  fault cases of :data:`FAULT_CASES` (uplinks, node links, miscabled nodes,
  compound faults, both fabrics at once; ``--cases fattree3``: those of
  the 24-node three-level tree, :data:`FATTREE3_CASES`), ``--runs`` runs
  each, in rounds, on the rounds of the declared topology or, with
  ``--schedule all-pairs``, on every pair. ``--time-limit`` sets the
  check's job limit (every pair with a cut trunk outlasts its 10 min on
  the 24-node tree); a run that the limit cut gives no verdict and is
  not tried again (the next try would end the same).
  A fault run names its culprits per fabric (``n2@fab0``,
  ``uplink:leaf2@fab1``); anything else it names is an innocent.

Examples:
  # WORKDIR: a directory the cluster's job user can write
  clustergate-lab sensitivity run --workdir WORKDIR/sens --max-minutes 25
  clustergate-lab sensitivity run --plan nights --nights 12 --from-night 7 \\
      --level 90 --node n5 --workdir WORKDIR/nights
  clustergate-lab sensitivity run --plan faults --runs 3 --healthy 20 \\
      --workdir WORKDIR/faults --references REFDIR
  clustergate-lab sensitivity run --plan faults --runs 5 --healthy 20 \\
      --case node-n3-95-fab0 --workdir WORKDIR/faults
  clustergate-lab sensitivity run --plan faults --cases fattree3 --runs 3 \\
      --healthy 10 --schedule all-pairs --time-limit 30m \\
      --workdir WORKDIR/fat3-allpairs
  clustergate-lab sensitivity table --workdir WORKDIR/sens \\
      --figure docs/figures/sensitivity.png
"""

import datetime as dt
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import List, Optional

from clustergate import PROJECT_ROOT
from clustergate.links import retest_verdict
from clustergate.site import environment as cgenv
from clustergate_lab.fattree3_cases import FATTREE3_CASES

LEVELS = (95, 90, 85, 80, 70, 50, 25)
STATE_DIR = cgenv.get(cgenv.EMU_STATE_DIR, '/run/clustergate-emu')
USER = 'cgrunner'
#: one session of the check may take this long before it is killed
SESSION_TIMEOUT = 900

# an undecided node link (the retest ran out of time) fails the run naming
# the node: a technician is sent to it as much as to a slow one
_NODE = re.compile(r'(?:(?:suspect|miscabled) node|(?:slow|undecided) node '
                   r'link) (n\d+)')
# a link verdict of the matrix, or of its retest (a pair, not a node:
# clustergate.links.retest_verdict)
_LINK = re.compile(r'(?:suspect|slow) link (n\d+)(?:<->|->|<-)(n\d+)')
# a leaf's uplink (leaf2-spine, leaf2-spine1, leaf3-group2 on a
# dragonfly) or a spine's trunk to the core of a three-level tree
# (spine1-core)
_UPLINK = re.compile(r'uplink (\S+?)-(?:spine|core|group)')
# a dragonfly's global link between two groups (group1-group2)
_GLOBAL = re.compile(r'global link (\S+?-\S+?)\b(?: on|,|\s|$)')
# per-link/per-node figures of a performance failure, e.g. bw_n5 or
# bw_n1_n5 (the names the LinkMatrix check gives its variables)
_PERF_NODES = re.compile(r'\bn\d+\b')


@dataclass
class Run:
    """One planned run and, once done, what came of it."""

    id: str
    kind: str                   # 'healthy', 'degraded' or 'fault'
    level: int = 100            # % of the nominal rate of the node link
    node: Optional[str] = None  # degraded node
    fabric: str = 'fab0'
    night: Optional[int] = None
    # a fault case: its name, ``clustergate-lab cluster`` arguments, culprits
    case: Optional[str] = None
    faults: List[List[str]] = field(default_factory=list)
    culprits: List[str] = field(default_factory=list)
    # results
    started: Optional[str] = None
    wall_s: Optional[float] = None
    rc: Optional[int] = None
    result: Optional[str] = None   # 'pass', 'fail' or 'error'
    phase: Optional[str] = None
    reason: str = ''
    named: List[str] = field(default_factory=list)
    session: Optional[str] = None
    commit: Optional[str] = None   # of the project that ran the check
    #: the check's round schedule ('topology' or 'all-pairs')
    schedule: str = 'topology'
    #: the check's job limit (ReFrame's time_limit, e.g. '30m'); None:
    #: the check's own
    time_limit: Optional[str] = None

    @property
    def done(self):
        return self.result is not None


# -- plans --------------------------------------------------------------------

def campaign(nodes=9, levels=LEVELS, runs=5, healthy=20, fabric='fab0'):
    """Healthy runs first, then the levels from the mildest fault on."""
    plan = [Run(f'healthy-{i + 1:02d}', 'healthy', fabric=fabric)
            for i in range(healthy)]
    k = 0
    for level in levels:
        for i in range(runs):
            node = f"n{1 + (4 * k) % nodes}"
            plan.append(Run(f'L{level}-{i + 1}-{node}', 'degraded', level,
                            node, fabric))
            k += 1

    return plan


def interleaved(plan):
    """The campaign in rounds: one run of each level and healthy runs in
    proportion, so that a campaign cut short by its time budget still
    covers every level (the plan's ids and nodes do not change)."""
    groups = {}
    for r in plan:
        groups.setdefault((r.kind, r.level), []).append(r)
    rounds = max(len(g) for g in groups.values())
    out = []
    for i in range(rounds):
        for g in groups.values():
            share = len(g) / rounds
            out += g[int(i * share):int((i + 1) * share)]
    return out


def nights(count=12, from_night=7, level=90, node='n5', fabric='fab0'):
    """Nightly sessions, ``node`` at ``level`` % from ``from_night`` on."""
    return [Run(f'night-{n:02d}', 'degraded' if n >= from_night else
                'healthy', level if n >= from_night else 100,
                node if n >= from_night else None, fabric, night=n)
            for n in range(1, count + 1)]


def _uplink(leaf, fabric, rate):
    return ['degrade', '--uplink', leaf, '--fabric', fabric, '--rate', rate]


def _node(node, fabric, rate):
    return ['degrade', '--node', node, '--fabric', fabric, '--rate', rate]


def _miscable(node, leaf, fabric):
    return ['miscable', '--node', node, '--leaf', leaf, '--fabric', fabric]


#: The fault cases of the ``faults`` plan on the 9-node tree (3 leaves of
#: 3 nodes): name -> (faults as ``clustergate-lab cluster`` arguments, the
#: culprits a verdict must name: ``subject@fabric``). They cover every
#: leaf, nodes of each leaf and both fabrics, and the compound faults.
FAULT_CASES = {
    'uplink-leaf1-fab0': ([_uplink('leaf1', 'fab0', '25%')],
                          ['uplink:leaf1@fab0']),
    'uplink-leaf3-fab1': ([_uplink('leaf3', 'fab1', '25%')],
                          ['uplink:leaf3@fab1']),
    'node-n5-50-fab0': ([_node('n5', 'fab0', '50%')], ['n5@fab0']),
    'node-n7-70-fab1': ([_node('n7', 'fab1', '70%')], ['n7@fab1']),
    'miscabled-n2-leaf3-fab0': ([_miscable('n2', 'leaf3', 'fab0')],
                                ['n2@fab0']),
    'miscabled-n9-leaf2-fab1': ([_miscable('n9', 'leaf2', 'fab1')],
                                ['n9@fab1']),
    'two-uplinks-fab0': ([_uplink('leaf1', 'fab0', '25%'), _uplink('leaf3', 'fab0', '25%')],
                         ['uplink:leaf1@fab0', 'uplink:leaf3@fab0']),
    'uplink-leaf2+n2-fab0': ([_uplink('leaf2', 'fab0', '25%'), _node('n2', 'fab0', '50%')],
                             ['n2@fab0', 'uplink:leaf2@fab0']),
    'uplink-leaf3+n4-fab1': ([_uplink('leaf3', 'fab1', '25%'), _node('n4', 'fab1', '50%')],
                             ['n4@fab1', 'uplink:leaf3@fab1']),
    'miscabled-n7+n5-fab1': ([_miscable('n7', 'leaf1', 'fab1'), _node('n5', 'fab1', '50%')],
                             ['n5@fab1', 'n7@fab1']),
    'n3-fab0+uplink-leaf2-fab1': ([_node('n3', 'fab0', '50%'), _uplink('leaf2', 'fab1', '25%')],
                                  ['n3@fab0', 'uplink:leaf2@fab1']),
    'node-n3-95-fab0': ([_node('n3', 'fab0', '95%')], ['n3@fab0']),
    'node-n8-95-fab1': ([_node('n8', 'fab1', '95%')], ['n8@fab1']),
}


#: the fault case sets: name -> (cases, ``cluster up`` arguments)
CASE_SETS = {
    'tree9': (FAULT_CASES, ('--topology', 'leafspine')),
    'fattree3': (FATTREE3_CASES, ('--topology', 'fattree3', '--nodes', '24')),
}


def fabric_of_faults(faults):
    """The fabric a session must measure: the one all faults are on, or
    ``all`` when they are on both."""
    fabs = {f[f.index('--fabric') + 1] for f in faults if '--fabric' in f}
    return fabs.pop() if len(fabs) == 1 else 'all'


def fault_plan(runs=3, healthy=20, cases=None, healthy_per_round=0,
               schedule='topology', time_limit=None):
    """Healthy runs (fab0 and fab1 alternate), then ``runs`` rounds of
    every fault case (a plan cut short still covers every case), each
    round with ``healthy_per_round`` more healthy runs (judged by what the
    first healthy runs taught, e.g. a per-link baseline learnt from them)."""
    cases = cases or FAULT_CASES
    plan = [Run(f'healthy-{i + 1:02d}-fab{i % 2}', 'healthy',
                fabric=f'fab{i % 2}', schedule=schedule,
                time_limit=time_limit)
            for i in range(healthy)]
    for i in range(runs):
        plan += [Run(f'healthy-r{i + 1}-{k + 1}-fab{k % 2}', 'healthy',
                     fabric=f'fab{k % 2}', schedule=schedule,
                     time_limit=time_limit)
                 for k in range(healthy_per_round)]
        for name, (faults, culprits) in cases.items():
            plan.append(Run(f'{name}-{i + 1}', 'fault',
                            fabric=fabric_of_faults(faults), case=name,
                            faults=[list(f) for f in faults],
                            culprits=sorted(culprits), schedule=schedule,
                            time_limit=time_limit))
    return plan


# -- verdicts -----------------------------------------------------------------

def named_subjects(reason: str) -> List[str]:
    """What a failure names: nodes (node verdicts, link ends, per-node
    variables), uplinks (``uplink:leaf2``) and global links
    (``global:group1-group2``), sorted, unique."""
    out = set(_NODE.findall(reason))
    for a, b in _LINK.findall(reason):
        out |= {a, b}
    out |= {f'uplink:{leaf}' for leaf in _UPLINK.findall(reason)}
    out |= {f'global:{pair}' for pair in _GLOBAL.findall(reason)}
    if not out and 'performance' in reason.lower():
        out |= set(_PERF_NODES.findall(reason))
    return sorted(out)


def read_report(path):
    """(result, phase, reason, session uuid) of the LinkMatrix case of a
    ReFrame JSON run report, its last attempt counting."""
    with open(path) as fp:
        report = json.load(fp)

    uuid = report.get('session_info', {}).get('uuid')
    case = None
    for run in report.get('runs', []):
        for tc in run.get('testcases', []):
            if tc.get('name', '').startswith('LinkMatrix '):
                case = tc
    if case is None:
        return 'error', None, 'no LinkMatrix test case in the report', uuid

    result = case.get('result')
    phase = case.get('fail_phase')
    reason = (case.get('fail_reason') or '').strip()
    if result == 'pass':
        return 'pass', None, '', uuid

    # the check judges the links in the performance stage (a failure
    # there is a verdict, named or not); an older check judged them in
    # sanity. Any other failure that names nothing is no verdict: the job
    # did not measure (launch crash, missing pairs, time limit)
    if phase == 'performance' or (phase == 'sanity' and
                                  named_subjects(reason)):
        return 'fail', phase, reason, uuid

    # a retry of a verdict the retest decided fails before its job with
    # that verdict (clustergate.rfm.families.linkmatrix.DecidedVerdict)
    if retest_verdict.DECIDED in reason:
        return 'fail', 'performance', reason, uuid

    return 'error', phase, reason, uuid


_FABRIC = re.compile(r'%interconnect=(\S+)')


def read_fabrics(path):
    """{fabric: (result, phase, reason)} of every LinkMatrix case of a
    ReFrame JSON run report (a session over both fabrics has two), the
    last attempt of each counting; and the session uuid."""
    with open(path) as fp:
        report = json.load(fp)

    cases = {}
    for run in report.get('runs', []):
        for tc in run.get('testcases', []):
            name = tc.get('name', '')
            m = _FABRIC.search(name)
            if name.startswith('LinkMatrix ') and m:
                cases[m.group(1)] = tc
    return ({f: _verdict(tc) for f, tc in sorted(cases.items())},
            report.get('session_info', {}).get('uuid'))


def _verdict(case):
    """(result, phase, reason) of one test case, as :func:`read_report`."""
    result, phase = case.get('result'), case.get('fail_phase')
    reason = (case.get('fail_reason') or '').strip()
    if result == 'pass':
        return 'pass', None, ''
    if phase == 'performance' or (phase == 'sanity' and
                                  named_subjects(reason)):
        return 'fail', phase, reason
    return 'error', phase, reason


def fault_outcome(per_fabric, fabrics):
    """(result, phase, reason, named) of a session over ``fabrics`` from
    :func:`read_fabrics`: an error if a fabric gave no verdict, else a
    failure if any fabric failed; named as ``subject@fabric``."""
    missing = [f for f in fabrics if f not in per_fabric]
    if missing:
        return ('error', None, f'no LinkMatrix case on {", ".join(missing)}'
                ' in the report', [])
    got = [per_fabric[f] for f in fabrics]
    reason = ' | '.join(f'{f}: {v[2]}' for f, v in zip(fabrics, got) if v[2])
    phase = next((v[1] for v in got if v[1]), None)
    if any(v[0] == 'error' for v in got):
        return 'error', phase, reason, []
    named = sorted(f'{s}@{f}' for f, v in zip(fabrics, got)
                   if v[0] == 'fail' for s in named_subjects(v[2]))
    result = 'fail' if any(v[0] == 'fail' for v in got) else 'pass'
    return result, phase, reason, named


def rescore(run: Run, workdir):
    """A finished fault run read again from its kept report (the reading
    rules may have learnt a verdict kind since it ran)."""
    report = os.path.join(workdir, 'runs', run.id, 'report.json')
    if run.kind != 'fault' or run.result == 'error' or \
            not os.path.exists(report):
        return run
    per_fabric, _ = read_fabrics(report)
    run.result, run.phase, run.reason, run.named = fault_outcome(
        per_fabric, _fabrics(run.fabric))
    return run


def classify_fault(run: Run):
    """(culprits named, innocents named) of a finished fault run."""
    named = set(run.named)
    return (sorted(named & set(run.culprits)),
            sorted(named - set(run.culprits)))


def classify(run: Run):
    """(detected, correctly named, wrongly named) of a finished run."""
    detected = run.result == 'fail'
    right = detected and run.node in run.named
    wrong = detected and any(n != run.node for n in run.named)
    return detected, right, wrong


# -- running ------------------------------------------------------------------

def _cli():
    return os.path.join(os.path.dirname(sys.executable), 'clustergate-lab')


def _reframe():
    return os.path.join(os.path.dirname(sys.executable), 'reframe')


def _commit():
    """Short commit of the project tree (a table must not mix code)."""
    try:
        res = subprocess.run(['git', '-C', PROJECT_ROOT, 'rev-parse',
                              '--short', 'HEAD'], capture_output=True,
                             text=True, timeout=10)
        return res.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def cluster(*args, timeout=180):
    res = subprocess.run([_cli(), 'cluster', *args], capture_output=True,
                         text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f'clustergate-lab cluster {" ".join(args)}: '
                           f'{(res.stderr or res.stdout).strip()[-300:]}')
    return res.stdout


def is_up():
    return os.path.exists(os.path.join(STATE_DIR, 'state.json'))


def session_command(run: Run, base, report) -> List[str]:
    """The ReFrame command line of ``run``: the LinkMatrix check on its
    fabric(s) under OpenMPI, on its round schedule."""
    return [_reframe(), '-C', os.path.join(PROJECT_ROOT, 'config',
                                           'settings.py'),
            # only the check's file: loading every check costs ~30 s
            '-c', os.path.join(PROJECT_ROOT, 'checks', 'linkmatrix'),
            '--system', 'emucluster', '--prefix', base,
            '--report-file', report,
            '-n', f'^LinkMatrix.*{_fabric_regex(run.fabric)}',
            '-S', 'valid_prog_environs=openmpi',
            '-S', f'LinkMatrix.link_schedule={run.schedule}',
            *(('-S', f'LinkMatrix.time_limit={run.time_limit}')
              if run.time_limit else ()), '-r']


def limit_seconds(limit: str) -> float:
    """Seconds of a ReFrame time limit such as '30m', '1h30m' or '90s'
    (ValueError naming it otherwise)."""
    parts = re.fullmatch(r'(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?',
                         limit or '')
    if not limit or not parts:
        raise ValueError(f'time limit {limit!r}: not such as 30m, 1h30m, '
                         f'90s')
    d, h, m, sec = (int(x or 0) for x in parts.groups())
    return ((d * 24 + h) * 60 + m) * 60 + sec


def session_timeout(run: Run) -> float:
    """How long the session of ``run`` may take before it is killed: the
    default, or its job limit and 5 minutes for the build, the queue and
    the verdict, whichever is longer. Every pair without a limit of its
    own: twice the default (the check gives its job 24/14 of 10 minutes
    on the 24-node tree: 17 minutes)."""
    if not run.time_limit:
        return SESSION_TIMEOUT * (2 if run.schedule == 'all-pairs' else 1)
    return max(SESSION_TIMEOUT, limit_seconds(run.time_limit) + 300)


#: the reason of a run whose job Slurm ended at its time limit
_TIME_LIMIT = re.compile(r'cancelled job \d+ .*due to time limit', re.I)


def cut_by_limit(run: Run) -> bool:
    """Whether ``run`` gave no verdict because its job reached its time
    limit: another try ends the same, so it is not tried again."""
    return run.result == 'error' and bool(_TIME_LIMIT.search(run.reason))


def reframe_session(run: Run, workdir, user=USER, timeout=SESSION_TIMEOUT,
                    references=None):
    """One ReFrame session of the LinkMatrix check on ``run.fabric``, as
    ``user``, its perflog and results DB shared by the whole plan."""
    base = os.path.join(workdir, 'runs', run.id)
    if os.path.exists(base):
        shutil.rmtree(base)     # an interrupted attempt of this run
    os.makedirs(base)
    env = {
        'SLURM_CONF': os.path.join(STATE_DIR, 'slurm.conf'),
        'CG_PERFLOG_DIR': os.path.join(workdir, 'perflogs'),
        'CG_RESULTS_DB': os.path.join(workdir, 'results.db'),
        'CG_DEBUG_LOG': os.path.join(base, 'reframe.log'),
        'HOME': os.path.expanduser(f'~{user}'),
        'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
    }
    if references:
        # learnt per-link baselines (links/<system>.yaml below it)
        env['CG_REFERENCES_DIR'] = references
    report = os.path.join(base, 'report.json')
    cmd = session_command(run, base, report)
    pw = pwd.getpwnam(user)
    for path in (workdir, os.path.join(workdir, 'runs'), base):
        os.chown(path, pw.pw_uid, pw.pw_gid)
    full = ['runuser', '-u', user, '--', 'env',
            *(f'{k}={v}' for k, v in env.items()), *cmd]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(full, capture_output=True, text=True,
                              timeout=timeout, cwd=workdir)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as err:
        rc, out = -1, f'session killed after {timeout} s: {err}'
    run.wall_s = round(time.monotonic() - t0, 1)
    run.rc = rc
    with open(os.path.join(base, 'session.out'), 'w') as fp:
        fp.write(' '.join(cmd) + '\n' + out)

    if not os.path.exists(report):
        run.result, run.reason, run.named = 'error', out.strip()[-300:], []
    elif run.kind == 'fault':
        per_fabric, run.session = read_fabrics(report)
        run.result, run.phase, run.reason, run.named = fault_outcome(
            per_fabric, _fabrics(run.fabric))
    else:
        run.result, run.phase, run.reason, run.session = read_report(report)
        run.named = named_subjects(run.reason) if run.result == 'fail' \
            else []


def _fabrics(fabric):
    return ['fab0', 'fab1'] if fabric == 'all' else [fabric]


def _fabric_regex(fabric):
    return 'fab[01]' if fabric == 'all' else fabric


def execute(run: Run, workdir, references=None):
    """Degrade, run the session, restore (always)."""
    run.started = dt.datetime.now(dt.timezone.utc).strftime(
        '%Y-%m-%d %H:%M:%S UTC')
    run.commit = _commit()
    if run.kind == 'degraded':
        cluster('degrade', '--node', run.node, '--fabric', run.fabric,
                '--rate', f'{run.level}%')
    try:
        for fault in run.faults:
            cluster(*fault)
        reframe_session(run, workdir, timeout=session_timeout(run),
                        references=references)
    finally:
        cluster('restore')


def load(workdir) -> List[Run]:
    path = os.path.join(workdir, 'runs.json')
    if not os.path.exists(path):
        return []
    with open(path) as fp:
        return [Run(**r) for r in json.load(fp)]


def save(workdir, runs: List[Run]):
    path = os.path.join(workdir, 'runs.json')
    with open(path + '.tmp', 'w') as fp:
        json.dump([asdict(r) for r in runs], fp, indent=1)
    os.replace(path + '.tmp', path)


def run_plan(plan: List[Run], workdir, max_minutes, max_errors=3,
             bring_up=True, up_args=(), out=sys.stdout, references=None):
    """Runs what of ``plan`` is not done yet, within ``max_minutes``; a run
    that gave no verdict (``error``) is tried again, at most
    ``max_errors`` times per run. Returns the number of runs left."""
    os.makedirs(workdir, exist_ok=True)
    done = {r.id: r for r in load(workdir) if r.result != 'error'}
    # an error's record is kept as '<run>!error' (_errors)
    errors = {r.id.split('!')[0]: r.reason for r in load(workdir)
              if r.result == 'error'}
    tries = {}
    deadline = time.monotonic() + 60 * max_minutes
    started = False
    if bring_up and not is_up():
        cluster('up', *(up_args or ('--topology', 'leafspine')))
        started = True
    try:
        for planned in plan:
            if planned.id in done:
                continue
            if time.monotonic() > deadline:
                break
            while tries.get(planned.id, 0) < max_errors:
                tries[planned.id] = tries.get(planned.id, 0) + 1
                run = Run(**{k: getattr(planned, k) for k in
                             ('id', 'kind', 'level', 'node', 'fabric',
                              'night', 'case', 'faults', 'culprits',
                              'schedule', 'time_limit')})
                execute(run, workdir, references)
                print(f'{run.id}: {run.result} in {run.wall_s:.0f} s '
                      f'{run.named or ""} {run.reason[:160]}', file=out,
                      flush=True)
                if run.result != 'error':
                    done[run.id] = run
                    break
                errors[run.id] = run.reason
                save(workdir, list(done.values()) + _errors(errors, done))
                if cut_by_limit(run):
                    break
            save(workdir, list(done.values()) + _errors(errors, done))
    finally:
        if started:
            cluster('down')
    return sum(1 for r in plan if r.id not in done)


def _errors(errors, done):
    """Runs that gave no verdict (kept in runs.json for the record)."""
    return [Run(i + '!error', 'error', result='error', reason=why)
            for i, why in errors.items() if i not in done]


# -- table and figure ---------------------------------------------------------

def table(runs: List[Run]):
    """Rows (level, runs, detected, right, wrong, median wall s) and the
    healthy row, from finished runs."""
    import statistics
    rows = []
    healthy = [r for r in runs if r.kind == 'healthy' and r.done]
    levels = sorted({r.level for r in runs if r.kind == 'degraded'},
                    reverse=True)
    for level in levels:
        rs = [r for r in runs if r.kind == 'degraded' and r.level == level
              and r.result in ('pass', 'fail')]
        c = [classify(r) for r in rs]
        rows.append((level, len(rs), sum(x[0] for x in c),
                     sum(x[1] for x in c), sum(x[2] for x in c),
                     statistics.median([r.wall_s for r in rs]) if rs
                     else None))
    hs = [r for r in healthy if r.result in ('pass', 'fail')]
    alarms = sum(r.result == 'fail' for r in hs)
    hrow = (100, len(hs), alarms, 0, alarms,
            statistics.median([r.wall_s for r in hs]) if hs else None)
    return rows, hrow


def _table(header, lines, errors, the_job):
    """A six-column markdown table of ``lines`` under ``header``, then
    the count of sessions run again because ``the_job`` did not measure."""
    lines = [header, '|---|---|---|---|---|---|'] + lines
    if errors:
        lines.append(f'\n{errors} session(s) gave no verdict ({the_job} did '
                     f'not measure) and were run again.')
    return '\n'.join(lines)


def markdown(rows, hrow, errors=0):
    lines = [f'| {level} % | {n} | {det}/{n} | {right}/{n} | '
             f'{wrong}/{n} | {wall or 0:.0f} |'
             for level, n, det, right, wrong, wall in rows]
    level, n, alarms, _, _, wall = hrow
    lines.append(f'| healthy | {n} | false alarms {alarms}/{n} | - | '
                 f'{alarms}/{n} | {wall or 0:.0f} |')
    return _table('| node link at | runs | detected | correctly named | '
                  'wrongly named | median wall (s) |', lines, errors, 'job')


def fault_table(runs: List[Run]):
    """Rows (case, culprits, runs, runs naming every culprit, runs naming
    an innocent, the innocents, median wall s) per fault case, in the order
    of :data:`FAULT_CASES`, from finished fault runs."""
    import statistics
    order = list(FAULT_CASES) + sorted({r.case for r in runs if r.case} -
                                        set(FAULT_CASES))
    rows = []
    for case in order:
        rs = [r for r in runs if r.kind == 'fault' and r.case == case and
              r.result in ('pass', 'fail')]
        if not rs:
            continue
        c = [classify_fault(r) for r in rs]
        rows.append((case, rs[0].culprits, len(rs),
                     sum(set(got) == set(r.culprits)
                         for (got, _), r in zip(c, rs)),
                     sum(bool(bad) for _, bad in c),
                     sorted({x for _, bad in c for x in bad}),
                     statistics.median(r.wall_s for r in rs)))
    return rows


def fault_markdown(rows, hrow, errors=0):
    lines = [f'| {case} | {", ".join(culprits)} | {n} | {right}/{n} '
             f'| {wrong}/{n}{" (" + ", ".join(who) + ")" if who else ""}'
             f' | {wall:.0f} |'
             for case, culprits, n, right, wrong, who, wall in rows]
    _, n, alarms, _, _, wall = hrow
    lines.append(f'| healthy | - | {n} | false alarms {alarms}/{n} | - | '
                 f'{wall or 0:.0f} |')
    return _table('| fault case | culprits | runs | every culprit named | '
                  'innocents named | median time to verdict (s) |', lines,
                  errors, 'the job')


def figure(rows, hrow, path, title=''):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    labels = [f'{r[0]} %' for r in rows] + ['healthy']
    x = range(len(labels))
    share = [lambda r, i=i: r[i] / r[1] if r[1] else 0 for i in (2, 3, 4)]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    w = 0.26
    # Okabe-Ito colours: told apart with any colour vision; hatches too
    styles = [('detected', '#0072B2', ''), ('correctly named', '#009E73',
                                            '//'),
              ('wrongly named / false alarm', '#D55E00', 'xx')]
    for k, (name, colour, hatch) in enumerate(styles):
        ys = [share[k](r) for r in rows] + \
             [hrow[2] / hrow[1] if hrow[1] and k != 1 else 0]
        ax.bar([i + (k - 1) * w for i in x], ys, w, label=name,
               color=colour, hatch=hatch, edgecolor='black', lw=0.4)
    for i, r in enumerate(rows + [hrow]):
        ax.text(i, 1.04, f'n={r[1]}', ha='center', fontsize=7)
    ax.set_xticks(list(x), labels)
    ax.set_xlabel('rate of the degraded node link (share of 250 Mbit/s)')
    ax.set_ylabel('share of runs')
    ax.set_ylim(0, 1.12)
    ax.legend(fontsize=7, loc='center left')
    ax.set_title(title or 'LinkMatrix on the emulated leaf/spine cluster '
                          '(9 nodes, fab0, Open MPI)', fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
