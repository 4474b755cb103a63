"""Parser for BabelStream 5.x output (GPU memory bandwidth; any model:
CUDA, HIP, OpenMP offload...), in its table and its ``--csv`` form.

Table form (``cuda-stream --arraysize 268435456``)::

    BabelStream
    Version: 5.0
    Implementation: CUDA
    ...
    Number of elements: 268435456
    Precision: double
    CUDA Device 0: "NVIDIA H200" 132 SMs(9,0) Memory: ... = 4814.304000 GB/s PEAK, ECC is ON
    ...
    Function    MB/s        Min (sec)   Max         Average
    Copy        4037112.860 0.00106     0.00108     0.00107
    Mul ...  Add ...  Triad ...  Dot ...

``--csv``: ``function,num_times,n_elements,sizeof,max_MB_per_sec,
min_runtime,max_runtime,avg_runtime`` and one row per kernel.

BabelStream's MB/s are 10**6 bytes per second. A run that fails
before measuring (an array larger than the device memory: "Requested
array size of 24000 GB exceeds memory capacity of 150.11 GB", then an
uncaught ``std::runtime_error``) or whose results do not validate
("Validation failed on a[]") raises :class:`ParseError` naming the cause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional

from . import ParseError, ending_hint

__all__ = ['BabelKernel', 'BabelStreamResult', 'parse_babelstream',
           'BABEL_KERNELS']

#: The kernels of BabelStream's classic run, in the order it prints them
BABEL_KERNELS = ('Copy', 'Mul', 'Add', 'Triad', 'Dot')

_NUM = r'[\d.]+(?:[eE][+-]?\d+)?'
_ROW_RE = re.compile(rf'^(Copy|Mul|Add|Triad|Dot|Nstream)\s+({_NUM})\s+'
                     rf'({_NUM})\s+({_NUM})\s+({_NUM})\s*$', re.M)
_CSV_HEAD_RE = re.compile(r'^function,num_times,n_elements,sizeof,'
                          r'max_(MB|mbytes|MiB|mibytes)_per_sec,',
                          re.M | re.I)
_CSV_ROW_RE = re.compile(rf'^(Copy|Mul|Add|Triad|Dot|Nstream),(\d+),(\d+),'
                         rf'(\d+),({_NUM}),({_NUM}),({_NUM}),({_NUM})\s*$',
                         re.M)
_TABLE_RE = re.compile(r'^Function\s+(MB/s|MBytes/sec|MiB/s|MiBytes/sec)\s+'
                       r'Min', re.M)
#: BabelStream's rate column in MB/s (10**6 B/s): the 5.0 release prints
#: ``MBytes/sec`` (``MiBytes/sec`` with --mibibytes), later sources ``MB/s``
#: (``MiB/s``); a MiB is 2**20 bytes
_UNIT_TO_MB = {'mb/s': 1.0, 'mbytes/sec': 1.0, 'mb': 1.0, 'mbytes': 1.0,
               'mib/s': 2**20 / 1e6, 'mibytes/sec': 2**20 / 1e6,
               'mib': 2**20 / 1e6, 'mibytes': 2**20 / 1e6}
_VERSION_RE = re.compile(r'^Version:\s*(\S+)', re.M)
_IMPL_RE = re.compile(r'^Implementation:\s*(.+?)\s*$', re.M)
_ELEMENTS_RE = re.compile(r'^Number of elements:\s*(\d+)', re.M)
_PRECISION_RE = re.compile(r'^Precision:\s*(\w+)', re.M)
_DEVICE_RE = re.compile(r'^(\w+) Device (\d+): "([^"]+)"(.*)$', re.M)
#: the 5.0 release's device line: ``Using CUDA device NVIDIA H200``
_USING_RE = re.compile(r'^Using (\w+) device (.+?)\s*$', re.M)
_PEAK_RE = re.compile(rf'=\s*({_NUM})\s*GB/s PEAK')
_TOO_LARGE_RE = re.compile(r'^(Requested array size of .*?exceeds memory '
                           r'capacity of .*?)\s*!?\s*$', re.M)
_WHAT_RE = re.compile(r'^\s*what\(\):\s*(.+?)\s*$', re.M)
_VALIDATION_RE = re.compile(r'^(Validation failed on .+?)\s*$', re.M)


@dataclass
class BabelKernel:
    """One kernel's row: best rate in MB/s, times in seconds."""

    mb_s: float
    min_s: float
    max_s: float
    avg_s: float


