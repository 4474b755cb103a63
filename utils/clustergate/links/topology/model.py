"""The switch tree of a fabric: which leaf switch each node is cabled to,
which switch each switch hangs under, and the nominal rate of every link.

Links are directed (a cable carries both directions independently):

* ``('node', n, 'up')``: node n's link, n -> its leaf (what n sends),
  ``('node', n, 'down')``: leaf -> n (what n receives);
* ``('switch', s, 'up')``: the trunk from switch s to its parent (all the
  cables between them, taken together), ``('switch', s, 'down')``: parent
  -> s.

A flow from a to b goes up a's node link, up the trunks from a's leaf to
the lowest switch above both, down the trunks to b's leaf and down b's
node link. Rates are in any one unit (MB/s when known); Slurm's
``LinkSpeed`` has arbitrary units and the analysis fits the scale anyway.

Constructors: :func:`parse_topology_conf` (Slurm ``topology.conf``),
:func:`parse_scontrol_topology` (``scontrol show topology``) and
:meth:`Topology.fat_tree` (simulation).
"""

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import shapes
from .hostlist import HostlistError, expand

Link = Tuple[str, str, str]          # ('node'|'switch', name, 'up'|'down')


class TopologyError(ValueError):
    """A topology that cannot be used (one line naming the cause)."""


