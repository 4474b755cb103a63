"""The nightly rotation inside a ReFrame session (clustergate.planning.rotation).

ReFrame's tag filter judges each test alone, but a budget is shared by
all of a night's tests: which ones fit is known only once every test is
loaded. So the nightly mode filters with an expression ReFrame evaluates
after loading (``-E 'cg_tonight()'``, config/common.py):
:func:`~clustergate.rfm.point.modes.set_mode_tags` registers each
acceptance test of a partition with a ``rotation`` extra here and puts a
``cg_tonight`` callable in the test; the first call plans the cycle from
every registered test, says the night in the session header and writes
one line per point to a file (``$CG_ROTATION_DETAILS``, default
``rotation-<system>.tsv`` next to the results database).

Sentinels: what a budgeted partition must run every night, whatever the
rotation (``extras['sentinels']``, :func:`mark_sentinels`): every point of
the checks it names (``checks``, default ``['LinkMatrix']``: the link
matrix over every fabric at the whole partition, so that a broken switch
is found the next morning, not up to a cycle later) and, with
``canaries`` (default true), one small point of each other check family
it runs (its cheapest point, then the fewest ranks): a family whose
build, binaries or environment broke is red the next morning. The
sentinels' cost comes out of every night's budget first; sentinels that
do not fit it stop the session with one line naming the file and the
key. The header lists them; their tests get the tag ``sentinel``.

Estimates per test case (check, partition, environment): the last
measured duration in the results database (build, run including queue
wait, and ReFrame's own phases, plus its share of the run fixtures it
reads) by a session that ran the night's sizes (a nightly one, or one
without a mode: not ci, which caps HPCC's N, nor acceptance), 0 if its
last record is a skip, else for a reader of a run fixture its share of
the whole run (its job and its readers,
clustergate.planning.measured.run_costs), of the run
at the same nodes and ranks per node over another interconnect
(:func:`run_kind`: the most such a run paid), or of the nearest node
count its fixture ran at, grown by the family's law (:func:`nearest_run`),
else the median of the measured cases of its kind (check
and node count: :func:`like_costs`), else its kind at the nearest node
count measured, scaled by the family's growth with the node count
(:func:`nearest_like`), else the cost model's default for
the family and node count
(clustergate.planning.costmodel.default_case_seconds), scaled to the
partition's declared node-link rate (``topology.node_rate``) and the
test's ranks per node for the network-bound families: a fresh site's
first night on slow links is planned at what those links take.
Builds run once per environment per session and are not counted
(clustergate.planning.measured.case_costs).

The budget holds at run time too (clustergate.rfm.point.nightbudget):
the plan is made from estimates, and a fresh site's first night, planned
from the cost model's defaults, ran 3 times its estimate on the 12-node
emulated site (2 cores). Once a partition's budget is spent (counted
from the session's start), or would be before tonight's estimate of a
point is, tonight's rotating points that have not started on it are not
started, nor a run fixture that only rotating points read (a test that
only reads a run that did start, such as HPCC's kernels, still judges
it): each is skipped saying so (its ``night_not_started`` tells the
results database that this was no measurement, so its estimate stays
what it was; so do the readers of a run kept from starting), while the
sentinels always run.
"""

import inspect
import os
import sys
import time
from typing import Dict, List, Optional, Tuple

from clustergate.planning import costmodel
from clustergate.planning.estimates import (SHARED_RUN, by_node_count, kind,
                                           like_costs, nearest_like,
                                           nearest_run, run_kind,
                                           shared_run)
from clustergate.planning import rotation
# case_costs and NOT_STARTED are read here by the rotation's callers
from clustergate.planning.measured import (NOT_STARTED,  # noqa: F401
                                          case_costs, measured,
                                          measured_runs)
from clustergate.results import timing, verdict
from clustergate.site import extras as keys
from clustergate.site import environment as cgenv
from clustergate import adapter
from clustergate.site.partition import partition_model, point_of

#: system name -> {test name: test}; filled while ReFrame loads the checks
_registered: Dict[str, Dict[str, object]] = {}
#: system name -> names of tonight's tests, once planned
_tonight: Dict[str, set] = {}
#: system name -> {name: rotation.Point} of tonight's points
_points: Dict[str, Dict[str, rotation.Point]] = {}


