"""A switch hierarchy (leaf/spine, or leaf/spine/core) for the emulated
cluster (pure).

With ``clustergate-lab cluster up --topology leafspine`` each fabric is a tree
instead of one flat bridge: every leaf switch is a bridge ``cgl<i>f<F>``
holding its nodes' veths, the spine is the fabric's bridge ``cgfab<F>``
(which keeps the head's address, so slurmctld is reached through the
tree), and leaf ``i`` reaches the spine over an *uplink*: a veth pair
``cgu<i>f<F>`` (leaf end) / ``cgs<i>f<F>`` (spine end) shaped by TBF on
both ends, like every node link.

The :class:`Tree` describes the switches as they were MEANT to be cabled;
it is what Slurm's ``topology.conf`` says. The real cabling may differ:
``miscable`` moves a node's veth to another leaf bridge and records it in
the state's ``cabling`` overrides, never in ``topology.conf``.

Rates: node links run at the nominal rate; an uplink's nominal rate is
``nodes per leaf x node rate / oversubscription``. A tree must be
oversubscribed for a miscabled node to show at all: in a non-blocking tree
an extra flow on an uplink never slows anything (see
docs/reports/emulated-cluster.md).

Three levels (``--topology fattree3``): the leaves are split evenly under
``spine1..spineS`` and the spines hang under the core, the fabric's
bridge ``cgfab<F>``. Spine ``p`` is a bridge ``cgsp<p>f<F>`` holding its
leaves' uplinks, joined to the core by a *trunk*: a veth pair
``cgsu<p>f<F>`` (spine end) / ``cgsc<p>f<F>`` (core end), shaped like an
uplink. A trunk's nominal rate is ``leaves per spine x uplink rate /
oversubscription``, so the upper level is oversubscribed too and a cut
trunk shows. Every device name starts with ``cgl``, ``cgu``, ``cgs`` or
``cgfab`` (what the leftover checks look for) and is at most 15
characters (the kernel's limit).

A dragonfly (``--topology dragonfly``): the leaves split evenly into
groups ``group1..groupG``; group ``g`` is a bridge ``cgsp<g>f<F>`` holding
its leaves' uplinks, and every pair of groups is joined by its own
*global link*, a veth pair ``cgsg<a>t<b>f<F>`` (on group a's bridge) /
``cgsg<b>t<a>f<F>`` (on group b's), shaped like an uplink. The head's
bridge ``cgfab<F>`` hangs on group1 by an unshaped veth ``cgsmg<F>`` /
``cgsmh<F>``. A global link's nominal rate: the most leaves in a group x
their uplinks' rate / (groups - 1), i.e. a group's global bandwidth is
its uplinks' (its nodes' / the oversubscription) spread over the other
groups: when a group's nodes all send to one other group, the global
link is the narrowest link on their way. The groups' bridges form loops
(a triangle with 3 groups): :mod:`clustergate_lab.cluster.dragonfly`
keeps them loop-free and routes minimally (static forwarding entries, no
flooding over a global link).
"""

import re
from dataclasses import dataclass
from typing import Tuple

from .layout import fabric_index

SPINE = 'spine'
#: The root of a three-level tree (the fabric's bridge)
CORE = 'core'
#: Linux's limit on interface names (IFNAMSIZ - 1)
MAX_IFNAME = 15
#: ``up --topology`` values with switches (besides ``flat``)
TOPOLOGIES = ('leafspine', 'fattree3', 'dragonfly')
#: Spines of ``--topology fattree3``: with two, every flow between them
#: leaves one spine and enters the other, so a cut trunk of either slows
#: exactly the same flows and cannot be named (the analysis says "spine1
#: or spine2"); with three, spine1's trunk carries spine1<->spine2 and
#: spine1<->spine3 flows but not spine2<->spine3 ones
DEFAULT_SPINES = 3
#: Nominal oversubscription of the uplinks (nodes' bandwidth per leaf over
#: the uplink's bandwidth)
DEFAULT_OVERSUBSCRIPTION = 2.0
#: The top switch of a dragonfly in topology.conf (no bridge of its own:
#: the groups are joined pairwise by global links)
FABRIC_TOP = 'fabric'
#: Groups of ``--topology dragonfly``: with two there is one global link
#: (nothing to tell apart); with three, each global link carries the
#: flows of one pair of groups only
DEFAULT_GROUPS = 3

