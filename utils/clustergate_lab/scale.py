"""What the fabric verdict costs at a centre's scale: time and peak
memory of the whole analysis of one link matrix on a simulated fabric of
1,024 to 10,240 nodes, with the rounds the check ships
(:func:`clustergate.links.topology.rounds.schedule`).

``python -m clustergate_lab.scale --nodes 1024,4096,10240`` runs each size
in a process of its own (so that its peak resident memory is its own)
and prints one line per size and phase:

* ``schedule``: the declared fabric and its rounds;
* ``fabric fit``: the predicted fair share of every flow of every round
  (:class:`~clustergate.links.topology.flowfit.Prepared`) and the fit of
  the fabric's faults (:func:`~clustergate.links.topology.diagnose`);
* ``node links``: each node link against the fitted fabric and its peers
  (:func:`clustergate.links.stats.predicted_figures`,
  :func:`clustergate.links.judge.judge`);
* ``retest plan``: the candidates, their partners clear of the named
  faults and the first retest round
  (:func:`clustergate.links.retest_candidates.plan`).

The measurement is simulated (fair share on the faulty fabric x
lognormal noise, :mod:`clustergate_lab.simulate`) and not counted. CPU
seconds (process time) and the process's peak resident set
(``ru_maxrss``, imports included).
"""

import argparse
import json
import random
import resource
import subprocess
import sys
import time

from clustergate.links.topology.analysis import diagnose
from clustergate.links.topology.flowfit import DEFAULT_SIGMA, Prepared
from clustergate.links.topology.rounds import schedule
from clustergate_lab import simulate as sim

PHASES = ('schedule', 'fabric fit', 'node links', 'retest plan')


def _rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# long: one size, phase after phase, each timed
def one(nodes, fabric='tree3', per_leaf=32, leaves_per_spine=8,
        oversubscription=2.0, kind='trunk+node', sigma=DEFAULT_SIGMA,
        seed=1, uplink_factor=0.85, node_factor=0.9):
    """The phases of one simulated case of ``nodes`` nodes: ``{'seconds':
    {phase: CPU s}, 'peak_mib': ..., 'rounds': ..., 'flows': ...,
    'verdict': [lines]}``."""
    from clustergate.links import judge as linkjudge
    from clustergate.links import retest_candidates
    from clustergate.links import stats as linkstats
    from clustergate.links.topology.analysis import FABRIC_KINDS
    secs = {}
    clock = time.process_time
    rng = random.Random(seed)

    t0 = clock()
    topo = sim.build(fabric, nodes, per_leaf, oversubscription, 12500.0,
                     leaves_per_spine)
    rounds = schedule(topo, topo.nodes)
    secs['schedule'] = clock() - t0

    t0 = clock()
    prepared = Prepared(topo, [r.flows for r in rounds])
    secs['fabric fit'] = clock() - t0
    faults = sim.inject_all(topo, kind, rng, uplink_factor, node_factor) \
        if kind != 'healthy' else []
    measured = sim.measure(topo, prepared.models, faults, rng, sigma, 0.9)

    t0 = clock()
    an = diagnose(topo, measured, fabric='sim', sigma=sigma,
                  prepared=prepared)
    secs['fabric fit'] += clock() - t0

    t0 = clock()
    slow = {v.subject[0] for v in an.verdicts if v.kind == 'node'}
    fitted = [v.fault for v in an.verdicts if v.kind in FABRIC_KINDS]
    preds = sim.variant_rates(topo, prepared.models, fitted)
    figs = linkstats.predicted_figures(an.fitted or topo, measured, preds,
                                       slow)
    judged = linkjudge.judge(figs, None, 'sim', skip=sorted(slow))
    secs['node links'] = clock() - t0

    t0 = clock()
    fabric_lines = an.messages()
    cands = retest_candidates.retest_candidates(fabric_lines, judged, retest_candidates.Bounds())
    names = [c.node for c in cands]
    ff = retest_candidates.fabric_faults(an)
    gross = set(ff.nodes) | set(ff.miscabled)
    healthy = retest_candidates.partners_of([n for n in topo.nodes if (n, 'both') in figs],
                                            figs, gross | set(names))
    refs = retest_candidates.refs_of(names, healthy, ff, topo, limit=retest_candidates.MAX_PARTNERS)
    first = retest_candidates.plan(names, refs)
    secs['retest plan'] = clock() - t0

    return {'nodes': nodes, 'fabric': topo.source, 'rounds': len(rounds),
            'flows': sum(len(r) for r in rounds), 'seconds': secs,
            'peak_mib': _rss_mib(), 'injected': sim._describe(faults),
            'verdict': fabric_lines + judged.lines,
            'retest_candidates': names,
            'retest_pairs': len(first.pairs) if first else 0}