def budgets(partitions) -> Dict[str, float]:
    """Seconds of budget of each partition (fullname) that declares one."""
    return {p.fullname: partition_model(p).rotation.budget_s
            for p in partitions if partition_model(p).rotation is not None}


def register(system: str, test) -> None:
    _registered.setdefault(system, {})[test.display_name] = test
    _tonight.pop(system, None)


def family(test) -> str:
    return timing.family_of({'filename': inspect.getfile(type(test))})



#: estimate sources, least known first
_SOURCES = ('default', 'like', 'skipped', 'measured')

def link_rate(part) -> Optional[float]:
    """The node-link rate (MB/s) a partition declares
    (``extras['topology']['node_rate']``), None where it declares none;
    RotationError naming the partition for a malformed rate."""
    topo = partition_model(part).topology
    try:
        return costmodel.link_mbs(topo.node_rate if topo else None)
    except ValueError as err:
        raise rotation.RotationError(
            f'partition {part.fullname}: extras.{keys.TOPOLOGY}.node_rate: '
            f'{err}') from None


def default_seconds(test, part) -> float:
    """The cost model's estimate of one case of ``test`` on ``part``:
    its family's default at its node count, scaled to the partition's
    link rate and the test's ranks per node where the rate is known."""
    return costmodel.default_case_seconds(
        family(test), getattr(test, 'num_nodes', 1) or 1,
        ppn=getattr(test, 'ppn', 1) or 1, link=link_rate(part),
        check=test.display_name.split(' ', 1)[0])


def points(tests, budgeted: Dict[str, float], db: Optional[str]
           ) -> List[rotation.Point]:
    """A rotation point per registered test that has test cases on a
    budgeted partition."""
    records = measured(db)
    alike = like_costs(records, measured_runs(db))
    counts = by_node_count(alike)
    out = []
    for test in tests:
        cost, last, sources, cases, per_case = {}, None, set(), 0, {}
        fam = family(test)
        combos = adapter.valid_combinations(test.valid_systems,
                                            test.valid_prog_environs)
        for part, envs in combos.items():
            if part.fullname not in budgeted:
                continue

            for env in envs:
                key = (test.display_name, part.fullname, env.name)
                check, nodes = kind(key[0])
                run = shared_run(key[0])
                like = alike.get((SHARED_RUN, run) + key[1:])
                if like is None and run:
                    like = alike.get((SHARED_RUN, run_kind(run)) + key[1:])
                if like is None and run:
                    # a reader's own kind holds shares of runs: the whole
                    # run grows from its fixture's runs at other counts
                    like = nearest_run(alike, run, *key[1:], fam)
                if like is None:
                    like = alike.get((check, nodes) + key[1:])
                if like is None and int(nodes or 0) > 0 and not run:
                    like = nearest_like(counts.get((check,) + key[1:]),
                                        int(nodes), fam)
                if key in records:
                    sec, ran, source = records[key]
                    last = max(filter(None, (last, ran)), default=None)
                elif like is not None:
                    sec, source = like, 'like'
                else:
                    sec, source = default_seconds(test, part), 'default'
                sources.add(source)
                cases += 1
                per_case[key[1:]] = sec
                cost[part.fullname] = cost.get(part.fullname, 0.0) + sec

        if cost:
            # a point is as well known as its least known case
            source = next(s for s in _SOURCES if s in sources)
            pinned = getattr(test, 'cg_pinned', False)
            out.append(rotation.Point(
                test.display_name, cost,
                'nightly subset (pin_subset)' if pinned else '',
                last, source, cases, shared_run(test.display_name),
                per_case))

    return share_runs(out, records)


def share_runs(pts, records) -> List[rotation.Point]:
    """``pts`` with the readers of one shared run (a rotation group) costing
    the run between them: per partition and environment, the larger of
    what its measured readers paid together and the most any one reader
    is estimated at, split evenly. A reader measured beside others paid
    its share of the run; one estimated from a reader that ran alone
    (or from the cost model) carries all of it: summed, HPCC's six
    kernels of a 214-s run were planned at 21 min."""
    groups: Dict[tuple, List[rotation.Point]] = {}
    for pt in pts:
        for k in pt.per_case:
            if pt.group:
                groups.setdefault((pt.group,) + k, []).append(pt)

    for (_, *case), readers in groups.items():
        case = tuple(case)
        paid = [pt.per_case[case] for pt in readers
                if (records.get((pt.name,) + case) or (0, 0, ''))[2]
                == 'measured']
        share = max(sum(paid), max(pt.per_case[case] for pt in readers)) \
            / len(readers)
        for pt in readers:
            pt.cost[case[0]] += share - pt.per_case[case]
            pt.per_case[case] = share

    return pts


