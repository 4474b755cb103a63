"""Where a node that the measurements suggest is miscabled may really be.

The diagnosis scores a miscabling hypothesis ("n is on leaf B") by solving
again every round component that n's flows touch, too costly to try every
leaf of a large fabric for every suspect. This module ranks the leaves
cheaply, so that only a few are scored in full:

* :func:`fitting_leaves`: for each leaf B, each of n's flows re-routed as
  if n were on B, at the max-min level the flow would get on each link of
  its new path beside the flows the round already put there (their rates
  held); the leaves where n's own flows then fit best, and better than
  on its declared leaf by a margin, come first. This
  reads the evidence of every level at once: a dragonfly's group shifts
  say which group n is in (the global links loaded in each round), the
  contrast rounds which leaf of it (its trunk loaded while the declared
  leaf stayed local).
* :func:`voted_leaves`: the partners of n's flows that ran faster than
  predicted (on a tree, their flow stayed inside the real leaf) and the
  leaves whose trunks were loaded when n's flows ran slower. On a
  dragonfly a flow to another group also runs faster on an idle global
  link, so these votes alone often missed the real leaf there (they chose
  another leaf of its group or leaves of other groups), and the node's
  in-leaf neighbour (whose flows with n carry the contrast rounds'
  evidence) was named on the right leaf instead of n. Both lists are
  offered; the full score decides.
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

    def level(self, ri: int, link: Link, mine=frozenset(),
              own=frozenset()) -> float:
        """The share of a new flow on ``link`` in round ``ri``; the
        flows ``mine`` ((round, flow) of the node that moves) left out,
        which cross the (round, link) pairs ``own`` (declared paths)."""
        if link[0] == 'node':
            # a node link carries the node's flow alone
            return self.topo.capacity(link)
        key = (ri, link)
        if key not in own:
            lvl = self._level.get(key)
            if lvl is None:
                others = sorted(r for _, r in
                                self._flows_on(link).get(ri, ()))
                lvl = self._level[key] = water_level(
                    self.topo.capacity(link), others)
            return lvl
        others = sorted(r for fi, r in self._flows_on(link).get(ri, ())
                        if (ri, fi) not in mine)
        return water_level(self.topo.capacity(link), others)


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


def fitting_leaves(fit, topo, n, e, c, options, levels: LinkLevels,
                   each: int = 3, margin: float = 0.0):
    """The ``each`` leaves of ``options`` where the misfit of n's own
    flows is least when n is taken to be on them (see the module doc),
    best first; only those where it is below the misfit on n's declared
    leaf (the same model) by more than ``margin``. A leaf is given up once
    its misfit passes that or the ``each``-th best so far (the flows that
    fit worst now, read first, rule out most leaves within a few)."""
    sig = fit.sigma
    g = fit.by_node.get(n, {})
    mine = g.get('up', []) + g.get('down', [])
    mine_set = frozenset(mine)
    own = frozenset((ri, link) for ri, fi in mine
                    for link in fit.models[ri].paths[fi])
    worst_first = sorted(mine, key=lambda x: -abs(e[x[0]][x[1]] - c))
    flows = [(ri, fit.models[ri].flows[fi], fit.logm[ri][fi])
             for ri, fi in worst_first]
    moved = topo.copy()
    level = levels.level
    k2 = CLIP * CLIP

    def misfit(leaf, bound):
        moved.leaf_of[n] = leaf
        total = 0.0
        for ri, (s, d), lm in flows:
            rate = min(level(ri, link, mine_set, own)
                       for link in moved.path(s, d))
            z = (lm - math.log(rate) - c) / sig
            z *= z
            total += z if z < k2 else k2
            if total > bound:
                return None
        return total

    home = misfit(topo.leaf_of[n], math.inf) - margin
    best: List[Tuple[float, str]] = []
    for leaf in options:
        bound = best[-1][0] if len(best) >= each else home
        total = misfit(leaf, min(bound, home))
        if total is not None:
            best.append((total, leaf))
            best.sort()
            del best[each:]
    return [leaf for _, leaf in best]


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
                  each: int = 3, margin: float = 0.0) -> List[str]:
    """The ``each`` best leaves of :func:`fitting_leaves` (those that
    explain n's flows better than its declared leaf by ``margin``), then
    those of :func:`voted_leaves` not among them."""
    out = fitting_leaves(fit, topo, n, e, c, options, levels, each, margin)
    out += [leaf for leaf in voted_leaves(fit, topo, n, e, c, options)[:each]
            if leaf not in out]
    return out


__all__ = ['LinkLevels', 'fitting_leaves', 'likely_leaves', 'voted_leaves',
           'water_level']
