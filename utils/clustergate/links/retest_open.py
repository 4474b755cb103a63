"""What the retest makes of a node link its time budget left open.

:func:`clustergate.links.retest_rules.decide` ends a candidate that no
round decided as ``inconclusive``. A *named* one (its first round named
it on its own) stays named: the gate does not pass what it could not
check. A *borderline* one (the first round only hinted at it) is judged
again here, from what the whole retest measured:

* **explained** (:func:`explain`): beside a fault the fabric verdict
  names or the retest confirmed (a cut trunk, a miscabled node, another
  node link), alone it leans healthy in every direction (above the ratio
  at p < ``EXPLAINED_ALPHA``, 0.1, and nearer its partners' level than
  the ratio): its first round's hint is what those faults disturbed (the
  fault campaign's three innocents, each 0.98-1.00x alone). Logged, not
  named;
* **unresolved** (:func:`unresolved`): alone it does not lean to a loss
  (:func:`leans_to_loss`): its median clearly above the ratio, or health
  not rejected by its own rounds' standard error, or not by the spread
  between the links of this very retest (:func:`run_spread`), or no round
  fitted. Within the retest's noise: a ``WARNING`` that does not fail the
  run and says which loss the run could have told (a fresh site without
  a per-link baseline, on a loaded node);
* otherwise it stays ``inconclusive``: leaning to a loss, the run fails
  saying so.

**The run's own spread.** On a loaded node a healthy link alone is not
at its partners' level plus a round-to-round noise: it sits off that
level, high or low, for the whole job (on the 12-node emulated site under
Intel MPI the healthy candidates of one retest averaged 0.93x to 1.19x of
their partners alone over 3-4 rounds each, each series within +-6 %).
Its own rounds' standard error does not see that; the spread between the
retested links' means does, and so does the spread of the healthy control
pairs between its partners (:func:`control_means`: a lone candidate has
no other retested link to compare with). With at least ``SPREAD_SERIES``
series (a candidate and a direction, or a control pair, ``MIN_RETESTS``
rounds each) a borderline
link leans to a loss only when its mean is also below its partners'
level by more than that spread (a robust SD: 1.4826 x the MAD of the
series' means) times the one-sided normal quantile of ``HEALTH_SE``'s
tail shared among the series (2.5 for 4 series, 2.7 for 6), the link
judged left out of them. A quiet run
(the 9-node tree's campaign: series within +-1-2 %) keeps the bar where
its own rounds put it, and a 95 % link there is decided slow before the
budget (:func:`clustergate.links.retest_rules.no_baseline_level`).
"""

import math
import statistics
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

from clustergate.links.retest_candidates import (Candidate, Pair,
                                                 node_link_of)
from clustergate.links.retest_rules import (MIN_RETESTS, RATIO, SD_FLOOR,
                                            Decision, health_se, p_text)

#: a borderline node link the retest leaves undecided beside confirmed
#: faults is not named when alone it leans healthy at this p (see
#: :func:`explain`)
EXPLAINED_ALPHA = 0.1
#: the retest's status of a borderline node link left open that does not
#: lean to a loss (see :func:`unresolved`): a warning, not a verdict line
UNRESOLVED = 'unresolved'
#: series (a candidate and a direction with MIN_RETESTS rounds) a retest
#: needs before the spread between them says anything of the run's noise
SPREAD_SERIES = 4
#: a retest's statuses of a confirmed fault (its own link, or a pair)
CONFIRMED = ('slow', 'partner')
#: a MAD x this is the standard deviation of a normal sample
MAD_TO_SD = 1.4826


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
            f'({p_text(x["p_healthy"])})' for dr, x in d.directions.items())
        d.text = (f'not named: borderline in its first round beside what '
                  f'the fabric verdict and the retest confirmed '
                  f'({"; ".join(faults)}); alone it leans healthy, '
                  f'undecided within the time budget: {alone} its partners '
                  f'alone, above {ratio:g}x, {d.retests} retests')


