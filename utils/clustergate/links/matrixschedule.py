"""The rounds the link matrix's job runs, without ReFrame: the declared
tree's rounds or every pair's (:func:`schedule_rounds`), the schedule file
the job runs (:func:`write_schedule`, :func:`read_schedule`), and whether its output holds every
flow of them (:func:`incomplete`). The ReFrame test is
:class:`clustergate.rfm.families.linkmatrix.LinkMatrixTest`, which fails
sanity with the :class:`ScheduleError`'s message."""

import os

from clustergate.links import topology

#: values of LinkMatrixTest.link_schedule
SCHEDULES = ('topology', 'all-pairs')


class ScheduleError(ValueError):
    """A schedule that cannot be run or read; the message names why."""


def schedule_rounds(link_schedule, declared):
    """The rounds of the declared tree (``declared()``, None: none) the
    matrix runs, or None: the N-1 shift rounds of every pair (no tree
    declared, or ``link_schedule`` 'all-pairs'). ScheduleError for an
    unknown ``link_schedule``, before the tree is read."""
    if link_schedule not in SCHEDULES:
        raise ScheduleError(f'link_schedule {link_schedule!r}: not '
                            f'one of {", ".join(SCHEDULES)}')
    topo = declared()
    if topo is None or link_schedule == 'all-pairs':
        return None
    rounds = topology.schedule(topo, topo.nodes)
    # a small tree (9 nodes in 3 leaves): every pair takes no longer
    if len(rounds) >= topology.all_pairs_rounds(len(topo.nodes)):
        return None
    return rounds


def write_schedule(stagedir, name, rounds):
    """``rounds`` written as the schedule file ``name`` in ``stagedir``;
    the program's options that run it."""
    with open(os.path.join(stagedir, name), 'w') as fp:
        fp.write(topology.schedule_text(rounds))
    return ['--schedule', name]


def read_schedule(opts, stagedir):
    """The rounds of the schedule file the job ran (``--schedule`` of its
    options ``opts``, relative to ``stagedir``), or None: it ran the
    shift rounds of every pair. ScheduleError naming the file when it
    cannot be read."""
    opts = list(opts)
    if '--schedule' not in opts:
        return None
    path = os.path.join(stagedir, opts[opts.index('--schedule') + 1])
    try:
        with open(path) as fp:
            return topology.parse_schedule_text(fp.read())
    except (OSError, ValueError) as err:
        raise ScheduleError(f'link schedule {path}: {err}') from None


def incomplete(run, num_nodes, rounds, schedule_name):
    """Why the output ``run`` of ``num_nodes`` nodes is not the whole
    matrix of ``rounds`` (None: every pair; the file ``schedule_name``),
    or None: it is."""
    n = num_nodes
    if rounds is None:
        expected, what = n * (n - 1), f'{n} nodes'
    else:
        # the flows of the schedule between the job's nodes (those of
        # other nodes are left out by the program)
        names = {str(m[k]) for m in run.measurements
                 for k in ('src', 'dst')}
        expected = sum(a in names and b in names
                       for r in rounds for a, b in r.flows)
        what = f'{len(names)} nodes, {schedule_name}'
    if len(run.measurements) != expected:
        return (f'{len(run.measurements)} pairs measured, '
                f'expected {expected} ({what})')

    missing = [m for m in run.measurements if m.best_bandwidth() is None]
    if missing:
        return (f'{len(missing)} pair(s) without a bandwidth, '
                f'e.g. {missing[0]["src"]}->'
                f'{missing[0]["dst"]}')
    return None
