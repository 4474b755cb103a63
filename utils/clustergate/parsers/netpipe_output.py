"""Parsers for NetPIPE 3.7 (``NPtcp``, ``NPopenmpi``) and iperf3's JSON.

NetPIPE prints one line per message size on stdout::

      0: 4194304 bytes     20 times -->    935.12 Mbps in   34217.50 usec

(Mbps = 10^6 bit/s; the time is half a round trip, or one transfer in
streaming mode ``-s``) and writes the same points to its output file
(``-o``, default ``np.out``) as ``bytes Mbps seconds``. ``iperf3 -J``
prints one JSON document; the receiver's view of the whole test is
``end.sum_received.bits_per_second``.

:func:`parse_study` reads the output of the shared-interface study's
wrapper (``checks/netpipe/np_study.sh``): each program's output between
``NP_BEGIN``/``NP_END`` lines, the devices' transmit counters (``NP_TX``)
and the completion line ``NP_DONE``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Dict, List, Tuple

from . import ParseError, ending_hint

__all__ = ['NetpipePoint', 'parse_netpipe', 'parse_iperf3', 'StudyStream',
           'Study', 'parse_study', 'PHASES']

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


#: The phases of the study, in order, and the streams of each
PHASES = {'alone1': (1,), 'alone2': (2,), 'together': (1, 2)}

_BEGIN_RE = re.compile(r'^NP_BEGIN (.*)$', re.M)
_TX_RE = re.compile(r'^NP_TX phase=(\S+) dev=(\S+) bytes=(-?\d+)\s*$', re.M)


def _fields(line: str) -> Dict[str, str]:
    return dict(w.split('=', 1) for w in line.split() if '=' in w)


@dataclass(frozen=True)
class StudyStream:
    """One program run of the study: its phase, stream, tool, device,
    destination, exit status and own output."""

    phase: str
    stream: int
    tool: str
    dev: str
    dst: str
    rc: int
    text: str

    def rate(self) -> float:
        """Measured rate in MB/s (10^6 B/s): NetPIPE's last point, or
        iperf3's received throughput; ParseError with the cause."""
        if self.rc != 0:
            raise ParseError(f'{self.tool} stream {self.stream} '
                             f'({self.phase}) exited {self.rc}'
                             + ending_hint(self.text))
        if self.tool == 'iperf3':
            return parse_iperf3(self.text)
        return parse_netpipe(self.text)[-1].mb_per_s


@dataclass(frozen=True)
class Study:
    """The streams of every phase and the transmit counter deltas
    ``{(phase, device): bytes}``."""

    streams: Tuple[StudyStream, ...]
    tx_bytes: Dict[Tuple[str, str], int]

    def stream(self, phase: str, stream: int) -> StudyStream:
        for s in self.streams:
            if (s.phase, s.stream) == (phase, stream):
                return s
        raise ParseError(f'no output of stream {stream} in phase {phase}')


def _block(text: str, match) -> StudyStream:
    f = _fields(match.group(1))
    try:
        phase, stream = f['phase'], int(f['stream'])
        head = StudyStream(phase, stream, f['tool'], f['dev'], f['dst'],
                           int(f['rc']), '')
    except (KeyError, ValueError):
        raise ParseError(f'malformed line {match.group(0)!r}') from None
    end = text.find(f'NP_END phase={phase} stream={stream}', match.end())
    if end < 0:
        raise ParseError(f'stream {stream} of phase {phase} has no NP_END '
                         f'line (cut short?)')
    return StudyStream(head.phase, head.stream, head.tool, head.dev,
                       head.dst, head.rc, text[match.end():end].strip())


def parse_study(text: str) -> Study:
    """The study's runs; ParseError when a phase or stream is missing or
    the wrapper did not complete (``NP_DONE``)."""
    text = text or ''
    streams = tuple(_block(text, m) for m in _BEGIN_RE.finditer(text))
    tx = {(p, d): int(b) for p, d, b in _TX_RE.findall(text)}
    study = Study(streams, tx)
    for phase, numbers in PHASES.items():
        for n in numbers:
            study.stream(phase, n)
    if not re.search(r'^NP_DONE\s*$', text, re.M):
        raise ParseError('the study did not complete (no NP_DONE line)'
                         + ending_hint(text))
    return study
