"""Adaptive retest of suspect and borderline node links, inside the job
that measured the link matrix (in the manner of NVIDIA ClusterKit:
measure again, alone, in smaller groups, until it is clear).

One full matrix is one sample: a node link's figure in it rests on 2-3
flows (on the 9-node tree) that ran beside other flows. Every node link
that the first round names -- by the per-link verdict or, a gross fault,
by the fabric's (``suspect node``) -- and every *borderline* one (beyond
half of both naming bounds of :mod:`clustergate.links.judge`: with a
baseline at most 0.975x of it and 2.5 MADs below, without one at most
0.925x of its peers and 2.5 of the run's MADs below) is measured again,
with partners whose pairs cross nothing else the fabric's verdict named
(a cut trunk, a slow pair, a miscabled node's real leaf):

* **alone**: the candidate node's flows to and from healthy *partners*
  (nodes the first round found typical), one pair at a time with nothing
  else on the fabric (``cg_linkmatrix --pairs``), together with *control*
  pairs among the partners, in the same launch. A round's figure of the
  node, per direction, is the median of its pairs over the median of the
  controls (each pair at its fastest trial);
* **in halving groups**: to tell the node's own link from a partner's,
  its figure is taken against each half of its partners, and a half it is
  slow against is halved again down to single partners. Slow against
  both halves: its own link. Slow against one partner only: that pair
  (the partner's link or the route), not the node.

Rounds repeat, only for the candidates and the directions not yet
decided (a direction found healthy is not measured again: later rounds are
shorter), until each decision is clear or the time budget runs out. When
the rounds the candidates still need do not fit what is left of the
budget, at the pace of the launches so far (a loaded machine makes every
launch slow), a round measures only the strongest of them: named before
borderline, the lowest first-round figure first. Per direction, after at
least ``MIN_RETESTS`` rounds, a one-sided t-test of the round figures
against the naming ratio (``RATIO``, 0.95; the standard deviation floored
at ``SD_FLOOR``: three identical rounds are not infinitely sure):

* **slow** when their mean is below the slow level with p < ``ALPHA``
  (0.01): the borderline bound of its per-link baseline
  (:func:`baseline_levels`), without one halfway from its partners' level
  to the ratio (:func:`no_baseline_level`, 0.975x: a 95 % link alone sits
  at the ratio itself);
* **healthy** when it is above the ratio with p < ``ALPHA``;
* otherwise another round; at the budget: **inconclusive**.

**Many node links.** Above ``CALIBRATED_LINKS`` node links tested by the
first round, a slow decision needs p < :func:`family_alpha` (Bonferroni
over the links tested) and an undecided borderline link leans to a loss
only beyond :func:`health_se`: each link tested is one more chance to
name a healthy one, and the first round lets a few through at any size.

**Explained, not named.** A *borderline* node link that the budget
left undecided, on a fabric where the verdict names a fault or the retest
confirmed one (a cut trunk, a miscabled node, another node link), is not
named when alone it leans healthy in every direction (above the ratio at
p < ``EXPLAINED_ALPHA``, 0.1, and nearer its partners' level than the
ratio): its first round's hint is what those faults disturbed (the fault
campaign's three innocents, each 0.98-1.00x alone). On a fabric with no
confirmed fault it stays undecided and the run fails, unless alone it
does not lean to a loss (:func:`unresolved`: the median of its rounds
above the ratio, or no round fitted): then it is within the retest's
noise, a warning that does not fail the run (a fresh site without a
per-link baseline, on a loaded node).

A first round's verdict therefore never stands on one round: a named node
link the retests clear is not a fault (a noisy round, or a figure a fault
elsewhere distorted), a borderline one they confirm is (a 10 % loss the
peers-only bound would miss), and a named one the budget left open, a
borderline one leaning to a loss, or one that could not be retested,
fails saying so: the gate does not pass what it could
not check. The launches stop at the budget (one still running is
killed). The rounds' figures are never averaged with the first round's.

The driver (``python -m clustergate.links.retest``) runs in the job script
after the matrix, with the launch line of the job; it is started beside
the matrix (``--after``: its interpreter and imports, 0.2-0.4 s on a
loaded node, then wait for the matrix's exit status) so that a healthy
job ends one analysis after its matrix (see
:class:`clustergate.rfm.families.linkmatrix.LinkMatrixTest`); the decision logic
(:func:`candidates`, :func:`plan`, :func:`decide`) is pure.
"""

import argparse
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from clustergate.parsers import cgoutput
from clustergate.links import judge as linkjudge
from clustergate.links import matrix as linkmatrix
from clustergate.links import stats as linkstats

#: the naming ratio of a retest figure (x of the control pairs, alone)
RATIO = linkjudge.RATIO
#: a decision needs p below this (one-sided t-test)
ALPHA = 0.01
#: rounds before any decision: one noisy round never decides
MIN_RETESTS = 3
#: the standard deviation of the round figures counts at least this much
SD_FLOOR = 0.01
#: partners per candidate (two halves of two)
MAX_PARTNERS = 4
#: seconds of retests per job (extras 'link_retest_budget_s', the check's
#: retest_budget)
BUDGET = 120.0
#: trials per retested pair (the first is dropped; the fastest counts)
TRIALS = 4
#: a borderline node link the retest leaves undecided beside confirmed
#: faults is not named when alone it leans healthy at this p (see
#: :func:`explain`)
EXPLAINED_ALPHA = 0.1
#: node links of the fabrics ALPHA and HEALTH_SE were set on (the
#: emulated trees, 9 to 24 nodes): up to this many node links tested they
#: apply as they are; above, each is corrected for how many were tested
#: (:func:`family_alpha`, :func:`health_se`)
CALIBRATED_LINKS = 32

DIRECTIONS = ('sent', 'recv')
#: the retest's statuses that are not named (logged)
CLEARED = ('healthy', 'explained')
#: how a note of :func:`apply` that the check logs as a warning starts
WARNING = 'WARNING: '
Pair = Tuple[str, str]

#: what a later run of a case whose failing verdict the retest decided
#: says (it fails before its job: :class:`clustergate.rfm.families.linkmatrix.
#: DecidedVerdict`)
DECIDED = 'decided by the link retest in an earlier run of this session'

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