_LEAF_RE = re.compile(r'^leaf(\d+)$')


@dataclass(frozen=True)
class Tree:
    """Leaves (``leaf1``, ``leaf2``, ...) with the nodes meant to be cabled
    to them, under one spine switch; or, with ``spines`` (``spine1``, ...
    each with its leaves), under spine switches under a core (then
    ``spine`` names the core, the root of the tree)."""

    leaves: Tuple[Tuple[str, Tuple[str, ...]], ...]
    spine: str = SPINE
    spines: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    #: the middle level are a dragonfly's groups, joined pairwise by
    #: global links (no trunk to the root)
    dragonfly: bool = False

    @property
    def root(self):
        """The top switch: the spine of two levels, the core of three."""
        return self.spine

    @property
    def spine_names(self):
        """The middle level's switches (none on two levels)."""
        return [name for name, _ in self.spines]

    @property
    def trunked(self):
        """Every switch with a shaped link to its parent: the leaves, then
        the spines of a three-level tree or a dragonfly's global links
        (``group1~group2``, named as the analysis names them)."""
        if self.dragonfly:
            return self.leaf_names + self.global_links
        return self.leaf_names + self.spine_names

    @property
    def global_links(self):
        """A dragonfly's global links, ``groupA~groupB`` for every pair
        (A declared first); none on a tree."""
        if not self.dragonfly:
            return []
        g = self.spine_names
        return [f'{a}~{b}' for i, a in enumerate(g) for b in g[i + 1:]]

    def is_global(self, name):
        return name in self.global_links

    def global_name(self, text):
        """The global link ``text`` names (``group2-group1``, either
        order, or ``group1~group2``); ValueError naming the choices."""
        ends = re.split(r'[-~]', str(text).strip())
        for name in self.global_links:
            if len(ends) == 2 and sorted(name.split('~')) == sorted(ends):
                return name
        have = ', '.join(n.replace('~', '-') for n in self.global_links)
        raise ValueError(f'no global link {text!r} (global links: '
                         f'{have or "none: not a dragonfly"})')

    def global_end(self, group, other, fabric):
        """The end of the global link between ``group`` and ``other``
        that is on ``group``'s bridge (TBF: traffic towards ``other``)."""
        return (f'cgsg{self._spine_number(group)}t'
                f'{self._spine_number(other)}f{fabric_index(fabric)}')

    @staticmethod
    def head_link_ends(fabric):
        """(end on group1's bridge, end on the head's bridge) of a
        dragonfly's unshaped link to the head."""
        i = fabric_index(fabric)
        return f'cgsmg{i}', f'cgsmh{i}'

    def parent_of(self, switch):
        """The switch ``switch``'s uplink or trunk goes to."""
        for name, leaves in self.spines:
            if switch in leaves:
                return name
        if switch in self.trunked:
            return self.spine
        raise ValueError(f'no leaf or spine {switch!r} (switches: '
                         f'{", ".join(self.trunked)})')

    def is_spine(self, switch):
        return switch in self.spine_names

    @property
    def leaf_names(self):
        return [name for name, _ in self.leaves]

    def nodes_of(self, leaf):
        for name, nodes in self.leaves:
            if name == leaf:
                return list(nodes)

        raise ValueError(f'no leaf {leaf!r} (leaves: '
                         f'{", ".join(self.leaf_names)})')

    def leaf_of(self, node):
        """The leaf ``node`` is meant to be cabled to."""
        for name, nodes in self.leaves:
            if node in nodes:
                return name

        raise ValueError(f'node {node!r} is under no leaf')

    def check_leaf(self, leaf):
        self.nodes_of(leaf)
        return leaf

    def leaf_number(self, leaf):
        """1-based position of ``leaf``; names the leaf's devices."""
        return self.leaf_names.index(self.check_leaf(leaf)) + 1

    # devices --------------------------------------------------------------

    def leaf_bridge(self, leaf, fabric):
        return f'cgl{self.leaf_number(leaf)}f{fabric_index(fabric)}'

    def uplink_leaf_end(self, leaf, fabric):
        """The uplink's veth on the leaf bridge (TBF: traffic going up)."""
        return f'cgu{self.leaf_number(leaf)}f{fabric_index(fabric)}'

    def uplink_spine_end(self, leaf, fabric):
        """The uplink's veth on the spine bridge (TBF: traffic going down)."""
        return f'cgs{self.leaf_number(leaf)}f{fabric_index(fabric)}'

    def spine_bridge(self, spine, fabric):
        """A middle-level spine's bridge (three levels only)."""
        return f'cgsp{self._spine_number(spine)}f{fabric_index(fabric)}'

    def trunk_spine_end(self, spine, fabric):
        """The trunk's veth on the spine bridge (TBF: traffic going up)."""
        return f'cgsu{self._spine_number(spine)}f{fabric_index(fabric)}'

    def trunk_core_end(self, spine, fabric):
        """The trunk's veth on the core bridge (TBF: traffic going down)."""
        return f'cgsc{self._spine_number(spine)}f{fabric_index(fabric)}'

    def _spine_number(self, spine):
        if spine not in self.spine_names:
            raise ValueError(f'no spine {spine!r} (spines: '
                             f'{", ".join(self.spine_names) or "none"})')
        return self.spine_names.index(spine) + 1

    def parent_bridge(self, leaf, fabric, root_bridge):
        """The bridge the uplink of ``leaf`` ends on: its spine's, or the
        fabric's own bridge ``root_bridge`` on two levels."""
        up = self.parent_of(self.check_leaf(leaf))
        return root_bridge if up == self.spine else \
            self.spine_bridge(up, fabric)

    def link_ends(self, switch, fabric):
        """``(lower end, upper end)`` of the shaped link from ``switch``
        (a leaf or a spine) to its parent; of a global link
        ``groupA~groupB``: (end on A, end on B)."""
        if self.is_global(switch):
            a, b = switch.split('~')
            return (self.global_end(a, b, fabric),
                    self.global_end(b, a, fabric))
        if self.is_spine(switch):
            return (self.trunk_spine_end(switch, fabric),
                    self.trunk_core_end(switch, fabric))
        return (self.uplink_leaf_end(switch, fabric),
                self.uplink_spine_end(switch, fabric))

    def device_names(self, fabric):
        """Every host device name this tree adds on ``fabric``."""
        head = list(self.head_link_ends(fabric)) if self.dragonfly else []
        return ([self.leaf_bridge(leaf, fabric) for leaf in self.leaf_names] +
                [self.spine_bridge(s, fabric) for s in self.spine_names] +
                [end for sw in self.trunked
                 for end in self.link_ends(sw, fabric)] + head)

    def leaf_of_bridge(self, bridge):
        """Leaf name of a leaf bridge name, the spine for ``cgfab<F>``,
        None for anything else (how ``status`` reads the real cabling)."""
        if re.match(r'^cgfab\d$', bridge or ''):
            return self.spine

        m = re.match(r'^cgl(\d+)f\d$', bridge or '')
        if m and 1 <= int(m.group(1)) <= len(self.leaves):
            return self.leaf_names[int(m.group(1)) - 1]

        return None

    # rates ----------------------------------------------------------------

    def max_leaf_size(self):
        return max(len(nodes) for _, nodes in self.leaves)

    def uplink_rate(self, node_bits, oversubscription):
        """Nominal uplink rate in bits/s for node links of ``node_bits``."""
        if oversubscription <= 0:
            raise ValueError(f'oversubscription must be > 0, not '
                             f'{oversubscription}')

        return int(round(self.max_leaf_size() * node_bits /
                         oversubscription))

    def trunk_rate(self, uplink_bits, oversubscription):
        """Nominal spine-core trunk rate in bits/s: the most leaves under a
        spine x their uplinks' rate / ``oversubscription`` (None on two
        levels); of a dragonfly's global links: the most leaves in a group
        x their uplinks' rate / (groups - 1) (see the module doc)."""
        if not self.spines:
            return None
        if self.dragonfly:
            most = max(len(leaves) for _, leaves in self.spines)
            return int(round(most * uplink_bits / (len(self.spines) - 1)))
        if oversubscription <= 0:
            raise ValueError(f'oversubscription must be > 0, not '
                             f'{oversubscription}')

        most = max(len(leaves) for _, leaves in self.spines)
        return int(round(most * uplink_bits / oversubscription))

    # Slurm ----------------------------------------------------------------

    def topology_conf(self, node_mbit=None, uplink_mbit=None,
                      trunk_mbit=None):
        """Text of Slurm's topology.conf (topology/tree) for this tree.

        ``LinkSpeed`` (Slurm: an integer of arbitrary unit) is in Mbit/s,
        the rate of each link below the switch: a leaf's node links, a
        spine's uplinks, the core's trunks (how clustergate.links.topology
        reads it); a dragonfly's groups are switches over their leaves
        under one top switch whose ``LinkSpeed`` is that of each global
        link (``trunk_mbit``; the partition declares the dragonfly)."""
        def speed(mbit):
            return '' if mbit is None else f' LinkSpeed={int(round(mbit))}'

        lines = ['# Emulated cluster of clustergate: the switches as they '
                 'are MEANT to be cabled', '# (generated by `clustergate '
                 'cluster up --topology`; faults never change it)',
                 '# LinkSpeed: Mbit/s of each link below the switch']
        for name, nodes in self.leaves:
            lines.append(f'SwitchName={name} Nodes={hostlist(nodes)}'
                         f'{speed(node_mbit)}')

        for name, leaves in self.spines:
            lines.append(f'SwitchName={name} Switches={hostlist(leaves)}'
                         f'{speed(uplink_mbit)}')

        if self.spines:
            lines.append(f'SwitchName={self.spine} '
                         f'Switches={hostlist(self.spine_names)}'
                         f'{speed(trunk_mbit)}')
        else:
            lines.append(f'SwitchName={self.spine} '
                         f'Switches={hostlist(self.leaf_names)}'
                         f'{speed(uplink_mbit)}')
        return '\n'.join(lines) + '\n'

    # state ----------------------------------------------------------------

    def to_json(self):
        out = {'spine': self.spine,
               'leaves': [[name, list(nodes)] for name, nodes in self.leaves]}
        if self.spines:
            out['spines'] = [[name, list(leaves)]
                             for name, leaves in self.spines]
        if self.dragonfly:
            out['dragonfly'] = True
        return out

    @classmethod
    def from_json(cls, data):
        return cls(tuple((name, tuple(nodes))
                         for name, nodes in data['leaves']),
                   data.get('spine', SPINE),
                   tuple((name, tuple(leaves))
                         for name, leaves in data.get('spines', [])),
                   bool(data.get('dragonfly')))


