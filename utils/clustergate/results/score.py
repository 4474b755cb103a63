"""The acceptance score: one figure per partition.

For every metric a session measured and that has a reference, the ratio
to the reference, oriented so that above 1 is better than the reference
(``value / ref`` for rates and bandwidths, ``ref / value`` for times and
latencies: :func:`clustergate.refs.baseline.direction`); the partition's score
is the geometric mean of its ratios, the way the ATS/Crossroads
acceptance condenses a suite into one number. The metrics that pulled it
down (ratios below 1, worst first) are listed beside it.

The reference of a metric is the one ReFrame used (``config/references``,
in the run report), else the value in a signed-off baseline: a score JSON
a site archived from an earlier acceptance session (``--baseline``). A
metric whose direction is unknown ('both') or whose value or reference
is not positive is not scored, and counted as such.

Pure Python over a ReFrame JSON run report (or the latest session of the
results database): the ``clustergate score`` command and the end of an
acceptance session use it alike.
"""

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence

from clustergate.refs.baseline import direction as metric_direction
from clustergate.results.samples import Key, Sample, report_samples

#: How many of the metrics that pulled a score down are named
WORST = 5


@dataclass
class Ratio:
    """One scored metric."""

    check: str
    point: str
    metric: str
    unit: Optional[str]
    value: float
    reference: float
    direction: str
    ratio: float            # > 1: better than the reference
    source: str             # 'reference' or 'baseline'

    def label(self) -> str:
        return f'{self.check} [{self.point}] {self.metric}'


