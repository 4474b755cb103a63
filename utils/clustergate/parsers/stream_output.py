"""Parser for STREAM output: stream.c 5.10, McCalpin's stream_mpi.c and
the Fortran stream.f (5.6: ``Function  Rate (MB/s)`` table, ``Solution
Validates!``, ``Number of Threads = N``).

stream.c and stream_mpi.c print the same result table::

    Function    Best Rate MB/s  Avg time     Min time     Max time
    Copy:           34934.3     0.005040     0.004580     0.006830
    Scale:          ...
    Add:            ...
    Triad:          ...
    -------------------------------------------------------------
    Solution Validates: avg error less than 1.000000e-13 on all three arrays

stream.c reports ``Array size = N (elements)`` and, built with OpenMP,
``Number of Threads requested/counted``; stream_mpi.c reports ``Total
Aggregate Array size``, ``Data is distributed across N MPI ranks`` and
``Array size per MPI rank``.  STREAM's MB/s are 10**6 bytes per second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import ParseError, ending_hint

__all__ = ['StreamKernel', 'StreamResult', 'parse_stream', 'KERNELS']

#: Kernel names in the order STREAM prints them.
KERNELS = ('Copy', 'Scale', 'Add', 'Triad')

_KERNEL_RE = re.compile(
    r'^\s*(Copy|Scale|Add|Triad):\s+([\d.eE+-]+)\s+([\d.eE+-]+)\s+'
    r'([\d.eE+-]+)\s+([\d.eE+-]+)\s*$', re.M)
# stream.c: 'Function    Best Rate MB/s ...'; stream.f: 'Function     Rate
# (MB/s)  Avg time ...'
_TABLE_RE = re.compile(r'^\s*Function\s+(?:Best Rate MB/s|Rate \(MB/s\))',
                       re.M)
_VERSION_RE = re.compile(r'STREAM version \$Revision:\s*([\d.]+)', re.I)
_ARRAY_RE = re.compile(r'^\s*(?:Total Aggregate )?Array size\s*=\s*(\d+)', re.M)
_PER_RANK_RE = re.compile(r'Array size per MPI rank\s*=\s*(\d+)')
_RANKS_RE = re.compile(r'Data is distributed across\s+(\d+)\s+MPI ranks')
_OFFSET_RE = re.compile(r'Offset\s*=\s*(\d+)')
_BYTES_RE = re.compile(r'This system uses\s+(\d+)\s+bytes per array element')
_NTIMES_RE = re.compile(r'(?:Each kernel will be executed|You are running '
                         r'each test)\s+(\d+)\s+times')
_THREADS_REQ_RE = re.compile(r'Number of Threads requested\s*=\s*(\d+)')
# stream.f prints only 'Number of Threads = N' (what OpenMP gave it)
_THREADS_CNT_RE = re.compile(r'Number of Threads(?: counted)?\s*=\s*(\d+)')
_VALIDATES_RE = re.compile(r'^\s*Solution Validates', re.M)
# stream.c/stream_mpi.c print these when a check fails.
_FAILED_RE = re.compile(r'^\s*(Failed Validation.*|ERROR:.*)$', re.M)


@dataclass
class StreamKernel:
    """One row of the STREAM table (rate in MB/s, times in seconds)."""

    best_rate_mb_s: float
    avg_time_s: float
    min_time_s: float
    max_time_s: float


@dataclass
class StreamResult:
    """One STREAM run.

    ``array_size`` is the total number of elements per array (for
    stream_mpi.c the aggregate over all ranks; ``array_size_per_rank`` and
    ``mpi_ranks`` are set for it only).  ``threads`` is the OpenMP thread
    count STREAM counted (None when it printed none: a build without
    OpenMP).  ``validation_errors`` holds the failure lines when
    ``validates`` is False.
    """

    version: str
    kernels: Dict[str, StreamKernel]
    validates: bool
    array_size: Optional[int] = None
    array_size_per_rank: Optional[int] = None
    mpi_ranks: Optional[int] = None
    offset: Optional[int] = None
    bytes_per_element: Optional[int] = None
    ntimes: Optional[int] = None
    threads_requested: Optional[int] = None
    threads: Optional[int] = None
    validation_errors: List[str] = field(default_factory=list)

    def rate(self, kernel: str) -> float:
        """Best rate in MB/s of *kernel* (``'Copy'``... ``'Triad'``, any case)."""
        return self.kernels[kernel.capitalize()].best_rate_mb_s

    @property
    def triad_mb_s(self) -> float:
        """Best Triad rate in MB/s: the usual headline figure."""
        return self.rate('Triad')


def _int(regex: re.Pattern, text: str) -> Optional[int]:
    m = regex.search(text)
    return int(m.group(1)) if m else None


def parse_stream(text: str) -> StreamResult:
    """Parse the stdout of one STREAM run into a :class:`StreamResult`.

    Raises :class:`~clustergate.parsers.ParseError` when the result table
    or one of its four kernels is missing, or when the output has neither
    ``Solution Validates`` nor a validation-failure line (the run stopped
    before its check).
    """
    if not text or not text.strip():
        raise ParseError('STREAM output is empty')
    version_m = _VERSION_RE.search(text)
    if not _TABLE_RE.search(text):
        if not version_m:
            raise ParseError("not a STREAM output: no 'STREAM version' line "
                             "and no 'Function  Best Rate MB/s' table"
                             + ending_hint(text))
        raise ParseError("STREAM output has no 'Function  Best Rate MB/s' "
                         "result table" + ending_hint(text))

    kernels: Dict[str, StreamKernel] = {}
    for m in _KERNEL_RE.finditer(text):
        try:
            kernels[m.group(1)] = StreamKernel(*(float(g) for g in m.groups()[1:]))
        except ValueError:
            raise ParseError(f'STREAM {m.group(1)} row has a non-number: '
                             f'{m.group(0).strip()!r}') from None
    for name in KERNELS:
        if name not in kernels:
            raise ParseError(f"STREAM output has no '{name}:' result row"
                             + ending_hint(text))

    failures = [m.group(1).strip() for m in _FAILED_RE.finditer(text)]
    validates = bool(_VALIDATES_RE.search(text)) and not failures
    if not validates and not failures:
        raise ParseError("STREAM output has no 'Solution Validates' line "
                         "and no validation failure" + ending_hint(text))

    return StreamResult(
        version=version_m.group(1) if version_m else '',
        kernels=kernels,
        validates=validates,
        array_size=_int(_ARRAY_RE, text),
        array_size_per_rank=_int(_PER_RANK_RE, text),
        mpi_ranks=_int(_RANKS_RE, text),
        offset=_int(_OFFSET_RE, text),
        bytes_per_element=_int(_BYTES_RE, text),
        ntimes=_int(_NTIMES_RE, text),
        threads_requested=_int(_THREADS_REQ_RE, text),
        threads=_int(_THREADS_CNT_RE, text),
        validation_errors=failures,
    )