def _standard_error(values: Sequence[float]) -> float:
    """The standard error of the mean of ``values`` (their SD floored at
    ``SD_FLOOR``; one value: the floor)."""
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return max(sd, SD_FLOOR) / math.sqrt(len(values))


@dataclass
class RunSpread:
    """The spread between the links one retest measured: ``sd`` (robust,
    of the series' means), over ``series`` series; a borderline link
    leans to a loss only ``z`` x ``sd`` below its partners' level."""

    sd: float
    series: int
    z: float

    @property
    def loss(self) -> float:
        """The loss the run's spread lets it tell from health."""
        return self.z * self.sd

    def describe(self) -> str:
        return (f'the {self.series} other retested series of this run spread '
                f'{self.sd:.2f}x between links (robust SD of their means)')


def control_means(rounds: Sequence[Mapping[Pair, float]],
                  controls: Sequence[Pair]) -> List[float]:
    """The mean of each control pair over the ``rounds`` that measured it
    (``MIN_RETESTS`` or more), each round's figure over the median of
    that round's controls: how far a healthy pair alone sits off the
    level the candidates are held to, for the whole job. Healthy pairs
    between a candidate's partners are a series of the run's spread like
    the candidates' own (:func:`run_spread`): on the loaded 12-node site
    the 4 controls of a lone candidate sat at 0.96-1.06x of their median
    over 10 launches (robust SD 0.059), while the lone candidate, healthy,
    read 0.92x and was red by its own rounds."""
    series: Dict[Pair, List[float]] = {}
    for rnd in rounds:
        vals = [rnd[p] for p in controls if rnd.get(p)]
        if len(vals) < 2:
            continue
        level = statistics.median(vals)
        for p in controls:
            if rnd.get(p):
                series.setdefault(p, []).append(rnd[p] / level)
    return [statistics.fmean(v) for v in series.values()
            if len(v) >= MIN_RETESTS]


def run_spread(decided: Mapping[str, Decision], links: int = 0,
               but: str = '', controls: Sequence[float] = ()
               ) -> Optional[RunSpread]:
    """The spread between the retested links of one fabric, but the one
    judged (``but``: a lossy link would widen the bar it is held to) and
    those the retest confirmed slow (a confirmed fault is no measure of
    health: beside a link at 0.5x the MAD of four series is half the
    fault), every direction with ``MIN_RETESTS`` rounds or more, with the
    healthy control pairs' means (``controls``, :func:`control_means`),
    or None with fewer than ``SPREAD_SERIES`` series. ``links``: the node
    links the first round tested (a larger fabric needs more standard
    deviations, :func:`health_se`)."""
    means = [statistics.fmean(x['values'])
             for node, d in decided.items()
             if d.status not in CONFIRMED and node != but
             for x in d.directions.values()
             if len(x['values']) >= MIN_RETESTS] + list(controls)
    if len(means) < SPREAD_SERIES:
        return None
    mid = statistics.median(means)
    sd = MAD_TO_SD * statistics.median(abs(m - mid) for m in means)
    normal = statistics.NormalDist()
    tail = normal.cdf(-health_se(links)) / len(means)
    return RunSpread(max(sd, SD_FLOOR), len(means), -normal.inv_cdf(tail))


def leans_to_loss(values: Sequence[float], ratio: float, links: int = 0,
                  spread: Optional[RunSpread] = None) -> bool:
    """Whether a direction's retests lean to a loss: their median not
    clearly above the naming ratio (by the standard error of their mean)
    and health rejected: their mean more than :func:`health_se` standard
    errors below its partners' level (:data:`HEALTH_SE` up to
    ``CALIBRATED_LINKS`` node links tested) and, where the run's
    ``spread`` is known, more than its :attr:`RunSpread.loss`."""
    if len(values) < MIN_RETESTS:
        # one or two rounds decide nothing (MIN_RETESTS), and with one
        # the spread is only the floor: a healthy link read at 0.94x in
        # the one round a failed launch left was red
        return False
    error = _standard_error(values)
    se = health_se(links, len(values))
    mean = statistics.fmean(values)
    return statistics.median(values) <= ratio + error and \
        mean < 1.0 - se * error and \
        (spread is None or mean < 1.0 - spread.loss)


