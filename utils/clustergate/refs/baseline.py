"""Baselines: N healthy runs -> a reference file.

Samples come from ReFrame's perflogs (our format, config/common.py), its
results database (SQLite, ``storage`` in the config) or JSON run reports
(``--report-file``). They are grouped per system, partition, check, point of
the sweep (the test's parameters) and performance variable; per group:

* reference = median of the runs (robust centre);
* tolerance = max(floor, k * 1.4826 * MAD / median): the MAD scaled to a
  standard deviation of normal noise, ``k`` of them (default 3), never
  below the floor (default 5%);
* direction: declared per check and metric (:mod:`clustergate.refs.directions`:
  lower is better for times and latencies, higher for bandwidths and
  rates, ``both`` for what nobody declared). The worse side gets the
  tolerance; the better side gets ``better_factor`` times it (a result
  far *better* than usual is suspicious as well: a network test that went
  through shared memory), or no bound with factor 0. Whether crossing the
  better bound fails a run is the site's choice (partition extra
  ``improvements``, :mod:`clustergate.refs.references`).

A group with fewer runs than ``min_runs`` is refused (or skipped on
request): a reference from two runs is a guess.
"""

import difflib
import glob
import json
import math
import os
import re
import statistics
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from clustergate.refs import directions
from clustergate.refs import references
from clustergate.refs import refwriter
from clustergate.results import resultsdb
from clustergate.results import times

#: MAD -> standard deviation for normally distributed noise
MAD_TO_SIGMA = 1.4826


# -- samples ---------------------------------------------------------------

@dataclass(frozen=True)
class Key:
    system: str
    partition: str
    check: str
    point: str          # canonical axis key (references.format_axes)
    metric: str

    def label(self):
        return (f'{self.check} {self.system}:{self.partition} '
                f'[{self.point}] {self.metric}')


@dataclass
class Sample:
    key: Key
    value: float
    unit: Optional[str]
    time: float         # unix seconds of the job's completion
    run: str            # id of the run (job id or session uuid)
    result: str         # 'pass' / 'fail' (performance only, see loaders)
    ref: Optional[float] = None
    lower: Optional[float] = None
    upper: Optional[float] = None
    status: Optional[str] = None    # reference_status of the test


# a check forked over its fixture's parameters shows them as
# %fixture.param=value (HPCC kernels: %hpcc.num_nodes=4)
_PARAM = re.compile(r'%(?:\w+\.)*(\w+)=(\S+)')


def split_display_name(name: str) -> Tuple[str, Dict[str, str]]:
    """``'Check %a=1 %b=x'`` -> ``('Check', {'a': '1', 'b': 'x'})``."""
    check = name.split()[0] if name.split() else name
    return check, dict(_PARAM.findall(name))


def _num(text):
    if text is None:
        return None

    if isinstance(text, (int, float)):
        return float(text)

    text = str(text).strip()
    if text in ('', 'None', 'null', 'nan'):
        return None

    try:
        return float(text)
    except ValueError:
        return None


def _time(text) -> float:
    t = times.parse(text)
    return 0.0 if t is None else t


_PERFVAR = re.compile(r'(?:(?<=\|)|^)(\w+)=([^|]*)\|ref=([^|]*)\|lower=([^|]*)\|'
                      r'upper=([^|]*)\|unit=([^|]*)\|')


def parse_perflog_line(line: str, system: str, partition: str,
                       header: Optional[List[str]] = None
                       ) -> List[Sample]:
    """Samples of one perflog line of our format (config/common.py)."""
    fields = line.rstrip('\n').split('|')
    if len(fields) < 8 or fields[0].startswith('job_completion_time'):
        return []

    when, name, jobid, result = fields[0], fields[2], fields[5], fields[6]
    check, axes = split_display_name(name)
    if fields[3]:
        axes.setdefault('environ', fields[3])

    point = references.format_axes(axes)
    status = None
    # the first field is the completion time as the logging config formats
    # it (a site's datefmt may drop the zone); the loggable
    # job_completion_time_unix is the same in every zone: prefer it
    completed = _time(when)
    # columns shift where values contain '|' (perf values): only trust
    # a named column if the line has as many fields as the header
    if header and len(fields) == len(header):
        if 'reference_status' in header:
            status = fields[header.index('reference_status')] or None

        if 'job_completion_time_unix' in header:
            unix = times.parse(
                fields[header.index('job_completion_time_unix')])
            completed = completed if unix is None else unix

    out = {}
    for m in _PERFVAR.finditer(line):
        metric, value, ref, lower, upper, unit = m.groups()
        if metric in ('var', 'perf_var') or metric.endswith('_var'):
            continue

        val = _num(value)
        if val is None:
            continue

        out[metric] = Sample(Key(system, partition, check, point, metric),
                             val, unit or None, completed,
                             f'{jobid}@{when}', result, _num(ref),
                             _num(lower), _num(upper), status)

    return list(out.values())


