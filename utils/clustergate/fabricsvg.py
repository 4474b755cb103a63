"""A picture of a fabric's verdict: the switch tree as the site declared it
(spine, leaves, nodes), drawn as an inline SVG, with every culprit the
LinkMatrix check named marked where it is:

* a slow uplink (``uplink leaf2-spine on fabric fab0: ...``): the trunk in
  red; when the rounds cannot tell two trunks apart (``uplink leaf1-spine
  or uplink leaf2-spine ...``) both are red and dashed;
* a miscabled node (``miscabled node n2 on fabric fab0: n2 behaves as if
  cabled to leaf3; topology.conf says leaf1 ...``): drawn on the leaf it
  behaves as on, cable in red, with a dashed ghost where it was declared;
* a slow node link (``suspect node``, ``slow node link``, ``undecided node
  link``): the node and its cable in red (undecided: dashed);
* a slow pair (``suspect link a->b``, ``slow link a->b``): both ends
  outlined.

No JavaScript, no plotting library: the page stays one static file that
opens from the file system. :func:`parse_verdict` reads the verdict text
(the ``faults`` unit, or the failure reason that carries it);
:func:`draw` makes the SVG.
"""

import re
from dataclasses import dataclass
from html import escape
from typing import Dict, List, Sequence, Tuple

#: colour of a culprit (Okabe-Ito vermillion, as the page's red box)
RED = '#D55E00'
GREY = '#8a8a8a'
#: trees with more nodes than this draw each leaf's healthy nodes as one box
MAX_NODES_DRAWN = 48

_START = re.compile(
    r'(?:suspect node|suspect link|slow link|uplink|miscabled node|'
    r'slow node link|undecided node link) \S+(?: or uplink \S+)* '
    r'on fabric \S+: ')
_UPLINK = re.compile(r'^uplink ((?:\S+-\S+)(?: or uplink \S+-\S+)*) '
                     r'on fabric (\S+): ')
_MISCABLED = re.compile(r'^miscabled node (\S+) on fabric (\S+): \S+ behaves '
                        r'as if cabled to (\S+); .*? says (\S+?)(?:[ ;(]|$)')
_NODE = re.compile(r'^(suspect node|slow node link|undecided node link) (\S+) '
                   r'on fabric (\S+): ')
_PAIR = re.compile(r'^(?:suspect|slow) link (\S+?)(<->|->|<-)(\S+) '
                   r'on fabric (\S+): ')


@dataclass(frozen=True)
class Culprit:
    """One named fault: ``kind`` is 'uplink' (``where``: the switches whose
    trunk to their parent is slow, more than one when the rounds cannot tell
    them apart), 'miscabled' (``where``: node, leaf it behaves as on, leaf
    declared), 'node' (``where``: the node; ``sure`` False for an undecided
    one) or 'pair' (``where``: the nodes at both ends)."""

    kind: str
    fabric: str
    where: Tuple[str, ...]
    line: str
    sure: bool = True


def verdict_lines(text: str) -> List[str]:
    """The verdict lines in ``text``: they are joined by '; ' in the
    ``faults`` unit, and a line itself may hold '; ', so each line starts
    where a verdict's own opening words do."""
    starts = [m.start() for m in _START.finditer(text or '')
              if m.start() == 0 or text[:m.start()].endswith((': ', '; '))]
    ends = starts[1:] + [len(text or '')]
    return [text[a:b].rstrip().rstrip(';').rstrip()
            for a, b in zip(starts, ends)]


def _culprit(line: str):
    m = _UPLINK.match(line)
    if m:
        leaves = tuple(s.rsplit('-', 1)[0]
                       for s in m.group(1).split(' or uplink '))
        return Culprit('uplink', m.group(2), leaves, line, len(leaves) == 1)
    m = _MISCABLED.match(line)
    if m:
        return Culprit('miscabled', m.group(2),
                       (m.group(1), m.group(3), m.group(4)), line)
    m = _NODE.match(line)
    if m:
        return Culprit('node', m.group(3), (m.group(2),), line,
                       not m.group(1).startswith('undecided'))
    m = _PAIR.match(line)
    if m:
        ends = (m.group(1),) + tuple(m.group(3).split(','))
        return Culprit('pair', m.group(4), ends, line)
    return None


