"""Parser for the HPC Challenge 1.5.0 output file (``hpccoutf.txt``).

HPCC writes one file with a section per kernel (``Begin of HPL section.``
... ``End of HPL section.``) and ends with a ``Summary`` section of
``key=value`` lines, the figures HPCC itself reports::

    HPL_Tflops=0.00184179
    StarSTREAM_Triad=72.817          (GB/s, per process, all at once)
    SingleSTREAM_Triad=73.4602       (GB/s, one process alone)
    MPIRandomAccess_GUPs=0.000152848
    PTRANS_GBs=0.130697
    MPIFFT_Gflops=0.0253393
    MaxPingPongLatency_usec=0.356639
    NaturallyOrderedRingBandwidth_GBytes=11.6416
    ...

HPL's residual verdict is only in the HPL section (``||Ax-b||... ......
PASSED`` and the "N tests completed and failed residual checks" count);
the summary gives the residual's ingredients, not the verdict. The file
ends with ``End of HPC Challenge tests.``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

from . import ParseError, ending_hint, to_number

__all__ = ['HpccResult', 'hpl_error', 'parse_hpcc']

Number = Union[int, float]

_END = 'End of HPC Challenge tests.'
_SUMMARY_RE = re.compile(
    r'^Begin of Summary section\.\s*$(.*?)^End of Summary section\.',
    re.M | re.S)
_HPL_RE = re.compile(r'^Begin of HPL section\.\s*$(.*?)^End of HPL section\.',
                     re.M | re.S)
_SECTION_RE = re.compile(r'^Begin of (\w+) section\.', re.M)
_RESIDUAL_RE = re.compile(
    r'^\|\|Ax-b\|\|.*?=\s*(\S+)\s*\.+\s*(PASSED|FAILED)', re.M)
_COUNTS_RE = {
    'passed': re.compile(r'(\d+) tests completed and passed residual'),
    'failed': re.compile(r'(\d+) tests completed and failed residual'),
    'skipped': re.compile(r'(\d+) tests skipped because of illegal'),
}
_THRESHOLD_RE = re.compile(
    r'scaled residuals are less than\s+(\S+)')


@dataclass
class HpccResult:
    """One HPCC run: its summary, the sections it began, HPL's verdicts."""

    summary: Dict[str, Union[Number, str]]
    sections: List[str]
    #: scaled residual of each HPL test and its verdict, in output order
    residuals: List[tuple] = field(default_factory=list)
    hpl_passed: int = 0
    hpl_failed: int = 0
    hpl_skipped: int = 0
    threshold: Optional[float] = None
    complete: bool = True

    def value(self, key: str) -> Number:
        """A numeric summary value; KeyError naming the key if absent."""
        if key not in self.summary:
            raise KeyError(f'HPCC summary has no {key}')

        v = self.summary[key]
        if not isinstance(v, (int, float)):
            raise KeyError(f'HPCC summary {key}={v!r} is not a number')

        return v

    def hpl_problem(self) -> tuple:
        """``(N, NB, P, Q)`` HPL ran, from the summary."""
        return tuple(self.value(k) for k in ('HPL_N', 'HPL_NB', 'HPL_nprow',
                                             'HPL_npcol'))

    @property
    def processes(self) -> Optional[int]:
        return self.summary.get('CommWorldProcs')

    def hpl_verdict(self) -> Optional[str]:
        """Why HPL's result is not valid, or None: every HPL test must have
        completed and passed its residual check."""
        if self.hpl_failed or any(v != 'PASSED' for _, v in self.residuals):
            bad = [r for r, v in self.residuals if v != 'PASSED']
            return (f'HPL failed its residual check: scaled residual '
                    f'{", ".join(f"{r:g}" for r in bad) or "?"} is not '
                    f'below the threshold of hpccinf.txt (HPL prints it '
                    f'as {self.threshold:.1f})'
                    if self.threshold is not None else
                    f'HPL failed its residual check ({self.hpl_failed} '
                    f'test(s))')

        if self.hpl_skipped:
            return (f'HPL skipped {self.hpl_skipped} test(s) because of '
                    f'illegal input values (hpccinf.txt)')

        if not self.hpl_passed or not self.residuals:
            return 'HPL reports no test that completed its residual check'

        return None


_HPL_ERROR_RE = re.compile(r'^>>> (.+?) <<<\s*$', re.M)


def hpl_error(text: str) -> Optional[str]:
    """HPL's own error (``>>> Need at least 4 processes for these tests
    <<<``, on stderr), or None."""
    found = _HPL_ERROR_RE.search(text or '')
    return found.group(1) if found else None


def parse_hpcc(text: str) -> HpccResult:
    """Parse a whole ``hpccoutf.txt``.

    Raises :class:`~clustergate.parsers.ParseError` if it is empty, not
    from HPCC, has no summary or was cut short (no final line).
    """
    if not text or not text.strip():
        raise ParseError('HPCC output is empty')

    if 'HPC Challenge Benchmark' not in text:
        raise ParseError('not an HPCC output: no "HPC Challenge Benchmark" '
                         'banner' + ending_hint(text))

    sections = _SECTION_RE.findall(text)
    m = _SUMMARY_RE.search(text)
    if not m:
        last = sections[-1] if sections else 'none'
        raise ParseError(f'HPCC output has no complete Summary section '
                         f'(run cut short during or after the {last} '
                         f'section?)' + ending_hint(text))

    summary: Dict[str, Union[Number, str]] = {}
    for line in m.group(1).splitlines():
        key, sep, value = line.strip().partition('=')
        if sep and key:
            summary[key] = to_number(value.strip())

    if 'CommWorldProcs' not in summary:
        raise ParseError('HPCC summary has no CommWorldProcs line')

    res = HpccResult(summary=summary, sections=sections,
                     complete=_END in text)
    # PTRANS prints residual counts too: HPL's are in its own section
    hpl = _HPL_RE.search(text)
    hpl_text = hpl.group(1) if hpl else ''
    res.residuals = [(float(r), v)
                     for r, v in _RESIDUAL_RE.findall(hpl_text)]
    for name, rx in _COUNTS_RE.items():
        found = rx.search(hpl_text)
        setattr(res, f'hpl_{name}', int(found.group(1)) if found else 0)

    thr = _THRESHOLD_RE.search(hpl_text)
    res.threshold = float(thr.group(1)) if thr else None
    if not res.complete:
        raise ParseError(f"HPCC output has no '{_END}' line"
                         + ending_hint(text))

    return res
