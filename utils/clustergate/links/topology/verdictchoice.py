"""The choice of the verdicts of the diagnosis (:mod:`.analysis`): the
fabric's faults one at a time while each is significant
(:func:`pick_verdicts`), each with the message that names it and its
evidence."""

import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from .faultcandidates import candidates
from .faultscoring import joint, large, refine
from .flowfit import (Fault, Fit, fault_name, is_global, median, same_flows,
                      touched, z_of_median)
from .twintrunks import untwin_trunks


@dataclass
class Verdict:
    """One named explanation, with the figures of its message."""

    kind: str                       # 'uplink', 'miscabled', 'node', 'link'
    subject: Tuple[str, ...]
    message: str
    ratio: float                    # median ratio of its flows to the
                                    # declared-topology prediction
    sigmas: float                   # how far outside noise that median is
    flows: int
    gain: float = 0.0
    fault: Optional[Fault] = None
    alternatives: List[str] = field(default_factory=list)


# long: the greedy search (best candidate, its factor, its twins), then
# the joint refit of the factors and the verdicts of the final fit
def pick_verdicts(fit: Fit, fabric, min_effect, max_faults, alpha,
                   seeds: Sequence[Fault] = ()):
    """The fabric's faults, one at a time while each is significant.
    ``seeds``: faults offered as candidates beside those the misfit
    suggests (a first pass's fabric faults, judged again at a wider
    noise: its candidate filter is in units of the old noise)."""
    faults: List[Fault] = []
    rates = fit.base
    e = fit.e0
    c = fit.scale_of(e)
    cur = fit.loss(e, c)
    verdicts = []
    lo = math.log(min_effect)

    twins = set()

    def score(fault):
        if fit.full and faults:
            # the earlier factors and the scale move with a new fault
            sparse = fit.sparse_for(joint(fit, faults + [fault], 1))
            new_rates, ne = fit.dense(sparse, rates, e)
            return cur - fit.loss(ne, fit.scale_of(ne)), sparse
        sparse = fit.sparse_for(faults + [fault])
        if fit.full:
            new_rates, ne = fit.dense(sparse, rates, e)
            nc = fit.scale_of(ne)
            return cur - fit.loss(ne, nc), sparse
        # many flows, a local change: the scale holds
        return fit.gain(sparse, e, c), sparse

    for _ in range(max_faults):
        cands = candidates(fit, faults, rates, e, c)
        have = {(f.kind, f.subject, f.leaf) for f in cands} | \
            {(f.kind, f.subject, f.leaf) for f in faults}
        cands += [f for f in seeds if (f.kind, f.subject, f.leaf) not in have]
        cands = [f for f in cands if (f.kind, f.subject) not in twins]
        if not cands:
            break
        threshold = 2 * (math.log(len(cands) + 1) + math.log(1 / alpha))
        scored = [(g, f, sp) for f in cands for g, sp in [score(f)]]
        if fit.full and not faults:
            # few flows: every factor refined before they are compared
            # (the first guess reads the medians of a fit without it)
            scored = [refine(score, *x) if x[1].kind in ('node', 'uplink')
                      else x for x in scored]
        scored.sort(key=lambda x: -x[0])
        best = scored[0]
        if best[0] < threshold:
            break
        gain, fault, sparse = best
        if fault.kind in ('node', 'uplink'):
            gain, fault, sparse = refine(score, gain, fault, sparse)
        trial = faults + [fault]
        if fit.full and len(trial) > 1:
            # the scale and the earlier factors were fitted without this
            # fault (two cut trunks: the first one's flows set the scale)
            trial = joint(fit, trial)
            fault = trial[-1]
            sparse = fit.sparse_for(trial)
        new_rates, ne = fit.dense(sparse, fit.base, fit.e0)
        nc = fit.scale_of(ne) if fit.full else c
        # ratios against the scale of the better fit
        v = verdict(fit, fault, faults, rates, new_rates, e, nc, ne, nc,
                     fabric, gain)
        if v is None or not large(v, fault, lo):
            break
        same = [s[1] for s in scored
                if s[1].kind == fault.kind and s[1].subject != fault.subject
                and s[0] >= 0.9 * best[0] and same_flows(fit, s[1], fault)]
        twins.update((f.kind, f.subject) for f in same)
        v.alternatives = [fault_name(f) for f in same]
        verdicts.append(v)
        faults = trial
        rates, e, c = new_rates, ne, nc
        if not fit.full:
            c = fit.scale_of(e)
        cur = fit.loss(e, c)
    told = {}
    if fit.full and sum(f.kind == 'uplink' for f in faults) > 1:
        faults, verdicts, told = untwin_trunks(fit, faults, verdicts,
                                                rates, e, c)
    if fit.full and len(faults) > 1:
        verdicts = final_verdicts(fit, faults, verdicts, rates, e, c,
                                   fabric)
    for i, text in told.items():
        verdicts[i].message += text
    for v in verdicts:
        name_twins(v)
    return faults, rates, e, c, verdicts