def _split(names, parts, prefix):
    """``names`` in ``parts`` consecutive groups of (nearly) equal size,
    the first groups taking the extra names, named ``<prefix><i>``."""
    n, groups, start = len(names), [], 0
    for i in range(parts):
        size = n // parts + (1 if i < n % parts else 0)
        groups.append((f'{prefix}{i + 1}', tuple(names[start:start + size])))
        start += size

    return tuple(groups)


def leafspine(node_names, leaves=2):
    """Nodes split into ``leaves`` consecutive groups of (nearly) equal size:
    8 nodes, 2 leaves -> leaf1 = n1..n4, leaf2 = n5..n8."""
    n = len(node_names)
    if not 2 <= leaves <= n:
        raise ValueError(f'a leaf/spine tree of {n} nodes needs 2..{n} '
                         f'leaves, not {leaves}')

    return Tree(_split(node_names, leaves, 'leaf'))


def fattree3(node_names, leaves=6, spines=DEFAULT_SPINES):
    """Three levels: the nodes split into ``leaves`` leaves as by
    :func:`leafspine`, the leaves split the same way under ``spines``
    spines, the spines under the core: 24 nodes, 6 leaves, 3 spines ->
    leaf1, leaf2 (n1..n8) under spine1, leaf3, leaf4 under spine2, ...
    A spine has 2 leaves at least: over a spine with one leaf, the leaf's
    uplink and the spine's trunk carry the same flows (not told apart)."""
    two = leafspine(node_names, leaves)
    if not 2 <= spines or leaves < 2 * spines:
        raise ValueError(f'a three-level tree of {leaves} leaves needs '
                         f'2..{leaves // 2} spines (at least 2 leaves '
                         f'each), not {spines}')

    return Tree(two.leaves, CORE, _split(two.leaf_names, spines, 'spine'))


