"""Parsers for NetPIPE 3.7 (``NPtcp``, ``NPopenmpi``) and iperf3's JSON.

NetPIPE prints one line per message size on stdout::

      0: 4194304 bytes     20 times -->    935.12 Mbps in   34217.50 usec

(Mbps = 10^6 bit/s; the time is half a round trip, or one transfer in
streaming mode ``-s``) and writes the same points to its output file
(``-o``, default ``np.out``) as ``bytes Mbps seconds``. ``iperf3 -J``
prints one JSON document; the receiver's view of the whole test is
``end.sum_received.bits_per_second``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import List

from . import ParseError, ending_hint

__all__ = ['NetpipePoint', 'parse_netpipe', 'parse_iperf3']

_LINE_RE = re.compile(
    r'^\s*\d+:\s+(\d+) bytes\s+(\d+) times -->\s+([0-9.]+) Mbps in\s+'
    r'([0-9.]+) usec', re.M)


@dataclass(frozen=True)
class NetpipePoint:
    """One message size: bytes, repeats, rate (MB/s = 10^6 B/s), time."""

    bytes: int
    times: int
    mbps: float            # NetPIPE's 10^6 bit/s
    usec: float

    @property
    def mb_per_s(self) -> float:
        return self.mbps / 8


def parse_netpipe(text: str) -> List[NetpipePoint]:
    """The points of a NetPIPE stdout, in order; ParseError when there is
    none (the receiver never answered, the run was cut short)."""
    points = [NetpipePoint(int(b), int(n), float(r), float(t))
              for b, n, r, t in _LINE_RE.findall(text or '')]
    if not points:
        raise ParseError('NetPIPE output has no measured point ("N: <bytes> '
                         'bytes <n> times --> <rate> Mbps")'
                         + ending_hint(text or ''))

    return points


def parse_iperf3(text: str) -> float:
    """Received throughput of an ``iperf3 -J`` run, in MB/s (10^6 B/s)."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise ParseError('iperf3 output is not JSON (run without -J?)'
                         + ending_hint(text or '')) from None

    if doc.get('error'):
        raise ParseError(f'iperf3 failed: {doc["error"]}')

    try:
        bps = doc['end']['sum_received']['bits_per_second']
    except (KeyError, TypeError):
        raise ParseError('iperf3 JSON has no end.sum_received.'
                         'bits_per_second') from None

    return bps / 8e6
