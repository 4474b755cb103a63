"""Parser for nccl-tests 2.x output (``all_reduce_perf``, ``sendrecv_perf``,
``all_gather_perf``...; the same for rccl-tests).

::

    # nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809
    # Collective test starting: all_reduce_perf
    # nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 4(factor) ...
    # Using devices
    #  Rank  0 Group  0 Pid   1743 on         vm device  0 [0000:00:06] NVIDIA H200
    #       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
               8             2     float     sum      -1     6.94    0.00    0.00       0     0.50    0.02    0.00       0
    ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 0
    # Collective test concluded: all_reduce_perf

Each row: size in bytes, then out-of-place and in-place time (us),
algorithm and bus bandwidth (GB/s, 10**9 B/s) and the count of wrong
elements (``N/A`` where the test does not validate in place). A run that
ends before ``# Avg bus bandwidth`` was cut short; a row with wrong
elements or "Out of bounds values : N FAILED" did not validate; nccl-tests'
own error lines ("Invalid number of GPUs", "NCCL failure ...") are the
reason of a run that did not measure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import ParseError, ending_hint

__all__ = ['NcclRow', 'NcclDevice', 'NcclResult', 'parse_nccl_tests']

_NUM = r'[\d.]+(?:[eE][+-]?\d+)?'
_VERSION_RE = re.compile(r'^# nccl-tests version (\S+)', re.M)
_START_RE = re.compile(r'^# Collective test starting: (\S+)', re.M)
_PARAMS_RE = re.compile(r'^# nThread (\d+) nGpus (\d+) minBytes (\d+) '
                        r'maxBytes (\d+)', re.M)
_DEVICE_RE = re.compile(r'^#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+'
                        r'on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]+)\]\s+(.+?)'
                        r'\s*$', re.M)
_WRONG = r'(\d+|N/A)'
_ROW_RE = re.compile(rf'^\s+(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+'
                     rf'({_NUM})\s+({_NUM})\s+({_NUM})\s+{_WRONG}\s+'
                     rf'({_NUM})\s+({_NUM})\s+({_NUM})\s+{_WRONG}\s*$', re.M)
_OOB_RE = re.compile(r'^# Out of bounds values : (\d+) (\w+)', re.M)
_AVG_RE = re.compile(rf'^# Avg bus bandwidth\s*:\s*({_NUM})', re.M)
_DONE_RE = re.compile(r'^# Collective test concluded', re.M)
#: what nccl-tests prints when it does not measure
_ERROR_RE = re.compile(r'Invalid number of GPUs|NCCL failure|CUDA failure|'
                       r'Test failure|NCCL error')


@dataclass
class NcclRow:
    """One message size: out-of-place (``oop_``) and in-place (``ip_``)."""

    size: int
    count: int
    type: str
    redop: str
    oop_time_us: float
    oop_algbw: float
    oop_busbw: float
    oop_wrong: Optional[int]
    ip_time_us: float
    ip_algbw: float
    ip_busbw: float
    ip_wrong: Optional[int]


@dataclass
class NcclDevice:
    """A rank's GPU as nccl-tests lists it under "Using devices"."""

    rank: int
    host: str
    device: int
    bus_id: str
    name: str


@dataclass
class NcclResult:
    """One nccl-tests run."""

    test: str
    rows: List[NcclRow]
    avg_busbw: float
    version: str = ''
    n_gpus: Optional[int] = None
    min_bytes: Optional[int] = None
    max_bytes: Optional[int] = None
    devices: List[NcclDevice] = field(default_factory=list)
    out_of_bounds: Optional[int] = None

    @property
    def largest(self) -> NcclRow:
        return self.rows[-1]

    def by_size(self) -> Dict[int, NcclRow]:
        return {r.size: r for r in self.rows}

    @property
    def wrong_rows(self) -> List[NcclRow]:
        return [r for r in self.rows if (r.oop_wrong or 0) or
                (r.ip_wrong or 0)]


def _wrong(token: str) -> Optional[int]:
    return None if token == 'N/A' else int(token)


def parse_nccl_tests(text: str) -> NcclResult:
    """Parse the stdout (and stderr) of one nccl-tests run. Raises
    :class:`ParseError` naming the cause on a run that failed, was cut
    short, or is not nccl-tests'."""
    if not text or not text.strip():
        raise ParseError('nccl-tests output is empty')

    start = _START_RE.search(text)
    errors = [line.strip() for line in text.splitlines()
              if _ERROR_RE.search(line)]
    if errors:
        test = start.group(1) if start else 'nccl-tests'
        raise ParseError(f'{test} failed: {errors[0]}')

    if not start:
        raise ParseError("not an nccl-tests output: no '# Collective test "
                         "starting' line" + ending_hint(text))

    rows = [NcclRow(int(m.group(1)), int(m.group(2)), m.group(3),
                    m.group(4), float(m.group(6)), float(m.group(7)),
                    float(m.group(8)), _wrong(m.group(9)),
                    float(m.group(10)), float(m.group(11)),
                    float(m.group(12)), _wrong(m.group(13)))
            for m in _ROW_RE.finditer(text)]
    test = start.group(1)
    avg = _AVG_RE.search(text)
    if not rows:
        raise ParseError(f'{test} output has no result rows' +
                         ending_hint(text))
    if not avg or not _DONE_RE.search(text):
        raise ParseError(f"{test} output has no '# Avg bus bandwidth' "
                         f"summary: the run stopped after "
                         f"{rows[-1].size} B" + ending_hint(text))

    params = _PARAMS_RE.search(text)
    oob = _OOB_RE.search(text)
    return NcclResult(
        test=test, rows=rows, avg_busbw=float(avg.group(1)),
        version=(_VERSION_RE.search(text) or [None, ''])[1],
        n_gpus=int(params.group(2)) if params else None,
        min_bytes=int(params.group(3)) if params else None,
        max_bytes=int(params.group(4)) if params else None,
        devices=[NcclDevice(int(m.group(1)), m.group(4), int(m.group(5)),
                            m.group(6), m.group(7))
                 for m in _DEVICE_RE.finditer(text)],
        out_of_bounds=int(oob.group(1)) if oob else None,
    )