@dataclass
class Topology:
    """A tree of switches with nodes on its leaves (see the module doc).

    ``node_rate[n]`` is the rate of n's link (both directions),
    ``uplink_rate[s]`` that of the trunk from s to its parent (both
    directions); ``link_rate`` overrides single directed links."""

    leaf_of: Dict[str, str]
    parent: Dict[str, Optional[str]]
    node_rate: Dict[str, float] = field(default_factory=dict)
    uplink_rate: Dict[str, float] = field(default_factory=dict)
    link_rate: Dict[Link, float] = field(default_factory=dict)
    source: str = ''
    #: a dragonfly: the root's children are groups, every pair of groups
    #: joined by its own global link (see :meth:`global_link`)
    dragonfly: bool = False

    def __post_init__(self):
        for n, s in self.leaf_of.items():
            if s not in self.parent:
                raise TopologyError(f'{self.source or "topology"}: node {n} '
                                    f'on unknown switch {s}')
        for s in self.parent:
            seen, p = {s}, self.parent[s]
            while p is not None:
                if p not in self.parent:
                    raise TopologyError(f'{self.source or "topology"}: '
                                        f'switch {s} under unknown switch {p}')
                if p in seen:
                    raise TopologyError(f'{self.source or "topology"}: '
                                        f'switch loop through {p}')
                seen.add(p)
                p = self.parent[p]
        self._chains = {}
        self._caps = {}   # the rates are not changed in place

    # -- structure ---------------------------------------------------------
    @property
    def nodes(self) -> List[str]:
        return list(self.leaf_of)

    @property
    def switches(self) -> List[str]:
        return list(self.parent)

    @property
    def leaves(self) -> List[str]:
        """Switches with nodes, in order of their first node."""
        out = []
        for s in self.leaf_of.values():
            if s not in out:
                out.append(s)
        return out

    def nodes_of(self, switch: str) -> List[str]:
        return [n for n, s in self.leaf_of.items() if s == switch]

    def chain(self, switch: str) -> List[str]:
        """``switch`` and the switches above it, bottom up."""
        c = self._chains.get(switch)
        if c is None:
            c, s = [], switch
            while s is not None:
                c.append(s)
                s = self.parent[s]
            self._chains[switch] = c
        return c

    def path(self, src: str, dst: str) -> List[Link]:
        """Directed links of the flow src -> dst."""
        a, b = self.chain(self.leaf_of[src]), self.chain(self.leaf_of[dst])
        common = set(a) & set(b)
        if not common:
            raise TopologyError(f'{src} and {dst} are on switches with no '
                                f'common root ({a[-1]}, {b[-1]})')
        if self.dragonfly and len(common) == 1 and len(a) > 2 and \
                len(b) > 2:
            # between groups: up to the group, its global link, down
            return ([('node', src, 'up')] +
                    [('switch', s, 'up') for s in a[:-2]] +
                    [self.global_link(a[-2], b[-2])] +
                    [('switch', s, 'down') for s in reversed(b[:-2])] +
                    [('node', dst, 'down')])
        links = [('node', src, 'up')]
        links += [('switch', s, 'up') for s in a if s not in common]
        links += [('switch', s, 'down') for s in reversed(b)
                  if s not in common]
        links.append(('node', dst, 'down'))
        return links

    @property
    def groups(self) -> List[str]:
        """The switches under the root (a dragonfly's groups)."""
        return [s for s, p in self.parent.items()
                if p is not None and self.parent[p] is None]

    def global_link(self, ga: str, gb: str) -> Link:
        """The directed global link from group ``ga`` to group ``gb``:
        ``('global', 'A~B', 'up')`` from A to B, ``'down'`` from B to A,
        A the group declared first."""
        order = self._group_order()
        first, second = sorted((ga, gb), key=order.__getitem__)
        return ('global', f'{first}~{second}',
                'up' if ga == first else 'down')

    def _group_order(self):
        order = self._caps.get('(groups)')
        if order is None:
            order = self._caps['(groups)'] = {g: i for i, g in
                                              enumerate(self.groups)}
        return order

    def capacity(self, link: Link) -> float:
        rate = self._caps.get(link)
        if rate is None:
            rate = self._caps[link] = self._capacity(link)
        return rate

    def _capacity(self, link: Link) -> float:
        rate = self.link_rate.get(link)
        if rate is not None:
            return rate
        kind, name, _ = link
        if kind == 'node':
            return self.node_rate.get(name, 1.0)
        rate = self.uplink_rate.get(name)
        if rate is None and kind == 'global':
            # undeclared: the group's nodes share its G-1 global links
            group = name.split('~')[0]
            rate = sum(self.node_rate.get(n, 1.0) for n in self.leaf_of
                       if group in self.chain(self.leaf_of[n])) / \
                max(1, len(self.groups) - 1)
        if rate is None:
            # undeclared trunk: non-blocking (the sum of what is below it)
            rate = sum(self.node_rate.get(n, 1.0) for n in self.leaf_of
                       if name in self.chain(self.leaf_of[n]))
        return rate

    def describe(self, link: Link) -> str:
        kind, name, direction = link
        if kind == 'global':
            a, b = name.split('~')
            return (f'global link {a}-{b} '
                    f'({a + "->" + b if direction == "up" else b + "->" + a})')
        if kind == 'switch':
            return f'uplink {name}-{self.parent.get(name)} ({direction})'
        return f'node link {name} ({direction})'

    # -- variants (hypotheses and faults) ----------------------------------
    def copy(self) -> 'Topology':
        return Topology(dict(self.leaf_of), dict(self.parent),
                        dict(self.node_rate), dict(self.uplink_rate),
                        dict(self.link_rate), self.source, self.dragonfly)

    def rehomed(self, node: str, leaf: str) -> 'Topology':
        """The same fabric with ``node`` cabled to ``leaf``."""
        if leaf not in self.parent:
            raise TopologyError(f'unknown switch {leaf}')
        t = self.copy()
        # the trunks keep their cables: freeze undeclared (non-blocking)
        # trunk rates before the node moves
        for s in self.parent:
            if self.parent[s] is not None:
                t.uplink_rate[s] = self.capacity(('switch', s, 'up'))
        if self.dragonfly:
            gs = self.groups
            for i, a in enumerate(gs):
                for b in gs[i + 1:]:
                    link = self.global_link(a, b)
                    t.uplink_rate[link[1]] = self.capacity(link)
        t.leaf_of[node] = leaf
        return t

    def scaled(self, link: Link, factor: float) -> 'Topology':
        """The same fabric with one directed link at ``factor`` x its
        rate."""
        t = self.copy()
        t.link_rate[link] = self.capacity(link) * factor
        return t

    # -- constructors and output -------------------------------------------
    @classmethod
    def fat_tree(cls, *args, **kwargs) -> 'Topology':
        """Two levels (:func:`clustergate.links.topology.shapes.fat_tree`)."""
        return shapes.fat_tree(cls, *args, **kwargs)

    @classmethod
    def fat_tree3(cls, *args, **kwargs) -> 'Topology':
        """Three levels (:func:`clustergate.links.topology.shapes.fat_tree3`)."""
        return shapes.fat_tree3(cls, *args, **kwargs)

    @classmethod
    def dragonfly_of(cls, *args, **kwargs) -> 'Topology':
        """Groups (:func:`clustergate.links.topology.shapes.dragonfly_of`)."""
        return shapes.dragonfly_of(cls, *args, **kwargs)

    def to_topology_conf(self) -> str:
        """Slurm ``topology.conf`` text of this tree
        (:func:`clustergate.links.topology.shapes.topology_conf`)."""
        return shapes.topology_conf(self)