def dragonfly(node_names, leaves=6, groups=DEFAULT_GROUPS):
    """A dragonfly: the nodes split into ``leaves`` leaves as by
    :func:`leafspine`, the leaves split the same way into ``groups``
    groups under the top switch :data:`FABRIC_TOP`: 24 nodes, 6 leaves,
    3 groups -> leaf1, leaf2 (n1..n8) in group1, ... A group has 2 leaves
    at least (as a spine of three levels: else its one uplink and its
    global links carry the same flows)."""
    two = leafspine(node_names, leaves)
    if not 2 <= groups or leaves < 2 * groups:
        raise ValueError(f'a dragonfly of {leaves} leaves needs 2..'
                         f'{leaves // 2} groups (at least 2 leaves each), '
                         f'not {groups}')

    return Tree(two.leaves, FABRIC_TOP,
                _split(two.leaf_names, groups, 'group'), dragonfly=True)


def plan_tree(layout, topology, leaves, rate_bits, oversubscription=None,
              uplink_rate=None, spines=None, groups=None):
    """``(tree, uplink bits)`` of ``up --topology``: None, None for the flat
    fabric. ``topology`` is ``leafspine``, ``fattree3`` (``spines`` spines
    under a core) or ``dragonfly`` (``groups`` groups); the uplink rate is
    given (absolute or a share of the leaf's node bandwidth) or follows
    from the oversubscription (default 2:1)."""
    if topology in (None, '', 'flat'):
        if uplink_rate or oversubscription:
            raise ValueError('--uplink-rate and --oversubscription need '
                             '--topology leafspine, fattree3 or dragonfly')
        return None, None

    if topology not in TOPOLOGIES:
        raise ValueError(f'unknown topology {topology!r} (choose flat, '
                         f'{" or ".join(TOPOLOGIES)})')

    if uplink_rate and oversubscription:
        raise ValueError('give --uplink-rate or --oversubscription, not both')

    if spines is not None and topology != 'fattree3':
        raise ValueError('--spines needs --topology fattree3')

    if groups is not None and topology != 'dragonfly':
        raise ValueError('--groups needs --topology dragonfly')

    tree = (fattree3(layout.node_names, leaves, spines or DEFAULT_SPINES)
            if topology == 'fattree3' else
            dragonfly(layout.node_names, leaves, groups or DEFAULT_GROUPS)
            if topology == 'dragonfly' else
            leafspine(layout.node_names, leaves))
    if uplink_rate:
        full = tree.uplink_rate(rate_bits, 1.0)
        return tree, resolve_rate(uplink_rate, full)

    return tree, tree.uplink_rate(
        rate_bits, oversubscription or DEFAULT_OVERSUBSCRIPTION)