def _parser():
    p = argparse.ArgumentParser(
        prog='python -m clustergate_lab.scale',
        description='time and peak memory of the fabric verdict at scale')
    p.add_argument('--nodes', default='1024,4096,10240',
                   help='comma-separated sizes (default 1024,4096,10240)')
    p.add_argument('--fabric', default='tree3', choices=sim.FABRICS)
    p.add_argument('--per-leaf', type=int, default=32)
    p.add_argument('--leaves-per-spine', type=int, default=8)
    p.add_argument('--oversubscription', type=float, default=2.0)
    p.add_argument('--kind', default='trunk+node',
                   help='injected faults (simulate --kinds; default '
                        'trunk+node, healthy: none)')
    p.add_argument('--sigma', type=float, default=DEFAULT_SIGMA)
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--json', action='store_true',
                   help='one JSON object per size (the child\'s output)')
    return p


def _child(args, sizes):
    """One JSON object per size, measured in this process."""
    for n in sizes:
        try:
            got = one(n, args.fabric, args.per_leaf, args.leaves_per_spine,
                      args.oversubscription, args.kind, args.sigma,
                      args.seed)
        except ValueError as err:
            print(f'scale: {err}', file=sys.stderr)
            return 2
        print(json.dumps(got))
    return 0


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        sizes = [int(x) for x in args.nodes.split(',') if x]
    except ValueError:
        print(f'scale: --nodes {args.nodes!r}: expected sizes such as '
              f'1024,4096', file=sys.stderr)
        return 2
    if args.json:
        return _child(args, sizes)
    rc = 0
    for n in sizes:
        cmd = [sys.executable, '-m', 'clustergate_lab.scale', '--json',
               '--nodes', str(n), '--fabric', args.fabric,
               '--per-leaf', str(args.per_leaf),
               '--leaves-per-spine', str(args.leaves_per_spine),
               '--oversubscription', str(args.oversubscription),
               '--kind', args.kind, '--sigma', str(args.sigma),
               '--seed', str(args.seed)]
        t0 = time.monotonic()
        cp = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if cp.returncode:
            sys.stderr.write(cp.stderr)
            return cp.returncode
        got = json.loads(cp.stdout)
        s = got['seconds']
        total = sum(s.values())
        print(f'{got["fabric"]}: {n} nodes, {got["rounds"]} rounds, '
              f'{got["flows"]} flows; injected {got["injected"]}')
        print('  ' + ', '.join(f'{ph} {s[ph]:.1f} s' for ph in PHASES) +
              f'; analysis {total:.1f} s CPU, process {wall:.1f} s wall '
              f'(with the simulated measurement), peak {got["peak_mib"]:.0f}'
              f' MiB')
        for line in got['verdict']:
            print(f'  verdict: {line[:160]}')
        print(f'  retest: {len(got["retest_candidates"])} candidates, first '
              f'round {got["retest_pairs"]} pairs')
    return rc


if __name__ == '__main__':
    raise SystemExit(main())
