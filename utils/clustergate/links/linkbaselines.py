"""Per-link baselines: each node link's healthy level and spread, learnt
from N healthy nights of the link matrix, and the verdict that compares a
night with them.

The figure judged is a node link's ``peer`` figure (:mod:`clustergate.
linkstats`: its flows against the flows of the other nodes in the same
run), which load elsewhere on the machine moves little. A baseline keeps,
per node link and direction, the median and the MAD (median absolute
deviation) of that figure over the healthy runs, with provenance (which
sessions, their dates, the host and the project's commit that learnt it),
in ``config/references/links/<system>.yaml``::

    system: "emucluster"
    provenance: {written: ..., host: ..., commit: ..., source: ...,
                 runs: 8, first: ..., last: ..., sessions: [...]}
    links:
      "LinkMatrix":
        "emu":
          "environ=openmpi,interconnect=fab0,...,num_nodes=9,ppn=1":
            "peer_n1_sent": {median: 0.995, mad: 0.011, runs: 8, ...}

A night's node link is then judged (:func:`clustergate.links.judge.judge`)
against

* **its own baseline**: ``ratio = figure / baseline median`` and the robust
  z, ``(figure - median) / MAD`` in MADs (the MAD floored at
  ``MAD_FLOOR`` of the median: eight quiet nights can give a MAD no
  ninth night keeps to);
* **its peers in the same run**: the figure itself (x of the peers), and
  its distance below the median of all node links of the run in MADs of
  that run.

A node link is named when it is beyond both the ratio and the z bound of
its baseline. Without a baseline (a new node, a new point) it is judged
against its peers only, with wider bounds, and the verdict says so.
"""

import datetime as dt
import os
import re
import socket
import statistics
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import yaml

from clustergate import PROJECT_ROOT
from clustergate.refs import baseline
from clustergate.results.samples import Sample, group, select
from clustergate.results.times import iso_utc
from clustergate.refs import references
from clustergate.refs import refwriter
from clustergate.refs.references import ReferenceFileError
from clustergate.links.judge import LinkStat

#: metrics a link baseline may hold (linkstats names)
LINK_METRIC = re.compile(r'^(bw|peer)_\w+_(sent|recv|both)$')
#: the figure that is judged
JUDGED = 'peer'

_TOP = {'system', 'provenance', 'links'}
_PROVENANCE = ('written', 'host', 'commit', 'source', 'runs', 'first',
               'last', 'sessions')
_STAT_FIELDS = {'median', 'mad', 'runs', 'min', 'max'}


def is_link_metric(metric: str) -> bool:
    """A node link's figure (or how far the worst one is off): learnt by
    ``clustergate baseline --links``, not into the reference file."""
    return bool(LINK_METRIC.match(metric)) or metric == 'link_mads'


def link_file(refs_dir: str, system: str) -> str:
    """The link baseline of ``system`` under the site's reference
    directory ``refs_dir``: one file a system, whatever the partitions'
    reference sets (its keys name the point, whose node count and
    fabric tell the layouts apart)."""
    return os.path.join(refs_dir, 'links', f'{system}.yaml')


# -- the file --------------------------------------------------------------

@dataclass
class LinkBaseline:
    """The validated content of one link-baseline file."""

    path: str
    system: str
    provenance: Dict
    #: {check: {partition: [(axes, key, {metric: LinkStat})]}}
    entries: Dict = field(default_factory=dict)

    def lookup(self, check: str, partition: str, axes: Mapping
               ) -> Optional[Tuple[str, Dict[str, LinkStat]]]:
        """``(key, stats)`` of the most specific point covering ``axes``."""
        point = {k: str(v) for k, v in axes.items()}
        best = None
        for ax, key, stats in self.entries.get(check, {}).get(partition, []):
            if all(point.get(k) == v for k, v in ax.items()):
                if best is None or len(ax) > len(best[0]):
                    best = (ax, key, stats)
        return None if best is None else (best[1], best[2])

    def describe(self) -> str:
        p = self.provenance
        return (f'{references._rel(self.path)} ({p["runs"]} healthy runs '
                f'{p["first"]} .. {p["last"]}, commit {p["commit"]})')


_num = references._number