# -- parsers -------------------------------------------------------------

_RATE = re.compile(r'^([\d.]+)\s*(?:([kKmMgGtT]?)(bit|bps|B|b)(?:/s)?)?$')


def parse_rate(text) -> float:
    """A rate as a number: ``12500`` (as is), ``100gbit``, ``500mbit``,
    ``125MB`` (-> MB/s). Raises ValueError naming the text."""
    if isinstance(text, (int, float)):
        return float(text)
    m = _RATE.match(str(text).strip())
    if not m:
        raise ValueError(f'bad rate {text!r} (a number, or e.g. 500mbit, '
                         f'100gbit, 125MB)')
    value = float(m.group(1))
    if not m.group(3):
        return value
    factor = {'': 1, 'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12}[
        (m.group(2) or '').lower()]
    bits = m.group(3) in ('bit', 'bps')
    return value * factor / (8 if bits else 1) / 1e6


def _records(text: str, source: str):
    """(line number, {key lower: value}) of each SwitchName line."""
    out = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        kv = {}
        for word in line.split():
            if '=' not in word:
                raise TopologyError(f'{source}:{i}: expected key=value, got '
                                    f'{word!r}')
            k, v = word.split('=', 1)
            kv[k.lower()] = v
        if 'switchname' not in kv:
            raise TopologyError(f'{source}:{i}: no SwitchName')
        out.append((i, kv))
    return out


# long: the switch records in one pass, then the checks of the tree
# (unknown or doubly listed children, one root, nodes), each with its error
def _build(records, source, derived_nodes: bool, node_rate=None,
           uplink_rate=None, dragonfly=False) -> Topology:
    parent, direct, speed, kids = {}, {}, {}, {}
    for i, kv in records:
        s = kv['switchname']
        if s in parent:
            raise TopologyError(f'{source}:{i}: switch {s} declared twice')
        parent[s] = None
        try:
            direct[s] = expand(kv.get('nodes', ''))
            kids[s] = expand(kv.get('switches', ''))
        except HostlistError as err:
            raise TopologyError(f'{source}:{i}: {err}') from None
        if 'linkspeed' in kv:
            try:
                speed[s] = parse_rate(kv['linkspeed'])
            except ValueError as err:
                raise TopologyError(f'{source}:{i}: LinkSpeed: {err}') \
                    from None

    for s, children in kids.items():
        for c in children:
            if c not in parent:
                raise TopologyError(f'{source}: switch {s} lists unknown '
                                    f'switch {c}')
            if parent[c] is not None:
                raise TopologyError(f'{source}: switch {c} under both '
                                    f'{parent[c]} and {s}')
            parent[c] = s
    roots = [s for s, p in parent.items() if p is None]
    if len(roots) > 1:
        # Slurm allows a forest (jobs then never span it); we need one tree
        parent['(root)'] = None
        for r in roots:
            parent[r] = '(root)'

    t0 = Topology({}, parent, source=source)       # for chain()

    def below(s):
        out = []
        for c in kids.get(s, []):
            out += below(c)
        return out + direct.get(s, [])

    leaf_of = {}
    for s in sorted(parent, key=lambda s: -len(t0.chain(s))):
        nodes = direct.get(s, [])
        if derived_nodes and kids.get(s):
            # scontrol lists every node below an upper switch
            under = set()
            for c in kids[s]:
                under.update(below(c))
            nodes = [n for n in nodes if n not in under]
        for n in nodes:
            if n in leaf_of:
                if derived_nodes:
                    continue
                raise TopologyError(f'{source}: node {n} on both '
                                    f'{leaf_of[n]} and {s}')
            leaf_of[n] = s
    order = [n for s in parent for n in direct.get(s, []) if n in leaf_of]
    leaf_of = {n: leaf_of[n] for n in dict.fromkeys(order)}
    if not leaf_of:
        raise TopologyError(f'{source}: no node in any switch')

    # LinkSpeed of a switch line: the rate of the links below it
    nrate = {n: speed.get(s, 1.0) for n, s in leaf_of.items()}
    urate = {c: speed[parent[c]] * 1.0 for c in parent
             if parent[c] in speed}
    unit = _linkspeed_unit(speed, leaf_of, parent, node_rate, uplink_rate)
    if unit is not None:
        nrate = {n: r * unit for n, r in nrate.items()}
        urate = {c: r * unit for c, r in urate.items()}
    elif node_rate is not None or uplink_rate is not None:
        # the other level's LinkSpeeds cannot be put in the declared
        # rate's unit: left undeclared (fitted) rather than compared as is
        urate = {}
    if node_rate is not None:
        nrate = {n: parse_rate(node_rate) for n in leaf_of}
    if uplink_rate is not None:
        urate = {c: parse_rate(uplink_rate) for c, p in parent.items()
                 if p is not None}
    t = Topology(leaf_of, parent, nrate, urate, source=source,
                 dragonfly=bool(dragonfly))
    if dragonfly:
        groups = t.groups
        if len(groups) < 2 or any(t.chain(leaf)[-2] == leaf
                                  for leaf in t.leaves):
            raise TopologyError(f'{source}: a dragonfly needs groups of '
                                f'leaves under one top switch (switches of '
                                f'switches), has {len(groups)} group(s)')
        # the top switch's LinkSpeed: the rate of each global link
        top = t.chain(groups[0])[-1]
        if top in speed and uplink_rate is None and (
                unit is not None or node_rate is None):
            for i, a in enumerate(groups):
                for b in groups[i + 1:]:
                    t.uplink_rate[f'{a}~{b}'] = speed[top] * (unit or 1.0)
    return t


