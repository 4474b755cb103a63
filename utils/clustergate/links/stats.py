"""Per-node figures of a link matrix, kept every night as performance
variables of the LinkMatrix check (:mod:`clustergate.rfm.families.linkmatrix`), so
that the results database and the perflogs hold each node link's history
and a baseline per link can be learnt from them.

For every node, in each direction (``sent``: its flows as a source, i.e.
its link up; ``recv``: as a destination, its link down; ``both``: all its
flows, the steadier figure of a link that is slow both ways):

* ``bw``: the node link's rate as delivered, MB/s: the median of the
  node's flows that its own link limits (flat matrix: all its pairs; on a
  switch tree: the flows whose max-min fair share on the declared topology
  is the node link's full rate; the others sit at a trunk's share and say
  little about the node);
* ``peer``: the same flows against their peers of the same run (x): the
  median of the node's flows over the median of the (link-limited) flows
  that do not touch it; on a tree each flow counts as measured / its
  prediction on the declared tree with the fabric's faults fitted (a cut
  uplink, a miscabled node: :func:`fabric_fit`), so a node is not judged
  against peers that share a faulty leaf or trunk with it. One bad node would drag a plain median down (see
  :mod:`clustergate.links.matrix`); the flows held at a trunk's share ran
  faster than predicted (the flows of a round do not end together) and
  would bias it. On the emulated tree (9 nodes, 2-3 link-limited flows per
  node and direction) a healthy run's figures were 0.96-1.03, a node link
  at half its rate 0.49-0.50.

Names: ``bw_<node>_sent``, ``bw_<node>_recv`` (MB/s), ``peer_<node>_sent``,
``peer_<node>_recv``, ``peer_<node>_both`` (x), with the node name's
non-word characters as ``_`` (the perflog format needs ``\\w+`` names), so that ``clustergate
history`` and ``clustergate baseline`` see one series per node link.
"""

import re
import statistics
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

#: the per-node directions (link up = what the node sends; both: all its
#: flows, the steadier figure of a link slow both ways)
DIRECTIONS = ('sent', 'recv', 'both')
_ENDS = {'sent': (0,), 'recv': (1,), 'both': (0, 1)}

#: on a tree, a node's flows predicted at least this share of its link's
#: rate are the ones its link limits
LIMITED_SHARE = 0.9
#: above this many flows a node's peers are all flows (large fabrics)
MANY_FLOWS = 2000


@dataclass
class NodeFigure:
    """One node's link in one direction."""

    node: str
    direction: str      # 'sent', 'recv' or 'both'
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


def _figures(flows, exclude=()) -> Dict[tuple, NodeFigure]:
    """Figures of ``flows``: ``(src, dst, MB/s, q)``, each limited by its
    node links, ``q`` its rate against what the fabric should give it (the
    MB/s themselves on a flat fabric). A node link's ``peer`` is the median
    q of its flows over the median q of the flows that do not touch it
    (above ``MANY_FLOWS`` flows: of all flows, a node's few do not move
    it). The flows of the nodes in ``exclude`` (slow ones) count only in
    their own figures: a slow node would drag its partners down."""
    out = {}
    bad = set(exclude)
    by_node: Dict[str, list] = {}
    for f in flows:
        by_node.setdefault(f[0], []).append(f)
        if f[1] != f[0]:
            by_node.setdefault(f[1], []).append(f)
    common = None
    if len(flows) > MANY_FLOWS:
        common = _median([f[3] for f in flows if not bad & set(f[:2])])
    for node in sorted(by_node):
        ref = common if common is not None else _median(
            [f[3] for f in flows
             if node not in f[:2] and not bad & set(f[:2])])
        for direction, ends in _ENDS.items():
            mine = [f for f in by_node[node] if
                    any(f[e] == node for e in ends) and
                    (node in bad or not bad & set(f[:2]) - {node})]
            if not mine or not ref:
                continue
            out[(node, direction)] = NodeFigure(
                node, direction, _median([f[2] for f in mine]),
                _median([f[3] for f in mine]) / ref, len(mine))
    return out


def flat_figures(matrix, exclude=()) -> Dict[tuple, NodeFigure]:
    """``{(node, direction): NodeFigure}`` of a :class:`clustergate.
    linkmatrix.Matrix` (no topology: every pair is expected alike)."""
    return _figures([(s, d, v, v) for (s, d), v in matrix.bw.items()],
                    exclude)


