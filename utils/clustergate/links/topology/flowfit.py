"""The fit of a switch tree's predictions to measured flows
(:mod:`.analysis`): the faults that change the declared fabric
(:class:`Fault`), the predictions of the declared topology prepared once
(:class:`Prepared`), and the residuals and robust loss of a topology with
faults (:class:`Fit`)."""

import math
import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .fairshare import RoundModel
from .model import Link, Topology
from .rounds import Round


DEFAULT_SIGMA = 0.15
CLIP = 4.0
ALPHA = 1e-4
# above this many flows the scale stays fixed while candidates are compared
FULL_REFIT_FLOWS = 20000
# flows crossing no trunk that can set the scale (see Fit.scale_of)
MIN_LOCAL = 8


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


def is_global(f: Fault) -> bool:
    return bool(f.links) and f.links[0][0] == 'global'


def fault_name(f: Fault):
    if f.kind == 'uplink' and is_global(f):
        return 'global link ' + f.subject.replace('~', '-')
    if f.kind == 'uplink':
        return f'uplink {f.subject}-{f.leaf}'
    return f.subject


def median(xs):
    return statistics.median(xs) if xs else 0.0


def z_of_median(values, sigma):
    """How many standard errors of a median of normal noise the median of
    ``values`` (log ratios) is from 0."""
    if not values:
        return 0.0
    return abs(median(values)) / (1.2533 * sigma / math.sqrt(len(values)))


class Prepared:
    """The rounds' predictions on the declared topology and the indices
    the diagnosis uses, which depend only on the flows: build once and
    pass to :func:`.analysis.diagnose` (``prepared=``) when the same rounds are
    diagnosed again with other measurements (simulations)."""

    def __init__(self, topology: Topology, flows: Sequence[Sequence]):
        self.topology = topology
        self.models = [RoundModel(topology, fl) for fl in flows]
        self.base = [m.rates for m in self.models]
        self.logp = [[math.log(p) if p > 0 else -20.0 for p in row]
                     for row in self.base]
        # flows by sending/receiving node and by trunk (declared paths)
        self.by_node: Dict[str, Dict[str, List[Tuple[int, int]]]] = {}
        self.through: Dict[Link, List[Tuple[int, int]]] = {}
        self.loaded: List[set] = []     # per round: switches with traffic
        # per round: the flows that cross no trunk (declared)
        self.local: List[List[int]] = []
        for ri, m in enumerate(self.models):
            loaded = set()
            for fi, (s, d) in enumerate(m.flows):
                self.by_node.setdefault(s, {'up': [], 'down': []})[
                    'up'].append((ri, fi))
                self.by_node.setdefault(d, {'up': [], 'down': []})[
                    'down'].append((ri, fi))
                for link in m.paths[fi]:
                    if link[0] != 'node':       # trunks, global links
                        self.through.setdefault(link, []).append((ri, fi))
                        loaded.add(link[1])
            self.loaded.append(loaded)
            self.local.append([fi for fi, path in enumerate(m.paths)
                               if all(l[0] == 'node' for l in path)])

    def flows(self):
        return [m.flows for m in self.models]


class Fit:
    """Predictions and residuals of the declared topology with faults."""

    def __init__(self, topology: Topology, rounds: Sequence[Round],
                 sigma: float, prepared: Optional[Prepared] = None):
        self.topology = topology
        self.rounds = list(rounds)
        self.sigma = sigma
        pre = prepared or Prepared(topology, [r.flows for r in self.rounds])
        self.models = pre.models
        self.by_node, self.through, self.loaded = \
            pre.by_node, pre.through, pre.loaded
        self.local = pre.local
        self.local_sets = [set(x) for x in pre.local]
        log = math.log
        self.logm = [[log(v) if v > 0 else -20.0 for v in r.measured]
                     for r in self.rounds]
        self.n = sum(len(x) for x in self.logm)
        self.full = self.n <= FULL_REFIT_FLOWS
        self.base = pre.base
        self.e0 = [[a - b for a, b in zip(lm, lp)]
                   for lm, lp in zip(self.logm, pre.logp)]

    def _variant_args(self, faults):
        topo = self.topology
        links, nodes = [], []
        for f in faults:
            topo = f.apply(topo)
            links += list(f.links)
            if f.kind == 'miscabled':
                nodes.append(f.subject)
        return topo, links, nodes

    def rates_for(self, faults: Sequence[Fault]):
        if not faults:
            return self.base
        topo, links, nodes = self._variant_args(faults)
        return [m.variant(topo, links, nodes) for m in self.models]

    def sparse_for(self, faults: Sequence[Fault]):
        """Per round, (flow indices, rates) that differ from the base."""
        topo, links, nodes = self._variant_args(faults)
        return [m.variant_sparse(topo, links, nodes) for m in self.models]

    def gain(self, sparse, e, c):
        """Loss of the current residuals ``e`` minus that with the rates
        of ``sparse``, the scale ``c`` held."""
        s, k2 = self.sigma, CLIP * CLIP
        total = 0.0
        for ri, (members, sub) in enumerate(sparse):
            lms, row = self.logm[ri], e[ri]
            for f, p in zip(members, sub):
                z0 = (row[f] - c) / s
                z1 = (lms[f] - math.log(p) - c) / s if p > 0 else 1e9
                z0 *= z0
                z1 *= z1
                total += (z0 if z0 < k2 else k2) - (z1 if z1 < k2 else k2)
        return total

    def dense(self, sparse, rates, e):
        """Rates and residuals with ``sparse`` applied to the base."""
        new_rates, ne = [], []
        for ri, (members, sub) in enumerate(sparse):
            if not members:
                new_rates.append(self.base[ri])
                ne.append(self.e0[ri])
                continue
            r = list(self.base[ri])
            for f, p in zip(members, sub):
                r[f] = p
            new_rates.append(r)
            lms = self.logm[ri]
            ne.append([lm - math.log(p) if p > 0 else 20.0
                       for lm, p in zip(lms, r)])
        return new_rates, ne

    def residuals(self, rates):
        return [[lm - math.log(p) if p > 0 else 20.0
                 for lm, p in zip(lms, ps)]
                for lms, ps in zip(self.logm, rates)]

    def scale_of(self, e):
        """The log scale of healthy flows: the median residual, or that of
        the flows that cross no trunk when higher (faults only slow flows
        down: where most flows cross cut trunks, they set the median)."""
        c = median([x for row in e for x in row])
        local = [e[ri][fi] for ri, idx in enumerate(self.local)
                 for fi in idx]
        if len(local) >= MIN_LOCAL:
            c = max(c, median(local))
        return c

    def loss(self, e, c):
        s, k2 = self.sigma, CLIP * CLIP
        total = 0.0
        for row in e:
            for x in row:
                z = (x - c) / s
                z *= z
                total += z if z < k2 else k2
        return total


def touched(fit: Fit, fault: Fault):
    """Indices (round, flow) whose path uses the fault's links or node."""
    out = set()
    if fault.kind == 'miscabled':
        g = fit.by_node.get(fault.subject, {})
        return set(g.get('up', [])) | set(g.get('down', []))
    for kind, name, d in fault.links:
        if kind == 'node':
            out.update(fit.by_node.get(name, {}).get(d, []))
        else:
            out.update(fit.through.get((kind, name, d), []))
    return out


def same_flows(fit, a, b):
    return touched(fit, a) == touched(fit, b)
