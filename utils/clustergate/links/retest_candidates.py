"""Which node links the adaptive retest measures again, and with whom
(:mod:`clustergate.links.retest_rules` decides them): the named and the
borderline node links of a first round (:func:`retest_candidates`), the
healthy partners whose pairs with them cross nothing the fabric's verdict
named (:func:`refs_of`), and the pairs of one round (:func:`plan`)."""

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from clustergate.links import judge as linkjudge

#: partners per candidate (two halves of two)
MAX_PARTNERS = 4

DIRECTIONS = ('sent', 'recv')
Pair = Tuple[str, str]

#: the node a fabric verdict line names (flat or tree: its own link, its
#: cabling)
_NAMED_NODE = re.compile(r'\b(?:suspect|miscabled) node (\S+) on fabric')
#: a verdict line that names a node's own link: the fabric's (a gross
#: fault) or the per-link verdict's
_NODE_LINK_LINE = re.compile(
    r'^(?:suspect node|slow node link) (\S+) on fabric \S+: ')


def named_nodes(lines) -> set:
    """The nodes the fabric's verdict lines name."""
    return {m.group(1) for ln in lines for m in _NAMED_NODE.finditer(ln)}


def node_link_of(line: str) -> Optional[str]:
    """The node whose own link ``line`` names (``suspect node X on fabric
    F: ...`` or ``slow node link X on fabric F: ...``), else None."""
    m = _NODE_LINK_LINE.match(line)
    return m.group(1) if m else None


@dataclass
class Bounds:
    """The naming bounds of :func:`clustergate.links.judge.judge`."""

    ratio: float = linkjudge.RATIO
    z: float = linkjudge.Z
    peer_ratio: float = linkjudge.PEER_RATIO
    peer_z: float = linkjudge.PEER_Z
    direction_ratio: float = linkjudge.DIRECTION_RATIO


#: peers only: this many times the naming z below the run's median makes a
#: node link borderline even near its peers' level (see :func:`is_borderline`)
STRONG_Z = 1.5
#: peers only, in a run whose MAD is at most this share of its median (a
#: tight run): half the naming z below makes a node link near its peers'
#: level borderline, as with a baseline. With STRONG_Z alone a 95 % link
#: without a baseline on the emulated 9-node tree (0.93-0.96x of its peers,
#: 2.6-5.6 MADs below, the MAD at its 1 % floor) was retested in 1 of 6
#: runs; healthy links reached 0.96x (3.8 MADs below) in one direction: the
#: retest tells them. In a noisy run (a simulated fabric at sigma 0.05,
#: MAD 3-4 %) a 5 % loss is within the spread, and half the z would make
#: a retest candidate of one node link in twenty
TIGHT_SPREAD = 0.02


def halfway(bound):
    """The bound halfway from 1 to ``bound``."""
    return 1 - (1 - bound) / 2


def is_borderline(j: linkjudge.LinkJudgement, b: Bounds) -> bool:
    """Not named, but beyond half of both of its naming bounds; without a
    baseline also when ``STRONG_Z`` times the naming z below its peers (in
    a tight run, ``TIGHT_SPREAD``: half the naming z) and halfway to a
    baseline's ratio bound."""
    if j.named:
        return False
    if j.base is not None:
        bound = b.ratio if j.direction == 'both' else b.direction_ratio
        return j.ratio <= halfway(bound) and j.z <= -b.z / 2
    bound = b.peer_ratio if j.direction == 'both' else \
        b.peer_ratio * b.direction_ratio / b.ratio
    if j.figure <= halfway(bound) and j.peer_z <= -b.peer_z / 2:
        return True
    # a node link clearly below the run's spread is borderline once it is
    # halfway to a baseline's ratio bound (a 10 % loss at 1024 nodes, 0.93x
    # of its peers, was above 0.925x but 9 MADs below; in a tight run a 5 %
    # loss on 9 nodes, 0.95x, 4 MADs below): alone, the retest tells a
    # loss from a healthy link the first round's noise put there
    near = b.ratio if j.direction == 'both' else b.direction_ratio
    tight = j.spread is not None and j.spread <= TIGHT_SPREAD
    return j.figure <= halfway(near) and j.peer_z <= -(
        tight_z(j.count, b) if tight else STRONG_Z * b.peer_z)