def _stat(path, where, spec) -> LinkStat:
    references.check_fields(path, where, spec, _STAT_FIELDS,
                            ('median', 'mad', 'runs'), 'median, mad and runs')
    if not (_num(spec['median']) and spec['median'] > 0):
        raise ReferenceFileError(path, f'{where}.median', f'must be a '
                                 f'number > 0, got {spec["median"]!r}')
    if not (_num(spec['mad']) and spec['mad'] >= 0):
        raise ReferenceFileError(path, f'{where}.mad', f'must be a number '
                                 f'>= 0, got {spec["mad"]!r}')
    if not (isinstance(spec['runs'], int) and spec['runs'] >= 1):
        raise ReferenceFileError(path, f'{where}.runs', f'must be a whole '
                                 f'number >= 1, got {spec["runs"]!r}')
    for name in ('min', 'max'):
        if name in spec and not _num(spec[name]):
            raise ReferenceFileError(path, f'{where}.{name}', f'must be a '
                                     f'number, got {spec[name]!r}')
    return LinkStat(float(spec['median']), float(spec['mad']), spec['runs'],
                    spec.get('min'), spec.get('max'))


# long: one validation step per level of the file (top, provenance,
# check, partition, point, metric), each naming its key
def parse(data, path='?', system=None) -> LinkBaseline:
    """Validate loaded YAML; raises :class:`ReferenceFileError` naming the
    file and the key."""
    if not isinstance(data, Mapping):
        raise ReferenceFileError(path, '', 'top level must be a mapping '
                                 'with system, provenance and links')
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise ReferenceFileError(path, unknown[0], 'unknown top-level key '
                                 '(known: links, provenance, system)')
    fsys = data.get('system')
    if system is not None and fsys != system:
        raise ReferenceFileError(path, 'system', f'file is for system '
                                 f'{fsys!r}, expected {system!r}')
    prov = data.get('provenance')
    if not isinstance(prov, Mapping):
        raise ReferenceFileError(path, 'provenance', 'must be a mapping '
                                 f'with {", ".join(_PROVENANCE)}')
    for name in _PROVENANCE:
        if name not in prov:
            raise ReferenceFileError(path, f'provenance.{name}', 'missing '
                                     '(which runs, host and commit made '
                                     'this baseline)')
    if not isinstance(prov['sessions'], list) or not prov['sessions']:
        raise ReferenceFileError(path, 'provenance.sessions', 'must list '
                                 'the runs the baseline was learnt from')

    links = data.get('links')
    if not isinstance(links, Mapping) or not links:
        raise ReferenceFileError(path, 'links', 'must map check names to '
                                 'partitions')
    entries = {}
    for check, part, pwhere, points in references.partition_points(
            path, 'links', links, 'node links'):
        for key, metrics in points.items():
            kwhere = f'{pwhere}.{key}'
            axes = references.parse_axes(key, path, kwhere)
            if not isinstance(metrics, Mapping) or not metrics:
                raise ReferenceFileError(path, kwhere, 'must map node '
                                         'link metrics to statistics')
            stats = {}
            for metric, spec in metrics.items():
                mwhere = f'{kwhere}.{metric}'
                if not LINK_METRIC.match(str(metric)):
                    raise ReferenceFileError(
                        path, mwhere, 'not a node link metric '
                        '(bw_<node>_sent|recv|both or peer_<node>_...)')
                stats[str(metric)] = _stat(path, mwhere, spec)
            entries.setdefault(str(check), {}).setdefault(
                str(part), []).append((axes, str(key), stats))
    return LinkBaseline(path, fsys, dict(prov), entries)


def load(path, system=None) -> Optional[LinkBaseline]:
    """Load and validate ``path``; ``None`` if there is no such file."""
    data = references.read_yaml(path)
    return None if data is references._MISSING else parse(data, path, system)


def load_cached(path, system=None) -> Optional[LinkBaseline]:
    """:func:`load` once per file version."""
    return references.load_cached(path, system, load)


# -- learning --------------------------------------------------------------

def link_samples(samples: Sequence[Sample], check='^LinkMatrix$'
                 ) -> List[Sample]:
    """The node-link samples of the link-matrix checks."""
    rx = re.compile(check)
    return [s for s in samples
            if rx.search(s.key.check) and LINK_METRIC.match(s.key.metric)]


#: the baselines' one error for too few healthy runs
TooFewRuns = baseline.TooFewRuns


def learn(samples: Sequence[Sample], min_runs: int = 5) -> Dict:
    """``{(check, partition, point): {metric: LinkStat}}`` of every node
    link with at least ``min_runs`` runs (one sample per run)."""
    if min_runs < 1:
        raise ValueError('min_runs must be at least 1')
    out, short = {}, []
    for key, ss in group(samples).items():
        values = [s.value for s in ss]
        if len(values) < min_runs:
            short.append(f'{key.label()}: {len(values)} run(s)')
            continue
        out.setdefault((key.check, key.partition, key.point), {})[
            key.metric] = LinkStat(statistics.median(values),
                                   baseline.mad(values), len(values),
                                   min(values), max(values))
    if not out:
        raise TooFewRuns(f'no node link has {min_runs} healthy runs' +
                         (f' ({short[0]}, ...)' if short else
                          ': no link-matrix node figures selected'))
    return out