def describe(tree, node_bits, uplink_bits, trunk_bits=None):
    """What ``up`` says it built: ``under 6 leaves, 2 spines and a core
    (nodes 100mbit, uplinks 200mbit, trunks 300mbit)``."""
    from .shaping import format_rate

    rates = f'nodes {format_rate(node_bits)}, uplinks ' \
        f'{format_rate(uplink_bits)}'
    if not tree.spines:
        return f'under {len(tree.leaves)} leaves and a spine ({rates})'
    if tree.dragonfly:
        return (f'under {len(tree.leaves)} leaves in {len(tree.spines)} '
                f'dragonfly groups ({rates}, global links '
                f'{format_rate(trunk_bits)})')

    return (f'under {len(tree.leaves)} leaves, {len(tree.spines)} spines '
            f'and a core ({rates}, trunks {format_rate(trunk_bits)})')


def topology_conf_of_state(tree, state):
    """topology.conf of a cluster's recorded state: its nominal rates in
    Mbit/s (node links, uplinks, trunks)."""
    trunk = state.get('trunk_rate')
    return tree.topology_conf(state['rate'] / 1e6, state['uplink_rate'] / 1e6,
                              None if trunk is None else trunk / 1e6)


def hostlist(names):
    """Slurm hostlist of names: ``['n1', 'n2', 'n3']`` -> ``n[1-3]``,
    ``['leaf1', 'leaf2']`` -> ``leaf[1-2]``; consecutive numbers with one
    common prefix are ranged, anything else is listed."""
    parsed = [re.match(r'^(.*?)(\d+)$', n) for n in names]
    if len(names) > 1 and all(parsed) and \
            len({m.group(1) for m in parsed}) == 1:
        prefix = parsed[0].group(1)
        nums = [int(m.group(2)) for m in parsed]
        ranges, lo = [], nums[0]
        for prev, cur in zip(nums, nums[1:] + [None]):
            if cur != prev + 1:
                ranges.append(f'{lo}' if lo == prev else f'{lo}-{prev}')
                lo = cur

        if ranges == [str(nums[0])]:
            return names[0]

        return f'{prefix}[{",".join(ranges)}]'

    return ','.join(names)


