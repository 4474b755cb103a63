"""Which mode (ci, nightly, acceptance) a test instance belongs to: one
hook, :func:`set_mode_tags`, for every family.

Two things decide, both declarative:

* the family's :attr:`~clustergate.rfm.point.base.PointTest.mode_selection`: for each mode, the
  parameter values of the instances that belong to it (a mode missing:
  none; an empty mapping: every instance);
* the partitions' subsets: a partition may narrow a mode to a subset of
  its sweep with ``extras.sweep.<mode>`` (lists of ``nodes``, ``ppn`` and
  ``interconnects``), so that a big system's gate stays within minutes
  and its night within hours. A point belongs to a mode when at least one
  partition that can run it has it in its subset (a partition that
  declares no subset takes every point). Keep a partition's ci subset
  within its nightly subset.

The modes (config/common.py) select by these tags. A partition with a
``rotation`` extra (a nightly budget) replaces its fixed nightly subset by
a rotation of its whole acceptance space: its acceptance tests are tagged
``nightly`` too and the nightly mode's filter ``-E 'cg_tonight()'`` keeps
tonight's share and the partition's sentinels, which run every night
(clustergate.rfm.point.nightly).
"""

from typing import Iterable, Mapping

from clustergate.results import perflogguard
from clustergate import adapter
from clustergate.rfm.point import nightly
from clustergate.planning import modesize
from clustergate.site.partition import partition_model

MODES = ('ci', 'nightly', 'acceptance')

#: Declarations for :attr:`~clustergate.rfm.point.base.PointTest.mode_selection`
EVERY_MODE = {'ci': {}, 'nightly': {}, 'acceptance': {}}
NIGHTLY = {'nightly': {}, 'acceptance': {}}
ACCEPTANCE_ONLY = {'acceptance': {}}


def _within(value, allowed) -> bool:
    """``value`` is one of ``allowed`` (None: the whole axis)."""
    return allowed is None or value in allowed


def in_subset(point, partitions: Iterable[Mapping], mode: str) -> bool:
    """True if ``point`` is in the ``mode`` subset of at least one
    partition's extras (a partition that declares no subset takes every
    point)."""
    for extras in partitions:
        model = partition_model(extras)
        if not model.declares_sweep:
            continue

        sub = model.sweep.subset(mode)
        if sub is None:
            return True

        if all(_within(getattr(point, axis), sub.axis(name))
               for axis, name in (('nodes', 'nodes'), ('ppn', 'ppn'),
                                  ('interconnect', 'interconnects'))):
            return True

    return False


def selected(test, rule) -> bool:
    """True if ``test`` matches one mode's rule of a ``mode_selection``
    (None: the mode is not the family's)."""
    if rule is None:
        return False

    return all(getattr(test, attr) in allowed
               for attr, allowed in rule.items())


def guard_dry_run(test):
    """A dry run's test cases write no perflog line (perflogguard)."""
    if test.is_dry_run():
        perflogguard.install()


def mode_point(test):
    """The sweep point the partitions' subsets judge, or None (a test
    without one is not narrowed by the subsets)."""
    point = getattr(test, 'sweep_point', None)
    return point() if callable(point) else None


def mode_partitions(test):
    """Models of the partitions ``test`` runs on."""
    system = adapter.current_system()
    if system is None:
        return []

    names = getattr(test, 'capable_partitions', None)
    return [partition_model(p) for p in system.partitions
            if names is None or p.fullname in names]


def rotation_partitions(test):
    """Models of the partitions ``test`` runs on that declare a nightly
    rotation."""
    system = adapter.current_system()
    names = getattr(test, 'capable_partitions', None)
    return [partition_model(p)
            for p in (system.partitions if system else [])
            if partition_model(p).rotation is not None and
            (names is None or p.fullname in names)]