def read_perflogs(paths: Iterable[str]) -> List[Sample]:
    """Samples of perflog files or directories (``<system>/<partition>/
    <Check>.log`` below a directory, as our config writes them)."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(
                f for pat in ('*.log', '*.log.h[0-9]*')
                for f in glob.glob(os.path.join(path, '**', pat),
                                   recursive=True)
            )
        else:
            files.append(path)

    samples = []
    for f in files:
        parts = os.path.normpath(f).split(os.sep)
        system, partition = (parts[-3], parts[-2]) if len(parts) >= 3 \
            else ('?', '?')
        header = None
        with open(f, errors='replace') as fp:
            for line in fp:
                if line.startswith('job_completion_time'):
                    header = line.rstrip('\n').split('|')
                    continue

                samples += parse_perflog_line(line, system, partition,
                                              header)

    return samples


def _testcase_samples(tc, run_id) -> List[Sample]:
    if tc.get('fixture'):
        return []

    # sanity, run or setup failures are not measurements
    if tc.get('result') == 'fail' and tc.get('fail_phase') != 'performance':
        return []

    system, partition = tc.get('system'), tc.get('partition')
    check, axes = split_display_name(tc.get('display_name') or
                                     tc.get('name', ''))
    if tc.get('environ'):
        axes.setdefault('environ', tc['environ'])

    point = references.format_axes(axes)
    out = []
    for pkey, tup in (tc.get('perfvalues') or {}).items():
        metric = pkey.split(':')[-1]
        value, ref, lower, upper, unit = (list(tup) + [None] * 5)[:5]
        if value is None:
            continue

        out.append(Sample(Key(system, partition, check, point, metric),
                          float(value), unit,
                          _time(tc.get('job_completion_time_unix') or 0),
                          run_id, tc.get('result') or '?', _num(ref),
                          _num(lower), _num(upper),
                          tc.get('reference_status')))

    return out


def report_samples(report) -> List[Sample]:
    uuid = report.get('session_info', {}).get('uuid', '?')
    out = []
    for run in report.get('runs', []):
        rid = f'{uuid}:{run.get("run_index", 0)}'
        for tc in run.get('testcases', []):
            out += _testcase_samples(tc, rid)

    return out


def results_db_reports(path: str) -> List[Dict]:
    """Every session stored in ReFrame's results DB, as the JSON run report
    ReFrame stored for it (read through ReFrame's storage API)."""
    return resultsdb.stored_reports(path)


def read_results_db(path: str) -> List[Sample]:
    """Samples of every session stored in ReFrame's SQLite results DB."""
    out = []
    for report in results_db_reports(path):
        out += report_samples(report)

    return out


def read_json_reports(paths: Iterable[str]) -> List[Sample]:
    out = []
    for p in paths:
        with open(p) as fp:
            out += report_samples(json.load(fp))

    return out


def load_samples(db=None, json_reports=None, perflogs=None) -> List[Sample]:
    """Samples from a results database, JSON reports and perflogs (files or
    directories); raises OSError or ValueError naming what cannot be read."""
    samples = []
    if db:
        samples += read_results_db(db)

    if json_reports:
        samples += read_json_reports(json_reports)

    if perflogs:
        samples += read_perflogs(perflogs)

    return samples


def select(samples: Sequence[Sample], system=None, check=None,
           since: Optional[float] = None, last: Optional[int] = None,
           include_perf_failures=False) -> List[Sample]:
    """Filter samples; ``last``: the most recent runs per group."""
    rx = re.compile(check) if check else None
    out = [s for s in samples
           if (system is None or s.key.system == system) and
           (rx is None or rx.search(s.key.check)) and
           (since is None or s.time >= since) and
           (s.result == 'pass' or include_perf_failures)]
    if last:
        groups = group(out)
        out = [s for g in groups.values()
               for s in sorted(g, key=lambda s: s.time)[-last:]]

    return out


def group(samples: Iterable[Sample]) -> Dict[Key, List[Sample]]:
    """Samples per key, one per run (the last if a run has several)."""
    by = {}
    for s in samples:
        by.setdefault(s.key, {})[s.run] = s

    return {k: sorted(v.values(), key=lambda s: s.time)
            for k, v in by.items()}


# -- maths -----------------------------------------------------------------

def direction(check: str, metric: str) -> str:
    """'lower', 'higher' or 'both': declared per check and metric
    (:mod:`clustergate.refs.directions`), never guessed from the name."""
    return directions.of(check, metric)


def mad(values: Sequence[float]) -> float:
    med = statistics.median(values)
    return statistics.median(abs(v - med) for v in values)


@dataclass
class Stats:
    runs: int
    median: float
    mad: float
    min: float
    max: float
    spread: float       # 1.4826 * MAD / |median| (relative sigma)
    tolerance: float    # worse-side relative tolerance
    direction: str
    lower: Optional[float]
    upper: Optional[float]


def _ceil(x, digits=3):
    f = 10 ** digits
    return math.ceil(x * f - 1e-9) / f


def _sig(x, digits=4):
    if x == 0 or not math.isfinite(x):
        return x

    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def compute(values: Sequence[float], metric='', unit=None, k=3.0,
            floor=0.05, better_factor=3.0, direction_=None,
            check='') -> Stats:
    """Reference statistics of one group of runs (see module doc)."""
    if not values:
        raise ValueError('no values')

    med = statistics.median(values)
    m = mad(values)
    spread = MAD_TO_SIGMA * m / abs(med) if med else 0.0
    tol = _ceil(max(floor, k * spread))
    d = direction_ or direction(check, metric)
    better = None if not better_factor else _ceil(tol * better_factor)
    if d == 'lower':
        lower = None if better is None else -min(1.0, better)
        upper = tol
    elif d == 'higher':
        lower = -min(1.0, tol)
        upper = better
    else:
        lower, upper = -min(1.0, tol), tol

    return Stats(len(values), med, m, min(values), max(values), spread, tol,
                 d, lower, upper)


@dataclass
class Baseline:
    stats: Dict[Key, Stats] = field(default_factory=dict)
    units: Dict[Key, Optional[str]] = field(default_factory=dict)
    short: Dict[Key, int] = field(default_factory=dict)
    runs: List[str] = field(default_factory=list)
    span: Tuple[float, float] = (0.0, 0.0)


class TooFewRuns(ValueError):
    pass


def make(samples: Sequence[Sample], min_runs=3, k=3.0, floor=0.05,
         better_factor=3.0, skip_short=False,
         directions: Optional[Dict[str, str]] = None) -> Baseline:
    """Statistics of every group; raises :class:`TooFewRuns` (listing the
    groups) if one has fewer than ``min_runs`` runs, unless
    ``skip_short``."""
    if min_runs < 1:
        raise ValueError('min_runs must be at least 1')

    groups = group(samples)
    if not groups:
        raise TooFewRuns('no performance samples selected: nothing to '
                         'baseline (wrong --system, --check or --since? '
                         'perf failures need --include-perf-failures)')

    made = Baseline()
    for key, ss in sorted(groups.items(), key=lambda kv: kv[0].label()):
        if len(ss) < min_runs:
            made.short[key] = len(ss)
            continue

        unit = ss[-1].unit
        d = (directions or {}).get(key.metric)
        made.stats[key] = compute([s.value for s in ss], key.metric, unit, k,
                                  floor, better_factor, d, key.check)
        made.units[key] = unit

    if made.short and not skip_short:
        lines = [f'  {k.label()}: {n} run(s)'
                 for k, n in sorted(made.short.items(),
                                    key=lambda kv: kv[0].label())]
        raise TooFewRuns(
            f'refusing to baseline: {len(made.short)} metric(s) have fewer '
            f'than {min_runs} healthy runs (run more, or --skip-short):\n'
            + '\n'.join(lines)
        )

    if not made.stats:
        raise TooFewRuns(f'no metric has {min_runs} healthy runs')

    used = [s for s in samples if s.key in made.stats]
    made.runs = sorted({s.run for s in used})
    made.span = (min(s.time for s in used), max(s.time for s in used))
    return made


# -- reference file --------------------------------------------------------

def entries(baseline: Baseline) -> Dict[Tuple[str, str, str], Dict[str, Dict]]:
    """``{(check, partition, point): {metric: entry}}`` of a baseline."""
    out = {}
    for key, stats in baseline.stats.items():
        out.setdefault((key.check, key.partition, key.point), {})[
            key.metric] = {
            'value': _sig(stats.median), 'lower': stats.lower,
            'upper': stats.upper,
            'unit': baseline.units.get(key), 'direction': stats.direction,
            'runs': stats.runs, 'mad': _sig(stats.mad, 3),
            'min': _sig(stats.min), 'max': _sig(stats.max),
        }

    return out


def render(system: str, table: Dict[Tuple[str, str, str], Dict[str, Dict]],
           comment: Sequence[str] = ()) -> str:
    """The YAML text of a new reference file, one metric per line, sorted,
    so that a re-baseline is a readable diff (see
    :func:`clustergate.refs.refwriter.update`, which also writes into an
    existing file)."""
    return refwriter.update('', system, table, comment)


def diff(old_text: str, new_text: str, path: str) -> str:
    return ''.join(difflib.unified_diff(
        old_text.splitlines(True), new_text.splitlines(True),
        fromfile=path if os.path.isabs(path) else f'a/{path}',
        tofile=path if os.path.isabs(path) else f'b/{path}'
    ))


def spread_table(baseline: Baseline) -> str:
    """What the runs showed, per metric: the spread behind each
    tolerance."""
    head = (f'{"check metric [point]":<72} {"runs":>4} {"median":>11} '
            f'{"MAD":>9} {"spread":>7} {"min":>11} {"max":>11} {"tol":>6} '
            f'dir')
    rows = [head, '-' * len(head)]
    for key in sorted(baseline.stats, key=lambda k: k.label()):
        stats = baseline.stats[key]
        label = f'{key.check} {key.metric} [{key.point}]'
        if len(label) > 72:
            label = label[:69] + '...'

        rows.append(f'{label:<72} {stats.runs:>4} {stats.median:>11.4g} '
                    f'{stats.mad:>9.3g} {100 * stats.spread:>6.1f}% '
                    f'{stats.min:>11.4g} {stats.max:>11.4g} '
                    f'{100 * stats.tolerance:>5.1f}% {stats.direction}')

    return '\n'.join(rows)
