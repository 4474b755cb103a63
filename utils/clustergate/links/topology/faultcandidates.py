"""The candidate faults of one step of the diagnosis (:mod:`.verdictchoice`):
the node links and trunks whose flows run below the others, and the nodes
whose flows fit worst re-homed to likely leaves (:mod:`.rehome`), each
with a first guess of its factor."""

import math
from typing import Dict, List

from .flowfit import ALPHA, Fault, Fit, median
from .rehome import LinkLevels, likely_leaves


# a node link or trunk whose flows are this much below the others is a
# candidate (one direction alone when the other is above CANDIDATE_NEAR)
CANDIDATE_FLOOR = 0.95
CANDIDATE_NEAR = 0.97


# long: the three kinds of candidate fault in turn (node links, trunks,
# miscabled nodes), sharing the fit and the residuals
def candidates(fit: Fit, faults, rates, e, c) -> List[Fault]:
    topo = fit.topology
    for f in faults:
        topo = f.apply(topo)
    sig = fit.sigma
    done = {(f.kind, f.subject) for f in faults}
    # misfit of each node's flows: what lies beyond 2.5 sigma (many mild
    # deviations of a healthy node among thousands weigh little)
    score: Dict[str, float] = {}
    for ri, m in enumerate(fit.models):
        row = e[ri]
        for fi, (s, d) in enumerate(m.flows):
            z = (row[fi] - c) / sig
            z2 = z * z
            if z2 > 6.25:
                z2 = min(z2, 25.0) - 6.25
                score[s] = score.get(s, 0.0) + z2
                score[d] = score.get(d, 0.0) + z2

    def rel(group):
        """Median residual of ``group`` against the flows outside it."""
        inside = [e[ri][fi] for ri, fi in group]
        if fit.full:
            gs = set(group)
            outside = [x for ri, row in enumerate(e)
                       for fi, x in enumerate(row) if (ri, fi) not in gs]
            ref = median(outside) if outside else c
        else:
            ref = c
        return median(inside) - ref, ref

    cands: List[Fault] = []
    # lenient: the likelihood test decides, this only keeps the list short
    floor, near = math.log(CANDIDATE_FLOOR), math.log(CANDIDATE_NEAR)

    def directions(meds):
        """Both directions, or one when the other looks healthy."""
        out = []
        if min(m for m, _ in meds.values()) > floor:
            return out
        out.append(tuple(meds))
        for link, (m, _) in meds.items():
            others = [mm for l, (mm, _) in meds.items() if l != link]
            if m <= floor and others and min(others) > near:
                out.append((link,))
        return out

    # node links: the flows that a node's link limits (the fastest
    # predicted of its flows; the others sit at a trunk's share)
    def fastest(n, d):
        return _fastest(rates, fit.by_node.get(n, {}).get(d, []))

    def low(n):
        return min(median([e[ri][fi] - c for ri, fi in fastest(n, d)])
                   for d in ('up', 'down'))

    for n in sorted(topo.nodes, key=low)[:3]:
        if ('node', n) in done or n not in fit.by_node:
            continue
        meds = {('node', n, d): rel(fastest(n, d)) for d in ('up', 'down')
                if fastest(n, d)}
        for links in directions(meds):
            groups = {l: fastest(n, l[2]) for l in links}
            f0 = _fit_factor(fit, topo, groups, max(meds[l][1] for l in links),
                             per_round=False)
            cands.append(Fault('node', n, links, f0))

    # trunks
    def trunk_key(link):
        return median([e[ri][fi] for ri, fi in fit.through[link]]) - c

    seen = set()
    for link in sorted(fit.through, key=trunk_key)[:None if fit.full
                                                   else 4]:
        kind, sw = link[0], link[1]
        if ('uplink', sw) in done or sw in seen:
            continue
        seen.add(sw)
        meds = {l: rel(fit.through[l]) for l in
                ((kind, sw, 'up'), (kind, sw, 'down'))
                if l in fit.through}
        for links in directions(meds):
            groups = {l: fit.through[l] for l in links}
            f0 = _fit_factor(fit, topo, groups,
                             max(meds[l][1] for l in links), per_round=True)
            # a global link between two groups: no parent
            cands.append(Fault('uplink', sw, links, f0,
                               topo.parent.get(sw)))

    # miscabling: nodes whose flows fit worst, re-homed to likely leaves
    leaves = topo.leaves
    levels = None
    if len(leaves) >= 2:
        suspects = sorted(score, key=lambda n: -score[n])[:5]
        for n in suspects:
            if score[n] < 20 or ('miscabled', n) in done:
                continue
            home = topo.leaf_of[n]
            options = [l for l in leaves if l != home]
            if len(options) > 6:
                levels = levels or LinkLevels(fit, topo, rates)
                options = likely_leaves(fit, topo, n, e, c, options, levels,
                                        margin=2 * math.log(1 / ALPHA))
            cands += [Fault('miscabled', n, (), 1.0, leaf) for leaf in options]
    return cands


def _fastest(rates, group, share=0.9):
    """The flows of ``group`` predicted within ``share`` of its fastest."""
    if not group:
        return group
    top = max(rates[ri][fi] for ri, fi in group)
    return [(ri, fi) for ri, fi in group if rates[ri][fi] >= share * top]


def _fit_factor(fit, topo, groups, ref, per_round):
    """Factor of the links' rate that their flows' measurements suggest
    (``ref``: the log scale of healthy flows). A node link carries one
    flow per round: its flows' median rate. A trunk: the median of the
    loads it carried in the rounds where it carried most flows."""
    scale = math.exp(ref)
    shares = []
    for link, group in groups.items():
        if not group:
            continue
        if not per_round:
            rate = median([fit.rounds[ri].measured[fi] / scale
                            for ri, fi in group])
        else:
            load: Dict[int, float] = {}
            count: Dict[int, int] = {}
            for ri, fi in group:
                load[ri] = load.get(ri, 0.0) + \
                    fit.rounds[ri].measured[fi] / scale
                count[ri] = count.get(ri, 0) + 1
            most = max(count.values())
            rate = median([load[ri] for ri in load
                            if count[ri] >= 0.75 * most])
        shares.append(rate / topo.capacity(link))
    if not shares:
        return 1.0
    return min(1.0, max(1e-3, median(shares)))