def real_cabling(tree, overrides):
    """``{node: leaf}`` of where every node is really cabled: the tree's
    leaf unless ``overrides`` (the state's ``{node: leaf}`` for one fabric)
    says otherwise."""
    cabling = {}
    for leaf, nodes in tree.leaves:
        for n in nodes:
            cabling[n] = overrides.get(n, leaf)

    return cabling


def resolve_rate(text, nominal_bits):
    """Bits/s of ``--rate``: an absolute tc-style rate (``500mbit``) or a
    share of the nominal rate (``25%``, ``0.5x``)."""
    from .shaping import parse_rate

    t = str(text).strip().lower()
    share = None
    if t.endswith('%'):
        share = _number(t[:-1], text) / 100
    elif t.endswith('x'):
        share = _number(t[:-1], text)

    if share is None:
        return parse_rate(text)

    if not 0 < share <= 1:
        raise ValueError(f'rate share {text!r} must be above 0 and at most '
                         f'100% of the nominal rate')

    return parse_rate(f'{int(round(nominal_bits * share))}bit')


def _number(s, text):
    try:
        return float(s)
    except ValueError:
        raise ValueError(f'cannot parse rate {text!r} (examples: 500mbit, '
                         f'25%, 0.5x)') from None


def uplink_key(leaf, fabric):
    """Key of an uplink in the state's ``rates`` (nodes use ``nK/fabF``)."""
    return f'{leaf}/{fabric}'


def cabling_lines(tree, real, uplinks, nominal_uplink, nominal_trunk=None):
    """``status`` lines of the real cabling: ``real`` is ``{fabric: {node:
    leaf or None}}`` as read from the kernel, ``uplinks`` ``{(switch,
    fabric): bits or None}`` (leaves, and the spines' trunks on three
    levels). A node not where topology.conf puts it is marked, naming the
    declared leaf."""
    from .shaping import format_rate

    def rate(sw, f, nominal):
        bits = uplinks.get((sw, f))
        mark = '' if bits == nominal else ' *'
        return f'{format_rate(bits) if bits else "none"}{mark:2}'

    lines = ['switches (real cabling; ! = not as topology.conf says; '
             'uplink TBF rate, * = not nominal):']
    for f in sorted(real):
        for glob in tree.global_links:
            lines.append(f'  {f} global {glob.replace("~", "-")} '
                         f'{rate(glob, f, nominal_trunk)}')
        for spine, leaves in ([] if tree.dragonfly else tree.spines):
            lines.append(f'  {f} {spine:6} trunk  {rate(spine, f, nominal_trunk)}'
                         f' to {tree.root}, leaves: {" ".join(leaves)}')

        for leaf in tree.leaf_names:
            nodes = [n for n, at in real[f].items() if at == leaf]
            shown = [n if tree.leaf_of(n) == leaf
                     else f'{n}!(topology.conf: {tree.leaf_of(n)})'
                     for n in nodes]
            lines.append(f'  {f} {leaf:6} uplink {rate(leaf, f, nominal_uplink)}'
                         f' nodes: {" ".join(shown) or "-"}')

        lost = [n for n, at in real[f].items() if at not in tree.leaf_names]
        if lost:
            lines.append(f'  {f} not on any leaf: {" ".join(lost)}')

    return lines
