"""A node link's retest replayed on recorded round figures: each launch
gives the next figure of each direction it measures, and the rounds end
when a direction it needs has none left."""

import itertools

from clustergate.links import retest_candidates
from clustergate.links import retest_driver

PARTNERS = ['p1', 'p2', 'p3', 'p4']


def replayed(cand, left, rate, used_up):
    """``cand`` decided by :func:`retest_driver.adaptive` against
    :data:`PARTNERS`, ``left`` ``{direction: iterator of figures}``, every
    other link at ``rate``; a launch that finds a direction used up raises
    ``RuntimeError(used_up)``. Returns adaptive's decisions."""
    node = cand.node
    clock = itertools.count()

    def measure(the_plan, timeout):
        fig = {}
        for dr in retest_candidates.DIRECTIONS:
            if any((p[0] == node) == (dr == 'sent') and node in p
                   for p in the_plan.pairs):
                fig[dr] = next(left[dr], None)
                if fig[dr] is None:
                    raise RuntimeError(used_up)
        return {(s, d): rate * (fig['sent'] if s == node else
                                fig['recv'] if d == node else 1.0)
                for s, d in the_plan.pairs}

    return retest_driver.adaptive([cand], {node: PARTNERS}, measure, 1e9,
                                  lambda: next(clock))
