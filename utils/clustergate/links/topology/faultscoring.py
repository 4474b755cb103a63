"""The factors of candidate faults (:mod:`.verdictchoice`): the search of
a fault's factor for the largest gain, the joint refit of several faults'
factors, and whether a fault is large enough to be named."""

import math
from dataclasses import replace



def refine(score, gain, fault, sparse, steps=8):
    """Golden-section search of the fault's factor (log scale, from half
    to twice the estimate, at most 1) for the largest gain."""
    lo = math.log(fault.factor) - 0.7
    hi = min(0.0, math.log(fault.factor) + 0.7)
    best = (gain, fault, sparse)
    ratio = (math.sqrt(5) - 1) / 2
    memo = {}

    def at(x):
        if x not in memo:
            f = replace(fault, factor=math.exp(x))
            g, sp = score(f)
            memo[x] = (g, f, sp)
        return memo[x]

    a, b = lo, hi
    x1, x2 = b - ratio * (b - a), a + ratio * (b - a)
    for _ in range(steps):
        if at(x1)[0] >= at(x2)[0]:
            b, x2 = x2, x1
            x1 = b - ratio * (b - a)
        else:
            a, x1 = x1, x2
            x2 = a + ratio * (b - a)
    for g, f, sp in memo.values():
        if g > best[0]:
            best = (g, f, sp)
    return best


def joint(fit, faults, sweeps=2):
    """The factors of ``faults`` (node links, trunks) refitted in turn,
    each with the others held, the scale refitted with each."""
    faults = list(faults)
    for _ in range(sweeps):
        for i, f in enumerate(faults):
            if f.kind not in ('node', 'uplink'):
                continue
            others = faults[:i] + faults[i + 1:]

            def score(g, others=others):
                sparse = fit.sparse_for(others + [g])
                new_rates, ne = fit.dense(sparse, fit.base, fit.e0)
                return -fit.loss(ne, fit.scale_of(ne)), sparse

            g0, sp0 = score(f)
            _, faults[i], _ = refine(score, g0, replace(f), sp0)
    return faults


def large(v, fault, lo):
    """The fault is larger than the effect floor: a link at less than
    ``min_effect`` of its rate (the flows it slows show less where they
    were limited elsewhere, e.g. at a trunk's share)."""
    if fault.kind in ('node', 'uplink'):
        return math.log(max(fault.factor, 1e-9)) < lo
    return True
