"""Which mode (ci, nightly, acceptance) a test instance belongs to.

Modes select tests by tag. ``acceptance`` is the whole sweep; ``nightly``
and ``ci`` are subsets (ci within nightly). A check says whether an
instance is meant for ci and for nightly; a partition may narrow either to
a subset of its sweep with ``extras.sweep.ci`` / ``extras.sweep.nightly``
(lists of nodes, ppn and interconnects), so that a big system's gate stays
within minutes and its night within hours.
"""

from typing import Iterable, Mapping, Optional


def in_subset(point, partitions: Iterable[Mapping], mode: str) -> bool:
    """True if ``point`` is in the ``mode`` subset of at least one
    partition (a partition that declares no subset takes every point)."""
    for extras in partitions:
        if 'sweep' not in extras:
            continue

        sub = extras['sweep'].get(mode)
        if sub is None:
            return True

        if (point.nodes in sub.get('nodes', [point.nodes]) and
                point.ppn in sub.get('ppn', [point.ppn]) and
                point.interconnect in sub.get('interconnects',
                                              [point.interconnect])):
            return True

    return False


def in_ci_subset(point, partitions: Iterable[Mapping]) -> bool:
    """True if ``point`` is in the ci subset of at least one partition."""
    return in_subset(point, partitions, 'ci')


def tags_for(ci: bool, nightly: bool, point=None,
             partitions: Optional[Iterable[Mapping]] = None):
    """Tag set of a test meant for ci and/or nightly; with a ``point``,
    narrowed to the subsets the current system's partitions declare."""
    if point is not None:
        if partitions is None:
            from clustergate.rfm.axes import _current_partitions
            partitions = [e for _, e in _current_partitions()]

        partitions = list(partitions)
        ci = ci and in_subset(point, partitions, 'ci')
        nightly = nightly and in_subset(point, partitions, 'nightly')

    tags = {'acceptance'}
    if nightly or ci:
        tags.add('nightly')

    if ci:
        tags.add('ci')

    return tags