def fabric_fit(topology, rounds: Sequence):
    """``(fitted, slow)``: the declared ``topology`` with the faults of
    the fabric that the switch-tree analysis fits to ``rounds`` (a cut
    uplink, a miscabled node), what the node links are judged against so
    that a node sharing a faulty trunk or leaf is not named for it; and
    the nodes whose own link it found slow (their flows count only in
    their own figures)."""
    from clustergate.links.topology import diagnose
    measured = [r for r in rounds if r.measured]
    if not measured:
        return topology, set()
    return fit_of(topology, diagnose(topology, measured))


def fit_of(topology, analysis):
    """:func:`fabric_fit`'s ``(fitted, slow)`` from a switch-tree
    ``analysis`` of the same rounds already made (the job's driver has
    one: the fit is not made twice on the matrix's critical path)."""
    slow = {v.subject[0] for v in analysis.verdicts if v.kind == 'node'}
    return analysis.fitted or topology, slow


def fabric_model(topology, rounds: Sequence):
    """The declared ``topology`` with the fabric's faults fitted to
    ``rounds`` (see :func:`fabric_fit`)."""
    return fabric_fit(topology, rounds)[0]


def tree_figures(topology, rounds: Sequence, exclude=(), fitted=None,
                 fit=None) -> Dict[tuple, NodeFigure]:
    """``{(node, direction): NodeFigure}`` of measured rounds
    (:class:`clustergate.links.topology.Round`) on the declared ``topology``:
    of the flows whose fair share is their node links' full rate (the
    others, held at a trunk's share, say little about a node link and ran
    faster than predicted: the flows of a round do not end together).

    Each flow counts against its prediction on ``fitted``, the declared
    tree with the fabric's faults fitted (default: :func:`fabric_model`),
    i.e. as a residual: beside a cut uplink or a miscabled node the
    healthy nodes of the same leaf are not slow against their peers; the
    nodes whose own link the analysis found slow join ``exclude``.
    ``fit``: that ``(fitted, slow)`` when already made (:func:`fit_of`)."""
    from clustergate.links.topology import predict

    if fitted is None:
        fitted, slow = fit or fabric_fit(topology, rounds)
        exclude = set(exclude) | slow
    preds = []
    for r in rounds:
        known = [f for f, v in zip(r.flows, r.measured or []) if v and
                 f[0] in fitted.leaf_of and f[1] in fitted.leaf_of]
        pred = predict(fitted, known) if known else {}
        preds.append([pred.get(f) for f in r.flows])
    return predicted_figures(fitted, rounds, preds, exclude)


# long: the flows a node link limits, then the node links none of whose
# flows did
def predicted_figures(topology, rounds: Sequence, preds, exclude=()
                      ) -> Dict[tuple, NodeFigure]:
    """:func:`tree_figures` with the predictions given: ``preds[i][j]``
    the rate of flow j of round i on ``topology`` (the fitted fabric;
    None: not predicted)."""
    limited, other = [], []
    for r, pred in zip(rounds, preds):
        for (s, d), v, p in zip(r.flows, r.measured or [], pred):
            if not v or not p or p <= 0:
                continue
            cap = min(topology.capacity(('node', s, 'up')),
                      topology.capacity(('node', d, 'down')))
            (limited if p >= LIMITED_SHARE * cap else other).append(
                (s, d, v, v / p))

    out = _figures(limited, exclude)
    # a node link none of whose flows ran at its full share: its fastest
    # predicted ones against the limited flows of the others
    for node in topology.nodes:
        for direction, ends in _ENDS.items():
            if (node, direction) in out:
                continue
            mine = [f for f in other if any(f[e] == node for e in ends)]
            ref = _median([f[3] for f in limited if node not in f[:2] and
                           not set(exclude) & set(f[:2])])
            if mine and ref:
                out[(node, direction)] = NodeFigure(
                    node, direction, _median([f[2] for f in mine]),
                    _median([f[3] for f in mine]) / ref, len(mine))
    return out


def figures(matrix, run, topo=None, exclude=(), fit=None
            ) -> Dict[tuple, NodeFigure]:
    """The node figures of a measured matrix: on the declared tree
    ``topo`` (:func:`tree_figures` of the run's rounds), or flat.
    ``fit``: :func:`fit_of` of an analysis of the same run, if made."""
    if topo is None:
        return flat_figures(matrix, exclude)
    from clustergate.links.topology import rounds_from_measurements
    return tree_figures(topo, rounds_from_measurements(run.measurements,
                                                       fastest=True),
                        exclude, fit=fit)


def worst(figures: Dict[tuple, NodeFigure]) -> Optional[NodeFigure]:
    """The node link furthest below its peers."""
    return min(figures.values(), key=lambda f: f.peer, default=None)
