"""Where a node that the measurements suggest is miscabled may really be.

The diagnosis scores a miscabling hypothesis ("n is on leaf B") by solving
again every round component that n's flows touch, too costly to try every
leaf of a large fabric for every suspect. This module ranks the leaves
cheaply, so that only a few are scored in full:

* :func:`fitting_leaves`: for each leaf B, each of n's flows re-routed as
  if n were on B, at the max-min level the flow would get on each link of
  its new path beside the flows the round already put there (their rates
  held); the leaves where n's own flows then fit best come first. This
  reads the evidence of every level at once: a dragonfly's group shifts
  say which group n is in (the global links loaded in each round), the
  contrast rounds which leaf of it (its trunk loaded while the declared
  leaf stayed local).
* :func:`voted_leaves`: the partners of n's flows that ran faster than
  predicted (on a tree, their flow stayed inside the real leaf) and the
  leaves whose trunks were loaded when n's flows ran slower. On a
  dragonfly a flow to another group also runs faster on an idle global
  link, so these votes alone named a leaf of the wrong group there, and
  the node's in-leaf neighbour (whose flows with n carry the contrast
  rounds' evidence) was named on the right leaf instead of n.
"""

import math
from typing import Dict, List, Tuple

from .model import Link

CLIP = 4.0


class LinkLevels:
    """Per round and link, the level a flow added to the link would get
    (max-min share beside the flows on it, their rates held); built
    lazily from the fit's flows through each trunk or global link."""

    def __init__(self, fit, topo, rates):
        self.fit, self.topo, self.rates = fit, topo, rates
        self._by_round: Dict[Link, Dict[int, List[Tuple[int, float]]]] = {}
        self._level: Dict[Tuple[int, Link], float] = {}

    def _flows_on(self, link):
        got = self._by_round.get(link)
        if got is None:
            got = {}
            for ri, fi in self.fit.through.get(link, ()):
                got.setdefault(ri, []).append((fi, self.rates[ri][fi]))
            self._by_round[link] = got
        return got

    def level(self, ri: int, link: Link, mine=frozenset()) -> float:
        """The share of a new flow on ``link`` in round ``ri``; the
        flows ``mine`` ((round, flow) of the node that moves) left out."""
        cap = self.topo.capacity(link)
        if link[0] == 'node':
            return cap          # a node link carries the node's flow alone
        flows = self._flows_on(link).get(ri, ())
        own = [fi for fi, _ in flows if (ri, fi) in mine]
        key = (ri, link)
        if not own and key in self._level:
            return self._level[key]
        others = sorted(r for fi, r in flows if (ri, fi) not in mine)
        lvl = water_level(cap, others)
        if not own:
            self._level[key] = lvl
        return lvl


def water_level(cap: float, others: List[float]) -> float:
    """The max-min share L of one flow added to a link of capacity
    ``cap`` that carries flows at ``others`` (sorted): the flows below L
    keep their rate, the others and the new one get L."""
    k = len(others)
    done = 0.0
    for j in range(k + 1):
        lvl = (cap - done) / (k - j + 1)
        if j == k or lvl <= others[j]:
            return max(lvl, 1e-12)
        done += others[j]
    return max((cap - done), 1e-12)


def fitting_leaves(fit, topo, n, e, c, options, levels: LinkLevels):
    """``options`` ordered by the misfit of n's own flows when n is taken
    to be on each (see the module doc), best first."""
    sig = fit.sigma
    g = fit.by_node.get(n, {})
    mine = g.get('up', []) + g.get('down', [])
    mine_set = frozenset(mine)
    flows = [(ri, fi, fit.models[ri].flows[fi], fit.logm[ri][fi])
             for ri, fi in mine]
    moved = topo.copy()
    k2 = CLIP * CLIP
    loss = {}
    for leaf in options:
        moved.leaf_of[n] = leaf
        total = 0.0
        for ri, fi, (s, d), lm in flows:
            rate = min(levels.level(ri, link, mine_set)
                       for link in moved.path(s, d))
            z = (lm - math.log(rate) - c) / sig
            z *= z
            total += z if z < k2 else k2
        loss[leaf] = total
    return sorted(options, key=lambda leaf: loss[leaf])


def voted_leaves(fit, topo, n, e, c, options):
    """``options`` ordered by the votes of n's faster and slower flows
    (see the module doc), most first."""
    sig = fit.sigma
    votes = {leaf: 0.0 for leaf in options}
    g = fit.by_node.get(n, {})
    for ri, fi in g.get('up', []) + g.get('down', []):
        z = (e[ri][fi] - c) / sig
        if z > 2:
            s, d = fit.models[ri].flows[fi]
            leaf = topo.leaf_of.get(d if s == n else s)
            if leaf in votes:
                votes[leaf] += min(z, CLIP)
        elif z < -2:
            for leaf in fit.loaded[ri]:
                if leaf in votes:
                    votes[leaf] += 1.0
        elif z > -1 and fi in fit.local_sets[ri]:
            # a flow within n's declared leaf ran as predicted while these
            # trunks were loaded: n is not behind them (with many leaves,
            # a contrast round loads half of them)
            for leaf in fit.loaded[ri]:
                if leaf in votes:
                    votes[leaf] -= 1.0
    return sorted(options, key=lambda leaf: -votes[leaf])


def likely_leaves(fit, topo, n, e, c, options, levels: LinkLevels,
                  each: int = 3) -> List[str]:
    """The ``each`` best leaves of :func:`fitting_leaves`, then those of
    :func:`voted_leaves` not among them."""
    out = fitting_leaves(fit, topo, n, e, c, options, levels)[:each]
    out += [leaf for leaf in voted_leaves(fit, topo, n, e, c, options)[:each]
            if leaf not in out]
    return out


__all__ = ['LinkLevels', 'fitting_leaves', 'likely_leaves', 'voted_leaves',
           'water_level']
