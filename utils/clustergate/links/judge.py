"""Judging one night's node links: each node link's figure against its
own baseline (a :class:`LinkStat`, learnt by ``clustergate baseline
--links``, :mod:`clustergate.links.linkbaselines`) and against its peers in the
same run, with the bounds that name it.

Standard library only, on purpose: the retest driver imports it inside
the link matrix's job, beside the matrix, on the job's critical path, and
the file side of baselines (YAML, the reference files, the results store)
is not needed there.
"""

import statistics
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

#: With a baseline: named when at most RATIO of its baseline median and
#: at least Z MADs below it (docs/reports/link-baselines.md: from the healthy
#: spread measured on the emulated tree)
RATIO = 0.95
Z = 5.0
#: one direction alone (sent or recv: 2-3 flows here) is noisier than
#: both together: named at this ratio (and Z)
DIRECTION_RATIO = 0.9
#: the MAD of a baseline counts at least this share of its median
MAD_FLOOR = 0.01
#: Peers only (no baseline): named when at most PEER_RATIO of the run's
#: node links and at least PEER_Z of the run's MADs below their median
#: (one direction: PEER_RATIO x DIRECTION_RATIO / RATIO). Wider than with
#: a baseline: a node link's own level is unknown, and on the flat 4-node
#: emulation (1 Gbit/s, CPU-bound flows) healthy pairs ran down to 0.78x
#: of the median
PEER_RATIO = 0.85
PEER_Z = 5.0


@dataclass
class LinkStat:
    """One node link's healthy level and spread."""

    median: float
    mad: float
    runs: int
    min: Optional[float] = None
    max: Optional[float] = None

    def sigma(self) -> float:
        """The MAD used as the unit of z (floored, see MAD_FLOOR)."""
        return max(self.mad, MAD_FLOOR * abs(self.median))


@dataclass
class LinkJudgement:
    """One node link of one run, against its baseline and its peers."""

    node: str
    direction: str
    figure: float                   # x of its peers in this run
    peer_z: float                   # MADs of the run from the run's median
    base: Optional[LinkStat] = None
    ratio: Optional[float] = None   # figure / baseline median
    z: Optional[float] = None       # MADs from the baseline median
    named: bool = False
    #: the run's MAD (floored) over its median: how tight its peers are
    spread: Optional[float] = None
    #: how many node-link figures the run judged (its peers' count)
    count: int = 0

    def describe(self) -> str:
        peers = f'{self.figure:.2f}x its peers ({self.peer_z:+.1f} MADs)'
        if self.base is None:
            return peers
        return (f'{self.ratio:.2f}x its baseline ({self.z:+.1f} MADs: '
                f'{self.figure:.3f} vs {self.base.median:.3f} +- '
                f'{self.base.sigma():.3f}, {self.base.runs} runs), ' + peers)


@dataclass
class LinkVerdict:
    """The node links of one run judged; ``lines`` fail the test."""

    judgements: List[LinkJudgement]
    lines: List[str]
    basis: str                      # what it was judged against

    def worst(self) -> Optional[LinkJudgement]:
        return min(self.judgements, default=None,
                   key=lambda j: j.z if j.z is not None else j.peer_z)


def _peer_spread(figures) -> Tuple[float, float]:
    values = [f.peer for f in figures.values()]
    med = statistics.median(values)
    m = statistics.median(abs(v - med) for v in values)
    return med, max(m, MAD_FLOOR * abs(med))


# long: each node link judged, then what it was judged against, then one
# line per named node
def judge(figures: Mapping, stats: Optional[Mapping[str, LinkStat]],
          fabric: str = '?', skip: Sequence[str] = (), ratio=RATIO, z=Z,
          peer_ratio=PEER_RATIO, peer_z=PEER_Z, basis='',
          direction_ratio=DIRECTION_RATIO) -> LinkVerdict:
    """Judge each node link's figure (``{(node, direction): NodeFigure}``)
    against its baseline ``stats`` (``{metric: LinkStat}``, None: no
    baseline) and its peers. ``skip``: nodes another verdict named."""
    from clustergate.links.stats import metric_names
    if not figures:
        return LinkVerdict([], [], 'no node link measured')
    med, spread = _peer_spread(figures)
    out = []
    for (node, direction), f in sorted(figures.items()):
        j = LinkJudgement(node, direction, f.peer, (f.peer - med) / spread,
                          spread=spread / abs(med) if med else None,
                          count=len(figures))
        st = (stats or {}).get(metric_names(node, direction)[1])
        if st is not None:
            j.base, j.ratio = st, f.peer / st.median
            j.z = (f.peer - st.median) / st.sigma()
            j.named = j.z <= -z and j.ratio <= (
                ratio if direction == 'both' else direction_ratio)
        else:
            j.named = j.peer_z <= -peer_z and f.peer <= (
                peer_ratio if direction == 'both' else
                peer_ratio * direction_ratio / ratio)
        out.append(j)

    with_base = sum(j.base is not None for j in out)
    if not stats:
        how = (f'no link baseline{" " + basis if basis else ""}: judged '
               f'against its peers only (at most {peer_ratio:g}x and '
               f'{peer_z:g} MADs below the run\'s median)')
    else:
        how = (f'judged against the link baseline {basis} ({with_base} of '
               f'{len(out)} node links; at most {ratio:g}x and {z:g} MADs '
               f'below) and its peers')
        if with_base < len(out):
            how += (f'; {len(out) - with_base} without a baseline against '
                    f'their peers only')

    lines = []
    by_node: Dict[str, List[LinkJudgement]] = {}
    for j in out:
        if j.named and j.node not in skip:
            by_node.setdefault(j.node, []).append(j)
    for node, js in sorted(by_node.items()):
        order = ('both', 'sent', 'recv')
        js.sort(key=lambda j: order.index(j.direction))
        label = {'both': 'both ways', 'sent': 'sent', 'recv': 'received'}
        lines.append(f'slow node link {node} on fabric {fabric}: ' +
                     '; '.join(f'{label[j.direction]} ' + j.describe()
                               for j in js) + f' [basis: {_basis(js)}]')
    return LinkVerdict(out, lines, how)


def _basis(js: Sequence[LinkJudgement]) -> str:
    """What judged a node's named directions: its baseline, its peers
    only (no baseline), or both (a baseline for some directions)."""
    based = {j.base is not None for j in js}
    if based == {True}:
        return 'its baseline'
    if based == {False}:
        return 'peers only, no baseline'
    return 'its baseline, peers only where it has none'