@dataclass
class PartitionScore:
    """The score of one partition and what it is made of."""

    system: str
    partition: str
    score: Optional[float]
    ratios: List[Ratio] = field(default_factory=list)
    #: metrics measured but not scored (no reference, unknown direction)
    unscored: List[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f'{self.system}:{self.partition}'

    def pulled_down(self, n=WORST) -> List[Ratio]:
        return sorted((r for r in self.ratios if r.ratio < 1),
                      key=lambda r: r.ratio)[:n]


def _last_samples(samples: Sequence[Sample]) -> Dict[Key, Sample]:
    # a retried case appears once per attempt: keep the last one
    last = {}
    for s in samples:
        last[s.key] = s

    return last


def baseline_values(doc: Dict) -> Dict[tuple, float]:
    """``{(system, partition, check, point, metric): value}`` of a score
    JSON (the signed-off baseline)."""
    out = {}
    for part in doc.get('partitions', []):
        for m in part.get('metrics', []):
            out[(part['system'], part['partition'], m['check'], m['point'],
                 m['metric'])] = float(m['value'])

    return out


def oriented(value: float, ref: float, direction: str) -> Optional[float]:
    """Ratio above 1 when better than the reference; None if unscorable."""
    if value <= 0 or ref <= 0 or direction not in ('lower', 'higher'):
        return None

    return value / ref if direction == 'higher' else ref / value


def geomean(values: Sequence[float]) -> Optional[float]:
    if not values:
        return None

    return math.exp(sum(math.log(v) for v in values) / len(values))


def compute(report: Dict, baseline: Optional[Dict] = None
            ) -> List[PartitionScore]:
    """The score of every partition a ReFrame run report measured."""
    base = baseline_values(baseline) if baseline else {}
    parts: Dict[tuple, PartitionScore] = {}
    samples = _last_samples(report_samples(report))
    for key, s in samples.items():
        ps = parts.setdefault((key.system, key.partition), PartitionScore(
            key.system, key.partition, None))
        ref, source = s.ref, 'reference'
        if not ref:
            ref = base.get((key.system, key.partition, key.check,
                            key.point, key.metric))
            source = 'baseline'

        direction = metric_direction(key.check, key.metric)
        r = oriented(s.value, ref, direction) if ref else None
        if r is None:
            ps.unscored.append(key.label())
            continue

        ps.ratios.append(Ratio(key.check, key.point, key.metric, s.unit,
                               s.value, ref, direction, r, source))

    for ps in parts.values():
        ps.score = geomean([r.ratio for r in ps.ratios])

    return sorted(parts.values(), key=lambda p: p.name)


def summary_lines(scores: Sequence[PartitionScore]) -> List[str]:
    """What the end of an acceptance session prints."""
    lines = ['ACCEPTANCE SCORE (geometric mean of value/reference, times '
             'inverted; 1.00 = as the reference, higher is better)']
    if not scores:
        lines.append('  no performance figure in this session')

    for ps in scores:
        if ps.score is None:
            lines.append(f'  {ps.name}: no score: none of its '
                         f'{len(ps.unscored)} metric(s) has a reference '
                         f'(config/references, or a signed-off score JSON: '
                         f'--baseline, $CG_SCORE_BASELINE)')
            continue

        lines.append(f'  {ps.name}: {ps.score:.3f} over {len(ps.ratios)} '
                     f'metric(s) ({len(ps.unscored)} without a reference)')
        for r in ps.pulled_down():
            lines.append(f'    pulled down by {r.label()}: {r.value:g} vs '
                         f'{r.reference:g} {r.unit or ""} '
                         f'(x{r.ratio:.3f})')

    return lines


def to_json(scores: Sequence[PartitionScore], report: Dict) -> Dict:
    """The archivable document: the score per partition and every
    measured metric with its value (a later session can use this file as
    its signed-off baseline)."""
    info = report.get('session_info', {})
    doc = {'kind': 'clustergate-acceptance-score', 'version': 1,
           'session': info.get('uuid'),
           'cmdline': info.get('cmdline'),
           'time_end': info.get('time_end'),
           'written': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
           'partitions': []}
    samples = _last_samples(report_samples(report))
    for ps in scores:
        metrics = [{'check': k.check, 'point': k.point, 'metric': k.metric,
                    'value': s.value, 'unit': s.unit}
                   for k, s in samples.items()
                   if (k.system, k.partition) == (ps.system, ps.partition)]
        doc['partitions'].append({
            'system': ps.system, 'partition': ps.partition,
            'score': ps.score,
            'scored': [asdict(r) for r in ps.ratios],
            'pulled_down': [r.label() for r in ps.pulled_down()],
            'unscored': ps.unscored,
            'metrics': metrics,
        })

    return doc


def write_json(path: str, doc: Dict):
    with open(path, 'w') as fp:
        json.dump(doc, fp, indent=1, sort_keys=True)
        fp.write('\n')


# -- end of an acceptance session -------------------------------------------

def is_acceptance(argv: Sequence[str]) -> bool:
    """True when the ``reframe`` command line selects the acceptance mode."""
    argv = list(argv)
    for i, a in enumerate(argv):
        if a == '--mode' and i + 1 < len(argv):
            if argv[i + 1] == 'acceptance':
                return True
        elif a == '--mode=acceptance':
            return True

    return False


def default_path(report: Dict, chosen: Optional[str] = None) -> str:
    """``chosen`` (the caller's $CG_SCORE_FILE), else
    ``output/score-<session>.json``."""
    if chosen:
        return chosen

    from clustergate import PROJECT_ROOT
    uuid = (report.get('session_info', {}).get('uuid') or 'session')[:8]
    return os.path.join(PROJECT_ROOT, 'output', f'score-{uuid}.json')


def session_end(report: Dict, report_path: str, out=None,
                score_file: Optional[str] = None,
                baseline: Optional[str] = None) -> str:
    """Print the score of a finished session, write its JSON
    (``score_file``, else :func:`default_path`) and add it to the run
    report (key ``clustergate_score``); ``baseline`` names a signed-off
    score JSON. Returns the JSON's path. Called by the end-of-session
    hook of :mod:`clustergate.rfm.session` in acceptance sessions, with
    $CG_SCORE_FILE and $CG_SCORE_BASELINE."""
    out = out or sys.stdout
    base = None
    if baseline:
        with open(baseline) as fp:
            base = json.load(fp)

    scores = compute(report, base)
    doc = to_json(scores, report)
    path = default_path(report, score_file)
    why_not = _write_score(path, doc)
    report['clustergate_score'] = doc
    with open(report_path, 'w') as fp:
        json.dump(report, fp, indent=2)

    where = (f'  written to {path} and to the run report {report_path}'
             if why_not is None else
             f'  score JSON NOT written: {path}: {why_not} (set '
             f'CG_SCORE_FILE to a writable path); it is in the run report '
             f'{report_path}')
    for line in summary_lines(scores) + [where]:
        print(line, file=out)

    return None if why_not else path


def _write_score(path: str, doc: Dict) -> Optional[str]:
    """Writes the score JSON; None, or why it could not (the job user may
    not write into the project's checkout: the score is still printed and
    kept in the run report, and the session's verdict still follows)."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        write_json(path, doc)
    except OSError as err:
        return err.strerror or str(err)

    return None
