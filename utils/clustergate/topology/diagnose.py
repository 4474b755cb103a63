"""What explains a measured link matrix on a switch tree.

Each measured flow is compared with its prediction: the max-min fair share
of its round on the declared topology (:mod:`.fairshare`), times one
scale fitted to all flows (the protocol's efficiency; Slurm's LinkSpeed
has no unit). The residual of a flow is ``e = ln(measured / (scale x
predicted))``.

**Noise model.** Healthy residuals are taken as normal with standard
deviation ``sigma`` (lognormal ratios): by default 0.15, from the emulated
cluster's healthy spread, where the worst of 12 pairs was at 0.78x the
median by its fastest trial on a busy machine (0.91x quiet); the expected
minimum of 12 normal draws is -1.63 sigma, so sigma = ln(1/0.78) / 1.63 =
0.15. A flow counts ``min(z^2, 9)`` with ``z = (e - median e) / sigma``
(clipped: one wild flow cannot dominate).

**Explanations** are faults of the fabric, each a changed topology whose
prediction is compared with the measurements:

* ``uplink``: a trunk (switch -> parent, one or both directions) at a
  fitted factor of its rate;
* ``miscabled``: a node cabled to another leaf than declared (every other
  leaf tried for the nodes whose flows fit worst);
* ``node``: a node's own link (one or both directions) at a fitted factor
  (today's verdict of :mod:`clustergate.linkmatrix`, on the tree).

Greedily, the explanation that lowers the misfit most is kept when the
gain exceeds ``2 (ln(candidates) + ln(1/alpha))`` (a likelihood-ratio test
corrected for the number of explanations tried) *and* its effect is
larger than ``min_effect`` (default 0.7x, as the flat link matrix), then
the next one is looked for (up to ``max_faults``). Flows still off by more
than a Bonferroni bound after that become ``link`` verdicts (a route or
cable of one pair). Two explanations that touch exactly the same flows
cannot be told apart by any measurement of these rounds: both are named
(e.g. with two leaves, leaf1's trunk up and leaf2's trunk down carry the
same flows).
"""

import math
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .fairshare import RoundModel
from .model import Link, Topology
from .rounds import Round

DEFAULT_SIGMA = 0.15
DEFAULT_MIN_EFFECT = 0.7
CLIP = 3.0
ALPHA = 1e-4
# above this many flows the scale stays fixed while candidates are compared
FULL_REFIT_FLOWS = 20000


@dataclass
class Fault:
    """A change of the declared fabric that may explain the measurements."""

    kind: str                       # 'uplink', 'miscabled', 'node'
    subject: str                    # switch or node
    links: Tuple[Link, ...] = ()    # scaled links
    factor: float = 1.0
    leaf: Optional[str] = None      # miscabled: the leaf it behaves as on

    def apply(self, topo: Topology) -> Topology:
        if self.kind == 'miscabled':
            return topo.rehomed(self.subject, self.leaf)
        t = topo
        for link in self.links:
            t = t.scaled(link, self.factor)
        return t


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


@dataclass
class Analysis:
    """Result of :func:`diagnose`."""

    fabric: str
    sigma: float
    scale: Optional[float] = None           # measured / predicted, healthy
    flows: int = 0
    rounds: int = 0
    verdicts: List[Verdict] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    groups: Optional[List[List[str]]] = None
    ratios: Dict[Tuple[str, str, str], float] = field(default_factory=dict)
    residual_sigma: Optional[float] = None  # spread left after the verdicts

    @property
    def healthy(self) -> bool:
        return not self.verdicts

    def messages(self) -> List[str]:
        return [v.message for v in self.verdicts]

    def summary(self) -> str:
        head = (f'topology analysis on fabric {self.fabric}: {self.flows} '
                f'flows in {self.rounds} rounds')
        if self.scale is not None:
            head += f', {self.scale:.3g} x predicted when healthy'
        if self.residual_sigma is not None:
            head += (f', spread {self.residual_sigma:.2f} '
                     f'(noise model {self.sigma:.2f})')
        if self.healthy:
            return head + ': healthy'
        return head + '; ' + '; '.join(self.messages())


def _median(xs):
    return statistics.median(xs) if xs else 0.0


def _z_of_median(values, sigma):
    """How many standard errors of a median of normal noise the median of
    ``values`` (log ratios) is from 0."""
    if not values:
        return 0.0
    return abs(_median(values)) / (1.2533 * sigma / math.sqrt(len(values)))


