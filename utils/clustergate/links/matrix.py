"""Analysis of the node-to-node bandwidth matrix of ``cg_linkmatrix``.

The matrix is self-referencing: no stored reference is needed to say that
one link or one node is far slower than the others. A pair is *slow* when
its bandwidth is below ``fraction`` (default 0.7) of the matrix median.

A pair's bandwidth is that of its fastest trial (what the link can carry,
see :meth:`clustergate.parsers.cgoutput.Measurement.best_bandwidth`). Measured on
the emulated cluster (4 MB, healthy links), the worst pair of a matrix was
at 0.83x (quiet machine, 24 matrices) and 0.63x (both cores busy with
other work, 12 matrices) of the median by the mean of its trials, at 0.91x
and 0.78x by its fastest trial; a node throttled to 1/4 shows 0.25x.

Aggregation, so that the verdict names what to look at:

* **suspect node/NIC**: a node most of whose row (what it sends) *and* most
  of whose column (what it receives) are slow. Each node is judged against
  the median of the pairs that do not touch it, because one bad node of N
  spoils 2/N of the matrix (half of it for N=4) and would drag the plain
  median down with it.
* **suspect link/route**: a slow pair (one or both directions) between two
  nodes that are not suspect themselves. The reference of the pairs is the
  median of the pairs that touch no suspect node ("matrix median").

Verdict lines look like::

    suspect node n4 on fabric fab0: row 0.25x, column 0.26x median (...)
    suspect link n1<->n3 on fabric fab0: 0.26x median

The matrix is saved as a CSV (rows: source, columns: destination) and drawn
as a heat map by :func:`heatmap`.
"""

import csv
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from clustergate.links.topology import analysis as topology_analysis

Pair = Tuple[str, str]

DEFAULT_FRACTION = 0.7


@dataclass
class Matrix:
    """Bandwidths (MB/s) between named nodes; ``bw[(src, dst)]``."""

    nodes: List[str]
    bw: Dict[Pair, float]

    def value(self, src, dst) -> Optional[float]:
        return self.bw.get((src, dst))

    def pairs(self) -> List[Pair]:
        return [(s, d) for s in self.nodes for d in self.nodes
                if s != d and (s, d) in self.bw]

    @classmethod
    def from_rows(cls, nodes: Sequence[str], rows: Sequence[Sequence]):
        """From a square list of rows (``None`` on the diagonal)."""
        bw = {}
        for i, s in enumerate(nodes):
            for j, d in enumerate(nodes):
                v = rows[i][j]
                if i != j and v is not None:
                    bw[(s, d)] = float(v)

        return cls(list(nodes), bw)


def labels(measurements) -> Dict[int, str]:
    """``{rank: node label}`` of ``linkmatrix`` CG lines: the host name,
    with the rank appended where several ranks share a host (``vm#1``)."""
    names = {}
    for m in measurements:
        if m.pattern == 'linkmatrix':
            names[int(m['src_rank'])] = str(m['src'])
            names[int(m['dst_rank'])] = str(m['dst'])

    counts = {}
    for n in names.values():
        counts[n] = counts.get(n, 0) + 1

    return {r: (n if counts[n] == 1 else f'{n}#{r}')
            for r, n in names.items()}


def from_measurements(measurements) -> Matrix:
    """Matrix of the ``linkmatrix`` CG lines (:mod:`clustergate.parsers.cgoutput`),
    each pair at the bandwidth of its fastest trial.

    Nodes are named by their host name; when several ranks share a host
    (``--any-placement`` test runs) the rank is appended (``vm#1``)."""
    lines = [m for m in measurements if m.pattern == 'linkmatrix']
    label = labels(lines)
    bw = {}
    for m in lines:
        value = m.best_bandwidth()
        if value is not None:
            bw[(label[int(m['src_rank'])], label[int(m['dst_rank'])])] = \
                float(value)

    return Matrix([label[r] for r in sorted(label)], bw)


