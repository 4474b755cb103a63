"""What the nightly rotation estimates a test case never measured costs,
from the cases that were (clustergate.rfm.point.nightly.points): the
kind of a case (check and node count), the run fixture it reads, and
the node counts a check was measured at."""

import math
import re
import statistics
from typing import Dict, List, Optional, Tuple

from clustergate.planning import costmodel

_NODES = re.compile(r'%(?:\w+\.)?num_nodes=(\d+)')


def kind(display_name: str) -> Tuple[str, str]:
    """(check, node count) of a test case's name: cases of one kind cost
    alike (a BiPingPong on 4 nodes, whatever its size or fabric)."""
    m = _NODES.search(display_name)
    return display_name.split()[0], m.group(1) if m else ''


def like_costs(records, totals=None
               ) -> Dict[Tuple[str, str, str, str], float]:
    """(check, nodes, partition, environ) -> median seconds of the measured
    cases of that kind: the estimate of a point never run itself. A
    rotation runs each point once per cycle, so in the first cycle almost
    every point is new; the cost model's per-family defaults planned the
    emulated nightly of 2026-11-23 at 25 min and it ran in 10.

    A kind whose every record is a skip costs 0 (NPB without spack:
    skipped at every node count). A node count of a check not measured
    yet: :func:`nearest_like`. The keys ``(SHARED_RUN, run, ...)`` and
    ``(SHARED_RUN, run_kind(run), ...)`` hold a whole run's cost
    (:func:`whole_runs` of ``records`` and ``totals``), not a reader's
    share of it.
    """
    groups: Dict[Tuple[str, str, str, str], Dict[str, List[float]]] = {}
    for (name, part, env), (sec, _, source) in records.items():
        check, nodes = kind(name)
        groups.setdefault((check, nodes, part, env), {}).setdefault(
            source, []).append(sec)

    out = {k: statistics.median(v['measured']) if 'measured' in v else 0.0
           for k, v in groups.items()}
    for (run, part, env), sec in whole_runs(records, totals).items():
        out[(SHARED_RUN, run, part, env)] = sec
        # the most a run of the kind paid: the conservative pick
        k = (SHARED_RUN, run_kind(run), part, env)
        out[k] = max(out.get(k, 0.0), sec)
    return out


def whole_runs(records, totals=None) -> Dict[Tuple[str, str, str], float]:
    """(shared run, partition, environ) -> seconds of the whole run: its
    job plus its readers' own time, as ``totals`` (measured per run,
    clustergate.planning.measured.run_costs) has it, else the most one
    measured reader of it paid (a reader that ran alone carried all of
    it). A reader's record is its *share*: HPCC's six kernels read one
    run together, each paying a sixth; taken for the run, a 246-s run over
    another fabric was planned at 41 s, and a 4-node run, grown from a
    1-node kernel's share, at 14 s (the 12-node emulated site,
    2026-12-07)."""
    out: Dict[Tuple[str, str, str], float] = {}
    for (name, part, env), (sec, _, source) in records.items():
        run = shared_run(name)
        if run and source == 'measured':
            k = (run, part, env)
            out[k] = max(out.get(k, 0.0), sec)
    out.update(totals or {})
    return out


def run_shape(run: str) -> Tuple[str, int, str]:
    """(fixture, node count, ranks per node) of a shared run
    (:func:`shared_run`); (``''``, 0, ``''``) where it names no node
    count."""
    params = dict(p.split('=', 1) for p in run.split() if '=' in p)
    nodes = next((v for k, v in params.items()
                  if k.endswith('.num_nodes')), '')
    ppn = next((v for k, v in params.items() if k.endswith('.ppn')), '')
    fixture = next(iter(params), '').split('.', 1)[0]
    return fixture, int(nodes) if nodes.isdigit() else 0, ppn


def nearest_run(alike, run: str, part: str, env: str,
                fam: str) -> Optional[float]:
    """The estimate of a whole run at a node count none of its fixture's
    runs was measured at: the measured runs of the same fixture at the same
    ranks per node (else at any) by node count (:func:`nearest_like`,
    grown by the family's law). None where no run of the fixture was
    measured."""
    fixture, nodes, ppn = run_shape(run)
    if not nodes:
        return None
    same: Dict[int, float] = {}
    other: Dict[int, float] = {}
    for k, sec in alike.items():
        if k[0] != SHARED_RUN or k[2:] != (part, env) or \
                k[1].endswith('(any interconnect)'):
            continue
        f, n, p = run_shape(k[1])
        if f == fixture and n:
            for counts in ([same] if p == ppn else []) + [other]:
                counts[n] = max(counts.get(n, 0.0), sec)
    return nearest_like(same or other, nodes, fam)


def by_node_count(alike) -> Dict[Tuple[str, str, str], Dict[int, float]]:
    """(check, partition, environ) -> {node count: seconds} of the kinds
    of :func:`like_costs`."""
    out: Dict[Tuple[str, str, str], Dict[int, float]] = {}
    for (check, nodes, part, env), sec in alike.items():
        if check != SHARED_RUN and nodes.isdigit() and int(nodes) > 0:
            out.setdefault((check, part, env), {})[int(nodes)] = sec
    return out


def nearest_like(counts: Optional[Dict[int, float]], nodes: int,
                 fam: str) -> Optional[float]:
    """The estimate of a check at a node count none of its cases ran at:
    its kind at the nearest measured node count (by ratio; of two as near,
    the larger), scaled to ``nodes`` by the family's growth
    (costmodel.scaled_to_nodes); None where no node count was measured.
    The median over every node count planned an 8-node x 2 HPCC run at
    the 360 s of its 1-node run; it was still in HPL after 29 min."""
    if not counts:
        return None
    near = min(counts, key=lambda m: (abs(math.log(m / nodes)), -m))
    return costmodel.scaled_to_nodes(fam, counts[near], near, nodes)


#: the key of :func:`like_costs` for the readers of one shared run
SHARED_RUN = '~shared run'

_FIXTURE_PARAM = re.compile(r'%(\w+)\.(\w+)=(\S+)')


def shared_run(display_name: str) -> str:
    """The run fixture a test case reads, from its fixture's parameters in
    its name (``HpccFft %hpcc.num_nodes=1 %hpcc.ppn=1 ...``: HPCC's one run
    at 1 node x 1 rank), '' for a case that reads none. The readers of one
    run cost that run, whichever of them was measured: a never-measured
    kernel planned at the cost model's 167 s beside a measured sibling of
    359 s was also the cheapest point, so it became the night's canary."""
    params = sorted(_FIXTURE_PARAM.findall(display_name))
    return ' '.join(f'{f}.{p}={v}' for f, p, v in params)


def run_kind(run: str) -> str:
    """A shared run (:func:`shared_run`) without its interconnect: the
    runs of one fixture at one node count and ranks per node, over any
    fabric. A run never measured costs what the most expensive of its kind
    paid (the conservative pick: a night planned long leaves time, one
    planned short overruns): on the 12-node emulated site a fresh results
    database planned three 1-node x 2 HPCC runs (over three fabrics) at
    the cost model's 167 s each; each ran 278 s, and the night 19 min of
    its 16. Once one of them is measured, the others cost its 278 s."""
    kept = [p for p in run.split() if not p.split('=', 1)[0].endswith(
        '.interconnect')]
    return ' '.join(kept + ['(any interconnect)'])