def _linkspeed_unit(speed, leaf_of, parent, node_rate, uplink_rate):
    """The factor that puts Slurm's LinkSpeeds in the unit of the rate
    the partition declares for one level alone (None: nothing to scale).

    LinkSpeed has no unit in Slurm: it relates a switch's links to the
    others'. A partition that declares its node links' rate (MB/s) and
    leaves the trunks to LinkSpeed means them at the ratio LinkSpeed
    gives (a leaf at 250 under a spine at 375: trunks at 1.5 node links),
    not at the bare number: compared as is, every oversubscribed trunk
    of a healthy tree looked cut (leaves named at 0.14x)."""
    if (node_rate is None) == (uplink_rate is None):
        return None
    if node_rate is not None:
        known = [speed[s] for s in leaf_of.values() if s in speed]
        declared = parse_rate(node_rate)
    else:
        known = [speed[p] for c, p in parent.items()
                 if p is not None and p in speed]
        declared = parse_rate(uplink_rate)
    if not known:
        return None
    known.sort()
    return declared / known[len(known) // 2]


def parse_topology_conf(text: str, source: str = 'topology.conf',
                        node_rate=None, uplink_rate=None,
                        dragonfly=False) -> Topology:
    """Topology of a Slurm ``topology.conf`` (topology/tree)::

        SwitchName=leaf1 Nodes=n[1-4] LinkSpeed=500
        SwitchName=leaf2 Nodes=n[5-8] LinkSpeed=500
        SwitchName=spine Switches=leaf[1-2] LinkSpeed=500

    ``LinkSpeed`` of a switch is taken as the rate of each link below it
    (node links of a leaf, trunks of the switches under it); absent, node
    links are 1 and trunks non-blocking. ``node_rate`` and ``uplink_rate``
    (e.g. from the partition's config) override every link of their kind.
    ``dragonfly``: the top switch's children are groups, every pair joined
    by a global link at the top switch's ``LinkSpeed``.
    """
    return _build(_records(text, source), source, False, node_rate,
                  uplink_rate, dragonfly)


def parse_scontrol_topology(text: str, source: str = 'scontrol show topology',
                            node_rate=None, uplink_rate=None,
                            dragonfly=False) -> Topology:
    """Topology of the output of ``scontrol show topology``::

        SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n[1-4]
        SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-8] Switches=leaf[1-2]

    (upper switches list every node below them)."""
    return _build(_records(text, source), source, True, node_rate,
                  uplink_rate, dragonfly)
