"""How the report reads one sample and a series of them: the status of a
sample against its reference (within, out of, no reference), its band, and
the samples of the latest session (what a figure of one run draws)."""

from typing import List, Sequence

from clustergate.refs import references
from clustergate.results.samples import Sample

#: perflog samples carry no session id: samples further apart than this
#: belong to different sessions (a night's run has no such gap)
SESSION_GAP_S = 3600


def status(s: Sample) -> str:
    """'ok', 'out of reference' or 'no reference' of one sample."""
    if references.status_of(s.ref, s.lower, s.upper) == \
            references.NO_REFERENCE:
        return references.NO_REFERENCE

    lo = s.ref * (1 + s.lower) if s.lower is not None else None
    hi = s.ref * (1 + s.upper) if s.upper is not None else None
    if (lo is not None and s.value < lo) or (hi is not None and s.value > hi):
        return 'out of reference'

    return 'ok'


def band(s: Sample):
    if s.ref in (None, 0):
        return None, None

    lo = s.ref * (1 + s.lower) if s.lower is not None else None
    hi = s.ref * (1 + s.upper) if s.upper is not None else None
    return lo, hi


def _session(sample: Sample) -> str:
    """Session id of a sample of a results DB or JSON report, '' for a
    perflog sample (job@time)."""
    return sample.run.split(':')[0] if '@' not in sample.run else ''


def latest_session(
        samples: Sequence[Sample]) -> List[Sample]:
    """The samples of the most recent session: by session id where the
    source has one, else the samples after the last gap of more than
    SESSION_GAP_S (perflogs), so that a figure never mixes two runs."""
    if not samples:
        return []

    newest = max(samples, key=lambda s: s.time)
    if _session(newest):
        return [s for s in samples if _session(s) == _session(newest)]

    times = sorted(s.time for s in samples)
    start = times[0]
    for a, b in zip(times, times[1:]):
        if b - a > SESSION_GAP_S:
            start = b

    return [s for s in samples if s.time >= start]
