"""Parser of the output format shared by all clustergate C programs.

Every measurement is one line::

    CG pattern=shift bytes=8 ranks=4 ppn=2 nodes=2 peer=- src=n1 dst=- \
       t_us=3.1 med_us=3.0 min_us=2.8 max_us=9.1 bw_MBps=2.58 trials=50 \
       kept=48 filtered=0.04 [more key=value fields]

errors are ``CG_ERROR kind=... ...`` lines, skipped measurements
``CG_SKIP pattern=... reason=...`` and the run ends with
``CG_DONE program=... measurements=N errors=N``. ``-`` means "no value".
"""

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional


class OutputError(ValueError):
    """The output is incomplete, garbled or reports an error."""


_NUMERIC = ('bytes', 'ranks', 'ppn', 'nodes', 'peer', 'trials', 'kept',
            't_us', 'med_us', 'min_us', 'max_us', 'bw_MBps', 'filtered')

_KV = re.compile(r'(\w+)=(\S+)')


def _value(text):
    if text == '-':
        return None

    try:
        return int(text)
    except ValueError:
        pass

    try:
        return float(text)
    except ValueError:
        return text


def _fields(line):
    return {k: _value(v) for k, v in _KV.findall(line)}


@dataclass
class Measurement:
    """One ``CG`` line."""

    pattern: str
    fields: Dict[str, object]

    def __getitem__(self, key):
        return self.fields[key]

    def get(self, key, default=None):
        value = self.fields.get(key)
        return default if value is None else value

    def best_bandwidth(self) -> Optional[float]:
        """MB/s of the fastest kept trial (``bw_MBps`` is of their mean).

        What a link can carry: load elsewhere on the machine only slows
        trials down, so the fastest one is robust to it, while a link
        shaped or degraded to a lower rate cannot beat that rate in any
        trial. The link matrix (4 MB messages) uses it. The 1 MB ping-pong
        does not: in a real healthy run its fastest trials beat the 125
        MB/s line rate (a shaped link's token bucket, 1/8 of the message)
        and one node never got one: 0.63x the others by its fastest
        trial, 0.83x by its mean."""
        return self._bandwidth_of_trial('min_us')

    def median_bandwidth(self) -> Optional[float]:
        """MB/s of the median kept trial (``bw_MBps`` is of their mean).

        What a flow got when it shared a link with others in each trial:
        flows through one link finish a trial at different times (TCP is
        not fair between them, and the last ones then run alone), so a
        flow's fastest trial is the one where it took more than its share,
        up to 2.6x it (8 flows through a trunk of the emulated 24-node
        tree), while its median stays near the share. The fabric fit of
        the link matrix uses it (:mod:`clustergate.links.topology.rounds`)."""
        return self._bandwidth_of_trial('med_us')

    def _bandwidth_of_trial(self, time_key: str) -> Optional[float]:
        """``bw_MBps`` (of the mean trial) rescaled to the trial whose
        time is ``time_key``; ``bw_MBps`` itself where a time is missing."""
        bw, mean, t = (self.fields.get(k) for k in
                       ('bw_MBps', 't_us', time_key))
        if bw is None or not mean or not t:
            return bw
        return bw * mean / t


@dataclass
class Run:
    """Everything one program run printed in our format."""

    measurements: List[Measurement] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    skips: List[str] = field(default_factory=list)
    done: Optional[Dict[str, object]] = None

    def select(self, pattern=None, **match):
        """Measurements of ``pattern`` whose fields equal ``match``."""
        return [m for m in self.measurements
                if (pattern is None or m.pattern == pattern) and
                all(m.fields.get(k) == v for k, v in match.items())]


def parse(text: str) -> Run:
    """Parse a whole stdout; never raises on content (see :func:`verify`)."""
    run = Run()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith('CG '):
            kv = _fields(line)
            missing = [k for k in ('pattern', 't_us') if k not in kv]
            if missing:
                run.errors.append(f'malformed measurement line (no '
                                  f'{", ".join(missing)}): {line!r}')
                continue

            bad = [k for k in _NUMERIC
                   if k in kv and isinstance(kv[k], str)]
            if bad:
                run.errors.append(f'non-numeric {", ".join(bad)} in '
                                  f'measurement line: {line!r}')
                continue

            run.measurements.append(Measurement(kv['pattern'], kv))
        elif line.startswith('CG_ERROR'):
            run.errors.append(line)
        elif line.startswith('CG_SKIP'):
            run.skips.append(line)
        elif line.startswith('CG_DONE'):
            run.done = _fields(line)

    return run


def verify(run: Run, program: Optional[str] = None,
           pattern: Optional[str] = None) -> None:
    """Raise :class:`OutputError` unless the run completed cleanly and
    measured ``pattern`` (when given)."""
    if run.errors:
        shown = '; '.join(run.errors[:3])
        more = f' (+{len(run.errors) - 3} more)' if len(run.errors) > 3 else ''
        raise OutputError(f'benchmark reported errors: {shown}{more}')

    if run.done is None:
        raise OutputError('no CG_DONE completion line: the program did not '
                          'finish (crashed, killed or timed out?)')

    if program and run.done.get('program') != program:
        raise OutputError(f'completion line is from program '
                          f'{run.done.get("program")!r}, expected {program!r}')

    if run.done.get('errors') not in (0, None):
        raise OutputError(f'program counted {run.done["errors"]} error(s)')

    if run.done.get('measurements') != len(run.measurements):
        raise OutputError(
            f'completion line announces {run.done.get("measurements")} '
            f'measurements but {len(run.measurements)} were printed '
            f'(output truncated or interleaved?)'
        )

    if pattern and not run.select(pattern):
        raise OutputError(f'no measurement of pattern {pattern!r} in the '
                          f'output')
