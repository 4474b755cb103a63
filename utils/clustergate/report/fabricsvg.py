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

import json
import os
import re
import textwrap
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
_BOUND = re.compile(r', expected \S+ \(l=[^)]*\).*$', re.S)
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
    starts = [m.start() for m in _START.finditer(text or '')]
    ends = starts[1:] + [len(text or '')]
    lines = [text[a:b].rstrip().rstrip(';').rstrip()
             for a, b in zip(starts, ends)]
    if lines:       # ReFrame's failure message goes on after the unit
        lines[-1] = _BOUND.sub('', lines[-1])
    return lines


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
            out[leaf].append((f'+{kept}', 'fold'))
    for n, leaf in moved.items():
        out.setdefault(leaf, []).append((n, 'moved'))
    return out


def _positions(topo, boxes, box_w, gap):
    """x of every node box (per leaf, in order) and of every switch: a
    leaf centred over its nodes, a switch over its children."""
    x, node_x, sw_x = 20.0, {}, {}
    for leaf in [s for s in topo.switches if s in boxes]:
        n = len(boxes[leaf])
        wide = max(n * (box_w + gap) - gap, 64)     # the switch's box
        xs = [x + (wide - n * (box_w + gap) + gap) / 2 + i * (box_w + gap)
              for i in range(n)]
        node_x[leaf] = xs
        sw_x[leaf] = x + wide / 2
        x += wide + 3 * gap
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
    (:class:`clustergate.links.topology.Topology`) with ``culprits``
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
            if s in trunks:
                parts.append(_text((sw_x[s] + sw_x[p]) / 2 + 8,
                                   (level_y[s] + level_y[p] + box_h) / 2,
                                   'slow uplink' if trunks[s] else
                                   'slow uplink?', 10, 'start', RED))
    for leaf, row in boxes.items():
        for (label, role), x in zip(row, node_x.get(leaf, [])):
            if role == 'ghost':
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
    height = node_y + box_h + 34 + 14 * len(legend) + 10
    head = _text(20, 20, title, 13, 'start') if title else ''
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="fabric" '
            f'width="{max(width, 40 + 5.6 * LEGEND_WIDTH):.0f}" '
            f'height="{height:.0f}" '
            f'font-family="sans-serif">{head}{"".join(parts)}'
            f'{"".join(legend)}</svg>')


#: legend lines wrap at this many characters (the figure fits beside the
#: heat map), a culprit's text at most LEGEND_LINES lines
LEGEND_WIDTH, LEGEND_LINES = 88, 3


def _legend(culprits, x, y) -> List[str]:
    """The lines saying what is marked and why (each culprit's verdict,
    wrapped), or that nothing is."""
    if not culprits:
        return [_text(x, y, 'nothing named: every uplink, cable and node '
                      'link as declared', 11, 'start', '#0072B2')]
    words = {'uplink': 'red trunk', 'miscabled': 'red box: where it is, '
             'dashed: where declared', 'node': 'red node and cable',
             'pair': 'dotted outline: both ends'}
    out = []
    for c in culprits:
        wrapped = textwrap.wrap(f'{words[c.kind]} -- {c.line}', LEGEND_WIDTH,
                                max_lines=LEGEND_LINES, placeholder=' ...')
        for i, ln in enumerate(wrapped):
            out.append(_text(x + (12 if i else 0), y + 14 * len(out), ln, 10,
                             'start', RED))
    return out


# -- the report's figure ----------------------------------------------------

#: the file the check writes beside its matrix with the tree it judged on
RECORDED = 'linkretest_inputs.json'


def recorded_tree(matrix_dir: str):
    """(topology, why): the switch tree the check recorded beside its
    matrix (its declared tree, :data:`RECORDED`), or None and one line
    saying why there is none to draw."""
    from clustergate.links import retest_driver
    from clustergate.links import topology
    path = os.path.join(matrix_dir, RECORDED)
    try:
        with open(path) as fp:
            data = json.load(fp)
    except OSError:
        return None, (f'no fabric drawing: the check recorded no tree '
                      f'beside this matrix ({RECORDED} missing)')
    except ValueError as err:
        return None, f'no fabric drawing: {path}: {err}'
    if not isinstance(data, dict) or not data.get('topology'):
        return None, ('no fabric drawing: no switch tree declared for this '
                      'fabric (the flat matrix was judged)')
    try:
        return retest_driver.topology_from_json(data['topology']), ''
    except (KeyError, TypeError, topology.TopologyError) as err:
        return None, f'no fabric drawing: {path}: bad topology ({err})'


def figure(matrix_dir: str, fabric: str, label: str, seen) -> Dict:
    """The report's figure of one fabric: its recorded tree with the
    culprits of the check's verdict ``seen`` (the run report's result and
    reason, :func:`clustergate.report.page.matrix_verdicts`) marked; without a
    tree or without a verdict, a one-line figure saying so (never a tree
    with no marks that might be read as healthy)."""
    topo, why = recorded_tree(matrix_dir)
    if topo is None:
        return {'title': f'{label}: {why}'}
    if seen is None:
        return {'title': f'{label}: no fabric drawing: no run report holds '
                         f'the check\'s verdict on this matrix (give --db '
                         f'or --json)'}
    found = parse_verdict(seen.get('reason', ''), fabric)
    if seen.get('result') != 'pass' and not found:
        return {'title': f'{label}: no fabric drawing: the check failed '
                         f'without naming a fabric culprit (see the heat '
                         f'map\'s caption)'}
    return {'title': f'fabric {label}', 'bad': bool(found),
            'svg': draw(topo, found, f'{label} as declared '
                        f'({topo.source or "declared topology"})'),
            'text': (f'{len(found)} culprit(s) named by the check'
                     if found else 'LinkMatrix passed: nothing named')}