def tight_z(count: int, b: Bounds) -> float:
    """MADs below the run's median that make a node link near its peers'
    level borderline in a tight run of ``count`` node-link figures: where
    one healthy figure of the run is expected below it (normal noise; a MAD
    is 0.6745 sigma), at least half the naming z and at most ``STRONG_Z``
    times it: 2.6 MADs for the 27 figures of 9 nodes, 5.1 for the 3,072 of
    1,024 (one retest candidate per healthy run, not one in twenty)."""
    q = statistics.NormalDist().inv_cdf(1 - 1 / max(count, 2)) / 0.6745
    return min(max(q, b.peer_z / 2), STRONG_Z * b.peer_z)


@dataclass
class Candidate:
    """A node link to retest: why, and what the first round said."""

    node: str
    why: str            # 'named' or 'borderline'
    first: str          # the first round's figures, for the verdict line
    #: the first round's worst figure (x of its baseline or peers; 0: a
    #: gross fault the fabric's verdict named): the lower, the more the
    #: first round says, the earlier its retests when the budget is short
    evidence: float = 1.0
    #: per direction, the level below which its retest rounds name it
    #: slow, from its per-link baseline (:func:`clustergate.links.retest_rules.baseline_levels`); a
    #: direction without one is judged against the naming ratio
    levels: Dict[str, float] = field(default_factory=dict)
    #: what set ``levels``, for the verdict line
    basis: str = ''

    def priority(self):
        """Sort key: named before borderline, then the strongest first
        round first."""
        return (self.why != 'named', self.evidence, self.node)


def retest_candidates(lines: Sequence[str], verdict: linkjudge.LinkVerdict,
                      bounds: Bounds) -> List[Candidate]:
    """Every node link a first round names, gross or not (``lines``: the
    fabric's verdict lines; ``suspect node X`` is a node link), and the
    named and borderline ones of the per-link ``verdict``: what the retest
    decides. A miscabled node is a cabling fault, not its link's."""
    gross = {}
    for ln in lines:
        node = node_link_of(ln)
        if node is not None and ln.startswith('suspect node '):
            gross.setdefault(node, ln.split(': ', 1)[1])
    out = [Candidate(n, 'named', f'the fabric verdict: {first}', 0.0)
           for n, first in sorted(gross.items())]
    return sorted(out + candidates(verdict, bounds, named_nodes(lines)),
                  key=lambda c: c.node)


def candidates(verdict: linkjudge.LinkVerdict, bounds: Bounds,
               skip: Sequence[str] = ()) -> List[Candidate]:
    """The named and the borderline node links of a first round, per node
    (``skip``: nodes a fabric verdict named already)."""
    by_node: Dict[str, List] = {}
    for j in verdict.judgements:
        if j.node in skip:
            continue
        if j.named or is_borderline(j, bounds):
            by_node.setdefault(j.node, []).append(j)
    out = []
    for node, js in sorted(by_node.items()):
        def fig(j):
            return j.ratio if j.ratio is not None else j.figure

        worst = min(js, key=fig)
        out.append(Candidate(
            node, 'named' if any(j.named for j in js) else 'borderline',
            f'{worst.direction} ' + worst.describe(), float(fig(worst))))
    return out


def partners_of(nodes: Sequence[str], figures: Mapping, exclude) -> List:
    """Healthy nodes to pair candidates with, the most typical first (the
    first round's both-ways figure closest to its peers')."""
    bad = set(exclude)

    def off(n):
        f = figures.get((n, 'both'))
        return abs(f.peer - 1.0) if f is not None else math.inf

    return sorted((n for n in nodes if n not in bad), key=lambda n:
                  (off(n), n))