def rate_notes(pts, tests, partitions) -> List[str]:
    """A line per budgeted partition that declares no node-link rate
    while network-bound points of it are estimated from the defaults:
    those are the rate the defaults were measured at, and a slower
    fabric's first nights run past their budget."""
    tests = {t.display_name: t for t in tests}
    out = []
    for part in partitions:
        if partition_model(part).rotation is None or \
                link_rate(part) is not None:
            continue

        bound = [pt for pt in pts if part.fullname in pt.cost and
                 pt.source == 'default' and
                 (costmodel.DEFAULT_FAMILIES.get(family(tests[pt.name]))
                  or costmodel.Family('?', 1, 0)).link_mbs is not None]
        if bound:
            out.append(
                f'  {len(bound)} network-bound point(s) of {part.fullname} '
                f'estimated from the defaults at the node-link rate they '
                f'were measured at (1 Gbit/s; the link matrix and NetPIPE '
                f'250 Mbit/s): the partition declares no rate '
                f'(extras.{keys.TOPOLOGY}.node_rate)')
    return out


class SentinelError(rotation.RotationError):
    """A partition's ``sentinels`` cannot be met (one line naming the
    partition and the key; :func:`plan_tonight` adds the file)."""


def canaries(pts, tests, partition: str, covered=()) -> Dict[str, object]:
    """family -> its canary on ``partition``: the point of the family
    that costs the partition least (then the fewest ranks, then a fixed
    order), for each family the partition runs that is not in
    ``covered`` (families with a sentinel already)."""
    best: Dict[str, Tuple] = {}
    for pt in pts:
        if partition not in pt.cost:
            continue

        test = tests[pt.name]
        fam = family(test)
        key = (pt.cost[partition], point_of(test).ranks,
               rotation.order_key(pt.name))
        if fam not in covered and (fam not in best or key < best[fam][0]):
            best[fam] = (key, pt)

    return {fam: v[1] for fam, v in best.items()}


def _mark_checks(pts, tests, part, names):
    """Marks the points of the checks ``names`` on ``part``; the families
    they cover. A check the partition declares and that has no point
    there is an error (the default's link matrix on a 1-node partition
    is not)."""
    model = partition_model(part)
    declared = model.sentinels.declared
    # the interconnects the nightly subset names (a site's UCX paths of
    # the same interfaces are in acceptance only): each interface's
    # matrix once a night, not once per transport
    nightly = model.sweep.subset('nightly')
    ics = nightly.interconnects if nightly is not None else None
    covered = set()
    for check in names:
        hits = [pt for pt in pts if part.fullname in pt.cost and
                type(tests[pt.name]).__name__ == check and
                (ics is None or getattr(tests[pt.name], 'interconnect',
                                        None) in (None, *ics))]
        if declared and not hits:
            raise SentinelError(
                f'partition {part.fullname}: extras.{keys.SENTINELS}.'
                f'{keys.SENTINEL_CHECKS}: {check!r} has no point in the '
                f"partition's acceptance space")

        for pt in hits:
            pt.sentinel = pt.sentinel or f'check {check}'
            covered.add(family(tests[pt.name]))

    return covered


def mark_sentinels(pts, tests, partitions) -> None:
    """Sets ``sentinel`` (why it runs every night) on the points that the
    budgeted ``partitions`` (ReFrame partitions) want every night: the
    points of their ``sentinels`` checks and, with ``canaries``, one
    canary per other family (:func:`canaries`)."""
    tests = {t.display_name: t for t in tests}
    for part in partitions:
        model = partition_model(part)
        if model.rotation is None:
            continue

        spec = model.sentinels
        covered = _mark_checks(pts, tests, part, spec.checks)
        # a family with a point in the pinned nightly subset has its canary
        covered |= {family(tests[pt.name]) for pt in pts
                    if pt.sentinel and part.fullname in pt.cost}
        if spec.canaries:
            for fam, pt in canaries(pts, tests, part.fullname,
                                    covered).items():
                pt.sentinel = pt.sentinel or f'canary of {fam}'

    # the other readers of a sentinel's shared run judge that run too: it
    # runs anyway, and rotating them would pay for it again another night
    runs = {pt.group: pt.name for pt in pts if pt.sentinel and pt.group}
    for pt in pts:
        if not pt.sentinel and pt.group in runs:
            pt.sentinel = f'reads the run of {runs[pt.group]}'


