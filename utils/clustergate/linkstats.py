"""Per-node figures of a link matrix, kept every night as performance
variables of the LinkMatrix check (:mod:`clustergate.rfm.linkmatrix`), so
that the results database and the perflogs hold each node link's history
and a baseline per link can be learnt from them.

For every node, in each direction (``sent``: its flows as a source, i.e.
its link up; ``recv``: as a destination, its link down):

* ``bw``: the node link's rate as delivered, MB/s: the median of the
  node's flows that its own link limits (flat matrix: all its pairs; on a
  switch tree: the flows whose max-min fair share on the declared topology
  is the node link's full rate; the others sit at a trunk's share and say
  little about the node);
* ``peer``: the same flows against their peers of the same run (x):
  flat: the median of the node's pairs over the median of the pairs that
  do not touch it (one bad node would drag the plain median down: see
  :mod:`clustergate.linkmatrix`); tree: the median of measured /
  (scale x prediction), the scale fitted to all flows of the run.

Names: ``bw_<node>_sent``, ``bw_<node>_recv`` (MB/s), ``peer_<node>_sent``,
``peer_<node>_recv`` (x), with the node name's non-word characters as
``_`` (the perflog format needs ``\\w+`` names), so that ``clustergate
history`` and ``clustergate baseline`` see one series per node link.
"""

import re
import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

#: the per-node directions (link up = what the node sends)
DIRECTIONS = ('sent', 'recv')

#: on a tree, a node's flows predicted at least this share of its link's
#: rate are the ones its link limits
LIMITED_SHARE = 0.9


@dataclass
class NodeFigure:
    """One node's link in one direction."""

    node: str
    direction: str      # 'sent' or 'recv'
    bw: float           # MB/s, median of the flows its link limits
    peer: float         # x, the same flows against their peers
    flows: int          # how many flows the figures are the median of


def metric_suffix(node: str) -> str:
    """The node's name as it appears in metric names."""
    return re.sub(r'\W', '_', node)


def metric_names(node: str, direction: str):
    """``(bw name, peer name)`` of a node link's metrics."""
    s = metric_suffix(node)
    return f'bw_{s}_{direction}', f'peer_{s}_{direction}'


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def flat_figures(matrix) -> Dict[tuple, NodeFigure]:
    """``{(node, direction): NodeFigure}`` of a :class:`clustergate.
    linkmatrix.Matrix` (no topology: every pair is expected alike)."""
    pairs = matrix.pairs()
    out = {}
    for node in matrix.nodes:
        ref = _median([matrix.bw[p] for p in pairs if node not in p])
        for direction, end in (('sent', 0), ('recv', 1)):
            vals = [matrix.bw[p] for p in pairs if p[end] == node]
            bw = _median(vals)
            if bw is None or not ref:
                continue
            out[(node, direction)] = NodeFigure(node, direction, bw,
                                                bw / ref, len(vals))
    return out


def tree_figures(topology, rounds: Sequence) -> Dict[tuple, NodeFigure]:
    """``{(node, direction): NodeFigure}`` of measured rounds
    (:class:`clustergate.topology.Round`) on the declared ``topology``."""
    from clustergate.topology import predict

    flows = []      # (src, dst, measured MB/s, measured / predicted, pred)
    for r in rounds:
        if not r.measured:
            continue
        known = [(f, v) for f, v in zip(r.flows, r.measured)
                 if v and f[0] in topology.leaf_of and f[1] in topology.leaf_of]
        if not known:
            continue
        pred = predict(topology, [f for f, _ in known])
        for f, v in known:
            p = pred[f]
            if p > 0:
                flows.append((f[0], f[1], v, v / p, p))

    scale = _median([q for *_, q, _ in flows])
    out = {}
    if not scale:
        return out

    for direction, end, link in (('sent', 0, 'up'), ('recv', 1, 'down')):
        by_node: Dict[str, List[tuple]] = {}
        for fl in flows:
            by_node.setdefault(fl[end], []).append(fl)
        for node, mine in by_node.items():
            cap = topology.capacity(('node', node, link))
            limited = [fl for fl in mine if fl[4] >= LIMITED_SHARE * cap]
            if not limited:     # every flow at some trunk's share
                top = max(fl[4] for fl in mine)
                limited = [fl for fl in mine if fl[4] >= LIMITED_SHARE * top]
            out[(node, direction)] = NodeFigure(
                node, direction, _median([fl[2] for fl in limited]),
                _median([fl[3] for fl in limited]) / scale, len(limited))
    return out


def worst(figures: Dict[tuple, NodeFigure]) -> Optional[NodeFigure]:
    """The node link furthest below its peers."""
    return min(figures.values(), key=lambda f: f.peer, default=None)