def parse_verdict(text: str, fabric: str = None) -> List[Culprit]:
    """Every culprit the verdict ``text`` names (on ``fabric`` only, when
    given), in the order named."""
    out = [_culprit(ln) for ln in verdict_lines(text)]
    return [c for c in out if c is not None and
            (fabric is None or c.fabric == fabric)]


# -- layout ---------------------------------------------------------------

def _placed_nodes(topo, culprits) -> Dict[str, List[Tuple[str, str]]]:
    """Per leaf, the boxes under it: (label, role). A miscabled node sits
    under the leaf it behaves as on (role 'moved') and leaves a 'ghost' at
    its declared place; large trees fold each leaf's unnamed nodes into one
    box."""
    moved = {c.where[0]: c.where[1] for c in culprits
             if c.kind == 'miscabled' and c.where[1] in topo.parent}
    named = {n for c in culprits for n in c.where if n in topo.leaf_of}
    fold = len(topo.leaf_of) > MAX_NODES_DRAWN
    out = {leaf: [] for leaf in topo.leaves}
    for leaf in topo.leaves:
        kept = 0
        for n in topo.nodes_of(leaf):
            if n in moved:
                out[leaf].append((n, 'ghost'))
            elif fold and n not in named:
                kept += 1
            else:
                out[leaf].append((n, 'node'))
        if kept:
            out[leaf].append((f'+{kept} nodes', 'fold'))
    for n, leaf in moved.items():
        out.setdefault(leaf, []).append((n, 'moved'))
    return out


def _positions(topo, boxes, box_w, gap):
    """x of every node box (per leaf, in order) and of every switch: a
    leaf centred over its nodes, a switch over its children."""
    x, node_x, sw_x = 20.0, {}, {}
    for leaf in [s for s in topo.switches if s in boxes] or topo.leaves:
        xs = []
        for i, _ in enumerate(boxes.get(leaf, [])):
            xs.append(x)
            x += box_w + gap
        node_x[leaf] = xs
        sw_x[leaf] = (xs[0] + xs[-1]) / 2 + box_w / 2 if xs else x
        x += 2 * gap
    for s in sorted(topo.switches, key=lambda s: -len(topo.chain(s))):
        kids = [c for c in topo.switches if topo.parent[c] == s]
        if s not in sw_x:
            sw_x[s] = sum(sw_x[k] for k in kids) / len(kids) if kids else x
    return node_x, sw_x, x


def _text(x, y, s, size=11, anchor='middle', fill='#222'):
    return (f'<text x="{x:.0f}" y="{y:.0f}" font-size="{size}" '
            f'text-anchor="{anchor}" fill="{fill}">{escape(s)}</text>')


def _line(x1, y1, x2, y2, cls, red, dashed=False, data=''):
    colour, width = (RED, 4) if red else (GREY, 1.5)
    dash = ' stroke-dasharray="6 4"' if dashed else ''
    return (f'<line class="{cls}" x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" '
            f'y2="{y2:.0f}" stroke="{colour}" stroke-width="{width}"'
            f'{dash}{data}/>')


def _box(x, y, w, h, label, cls, red=False, dashed=False, data=''):
    stroke = RED if red else '#555'
    fill = '#fbe3d4' if red else ('#fff' if dashed else '#e6f0fa')
    dash = ' stroke-dasharray="4 3"' if dashed else ''
    colour = '#999' if dashed else '#222'
    return (f'<g class="{cls}"{data}><rect x="{x:.0f}" y="{y:.0f}" '
            f'width="{w:.0f}" height="{h:.0f}" rx="3" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{2.5 if red else 1}"{dash}/>'
            + _text(x + w / 2, y + h / 2 + 4, label, 10, fill=colour)
            + '</g>')


def _marks(culprits):
    """What each culprit marks: slow trunks (switch -> sure), red nodes
    (node -> sure), outlined pair ends."""
    trunks, nodes, pairs = {}, {}, set()
    for c in culprits:
        if c.kind == 'uplink':
            trunks.update({s: c.sure for s in c.where})
        elif c.kind == 'node':
            nodes[c.where[0]] = c.sure or nodes.get(c.where[0], False)
        elif c.kind == 'pair':
            pairs.update(c.where)
    return trunks, nodes, pairs


