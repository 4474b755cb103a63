"""Samples: the performance figures of past runs, read from ReFrame's
perflogs (our format, config/common.py), its results database (SQLite,
``storage`` in the config) or JSON run reports (``--report-file``).

Each sample is one performance variable of one test case, keyed by system,
partition, check, point of the sweep (the test's parameters) and metric,
with the time its job completed and the ReFrame session (``run``) it came
from. ``clustergate report``, ``score``, ``history`` and ``baseline`` read
their inputs through :func:`load_samples`.
"""

import glob
import json
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from clustergate.refs import references
from clustergate.results import resultsdb
from clustergate.results import times


@dataclass(frozen=True)
class Key:
    """What a sample measures: system, partition, check, point of the sweep
    and metric (one reference entry)."""
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
    """One performance figure of one test case of one run."""
    key: Key
    value: float
    unit: Optional[str]
    time: float         # unix seconds of the job's completion
    # the run (ReFrame session) the sample came from: session uuid and
    # ReFrame's run index from the results DB or a JSON report; a perflog
    # line does not name its session: there, the job id and completion time
    run: str
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


class Samples(list):
    """A list of samples that also says which input lines could not be
    read: ``unreadable`` maps a perflog file to the numbers of its lines
    that are not of our format (truncated, garbage, another format); they
    are skipped, never silently (:meth:`unreadable_note`)."""

    def __init__(self, items=()):
        super().__init__(items)
        self.unreadable: Dict[str, List[int]] = {}

    def __iadd__(self, other):
        super().__iadd__(other)
        for path, lines in getattr(other, 'unreadable', {}).items():
            self.unreadable.setdefault(path, []).extend(lines)
        return self

    def unreadable_note(self, limit=3) -> Optional[str]:
        """``5 unreadable perflog line(s) skipped: a.log lines 3, 9; ...``
        or None when every line was read."""
        if not self.unreadable:
            return None

        n = sum(len(v) for v in self.unreadable.values())
        where = '; '.join(
            f'{path} line(s) {", ".join(map(str, lines[:limit]))}'
            + (f' and {len(lines) - limit} more' if len(lines) > limit
               else '')
            for path, lines in sorted(self.unreadable.items()))
        return (f'{n} unreadable perflog line(s) skipped (not the perflog '
                f'format of config/common.py): {where}')


_NOT_A_VALUE = ('', 'None', 'null', 'nan')


def perflog_line_readable(line: str,
                          header: Optional[List[str]] = None) -> bool:
    """Whether a perflog line (not the header) is of our format: a
    completion time, at least the header's fields (fewer: a line cut
    short), and each performance variable with a number or no value
    (``None``: a test that did not measure). A line of a build fixture
    has no performance variable at all: readable, no sample."""
    fields = line.rstrip('\n').split('|')
    if len(fields) < max(8, len(header or ())) or \
            times.parse(fields[0]) is None:
        return False

    return all(m[2].strip() in _NOT_A_VALUE or _num(m[2]) is not None
               for m in _PERFVAR.finditer(line))


def read_perflogs(paths: Iterable[str]) -> List[Sample]:
    """Samples of perflog files or directories (``<system>/<partition>/
    <Check>.log`` below a directory, as our config writes them); the
    lines that are not of our format are counted in the result's
    ``unreadable`` (:class:`Samples`)."""
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

    samples = Samples()
    for f in files:
        parts = os.path.normpath(f).split(os.sep)
        system, partition = (parts[-3], parts[-2]) if len(parts) >= 3 \
            else ('?', '?')
        header = None
        with open(f, errors='replace') as fp:
            for number, line in enumerate(fp, 1):
                if line.startswith('job_completion_time'):
                    header = line.rstrip('\n').split('|')
                    continue

                if not line.strip():
                    continue

                if not perflog_line_readable(line, header):
                    samples.unreadable.setdefault(f, []).append(number)
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
    directories); raises OSError or ValueError naming what cannot be read.
    Perflog lines that are not of our format are skipped and counted
    (:class:`Samples`)."""
    samples = Samples()
    if db:
        samples += read_results_db(db)

    if json_reports:
        samples += read_json_reports(json_reports)

    if perflogs:
        samples += read_perflogs(perflogs)

    return samples


def on_system(key: Key, system: str) -> bool:
    """Whether ``key`` is of ``system``: a system name, or
    ``system:partition``."""
    name, _, part = system.partition(':')
    return key.system == name and (not part or key.partition == part)


def select(samples: Sequence[Sample], system=None, check=None,
           since: Optional[float] = None, last: Optional[int] = None,
           include_perf_failures=False) -> List[Sample]:
    """Filter samples; ``system``: a name or ``system:partition``;
    ``last``: the most recent runs per group."""
    rx = re.compile(check) if check else None
    out = [s for s in samples
           if (system is None or on_system(s.key, system)) and
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
