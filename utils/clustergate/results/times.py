"""Times of runs, independent of the machine's time zone.

A run's time is ReFrame's ``job_completion_time_unix`` (seconds since the
epoch, the same in every zone). What a user types (``--since``) and what
the commands print are in UTC: a site in ``TZ=Asia/Tokyo`` and CI in UTC
select the same runs and see the same times for them.
"""

import datetime as dt
from typing import Optional


def since(text: Optional[str], command: str) -> Optional[float]:
    """Unix time of a ``--since`` argument (ISO 8601 date or time; without
    a zone it is UTC). Exits with a one-line message naming ``command``
    when it is not a date."""
    if text is None:
        return None

    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        raise SystemExit(f'clustergate {command}: --since: not an ISO date '
                         f'or time: {text!r}') from None

    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)

    return t.timestamp()


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