def join_rotation(test, tags):
    """``tags`` with ``nightly`` for an acceptance test of a partition
    that rotates; registers it with the rotation (see the module)."""
    rotating = rotation_partitions(test)
    # a fixture (HPCC's run) is not a test case of its own: it runs
    # when a test of tonight needs it
    if not rotating or test.is_fixture():
        test.cg_tonight = nightly.Tonight()
        return tags

    # pinned: in the fixed nightly subset of a partition that keeps it
    test.cg_pinned = 'nightly' in tags and any(
        m.rotation.pin_subset for m in rotating)
    system = adapter.current_system().name
    if 'acceptance' not in tags and not test.cg_pinned:
        names = getattr(test, 'capable_partitions', None)
        everywhere = names is not None and len(rotating) == len(names)
        # a nightly-only point (a reduced scale of acceptance points, e.g.
        # MemoryStrided %scale=nightly) where the rotation replaces the
        # fixed nightly subset would run every night outside the budget
        # (on localhost with a 9 min budget: 3 such cases, 4-5 min each):
        # the rotation runs the acceptance scale instead
        test.cg_tonight = (nightly.Tonight(system, None) if everywhere
                           and 'nightly' in tags else nightly.Tonight())
        return tags

    nightly.register(system, test)
    test.cg_tonight = nightly.Tonight(system, test.display_name)
    return tags | {'nightly'}


def set_mode_tags(test):
    """The mode tags of ``test`` (its ``mode_selection``, the subsets of
    the partitions that can run its point, the rotation) and its
    ``tag_names()``. Once the point is known (some families take it at
    init) and the capable partitions are chosen."""
    point = test.mode_point()
    parts = mode_partitions(test) if point is not None else []
    tags = {m for m in MODES
            if selected(test, test.mode_selection.get(m)) and
            (point is None or in_subset(point, parts, m))}
    tags = join_rotation(test, tags)
    test.tags = (set(test.tags) - set(MODES)) | tags | test.tag_names()


#: the mode of a ``reframe`` command line (one parser for the package)
session_mode = modesize.session_mode


def sentinel_environs(parts, capable):
    """The environments of the nightly's fabric check: per partition
    (``[(partition, model)]``) its ``sentinels.environ`` where it names
    one of ``capable``, else the first of its environments in
    ``capable``; one name per partition (several partitions may differ)."""
    out = []
    for part, model in parts:
        names = [e.name for e in part.environs if e.name in capable]
        want = model.sentinels.environ
        pick = want if want in names else (names[0] if names else None)
        if want is not None and want not in names:
            adapter.logger().warning(
                f'partition {part.fullname}: extras.sentinels.environ '
                f'{want!r} cannot run the link matrix here (it can: '
                f'{", ".join(names) or "none"}): the nightly uses {pick}')
        if pick is not None and pick not in out:
            out.append(pick)
    return out


#: command-line options that choose the environments themselves: a ci
#: session given one keeps its choice
_ENVIRON_OPTIONS = ('-p', '--prgenv')


def _chooses_environs(argv) -> bool:
    argv = list(argv)
    for i, a in enumerate(argv):
        if a in _ENVIRON_OPTIONS or a.startswith(('--prgenv=', '-p')):
            return True
        if a == '-S' and i + 1 < len(argv) and \
                argv[i + 1].split('=', 1)[0].endswith('valid_prog_environs'):
            return True
    return False


def one_environ_in_ci(test, argv) -> None:
    """A ci session runs each point under one environment per partition
    (its ``sentinels.environ``, else the first that can run the point):
    a merge request's gate asks whether the code works with one MPI, in
    minutes; the nightly and the acceptance run every environment. A
    command line that chooses environments (``-p``, ``-S
    valid_prog_environs``) keeps its choice."""
    system = adapter.current_system()
    if system is None or test.is_fixture() or \
            session_mode(argv) != 'ci' or _chooses_environs(argv):
        return
    names = getattr(test, 'capable_partitions', None) or []
    envs = []
    for part in system.partitions:
        if part.fullname not in names:
            continue
        model = partition_model(part)
        able = [e.name for e in part.environs
                if e.name in test.valid_prog_environs]
        # a benchmark family: an environment its source can serve here
        # (IMB from the Intel MPI wheel, not a Spack environment without
        # spack: that one would be skipped and the family not run)
        served = [n for n in able if _source_serves(test, part, model, n)]
        want = model.sentinels.environ
        pick = want if want in (served or able) else (served or able or
                                                      [None])[0]
        if pick is not None and pick not in envs:
            envs.append(pick)
    if envs:
        test.valid_prog_environs = envs


def _source_serves(test, part, model, environ) -> bool:
    """True unless ``test`` is of a benchmark family whose source cannot
    provide binaries for ``environ`` on ``part`` (as far as can be told
    before building)."""
    from clustergate.site import benchmarks
    family = getattr(test, 'family', None)
    if not isinstance(family, str) or family not in benchmarks.FAMILIES:
        return True
    source = benchmarks.resolve(model, family, environ, part.fullname)
    return benchmarks.why_unavailable(source, environ) is None