def _tag_sentinels(pts, tests) -> None:
    """The sentinels' test objects get the tag ``sentinel`` and say so in
    their description (``-L``, the run report)."""
    tests = {t.display_name: t for t in tests}
    for pt in pts:
        if pt.sentinel:
            test = tests[pt.name]
            test.tags = set(test.tags) | {'sentinel'}
            test.descr = f'{test.descr} [sentinel: {pt.sentinel}]'


def _config_error(system: str, err: rotation.RotationError) -> str:
    """The line of a rotation error; a sentinels error names the file
    and the key."""
    where = keys.source_of(system)
    if isinstance(err, rotation.SentinelsOverBudget):
        return (f'{where}: partition {err.partition}: extras.'
                f'{keys.SENTINELS}: the sentinels take {err.used / 60:.1f} '
                f'min of every night, above the {err.budget / 60:g} min '
                f'budget (extras.{keys.ROTATION}.{keys.ROTATION_BUDGET})')

    if isinstance(err, SentinelError):
        return f'{where}: {err}'

    return str(err)


def _details_path(db: Optional[str], system: str) -> str:
    path = cgenv.get(cgenv.ROTATION_DETAILS)
    if path:
        return path

    base = os.path.dirname(db) if db else os.getcwd()
    return os.path.join(base, f'rotation-{system}.tsv')


def _say(lines):
    for line in lines:
        adapter.logger().info(line)


def plan_tonight(system: str) -> set:
    """Plans the cycle of the registered tests of ``system`` (once), says
    the night and returns tonight's test names."""
    if system in _tonight:
        return _tonight[system]

    # the night's clock starts with the session: loading the checks took
    # 25 s of a 16-min night on the emulated site, before any plan
    from clustergate.rfm import session
    _night_began.setdefault(system, session.started() or time.time())

    rt = adapter.runtime()
    budgeted = budgets(rt.system.partitions)
    db = adapter.option('storage/0/sqlite_db_file')
    tests = list(_registered.get(system, {}).values())
    try:
        pts = points(tests, budgeted, db)
        mark_sentinels(pts, tests, rt.system.partitions)
        night = rotation.tonight(pts, budgeted)
    except rotation.RotationError as err:
        # inside ReFrame's filter an exception would only make every test
        # "not selected" with a warning each: stop the session, one line
        adapter.logger().error(f'nightly rotation: {_config_error(system, err)}')
        sys.exit(1)

    _tag_sentinels(pts, tests)

    path = _details_path(db, system)
    lines = rotation.header(night, pts, time.time())
    lines += rate_notes(pts, tests, rt.system.partitions)
    try:
        with open(path, 'w') as fp:
            fp.write('\n'.join(rotation.details(night, pts)) + '\n')
        lines.append(f'  every point, its night, estimate and last run: '
                     f'{path}')
    except OSError as err:
        lines.append(f'  (per-point details not written: {err})')

    _say(lines)
    if night.plan.oversized:
        verdict.note_coverage(system, (
            f'not in any night: {len(night.plan.oversized)} acceptance '
            f'point(s) of {system}, each alone above the night budget: '
            f'--mode acceptance runs them (night "acceptance" in {path})'))
    _tonight[system] = set(night.names)
    by_name = {pt.name: pt for pt in pts}
    _points[system] = {n: by_name[n] for n in night.names if n in by_name}
    return _tonight[system]


#: unix time each system's night began (the session's start): the clock
#: of the budgets at run time
_night_began: Dict[str, float] = {}


class Tonight:
    """The ``cg_tonight`` of a test: True when the nightly rotation runs
    it tonight (always True for a test outside the rotation)."""

    def __init__(self, system: Optional[str] = None,
                 name: Optional[str] = None):
        self.system, self.name = system, name

    def __call__(self) -> bool:
        if self.system is None:
            return True

        return self.name in plan_tonight(self.system)

    def __deepcopy__(self, memo):
        return self
