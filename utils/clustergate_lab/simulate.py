"""Simulated large fabrics: does :func:`~clustergate.links.topology.diagnose`
still name a slow uplink, a miscabled node or a slow node link on a
1024-node fat tree, under the noise measured on the emulated cluster, and
how long would the measurement take?

``python -m clustergate_lab.simulate --nodes 1024`` (no cluster, no
ReFrame): a two-level fat tree (``--per-leaf`` nodes per leaf, node links
at ``--rate``, trunks at ``per_leaf x rate / --oversubscription``), the
rounds of :func:`~clustergate.links.topology.leaf_rounds` (two intra-leaf
shifts, every leaf shift, the contrast rounds), ``--cases`` cases per kind
(healthy; one trunk at ``--uplink-factor`` of its rate; one node cabled to
another leaf; one node link at ``--node-factor``; and the compound cases
``uplink+uplink``, ``uplink+node``, ``miscabled+node``), each flow's rate
the fair share on the faulty fabric times ``exp(N(0, sigma))``.

Each case is judged as the check judges a job (:func:`verdict`): the
fabric's faults (:func:`~clustergate.links.topology.diagnose`), each node link
against the fitted fabric and its peers (no baseline), then the *retest*
of the named and borderline node links, modelled (:func:`retest`): each
candidate measured alone against 4 healthy partners with fresh noise,
round after round, until the one-sided t-test of the retest decides or
its time budget is spent. A node link the retest clears is not named.

**Noise.** sigma defaults to :data:`~clustergate.links.topology.DEFAULT_SIGMA`
(0.15): on the emulated cluster the worst of 12 healthy pairs was at
0.78x (busy machine) to 0.91x (quiet) of the median by its fastest trial;
0.78 is the expected minimum of 12 lognormal draws with sigma = 0.15.

**Time to verdict** = timed rounds x trials x (per-round overhead +
message / slowest flow rate). The overhead is derived from the emulation:
an 8-node matrix (8 timed rounds: 7 shifts, the mutual one in two halves)
of 4 MB x 8 trials took 8 s with flows at ~100 MB/s, i.e. 64 round-trials
of which 64 x 4 MB / 100 MB/s = 2.56 s moving data: (8 - 2.56) / 64 = 85 ms
per round-trial (barrier, gather, start-up spread over the rounds: an upper
bound for a real fabric).

A case is *named correctly* when the verdicts name exactly the injected
faults: an ``uplink`` verdict naming its leaf, a ``miscabled`` verdict
naming the node and its real leaf, a node verdict naming the node, and
nothing else (no other node, no ``suspect link``); a healthy case is a
false alarm when it has any verdict.
"""

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from clustergate.links.topology.analysis import diagnose
from clustergate.links.topology.flowfit import DEFAULT_SIGMA, Fault, Prepared
from clustergate.links.topology.model import Topology
from clustergate.links.topology.rounds import Round, schedule

KINDS = ('healthy', 'uplink', 'miscabled', 'node', 'uplink+uplink',
         'uplink+node', 'miscabled+node')
#: on a three-level tree: a spine-core trunk, alone and beside a node; on
#: a dragonfly: a global link, a node cabled into another group
ALL_KINDS = KINDS + ('trunk', 'trunk+node', 'global', 'group',
                     'global+node')
#: fabrics: a two-level fat tree (leaves under one spine), a three-level
#: one (leaves under spines under a core)
FABRICS = ('tree', 'tree3', 'dragonfly')

# measured on the emulated cluster (docs/reports/simulation.md)
EMU_SECONDS = 8.0
EMU_ROUNDS = 8
EMU_TRIALS = 8
EMU_BYTES = 4e6
EMU_RATE = 100.0            # MB/s per flow, 8 concurrent 1 Gbit/s flows
OVERHEAD = (EMU_SECONDS - EMU_ROUNDS * EMU_TRIALS * EMU_BYTES / 1e6 /
            EMU_RATE) / (EMU_ROUNDS * EMU_TRIALS)


