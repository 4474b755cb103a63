"""Change points across nights: when a metric moved, which way, since when.

A fixed tolerance cannot see a metric that slides 3 % a night until months
later it crosses the line, and then nobody can say since when. This module
reads the history of every metric (per system, partition, check, sweep
point; samples of :mod:`clustergate.refs.baseline`, i.e. ReFrame's results
database, perflogs or JSON reports) and finds:

* **shifts** (a step to a new level): candidate positions from ``ruptures``'
  PELT search with an l2 cost on the series relative to its median, with a
  penalty scaled by the series' own noise (robust sigma from the median
  absolute *successive difference*, which a step does not inflate); each
  candidate is kept only if Welch's t-test between the segments around it
  says the levels differ (``p < alpha``) and the step is larger than both
  ``min_shift`` and ``k`` sigmas of the noise. This is the scheme Apache
  Otava (Hunter) uses: a change-point search followed by a significance
  test per candidate.
* **drifts**: a monotonic slide over the last ``window`` runs (Kendall's tau
  significant and the Theil-Sen slope at least ``min_drift`` per run).

Each finding knows which way is worse (the direction each check declares
for each metric, :mod:`clustergate.refs.directions`) and gets a band:

* ``improvement``: it moved the good way (reported, never a failure);
* ``warn``: a regression outside the noise but the latest value is still
  within the reference tolerance (or there is no reference): look at it
  before it becomes a failure;
* ``fail``: a regression and the latest value is out of its reference.

Every finding names the first run of the new level: "since session S, date
D".
"""

import datetime as dt
import math
import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from clustergate.refs import baseline
from clustergate.results.samples import Key, Sample, group

#: significance level of the t-test (shifts) and of Kendall's tau (drifts)
ALPHA = 0.01
#: smallest relative step reported, whatever the noise
MIN_SHIFT = 0.03
#: a step must also exceed this many robust sigmas of the series' noise
K_SIGMA = 3.0
#: fewest runs on each side of a shift
MIN_SEGMENT = 2
#: the fewest runs of a metric in which a shift can be searched for
MIN_RUNS = 2 * MIN_SEGMENT
#: runs looked at for a drift, and the smallest slope reported (per run)
DRIFT_WINDOW = 10
MIN_DRIFT = 0.01