# -- analysis --------------------------------------------------------------

@dataclass
class Verdict:
    kind: str                   # 'node' or 'link'
    nodes: Tuple[str, ...]      # the node, or the two ends of the link
    ratio: float                # worst ratio to the reference
    pairs: Dict[Pair, float]    # the slow pairs with their ratios
    message: str


@dataclass
class Analysis:
    fabric: str
    fraction: float
    median: Optional[float]     # reference of the pairs (MB/s)
    ratios: Dict[Pair, float] = field(default_factory=dict)
    slow: List[Pair] = field(default_factory=list)
    verdicts: List[Verdict] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    # no verdict, and the verdicts' messages: as on a tree
    healthy = topology_analysis.Analysis.healthy
    messages = topology_analysis.Analysis.messages

    def summary(self) -> str:
        if self.median is None:
            return f'no link matrix on fabric {self.fabric}'

        worst = min(self.ratios.values()) if self.ratios else 1.0
        head = (f'link matrix on fabric {self.fabric}: {len(self.ratios)} '
                f'pairs, median {self.median:.1f} MB/s, worst pair '
                f'{worst:.2f}x median')
        if self.healthy:
            return head + f', none below {self.fraction:g}x: healthy'

        return head + '; ' + '; '.join(self.messages())


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _suspect_nodes(matrix: Matrix, pairs, fraction):
    """Nodes most of whose row and most of whose column are slow, each
    judged against the median of the pairs that do not touch it."""
    suspects = []
    if len(matrix.nodes) < 3:
        return suspects

    for node in matrix.nodes:
        ref = _median([matrix.bw[p] for p in pairs if node not in p])
        row = [matrix.bw[p] for p in pairs if p[0] == node]
        col = [matrix.bw[p] for p in pairs if p[1] == node]
        if not ref or not row or not col:
            continue

        slow_row = sum(v < fraction * ref for v in row)
        slow_col = sum(v < fraction * ref for v in col)
        if 2 * slow_row > len(row) and 2 * slow_col > len(col):
            suspects.append(node)

    return suspects


def _node_verdict(analysis: Analysis, pairs, node) -> Verdict:
    row = [analysis.ratios[p] for p in pairs if p[0] == node]
    col = [analysis.ratios[p] for p in pairs if p[1] == node]
    slow = {p: analysis.ratios[p] for p in analysis.slow if node in p}
    listed = ', '.join(f'{s}->{d} {r:.2f}x'
                       for (s, d), r in sorted(slow.items()))
    msg = (f'suspect node {node} on fabric {analysis.fabric}: row '
           f'{statistics.median(row):.2f}x, column '
           f'{statistics.median(col):.2f}x median ({listed})')
    return Verdict('node', (node,), min(row + col), slow, msg)


def _link_verdicts(analysis: Analysis, matrix: Matrix, suspects):
    """Slow pairs between nodes that are not suspect, one verdict per link
    (both directions slow: a<->b, else the slow direction)."""
    ratios, fraction = analysis.ratios, analysis.fraction
    done = set()
    for s, d in analysis.slow:
        if s in suspects or d in suspects or frozenset((s, d)) in done:
            continue

        done.add(frozenset((s, d)))
        a, b = sorted((s, d), key=matrix.nodes.index)
        there, back = ratios.get((a, b)), ratios.get((b, a))
        slow = {p: ratios[p] for p in ((a, b), (b, a))
                if p in ratios and ratios[p] < fraction}
        if len(slow) == 2:
            msg = (f'suspect link {a}<->{b} on fabric {analysis.fabric}: '
                   f'{min(there, back):.2f}x median')
        else:
            (ss, dd), r = next(iter(slow.items()))
            other = ratios.get((dd, ss))
            rest = f' ({dd}->{ss} {other:.2f}x)' if other is not None else ''
            msg = (f'suspect link {ss}->{dd} on fabric {analysis.fabric}: '
                   f'{r:.2f}x median{rest}')

        yield Verdict('link', (a, b), min(slow.values()), slow, msg)