class _Fit:
    """Predictions and residuals of the declared topology with faults."""

    def __init__(self, topology: Topology, rounds: Sequence[Round],
                 sigma: float):
        self.topology = topology
        self.rounds = list(rounds)
        self.sigma = sigma
        self.models = [RoundModel(topology, r.flows) for r in self.rounds]
        self.logm = [[math.log(v) if v > 0 else math.log(1e-9)
                      for v in r.measured] for r in self.rounds]
        self.n = sum(len(x) for x in self.logm)
        self.full = self.n <= FULL_REFIT_FLOWS
        self.base = [m.rates for m in self.models]

    def rates_for(self, faults: Sequence[Fault]):
        if not faults:
            return self.base
        topo = self.topology
        links, nodes = [], []
        for f in faults:
            topo = f.apply(topo)
            links += list(f.links)
            if f.kind == 'miscabled':
                nodes.append(f.subject)
                for leaf in (self.topology.leaf_of[f.subject], f.leaf):
                    for s in self.topology.chain(leaf)[:-1]:
                        links += [('switch', s, 'up'), ('switch', s, 'down')]
        return [m.variant(topo, links, nodes) for m in self.models]

    def residuals(self, rates):
        return [[lm - math.log(p) if p > 0 else 20.0
                 for lm, p in zip(lms, ps)]
                for lms, ps in zip(self.logm, rates)]

    def scale_of(self, e):
        return _median([x for row in e for x in row])

    def loss(self, e, c):
        s, k2 = self.sigma, CLIP * CLIP
        total = 0.0
        for row in e:
            for x in row:
                z = (x - c) / s
                z *= z
                total += z if z < k2 else k2
        return total


def _pick_verdicts(fit: _Fit, fabric, min_effect, max_faults, alpha):
    topo = fit.topology
    faults: List[Fault] = []
    rates = fit.base
    e = fit.residuals(rates)
    c = fit.scale_of(e)
    cur = fit.loss(e, c)
    verdicts = []
    sig = fit.sigma
    lo = math.log(min_effect)

    for _ in range(max_faults):
        cands = _candidates(fit, faults, rates, e, c)
        if not cands:
            break
        threshold = 2 * (math.log(len(cands) + 1) + math.log(1 / alpha))
        scored = []
        for fault in cands:
            new_rates = fit.rates_for(faults + [fault])
            ne = fit.residuals(new_rates)
            nc = fit.scale_of(ne) if fit.full else c
            scored.append((cur - fit.loss(ne, nc), fault, new_rates, ne, nc))
        scored.sort(key=lambda x: -x[0])
        best = scored[0]
        if best[0] < threshold:
            break
        gain, fault, new_rates, ne, nc = best
        # ratios against the scale of the better fit
        v = _verdict(fit, fault, faults, rates, new_rates, e, nc, ne, nc,
                     fabric, gain)
        if v is None or not _large(v, fault, lo):
            break
        same = [s[1] for s in scored[1:]
                if abs(s[0] - gain) <= 1e-6 * max(1.0, abs(gain)) and
                s[1].kind == fault.kind and
                _same_flows(fit, s[1], fault)]
        if same:
            v.alternatives = [_name(f) for f in same]
            names = sorted([_name(fault)] + v.alternatives)
            v.message = v.message.replace(_name(fault), ' or '.join(names), 1)
            v.message += ('; the same flows cross each of them: these '
                          'rounds cannot tell them apart')
        verdicts.append(v)
        faults.append(fault)
        rates, e, c, cur = new_rates, ne, nc, cur - gain
        if not fit.full:
            c = fit.scale_of(e)
            cur = fit.loss(e, c)
    return faults, rates, e, c, verdicts


def _large(v, fault, lo):
    if fault.kind in ('node', 'uplink'):
        return math.log(max(v.ratio, 1e-9)) < lo
    return True


def _name(f: Fault):
    if f.kind == 'uplink':
        return f'uplink {f.subject}-{f.leaf}'
    return f.subject


def _touched(fit: _Fit, fault: Fault):
    """Indices (round, flow) whose path uses the fault's links or node."""
    out = set()
    links = set(fault.links)
    for ri, m in enumerate(fit.models):
        for fi, p in enumerate(m.paths):
            if fault.kind == 'miscabled':
                if fault.subject in m.flows[fi]:
                    out.add((ri, fi))
            elif links.intersection(p):
                out.add((ri, fi))
    return out


