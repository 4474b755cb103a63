"""Switch groups inferred from a measured matrix when no topology is
declared.

In concurrent rounds, flows that stay inside a switch run at the node
rate while flows that cross an oversubscribed trunk share it. So pairs
fall into a fast and a slow class: each pair counts at its best
measurement (both directions, all rounds), relative to the fastest flows
(90th percentile of all flows); the two classes are split at the widest
gap of the sorted log ratios, if the classes' medians differ by more than
``1/min_effect``. A node then joins the group with which most of its pairs
are fast (a pair that crossed while the trunk was idle looks fast too:
the majority decides), a second pass moves each node to the group it
is fastest with, and a node fast with nobody (a slow node, or a switch
with one node: those cannot be told apart) joins the group its pairs are
fastest with.
"""

import math
import statistics
from typing import Dict, FrozenSet, List, Sequence, Tuple

from .model import Topology


def pair_ratios(rounds) -> Dict[FrozenSet[str], float]:
    """Best measured rate of each unordered pair over the 90th percentile
    of all flows."""
    values = sorted(v for r in rounds for v in (r.measured or []) if v)
    if not values:
        return {}
    ref = values[min(len(values) - 1, int(0.9 * len(values)))]
    best: Dict[FrozenSet[str], float] = {}
    for r in rounds:
        for (s, d), v in zip(r.flows, r.measured or []):
            if s == d or not v:
                continue
            key = frozenset((s, d))
            best[key] = max(best.get(key, 0.0), v / ref)
    return best


def infer_groups(rounds, min_effect: float = 0.7) -> Tuple[List[List[str]],
                                                            str]:
    """Groups of nodes (as many as the matrix shows; one group when no
    contention is seen) and a one-line description."""
    best = pair_ratios(rounds)
    nodes: List[str] = []
    for r in rounds:
        for s, d in r.flows:
            for n in (s, d):
                if n not in nodes:
                    nodes.append(n)
    if len(nodes) < 4 or not best:
        return [nodes], 'too few nodes to infer switch groups'

    logs = sorted(math.log(max(v, 1e-9)) for v in best.values())
    gaps = [(logs[i + 1] - logs[i], i) for i in range(len(logs) - 1)]
    width, at = max(gaps)
    low, high = logs[:at + 1], logs[at + 1:]
    split = (logs[at] + logs[at + 1]) / 2
    ratio = math.exp(statistics.median(high) - statistics.median(low))
    if ratio < 1 / min_effect:
        return [nodes], (f'one group: pairs within {ratio:.2f}x of each '
                         f'other, no contention seen')

    fast = {k for k, v in best.items() if math.log(max(v, 1e-9)) > split}
    groups = _assign(nodes, fast, best)
    order = {n: i for i, n in enumerate(nodes)}
    groups = [sorted(g, key=order.get) for g in groups]
    groups.sort(key=lambda g: order[g[0]])
    inside = [v for k, v in best.items()
              if any(k <= set(g) for g in groups)]
    across = [v for k, v in best.items()
              if not any(k <= set(g) for g in groups)]
    desc = (f'{len(groups)} groups inferred from the matrix: pairs within a '
            f'group at {statistics.median(inside):.2f}x, across at '
            f'{statistics.median(across):.2f}x of the fastest flows'
            if inside and across else f'{len(groups)} groups')
    return groups, desc


def _assign(nodes, fast, best) -> List[List[str]]:
    """Groups of ``nodes`` by majority of fast pairs (see the module doc)."""

    def share(n, group):
        others = [m for m in group if m != n]
        if not others:
            return 0.0
        return sum(frozenset((n, m)) in fast for m in others) / len(others)

    groups: List[List[str]] = []
    for n in nodes:
        scored = [(share(n, g), i) for i, g in enumerate(groups)]
        top = max(scored) if scored else (0.0, -1)
        if top[0] > 0.5:
            groups[top[1]].append(n)
        else:
            groups.append([n])
    for n in nodes:
        home = next(g for g in groups if n in g)
        scored = sorted(((share(n, g), i) for i, g in enumerate(groups)),
                        reverse=True)
        if scored and scored[0][0] > share(n, home) and \
                groups[scored[0][1]] is not home:
            home.remove(n)
            groups[scored[0][1]].append(n)
    groups = [g for g in groups if g]
    # a node fast with nobody is a slow node, not a switch of its own: it
    # joins the group its pairs are fastest with
    for g in [g for g in groups if len(g) == 1]:
        n = g[0]
        others = [h for h in groups if h is not g and len(h) > 1]
        if not others:
            continue
        target = max(others, key=lambda h: statistics.median(
            best.get(frozenset((n, m)), 0.0) for m in h))
        target.append(n)
        g.remove(n)
    groups = [g for g in groups if g]
    return groups


def topology_from_groups(groups: Sequence[Sequence[str]],
                         source='inferred groups') -> Topology:
    """One leaf per group under one spine (trunk rates undeclared)."""
    leaf_of, parent = {}, {}
    if len(groups) == 1:
        parent['switch'] = None
        leaf_of = {n: 'switch' for n in groups[0]}
    else:
        parent['spine'] = None
        for i, g in enumerate(groups, 1):
            parent[f'group{i}'] = 'spine'
            for n in g:
                leaf_of[n] = f'group{i}'
    return Topology(leaf_of, parent, source=source)
