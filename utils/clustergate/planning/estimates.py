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


def like_costs(records) -> Dict[Tuple[str, str, str, str], float]:
    """(check, nodes, partition, environ) -> median seconds of the measured
    cases of that kind: the estimate of a point never run itself. A
    rotation runs each point once per cycle, so in the first cycle almost
    every point is new; the cost model's per-family defaults planned the
    emulated nightly of 2026-11-23 at 25 min and it ran in 10.

    A kind whose every record is a skip costs 0 (NPB without spack:
    skipped at every node count). A node count of a check not measured
    yet: :func:`nearest_like`.
    """
    groups: Dict[Tuple[str, str, str, str], Dict[str, List[float]]] = {}
    for (name, part, env), (sec, _, source) in records.items():
        check, nodes = kind(name)
        keys_ = [(check, nodes, part, env)]
        run = shared_run(name)
        if run:
            keys_ += [(SHARED_RUN, run, part, env),
                      (SHARED_RUN, run_kind(run), part, env)]
        for k in keys_:
            groups.setdefault(k, {}).setdefault(source, []).append(sec)

    def cost(k, v):
        if 'measured' not in v:
            return 0.0
        # readers of one run: the one that paid the most paid for the run
        # (a reader that ran alone carries all of it, two share it)
        pick = max if k[0] == SHARED_RUN else statistics.median
        return pick(v['measured'])

    return {k: cost(k, v) for k, v in groups.items()}


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
