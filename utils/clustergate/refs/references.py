"""Performance references kept in files, one YAML per system.

``config/references/<system>.yaml`` (the directory can be moved with
``CG_REFERENCES_DIR``) holds, per check (class name), partition and point of
the sweep, one reference per performance variable::

    system: emucluster
    references:
      PingPongDistance:                 # check (class name)
        emu:                            # partition
          interconnect=fab0,msg_bytes=1000000,num_nodes=4,ppn=1:
            bandwidth: {value: 112.4, lower: -0.1, upper: 0.3, unit: MB/s}
            latency: {value: 8893.0, lower: -0.3, upper: 0.1, unit: us}

The point key lists ``axis=value`` pairs (any parameter of the check:
``num_nodes``, ``ppn``, ``interconnect``, ``msg_bytes``, a class, ...),
comma separated. A key may name only some axes: it then covers every point
that agrees on those (``*`` covers all points); the entry naming the most
axes wins. ``lower``/``upper`` are ReFrame's relative thresholds
(``lower`` <= 0 <= ``upper``, ``null`` = unbounded). Optional fields written
by ``clustergate baseline`` for review: ``direction``, ``runs``, ``median``,
``mad``, ``min``, ``max``. Which side of a metric is better is declared
by its check (:mod:`clustergate.refs.directions`), not by the file; a value
beyond the better-side bound passes and is reported unless the partition
says ``improvements: fail`` (:func:`judged_bounds`).

We load the file ourselves rather than with ReFrame's ``$ref``/``$index``
because the axes differ between checks (an ``$index`` is per class), a key
may cover several points, and a malformed file must be reported naming the
file and the key (see :class:`ReferenceFileError`).

The setup hook of :class:`clustergate.rfm.point.base.PointTest` calls :func:`apply`
after setup: a point with an entry gets ``self.reference``; one without
gets ``reference_status = 'no reference'`` (logged in the perflog and shown
by ``clustergate report``), so it is never mistaken for a checked one.
"""

import math
import os
from typing import Dict, List, Mapping, Optional, Tuple

import yaml

from clustergate import PROJECT_ROOT

#: Status of a test point that has no entry in its system's file
NO_REFERENCE = 'no reference'

_METRIC_FIELDS = {'value', 'lower', 'upper', 'unit', 'direction', 'runs',
                  'median', 'mad', 'min', 'max'}
DIRECTIONS = ('lower', 'higher', 'both')


class ReferenceFileError(ValueError):
    """A reference file is malformed; the message names file and key."""

    def __init__(self, path, key, problem):
        self.path, self.key, self.problem = path, key, problem
        where = f'{path}: key {key!r}' if key else str(path)
        super().__init__(f'malformed reference file {where}: {problem}')


def reference_file(directory: str, system: str,
                   reference_set: Optional[str] = None) -> str:
    """The reference file of ``system`` in ``directory`` (the site's,
    :func:`clustergate.site.environment.references_dir`), or of its
    ``reference_set`` (a partition's ``reference_set`` extras key):
    ``<system>.<set>.yaml``."""
    name = f'{system}.{reference_set}' if reference_set else system
    return os.path.join(directory, f'{name}.yaml')


def system_of_file(path: str) -> str:
    """The system a reference file is for, from its name: ``<system>.yaml``
    or ``<system>.<set>.yaml`` (system names have no dot)."""
    return os.path.basename(path)[:-len('.yaml')].split('.')[0]


# -- point keys ------------------------------------------------------------

def format_axes(axes: Mapping) -> str:
    """Canonical key of a point: ``a=1,b=x`` sorted by axis name."""
    if not axes:
        return '*'

    return ','.join(f'{k}={axes[k]}' for k in sorted(axes))


def parse_axes(key, path='?', where='') -> Dict[str, str]:
    """``'a=1,b=x'`` -> ``{'a': '1', 'b': 'x'}``; ``'*'`` -> ``{}``."""
    if not isinstance(key, str):
        raise ReferenceFileError(path, where, f'point key must be a string '
                                 f'of axis=value pairs, got {key!r}')

    key = key.strip()
    if key in ('*', ''):
        return {}

    axes = {}
    for part in key.split(','):
        name, sep, value = part.partition('=')
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise ReferenceFileError(
                path, where, f'point key must be axis=value pairs separated '
                f'by commas (or "*"), got {part!r}'
            )

        if name in axes:
            raise ReferenceFileError(path, where, f'axis {name!r} twice')

        axes[name] = value

    return axes


