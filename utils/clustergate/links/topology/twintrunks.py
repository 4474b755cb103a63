"""Cut trunks whose flows' fair shares another set of trunks predicts
alike (:func:`untwin_trunks`): told apart by the flows that cross two cut
trunks, else every twin is named."""

import math
import statistics
from dataclasses import replace
from typing import Dict, List, Tuple

from .flowfit import fault_name, is_global, median, touched
from .model import Link


#: how far (combined z of the rounds) the flows crossing two cut trunks
#: must run below the runner-up's to tell twin trunk sets apart
TWIN_Z = 3.0


def _trunk_swaps(fit, faults, i):
    """The uplink faults with ``faults[i]``'s directions and factor on each
    other trunk that carries measured flows and is not already a fault."""
    f = faults[i]
    if is_global(f):
        return []
    done = {g.subject for g in faults if g.kind == 'uplink'}
    out = []
    for sw, parent in fit.topology.parent.items():
        if parent is None or sw in done:
            continue
        links = tuple(('switch', sw, l[2]) for l in f.links)
        if all(link in fit.through for link in links):
            out.append(replace(f, subject=sw, links=links, leaf=parent))
    return out


def same_rates(fit, faults, rates):
    """Whether ``faults`` predict every flow as ``rates`` do."""
    new_rates, _ = fit.dense(fit.sparse_for(faults), fit.base, fit.e0)
    return all(abs(a - b) <= 1e-9 * max(abs(a), abs(b))
               for ra, rb in zip(new_rates, rates) for a, b in zip(ra, rb))


def _doubly_cut(fit, faults, i, g):
    """The flows that cross ``g`` (in place of ``faults[i]``) and another
    cut trunk of ``faults``, by (round, that trunk's link)."""
    out: Dict[Tuple[int, Link], List[int]] = {}
    mine = touched(fit, g)
    for j, h in enumerate(faults):
        if j == i or h.kind != 'uplink':
            continue
        for link in h.links:
            for ri, fi in fit.through.get(link, []):
                if (ri, fi) in mine:
                    out.setdefault((ri, link), []).append(fi)
    return out


def _paired_z(fit, e, a, b):
    """How far the flows of ``a`` run below those of ``b`` (both
    :func:`_doubly_cut`) where they shared a cut trunk's link in the same
    round (same share, same round's load): the groups' z combined
    (Stouffer). None: they never shared one."""
    zs = []
    for key in sorted(set(a) & set(b)):
        xa = [e[key[0]][fi] for fi in a[key]]
        xb = [e[key[0]][fi] for fi in b[key]]
        se = fit.sigma * math.sqrt(1 / len(xa) + 1 / len(xb))
        zs.append((statistics.fmean(xb) - statistics.fmean(xa)) / se)
    return sum(zs) / math.sqrt(len(zs)) if zs else None


def untwin_trunks(fit, faults, verdicts, rates, e, c):
    """Several cut trunks whose flows' fair shares another set predicts
    alike: on 3 leaves, with leaf1's trunk the tighter, "leaf1 and leaf3"
    and "leaf1 and leaf2" give every flow the same max-min share (a flow
    goes at its tightest trunk's share). Measured, a flow across two cut
    trunks runs below that share (TCP over two bottlenecks gets less than
    the max-min share, towards proportional fairness): the set whose flows
    across two of its trunks are the slowest is kept when its median is
    ``TWIN_Z`` sigma below the runner-up's where both shared a cut trunk's
    link in a round (:func:`_paired_z`); otherwise every twin is named. Returns ``(faults, verdicts, notes
    by index)``."""
    faults, verdicts, told = list(faults), list(verdicts), {}
    for i, f in enumerate(faults):
        if f.kind != 'uplink':
            continue
        twins = [f] + [g for g in _trunk_swaps(fit, faults, i) if
                       same_rates(fit, faults[:i] + [g] + faults[i + 1:],
                                   rates)]
        if len(twins) < 2:
            continue
        xs = {fault_name(g): _doubly_cut(fit, faults, i, g) for g in twins}
        level = {k: median([e[ri][fi] for (ri, _), fl in v.items()
                             for fi in fl]) for k, v in xs.items() if v}
        ranked = sorted((g for g in twins if fault_name(g) in level),
                        key=lambda g: level[fault_name(g)])
        z = None if len(ranked) < 2 else _paired_z(
            fit, e, xs[fault_name(ranked[0])], xs[fault_name(ranked[1])])
        if z is None or z < TWIN_Z:
            verdicts[i].alternatives = sorted(
                set(verdicts[i].alternatives) |
                {fault_name(g) for g in twins if g is not f})
            continue
        best = ranked[0]
        if best is not f:
            faults[i] = best
            verdicts[i] = replace(verdicts[i], fault=best, alternatives=[])
        # the other trunk in words that do not read as a verdict on it
        other = f"{ranked[1].subject}'s trunk"
        ratio = math.exp(level[fault_name(best)] - level[fault_name(ranked[1])])
        told[i] = (f' (told from a cut of {other}, which predicts the same '
                   f'fair shares: flows across this trunk and another cut '
                   f'one at {ratio:.2f}x of those across {other} and another '
                   f'cut one, {z:.0f} sigma)')
    return faults, verdicts, told