def analyse(matrix: Matrix, fraction: float = DEFAULT_FRACTION,
            fabric: str = '?') -> Analysis:
    """Flag slow pairs and aggregate them into node and link verdicts."""
    if not 0 < fraction < 1:
        raise ValueError(f'fraction must be in (0, 1), got {fraction}')

    pairs = matrix.pairs()
    if not pairs:
        return Analysis(fabric, fraction, None,
                        notes=['no pair was measured'])

    suspects = _suspect_nodes(matrix, pairs, fraction)
    # the reference of the pairs: those touching no suspect node
    healthy_pairs = [p for p in pairs if not set(p) & set(suspects)]
    median = _median([matrix.bw[p] for p in healthy_pairs]) or \
        _median([matrix.bw[p] for p in pairs])
    analysis = Analysis(fabric, fraction, median)
    if not median:
        analysis.notes.append('matrix median is zero')
        return analysis

    analysis.ratios = {p: matrix.bw[p] / median for p in pairs}
    analysis.slow = [p for p in pairs if analysis.ratios[p] < fraction]
    if len(matrix.nodes) < 3:
        analysis.notes.append('fewer than 3 nodes: a slow node cannot be '
                              'told from a slow link')

    analysis.verdicts += [_node_verdict(analysis, pairs, node)
                          for node in suspects]
    analysis.verdicts += _link_verdicts(analysis, matrix, suspects)
    return analysis


# -- files -----------------------------------------------------------------

def write_csv(matrix: Matrix, path) -> None:
    """Square CSV: first column the source node, one column per
    destination, MB/s (empty on the diagonal)."""
    with open(path, 'w', newline='') as fp:
        w = csv.writer(fp)
        w.writerow(['src\\dst', *matrix.nodes])
        for s in matrix.nodes:
            w.writerow([s, *('' if matrix.value(s, d) is None
                             else f'{matrix.value(s, d):.4f}'
                             for d in matrix.nodes)])


def read_csv(path) -> Matrix:
    with open(path, newline='') as fp:
        rows = list(csv.reader(fp))

    nodes = rows[0][1:]
    values = [[float(v) if v else None for v in r[1:]] for r in rows[1:]]
    return Matrix.from_rows(nodes, values)


def heatmap(matrix: Matrix, path, title='', fraction=DEFAULT_FRACTION,
            analysis: Optional[Analysis] = None) -> str:
    """Heat map PNG of the matrix (colour: ratio to the median; text:
    MB/s). Returns ``path``. Needs matplotlib (the ``report`` extra)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    shown = analysis or analyse(matrix, fraction)
    n = len(matrix.nodes)
    grid = [[shown.ratios.get((s, d), float('nan')) for d in matrix.nodes]
            for s in matrix.nodes]
    size = max(4.0, 1.0 + 0.9 * n)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    # cividis: ordered dark -> light, readable with any colour vision
    # (red/green is what the commonest colour blindness cannot tell apart)
    im = ax.imshow(grid, cmap='cividis', vmin=0.0, vmax=1.2)
    ax.set_xticks(range(n), matrix.nodes)
    ax.set_yticks(range(n), matrix.nodes)
    ax.set_xlabel('destination (receives)')
    ax.set_ylabel('source (sends)')
    for i, s in enumerate(matrix.nodes):
        for j, d in enumerate(matrix.nodes):
            v = matrix.value(s, d)
            if v is not None and n <= 24:
                ax.text(j, i, f'{v:.0f}', ha='center', va='center',
                        fontsize=8 if n <= 12 else 6)

    cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    cb.set_label(f'ratio to median ({shown.median or 0:.0f} MB/s): dark = '
                 f'slow, slow < {fraction:g}')
    cb.ax.axhline(fraction, color='white', lw=1.5)
    ax.set_title(title or f'link matrix, fabric {shown.fabric} (MB/s)',
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)

