"""Parser for OSU Micro-Benchmarks 7.x output (MPI benchmarks).

Typical output (after a leading blank line)::

    # OSU MPI Latency Test v7.4
    # Datatype: MPI_CHAR.
    # Size       Avg Latency(us)
    1                       0.15
    ...

Variants handled: ``-f`` adds ``Min Latency(us)``, ``Max Latency(us)``,
``Iterations``; ``-c`` adds ``Validation`` (``Pass``/``Fail``, and OMB stops
at the first failure with a ``DATA VALIDATION ERROR`` line); osu_barrier
prints one ``# Avg Latency(us)`` value with no size column; osu_mbw_mr
prints ``# [ pairs: N ] [ window size: W ]``.

Column names are normalised: ``Avg Latency(us)`` -> ``avg_latency_us``,
``Bandwidth (MB/s)`` -> ``bandwidth_mb_per_s``, ``MB/s`` -> ``mb_per_s``,
``Messages/s`` -> ``messages_per_s``, ``Validation`` -> ``validation``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

from . import ParseError, ending_hint, to_number

__all__ = ['OSUResult', 'parse_osu', 'normalise_osu_column']

Value = Union[int, float, str]

_TITLE_RE = re.compile(r'^#\s*OSU MPI(?:-[A-Z]+)?\s+(.*?)\s+Test\s+v(\S+)\s*$')
_MBW_RE = re.compile(r'\[\s*pairs:\s*(\d+)\s*\]\s*\[\s*window size:\s*(\d+)\s*\]')
_INFO_RE = re.compile(r'^#\s*([A-Za-z][\w ]*?):\s*(.*?)\.?\s*$')
_NUM_RE = re.compile(r'^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$')


def normalise_osu_column(name: str) -> str:
    """Map an OSU column header (``Avg Latency(us)``) to a key (``avg_latency_us``)."""
    key = name.strip().lower().replace('%', 'pct').replace('/', '_per_')
    key = re.sub(r'[^a-z0-9]+', '_', key)
    return key.strip('_')


@dataclass
class OSUResult:
    """One OSU benchmark run.

    ``benchmark`` is the title between ``OSU MPI`` and ``Test``
    (``"Latency"``, ``"Allreduce Latency"``, ``"Multiple Bandwidth /
    Message Rate"``).  ``rows`` are dicts keyed by ``columns``; numbers are
    int/float, the validation column keeps its ``Pass``/``Fail`` text.
    ``messages`` holds non-table lines printed after the table (e.g.
    ``DATA VALIDATION ERROR: ...``).  ``pairs``/``window_size`` are set for
    osu_mbw_mr only.
    """

    benchmark: str
    version: str
    columns: List[str]
    rows: List[Dict[str, Value]]
    datatype: Optional[str] = None
    pairs: Optional[int] = None
    window_size: Optional[int] = None
    info: Dict[str, str] = field(default_factory=dict)
    messages: List[str] = field(default_factory=list)

    @property
    def metric(self) -> str:
        """Name of the main measured column (first column that is not size)."""
        return next(c for c in self.columns if c != 'size')

    @property
    def value(self) -> float:
        """The single value of a size-less output such as osu_barrier."""
        if 'size' in self.columns or len(self.rows) != 1:
            raise ValueError(f'OSU {self.benchmark} output has '
                             f'{len(self.rows)} sized rows, not one value')
        return self.rows[0][self.metric]

    def column(self, key: str) -> List[Value]:
        """Return the values of column *key* row by row."""
        if key not in self.columns:
            raise KeyError(f'OSU {self.benchmark} output has no column '
                           f'{key!r}; it has {self.columns}')
        return [row[key] for row in self.rows]

    def by_size(self, key: Optional[str] = None) -> Dict[int, Value]:
        """Return ``{message size: value}`` for column *key* (default: metric)."""
        return dict(zip(self.column('size'), self.column(key or self.metric)))

    @property
    def max_size(self) -> Optional[int]:
        """Largest message size measured, None for size-less outputs."""
        return self.rows[-1]['size'] if 'size' in self.columns else None

    @property
    def validated(self) -> Optional[bool]:
        """True/False when run with ``-c``; None when there was no check."""
        if 'validation' not in self.columns:
            return None
        return (all(str(v).lower() == 'pass' for v in self.column('validation'))
                and not any('VALIDATION ERROR' in m for m in self.messages))


# long: one pass over the lines, a small state machine (title, header,
# rows, messages) whose states share the table being filled
def parse_osu(text: str, *, max_size: Optional[int] = None) -> OSUResult:
    """Parse the stdout of one OSU 7.x MPI benchmark into an :class:`OSUResult`.

    With *max_size*, also raise when the table stops before that message
    size (OSU prints no end marker, so this is how a cut-short run of a
    sized benchmark is told from a complete one).

    Raises :class:`~clustergate.parsers.ParseError` when the title line,
    the column header or the rows are missing, or a row does not fit its
    header.
    """
    if not text or not text.strip():
        raise ParseError('OSU output is empty')

    title = None
    comments: List[str] = []
    columns: List[str] = []
    rows: List[Dict[str, Value]] = []
    messages: List[str] = []
    closed = False   # set by the first non-row line after the table
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if title is None:
            # Anything before the title (launcher noise) is ignored.
            title = _TITLE_RE.match(stripped)
            continue
        cells = stripped.split()
        is_row = bool(_NUM_RE.match(cells[0]))
        if not rows and not is_row:
            if stripped.startswith('#'):
                comments.append(stripped)
            else:
                messages.append(stripped)
            continue
        if closed or not is_row:
            # Text after the table, e.g. "DATA VALIDATION ERROR: ...".
            closed = True
            messages.append(stripped)
            continue
        if not columns:
            header = _pick_header(comments)
            if header is None:
                raise ParseError(f"OSU {title.group(1)} output has no column "
                                 "header line (e.g. '# Size  Avg "
                                 f"Latency(us)') before its first row "
                                 f"(line {lineno})")
            columns = [normalise_osu_column(c)
                       for c in re.split(r'\s{2,}', header.lstrip('#').strip())]
        if len(cells) != len(columns):
            raise ParseError(
                f'OSU {title.group(1)}: line {lineno} has {len(cells)} values, '
                f'header has {len(columns)} ({", ".join(columns)}): '
                f'{stripped!r} (run cut short?)')
        rows.append({k: to_number(v) for k, v in zip(columns, cells)})

    if title is None:
        raise ParseError("not an OSU output: no '# OSU MPI <name> Test vX' "
                         "title line" + ending_hint(text))
    benchmark, version = title.group(1), title.group(2)
    if not rows:
        if _pick_header(comments) is None:
            raise ParseError(f"OSU {benchmark} output has no column header "
                             f"line" + ending_hint(text))
        raise ParseError(f'OSU {benchmark} output has no result rows'
                         + ending_hint(text))

    result = OSUResult(benchmark=benchmark, version=version,
                       columns=columns, rows=rows, messages=messages)
    for c in comments:
        mbw = _MBW_RE.search(c)
        if mbw:
            result.pairs, result.window_size = int(mbw.group(1)), int(mbw.group(2))
            continue
        info = _INFO_RE.match(c)
        if info:
            result.info[info.group(1).strip().lower()] = info.group(2)
    result.datatype = result.info.get('datatype')

    if max_size is not None:
        if result.max_size is None:
            raise ParseError(f'OSU {benchmark} output has no size column, '
                             f'cannot check max_size={max_size}')
        if result.max_size < max_size:
            raise ParseError(f'OSU {benchmark} output stops at '
                             f'{result.max_size} bytes, expected up to '
                             f'{max_size} (run cut short?)')
    return result


def _pick_header(comments: List[str]) -> Optional[str]:
    """Return the column-header comment: the last one that is not info.

    Info lines look like ``# Datatype: MPI_CHAR.`` or ``# [ pairs: 1 ] ...``.
    """
    for c in reversed(comments):
        if _TITLE_RE.match(c) or _MBW_RE.search(c) or _INFO_RE.match(c):
            continue
        if c.lstrip('#').strip():
            return c
    return None
