"""Which mode (ci, nightly, acceptance) a test instance belongs to.

Modes select tests by tag. ``acceptance`` is the whole sweep; ``nightly``
and ``ci`` are subsets. A partition may narrow the ci subset with
``extras.sweep.ci`` (lists of nodes, ppn and interconnects), so that a
big system's merge-request gate stays within minutes.
"""

from typing import Iterable, Mapping


def in_ci_subset(point, partitions: Iterable[Mapping]) -> bool:
    """True if ``point`` is in the ci subset of at least one partition."""
    for extras in partitions:
        ci = extras.get('sweep', {}).get('ci')
        if ci is None:
            return True

        if (point.nodes in ci.get('nodes', [point.nodes]) and
                point.ppn in ci.get('ppn', [point.ppn]) and
                point.interconnect in ci.get('interconnects',
                                             [point.interconnect])):
            return True

    return False


def tags_for(ci: bool, nightly: bool):
    """Tag set of a test that is in the ci and/or nightly subsets."""
    tags = {'acceptance'}
    if nightly or ci:
        tags.add('nightly')

    if ci:
        tags.add('ci')

    return tags
