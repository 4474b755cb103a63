"""Parser for Intel MPI Benchmarks (IMB-MPI1 and friends) 2021.x output.

An IMB run prints a header, then one block per benchmark *and* process
count::

    #---------------------------------------------------
    # Benchmarking PingPong
    # #processes = 2
    # ( 2 additional processes waiting in MPI_Barrier)
    #---------------------------------------------------
           #bytes #repetitions      t[usec]   Mbytes/sec
                0         1000         0.11         0.00
                ...

and ends with ``# All processes entering MPI_Finalize``.  Without
``-npmin`` a collective is repeated for 2, 4, ... processes, so one name
can own several blocks.  Barrier has no ``#bytes`` column.  IMB's
``Mbytes/sec`` is 10**6 bytes per second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

from . import ParseError, ending_hint, to_number

__all__ = ['IMBBlock', 'IMBResult', 'parse_imb', 'normalise_imb_column']

Number = Union[int, float]

_FINALIZE = '# All processes entering MPI_Finalize'
_VERSION_RE = re.compile(r'Intel\(R\) MPI Benchmarks\s+(\S+?),?\s+(.*?)\s*$', re.M)
_BENCH_RE = re.compile(r'^#\s*Benchmarking\s+(\S+)')
_NPROCS_RE = re.compile(r'^#\s*#processes\s*=\s*(\d+)')
_GROUPS_RE = re.compile(
    r'^#\s*\(\s*(\d+)\s+groups? of\s+(\d+)\s+process')
_WAITING_RE = re.compile(
    r'^#\s*\(\s*(\d+)\s+additional process(?:es)? waiting in MPI_Barrier')
# IMB gives up on a benchmark when its time budget (-time, 10 s per sample
# by default) is spent: "  2048 time-out.; Time limit (...) is over; ..."
_TIMEOUT_RE = re.compile(r'^(\d+)\s+time-out\.')
# A benchmark IMB cannot run at this process count (it then skips it)
_INVALID_RE = re.compile(r'!! Benchmark (\S+) invalid for (\d+) processes !!')

# Fixed names for the columns IMB prints; anything else goes through the
# generic rule in normalise_imb_column().
_COLUMN_NAMES = {
    '#bytes': 'bytes',
    '#repetitions': 'repetitions',
    't[usec]': 't_usec',
    't_min[usec]': 't_min_usec',
    't_max[usec]': 't_max_usec',
    't_avg[usec]': 't_avg_usec',
    'mbytes/sec': 'mbytes_per_sec',
    'msg/sec': 'msg_per_sec',
    't_ovrl[usec]': 't_ovrl_usec',
    't_pure[usec]': 't_pure_usec',
    't_cpu[usec]': 't_cpu_usec',
    'overlap[%]': 'overlap_pct',
    'defects': 'defects',
    'group': 'group',
}


def normalise_imb_column(name: str) -> str:
    """Map an IMB column header (``t_min[usec]``) to a key (``t_min_usec``)."""
    key = name.strip().lower()
    if key in _COLUMN_NAMES:
        return _COLUMN_NAMES[key]
    key = key.lstrip('#').replace('%', 'pct').replace('/', '_per_')
    key = re.sub(r'[^a-z0-9]+', '_', key)
    return key.strip('_')


@dataclass
class IMBBlock:
    """One ``# Benchmarking <name>`` block at one process count.

    ``rows`` are dicts keyed by the normalised column names in
    ``columns``.  ``waiting`` is the number of extra ranks IMB parked in
    MPI_Barrier for this block; ``groups`` is >1 only for ``-multi`` runs.
    ``timed_out_at`` is the message size at which IMB stopped the block
    because its time limit ran out (the rows before it are complete).
    """

    name: str
    processes: int
    columns: List[str]
    rows: List[Dict[str, Number]] = field(default_factory=list)
    waiting: int = 0
    groups: int = 1
    timed_out_at: Optional[int] = None

    def column(self, key: str) -> List[Number]:
        """Return the values of column *key* (e.g. ``'t_usec'``) row by row."""
        if key not in self.columns:
            raise KeyError(f'IMB {self.name} block has no column {key!r}; '
                           f'it has {self.columns}')
        return [row[key] for row in self.rows]

    def by_bytes(self, key: str) -> Dict[int, Number]:
        """Return ``{message size in bytes: value of column key}``."""
        if 'bytes' not in self.columns:
            raise KeyError(f'IMB {self.name} block has no #bytes column')
        return dict(zip(self.column('bytes'), self.column(key)))


@dataclass
class IMBResult:
    """A whole IMB run: version line, blocks in output order, completion.

    ``complete`` is False only when :func:`parse_imb` was asked to accept
    output without the ``MPI_Finalize`` marker.
    """

    version: str
    suite: str
    blocks: List[IMBBlock]
    complete: bool = True

    def find(self, name: str, processes: Optional[int] = None) -> List[IMBBlock]:
        """Return all blocks of benchmark *name* (case-insensitive).

        With *processes*, only the blocks run at that process count.
        """
        return [b for b in self.blocks
                if b.name.lower() == name.lower()
                and (processes is None or b.processes == processes)]

    def block(self, name: str, processes: Optional[int] = None) -> IMBBlock:
        """Return the single block for *name* (at *processes* if given).

        Without *processes*, the block with the largest process count is
        returned (the one that exercised every rank).
        """
        found = self.find(name, processes)
        if not found:
            where = f' with {processes} processes' if processes else ''
            raise KeyError(f'IMB output has no {name} block{where}; it has '
                           f'{[(b.name, b.processes) for b in self.blocks]}')
        return max(found, key=lambda b: b.processes)


# long: one pass over the lines, a small state machine (header, block,
# table rows, end marker) whose states share the block being filled
def parse_imb(text: str, *, allow_incomplete: bool = False) -> IMBResult:
    """Parse the stdout of one IMB run into an :class:`IMBResult`.

    Raises :class:`~clustergate.parsers.ParseError` if the output has no
    benchmark block, a block has no table rows, a row does not fit its
    header, or -- unless *allow_incomplete* -- the ``# All processes
    entering MPI_Finalize`` marker is missing (the run did not finish).
    """
    if not text or not text.strip():
        raise ParseError('IMB output is empty')

    m = _VERSION_RE.search(text)
    version, suite = (m.group(1), m.group(2)) if m else ('', '')

    blocks: List[IMBBlock] = []
    current: Optional[IMBBlock] = None
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        bm = _BENCH_RE.match(stripped)
        if bm:
            current = IMBBlock(name=bm.group(1), processes=0, columns=[])
            blocks.append(current)
            continue
        if current is None:
            continue
        cells = stripped.split()
        if '#bytes' in cells or '#repetitions' in cells:
            # Column header; in -multi mode it starts with "Group", not "#".
            current.columns = [normalise_imb_column(c) for c in cells]
            continue
        if stripped.startswith('#'):
            # Header lines of the block (or the final marker).
            if (pm := _NPROCS_RE.match(stripped)):
                current.processes = int(pm.group(1))
            elif (gm := _GROUPS_RE.match(stripped)):
                current.groups = int(gm.group(1))
                current.processes = int(gm.group(2))
            elif (wm := _WAITING_RE.match(stripped)):
                current.waiting = int(wm.group(1))
            elif stripped.startswith(_FINALIZE):
                current = None
            continue
        if not current.columns:
            continue   # free text between block header and table
        if (tm := _TIMEOUT_RE.match(stripped)):
            current.timed_out_at = int(tm.group(1))
            continue
        if len(cells) != len(current.columns):
            raise ParseError(
                f'IMB {current.name} ({current.processes} processes): line '
                f'{lineno} has {len(cells)} values, header has '
                f'{len(current.columns)} ({" ".join(current.columns)}): '
                f'{stripped!r}')
        current.rows.append({k: to_number(v)
                             for k, v in zip(current.columns, cells)})

    if not blocks:
        refused = _INVALID_RE.search(text)
        if refused:
            # IMB skips a benchmark it cannot run at this process count
            # (PingPong on 1 process) and still exits 0
            raise ParseError(f'IMB refused {refused.group(1)}: invalid for '
                             f'{refused.group(2)} process(es)')
        if not m:
            raise ParseError("not an IMB output: no 'Intel(R) MPI Benchmarks' "
                             "header and no '# Benchmarking' block"
                             + ending_hint(text))
        raise ParseError("IMB output has no '# Benchmarking <name>' block"
                         + ending_hint(text))
    for b in blocks:
        if not b.processes:
            raise ParseError(f"IMB {b.name} block has no '# #processes = N' "
                             f"line" + ending_hint(text))
        if not b.columns:
            raise ParseError(f'IMB {b.name} ({b.processes} processes) block '
                             f'has no column header' + ending_hint(text))
        if not b.rows:
            raise ParseError(f'IMB {b.name} ({b.processes} processes) block '
                             f'has no result rows' + ending_hint(text))

    complete = _FINALIZE in text
    if not complete and not allow_incomplete:
        last = blocks[-1]
        raise ParseError(
            f"IMB output has no '{_FINALIZE}' line (run cut short during or "
            f"after {last.name} with {last.processes} processes; output ends "
            f"with: {text.strip().splitlines()[-1].strip()!r})")
    return IMBResult(version=version, suite=suite, blocks=blocks,
                     complete=complete)