def _same_flows(fit, a, b):
    return _touched(fit, a) == _touched(fit, b)


def _candidates(fit: _Fit, faults, rates, e, c) -> List[Fault]:
    topo = fit.topology
    for f in faults:
        topo = f.apply(topo)
    sig = fit.sigma
    done = {(f.kind, f.subject) for f in faults}
    sent: Dict[str, List[float]] = {}
    recv: Dict[str, List[float]] = {}
    through: Dict[Link, List[Tuple[int, int]]] = {}
    score: Dict[str, float] = {}
    k2 = CLIP * CLIP
    for ri, m in enumerate(fit.models):
        for fi, (s, d) in enumerate(m.flows):
            x = e[ri][fi] - c
            sent.setdefault(s, []).append(x)
            recv.setdefault(d, []).append(x)
            z2 = min((x / sig) ** 2, k2)
            if z2 > 4:
                score[s] = score.get(s, 0.0) + z2
                score[d] = score.get(d, 0.0) + z2
            for link in m.paths[fi]:
                if link[0] == 'switch':
                    through.setdefault(link, []).append((ri, fi))

    cands: List[Fault] = []
    floor = math.log(0.85)
    # node links: the nodes whose sent or received flows are slowest,
    # relative to the flows that do not touch them
    def rel(group):
        inside = [e[ri][fi] for ri, fi in group]
        gs = set(group)
        outside = [x for ri, row in enumerate(e) for fi, x in enumerate(row)
                   if (ri, fi) not in gs] if fit.full else None
        ref = _median(outside) if outside else c
        return _median(inside) - ref, ref

    by_node: Dict[str, Dict[str, List[Tuple[int, int]]]] = {}
    for ri, m in enumerate(fit.models):
        for fi, (s, d) in enumerate(m.flows):
            by_node.setdefault(s, {'up': [], 'down': []})['up'].append(
                (ri, fi))
            by_node.setdefault(d, {'up': [], 'down': []})['down'].append(
                (ri, fi))
    node_rank = sorted(topo.nodes, key=lambda n: min(_median(sent.get(n, [])),
                                                     _median(recv.get(n, []))))
    for n in node_rank[:3]:
        if ('node', n) in done or n not in by_node:
            continue
        (ms, ref_s), (mr, ref_r) = rel(by_node[n]['up']), \
            rel(by_node[n]['down'])
        for dirs, med in ((('up', 'down'), max(ms, mr)), (('up',), ms),
                          (('down',), mr)):
            if med > floor:
                continue
            links = tuple(('node', n, d) for d in dirs)
            f0 = _fit_factor(fit, topo, links, rates, min(ref_s, ref_r))
            cands += [Fault('node', n, links, f0 * g) for g in (0.85, 1.0)]

    # trunks
    trunk_rank = sorted(through, key=lambda l: rel(through[l])[0]
                        if fit.full else _median(
                            [e[ri][fi] - c for ri, fi in through[l]]))
    seen_sw = []
    for link in trunk_rank[:4] if fit.full else trunk_rank[:4]:
        sw = link[1]
        if ('uplink', sw) in done or sw in seen_sw:
            continue
        up, down = ('switch', sw, 'up'), ('switch', sw, 'down')
        meds = {l: rel(through[l]) for l in (up, down) if l in through}
        if min(v[0] for v in meds.values()) > floor:
            continue
        seen_sw.append(sw)
        for links in ((up, down), (up,), (down,)):
            if not all(l in meds for l in links):
                continue
            if len(links) == 1 and meds[links[0]][0] > floor:
                continue
            f0 = _fit_factor(fit, topo, links, rates,
                             max(meds[l][1] for l in links))
            cands += [Fault('uplink', sw, links, f0 * g, topo.parent[sw])
                      for g in (0.85, 1.0)]

    # miscabling: nodes whose flows fit worst, re-homed to likely leaves
    leaves = topo.leaves
    if len(leaves) >= 2:
        suspects = sorted(score, key=lambda n: -score[n])[:3]
        for n in suspects:
            if score[n] < 3 * k2 or ('miscabled', n) in done:
                continue
            home = topo.leaf_of[n]
            options = [l for l in leaves if l != home]
            if len(options) > 6:
                options = _likely_leaves(fit, topo, n, e, c, options)[:4]
            cands += [Fault('miscabled', n, (), 1.0, leaf) for leaf in options]
    return cands


