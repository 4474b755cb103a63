"""Parser for nvbandwidth 0.x output (host-device and device-device copy
bandwidth of NVIDIA GPUs), as text and as ``-j`` JSON.

Text::

    nvbandwidth Version: v0.8
    ...
    Device 0: NVIDIA H200 (00000000:00:06)

    Running host_to_device_memcpy_ce.
    memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
               0
     0     55.39

    SUM host_to_device_memcpy_ce 55.39

A matrix per test case: rows and columns are CPU or GPU indices (as the
description line says), cells GB/s (10**9 B/s) or ``N/A``. A test case
that cannot run here (GPU-to-GPU copies on one GPU) is "Waived"; one
whose ``Running`` line has no ``SUM`` line was cut short.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import ParseError, ending_hint

__all__ = ['NvbTestcase', 'NvbResult', 'parse_nvbandwidth']

_VERSION_RE = re.compile(r'^nvbandwidth Version:\s*(\S+)', re.M)
_DEVICE_RE = re.compile(r'^Device (\d+): (.+?) \(([0-9a-fA-F:.]+)\)\s*$',
                        re.M)
_RUNNING_RE = re.compile(r'^Running (\w+)\.\s*$', re.M)
_SUM_RE = re.compile(r'^SUM (\w+) ([\d.]+)\s*$', re.M)
_CELL_RE = re.compile(r'^[\d.]+$|^N/A$')


@dataclass
class NvbTestcase:
    """One test case: ``matrix[row][column]`` in GB/s (None: N/A)."""

    name: str
    status: str                 # 'Passed' or 'Waived'
    description: str = ''
    matrix: Dict[int, Dict[int, Optional[float]]] = field(
        default_factory=dict)
    sum: Optional[float] = None

    def per_gpu(self) -> Dict[int, float]:
        """GB/s per GPU: the GPU is the column of a ``CPU(row) ... GPU
        (column)`` matrix, else the row; cells that are N/A left out."""
        gpu_is_column = 'GPU(column)' in self.description or \
            not self.description
        out: Dict[int, float] = {}
        for r, cols in self.matrix.items():
            for c, v in cols.items():
                if v is not None:
                    out[c if gpu_is_column else r] = v
        return out


@dataclass
class NvbResult:
    """One nvbandwidth run."""

    testcases: Dict[str, NvbTestcase]
    version: str = ''
    devices: Dict[int, str] = field(default_factory=dict)

    def passed(self, name: str) -> NvbTestcase:
        case = self.testcases.get(name)
        if case is None:
            raise ParseError(f'nvbandwidth ran no test case {name} (ran: '
                             f'{", ".join(self.testcases) or "none"})')
        if case.status != 'Passed':
            raise ParseError(f'nvbandwidth test case {name} was '
                             f'{case.status.lower()}, not measured')
        return case


def _number(token: str) -> Optional[float]:
    return None if token == 'N/A' else float(token)


def _parse_json(text: str) -> NvbResult:
    try:
        root = json.loads(text)['nvbandwidth']
    except (ValueError, KeyError, TypeError) as err:
        raise ParseError(f'nvbandwidth JSON output is not complete JSON with '
                         f'an "nvbandwidth" object ({err})') from None

    devices = {}
    for entry in root.get('GPU Device list', []):
        m = re.match(r'(\d+): (.+?) \(([0-9a-fA-F:.]+)\)', entry)
        if m:
            devices[int(m.group(1))] = m.group(2)

    cases = {}
    for tc in root.get('testcases', []):
        matrix = {r: {c: _number(str(v)) for c, v in enumerate(row)}
                  for r, row in enumerate(tc.get('bandwidth_matrix', []))}
        cases[tc['name']] = NvbTestcase(
            name=tc['name'], status=tc.get('status', '?'),
            description=tc.get('bandwidth_description', ''),
            matrix=matrix, sum=tc.get('sum'))
    if not cases:
        raise ParseError('nvbandwidth JSON output has no test cases')
    return NvbResult(cases, str(root.get('version', '')), devices)


def _parse_case(name: str, block: str) -> NvbTestcase:
    lines = [ln for ln in block.splitlines() if ln.strip()]
    if any(ln.strip().lower().startswith('waived') for ln in lines):
        return NvbTestcase(name=name, status='Waived')

    total = _SUM_RE.search(block)
    if not total:
        raise ParseError(f"nvbandwidth test case {name} has no 'SUM {name}' "
                         f"line: the run stopped while measuring it" +
                         ending_hint(block))

    desc = lines[0].strip() if lines else ''
    columns: List[int] = []
    matrix: Dict[int, Dict[int, Optional[float]]] = {}
    for ln in lines[1:]:
        tokens = ln.split()
        if tokens and all(t.isdigit() for t in tokens) and not columns:
            columns = [int(t) for t in tokens]
        elif columns and tokens[0].isdigit() and all(
                _CELL_RE.match(t) for t in tokens[1:]):
            matrix[int(tokens[0])] = {c: _number(t) for c, t in
                                      zip(columns, tokens[1:])}
    return NvbTestcase(name=name, status='Passed', description=desc,
                       matrix=matrix, sum=float(total.group(2)))


def parse_nvbandwidth(text: str) -> NvbResult:
    """Parse one nvbandwidth run (text or ``-j`` JSON). Raises
    :class:`ParseError` on a run cut short or an output that is not
    nvbandwidth's."""
    if not text or not text.strip():
        raise ParseError('nvbandwidth output is empty')

    if text.lstrip().startswith('{'):
        return _parse_json(text)

    version = _VERSION_RE.search(text)
    starts = list(_RUNNING_RE.finditer(text))
    if not version and not starts:
        raise ParseError("not an nvbandwidth output: no 'nvbandwidth "
                         "Version' line" + ending_hint(text))
    if not starts:
        raise ParseError('nvbandwidth ran no test case' + ending_hint(text))

    cases = {}
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        cases[m.group(1)] = _parse_case(m.group(1), text[m.end():end])

    return NvbResult(cases, version.group(1) if version else '',
                     {int(m.group(1)): m.group(2)
                      for m in _DEVICE_RE.finditer(text)})