def _halfway(bound):
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
        return j.ratio <= _halfway(bound) and j.z <= -b.z / 2
    bound = b.peer_ratio if j.direction == 'both' else \
        b.peer_ratio * b.direction_ratio / b.ratio
    if j.figure <= _halfway(bound) and j.peer_z <= -b.peer_z / 2:
        return True
    # a node link clearly below the run's spread is borderline once it is
    # halfway to a baseline's ratio bound (a 10 % loss at 1024 nodes, 0.93x
    # of its peers, was above 0.925x but 9 MADs below; in a tight run a 5 %
    # loss on 9 nodes, 0.95x, 4 MADs below): alone, the retest tells a
    # loss from a healthy link the first round's noise put there
    near = b.ratio if j.direction == 'both' else b.direction_ratio
    tight = j.spread is not None and j.spread <= TIGHT_SPREAD
    return j.figure <= _halfway(near) and j.peer_z <= -(
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
    #: slow, from its per-link baseline (:func:`baseline_levels`); a
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


# -- statistics ------------------------------------------------------------

def _t_sf(t, df):
    """P(T > t) of Student's t with ``df`` (a whole number, at least 1)
    degrees of freedom, in closed form (Abramowitz and Stegun 26.7.3-4):
    no scipy import in the job, which took seconds on a loaded node,
    inside the retest's budget."""
    df = int(df)
    if df < 1:
        raise ValueError(f'degrees of freedom must be >= 1, got {df}')
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, sin, cos = math.cos(theta) ** 2, math.sin(theta), math.cos(theta)
    if df % 2:          # odd: 2/pi (theta + sin cos (1 + 2/3 c2 + ...))
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inside = 2 / math.pi * (theta + sin * cos * total)
    else:               # even: sin (1 + c2 / 2 + 1*3 c2^2 / (2*4) + ...)
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        inside = sin * total
    tail = max(0.0, (1 - inside) / 2)     # P(T > |t|)
    return tail if t >= 0 else 1 - tail


def baseline_levels(node: str, stats: Optional[Mapping], b: Bounds,
                    ratio: float = RATIO) -> Tuple[Dict[str, float], str]:
    """Per direction, the level below which ``node``'s retest rounds say
    slow, from its per-link baseline (``stats``: ``{metric: LinkStat}``):
    the first round's borderline bound of that baseline (its median, at
    most 1, x halfway to the naming ratio, or half the naming MADs below
    it, whichever is lower), never below ``ratio``: a link whose healthy
    runs are tight is told from its own level, not only from the fixed
    ratio (a 95 % link alone sits at the ratio itself). Returns
    ``(levels, basis)``; no baseline: ``({}, '')``."""
    levels, used = {}, []
    for dr in DIRECTIONS:
        st = (stats or {}).get(linkstats.metric_names(node, dr)[1])
        if st is None or not st.median:
            continue
        # alone, a healthy link is at its partners' level (1): a baseline
        # above it (a link its peers' flows held back) does not raise it
        h = min(st.median, 1.0)
        level = min(h * _halfway(b.ratio), h - b.z / 2 * st.mad)
        levels[dr] = max(ratio, level)
        used.append(f'{dr} {st.median:.3f} +- {st.mad:.3f}, {st.runs} runs')
    if not levels:
        return {}, ''
    return levels, 'per-link baseline (' + '; '.join(used) + ')'


def family_share(links: int) -> float:
    """The share of a retest's error rates that each candidate may spend
    on a fabric whose first round tested ``links`` node links: 1 up to
    :data:`CALIBRATED_LINKS`, then ``CALIBRATED_LINKS / links``
    (Bonferroni over the node links tested). The first round lets through
    the links furthest below their peers, a few per run at any size; each
    is one more chance for the retest to name a healthy link, and at 1,024
    nodes (sigma 0.15, no per-link baseline) ALPHA per look and direction,
    and HEALTH_SE per direction, named one in 30 healthy candidates: 12 of
    100 healthy fabrics red. ``links`` 0: not known, no correction."""
    if links <= CALIBRATED_LINKS:
        return 1.0
    return CALIBRATED_LINKS / links


def family_alpha(links: int, alpha: float = ALPHA) -> float:
    """The p a retest's slow decision needs on a fabric whose first round
    tested ``links`` node links: ``alpha`` x :func:`family_share` (0.01
    up to 32 node links, 0.0003 at 1,024)."""
    return alpha * family_share(links)


def health_se(links: int, retests: int = 0) -> float:
    """Standard errors below its partners' level at which a borderline
    link's undecided retests lean to a loss (:func:`unresolved`), on a
    fabric whose first round tested ``links`` node links: up to
    :data:`CALIBRATED_LINKS`, :data:`HEALTH_SE`; above, where its
    one-sided tail (2.3 %) x :func:`family_share`, shared among the looks
    the retest took at the series (one per round from ``MIN_RETESTS`` on:
    it measured a link while it did not clear, so the series that reach
    the budget are the low ones), lies on Student's t of ``retests - 1``
    degrees of freedom (the standard error is the rounds' own). Seen at
    1,024 nodes, sigma 0.15: healthy links 3.4 standard errors low over 12
    retests, 4.1 over 29. Without ``retests``: the normal's (3.2 at
    1,024)."""
    share = family_share(links)
    if share >= 1.0:
        return HEALTH_SE
    tail = statistics.NormalDist().cdf(-HEALTH_SE) * share
    if retests < 2:
        return -statistics.NormalDist().inv_cdf(tail)
    looks = max(1, retests - MIN_RETESTS + 1)
    return _t_isf(tail / looks, retests - 1)


def _t_isf(p: float, df: int) -> float:
    """The t with P(T > t) = ``p`` (0 < p < 0.5), by bisection of
    :func:`_t_sf`."""
    lo, hi = 0.0, 1e4
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_sf(mid, df) > p else (lo, mid)
    return (lo + hi) / 2


def links_tested(figures: Mapping) -> int:
    """How many node links a first round's ``figures`` (``{(node,
    direction): NodeFigure}``) tested: the family of
    :func:`family_share`."""
    return len({node for node, _ in figures})


def no_baseline_level(ratio: float = RATIO) -> float:
    """The level below which a direction without a per-link baseline is
    slow alone: halfway from its partners' level (alone a healthy link
    measures 1x of the control pairs among them) to the naming ratio. A
    link at 95 % alone sits at the ratio itself, which a test against the
    ratio cannot decide in any budget (the fault campaign's two 95 % links:
    12-14 rounds at 0.95x, undecided); against the halfway level it is
    slow in 3-5 rounds, and a healthy link (0.99-1.02x alone) is not."""
    return _halfway(ratio)


@dataclass
class Series:
    """One direction of one candidate over the retest rounds; ``level``:
    the level it is slow below (default: ``ratio``)."""

    values: List[float]
    ratio: float
    level: Optional[float] = None

    @property
    def slow_level(self):
        return no_baseline_level(self.ratio) if self.level is None \
            else self.level

    @property
    def n(self):
        return len(self.values)

    @property
    def mean(self):
        return statistics.fmean(self.values) if self.values else math.nan

    def sd(self):
        s = statistics.stdev(self.values) if self.n > 1 else 0.0
        return max(s, SD_FLOOR)

    def t(self):
        return (self.mean - self.ratio) / (self.sd() / math.sqrt(self.n))

    def p_slow(self):
        """p of 'not below the slow level' (small: clearly below)."""
        if self.n < 2:
            return 1.0
        t = (self.mean - self.slow_level) / (self.sd() / math.sqrt(self.n))
        return _t_sf(-t, self.n - 1)

    def p_healthy(self):
        """p of 'not above the ratio' (small: clearly above)."""
        return _t_sf(self.t(), self.n - 1) if self.n > 1 else 1.0

    def below(self):
        return sum(v <= self.slow_level for v in self.values)

    def state(self, alpha=ALPHA, min_retests=MIN_RETESTS, slow_alpha=None):
        """``slow``, ``healthy`` or ``open``; ``slow_alpha``: the p a slow
        decision needs (default ``alpha``; :func:`family_alpha` on a
        large fabric: clearing a link is not corrected, it names none)."""
        if self.n < min_retests:
            return 'open'
        if self.p_slow() < (alpha if slow_alpha is None else slow_alpha):
            return 'slow'
        if self.p_healthy() < alpha:
            return 'healthy'
        return 'open'


def _control_level(rnd: Mapping[Pair, float], controls) -> Optional[float]:
    vals = [rnd[p] for p in controls if rnd.get(p)]
    return statistics.median(vals) if vals else None


def _pairs(node, partners, direction):
    return [(node, p) if direction == 'sent' else (p, node)
            for p in partners]


def series(rounds: Sequence[Mapping[Pair, float]], node, partners,
           controls, direction, ratio=RATIO, slow=None) -> Series:
    """The node's round figures against ``partners`` in ``direction``:
    median of its pairs over the median of the controls, per round;
    ``slow``: the level it is slow below (default ``ratio``)."""
    out = []
    for rnd in rounds:
        level = _control_level(rnd, controls)
        vals = [rnd[p] for p in _pairs(node, partners, direction)
                if rnd.get(p)]
        if level and vals:
            out.append(statistics.median(vals) / level)
    return Series(out, ratio, slow)


def _blame(rounds, node, parts, controls, direction, ratio, alpha,
           min_retests, slow_alpha=None):
    """The partners the node is clearly slow with, by halving ``parts``:
    a group it is slow against is halved again, down to single partners
    (a half that hides one slow partner behind a healthy one is taken
    whole)."""
    s = series(rounds, node, parts, controls, direction, ratio)
    if s.state(alpha, min_retests, slow_alpha) != 'slow':
        return []
    if len(parts) == 1:
        return list(parts)
    half = len(parts) // 2
    found = [p for h in (parts[:half], parts[half:])
             for p in _blame(rounds, node, h, controls, direction, ratio,
                             alpha, min_retests, slow_alpha)]
    return found or list(parts)


def _halves(parts):
    half = len(parts) // 2
    return [h for h in (parts[:half], parts[half:]) if h]


@dataclass
class Decision:
    """A candidate's retest verdict."""

    node: str
    why: str
    status: str         # slow, partner, healthy, inconclusive, untested,
    #                     explained (see :func:`explain`), unresolved
    #                     (see :func:`unresolved`)
    first: str = ''
    retests: int = 0
    directions: Dict[str, Dict] = field(default_factory=dict)
    blamed: List[str] = field(default_factory=list)
    direction: str = ''     # the slow one (slow/partner), else ''
    text: str = ''


def _describe(node, direction, s: Series, against='its partners'):
    label = {'sent': 'sent', 'recv': 'received'}[direction]
    return (f'{label} {s.mean:.2f}x {against} alone, {s.below()} of {s.n} '
            f'retests at or below {s.slow_level:.3g}x')


def _retest_basis(cand: Candidate, direction: str) -> str:
    """What its rounds in ``direction`` were judged against."""
    if direction in cand.levels:
        return (f'below {cand.levels[direction]:.3g}x, the borderline '
                f'bound of its {cand.basis}')
    return (f'below {no_baseline_level():.3g}x, halfway from its partners\' '
            f'level to the naming ratio {RATIO:g}x (no per-link baseline)')


def _p(p):
    return 'p < 0.001' if p < 0.001 else f'p = {p:.3f}'


# long: the verdict of one candidate: slow (own link or a partner's),
# healthy, or still open, each with its confidence
def decide(rounds: Sequence[Mapping[Pair, float]], cand: Candidate,
           the_plan: Plan, ratio=RATIO, alpha=ALPHA,
           min_retests=MIN_RETESTS, final=False, slow_alpha=None
           ) -> Decision:
    """The candidate's decision from the retest rounds so far; ``final``:
    the budget is spent (open becomes inconclusive); ``slow_alpha``: the
    p a slow decision needs (default ``alpha``, see :meth:`Series.state`).
    """
    node = cand.node
    parts = the_plan.partners.get(node, [])
    controls = the_plan.controls.get(node, [])
    d = Decision(node, cand.why, 'open', cand.first)
    per = {dr: series(rounds, node, parts, controls, dr, ratio,
                      cand.levels.get(dr)) for dr in DIRECTIONS}
    d.retests = max(s.n for s in per.values())
    d.directions = {dr: {'values': [round(v, 4) for v in s.values],
                         'mean': round(s.mean, 4) if s.n else None,
                         'p_slow': s.p_slow(), 'p_healthy': s.p_healthy(),
                         'state': s.state(alpha, min_retests, slow_alpha)}
                    for dr, s in per.items()}
    states = {dr: s.state(alpha, min_retests, slow_alpha)
              for dr, s in per.items()}
    slow = [dr for dr in DIRECTIONS if states[dr] == 'slow']
    if slow:
        dr = min(slow, key=lambda x: per[x].mean)
        s = per[dr]
        d.direction = dr
        conf = f'({_p(s.p_slow())}, {s.n} retests)'
        halves = [series(rounds, node, h, controls, dr, ratio)
                  for h in _halves(parts)]
        if len(halves) < 2 or all(h.mean <= s.slow_level for h in halves):
            d.status = 'slow'
            d.text = (f'retest: {_describe(node, dr, s)} {conf}; slow '
                      f'against both halves of its partners '
                      f'({", ".join(parts)}): its own link '
                      f'[retest basis: {_retest_basis(cand, dr)}]')
            return d
    if slow or all(states[dr] == 'healthy' for dr in DIRECTIONS):
        # its own link is not slow: is it slow with some of its partners?
        for dr in (slow or DIRECTIONS):
            blamed = [p for h in _halves(parts) for p in _blame(
                rounds, node, h, controls, dr, ratio, alpha, min_retests,
                slow_alpha)]
            if blamed:
                s = series(rounds, node, blamed, controls, dr, ratio)
                d.status, d.direction, d.blamed = 'partner', dr, blamed
                with_ = 'with ' + ', '.join(blamed)
                d.text = (f'retest: {_describe(node, dr, s, with_)} '
                          f'({_p(s.p_slow())}), {per[dr].mean:.2f}x with all '
                          f'its partners ({", ".join(parts)}): that pair, '
                          f'not {node}\'s own link')
                return d

    if all(states[dr] == 'healthy' for dr in DIRECTIONS):
        p = max(per[dr].p_healthy() for dr in DIRECTIONS)
        d.status = 'healthy'
        d.text = ('cleared by retest: ' + ', '.join(
            f'{"sent" if dr == "sent" else "received"} {per[dr].mean:.2f}x'
            for dr in DIRECTIONS) + f' its partners alone, above '
            f'{ratio:g}x ({_p(p)}, {d.retests} retests)')
        return d

    if final:
        d.status = 'inconclusive'
        worst = min(DIRECTIONS, key=lambda x: per[x].mean
                    if per[x].n else math.inf)
        s = per[worst]
        d.text = ('retest inconclusive after the time budget: ' +
                  (f'{_describe(node, worst, s)} (below: {_p(s.p_slow())}, '
                   f'above: {_p(s.p_healthy())}) [retest basis: '
                   f'{_retest_basis(cand, worst)}]' if s.n else
                   'no retest round fitted in it'))
    return d


# -- the driver (in the job) -----------------------------------------------

@dataclass
class FirstRound:
    """The job's matrix judged as the check judges it (no retest)."""

    matrix: object
    figures: Dict
    verdict: linkjudge.LinkVerdict      # each node link
    lines: List[str]                       # the fabric's verdict
    named: List[str]                       # nodes those lines name
    faults: FabricFaults
    topo: object = None                    # the declared tree, or None

    def __iter__(self):
        # unpacks as the tuple it was: matrix, figures, verdict, lines,
        # named
        return iter((self.matrix, self.figures, self.verdict, self.lines,
                     self.named))


def first_round(text: str, inputs: Mapping) -> FirstRound:
    """The first round of the job's output ``text`` with the check's
    ``inputs`` (fabric, bounds, baseline, declared tree)."""
    from clustergate.links import topology

    run = cgoutput.parse(text)
    matrix = linkmatrix.from_measurements(run.measurements)
    fabric = inputs.get('fabric', '?')
    topo = topology_from_json(inputs.get('topology'))
    fit = None
    if topo is None:
        analysis = linkmatrix.analyse(matrix, inputs.get(
            'fraction', linkmatrix.DEFAULT_FRACTION), fabric)
    else:
        analysis = topology.diagnose(
            topo, topology.rounds_from_measurements(run.measurements),
            fabric)
        # the node links are judged on this fit: made once, not again
        # for each judgement of the node figures
        fit = linkstats.fit_of(topo, analysis)
    lines = analysis.messages()
    stats = {m: linkjudge.LinkStat(*v)
             for m, v in (inputs.get('stats') or {}).items()} or None
    b = Bounds(**inputs.get('bounds', {}))
    figures, verdict, named = node_links(matrix, run, topo, lines, stats,
                                         fabric, b, fit=fit)
    return FirstRound(matrix, figures, verdict, lines, named,
                      fabric_faults(analysis), topo)


def topology_to_json(topo) -> Optional[Dict]:
    """The declared tree as the check resolved it, for the driver (which
    then needs neither scontrol nor the site's file on the node)."""
    if topo is None:
        return None
    return {'leaf_of': topo.leaf_of, 'parent': topo.parent,
            'node_rate': topo.node_rate, 'uplink_rate': topo.uplink_rate,
            'link_rate': [[list(k), v] for k, v in topo.link_rate.items()],
            'source': topo.source, 'dragonfly': topo.dragonfly}


def topology_from_json(data):
    """The inverse of :func:`topology_to_json` (None: flat)."""
    if not data:
        return None
    from clustergate.links.topology import Topology
    return Topology(data['leaf_of'], data['parent'], data['node_rate'],
                    data['uplink_rate'],
                    {tuple(k): v for k, v in data['link_rate']},
                    data.get('source', ''), bool(data.get('dragonfly')))


def node_links(matrix, run, topo, lines, stats, fabric, b: Bounds,
               basis='', fit=None):
    """Each node link judged against its baseline and peers, twice: the
    second time without the slow nodes' flows in their partners' figures
    (a node link at 90 % pulled a partner to 0.95). Returns ``(figures,
    verdict, named)``; ``named``: the nodes the fabric's ``lines`` name."""
    named = sorted(named_nodes(lines) & set(matrix.nodes))

    def judged(figures):
        return linkjudge.judge(
            figures, stats, fabric, skip=named, ratio=b.ratio, z=b.z,
            peer_ratio=b.peer_ratio, peer_z=b.peer_z, basis=basis,
            direction_ratio=b.direction_ratio)

    figures = linkstats.figures(matrix, run, topo, fit=fit)
    verdict = judged(figures)
    slow = set(named) | {j.node for j in verdict.judgements if j.named}
    if slow:
        figures = linkstats.figures(matrix, run, topo, exclude=slow,
                                    fit=fit)
        verdict = judged(figures)
    return figures, verdict, named


def _complete(run, pairs: int) -> bool:
    """Whether a launch's output is whole: its CG_DONE line with no
    error, one measurement per pair and no CG_ERROR line."""
    done = run.done or {}
    return bool(done) and done.get('errors') == 0 and not run.errors and \
        len(run.measurements) == pairs


def _measure(launch: str, ranks: Mapping[str, int], pairs: Sequence[Pair],
             trials: int, log, timeout, notes=None):
    """One launch of ``cg_linkmatrix --pairs``: ``{pair: MB/s}``. A
    launch that exits non-zero fails, unless its output is whole
    (:func:`_complete`): then its figures stand and ``notes`` says so."""
    spec = ','.join(f'{ranks[s]}-{ranks[d]}' for s, d in pairs)
    # no cache flush between trials: 4 MB over a network link does not
    # care, and the ranks of a node share its cores with the flushes
    cmd = f'{launch} --pairs {spec} --trials {trials} --flush-bytes 64'
    # a session of its own: a launcher that hangs is killed whole
    proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise RuntimeError(f'retest launch killed after {timeout:.1f} s '
                           f'(the end of the budget)') from None
    log.write(f'# {cmd}\n{stdout}')
    run = cgoutput.parse(stdout)
    if proc.returncode != 0 and not _complete(run, len(pairs)):
        raise RuntimeError(f'retest launch exited {proc.returncode}: '
                           f'{(err.strip().splitlines() or [""])[-1]}')
    if proc.returncode != 0 and notes is not None:
        # every pair measured and checked (CG_DONE, no error), then the
        # step's teardown failed: srun "Force Terminated" (exit 143) after
        # MPICH's and OpenMPI's last line on the loaded 12-node site
        notes.append(f'retest launch exited {proc.returncode} after its '
                     f'last result (CG_DONE, {len(pairs)} pairs, no '
                     f'error): its figures kept: '
                     f'{(err.strip().splitlines() or [""])[-1]}')
    name = {r: n for n, r in ranks.items()}
    out = {}
    for m in run.measurements:
        bw = m.best_bandwidth()
        if m.pattern == 'linkmatrix' and bw:
            out[(name[int(m['src_rank'])], name[int(m['dst_rank'])])] = \
                float(bw)
    return out


def _untested(c: Candidate, why: str) -> Decision:
    return Decision(c.node, c.why, 'untested', c.first,
                    text=f'not retested: {why}')


def _setup(first: FirstRound, inputs: Mapping, result: Dict):
    """``(candidates, {candidate: partners}, decided)`` of a first round:
    candidates that no pair can measure cleanly are decided untested."""
    b = Bounds(**inputs.get('bounds', {}))
    cands = retest_candidates(first.lines, first.verdict, b)
    if not cands:
        result['notes'].append('no suspect or borderline node link')
        return [], {}, {}
    stats = {m: linkjudge.LinkStat(*v)
             for m, v in (inputs.get('stats') or {}).items()}
    for c in cands:
        c.levels, c.basis = baseline_levels(
            c.node, stats, b, float(inputs.get('ratio', RATIO)))
    gross = set(first.named) | set(first.faults.nodes) | \
        set(first.faults.miscabled)
    names = [c.node for c in cands]
    healthy = partners_of(first.matrix.nodes, first.figures,
                          gross | set(names))
    refs = refs_of(names, healthy, first.faults, first.topo)
    # behind a cut trunk a node may have fewer than 2 clean partners that
    # are not retested themselves: then its fellow candidates too (the
    # halving tells a slow partner from its own link)
    others = refs_of(names, partners_of(names, first.figures, gross),
                     first.faults, first.topo)
    for c in names:
        if len(refs[c]) < 2:
            refs[c] += [o for o in others[c] if o != c]
    decided = {}
    for c in cands:
        if len(refs[c.node]) < 2:
            decided[c.node] = _untested(
                c, f'fewer than 2 healthy partners whose pairs with it '
                   f'cross nothing the fabric verdict named '
                   f'({", ".join(refs[c.node]) or "none"})')
    return [c for c in cands if c.node not in decided], refs, decided


def _estimate(costs, n_pairs):
    """Seconds a launch of ``n_pairs`` pairs should take, from the
    launches so far (``costs``: ``(pairs, seconds)`` each): at the slowest
    per-pair pace seen (the load changes between rounds). 0: none yet."""
    return max((s * n_pairs / p for p, s in costs if p), default=0.0)


def _round_plan(open_, refs, dirs, costs, left, done=None):
    """The next round: the open candidates by :meth:`Candidate.priority`,
    as many as leave room, at the pace of the rounds so far, for the
    rounds they still need before a decision (``done``: ``{node: rounds
    so far}``; ``MIN_RETESTS`` at least), else as many as fit one round:
    a short budget decides the strongest first rounds rather than leave
    every candidate half measured. None: not even one fits."""
    order = sorted(open_.values(), key=Candidate.priority)
    done = done or {}
    plans = []
    for k in range(len(order), 0, -1):
        the_plan = plan([c.node for c in order[:k]], refs, directions=dirs)
        if the_plan is None:
            continue
        need = max(max(MIN_RETESTS - done.get(c.node, 0), 1)
                   for c in order[:k])
        cost = _estimate(costs, len(the_plan.pairs))
        if cost * need <= left:
            return the_plan
        plans.append((cost, the_plan))
    return next((p for cost, p in plans if cost <= left and left > 0), None)


def retest(text: str, inputs: Mapping, launch: str, budget: float,
           trials: int = TRIALS, log=None, clock=time.monotonic) -> Dict:
    """Retest the job's candidates; the result as written to the JSON file
    the check reads (``decisions``: one per candidate). Every node link
    the first round names is retested, gross or not, with partners whose
    pairs cross nothing else the fabric's verdict named (see
    :func:`adaptive`); the launches stop at ``budget`` seconds (a launch
    still running then is killed)."""
    result = {'budget_s': budget, 'rounds': 0, 'elapsed_s': 0.0,
              'decisions': [], 'notes': []}
    t_first = clock()
    first = first_round(text, inputs)
    cands, refs, decided = _setup(first, inputs, result)
    ranks = {}
    log = log or open(os.devnull, 'w')

    def measure(the_plan, timeout):
        # the ranks of the nodes, at the first launch only: a healthy
        # job's output is parsed once, on its critical path
        ranks.update(ranks or {n: r for r, n in linkmatrix.labels(
            cgoutput.parse(text).measurements).items()})
        return _measure(launch, ranks, the_plan.pairs, trials, log,
                        timeout=timeout, notes=result['notes'])

    # the budget is the retests' (the first round's analysis is apart)
    start = clock()
    result['analysis_s'] = round(start - t_first, 1)
    ratio = float(inputs.get('ratio', RATIO))
    links = links_tested(first.figures)
    result['links'] = links
    decided.update(adaptive(cands, refs, measure, budget, clock, ratio,
                            float(inputs.get('alpha', ALPHA)), result,
                            links))
    explain(decided, cands, confirmed_faults(first.lines, decided), ratio)
    unresolved(decided, cands, ratio, links)
    result['elapsed_s'] = round(clock() - start, 1)
    result['decisions'] = [asdict(decided[n]) for n in sorted(decided)]
    return result


def adaptive(cands: Sequence[Candidate], refs: Mapping[str, List[str]],
             measure, budget: float, clock=time.monotonic, ratio=RATIO,
             alpha=ALPHA, result: Optional[Dict] = None, links: int = 0
             ) -> Dict[str, 'Decision']:
    """The retest rounds of ``cands`` (each with its ``refs``, the
    partners to pair it with), until each is decided or ``budget``
    seconds of ``clock`` are spent: each round measures the open
    candidates (:func:`_round_plan`: named first, the strongest first
    round first, when not all fit) in their open directions;
    ``measure(plan, timeout)`` returns ``{pair: MB/s}`` of one launch, or
    raises RuntimeError (killed, failed: the rounds stop, noted in
    ``result``). Returns ``{node: Decision}``; ``result['rounds']``: how
    many rounds ran. ``links``: the node links the first round tested; a
    slow decision needs p < :func:`family_alpha` of them (``alpha`` up to
    :data:`CALIBRATED_LINKS`; ``result['slow_alpha']``), clearing p <
    ``alpha``."""
    result = {'notes': []} if result is None else result
    slow_alpha = family_alpha(links, alpha)
    result['slow_alpha'] = slow_alpha
    start = clock()
    rounds: List[Dict[Pair, float]] = []
    whole = plan([c.node for c in cands], refs)
    open_ = {c.node: c for c in cands}
    dirs = {c.node: DIRECTIONS for c in cands}
    costs: List[Tuple[int, float]] = []
    decided: Dict[str, Decision] = {}
    while open_:
        left = budget - (clock() - start)
        the_plan = _round_plan(open_, refs, dirs, costs, left, {
            n: len(rounds_of(rounds, n)) for n in open_})
        if the_plan is None:
            break
        t0 = clock()
        try:
            rounds.append(measure(the_plan, left))
        except (RuntimeError, subprocess.SubprocessError, OSError) as err:
            result['notes'].append(str(err))
            break
        costs.append((len(the_plan.pairs), clock() - t0))
        for node in sorted(the_plan.partners):
            d = decide(rounds_of(rounds, node), open_[node], whole, ratio,
                       alpha, slow_alpha=slow_alpha)
            if d.status != 'open':
                decided[node] = d
                del open_[node]
            else:       # a direction decided healthy is not measured again
                dirs[node] = tuple(dr for dr in DIRECTIONS if
                                   d.directions[dr]['state'] != 'healthy')
    for node, c in open_.items():
        decided[node] = decide(rounds_of(rounds, node), c, whole, ratio,
                               alpha, final=True, slow_alpha=slow_alpha)
    result['rounds'] = len(rounds)
    # each launch's seconds: where a budget went on a loaded machine
    result['launch_s'] = [round(sec, 2) for _, sec in costs]
    return decided


def confirmed_faults(lines: Sequence[str],
                     decided: Mapping[str, 'Decision']) -> List[str]:
    """What the fabric's verdict ``lines`` name besides node links (a cut
    trunk, a miscabled node, a slow pair) and the node links and pairs the
    retest confirmed slow, each in a few words."""
    out = [ln.split(':', 1)[0] for ln in lines if node_link_of(ln) is None]
    for node, d in sorted(decided.items()):
        if d.status == 'slow':
            out.append(f'node link {node}')
        elif d.status == 'partner':
            out.append(f'link {node} with {", ".join(d.blamed)}')
    return out


def _leaning(d: 'Decision', ratio: float, alpha: float) -> bool:
    """Whether every direction of ``d`` had its retests, is above the
    naming ratio at p < ``alpha`` and nearer to its partners than to the
    ratio (a link at the ratio, a 95 % one, is not explained away)."""
    return all(len(x['values']) >= MIN_RETESTS and x['p_healthy'] < alpha
               and x['mean'] >= (1 + ratio) / 2
               for x in d.directions.values())


def explain(decided: Dict[str, 'Decision'], cands: Sequence[Candidate],
            faults: Sequence[str], ratio: float = RATIO,
            alpha: float = EXPLAINED_ALPHA):
    """The rule for a *borderline* node link (not named by its first round
    on its own) that the retest left undecided at the end of its budget,
    beside faults the fabric's verdict names or the retest confirmed: when
    alone it leans healthy in every direction (above the naming ratio at
    p < ``alpha``, a weaker bar than a decision's), its first round's hint
    is what those faults disturbed: status ``explained``, not named (the
    check logs it). Its mean must also be nearer to its partners' level
    than to the ratio: a link at the ratio stays undecided. On a fabric
    with no confirmed fault, or leaning slow, it stays undecided and the
    run fails saying so. ``faults``: :func:`confirmed_faults`."""
    if not faults:
        return
    for c in cands:
        d = decided.get(c.node)
        if c.why != 'borderline' or d is None or \
                d.status != 'inconclusive' or not _leaning(d, ratio, alpha):
            continue
        d.status = 'explained'
        alone = ', '.join(
            f'{"sent" if dr == "sent" else "received"} {x["mean"]:.2f}x '
            f'({_p(x["p_healthy"])})' for dr, x in d.directions.items())
        d.text = (f'not named: borderline in its first round beside what '
                  f'the fabric verdict and the retest confirmed '
                  f'({"; ".join(faults)}); alone it leans healthy, '
                  f'undecided within the time budget: {alone} its partners '
                  f'alone, above {ratio:g}x, {d.retests} retests')


#: the retest's status of a borderline node link left open that does not
#: lean to a loss (see :func:`unresolved`): a warning, not a verdict line
UNRESOLVED = 'unresolved'


def _standard_error(values: Sequence[float]) -> float:
    """The standard error of the mean of ``values`` (their SD floored at
    ``SD_FLOOR``; one value: the floor)."""
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return max(sd, SD_FLOOR) / math.sqrt(len(values))


#: standard errors of the retest's mean below its partners' level (1.0x)
#: that a borderline link's rounds must fall to lean to a loss: at a
#: noise where the budget's rounds cannot tell a 5 % loss from health
#: (a simulated sigma of 0.15: 10 rounds, a standard error of 0.047) a
#: healthy link at 0.96x is a warning saying so, not a red night
HEALTH_SE = 2.0


def _leans_to_loss(values: Sequence[float], ratio: float,
                   links: int = 0) -> bool:
    """Whether a direction's retests lean to a loss: their median not
    clearly above the naming ratio (by the standard error of their mean)
    and health rejected (their mean more than :func:`health_se` standard
    errors below its partners' level: :data:`HEALTH_SE` up to
    :data:`CALIBRATED_LINKS` node links tested)."""
    if len(values) < MIN_RETESTS:
        # one or two rounds decide nothing (MIN_RETESTS), and with one
        # the spread is only the floor: a healthy link read at 0.94x in
        # the one round a failed launch left was red
        return False
    error = _standard_error(values)
    se = health_se(links, len(values))
    return statistics.median(values) <= ratio + error and \
        statistics.fmean(values) < 1.0 - se * error


def unresolved(decided: Dict[str, 'Decision'], cands: Sequence[Candidate],
               ratio: float = RATIO, links: int = 0):
    """The rule for a *borderline* node link (not named by its first
    round: within the naming bounds) that the budget left undecided and
    that :func:`explain` did not explain: when alone it does not lean to a
    loss at the naming ratio (the median of its rounds clearly above
    ``ratio``, by the standard error of their mean, in every direction
    measured, or no round fitted in the budget) it is
    within the retest's noise of the ratio: status ``unresolved``, a
    warning that does not fail the run (the first round did not name it,
    and nothing measured since does). A fresh site has no per-link
    baseline and a loaded node's rounds spread by +-4 %: a healthy link
    at 0.97x alone (5 of 12 rounds at or below 0.95x), or one beside a cut
    uplink whose retest got one round at 1.06x, must not fail the gate.
    One whose median is not clearly above the ratio stays undecided: the
    run fails saying so (the campaign's n8 at 95 %, alone 0.93-1.03x over
    9 rounds: medians 0.952 and 0.953, within one standard error, 0.010,
    of the ratio). ``links``: the node links the first round tested; on a
    fabric of more than :data:`CALIBRATED_LINKS` health is rejected at
    :func:`health_se` standard errors, not :data:`HEALTH_SE` (a healthy
    link at 0.92x alone over 12 retests at sigma 0.15, 3.4 standard errors
    below, is one of the thousand a 1,024-node fabric tested)."""
    for c in cands:
        d = decided.get(c.node)
        if c.why != 'borderline' or d is None or \
                d.status != 'inconclusive':
            continue
        medians = {dr: statistics.median(x['values'])
                   for dr, x in d.directions.items() if x['values']}
        errors = {dr: _standard_error(d.directions[dr]['values'])
                  for dr in medians}
        if any(_leans_to_loss(d.directions[dr]['values'], ratio, links)
               for dr in medians):
            continue
        d.status = UNRESOLVED
        # what its lowest direction tells, in the words of that one
        low = min(medians, key=medians.get, default=None)
        se = health_se(links, len(d.directions[low]['values'])) \
            if low else health_se(links)
        alone = ', '.join(
            f'{"sent" if dr == "sent" else "received"} median {m:.2f}x '
            f'of {len(d.directions[dr]["values"])}'
            for dr, m in sorted(medians.items())) or 'no round'
        d.text = (f'not named: borderline in its first round, undecided '
                  f'within the time budget, alone it does not lean to a '
                  f'loss ({alone} retests, above the naming ratio '
                  f'{ratio:g}x or within {se:.2g} standard errors '
                  f'of its partners\' level: a loss under '
                  f'{se * errors.get(low, SD_FLOOR):.0%}'
                  f' is not told from health at this noise; {d.text}): '
                  f'within the retest\'s noise; a '
                  f'per-link baseline (clustergate baseline --links) or a '
                  f'longer retest budget decides it')


def rounds_of(rounds, node):
    """The rounds that measured ``node`` (a node decided early is not
    measured any more)."""
    return [r for r in rounds if any(node in p for p in r)]


#: what a first-round line stands on, when it does not say it
FABRIC_BASIS = {True: 'fabric model', False: 'matrix median'}
_FABRIC_LINE = re.compile(r'^(?:suspect node|suspect link|uplink|'
                          r'miscabled node) \S+ on fabric ')


def with_basis(line: str, tree: bool) -> str:
    """``line`` saying which basis judged it: the per-link verdict's lines
    say it already (its baseline, or its peers only); the fabric's are
    judged against the fitted fabric model on a tree, the matrix median
    when flat."""
    if '[basis: ' in line or not _FABRIC_LINE.match(line):
        return line         # a subclass's own verdict: its own words
    return f'{line} [basis: {FABRIC_BASIS[bool(tree)]}]'


# long: one branch per retest outcome of a named line, then of a
# borderline candidate, each saying what became of it
def apply(lines: List[str], result: Optional[Mapping], fabric: str,
          cands: Optional[Sequence[Candidate]], tree: bool = False
          ) -> Tuple[List[str], List[str]]:
    """The verdict lines after the retest, and the notes to log.

    ``lines``: the first round's lines (the fabric's and the per-link
    verdict's); ``result``: the driver's result (None: none was written);
    ``cands``: what the retest had to decide (:func:`retest_candidates`;
    None: no retest, its budget is 0). A named node link the retest
    cleared is dropped (logged); a confirmed one keeps its line with the
    retest's confidence; one the retest could not decide (inconclusive
    within the budget, or not retested) keeps its line saying why: the
    gate does not pass what it could not check. A borderline one becomes a
    line when confirmed or undecided (not when :func:`explain` explained
    it: logged; not when :func:`unresolved` found it within the retest's
    noise: a note starting with ``WARNING``)."""
    out = [with_basis(ln, tree) for ln in lines]
    if cands is None:
        return out, ['no retest (its budget is 0): named node links stand '
                     'on the first round']
    by_node = {d['node']: d for d in (result or {}).get('decisions', [])}
    notes = list((result or {}).get('notes', []))
    why = '; '.join(notes) or ('no retest result' if result is None else
                               'no decision')
    lined = {node_link_of(ln) for ln in lines} - {None}
    final = []
    for ln in out:
        node = node_link_of(ln)
        d = by_node.get(node)
        if node is None or node not in {c.node for c in cands}:
            final.append(ln)
        elif d is None:
            final.append(f'{ln}; not retested: {why}')
        elif d['status'] in CLEARED:
            notes.append(f'{ln} -- {d["text"]}')
        elif d['status'] == 'partner':
            final.append(_partner_line(d, fabric))
        else:               # slow, inconclusive, untested
            final.append(f'{ln}; {d["text"]}')
    head = 'slow node link {} on fabric ' + fabric + ': '
    for c in cands:
        if c.node in lined:
            continue
        d = by_node.get(c.node) or {'status': 'missing', 'text':
                                     f'not retested: {why}'}
        if d['status'] == 'partner':
            final.append(_partner_line(d, fabric))
        elif d['status'] in CLEARED:
            notes.append(f'borderline node link {c.node} on fabric {fabric} '
                         f'({c.first}): {d["text"]}')
        elif d['status'] == UNRESOLVED:
            notes.append(f'{WARNING}undecided node link {c.node} on fabric '
                         f'{fabric} ({c.first}): {d["text"]}')
        else:
            what = head if d['status'] == 'slow' else \
                'undecided node link {} on fabric ' + fabric + ': '
            final.append(what.format(c.node) + f'{d["text"]} (first round: '
                         f'{c.first}, not named on its own)')
    return final, notes


def decided_all(result: Optional[Mapping],
                cands: Optional[Sequence[Candidate]]) -> bool:
    """Whether the retest ran and decided every candidate (slow, a
    partner's, healthy, explained, or untested for want of clean
    partners): then a later run has nothing to add. One left inconclusive
    at the end of its budget is not decided: a retry of the session
    (``--max-retries``) measures the matrix again, on a loaded node a
    borderline link's second chance, while a confirmed fault's verdict
    stands without a second run."""
    if result is None or cands is None:
        return False
    done = {d['node'] for d in result.get('decisions', [])
            if d.get('status') != 'inconclusive'}
    return {c.node for c in cands} <= done


def _partner_line(d, fabric):
    node, ends = d['node'], d['blamed']
    arrow = '->' if d['direction'] == 'sent' else '<-'
    return (f'slow link {node}{arrow}{",".join(ends)} on fabric {fabric}: '
            f'{d["text"]}')


#: seconds between two looks for the matrix's exit status (--after)
POLL_S = 0.02


def await_matrix(path: str, poll: float = POLL_S) -> int:
    """The matrix's exit status, once the job script wrote it to
    ``path`` (written whole: the script renames it into place). The
    analysis' modules are imported first, while the matrix runs."""
    from clustergate.links import topology  # noqa: F401 (first_round's import)
    import shutil  # noqa: F401 (the retest launch's import)
    while True:
        try:
            with open(path) as fp:
                return int(fp.read().strip())
        except FileNotFoundError:
            time.sleep(poll)


def main(argv=None):
    """``python -m clustergate.links.retest --output STDOUT --inputs JSON
    --launch 'LAUNCH EXE --bytes B' --result JSON``: in the job script.
    Always exits 0: the check judges what it wrote (or its absence)."""
    ap = argparse.ArgumentParser(prog='clustergate.links.retest')
    ap.add_argument('--output', required=True, help='the matrix output')
    ap.add_argument('--inputs', required=True)
    ap.add_argument('--launch', required=True)
    ap.add_argument('--result', required=True)
    ap.add_argument('--log', default=None, help='the retests\' CG lines')
    ap.add_argument('--budget', type=float, default=BUDGET)
    ap.add_argument('--trials', type=int, default=TRIALS)
    ap.add_argument('--after', default=None,
                    help='started beside the matrix: wait for this file '
                         '(its exit status); not 0: no retest, no result')
    args = ap.parse_args(argv)
    if args.after and await_matrix(args.after) != 0:
        return 0
    try:
        with open(args.output, errors='replace') as fp:
            text = fp.read()
        with open(args.inputs) as fp:
            inputs = json.load(fp)
        log = open(args.log, 'w') if args.log else None
        try:
            result = retest(text, inputs, args.launch, args.budget,
                            args.trials, log)
        finally:
            if log:
                log.close()
    except Exception as err:    # noqa: BLE001 (the job must go on)
        result = {'budget_s': args.budget, 'rounds': 0, 'decisions': [],
                  'notes': [f'retest failed: {type(err).__name__}: {err}']}
    with open(args.result, 'w') as fp:
        json.dump(result, fp, indent=1)
    for d in result.get('decisions', []):
        print(f'linkretest: {d["node"]} {d["status"]}: {d["text"]}',
              file=sys.stderr)
    for n in result.get('notes', []):
        print(f'linkretest: {n}', file=sys.stderr)
    return 0


def _exit_now(rc: int):
    """Leaves without the interpreter's teardown of ~200 modules (70 ms
    on a loaded node, after the verdict is written, on the job's critical
    path): everything the driver writes is closed or flushed first."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == '__main__':
    _exit_now(main())