def _likely_leaves(fit, topo, n, e, c, options):
    """Leaves a miscabled ``n`` may really be on: partners of its flows
    that ran faster than predicted (their flow stayed inside the real
    leaf), and leaves whose trunks were loaded in rounds where n's flows
    ran slower (it shared their trunk)."""
    sig = fit.sigma
    votes = {leaf: 0.0 for leaf in options}
    for ri, m in enumerate(fit.models):
        loaded = None
        for fi, (s, d) in enumerate(m.flows):
            if n not in (s, d):
                continue
            z = (e[ri][fi] - c) / sig
            if z > 2:
                other = d if s == n else s
                leaf = topo.leaf_of.get(other)
                if leaf in votes:
                    votes[leaf] += min(z, CLIP)
            elif z < -2:
                if loaded is None:
                    loaded = set()
                    for p in m.paths:
                        for link in p:
                            if link[0] == 'switch':
                                loaded.add(link[1])
                for leaf in loaded:
                    if leaf in votes:
                        votes[leaf] += 1.0
    return sorted(options, key=lambda l: -votes[l])


def _fit_factor(fit, topo, links, rates, c):
    """Factor of ``links``' rate that their flows' measurements suggest:
    the median over rounds of the largest load they carried (measured,
    unscaled), as a share of the capacity."""
    scale = math.exp(c)
    loads: Dict[Link, List[float]] = {}
    for ri, m in enumerate(fit.models):
        per: Dict[Link, float] = {}
        for fi, p in enumerate(m.paths):
            for link in links:
                if link in p:
                    per[link] = per.get(link, 0.0) + \
                        fit.rounds[ri].measured[fi] / scale
        for link, v in per.items():
            loads.setdefault(link, []).append(v)
    shares = []
    for link in links:
        vals = sorted(loads.get(link, []), reverse=True)
        if vals:
            top = vals[:max(1, min(3, len(vals)))]
            shares.append(_median(top) / topo.capacity(link))
    if not shares:
        return 1.0
    return min(1.0, max(1e-3, _median(shares)))


def _verdict(fit, fault, faults, rates, new_rates, e, c, ne, nc, fabric,
             gain):
    topo = fit.topology
    sig = fit.sigma
    touched = _touched(fit, fault)
    if not touched:
        return None
    # ratios of the touched flows to the prediction without this fault
    xs = [e[ri][fi] - c for ri, fi in touched]
    ratio = math.exp(_median(xs))
    z = _z_of_median(xs, sig)
    if fault.kind == 'node':
        n = fault.subject
        s = [e[ri][fi] - c for ri, fi in touched
             if fit.models[ri].flows[fi][0] == n]
        r = [e[ri][fi] - c for ri, fi in touched
             if fit.models[ri].flows[fi][1] == n]
        msg = (f'suspect node {n} on fabric {fabric}: its link behaves as '
               f'{fault.factor:.2f}x of its rate '
               f'({"/".join(l[2] for l in fault.links)}); sent flows at '
               f'{math.exp(_median(s)):.2f}x, received at '
               f'{math.exp(_median(r)):.2f}x of prediction ({len(touched)} '
               f'flows, {z:.0f} sigma outside noise)')
        return Verdict('node', (n,), msg, ratio, z, len(touched), gain, fault)

    if fault.kind == 'uplink':
        sw = fault.subject
        under = set(topo.nodes_of(sw)) | {
            n for n in topo.nodes if sw in topo.chain(topo.leaf_of[n])}
        within = [e[ri][fi] - c
                  for ri, m in enumerate(fit.models)
                  for fi, (a, b) in enumerate(m.flows)
                  if (ri, fi) not in touched and (a in under or b in under)
                  and not any(l[0] == 'switch' and l[1] == sw
                              for l in m.paths[fi])]
        wr = (f'{math.exp(_median(within)):.2f}x' if within
              else 'not measured')
        dirs = ' and '.join(
            {'up': f'leaving {sw}', 'down': f'entering {sw}'}[l[2]]
            for l in fault.links)
        msg = (f'uplink {sw}-{fault.leaf} on fabric {fabric}: cross-switch '
               f'flows at {ratio:.2f}x of prediction, within-switch flows at '
               f'{wr} ({dirs}: trunk at {fault.factor:.2f}x of its rate, '
               f'{len(touched)} flows, {z:.0f} sigma outside noise)')
        return Verdict('uplink', (sw, fault.leaf), msg, ratio, z,
                       len(touched), gain, fault)

    # miscabled: the flows whose prediction changed
    n, home = fault.subject, topo.leaf_of[fault.subject]
    changed = [(ri, fi) for ri, fi in touched
               if abs(math.log(new_rates[ri][fi] / rates[ri][fi])) > 0.05]
    xs = [e[ri][fi] - c for ri, fi in changed] or xs
    off = max((abs(x) for x in xs), default=0.0)
    z = _z_of_median([abs(x) for x in xs], sig)
    src = topo.source or 'the topology'
    msg = (f'miscabled node {n} on fabric {fabric}: {n} behaves as if '
           f'cabled to {fault.leaf}; {src} says {home} ({len(changed)} '
           f'flows change, off prediction by up to {math.exp(off):.1f}x, '
           f'{z:.0f} sigma outside noise)')
    return Verdict('miscabled', (n, fault.leaf), msg, math.exp(_median(xs)),
                   z, len(changed), gain, fault)


