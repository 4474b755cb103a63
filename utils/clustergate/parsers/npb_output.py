"""Parser for the NAS Parallel Benchmarks 3.4.x (MPI) summary block.

Every NPB kernel ends with the same ``print_results`` block::

     CG Benchmark Completed.
     Class           =                        A
     Size            =                    14000
     Iterations      =                       15
     Time in seconds =                     0.36
     Total processes =                        2
     Active procs    =                        2
     Mop/s total     =                  4117.81
     Mop/s/process   =                  2058.91
     Operation type  =           floating point
     Verification    =               SUCCESSFUL
     Version         =                      3.4

NPB 3.4.1 relabels some lines (``Active processes=``) and its banner still
says 3.4, so labels are matched loosely and the version is taken from the
``Version =`` line, not from the banner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict

from . import ParseError, ending_hint

__all__ = ['NPBResult', 'parse_npb']


@dataclass
class NPBResult:
    """Summary of one NPB run.

    ``size`` is the problem size as printed with blanks removed
    (``"14000"``, ``"64x64x64"``); ``mops_per_process`` is NPB's own figure
    (total divided by *total*, not active, processes).  ``iterations`` is 0
    for EP, which has none.  ``extra`` keeps summary lines this parser has
    no field for (``Compile date``, ...) under their lower-cased label.
    """

    benchmark: str
    npb_class: str
    size: str
    iterations: int
    time_s: float
    total_processes: int
    active_processes: int
    mops_total: float
    mops_per_process: float
    operation_type: str
    verification: str
    version: str
    extra: Dict[str, str] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        """True when NPB reported ``Verification = SUCCESSFUL``."""
        return self.verification == 'SUCCESSFUL'


# Matches "NAS Parallel Benchmarks 3.4 -- CG Benchmark" (banner).
_BANNER_RE = re.compile(r'NAS Parallel Benchmarks\s+(\S+)\s+--\s+(\w+)\s+Benchmark')
# "CG Benchmark Completed." (IS omits the dot).
_COMPLETED_RE = re.compile(r'^\s*(\w+)\s+Benchmark Completed\.?\s*$', re.M)
_LINE_RE = re.compile(r'^\s*([A-Za-z][A-Za-z/ ]*?)\s*=\s*(.*?)\s*$')

# NPB 3.4.1's get_active_nprocs in strict mode (the default)
_STRICT_RE = re.compile(r'\*\*\* ERROR determining processor topology for '
                        r'(\d+) processes\s+Expecting an? (.+?) number of '
                        r'processes \(such as (\d+)\)')

# Normalised label -> field; several spellings map to one field so 3.4 and
# 3.4.1 (and the odd future relabel) parse alike.
_LABELS = {
    'class': 'npb_class',
    'size': 'size',
    'iterations': 'iterations',
    'time in seconds': 'time_s',
    'total processes': 'total_processes',
    'total procs': 'total_processes',
    'active processes': 'active_processes',
    'active procs': 'active_processes',
    'mop/s total': 'mops_total',
    'mop/s/process': 'mops_per_process',
    'mop/s/proc': 'mops_per_process',
    'operation type': 'operation_type',
    'verification': 'verification',
    'version': 'version',
}

# In output order, with the label the error message shows; the first one
# missing is where the output stopped.
_REQUIRED = [
    ('npb_class', 'Class ='),
    ('size', 'Size ='),
    ('iterations', 'Iterations ='),
    ('time_s', 'Time in seconds ='),
    ('total_processes', 'Total processes ='),
    ('mops_total', 'Mop/s total ='),
    ('mops_per_process', 'Mop/s/process ='),
    ('verification', 'Verification ='),
    ('version', 'Version ='),
]

_CONVERT = {
    'iterations': int,
    'time_s': float,
    'total_processes': int,
    'active_processes': int,
    'mops_total': float,
    'mops_per_process': float,
}


# long: find the last summary block, read its lines, then check and
# convert the fields; each step has its own one-line error message
def parse_npb(text: str) -> NPBResult:
    """Parse the stdout of one NPB 3.4.x run into an :class:`NPBResult`.

    Raises :class:`~clustergate.parsers.ParseError` when the summary block
    is missing or incomplete (for example, NPB 3.4.1 aborting BT/SP on a
    non-square process count, or a job killed by its time limit).
    """
    if not text or not text.strip():
        raise ParseError('NPB output is empty')

    strict = _STRICT_RE.search(text)
    if strict:
        # NPB 3.4.1 aborts a run whose process count does not fit the
        # benchmark's grid unless NPB_NPROCS_STRICT is off
        raise ParseError(
            f'NPB aborted in strict process-count mode: {strict.group(1)} '
            f'processes, it expects a {strict.group(2)} number of processes '
            f'(such as {strict.group(3)}); NPB_NPROCS_STRICT=off runs it on '
            f'{strict.group(3)} active processes')

    completed = None
    for completed in _COMPLETED_RE.finditer(text):
        pass
    if completed is None:
        if not _BANNER_RE.search(text):
            raise ParseError(
                "not an NPB output: no 'NAS Parallel Benchmarks' banner and "
                "no '<NAME> Benchmark Completed' line" + ending_hint(text))
        raise ParseError("NPB output has no '<NAME> Benchmark Completed' "
                         "line" + ending_hint(text))

    values: Dict[str, str] = {}
    extra: Dict[str, str] = {}
    # Only the block after the last "Completed" line: earlier lines such as
    # CG's "VERIFICATION SUCCESSFUL" must not be mistaken for the summary.
    for line in text[completed.end():].splitlines():
        m = _LINE_RE.match(line)
        if not m:
            if values and not line.strip():
                break      # blank line ends the summary block
            continue
        label = ' '.join(m.group(1).lower().split())
        key = _LABELS.get(label)
        if key is None:
            extra[label] = m.group(2)
        elif key not in values:
            values[key] = m.group(2)

    for key, label in _REQUIRED:
        if key not in values:
            raise ParseError(f"NPB output has no {label!r} line"
                             + ending_hint(text))

    data = {}
    for key, raw in values.items():
        conv = _CONVERT.get(key)
        if conv is None:
            data[key] = raw
            continue
        try:
            data[key] = conv(raw)
        except ValueError:
            raise ParseError(f'NPB summary value for {key!r} is not a '
                             f'number: {raw!r}') from None

    # Older or relabelled outputs may lack the active-process line: every
    # process is active then.
    data.setdefault('active_processes', data['total_processes'])
    data.setdefault('operation_type', '')
    data['size'] = ''.join(data['size'].split())
    data['verification'] = data['verification'].upper()

    banner = _BANNER_RE.search(text)
    benchmark = completed.group(1).upper()
    if banner and banner.group(2).upper() != benchmark:
        raise ParseError(f'NPB output mixes two benchmarks: banner says '
                         f'{banner.group(2)}, summary says {benchmark}')
    return NPBResult(benchmark=benchmark, extra=extra, **data)
