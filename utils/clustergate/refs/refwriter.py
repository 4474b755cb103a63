"""Writes a baseline into an existing reference file without losing what a
person wrote there.

A reference file is reviewed and edited by hand: a comment saying why a
tolerance was widened, a point key written in another order, a check kept
that these runs did not measure. Re-rendering the file from a table lost
all that; here the file is loaded with ruamel.yaml's round-trip mode,
only the measured entries are changed in place (their neighbours, the
comments attached to them and the keys' spelling stay), and the result is
dumped back. New checks, partitions and points are inserted in sorted
position, one metric per line as flow mappings; a new file is written
the same way from an empty text.

The header comment that ``clustergate baseline`` writes (what runs made
the file) is replaced by the new one; any other comment is kept.
"""

import io
import math
import os
from typing import Dict, Sequence, Tuple

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from clustergate.refs import references

#: field order of one metric
FIELD_ORDER = ('value', 'lower', 'upper', 'unit', 'direction', 'runs', 'mad',
               'min', 'max', 'median')
#: first and last line of the header comment written by the baseline
HEADER_FIRST = '# Performance references of system'
HEADER_LAST = '# Review the diff before committing; edit by hand where needed.'

Table = Dict[Tuple[str, str, str], Dict[str, Dict]]


def _yaml():
    y = YAML()
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    # ruamel writes None as an empty value; the files say null
    y.representer.add_representer(
        type(None),
        lambda rep, _: rep.represent_scalar('tag:yaml.org,2002:null', 'null')
    )
    y.representer.add_representer(
        float,
        lambda rep, x: rep.represent_scalar('tag:yaml.org,2002:float',
                                            float_text(x)))
    return y


def float_text(x: float) -> str:
    """``x`` as a YAML scalar that YAML 1.1 (PyYAML, which validates the
    files) and YAML 1.2 (ruamel, which rewrites them) both read back as
    the same float: the shortest text that round-trips (``repr``), with a
    ``.0`` before an exponent that has no point (YAML 1.1 reads ``6e-06``
    as a string) and the special values in YAML's spelling."""
    if math.isnan(x):
        return '.nan'
    if math.isinf(x):
        return '.inf' if x > 0 else '-.inf'
    text = repr(float(x))
    mant, e, exp = text.partition('e')
    if e and '.' not in mant:
        mant += '.0'
    if e and exp[0] not in '+-':
        exp = '+' + exp
    return mant + e + exp


def _plain(x):
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return int(x)

    if isinstance(x, str):
        return DoubleQuotedScalarString(x)

    return x


def _metric_map(spec: Dict, ordered=False) -> CommentedMap:
    keys = list(spec) if ordered else \
        [k for k in FIELD_ORDER if k in spec] + \
        sorted(k for k in spec if k not in FIELD_ORDER)
    out = CommentedMap((k, _plain(spec[k])) for k in keys)
    out.fa.set_flow_style()
    return out


def _insert_sorted(mapping: CommentedMap, key, value):
    pos = sum(1 for k in mapping if str(k) < str(key))
    mapping.insert(pos, DoubleQuotedScalarString(key), value)
    return value


def _child(mapping: CommentedMap, key) -> CommentedMap:
    if not isinstance(mapping.get(key), CommentedMap):
        if key in mapping:
            mapping[key] = CommentedMap()
        else:
            _insert_sorted(mapping, key, CommentedMap())

    return mapping[key]


def _point_key(points: CommentedMap, point: str):
    """The key of ``points`` naming the same point as ``point`` (a hand
    written key may order its axes differently)."""
    for key in points:
        try:
            if references.format_axes(references.parse_axes(key)) == point:
                return key
        except references.ReferenceFileError:
            continue

    return None