def _commit() -> str:
    try:
        proc = subprocess.run(['git', '-C', PROJECT_ROOT, 'rev-parse',
                               '--short', 'HEAD'], capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return 'unknown'
    return proc.stdout.strip() if proc.returncode == 0 else 'unknown'


def provenance(samples: Sequence[Sample], source: str) -> Dict:
    """Which runs, when, where and by which commit a baseline was made."""
    runs = sorted({s.run for s in samples})
    times = [s.time for s in samples]
    return {
        'written': dt.datetime.now(dt.timezone.utc).strftime(
            '%Y-%m-%dT%H:%M:%SZ'),
        'host': socket.gethostname(), 'commit': _commit(), 'source': source,
        'runs': len(runs),
        'first': iso_utc(min(times)) if times else '',
        'last': iso_utc(max(times)) if times else '',
        'sessions': runs,
    }


def _sig(x, digits=4):
    return baseline._sig(float(x), digits)


def render(system: str, table: Dict, prov: Dict) -> str:
    """The YAML text of a link-baseline file (through the project's
    ruamel writer); checked by :func:`parse` before it is returned."""
    links: Dict = {}
    for (check, part, point), stats in sorted(table.items()):
        links.setdefault(check, {}).setdefault(part, {})[point] = {
            metric: {'median': _sig(st.median), 'mad': _sig(st.mad, 3),
                     'runs': st.runs, 'min': _sig(st.min),
                     'max': _sig(st.max)}
            for metric, st in sorted(stats.items())}
    doc = {'system': system, 'provenance': prov, 'links': links}
    text = refwriter.dump(doc, header=[
        f'Link baselines of system {system}: each node link\'s healthy '
        f'level and spread',
        '(docs/reports/link-baselines.md). Written by: clustergate baseline '
        '--links; review the diff.'], flow_depth=5)
    parse(yaml.safe_load(text), '<rendered>', system)
    return text


# -- `clustergate baseline --links` ----------------------------------------

def _show(system, table, used, out):
    """What was learnt: per point, each judged figure's level and spread."""
    print(f'link baseline of {system}: '
          f'{sum(len(v) for v in table.values())} node link figure(s) of '
          f'{len(table)} point(s) from {len({s.run for s in used})} '
          f'healthy run(s)', file=out)
    for (check, part, point), stats in sorted(table.items()):
        print(f'  {check} {part} [{point}]', file=out)
        for metric, st in sorted(stats.items()):
            if metric.startswith(JUDGED + '_'):
                print(f'    {metric:<24} median {st.median:.4f}  MAD '
                      f'{st.mad:.4g} ({100 * st.mad / st.median:.1f} %)  '
                      f'{st.min:.4f} .. {st.max:.4f}  {st.runs} runs',
                      file=out)


def command(samples, source, out, err, system=None, check=None, since=None,
            last=None, min_runs=3, output=None, dry_run=False,
            refs_dir=None) -> int:
    """Learn the link baselines of ``samples`` (read from ``source``) and
    write the file ``output`` (default: :func:`link_file` under
    ``refs_dir``, the site's reference directory), or show it
    (``dry_run``); the options are those of ``clustergate baseline``,
    ``since`` in unix seconds. The exit status of the command."""
    import difflib

    systems = sorted({s.key.system for s in samples})
    system = system or (systems[0] if len(systems) == 1 else None)
    if system is None:
        print(f'clustergate baseline: error: the samples are from '
              f'{len(systems)} systems ({", ".join(systems) or "none"}): '
              f'choose one with --system', file=err)
        return 2

    chosen = link_samples(select(
        samples, system=system, since=since, last=last),
        check or '^LinkMatrix$')
    try:
        table = learn(chosen, min_runs=min_runs)
    except TooFewRuns as e:
        print(f'clustergate baseline: {e}', file=err)
        return 3

    used = [s for s in chosen
            if (s.key.check, s.key.partition, s.key.point) in table]
    try:
        text = render(system, table, provenance(used, source))
    except ReferenceFileError as e:
        # what we write must load: nothing is written
        print(f'clustergate baseline: error: {e}', file=err)
        return 2
    _show(system, table, used, out)
    path = output or link_file(refs_dir, system)
    old = refwriter.current_text(path)
    shown = references._rel(path)
    print(''.join(difflib.unified_diff(
        old.splitlines(True), text.splitlines(True), f'a/{shown}',
        f'b/{shown}')) or f'{shown}: unchanged', file=out)
    if dry_run:
        print('(dry run: nothing written)', file=out)
        return 0

    refwriter.write(path, text)
    print(f'wrote {path}', file=out)
    return 0