@dataclass
class BabelStreamResult:
    """One BabelStream run on one device."""

    kernels: Dict[str, BabelKernel]
    version: str = ''
    implementation: str = ''
    elements: Optional[int] = None
    precision: str = ''
    device_index: Optional[int] = None
    device_name: str = ''
    #: the peak bandwidth BabelStream prints for the device, GB/s
    peak_gb_s: Optional[float] = None
    csv: bool = False

    def rate(self, kernel: str) -> float:
        """Best rate of ``kernel`` in MB/s."""
        return self.kernels[kernel.capitalize()].mb_s

    @property
    def triad_fraction_of_peak(self) -> Optional[float]:
        if not self.peak_gb_s:
            return None
        return self.rate('Triad') / 1e3 / self.peak_gb_s


def _failure(text: str) -> Optional[str]:
    """BabelStream's own reason for a run that did not measure."""
    what = _WHAT_RE.search(text)
    large = _TOO_LARGE_RE.search(text)
    if what or large:
        parts = [m.group(1) for m in (what, large) if m]
        head = parts[0]
        rest = f' ({parts[1]})' if len(parts) > 1 else ''
        return f'BabelStream failed before measuring: {head}{rest}'

    bad = _VALIDATION_RE.findall(text)
    if bad:
        return f'BabelStream results do not validate: {"; ".join(bad)}'

    return None


def parse_babelstream(text: str) -> BabelStreamResult:
    """Parse the stdout (with stderr, where the failures are) of one
    BabelStream run. Raises :class:`ParseError` on a failed, invalid or
    cut-short run, or on output that is not BabelStream's."""
    if not text or not text.strip():
        raise ParseError('BabelStream output is empty')

    failure = _failure(text)
    if failure:
        raise ParseError(failure)

    kernels: Dict[str, BabelKernel] = {}
    elements = int(_group(_ELEMENTS_RE, text) or 0) or None
    head = _CSV_HEAD_RE.search(text)
    table = _TABLE_RE.search(text)
    csv = bool(head)
    if csv:
        scale = _UNIT_TO_MB[head.group(1).lower()]
        for m in _CSV_ROW_RE.finditer(text):
            kernels[m.group(1)] = BabelKernel(
                float(m.group(5)) * scale,
                *(float(m.group(i)) for i in (6, 7, 8)))
            elements = int(m.group(3))
    elif table:
        scale = _UNIT_TO_MB[table.group(1).lower()]
        for m in _ROW_RE.finditer(text):
            kernels[m.group(1)] = BabelKernel(
                float(m.group(2)) * scale,
                *(float(m.group(i)) for i in (3, 4, 5)))
    elif not _VERSION_RE.search(text) and not _DEVICE_RE.search(text):
        raise ParseError("not a BabelStream output: no 'Version:' line, no "
                         "device line and no result table" +
                         ending_hint(text))
    else:
        raise ParseError("BabelStream output has no result table (no "
                         "'Function  MB/s' or 'Function  MBytes/sec' "
                         "header)" + ending_hint(text))

    for name in BABEL_KERNELS:
        if name not in kernels:
            raise ParseError(f"BabelStream output has no '{name}' result "
                             f"row" + ending_hint(text))

    dev = _DEVICE_RE.search(text)
    peak = _PEAK_RE.search(dev.group(4)) if dev else None
    using = None if dev else _USING_RE.search(text)
    return BabelStreamResult(
        kernels=kernels,
        version=_group(_VERSION_RE, text),
        implementation=_group(_IMPL_RE, text),
        elements=elements,
        precision=_group(_PRECISION_RE, text),
        device_index=int(dev.group(2)) if dev else None,
        device_name=(dev.group(3) if dev else
                     using.group(2) if using else ''),
        peak_gb_s=float(peak.group(1)) if peak else None,
        csv=csv,
    )


def _group(regex, text) -> str:
    m = regex.search(text)
    return m.group(1) if m else ''