def _load(old_text: str, system: str) -> CommentedMap:
    doc = _yaml().load(old_text) if old_text.strip() else None
    if not isinstance(doc, CommentedMap):
        doc = CommentedMap()

    if 'system' not in doc:
        doc.insert(0, 'system', DoubleQuotedScalarString(system))

    if not isinstance(doc.get('references'), CommentedMap):
        doc['references'] = CommentedMap()

    return doc


def _drop_unmeasured(refs: CommentedMap, measured: Table):
    keep = {(str(c), str(p), pt) for c, p, pt in measured}
    for check in list(refs):
        for part in list(refs[check] or {}):
            for key in list(refs[check][part] or {}):
                point = references.format_axes(references.parse_axes(key))
                if (str(check), str(part), point) not in keep:
                    del refs[check][part][key]

            if not refs[check][part]:
                del refs[check][part]

        if not refs[check]:
            del refs[check]


def _with_header(text: str, header: Sequence[str]) -> str:
    lines = text.splitlines(True)
    if lines and lines[0].startswith(HEADER_FIRST):
        end = next((i for i, ln in enumerate(lines)
                    if ln.rstrip('\n') == HEADER_LAST), None)
        if end is not None:
            lines = lines[end + 1:]

    return ''.join(f'# {c}\n' for c in header) + ''.join(lines)


def update(old_text: str, system: str, measured: Table,
           header: Sequence[str] = (), replace=False) -> str:
    """The text of the reference file ``old_text`` (may be empty) with the
    entries of ``measured`` (``{(check, partition, point): {metric:
    spec}}``, as :func:`clustergate.refs.baseline.entries`) written in; with
    ``replace``, points not measured are dropped."""
    doc = _load(old_text, system)
    refs = doc['references']
    if replace:
        _drop_unmeasured(refs, measured)

    for (check, part, point), metrics in sorted(measured.items()):
        points = _child(_child(refs, check), part)
        key = _point_key(points, point)
        if key is None:
            key = point
            _insert_sorted(points, key, CommentedMap())

        entry = points[key]
        for metric in sorted(metrics):
            new = _metric_map(metrics[metric])
            cur = entry.get(metric)
            if isinstance(cur, CommentedMap):
                # refilled in place: a comment at the end of the line
                # belongs to this mapping (or to the key) and stays
                if dict(cur) != dict(new):
                    for field in list(cur):
                        del cur[field]
                    cur.update(new)
            elif metric in entry:
                entry[metric] = new
            else:
                _insert_sorted(entry, metric, new)

    out = io.StringIO()
    _yaml().dump(doc, out)
    return _with_header(out.getvalue(), header)


def dump(doc: Dict, header: Sequence[str] = (), flow_depth: int = 4) -> str:
    """YAML text of a nested ``doc`` (dicts, lists, scalars) in the style
    of the reference files: keys quoted, mappings at ``flow_depth`` (one
    metric each, their fields in the order given) on one line, a
    ``# header`` comment on top (other structured files under
    config/references/, e.g. link baselines)."""
    def conv(x, depth):
        if isinstance(x, dict):
            if depth >= flow_depth:
                return _metric_map(x, ordered=True)
            return CommentedMap((DoubleQuotedScalarString(str(k))
                                 if depth else str(k), conv(v, depth + 1))
                                for k, v in x.items())
        if isinstance(x, (list, tuple)):
            return [conv(v, depth + 1) for v in x]
        return _plain(x)

    out = io.StringIO()
    _yaml().dump(conv(doc, 0), out)
    return ''.join(f'# {c}\n' for c in header) + out.getvalue()


def current_text(path: str) -> str:
    """The text of the file ``path`` as it is, empty if there is none."""
    try:
        with open(path) as fp:
            return fp.read()
    except FileNotFoundError:
        return ''


def write(path: str, text: str):
    """Write ``text`` to ``path`` (its directory made if need be) through
    a file beside it, renamed over it: a session reading the file while
    it is written sees the old one or the new one, never half of one."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + '.tmp', 'w') as fp:
        fp.write(text)
    os.replace(path + '.tmp', path)
