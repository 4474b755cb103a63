"""Trunk rates the topology does not declare: which trunks they are, and
one common factor of their non-blocking rates fitted to the measured
flows (:func:`fit_common_trunk`)."""

import math
from typing import Dict, List

from .fairshare import predict
from .flowfit import CLIP, median
from .model import Link, Topology


def undeclared_trunks(topology: Topology) -> List[str]:
    """Switches whose trunk rate the topology does not declare (taken as
    non-blocking unless fitted)."""
    return [sw for sw, p in topology.parent.items()
            if p is not None and sw not in topology.uplink_rate and
            ('switch', sw, 'up') not in topology.link_rate]


def fit_common_trunk(topology, rounds, sigma):
    """The factor k of every trunk's non-blocking rate: the largest load
    a trunk carried in the rounds where it carried most flows (the best
    trunk: a cut one carries less), in units of the flows that cross no
    trunk. Without such flows, the k of a grid from 1/16 to 1 that fits
    best."""
    k2 = CLIP * CLIP
    if not any(len(topology.path(s, d)) > 2 for r in rounds
               for s, d in r.flows):
        return 1.0
    local = []
    for r in rounds:
        pred = predict(topology, r.flows)
        local += [v / pred[f] for f, v in zip(r.flows, r.measured)
                  if len(topology.path(*f)) == 2 and v > 0]
    if local:
        scale = median(local)
        best_k = 0.0
        for link, load in _trunk_loads(topology, rounds).items():
            best_k = max(best_k, load / scale / topology.capacity(link))
        return min(1.0, best_k) if best_k > 0 else 1.0
    best = None
    for i in range(0, 25):
        k = 2 ** (-i / 6)
        t = topology.copy()
        for sw, parent in t.parent.items():
            if parent is not None:
                t.uplink_rate[sw] = topology.capacity(('switch', sw, 'up')) * k
        e = []
        for r in rounds:
            pred = predict(t, r.flows)
            e += [math.log(v / pred[f]) for f, v in zip(r.flows, r.measured)
                  if v > 0]
        c = median(e)
        loss = sum(min(((x - c) / sigma) ** 2, k2) for x in e)
        if best is None or loss < best[0] - 1e-9:
            best = (loss, k)
    return best[1]


def _trunk_loads(topology, rounds):
    """Per trunk link: the median load (measured) over the rounds where it
    carried at least 3/4 of its largest number of flows."""
    per: Dict[Link, Dict[int, List[float]]] = {}
    for ri, r in enumerate(rounds):
        for f, v in zip(r.flows, r.measured):
            for link in topology.path(*f):
                if link[0] == 'switch':
                    per.setdefault(link, {}).setdefault(ri, []).append(v)
    out = {}
    for link, by_round in per.items():
        most = max(len(v) for v in by_round.values())
        out[link] = median([sum(v) for v in by_round.values()
                             if len(v) >= 0.75 * most])
    return out