# long: one pass over switches, trunks, node cables and boxes, then the
# legend; split, the shared coordinates would have to be passed around
def draw(topo, culprits: Sequence = (), title: str = '') -> str:
    """The SVG (a string) of the declared tree ``topo``
    (:class:`clustergate.topology.Topology`) with ``culprits``
    (:func:`parse_verdict`) marked."""
    boxes = _placed_nodes(topo, culprits)
    box_w, box_h, gap = 44, 22, 6
    node_x, sw_x, width = _positions(topo, boxes, box_w, gap)
    depth = max(len(topo.chain(s)) for s in topo.switches)
    level_y = {s: 40 + 70 * (len(topo.chain(s)) - 1)
               for s in topo.switches}
    node_y = 40 + 70 * depth
    trunks, slow_nodes, pairs = _marks(culprits)
    parts = []
    for s in topo.switches:         # trunks first, under the boxes
        p = topo.parent[s]
        if p is not None:
            parts.append(_line(sw_x[s], level_y[s], sw_x[p], level_y[p] +
                               box_h, 'trunk slow' if s in trunks else
                               'trunk', s in trunks, trunks.get(s) is False,
                               f' data-switch="{escape(s)}"'))
    for leaf, row in boxes.items():
        for (label, role), x in zip(row, node_x.get(leaf, [])):
            if role in ('ghost', 'fold'):
                continue
            red = role == 'moved' or label in slow_nodes
            parts.append(_line(x + box_w / 2, node_y, sw_x[leaf],
                               level_y[leaf] + box_h,
                               f'cable {role}', red,
                               slow_nodes.get(label, True) is False,
                               f' data-node="{escape(label)}" '
                               f'data-leaf="{escape(leaf)}"'))
    for s in topo.switches:
        parts.append(_box(sw_x[s] - 32, level_y[s], 64, box_h, s, 'switch',
                          data=f' data-switch="{escape(s)}"'))
    for leaf, row in boxes.items():
        for (label, role), x in zip(row, node_x.get(leaf, [])):
            red = role == 'moved' or label in slow_nodes
            cls = {'moved': 'node moved', 'ghost': 'node ghost',
                   'fold': 'node fold'}.get(role, 'node')
            cls += ' slow' if label in slow_nodes and role != 'ghost' else ''
            cls += ' pair' if label in pairs else ''
            parts.append(_box(x, node_y, box_w, box_h, label, cls,
                              red and role != 'ghost', role == 'ghost',
                              f' data-node="{escape(label)}" '
                              f'data-leaf="{escape(leaf)}"'))
            if label in pairs and role != 'ghost':
                parts.append(f'<rect class="pair-mark" x="{x - 3:.0f}" '
                             f'y="{node_y - 3:.0f}" width="{box_w + 6}" '
                             f'height="{box_h + 6}" fill="none" '
                             f'stroke="{RED}" stroke-dasharray="2 2"/>')
            if role == 'ghost':
                parts.append(_text(x + box_w / 2, node_y + box_h + 12,
                                   'declared', 9, fill='#999'))
    legend = _legend(culprits, 20, node_y + box_h + 34)
    height = node_y + box_h + 34 + 16 * len(legend) + 10
    head = _text(20, 20, title, 13, 'start') if title else ''
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="fabric" '
            f'width="{max(width, 420):.0f}" height="{height:.0f}" '
            f'font-family="sans-serif">{head}{"".join(parts)}'
            f'{"".join(legend)}</svg>')


def _legend(culprits, x, y) -> List[str]:
    """One line per culprit (what is red and why), or that none is."""
    if not culprits:
        return [_text(x, y, 'nothing named: every uplink, cable and node '
                      'link as declared', 11, 'start', '#0072B2')]
    words = {'uplink': 'red trunk', 'miscabled': 'red box: where it is; '
             'dashed: where declared', 'node': 'red node and cable',
             'pair': 'dotted outline: both ends'}
    out = []
    for i, c in enumerate(culprits):
        short = c.line if len(c.line) <= 150 else c.line[:147] + '...'
        out.append(_text(x, y + 16 * i, f'{words[c.kind]} -- {short}', 10,
                         'start', RED))
    return out
