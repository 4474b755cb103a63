"""Max-min fair share of concurrent flows over directed links
(progressive filling), and :class:`RoundModel`, which re-solves only the
part of a round that a change of the fabric touches.

Progressive filling: every unfixed flow grows at the same rate; when a link
is full, its flows are fixed at the current level and the others go on.
Flows sharing no link with each other never influence each other, so a
round splits into independent components (a leaf's own traffic, one
trunk's traffic, ...): a hypothesis such as "n3 is cabled to leaf2" or
"leaf4's trunk is at 1/4" changes a few components, and only those are
solved again. That keeps a 1024-node round (1024 flows over ~2k links)
at about a millisecond per changed component instead of per round.

The model is the fluid steady state: it does not model that flows
finishing early free capacity for the others (with equal message sizes,
a flow's bottleneck link carries no faster flow, so its rate holds until
it completes).
"""

from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .model import Link, Topology

Flow = Tuple[str, str]


def fair_share(paths: Sequence[Sequence[Link]],
               capacity: Callable[[Link], float]) -> List[float]:
    """Max-min fair rate of each flow, given its links (a path may be
    empty: unlimited, reported as ``inf``)."""
    index: Dict[Link, int] = {}
    flinks: List[List[int]] = []
    for p in paths:
        ids = []
        for link in p:
            i = index.get(link)
            if i is None:
                i = index[link] = len(index)
            ids.append(i)
        flinks.append(ids)

    cap = [float(capacity(link)) for link in index]
    count = [0] * len(cap)
    on = [[] for _ in cap]
    for f, ids in enumerate(flinks):
        for i in ids:
            count[i] += 1
            on[i].append(f)

    rate: List[Optional[float]] = [None] * len(flinks)
    for f, ids in enumerate(flinks):
        if not ids:
            rate[f] = float('inf')
    active = [i for i in range(len(cap)) if count[i]]
    while active:
        level = min(max(cap[i], 0.0) / count[i] for i in active)
        tol = level * 1e-9 + 1e-300
        full = [i for i in active if cap[i] / count[i] <= level + tol]
        for i in full:
            for f in on[i]:
                if rate[f] is None:
                    rate[f] = level
                    for j in flinks[f]:
                        cap[j] -= level
                        count[j] -= 1
        active = [i for i in active if count[i]]

    return rate  # type: ignore[return-value]


def predict(topology: Topology, flows: Iterable[Flow],
            rates: Optional[Dict[Link, float]] = None) -> Dict[Flow, float]:
    """Predicted rate of each concurrent flow ``(src, dst)`` of one round
    on ``topology``; ``rates`` overrides the capacity of single directed
    links. Unit: that of the topology's rates."""
    flows = list(flows)
    paths = [topology.path(s, d) for s, d in flows]
    cap = topology.capacity if not rates else \
        (lambda link: rates.get(link, topology.capacity(link)))
    return dict(zip(flows, fair_share(paths, cap)))


class RoundModel:
    """One round's flows on a topology, solved per component, with cheap
    re-solves for variants of the topology (see the module doc)."""

    def __init__(self, topology: Topology, flows: Sequence[Flow]):
        self.topology = topology
        self.flows = list(flows)
        self.paths = [topology.path(s, d) for s, d in self.flows]
        self.by_node: Dict[str, List[int]] = {}
        for f, (s, d) in enumerate(self.flows):
            self.by_node.setdefault(s, []).append(f)
            if d != s:
                self.by_node.setdefault(d, []).append(f)

        # components: union-find over links
        parent: Dict[Link, Link] = {}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for p in self.paths:
            for link in p:
                parent.setdefault(link, link)
            for link in p[1:]:
                a, b = find(p[0]), find(link)
                if a != b:
                    parent[a] = b
        comp_of_root: Dict[Link, int] = {}
        self.comp_of_link: Dict[Link, int] = {}
        for link in parent:
            r = find(link)
            c = comp_of_root.setdefault(r, len(comp_of_root))
            self.comp_of_link[link] = c
        self.comp_flows: List[List[int]] = [[] for _ in comp_of_root]
        self.comp_of_flow: List[int] = []
        for f, p in enumerate(self.paths):
            c = self.comp_of_link[p[0]] if p else -1
            self.comp_of_flow.append(c)
            if c >= 0:
                self.comp_flows[c].append(f)

        self.rates: List[float] = [float('inf')] * len(self.flows)
        for members in self.comp_flows:
            sub = fair_share([self.paths[f] for f in members],
                             topology.capacity)
            for f, r in zip(members, sub):
                self.rates[f] = r

    def variant_sparse(self, topology: Topology, links: Iterable[Link] = (),
                       nodes: Iterable[str] = ()):
        """``(flow indices, their rates)`` that differ from the model's
        solve when the fabric is ``topology``, which differs from the
        model's only in the capacity of ``links`` and the cabling of
        ``nodes`` (other flows keep :attr:`rates`)."""
        comps = set()
        moved = []
        for n in nodes:
            for f in self.by_node.get(n, ()):
                moved.append(f)
                comps.add(self.comp_of_flow[f])
        new_paths = {}
        for f in moved:
            s, d = self.flows[f]
            new_paths[f] = topology.path(s, d)
            for link in new_paths[f]:
                c = self.comp_of_link.get(link)
                if c is not None:
                    comps.add(c)
        for link in links:
            c = self.comp_of_link.get(link)
            if c is not None:
                comps.add(c)
        comps.discard(-1)
        if not comps and not moved:
            return [], []

        members = sorted({f for c in comps for f in self.comp_flows[c]} |
                         set(moved))
        paths = [new_paths.get(f, self.paths[f]) for f in members]
        return members, fair_share(paths, topology.capacity)

    def variant(self, topology: Topology, links: Iterable[Link] = (),
                nodes: Iterable[str] = ()) -> List[float]:
        """Rates of all flows on ``topology`` (see :meth:`variant_sparse`)."""
        members, sub = self.variant_sparse(topology, links, nodes)
        if not members:
            return self.rates
        out = list(self.rates)
        for f, r in zip(members, sub):
            out[f] = r
        return out