@dataclass
class FabricFaults:
    """What the fabric's verdict named besides node links, as the retest
    needs it: a pair measured alone must not cross a named trunk or be a
    named pair, or an innocent node would be confirmed by its partner's
    route (an uplink at 25 % and n2 at 50 % had named n1 beside them)."""

    nodes: List[str] = field(default_factory=list)      # their own links
    miscabled: Dict[str, str] = field(default_factory=dict)  # node: leaf
    trunks: List[Tuple] = field(default_factory=list)   # directed links
    pairs: List[Pair] = field(default_factory=list)     # src, dst

    def routed(self, topo):
        """The declared tree with each miscabled node where it is."""
        for node, leaf in sorted(self.miscabled.items()):
            if topo is not None and node in topo.leaf_of and \
                    leaf in topo.parent:
                topo = topo.rehomed(node, leaf)
        return topo

    def clear(self, topo, src: str, dst: str) -> bool:
        """Whether ``src -> dst`` alone crosses nothing the fabric's
        verdict named (``topo``: :meth:`routed`, None: flat)."""
        if (src, dst) in self.pairs:
            return False
        if topo is None or not self.trunks:
            return True
        try:
            path = topo.path(src, dst)
        except (KeyError, ValueError):
            return False
        return not set(path) & set(self.trunks)


def fabric_faults(analysis) -> FabricFaults:
    """The :class:`FabricFaults` of a fabric verdict: a switch-tree
    :class:`clustergate.links.topology.Analysis` or a flat
    :class:`clustergate.links.matrix.Analysis`."""
    out = FabricFaults()
    for v in analysis.verdicts:
        fault = getattr(v, 'fault', None)
        subject = tuple(getattr(v, 'subject', None) or v.nodes)
        if v.kind == 'node':
            out.nodes.append(subject[0])
        elif v.kind == 'miscabled' and fault is not None:
            out.miscabled[fault.subject] = fault.leaf
        elif v.kind == 'uplink' and fault is not None:
            out.trunks += [tuple(x) for x in fault.links]
        elif v.kind == 'link':
            pairs = list(getattr(v, 'pairs', None) or [subject])
            out.pairs += [tuple(p) for p in pairs]
            out.pairs += [(d, s) for s, d in pairs]
    return out


def refs_of(cands: Sequence[str], refs: Sequence[str], faults: FabricFaults,
            topo=None, limit: Optional[int] = None) -> Dict[str, List[str]]:
    """Per candidate, the references (in ``refs``' order) whose pairs with
    it, both ways, cross nothing the fabric's verdict named (the first
    ``limit`` of them; None: all)."""
    routed = faults.routed(topo)
    out = {}
    for c in cands:
        out[c] = []
        for r in refs:
            if limit is not None and len(out[c]) >= limit:
                break
            if faults.clear(routed, c, r) and \
                    faults.clear(routed, r, c):
                out[c].append(r)
    return out


@dataclass
class Plan:
    """The pairs of one retest round (each measured alone): per candidate
    its partners and the control pairs among them."""

    partners: Dict[str, List[str]]
    controls: Dict[str, List[Pair]]
    pairs: List[Pair]


def _cycle(use):
    if len(use) == 2:
        return [(use[0], use[1]), (use[1], use[0])]
    return [(use[i], use[(i + 1) % len(use)]) for i in range(len(use))]


def plan(cands: Sequence[str], refs, max_partners: int = MAX_PARTNERS,
         directions: Optional[Mapping[str, Sequence[str]]] = None
         ) -> Optional[Plan]:
    """Each candidate with up to ``max_partners`` references (``refs``: one
    list for all, or ``{candidate: list}``), both ways (``directions``:
    ``{candidate: the directions still open}``; a direction decided is not
    measured again); controls: a cycle through its partners. A candidate
    with fewer than 2 references (no control level) is left out; None: no
    candidate left."""
    partners, controls = {}, {}
    for c in cands:
        use = list((refs.get(c, []) if isinstance(refs, Mapping) else
                    refs)[:max_partners])
        if len(use) >= 2:
            partners[c], controls[c] = use, _cycle(use)
    if not partners:
        return None
    every = list(dict.fromkeys(p for c in partners for p in controls[c]))
    # controls first and last: the level around the candidates' pairs
    half = len(every) // 2
    pairs = every[:half]
    for c, use in partners.items():
        dirs = DIRECTIONS if directions is None else directions.get(
            c, DIRECTIONS)
        for p in use:
            pairs += [pr for dr, pr in (('sent', (c, p)), ('recv', (p, c)))
                      if dr in dirs]
    return Plan(partners, controls, pairs + every[half:])