# -- one entry -------------------------------------------------------------

def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and \
        math.isfinite(x)


def check_fields(path, where, spec, known, required, what):
    """``spec`` is a mapping of ``known`` fields with every ``required``
    one (``what``: how the message describes it); raises
    :class:`ReferenceFileError` naming the key."""
    if not isinstance(spec, Mapping):
        raise ReferenceFileError(path, where, f'must be a mapping with '
                                 f'{what}')

    unknown = sorted(set(spec) - set(known))
    if unknown:
        raise ReferenceFileError(path, where, f'unknown field(s) '
                                 f'{", ".join(unknown)} (known: '
                                 f'{", ".join(sorted(known))})')

    for field in required:
        if field not in spec:
            raise ReferenceFileError(path, where,
                                     f'missing field {field!r}')


def _check_metric(path, where, spec):
    check_fields(path, where, spec, _METRIC_FIELDS,
                 ('value', 'lower', 'upper'), 'value, lower, upper and unit')

    value, lower, upper = spec['value'], spec['lower'], spec['upper']
    if not _number(value):
        raise ReferenceFileError(path, f'{where}.value',
                                 f'must be a number, got {value!r}')

    if lower is not None and not (_number(lower) and lower <= 0):
        raise ReferenceFileError(path, f'{where}.lower',
                                 f'must be a number <= 0 (relative '
                                 f'threshold) or null, got {lower!r}')

    if upper is not None and not (_number(upper) and upper >= 0):
        raise ReferenceFileError(path, f'{where}.upper',
                                 f'must be a number >= 0 (relative '
                                 f'threshold) or null, got {upper!r}')

    unit = spec.get('unit')
    if unit is not None and not isinstance(unit, str):
        raise ReferenceFileError(path, f'{where}.unit',
                                 f'must be a string or null, got {unit!r}')

    direction = spec.get('direction', 'both')
    if direction not in DIRECTIONS:
        raise ReferenceFileError(path, f'{where}.direction',
                                 f'must be one of {DIRECTIONS}, got '
                                 f'{direction!r}')

    return (float(value), lower, upper, unit)


class ReferenceSet:
    """The validated content of one reference file."""

    def __init__(self, path, system, entries, raw):
        self.path = path
        self.system = system
        #: {check: {partition: [(axes, key, {metric: reftuple})]}}
        self.entries = entries
        self.raw = raw

    def lookup(self, check: str, partition: str, axes: Mapping
               ) -> Optional[Tuple[str, Dict[str, tuple]]]:
        """``(key, {metric: (value, lower, upper, unit)})`` of the most
        specific entry covering the point ``axes``, or ``None``."""
        cands = self.entries.get(check, {}).get(partition, [])
        point = {k: str(v) for k, v in axes.items()}
        best = None
        for ax, key, metrics in cands:
            if all(point.get(k) == v for k, v in ax.items()):
                if best is None or len(ax) > len(best[0]):
                    best = (ax, key, metrics)

        return None if best is None else (best[1], best[2])

    def __len__(self):
        return sum(len(v) for p in self.entries.values() for v in p.values())


def _parse_points(path, where, points):
    """[(axes, key, {metric: tuple})] of one partition's mapping of point
    keys to metrics; raises ReferenceFileError naming the key."""
    seen = {}
    parsed = []
    for key, metrics in points.items():
        kwhere = f'{where}.{key}'
        axes = parse_axes(key, path, kwhere)
        canon = format_axes(axes)
        if canon in seen:
            raise ReferenceFileError(path, kwhere, f'same point as '
                                     f'{seen[canon]!r}')

        seen[canon] = key
        if not isinstance(metrics, Mapping) or not metrics:
            raise ReferenceFileError(path, kwhere, 'must map performance '
                                     'variables to '
                                     '{value, lower, upper, unit}')

        tuples = {str(metric): _check_metric(path, f'{kwhere}.{metric}', spec)
                  for metric, spec in metrics.items()}
        parsed.append((axes, str(key), tuples))

    return parsed


