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

**At the budget.** What becomes of a link the budget left open (named,
explained by a confirmed fault beside it, or a warning within the run's
noise) is :mod:`clustergate.links.retest_open`'s.

A first round's verdict therefore never stands on one round: a named node
link the retests clear is not a fault (a noisy round, or a figure a fault
elsewhere distorted), a borderline one they confirm is (a 10 % loss the
peers-only bound would miss), and a named one the budget left open, a
borderline one leaning to a loss, or one that could not be retested,
fails saying so: the gate does not pass what it could
not check. The launches stop at the budget (one still running is
killed). The rounds' figures are never averaged with the first round's.

The candidates and the pairs of a round are chosen by
:mod:`clustergate.links.retest_candidates`, the rounds run in the job by
:mod:`clustergate.links.retest_driver`; the verdict lines the check makes
of the result are :mod:`clustergate.links.retest_verdict`'s.
"""

import math
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from clustergate.links import judge as linkjudge
from clustergate.links import stats as linkstats
from clustergate.links.retest_candidates import (DIRECTIONS, Bounds,
                                                 Candidate, Pair, Plan,
                                                 halfway)

#: the naming ratio of a retest figure (x of the control pairs, alone)
RATIO = linkjudge.RATIO
#: a decision needs p below this (one-sided t-test)
ALPHA = 0.01
#: rounds before any decision: one noisy round never decides
MIN_RETESTS = 3
#: the standard deviation of the round figures counts at least this much
SD_FLOOR = 0.01
#: node links of the fabrics ALPHA and HEALTH_SE were set on (the
#: emulated trees, 9 to 24 nodes): up to this many node links tested they
#: apply as they are; above, each is corrected for how many were tested
#: (:func:`family_alpha`, :func:`health_se`)
CALIBRATED_LINKS = 32
#: standard errors of the retest's mean below its partners' level (1.0x)
#: that a borderline link's rounds must fall to lean to a loss: at a
#: noise where the budget's rounds cannot tell a 5 % loss from health
#: (a simulated sigma of 0.15: 10 rounds, a standard error of 0.047) a
#: healthy link at 0.96x is a warning saying so, not a red night
HEALTH_SE = 2.0


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
        level = min(h * halfway(b.ratio), h - b.z / 2 * st.mad)
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
    return halfway(ratio)


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


def p_text(p):
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
        conf = f'({p_text(s.p_slow())}, {s.n} retests)'
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
                          f'({p_text(s.p_slow())}), {per[dr].mean:.2f}x with all '
                          f'its partners ({", ".join(parts)}): that pair, '
                          f'not {node}\'s own link')
                return d

    if all(states[dr] == 'healthy' for dr in DIRECTIONS):
        p = max(per[dr].p_healthy() for dr in DIRECTIONS)
        d.status = 'healthy'
        d.text = ('cleared by retest: ' + ', '.join(
            f'{"sent" if dr == "sent" else "received"} {per[dr].mean:.2f}x'
            for dr in DIRECTIONS) + f' its partners alone, above '
            f'{ratio:g}x ({p_text(p)}, {d.retests} retests)')
        return d

    if final:
        d.status = 'inconclusive'
        worst = min(DIRECTIONS, key=lambda x: per[x].mean
                    if per[x].n else math.inf)
        s = per[worst]
        d.text = ('retest inconclusive after the time budget: ' +
                  (f'{_describe(node, worst, s)} (below: {p_text(s.p_slow())}, '
                   f'above: {p_text(s.p_healthy())}) [retest basis: '
                   f'{_retest_basis(cand, worst)}]' if s.n else
                   'no retest round fitted in it'))
    return d

