"""Rounds of concurrent flows: from the measurements of ``cg_linkmatrix``,
and generated patterns for a given topology.

A round is the set of flows that ran at the same time, each with its
measured rate (MB/s, the pair's median trial: in a round, flows that
share a link take unequal parts of it trial by trial, and their fastest
trials overstate the share the fair-share model predicts; see
:meth:`clustergate.parsers.cgoutput.Measurement.median_bandwidth`). ``cg_linkmatrix`` prints one line per flow
with ``round=<k>``; the mutual round k = N/2 (N even) runs in two halves,
one direction each: lines with a ``half=<h>`` field are grouped by
``(round, half)``; without it, the halves of round N/2 are told apart the
way ``cg_linkmatrix`` orders them (half 0: the lower rank sends). Any
other ``round=`` label (e.g. ``round=X3`` of an extra pattern) is one
concurrent round of its own.

Patterns for large fabrics (:func:`leaf_rounds`), one message per flow,
every node sending one flow and receiving one per round:

* ``I<k>`` intra-leaf shift: node i of each leaf sends to node i+k of the
  *same* leaf (all leaves at once). No trunk is used: every flow should run
  at its node link's rate. Exposes slow node links; it is the "within
  switch" reference of the uplink verdict.
* ``X<j>`` leaf shift: node i of leaf A sends to node i of leaf A+j. Every
  flow crosses the spine, every trunk carries one flow per node of its
  leaf in each direction: a trunk cut shows on all its leaf's flows, and
  over the rounds j = 1..L-1 each leaf sends to every other leaf. A node
  miscabled to leaf B runs *faster* than predicted in the round where its
  partner is on B (there, its flow stays inside B).
* ``C<b><v>`` contrast: leaves whose index has bit b equal to v send
  across (leaf shift within that set), the others run an intra-leaf shift.
  A node declared on an intra leaf A but cabled to a crossing leaf B then
  sends and receives through B's saturated trunk instead of staying in A:
  it runs at the trunk share (1/oversubscription), predicted full rate.
  Over all bits b and v = 0, 1 every pair of leaves (A, B) has a round
  with A intra and B crossing, so every miscabling is seen twice at least.

These need a trunk that is oversubscribed by the pattern (trunk rate
below the sum of the node links under it): in a non-blocking tree a
single miscabled node costs at most 1/(nodes per leaf) of any flow and is
not visible in bandwidth at all.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .model import Topology

Flow = Tuple[str, str]


@dataclass
class Round:
    """Concurrent flows, and their measured rates when measured:
    ``measured`` at each flow's median trial, ``fastest`` at its fastest
    (when the output has both: what confirms a slow pair, see
    :func:`clustergate.links.topology.analysis.diagnose`)."""

    label: str
    flows: List[Flow]
    measured: Optional[List[float]] = None
    fastest: Optional[List[float]] = None

    def __len__(self):
        return len(self.flows)


def _node_names(lines):
    names = {}
    for m in lines:
        names[int(m['src_rank'])] = str(m['src'])
        names[int(m['dst_rank'])] = str(m['dst'])
    counts: Dict[str, int] = {}
    for n in names.values():
        counts[n] = counts.get(n, 0) + 1
    return {r: (n if counts[n] == 1 else f'{n}#{r}')
            for r, n in names.items()}


def rounds_from_measurements(measurements, split: bool = True,
                             fastest: bool = False) -> List[Round]:
    """Rounds of the ``linkmatrix`` CG lines (:mod:`clustergate.parsers.cgoutput`),
    each flow at its median trial, what the fabric fit compares with its
    fair shares (see the module doc, also for the halves; ``split=False``
    for output of ``cg_linkmatrix --no-split``). ``fastest``: at its
    fastest trial instead, what a node link alone can carry whatever the
    load of the machine (the node figures of :mod:`clustergate.links.stats`)."""
    lines = [m for m in measurements if m.pattern == 'linkmatrix']
    label = _node_names(lines)
    groups: Dict[Tuple, Round] = {}
    for m in lines:
        k = m.fields.get('round')
        half = m.fields.get('half')
        ranks = m.fields.get('ranks')
        src, dst = int(m['src_rank']), int(m['dst_rank'])
        if half is None and split and isinstance(k, int) and ranks and \
                2 * k == int(ranks):
            half = 0 if src < dst else 1
        key = (str(k), '' if half is None else str(half))
        label_text = key[0] + ('' if half is None else f'.{half}')
        r = groups.setdefault(key, Round(label_text, [], [], []))
        best = m.best_bandwidth()
        value = best if fastest else m.median_bandwidth()
        if value is None:
            continue
        r.flows.append((label[src], label[dst]))
        r.measured.append(float(value))
        r.fastest.append(float(value if best is None else best))

    def order(key):
        k, h = key
        return (0, int(k), h) if k.lstrip('-').isdigit() else (1, k, h)

    return [groups[k] for k in sorted(groups, key=order)]


def shift_rounds(nodes: Sequence[str], split: bool = True) -> List[Round]:
    """The N-1 shift rounds of ``cg_linkmatrix`` (the mutual round N/2
    in two halves unless ``split`` is false)."""
    n = len(nodes)
    out = []
    for k in range(1, n):
        flows = [(nodes[r], nodes[(r + k) % n]) for r in range(n)]
        if split and 2 * k == n:
            out.append(Round(f'{k}.0', [(a, b) for a, b in flows
                                        if nodes.index(a) < nodes.index(b)]))
            out.append(Round(f'{k}.1', [(a, b) for a, b in flows
                                        if nodes.index(a) > nodes.index(b)]))
        else:
            out.append(Round(str(k), flows))
    return out


def _groups(topology: Topology) -> List[List[str]]:
    return [topology.nodes_of(s) for s in topology.leaves]


def intra_round(groups, k) -> List[Flow]:
    flows = []
    for g in groups:
        if len(g) > 1 and k % len(g):
            flows += [(g[i], g[(i + k) % len(g)]) for i in range(len(g))]
    return flows


def cross_round(groups, j) -> List[Flow]:
    flows = []
    L = len(groups)
    for a in range(L):
        src, dst = groups[a], groups[(a + j) % L]
        if src is dst:
            continue
        # node i -> node i of the target leaf (wrapping when sizes differ)
        flows += [(src[i], dst[i % len(dst)]) for i in range(len(src))]
    return flows


def _height(topology: Topology) -> int:
    """Switch levels above the nodes (2: leaves under one spine)."""
    return max(len(topology.chain(s)) for s in topology.leaves)


def level_rounds(topology: Topology) -> List[Round]:
    """Shifts on every level of a deeper tree: under each switch with
    several children, node k below child i sends to node k below child
    i+j (j = 1..children-1), all switches of one level at once. On a
    three-level tree (leaves, spines, a core): ``X<j>`` shifts the leaves
    of each spine (their trunks loaded, the spine-core trunks idle),
    ``S<j>`` shifts the spines (every flow through two spine-core
    trunks): leaves per spine - 1 + spines - 1 rounds instead of one per
    leaf."""
    kids: Dict[str, List[str]] = {}
    for sw, p in topology.parent.items():
        if p is not None:
            kids.setdefault(p, []).append(sw)
    below: Dict[str, List[str]] = {s: topology.nodes_of(s)
                                   for s in topology.parent}

    def nodes_under(sw):
        out = list(below[sw])
        for c in kids.get(sw, []):
            out += nodes_under(c)
        return out

    # level of a switch: its height above the leaves' level
    height = {s: 0 for s in topology.leaves}
    for s in topology.leaves:
        h, p = 0, topology.parent[s]
        while p is not None:
            h += 1
            height[p] = max(height.get(p, 0), h)
            p = topology.parent[p]
    out = []
    names = {1: 'X', 2: 'S'}
    for h in range(1, max(height.values()) + 1):
        parents = [s for s in topology.parent if height.get(s) == h and
                   len([c for c in kids.get(s, []) if nodes_under(c)]) > 1]
        groups_of = {s: [g for g in (nodes_under(c) for c in kids[s]) if g]
                     for s in parents}
        most = max((len(g) for g in groups_of.values()), default=0)
        prefix = names.get(h, f'L{h}_')
        for j in range(1, most):
            flows = []
            for s in parents:
                if j < len(groups_of[s]):
                    flows += cross_round(groups_of[s], j)
            if flows:
                out.append(Round(f'{prefix}{j}', flows))
    return out


def leaf_rounds(topology: Topology, intra: Optional[Sequence[int]] = None,
                cross: Optional[Sequence[int]] = None,
                contrast: bool = True) -> List[Round]:
    """Patterns of the module doc for ``topology``'s leaves: intra-leaf
    shifts ``intra`` (default: 1 and half a leaf), leaf shifts ``cross``
    (default: all, 1..L-1) and the contrast rounds."""
    groups = _groups(topology)
    L = len(groups)
    size = max(len(g) for g in groups)
    if intra is None:
        intra = sorted({1, max(1, size // 2)})
    out = [Round(f'I{k}', intra_round(groups, k)) for k in intra]
    if cross is None and _height(topology) > 2:
        out += level_rounds(topology)
    else:
        cross = range(1, L) if cross is None else cross
        out += [Round(f'X{j}', cross_round(groups, j)) for j in cross]
    if contrast and L >= 2:
        bits = max(1, (L - 1).bit_length())
        for b in range(bits):
            for v in (0, 1):
                across = [g for i, g in enumerate(groups) if (i >> b) & 1 == v]
                inside = [g for i, g in enumerate(groups) if (i >> b) & 1 != v]
                flows = intra_round(inside, 1)
                if len(across) >= 2:
                    flows += cross_round(across, 1)
                else:
                    flows += intra_round(across, 1)
                out.append(Round(f'C{b}{v}', flows))
    return [r for r in out if r.flows]


def valid_rounds(rounds: Sequence[Round], split: bool = True) -> List[Round]:
    """``rounds`` as ``cg_linkmatrix --schedule`` runs them: in a round
    every node sends at most one flow and receives at most one; a flow
    that would be a node's second (leaf shifts between leaves of unequal
    sizes) goes to a continuation round ``<label>.1``, ``.2``, ... With
    ``split``, the two directions of a pair never run together either
    (as the mutual round of the shift rounds: one direction first)."""
    out = []
    for r in rounds:
        # per continuation: its flows, senders (-> receiver), receivers
        parts: List[Tuple[List[Flow], Dict[str, str], set]] = []
        for a, b in r.flows:
            for flows, sends, recvs in parts:
                if a in sends or b in recvs or \
                        (split and sends.get(b) == a):
                    continue
                flows.append((a, b))
                sends[a] = b
                recvs.add(b)
                break
            else:
                parts.append(([(a, b)], {a: b}, {b}))
        for i, (flows, _, _) in enumerate(parts):
            out.append(Round(r.label if i == 0 else f'{r.label}.{i}', flows))
    return out


#: intra-leaf shifts of the schedule (at most a leaf's size - 1): a node
#: link is measured at its own rate only where no trunk limits its flow,
#: i.e. within its leaf on an oversubscribed tree. Simulated at 1,024
#: nodes (32 leaves of 32, 2:1, sigma 0.15, 5 healthy cases): with 2
#: intra-leaf shifts up to 141 node links per case were borderline and
#: left undecided by the retest, with 15 up to 18, with 30 up to 4
INTRA_SHIFTS = 30


def schedule(topology: Optional[Topology], nodes: Sequence[str],
             all_pairs: bool = False, split: bool = True,
             intra_shifts: Optional[int] = None) -> List[Round]:
    """The rounds a link matrix of ``nodes`` runs: on a declared
    ``topology`` the leaf rounds (:func:`leaf_rounds` over the leaves of
    ``nodes``, made valid by :func:`valid_rounds`), else or with
    ``all_pairs`` the N-1 shift rounds (:func:`shift_rounds`)."""
    if topology is None or all_pairs:
        return shift_rounds(list(nodes), split)
    keep = set(nodes)
    missing = [n for n in nodes if n not in topology.leaf_of]
    if missing:
        raise ValueError(f'node {missing[0]} is not in the declared '
                         f'topology ({topology.source or "?"})')
    sub = Topology({n: s for n, s in topology.leaf_of.items() if n in keep},
                   dict(topology.parent), source=topology.source,
                   dragonfly=topology.dragonfly)
    size = max(len(sub.nodes_of(leaf)) for leaf in sub.leaves)
    k = INTRA_SHIFTS if intra_shifts is None else intra_shifts
    # shift size/2 pairs the nodes mutually (two rounds): kept for last
    shifts = [j for j in range(1, size) if 2 * j != size][:k]
    return valid_rounds(leaf_rounds(sub, intra=shifts or [1]), split)


def all_pairs_rounds(n: int, split: bool = True) -> int:
    """Rounds of the N-1 shift rounds of ``n`` nodes (the mutual round in
    two halves)."""
    return n - 1 + (split and n % 2 == 0)


def schedule_text(rounds: Sequence[Round]) -> str:
    """The ``--schedule`` file of ``cg_linkmatrix``: one round per line,
    its label and its flows as ``SRC:DST``."""
    return ''.join(f'{r.label} ' + ' '.join(f'{a}:{b}' for a, b in r.flows)
                   + '\n' for r in rounds)


def parse_schedule_text(text: str) -> List[Round]:
    """The rounds of a ``--schedule`` file (:func:`schedule_text`);
    ValueError naming the first bad line."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith('#'):
            continue
        flows = []
        for w in words[1:]:
            a, sep, b = w.partition(':')
            if not sep or not a or not b:
                raise ValueError(f'line {i}: expected SRC:DST, got {w!r}')
            flows.append((a, b))
        out.append(Round(words[0], flows))
    return out