def final_verdicts(fit, faults, verdicts, rates, e, c, fabric):
    """Each verdict again against the final fit: its flows' ratios to the
    prediction with every other fault (its factor as jointly fitted)."""
    out = []
    loss = fit.loss(e, c)
    for i, (f, v) in enumerate(zip(faults, verdicts)):
        others = faults[:i] + faults[i + 1:]
        r_o, e_o = fit.dense(fit.sparse_for(others), fit.base, fit.e0)
        c_o = fit.scale_of(e_o)
        gain = fit.loss(e_o, c_o) - loss
        w = verdict(fit, f, others, r_o, rates, e_o, c, e, c, fabric, gain)
        if w is None:
            w = v
        w.alternatives = v.alternatives
        out.append(w)
    return out


def name_twins(v):
    """Name every explanation that touches the same flows."""
    if not v.alternatives or v.fault is None:
        return
    names = sorted([fault_name(v.fault)] + v.alternatives)
    v.message = v.message.replace(fault_name(v.fault), ' or '.join(names), 1)
    v.message += ('; the same flows cross each of them: these rounds '
                  'cannot tell them apart')


# long: one message per kind of fault (node, uplink, miscabled), each
# with the evidence of that kind
def verdict(fit, fault, faults, rates, new_rates, e, c, ne, nc, fabric,
             gain):
    topo = fit.topology
    sig = fit.sigma
    hit = touched(fit, fault)
    if not hit:
        return None
    # ratios to the prediction without this fault, of the flows whose
    # prediction it changes (the flows it explains)
    changed = [(ri, fi) for ri, fi in sorted(hit)
               if abs(math.log(new_rates[ri][fi] / rates[ri][fi])) > 0.14]
    hit = set(changed) or hit
    xs = [e[ri][fi] - c for ri, fi in hit]
    ratio = math.exp(median(xs))
    z = z_of_median(xs, sig)
    if fault.kind == 'node':
        n = fault.subject
        s = [e[ri][fi] - c for ri, fi in hit
             if fit.models[ri].flows[fi][0] == n]
        r = [e[ri][fi] - c for ri, fi in hit
             if fit.models[ri].flows[fi][1] == n]
        msg = (f'suspect node {n} on fabric {fabric}: its link behaves as '
               f'{fault.factor:.2f}x of its rate '
               f'({"/".join(l[2] for l in fault.links)}); sent flows at '
               f'{math.exp(median(s)):.2f}x, received at '
               f'{math.exp(median(r)):.2f}x of prediction ({len(hit)} '
               f'flows, {z:.0f} sigma outside noise)')
        return Verdict('node', (n,), msg, ratio, z, len(hit), gain, fault)

    if fault.kind == 'uplink' and is_global(fault):
        a, b = fault.subject.split('~')
        dirs = ' and '.join(f'{a} to {b}' if l[2] == 'up' else
                            f'{b} to {a}' for l in fault.links)
        msg = (f'global link {a}-{b} on fabric {fabric}: flows between '
               f'{a} and {b} at {ratio:.2f}x of prediction ({dirs}: link '
               f'at {fault.factor:.2f}x of its rate, {len(hit)} flows, '
               f'{z:.0f} sigma outside noise)')
        return Verdict('uplink', (fault.subject, None), msg, ratio, z,
                       len(hit), gain, fault)

    if fault.kind == 'uplink':
        sw = fault.subject
        under = [n for n in topo.nodes if sw in topo.chain(topo.leaf_of[n])]
        crossing = set(fit.through.get(('switch', sw, 'up'), [])) | \
            set(fit.through.get(('switch', sw, 'down'), []))
        flows = set()
        for n in under:
            for d in ('up', 'down'):
                flows.update(fit.by_node.get(n, {}).get(d, []))
        within = [e[ri][fi] - c for ri, fi in flows - crossing]
        wr = (f'{math.exp(median(within)):.2f}x' if within
              else 'not measured')
        dirs = ' and '.join(
            {'up': f'leaving {sw}', 'down': f'entering {sw}'}[l[2]]
            for l in fault.links)
        msg = (f'uplink {sw}-{fault.leaf} on fabric {fabric}: cross-switch '
               f'flows at {ratio:.2f}x of prediction, within-switch flows at '
               f'{wr} ({dirs}: trunk at {fault.factor:.2f}x of its rate, '
               f'{len(hit)} flows, {z:.0f} sigma outside noise)')
        return Verdict('uplink', (sw, fault.leaf), msg, ratio, z,
                       len(hit), gain, fault)

    # miscabled: the flows whose prediction changed
    n, home = fault.subject, topo.leaf_of[fault.subject]
    changed = [(ri, fi) for ri, fi in hit
               if abs(math.log(new_rates[ri][fi] / rates[ri][fi])) > 0.05]
    xs = [e[ri][fi] - c for ri, fi in changed] or xs
    off = max((abs(x) for x in xs), default=0.0)
    z = z_of_median([abs(x) for x in xs], sig)
    src = topo.source or 'the topology'
    msg = (f'miscabled node {n} on fabric {fabric}: {n} behaves as if '
           f'cabled to {fault.leaf}; {src} says {home} ({len(changed)} '
           f'flows change, off prediction by up to {math.exp(off):.1f}x, '
           f'{z:.0f} sigma outside noise)')
    return Verdict('miscabled', (n, fault.leaf), msg, math.exp(median(xs)),
                   z, len(changed), gain, fault)