@dataclass
class Finding:
    """One change of one metric's history."""

    key: Key
    kind: str            # 'shift' or 'drift'
    index: int           # position of the first sample of the new level
    run: str             # its run (session uuid:run index, or job@time)
    time: float          # its job completion time (unix seconds)
    before: float        # median level before
    after: float         # median level after (latest level for a drift)
    change: float        # relative change after/before - 1 (drift: per run)
    noise: float         # relative robust sigma of the series
    p_value: float
    band: str            # 'improvement', 'warn' or 'fail'
    direction: str       # 'lower', 'higher' or 'both' (which way is better)

    @property
    def session(self) -> str:
        # results DB / JSON runs are '<session uuid>:<run index>'; a perflog
        # run is '<job id>@<completion time>', whose time has colons too
        return self.run if '@' in self.run else self.run.split(':')[0]

    def date(self) -> str:
        return dt.datetime.fromtimestamp(
            self.time, dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')

    def message(self) -> str:
        what = (f'{self.change:+.1%} per run' if self.kind == 'drift'
                else f'{self.change:+.1%} ({_fmt(self.before)} -> '
                     f'{_fmt(self.after)})')
        return (f'{self.band.upper()}: {self.key.label()}: {self.kind} '
                f'{what}, noise {self.noise:.1%}, p={self.p_value:.2g}; '
                f'since session {self.session}, {self.date()}')


def _fmt(x):
    return f'{x:.4g}'


def robust_noise(values: Sequence[float]) -> float:
    """Relative sigma of a series' noise, from the median absolute
    successive difference (MAD of differences / sqrt 2, scaled to a normal
    sigma): a level shift changes one difference, not the median of them."""
    if len(values) < 3:
        return 0.0

    med = statistics.median(values)
    diffs = [abs(b - a) for a, b in zip(values, values[1:])]
    sigma = baseline.MAD_TO_SIGMA * statistics.median(diffs) / math.sqrt(2)
    return sigma / abs(med) if med else 0.0


def _badness(direction: str, change: float) -> str:
    """'regression' or 'improvement' of a relative change."""
    if direction == 'lower':
        return 'regression' if change > 0 else 'improvement'

    if direction == 'higher':
        return 'regression' if change < 0 else 'improvement'

    return 'regression'       # either way is suspicious


def _out_of_reference(sample: Sample) -> bool:
    """Is this sample outside the reference it was judged against?"""
    if sample.ref is None or not sample.ref:
        return sample.result == 'fail'

    rel = sample.value / sample.ref - 1
    if sample.lower is not None and rel < sample.lower:
        return True

    return sample.upper is not None and rel > sample.upper


def _band(direction, change, latest: Sample) -> str:
    if _badness(direction, change) == 'improvement':
        return 'improvement'

    return 'fail' if _out_of_reference(latest) else 'warn'


def _candidates(values: Sequence[float], noise: float) -> List[int]:
    """Positions (first index of a new segment) proposed by PELT."""
    import numpy as np
    import ruptures as rpt

    med = statistics.median(values)
    signal = np.asarray(values, dtype=float) / med
    sigma = max(noise, 1e-3)
    # BIC-like penalty for an l2 cost: a new segment must pay for itself
    # by more than the noise would give by chance
    pen = 2 * sigma ** 2 * math.log(len(values)) * K_SIGMA
    algo = rpt.Pelt(model='l2', min_size=MIN_SEGMENT, jump=1).fit(signal)
    return [b for b in algo.predict(pen=pen) if b < len(values)]


def shifts(key: Key, samples: Sequence[Sample], alpha=ALPHA,
           min_shift=MIN_SHIFT, k=K_SIGMA) -> List[Finding]:
    """Level shifts of one time-ordered history."""
    from scipy import stats

    values = [s.value for s in samples]
    if len(values) < 2 * MIN_SEGMENT:
        return []

    if not statistics.median(values) > 0:
        # a relative change of a count that is mostly 0 (the link matrix's
        # ``faults``) is undefined; ruptures got NaNs and raised
        return []

    noise = robust_noise(values)
    direction = baseline.direction(key.check, key.metric)
    bounds = [0] + _candidates(values, noise) + [len(values)]
    out = []
    for i in range(1, len(bounds) - 1):
        left = values[bounds[i - 1]:bounds[i]]
        right = values[bounds[i]:bounds[i + 1]]
        before, after = statistics.median(left), statistics.median(right)
        change = after / before - 1 if before else 0.0
        if abs(change) < max(min_shift, k * noise):
            continue

        if len(set(left)) == 1 and len(set(right)) == 1:
            p = 0.0           # two constant levels: certainly different
        else:
            p = stats.ttest_ind(left, right, equal_var=False).pvalue
        if not p < alpha:
            continue

        s = samples[bounds[i]]
        out.append(Finding(key, 'shift', bounds[i], s.run, s.time, before,
                           after, change, noise, float(p),
                           _band(direction, change, samples[-1]),
                           direction))

    return out


def drift(key: Key, samples: Sequence[Sample], window=DRIFT_WINDOW,
          alpha=ALPHA, min_drift=MIN_DRIFT) -> Optional[Finding]:
    """A monotonic slide over the last ``window`` runs, or None."""
    from scipy import stats

    tail = list(samples[-window:])
    if len(tail) < max(5, window // 2):
        return None

    values = [s.value for s in tail]
    med = statistics.median(values)
    if not med:
        return None

    tau = stats.kendalltau(range(len(values)), values)
    slope = stats.theilslopes(values).slope / med
    if not tau.pvalue < alpha or abs(slope) < min_drift:
        return None

    direction = baseline.direction(key.check, key.metric)
    return Finding(key, 'drift', len(samples) - len(tail), tail[0].run,
                   tail[0].time, values[0], values[-1], slope,
                   robust_noise(values), float(tau.pvalue),
                   _band(direction, slope, tail[-1]), direction)


def analyse(samples: Sequence[Sample], **kw) -> List[Finding]:
    """Every shift and drift of every metric in ``samples``, worst first
    (fail, warn, improvement; then by size of the change)."""
    out = []
    for key, ss in group(samples).items():
        found = shifts(key, ss, **kw)
        d = drift(key, ss)
        # a drift already explained by a shift in its window is not news
        if d is not None and not any(f.index >= d.index for f in found):
            found.append(d)
        out += found

    order = {'fail': 0, 'warn': 1, 'improvement': 2}
    return sorted(out, key=lambda f: (order[f.band], -abs(f.change),
                                      f.key.label()))


def by_key(findings: Sequence[Finding]) -> Dict[Key, List[Finding]]:
    out = {}
    for f in findings:
        out.setdefault(f.key, []).append(f)

    return out