def _why_not_told(values: Sequence[float], links: int,
                  spread: Optional[RunSpread]) -> str:
    """Which loss the retest could tell from health, and why no smaller:
    its own rounds' standard error, or the run's spread between links."""
    se = health_se(links, len(values)) if values else health_se(links)
    own = se * (_standard_error(values) if values else SD_FLOOR)
    text = (f'within {se:.2g} standard errors of its partners\' level: a '
            f'loss under {own:.0%} is not told from health at this noise')
    if spread is not None and len(values) >= MIN_RETESTS and \
            spread.loss > own:
        text += (f'; {spread.describe()}: a loss under {spread.loss:.0%} '
                 f'is not told from health in this run')
    return text


def unresolved(decided: Dict[str, Decision], cands: Sequence[Candidate],
               ratio: float = RATIO, links: int = 0,
               controls: Sequence[float] = ()):
    """The rule for a *borderline* node link (not named by its first
    round: within the naming bounds) that the budget left undecided and
    that :func:`explain` did not explain: when alone it does not lean to a
    loss (:func:`leans_to_loss`) in any direction measured, or no round
    fitted in the budget, it is within the retest's noise: status
    ``unresolved``, a warning that does not fail the run (the first round
    did not name it, and nothing measured since does). A fresh site has
    no per-link baseline: a healthy link at 0.97x alone (5 of 12 rounds
    at or below 0.95x), one beside a cut uplink whose retest got one round
    at 1.06x, or one at 0.87x in a retest whose healthy links spread from
    0.87x to 1.08x (:func:`run_spread`) must not fail the gate. One that
    leans to a loss stays undecided: the run fails saying so (the
    campaign's n8 at 95 %, alone 0.93-1.03x over 9 rounds: medians 0.952
    and 0.953, within one standard error, 0.010, of the ratio).
    ``controls``: the control pairs' means (:func:`control_means`).
    ``links``: the node links the first round tested; on a fabric of more
    than ``CALIBRATED_LINKS`` health is rejected at :func:`health_se`
    standard errors, not ``HEALTH_SE`` (a healthy link at 0.92x alone over
    12 retests at sigma 0.15, 3.4 standard errors below, is one of the
    thousand a 1,024-node fabric tested)."""
    for c in cands:
        d = decided.get(c.node)
        if c.why != 'borderline' or d is None or \
                d.status != 'inconclusive':
            continue
        spread = run_spread(decided, links, but=c.node, controls=controls)
        values = {dr: x['values'] for dr, x in d.directions.items()
                  if x['values']}
        if any(leans_to_loss(v, ratio, links, spread)
               for v in values.values()):
            continue
        d.status = UNRESOLVED
        medians = {dr: statistics.median(v) for dr, v in values.items()}
        # what its lowest direction tells, in the words of that one
        low = min(medians, key=medians.get, default=None)
        alone = ', '.join(
            f'{"sent" if dr == "sent" else "received"} median {m:.2f}x '
            f'of {len(values[dr])}'
            for dr, m in sorted(medians.items())) or 'no round'
        why = _why_not_told(values.get(low, []), links, spread)
        d.text = (f'not named: borderline in its first round, undecided '
                  f'within the time budget, alone it does not lean to a '
                  f'loss ({alone} retests, above the naming ratio '
                  f'{ratio:g}x or {why}; {d.text}): '
                  f'within the retest\'s noise; a '
                  f'per-link baseline (clustergate baseline --links) or a '
                  f'longer retest budget decides it')
