"""The message size of a metric, where the report finds it: the
``msg_bytes`` axis of a one-pattern test (``PingPongDistance
%msg_bytes=1000``: metrics ``latency``, ``bandwidth``), or the metric's
own name in a suite that runs every pattern and size in one job
(ContentionSuite: ``pingpong_1000000_latency``, ``naive_bcast_8_bandwidth``;
clustergate.rfm.families.contention_suite.metric_name)."""

import re
from typing import Optional, Tuple

from clustergate.refs import references

#: ``<pattern>_<size>_<latency|bandwidth>`` (not the per-peer ``..._r<j>``
#: nor the ratios: one figure per pattern's worst rank)
_SUITE_METRIC = re.compile(r'^(?P<pattern>[a-z][a-z_]*?)_(?P<size>\d+)_'
                           r'(?P<metric>latency|bandwidth)$')

SIZED_METRICS = ('latency', 'bandwidth')


def sized(check: str, point: str, metric: str
          ) -> Optional[Tuple[str, float, str]]:
    """``(series, size in bytes, 'latency' or 'bandwidth')`` of a metric
    that has a message size, else None. ``series`` names what one figure
    shows: the check, or ``<check> <pattern>`` for a suite's metric."""
    m = _SUITE_METRIC.match(metric)
    if m:
        return f'{check} {m["pattern"]}', float(m['size']), m['metric']

    if metric not in SIZED_METRICS:
        return None

    axes = references.parse_axes(point) if point != '*' else {}
    try:
        size = float(axes['msg_bytes'])
    except (KeyError, ValueError):
        return None

    return check, size, metric
