"""``clustergate history`` on a real nightly sequence: 12 ReFrame sessions
of LinkMatrix (fab0, Open MPI) on the emulated leaf/spine cluster (9 nodes,
3 leaves, 250 Mbit/s, 2:1), node n5's fab0 link at 90 % of its rate from
night 7 on (``clustergate-lab sensitivity run --plan nights``; the perflog of
the sequence is the fixture, docs/reports/sensitivity.md). The change must be found
at night 7 (+-1) on n5's link and on no other node's link."""

import os
import re

from clustergate.results.samples import read_perflogs, select
from clustergate.results import history

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'fixtures', 'nights-n5-90', 'perflogs')
NODE, NIGHT = 'n5', 7
_LINK = re.compile(r'^(?:bw|peer)_(\w+?)_(?:sent|recv|both)$')


def _findings():
    samples = select(read_perflogs([FIXTURE]),
                              check='^LinkMatrix',
                              include_perf_failures=True)
    assert len({s.run for s in samples}) == 12, 'twelve nights'
    return [f for f in history.analyse(samples) if f.band != 'improvement']


def _node(f):
    m = _LINK.match(f.key.metric)
    return m.group(1) if m else None


def test_the_degraded_link_changes_at_night_k():
    found = [f for f in _findings() if _node(f) == NODE]
    assert found, 'no change point on n5'
    for f in found:
        assert f.kind == 'shift', f.message()
        assert abs(f.index + 1 - NIGHT) <= 1, f.message()
        assert f.change < 0, f.message()


def test_no_change_point_on_healthy_links():
    other = [f.message() for f in _findings()
             if _node(f) not in (None, NODE)]
    assert other == []