@dataclass
class Case:
    """One simulated case: its faults, the verdict lines, whether they
    name exactly the faults, CPU seconds, modelled retest seconds."""

    kind: str
    fault: List[Fault]
    verdicts: List[str]
    correct: bool
    seconds: float
    retest: float = 0.0


@dataclass
class Report:
    nodes: int
    leaves: int
    rounds: int
    flows: int
    oversubscription: float
    sigma: float
    cases: Dict[str, List[Case]] = field(default_factory=dict)
    time_to_verdict: float = 0.0
    full_matrix_time: float = 0.0
    fabric: str = 'fat tree'

    def named(self, kind):
        return sum(c.correct for c in self.cases.get(kind, []))

    def lines(self):
        out = [f'{self.fabric}: {self.nodes} nodes, {self.leaves} leaves, '
               f'oversubscription {self.oversubscription:g}:1, '
               f'{self.rounds} rounds ({self.flows} flows), noise sigma '
               f'{self.sigma:g}']
        for kind in ALL_KINDS:
            kind_cases = self.cases.get(kind, [])
            if not kind_cases:
                continue
            med = sorted(c.seconds
                         for c in kind_cases)[len(kind_cases) // 2]
            what = ('no false alarm' if kind == 'healthy' else
                    'named correctly')
            most = max(len(c.verdicts) for c in kind_cases)
            rt = max(c.retest for c in kind_cases)
            out.append(f'  {kind:14s} {self.named(kind)}/{len(kind_cases)} '
                       f'{what} (verdict at most {most} lines, retest at '
                       f'most {rt:.0f} s; {med * 1000:.0f} ms CPU median)')
            wrong = [c for c in kind_cases if not c.correct][:2]
            for c in wrong:
                out.append(f'    e.g. {_describe(c.fault)}: '
                           f'{"; ".join(c.verdicts) or "no verdict"}')
        out.append(f'  time to verdict: {self.time_to_verdict:.0f} s '
                   f'measuring ({self.rounds} rounds) vs '
                   f'{self.full_matrix_time:.0f} s for the N-1 shift rounds '
                   f'of the full matrix; overhead {OVERHEAD * 1000:.0f} ms '
                   f'per round-trial')
        return out


def _describe(fault):
    if isinstance(fault, list):
        return ' + '.join(_describe(f) for f in fault) or 'healthy'
    if fault is None:
        return 'healthy'
    if fault.kind == 'miscabled':
        return f'{fault.subject} on {fault.leaf}'
    return f'{fault.kind} {fault.subject} at {fault.factor:g}x'


def time_to_verdict(rounds: int, slowest_rate: float, bytes_: float = 4e6,
                    trials: int = 8, overhead: float = OVERHEAD) -> float:
    """Seconds to measure ``rounds`` rounds (see the module doc);
    ``slowest_rate`` in MB/s."""
    return rounds * trials * (overhead + bytes_ / 1e6 / slowest_rate)


def inject_all(topo: Topology, kind: str, rng: random.Random,
               uplink_factor=0.25, node_factor=0.5) -> List[Fault]:
    """The faults of a case: ``kind`` is one kind or several joined by
    ``+`` (on distinct leaves and nodes)."""
    out: List[Fault] = []
    for part in kind.split('+'):
        for _ in range(100):
            f = inject(topo, part, rng, uplink_factor, node_factor)
            if f is None or all(f.subject != g.subject and
                                f.subject not in topo.nodes_of(g.subject)
                                for g in out):
                break
        if f is not None:
            out.append(f)
    return out


def build(fabric: str, nodes: int, per_leaf: int, oversubscription: float,
          rate: float, leaves_per_spine: int = 8,
          spine_oversubscription: float = 1.0) -> Topology:
    """The simulated fabric (see :data:`FABRICS`); ValueError naming a
    size that does not fit."""
    if nodes % per_leaf:
        raise ValueError(f'--nodes {nodes} is not a multiple of --per-leaf '
                         f'{per_leaf}')
    if fabric == 'tree':
        return Topology.fat_tree(nodes // per_leaf, per_leaf, rate,
                                 oversubscription)
    if fabric == 'tree3':
        pod = per_leaf * leaves_per_spine
        if nodes % pod:
            raise ValueError(f'--nodes {nodes} is not a multiple of '
                             f'--per-leaf x --leaves-per-spine ({pod})')
        return Topology.fat_tree3(nodes // pod, leaves_per_spine, per_leaf,
                                  rate, oversubscription,
                                  spine_oversubscription)
    if fabric == 'dragonfly':
        group = per_leaf * leaves_per_spine
        if nodes % group or nodes // group < 2:
            raise ValueError(f'--nodes {nodes} is not 2 or more groups of '
                             f'--per-leaf x --leaves-per-spine ({group})')
        return Topology.dragonfly_of(nodes // group, leaves_per_spine,
                                     per_leaf, rate, oversubscription)
    raise ValueError(f'--fabric {fabric!r}: not one of {", ".join(FABRICS)}')


def upper_trunks(topo: Topology) -> List[str]:
    """Switches above the leaves that hang under another switch (the
    spines of a three-level tree)."""
    leaves = set(topo.leaves)
    return [s for s, p in topo.parent.items()
            if p is not None and s not in leaves]


def inject(topo: Topology, kind: str, rng: random.Random,
           uplink_factor=0.25, node_factor=0.5) -> Optional[Fault]:
    if kind == 'trunk':
        upper = upper_trunks(topo)
        if not upper:
            raise ValueError('kind trunk needs a three-level fabric '
                             '(--fabric tree3)')
        sw = rng.choice(upper)
        return Fault('uplink', sw, (('switch', sw, 'up'),
                                    ('switch', sw, 'down')),
                     uplink_factor, topo.parent[sw])
    if kind in ('global', 'group') and not topo.dragonfly:
        raise ValueError(f'kind {kind} needs a dragonfly (--fabric '
                         f'dragonfly)')
    if kind == 'global':
        a, b = rng.sample(topo.groups, 2)
        link = topo.global_link(a, b)
        return Fault('uplink', link[1], (('global', link[1], 'up'),
                                         ('global', link[1], 'down')),
                     uplink_factor)
    if kind == 'group':
        n = rng.choice(topo.nodes)
        home = topo.chain(topo.leaf_of[n])[-2]
        leaf = rng.choice([l for l in topo.leaves
                           if topo.chain(l)[-2] != home])
        return Fault('miscabled', n, (), 1.0, leaf)
    if kind == 'uplink':
        leaf = rng.choice(topo.leaves)
        return Fault('uplink', leaf, (('switch', leaf, 'up'),
                                      ('switch', leaf, 'down')),
                     uplink_factor, topo.parent[leaf])
    if kind == 'miscabled':
        n = rng.choice(topo.nodes)
        leaf = rng.choice([l for l in topo.leaves if l != topo.leaf_of[n]])
        return Fault('miscabled', n, (), 1.0, leaf)
    if kind == 'node':
        n = rng.choice(topo.nodes)
        return Fault('node', n, (('node', n, 'up'), ('node', n, 'down')),
                     node_factor)
    return None


def variant_rates(topo, models, faults):
    """Per round, the fair-share rates on ``topo`` with ``faults``."""
    if not faults:
        return [m.rates for m in models]
    true, links, nodes = topo, [], []
    for f in faults:
        true = f.apply(true)
        links += list(f.links)
        if f.kind == 'miscabled':
            nodes.append(f.subject)
    return [m.variant(true, links, nodes) for m in models]


def measure(topo, models, fault, rng, sigma, scale):
    """Measured rounds on the faulty fabric (``fault``: one, a list or
    None): fair share x scale x noise."""
    faults = fault if isinstance(fault, list) else \
        ([] if fault is None else [fault])
    rates = variant_rates(topo, models, faults)
    gauss = rng.gauss
    return [Round(f'r{i}', m.flows,
                  [p * scale * math.exp(gauss(0.0, sigma)) for p in row])
            for i, (m, row) in enumerate(zip(models, rates))]


def expected(faults) -> set:
    """What a correct verdict names for the injected ``faults``."""
    out = set()
    for f in faults:
        if f.kind == 'miscabled':
            out.add(('miscabled', f.subject, f.leaf))
        else:
            out.add((f.kind, f.subject))
    return out


# long: the check's verdict in order: the fabric's faults, each node link
# against the fitted fabric, the retest of the named and borderline ones,
# the verdict lines as the check composes them
def verdict(topo, prepared, measured, sigma, true_faults, rng, scale,
            bytes_=4e6, stats=None):
    """``(names, lines, retest seconds)`` of one simulated case, judged
    as the check judges a job: :func:`diagnose`, the node links against
    the fitted fabric (:func:`clustergate.links.stats.predicted_figures`)
    and ``stats`` (a per-link baseline; None: peers only), then the
    retest of the named and borderline node links (:func:`retest`: the
    check's own rounds and decisions) and the verdict lines after it
    (:func:`clustergate.links.retest_verdict.apply`)."""
    from clustergate.links import judge as linkjudge
    import dataclasses
    from clustergate.links import retest_candidates
    from clustergate.links import retest_verdict
    from clustergate.links import stats as linkstats
    from clustergate.links.topology.analysis import FABRIC_KINDS
    an = diagnose(topo, measured, fabric='sim', sigma=sigma,
                  prepared=prepared)
    slow = {v.subject[0] for v in an.verdicts if v.kind == 'node'}
    fitted = [v.fault for v in an.verdicts if v.kind in FABRIC_KINDS]
    preds = variant_rates(topo, prepared.models, fitted)
    figs = linkstats.predicted_figures(an.fitted or topo, measured, preds,
                                       slow)
    judged = linkjudge.judge(figs, stats, 'sim', skip=sorted(slow))
    fabric = an.messages()
    cands = retest_candidates.retest_candidates(fabric, judged,
                                                retest_candidates.Bounds())
    decided, seconds = retest(topo, true_faults, cands, figs, rng, sigma,
                              scale, bytes_, an)
    lines, _ = retest_verdict.apply(
        fabric + judged.lines,
        {'decisions': [dataclasses.asdict(d) for d in decided.values()]},
        'sim', cands, tree=True)
    names = set()
    for v in an.verdicts:
        if v.kind == 'node':
            continue        # named below if its line survived the retest
        names.add(('miscabled',) + v.subject if v.kind == 'miscabled' else
                  (v.kind, v.subject[0]) if v.kind != 'link' else
                  ('link',) + v.subject)
    for ln in lines:
        node = retest_candidates.node_link_of(ln) or _undecided(ln)
        if node is not None:
            names.add(('node', node))
        elif ln.startswith('slow link '):
            names.add(('link', ln.split()[2]))
    return names, lines, seconds


def _undecided(line):
    head = 'undecided node link '
    return line[len(head):].split()[0] if line.startswith(head) else None


# long: the pairs alone on the true fabric, the launch cost, then the
# check's adaptive rounds on a simulated clock
def retest(topo, true_faults, cands, figs, rng, sigma, scale, bytes_=4e6,
           analysis=None):
    """The retest as the check runs it (:func:`clustergate.links.retest_driver.
    adaptive`, the same partners, rounds, decisions and budget), its
    launches simulated: each pair alone at the slower of its links on the
    true fabric x ``scale`` x fresh noise, each launch costing
    ``TRIALS x (OVERHEAD + bytes / rate)`` per pair on a simulated clock
    (a launch past the budget is cut at it). ``({node: Decision},
    seconds)``."""
    from clustergate.links import retest_candidates
    from clustergate.links import retest_driver
    from clustergate.links import retest_open
    from clustergate.links import retest_rules
    from clustergate.links.topology.fairshare import predict
    if not cands:
        return {}, 0.0
    true = topo
    for f in true_faults:
        true = f.apply(true)
    faults = retest_candidates.fabric_faults(analysis) if analysis is not None else \
        retest_candidates.FabricFaults()
    gross = set(faults.nodes) | set(faults.miscabled)
    names = [c.node for c in cands]
    healthy = retest_candidates.partners_of([n for n in topo.nodes if (n, 'both') in figs],
                                            figs, gross | set(names))
    refs = retest_candidates.refs_of(names, healthy, faults, topo, limit=retest_candidates.MAX_PARTNERS)
    rate = {}
    clock = [0.0]

    def alone(s, d):
        if (s, d) not in rate:
            rate[(s, d)] = predict(true, [(s, d)])[(s, d)] * scale
        return rate[(s, d)]

    def measure(the_plan, timeout):
        cost = sum(retest_driver.TRIALS * (OVERHEAD + bytes_ / 1e6 / alone(*p))
                   for p in the_plan.pairs)
        if cost > timeout:
            clock[0] += timeout
            raise RuntimeError('retest launch killed (the end of the budget)')
        clock[0] += cost
        return {p: alone(*p) * math.exp(rng.gauss(0.0, sigma))
                for p in the_plan.pairs}

    links = retest_rules.links_tested(figs)
    decided = retest_driver.adaptive(cands, refs, measure, retest_driver.BUDGET,
                                     clock=lambda: clock[0], links=links)
    lines = analysis.messages() if analysis is not None else []
    retest_open.explain(decided, cands, retest_open.confirmed_faults(lines, decided))
    # as the driver: within the noise
    retest_open.unresolved(decided, cands, links=links)
    return decided, clock[0]


def _med(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def run(nodes=1024, per_leaf=32, oversubscription=2.0, cases=100,
        sigma=DEFAULT_SIGMA, seed=1, rate=12500.0, bytes_=4e6, trials=8,
        uplink_factor=0.25, node_factor=0.5, kinds=KINDS,
        progress=None, fabric='tree', leaves_per_spine=8) -> Report:
    """Simulate ``cases`` cases of each kind (see the module doc)."""
    topo = build(fabric, nodes, per_leaf, oversubscription, rate,
                 leaves_per_spine)
    rounds = schedule(topo, topo.nodes)
    prepared = Prepared(topo, [r.flows for r in rounds])
    models = prepared.models
    slowest = min(min(m.rates) for m in models)
    rep = Report(nodes, len(topo.leaves), len(rounds),
                 sum(len(r) for r in rounds), oversubscription, sigma,
                 fabric=topo.source)
    rep.time_to_verdict = time_to_verdict(len(rounds), slowest, bytes_,
                                          trials)
    # N-1 shift rounds (+1 for the split mutual round), each at best at
    # the trunk share when most flows cross the spine
    rep.full_matrix_time = time_to_verdict(nodes, rate / oversubscription,
                                           bytes_, trials)
    rng = random.Random(seed)
    for kind in kinds:
        rep.cases[kind] = []
        for i in range(cases):
            faults = inject_all(topo, kind, rng, uplink_factor,
                                node_factor)
            measured = measure(topo, models, faults, rng, sigma, scale=0.9)
            t0 = time.process_time()
            names, lines, secs = verdict(topo, prepared, measured, sigma,
                                         faults, rng, 0.9, bytes_)
            dt = time.process_time() - t0
            rep.cases[kind].append(Case(kind, faults, lines,
                                        names == expected(faults), dt,
                                        secs))
            if progress:
                progress(kind, i, rep.cases[kind][-1])
    return rep


def figure(path, nodes=1024, per_leaf=32, oversubscription=2.0,
           sigma=DEFAULT_SIGMA, seed=3, rate=12500.0):
    """PNG: each flow's measured rate / declared-topology prediction, per
    round, for one case of each fault; the fault's flows in colour."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    topo = Topology.fat_tree(nodes // per_leaf, per_leaf, rate,
                             oversubscription)
    rounds = schedule(topo, topo.nodes)
    prepared = Prepared(topo, [r.flows for r in rounds])
    models = prepared.models
    rng = random.Random(seed)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
    for ax, kind in zip(axes, ('uplink', 'miscabled', 'node')):
        fault = inject(topo, kind, rng)
        meas = measure(topo, models, fault, rng, sigma, scale=1.0)
        analysis = diagnose(topo, meas, fabric='sim', sigma=sigma,
                            prepared=prepared)
        grey_x, grey_y, hot_x, hot_y = [], [], [], []
        for ri, (m, r) in enumerate(zip(models, meas)):
            for fi, (s, d) in enumerate(m.flows):
                ratio = r.measured[fi] / m.rates[fi]
                hit = (fault.subject in (s, d) if kind != 'uplink' else
                       any(l in fault.links for l in m.paths[fi]))
                (hot_x if hit else grey_x).append(ri)
                (hot_y if hit else grey_y).append(ratio)
        ax.scatter(grey_x, grey_y, s=2, c='0.75', alpha=0.3,
                   rasterized=True, label='other flows')
        ax.scatter(hot_x, hot_y, s=9, c='tab:red', label='flows of the fault')
        ax.set_yscale('log')
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f'{y:g}'))
        ax.yaxis.set_minor_formatter(FuncFormatter(
            lambda y, _: f'{y:g}' if y in (0.3, 0.5, 2, 3) else ''))
        ax.set_xlabel('round (I: intra-leaf, X: leaf shift, C: contrast)')
        labels = [r.label for r in rounds]
        ticks = [i for i, l in enumerate(labels)
                 if l[0] != labels[i - 1][0] or i == 0]
        ax.set_xticks(ticks, [labels[i] for i in ticks], fontsize=7)
        verdict = analysis.verdicts[0].message.split(':')[0] \
            if analysis.verdicts else 'healthy'
        ax.set_title(f'{_describe(fault)}\n-> {verdict}', fontsize=9)
    axes[0].set_ylabel('measured / predicted (declared topology)')
    axes[0].legend(fontsize=7, loc='lower left')
    fig.suptitle(f'{nodes} nodes, {len(topo.leaves)} leaves, '
                 f'{oversubscription:g}:1, noise sigma {sigma:g}',
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(
        prog='python -m clustergate_lab.simulate',
        description='diagnosis of simulated faults on a large fat tree')
    p.add_argument('--nodes', type=int, default=1024)
    p.add_argument('--per-leaf', type=int, default=32)
    p.add_argument('--oversubscription', type=float, default=2.0)
    p.add_argument('--cases', type=int, default=100)
    p.add_argument('--sigma', type=float, default=DEFAULT_SIGMA)
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--rate', default='100gbit',
                   help='node link rate (default 100gbit)')
    p.add_argument('--bytes', type=float, default=4e6)
    p.add_argument('--trials', type=int, default=8)
    p.add_argument('--uplink-factor', type=float, default=0.25)
    p.add_argument('--node-factor', type=float, default=0.5)
    p.add_argument('--kinds', default=','.join(KINDS))
    p.add_argument('--figure', help='write the figure PNG here')
    p.add_argument('--fabric', default='tree', choices=FABRICS)
    p.add_argument('--leaves-per-spine', type=int, default=8,
                   help='tree3: leaves under each spine, dragonfly: '
                        'leaves per group (default 8)')
    args = p.parse_args(argv)
    from clustergate.links.topology.model import parse_rate
    try:
        rate = parse_rate(args.rate)
        kinds = [k for k in args.kinds.split(',') if k]
        bad = [k for k in kinds if k not in ALL_KINDS]
        if bad:
            raise ValueError(f'--kinds: unknown {", ".join(bad)} (of '
                             f'{", ".join(ALL_KINDS)})')
        rep = run(args.nodes, args.per_leaf, args.oversubscription,
                  args.cases, args.sigma, args.seed, rate, args.bytes,
                  args.trials, args.uplink_factor, args.node_factor, kinds,
                  fabric=args.fabric, leaves_per_spine=args.leaves_per_spine)
    except ValueError as err:
        print(f'simulate: {err}', file=sys.stderr)
        return 2
    print('\n'.join(rep.lines()))
    if args.figure:
        figure(args.figure, args.nodes, args.per_leaf,
               args.oversubscription, args.sigma, rate=rate)
        print(f'figure: {args.figure}')
    ok = all(rep.named(k) >= 0.95 * len(rep.cases[k]) for k in rep.cases)
    return 0 if ok else 1


if __name__ == '__main__':
    raise SystemExit(main())
