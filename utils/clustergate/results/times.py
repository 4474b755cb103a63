"""Times of runs, independent of the machine's time zone.

A run's time is ReFrame's ``job_completion_time_unix`` (seconds since the
epoch, the same in every zone). What a user types (``--since``) and what
the commands print are in UTC: a site in ``TZ=Asia/Tokyo`` and CI in UTC
select the same runs and see the same times for them.
"""

import datetime as dt
import re
import time
from typing import Optional


# ReFrame's relative times (reframe --list-stored-sessions now-1w:now):
# a base (now, or an absolute time) plus or minus weeks, days, hours, minutes
_RELATIVE = re.compile(r'^(?P<base>.*?)(?P<amount>[+-]\d+)(?P<unit>[wdhm])$')
_UNIT = {'w': 'weeks', 'd': 'days', 'h': 'hours', 'm': 'minutes'}


def point_in_time(text: str, now: Optional[float] = None) -> dt.datetime:
    """The time ``text`` names: ISO 8601 (``2026-11-20``,
    ``2026-11-20T18:00+01:00``; UTC unless it names a zone) or ReFrame's
    forms (``20261120T0000``, ``now``, ``now-1d``, ``now-12h``,
    ``20261120-1w``). ValueError when it is none of them."""
    m = _RELATIVE.match(text.strip())
    if m and m['base']:
        base = point_in_time(m['base'], now)
        return base + dt.timedelta(**{_UNIT[m['unit']]: int(m['amount'])})

    if text.strip() == 'now':
        return dt.datetime.fromtimestamp(
            time.time() if now is None else now, dt.timezone.utc)

    t = dt.datetime.fromisoformat(text.strip())
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def since(text: Optional[str], command: str) -> Optional[float]:
    """Unix time of a ``--since`` argument (point_in_time()). Exits with a
    one-line message naming ``command`` when it is not a time."""
    if text is None:
        return None

    try:
        return point_in_time(text).timestamp()
    except ValueError:
        raise SystemExit(f'clustergate {command}: --since: not an ISO date '
                         f'or time: {text!r}') from None


def iso_utc(t: float) -> str:
    """``2026-11-22T20:01:26Z``"""
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def parse(text) -> Optional[float]:
    """Unix time of a number or an ISO time (UTC when it names no zone);
    None when it is neither."""
    if isinstance(text, (int, float)):
        return float(text)

    text = str(text).strip()
    try:
        return float(text)
    except ValueError:
        pass

    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        return None

    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)

    return t.timestamp()