def diagnose(topology: Topology, rounds: Sequence[Round], fabric: str = '?',
             sigma: float = DEFAULT_SIGMA,
             min_effect: float = DEFAULT_MIN_EFFECT, max_faults: int = 3,
             alpha: float = ALPHA) -> Analysis:
    """Verdicts that explain ``rounds`` (measured) on ``topology`` (see
    the module doc)."""
    if not 0 < min_effect < 1:
        raise ValueError(f'min_effect must be in (0, 1), got {min_effect}')
    known = set(topology.nodes)
    an = Analysis(fabric, sigma)
    kept = []
    missing = set()
    for r in rounds:
        if not r.measured:
            continue
        flows, meas = [], []
        for (s, d), v in zip(r.flows, r.measured):
            if s in known and d in known and v is not None:
                flows.append((s, d))
                meas.append(v)
            else:
                missing.update(x for x in (s, d) if x not in known)
        if flows:
            kept.append(Round(r.label, flows, meas))
    if missing:
        an.notes.append(f'nodes not in the topology, their flows ignored: '
                        f'{", ".join(sorted(missing))}')
    if not kept:
        an.notes.append('no measured flow')
        return an

    fit = _Fit(topology, kept, sigma)
    an.flows, an.rounds = fit.n, len(kept)
    faults, rates, e, c, verdicts = _pick_verdicts(
        fit, fabric, min_effect, max_faults, alpha)
    an.verdicts = verdicts
    an.scale = math.exp(c)
    resid = sorted(abs(x - c) for row in e for x in row)
    an.residual_sigma = 1.4826 * resid[len(resid) // 2]
    for ri, r in enumerate(kept):
        for fi, (s, d) in enumerate(r.flows):
            an.ratios[(r.label, s, d)] = math.exp(e[ri][fi] - c)

    # flows still off: one pair's route or cable
    bound = _bonferroni_z(fit.n) * sigma
    lo = math.log(min_effect)
    explained = set()
    for v in verdicts:
        explained |= _touched(fit, v.fault)
    for ri, r in enumerate(kept):
        for fi, (s, d) in enumerate(r.flows):
            x = e[ri][fi] - c
            if x < lo and -x > bound and (ri, fi) not in explained:
                an.verdicts.append(Verdict(
                    'link', (s, d),
                    f'suspect link {s}->{d} on fabric {fabric}: '
                    f'{math.exp(x):.2f}x of prediction in round {r.label} '
                    f'({-x / sigma:.0f} sigma outside noise)',
                    math.exp(x), -x / sigma, 1))
    return an


def _bonferroni_z(n, alpha=ALPHA):
    """z beyond which one of n normal draws falls with probability alpha
    (two-sided, by the normal tail bound)."""
    p = alpha / max(1, n) / 2
    # invert the tail: solve exp(-z^2/2)/(z sqrt(2 pi)) = p by iteration
    z = 3.0
    for _ in range(20):
        z = math.sqrt(max(1e-9, -2 * math.log(p * z * math.sqrt(2 * math.pi))))
    return z
