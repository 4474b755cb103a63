"""Parsers for the stdout of third-party HPC benchmarks.

Pure Python on purpose (no ReFrame import): the ReFrame checks call these
from their sanity and performance functions, and the unit tests exercise
them on real outputs without a ReFrame installation in the loop.

Every parser takes the *complete* stdout text of one run and returns plain
data (dataclasses holding ints, floats, strings, lists and dicts).  On
output that is truncated, empty or not from the expected program they
raise :class:`ParseError` whose message names what is missing, so a failed
check tells the operator *why* without opening the output file.

Modules:

* :mod:`clustergate.parsers.npb_output` -- NAS Parallel Benchmarks 3.4.x (MPI)
* :mod:`clustergate.parsers.imb_output` -- Intel MPI Benchmarks 2021.x
* :mod:`clustergate.parsers.osu_output` -- OSU Micro-Benchmarks 7.x
* :mod:`clustergate.parsers.stream_output` -- STREAM 5.10 and stream_mpi.c
* :mod:`clustergate.parsers.hpcc_output` -- HPC Challenge 1.5.0 (hpccoutf.txt)
* :mod:`clustergate.parsers.babelstream` -- BabelStream 5.x (GPU memory)
* :mod:`clustergate.parsers.nccltests` -- nccl-tests 2.x
* :mod:`clustergate.parsers.nvbandwidth` -- nvbandwidth 0.x (text, JSON)
* :mod:`clustergate.parsers.gpuburn` -- gpu-burn
"""

from __future__ import annotations

import re
from typing import Union

__all__ = [
    'ParseError',
    'last_line',
    'to_number',
    'parse_npb',
    'parse_imb',
    'parse_osu',
    'parse_stream',
    'parse_hpcc',
    'parse_babelstream',
    'parse_nccl_tests',
    'parse_nvbandwidth',
    'parse_gpu_burn',
]


class ParseError(ValueError):
    """Raised when a benchmark output cannot be parsed.

    The message says which expected line or section is missing and, where
    it helps, what the output ended with (a crash or an MPI abort usually
    shows there).
    """


def last_line(text: str, width: int = 100) -> str:
    """Return the last non-blank line of *text*, shortened to *width* chars.

    Used in error messages: when a run dies, its final line is the most
    useful clue (an MPI_Abort, a segfault notice, a half-written row).
    """
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line:
            return line if len(line) <= width else line[:width - 3] + '...'
    return ''


def ending_hint(text: str) -> str:
    """Return ``" (run cut short? output ends with: '...')"`` for *text*."""
    tail = last_line(text)
    if not tail:
        return ' (output is empty)'
    return f" (run cut short? output ends with: {tail!r})"


_INT_RE = re.compile(r'^[+-]?\d+$')


def to_number(token: str) -> Union[int, float, str]:
    """Convert a table cell to ``int`` or ``float``; leave other text as is.

    Fortran's ``D`` exponent is accepted because NPB prints some values
    that way.
    """
    token = token.strip()
    if _INT_RE.match(token):
        return int(token)
    try:
        return float(token.replace('D', 'E').replace('d', 'e'))
    except ValueError:
        return token


#: each benchmark's parser and its submodule, imported on first use: a
#: program that needs one parser (the link matrix's retest driver, started
#: inside the job beside the matrix) does not pay for the others
_PARSERS = {
    'parse_npb': 'npb_output',
    'parse_imb': 'imb_output',
    'parse_osu': 'osu_output',
    'parse_stream': 'stream_output',
    'parse_hpcc': 'hpcc_output',
    'parse_babelstream': 'babelstream',
    'parse_nccl_tests': 'nccltests',
    'parse_nvbandwidth': 'nvbandwidth',
    'parse_gpu_burn': 'gpuburn',
}


def __getattr__(name: str):
    sub = _PARSERS.get(name)
    if sub is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    import importlib
    value = getattr(importlib.import_module(f'{__name__}.{sub}'), name)
    globals()[name] = value
    return value