def parse(data, path='?', system=None) -> ReferenceSet:
    """Validate the loaded YAML ``data``; raises :class:`ReferenceFileError`
    naming the offending key."""
    if data is None:
        data = {}

    if not isinstance(data, Mapping):
        raise ReferenceFileError(path, '', 'top level must be a mapping '
                                 'with "system" and "references"')

    unknown = sorted(set(data) - {'system', 'references', 'generated'})
    if unknown:
        raise ReferenceFileError(path, unknown[0], 'unknown top-level key '
                                 '(known: system, references, generated)')

    fsys = data.get('system', system)
    if system is not None and fsys != system:
        raise ReferenceFileError(path, 'system', f'file is for system '
                                 f'{fsys!r}, expected {system!r}')

    refs = data.get('references') or {}
    if not isinstance(refs, Mapping):
        raise ReferenceFileError(path, 'references', 'must map check names '
                                 'to partitions')

    entries = {}
    for check, part, pwhere, points in partition_points(path, 'references',
                                                        refs):
        parsed = _parse_points(path, pwhere, points)
        if parsed:
            entries.setdefault(str(check), {}).setdefault(
                str(part), []).extend(parsed)

    return ReferenceSet(path, fsys, entries, data)


def partition_points(path, top, tree, what='metrics'):
    """``(check, partition, where, points)`` of a ``check -> partition ->
    point key -> ...`` mapping under the top-level key ``top`` (reference
    files, link baselines); raises :class:`ReferenceFileError` naming the
    key that is not a mapping."""
    for check, parts in tree.items():
        where = f'{top}.{check}'
        if not isinstance(parts, Mapping):
            raise ReferenceFileError(path, where, 'must map partition names '
                                     'to points')

        for part, points in parts.items():
            pwhere = f'{where}.{part}'
            if not isinstance(points, Mapping):
                raise ReferenceFileError(path, pwhere, f'must map point keys '
                                         f'(axis=value,...) to {what}')

            yield check, part, pwhere, points


_MISSING = object()


def read_yaml(path):
    """The YAML data of ``path`` (a file under config/references/), or
    :data:`_MISSING` if there is no such file; raises
    :class:`ReferenceFileError` naming the line of a syntax error."""
    try:
        with open(path) as fp:
            text = fp.read()
    except FileNotFoundError:
        return _MISSING

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, 'problem_mark', None)
        where = f'line {mark.line + 1}' if mark else ''
        raise ReferenceFileError(path, where, f'not valid YAML: '
                                 f'{getattr(err, "problem", err)}') from None


def load(path, system=None) -> Optional[ReferenceSet]:
    """Load and validate ``path``; ``None`` if the file does not exist."""
    data = read_yaml(path)
    return None if data is _MISSING else parse(data, path, system)


_cache: Dict[tuple, tuple] = {}


def load_cached(path, system=None, loader=None):
    """:func:`load` (or ``loader``, e.g. of link baselines) once per file
    version (the hook runs for every test)."""
    loader = loader or load
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        mtime = None

    hit = _cache.get((path, loader))
    if hit is not None and hit[0] == mtime:
        return hit[1]

    refs = loader(path, system)
    _cache[(path, loader)] = (mtime, refs)
    return refs


def _rel(path):
    try:
        rel = os.path.relpath(path, PROJECT_ROOT)
    except ValueError:
        return path

    return path if rel.startswith('..') else rel


def status_of(ref, lower, upper) -> str:
    """Human status of one perflog/DB metric from its reference fields."""
    if ref in (None, 0, 0.0) and lower is None and upper is None:
        return NO_REFERENCE

    return 'checked'


def metric_entries(refs: ReferenceSet) -> List[Tuple[str, str, str, str,
                                                     tuple]]:
    """Flat ``(check, partition, key, metric, reftuple)`` list."""
    out = []
    for check, parts in refs.entries.items():
        for part, points in parts.items():
            for _, key, metrics in points:
                for metric, tup in metrics.items():
                    out.append((check, part, key, metric, tup))

    return out
