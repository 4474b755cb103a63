"""The driver of the adaptive retest of suspect and borderline node links,
inside the job that measured the link matrix: it judges the job's first
round as the check does (:func:`first_round`), then runs the retest rounds
(:func:`adaptive`: one launch of ``cg_linkmatrix --pairs`` each) until each
candidate is decided by :mod:`clustergate.links.retest_rules` or the time
budget runs out, and writes the result the check reads.

The driver (``python -m clustergate.links.retest_driver``) runs in the job script
after the matrix, with the launch line of the job; it is started beside
the matrix (``--after``: its interpreter and imports, 0.2-0.4 s on a
loaded node, then wait for the matrix's exit status) so that a healthy
job ends one analysis after its matrix (see
:class:`clustergate.rfm.families.linkmatrix.LinkMatrixTest`); the decision logic
(:mod:`clustergate.links.retest_candidates`,
:mod:`clustergate.links.retest_rules`) is pure.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from clustergate.parsers import cgoutput
from clustergate.links import judge as linkjudge
from clustergate.links import matrix as linkmatrix
from clustergate.links import stats as linkstats
from clustergate.links.retest_candidates import (
    DIRECTIONS, Bounds, Candidate, FabricFaults, Pair, fabric_faults,
    named_nodes, partners_of, plan, refs_of, retest_candidates)
from clustergate.links.retest_open import (confirmed_faults,
                                           control_means, explain,
                                           unresolved)
from clustergate.links.retest_rules import (
    ALPHA, MIN_RETESTS, RATIO, Decision, baseline_levels, decide,
    family_alpha, links_tested)

#: seconds of retests per job (extras 'link_retest_budget_s', the check's
#: retest_budget)
BUDGET = 120.0
#: trials per retested pair (the first is dropped; the fastest counts)
TRIALS = 4


@dataclass
class FirstRound:
    """The job's matrix judged as the check judges it (no retest)."""

    matrix: object
    figures: Dict
    verdict: linkjudge.LinkVerdict      # each node link
    lines: List[str]                       # the fabric's verdict
    named: List[str]                       # nodes those lines name
    faults: FabricFaults
    topo: object = None                    # the declared tree, or None

    def __iter__(self):
        # unpacks as the tuple it was: matrix, figures, verdict, lines,
        # named
        return iter((self.matrix, self.figures, self.verdict, self.lines,
                     self.named))


def first_round(text: str, inputs: Mapping) -> FirstRound:
    """The first round of the job's output ``text`` with the check's
    ``inputs`` (fabric, bounds, baseline, declared tree)."""
    from clustergate.links import topology

    run = cgoutput.parse(text)
    matrix = linkmatrix.from_measurements(run.measurements)
    fabric = inputs.get('fabric', '?')
    topo = topology_from_json(inputs.get('topology'))
    fit = None
    if topo is None:
        analysis = linkmatrix.analyse(matrix, inputs.get(
            'fraction', linkmatrix.DEFAULT_FRACTION), fabric)
    else:
        analysis = topology.diagnose(
            topo, topology.rounds_from_measurements(run.measurements),
            fabric)
        # the node links are judged on this fit: made once, not again
        # for each judgement of the node figures
        fit = linkstats.fit_of(topo, analysis)
    lines = analysis.messages()
    stats = {m: linkjudge.LinkStat(*v)
             for m, v in (inputs.get('stats') or {}).items()} or None
    b = Bounds(**inputs.get('bounds', {}))
    figures, verdict, named = node_links(matrix, run, topo, lines, stats,
                                         fabric, b, fit=fit)
    return FirstRound(matrix, figures, verdict, lines, named,
                      fabric_faults(analysis), topo)


def topology_to_json(topo) -> Optional[Dict]:
    """The declared tree as the check resolved it, for the driver (which
    then needs neither scontrol nor the site's file on the node)."""
    if topo is None:
        return None
    return {'leaf_of': topo.leaf_of, 'parent': topo.parent,
            'node_rate': topo.node_rate, 'uplink_rate': topo.uplink_rate,
            'link_rate': [[list(k), v] for k, v in topo.link_rate.items()],
            'source': topo.source, 'dragonfly': topo.dragonfly}


def topology_from_json(data):
    """The inverse of :func:`topology_to_json` (None: flat)."""
    if not data:
        return None
    from clustergate.links.topology import Topology
    return Topology(data['leaf_of'], data['parent'], data['node_rate'],
                    data['uplink_rate'],
                    {tuple(k): v for k, v in data['link_rate']},
                    data.get('source', ''), bool(data.get('dragonfly')))


def node_links(matrix, run, topo, lines, stats, fabric, b: Bounds,
               basis='', fit=None):
    """Each node link judged against its baseline and peers, twice: the
    second time without the slow nodes' flows in their partners' figures
    (a node link at 90 % pulled a partner to 0.95). Returns ``(figures,
    verdict, named)``; ``named``: the nodes the fabric's ``lines`` name."""
    named = sorted(named_nodes(lines) & set(matrix.nodes))

    def judged(figures):
        return linkjudge.judge(
            figures, stats, fabric, skip=named, ratio=b.ratio, z=b.z,
            peer_ratio=b.peer_ratio, peer_z=b.peer_z, basis=basis,
            direction_ratio=b.direction_ratio)

    figures = linkstats.figures(matrix, run, topo, fit=fit)
    verdict = judged(figures)
    slow = set(named) | {j.node for j in verdict.judgements if j.named}
    if slow:
        figures = linkstats.figures(matrix, run, topo, exclude=slow,
                                    fit=fit)
        verdict = judged(figures)
    return figures, verdict, named


def _complete(run, pairs: int) -> bool:
    """Whether a launch's output is whole: its CG_DONE line with no
    error, one measurement per pair and no CG_ERROR line."""
    done = run.done or {}
    return bool(done) and done.get('errors') == 0 and not run.errors and \
        len(run.measurements) == pairs


def _measure(launch: str, ranks: Mapping[str, int], pairs: Sequence[Pair],
             trials: int, log, timeout, notes=None):
    """One launch of ``cg_linkmatrix --pairs``: ``{pair: MB/s}``. A
    launch that exits non-zero fails, unless its output is whole
    (:func:`_complete`): then its figures stand and ``notes`` says so."""
    spec = ','.join(f'{ranks[s]}-{ranks[d]}' for s, d in pairs)
    # no cache flush between trials: 4 MB over a network link does not
    # care, and the ranks of a node share its cores with the flushes
    cmd = f'{launch} --pairs {spec} --trials {trials} --flush-bytes 64'
    # a session of its own: a launcher that hangs is killed whole
    proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise RuntimeError(f'retest launch killed after {timeout:.1f} s '
                           f'(the end of the budget)') from None
    log.write(f'# {cmd}\n{stdout}')
    run = cgoutput.parse(stdout)
    if proc.returncode != 0 and not _complete(run, len(pairs)):
        raise RuntimeError(f'retest launch exited {proc.returncode}: '
                           f'{(err.strip().splitlines() or [""])[-1]}')
    if proc.returncode != 0 and notes is not None:
        # every pair measured and checked (CG_DONE, no error), then the
        # step's teardown failed: srun "Force Terminated" (exit 143) after
        # MPICH's and OpenMPI's last line on the loaded 12-node site
        notes.append(f'retest launch exited {proc.returncode} after its '
                     f'last result (CG_DONE, {len(pairs)} pairs, no '
                     f'error): its figures kept: '
                     f'{(err.strip().splitlines() or [""])[-1]}')
    name = {r: n for n, r in ranks.items()}
    out = {}
    for m in run.measurements:
        bw = m.best_bandwidth()
        if m.pattern == 'linkmatrix' and bw:
            out[(name[int(m['src_rank'])], name[int(m['dst_rank'])])] = \
                float(bw)
    return out


def _untested(c: Candidate, why: str) -> Decision:
    return Decision(c.node, c.why, 'untested', c.first,
                    text=f'not retested: {why}')


def _setup(first: FirstRound, inputs: Mapping, result: Dict):
    """``(candidates, {candidate: partners}, decided)`` of a first round:
    candidates that no pair can measure cleanly are decided untested."""
    b = Bounds(**inputs.get('bounds', {}))
    cands = retest_candidates(first.lines, first.verdict, b)
    if not cands:
        result['notes'].append('no suspect or borderline node link')
        return [], {}, {}
    stats = {m: linkjudge.LinkStat(*v)
             for m, v in (inputs.get('stats') or {}).items()}
    for c in cands:
        c.levels, c.basis = baseline_levels(
            c.node, stats, b, float(inputs.get('ratio', RATIO)))
    gross = set(first.named) | set(first.faults.nodes) | \
        set(first.faults.miscabled)
    names = [c.node for c in cands]
    healthy = partners_of(first.matrix.nodes, first.figures,
                          gross | set(names))
    refs = refs_of(names, healthy, first.faults, first.topo)
    # behind a cut trunk a node may have fewer than 2 clean partners that
    # are not retested themselves: then its fellow candidates too (the
    # halving tells a slow partner from its own link)
    others = refs_of(names, partners_of(names, first.figures, gross),
                     first.faults, first.topo)
    for c in names:
        if len(refs[c]) < 2:
            refs[c] += [o for o in others[c] if o != c]
    decided = {}
    for c in cands:
        if len(refs[c.node]) < 2:
            decided[c.node] = _untested(
                c, f'fewer than 2 healthy partners whose pairs with it '
                   f'cross nothing the fabric verdict named '
                   f'({", ".join(refs[c.node]) or "none"})')
    return [c for c in cands if c.node not in decided], refs, decided


def _estimate(costs, n_pairs):
    """Seconds a launch of ``n_pairs`` pairs should take, from the
    launches so far (``costs``: ``(pairs, seconds)`` each): at the slowest
    per-pair pace seen (the load changes between rounds). 0: none yet."""
    return max((s * n_pairs / p for p, s in costs if p), default=0.0)


def _round_plan(open_, refs, dirs, costs, left, done=None):
    """The next round: the open candidates by :meth:`clustergate.links.retest_candidates.Candidate.priority`,
    as many as leave room, at the pace of the rounds so far, for the
    rounds they still need before a decision (``done``: ``{node: rounds
    so far}``; ``MIN_RETESTS`` at least), else as many as fit one round:
    a short budget decides the strongest first rounds rather than leave
    every candidate half measured. None: not even one fits."""
    order = sorted(open_.values(), key=Candidate.priority)
    done = done or {}
    plans = []
    for k in range(len(order), 0, -1):
        the_plan = plan([c.node for c in order[:k]], refs, directions=dirs)
        if the_plan is None:
            continue
        need = max(max(MIN_RETESTS - done.get(c.node, 0), 1)
                   for c in order[:k])
        cost = _estimate(costs, len(the_plan.pairs))
        if cost * need <= left:
            return the_plan
        plans.append((cost, the_plan))
    return next((p for cost, p in plans if cost <= left and left > 0), None)


def retest(text: str, inputs: Mapping, launch: str, budget: float,
           trials: int = TRIALS, log=None, clock=time.monotonic) -> Dict:
    """Retest the job's candidates; the result as written to the JSON file
    the check reads (``decisions``: one per candidate). Every node link
    the first round names is retested, gross or not, with partners whose
    pairs cross nothing else the fabric's verdict named (see
    :func:`adaptive`); the launches stop at ``budget`` seconds (a launch
    still running then is killed)."""
    result = {'budget_s': budget, 'rounds': 0, 'elapsed_s': 0.0,
              'decisions': [], 'notes': []}
    t_first = clock()
    first = first_round(text, inputs)
    cands, refs, decided = _setup(first, inputs, result)
    ranks = {}
    log = log or open(os.devnull, 'w')

    def measure(the_plan, timeout):
        # the ranks of the nodes, at the first launch only: a healthy
        # job's output is parsed once, on its critical path
        ranks.update(ranks or {n: r for r, n in linkmatrix.labels(
            cgoutput.parse(text).measurements).items()})
        return _measure(launch, ranks, the_plan.pairs, trials, log,
                        timeout=timeout, notes=result['notes'])

    # the budget is the retests' (the first round's analysis is apart)
    start = clock()
    result['analysis_s'] = round(start - t_first, 1)
    ratio = float(inputs.get('ratio', RATIO))
    links = links_tested(first.figures)
    result['links'] = links
    decided.update(adaptive(cands, refs, measure, budget, clock, ratio,
                            float(inputs.get('alpha', ALPHA)), result,
                            links))
    explain(decided, cands, confirmed_faults(first.lines, decided), ratio)
    unresolved(decided, cands, ratio, links,
               result.get('control_means', ()))
    result['elapsed_s'] = round(clock() - start, 1)
    result['decisions'] = [asdict(decided[n]) for n in sorted(decided)]
    return result


def adaptive(cands: Sequence[Candidate], refs: Mapping[str, List[str]],
             measure, budget: float, clock=time.monotonic, ratio=RATIO,
             alpha=ALPHA, result: Optional[Dict] = None, links: int = 0
             ) -> Dict[str, 'Decision']:
    """The retest rounds of ``cands`` (each with its ``refs``, the
    partners to pair it with), until each is decided or ``budget``
    seconds of ``clock`` are spent: each round measures the open
    candidates (:func:`_round_plan`: named first, the strongest first
    round first, when not all fit) in their open directions;
    ``measure(plan, timeout)`` returns ``{pair: MB/s}`` of one launch, or
    raises RuntimeError (killed, failed: the rounds stop, noted in
    ``result``). Returns ``{node: Decision}``; ``result['rounds']``: how
    many rounds ran. ``links``: the node links the first round tested; a
    slow decision needs p < :func:`clustergate.links.retest_rules.family_alpha` of them (``alpha`` up to
    :data:`clustergate.links.retest_rules.CALIBRATED_LINKS`; ``result['slow_alpha']``), clearing p <
    ``alpha``."""
    result = {'notes': []} if result is None else result
    slow_alpha = family_alpha(links, alpha)
    result['slow_alpha'] = slow_alpha
    start = clock()
    rounds: List[Dict[Pair, float]] = []
    whole = plan([c.node for c in cands], refs)
    open_ = {c.node: c for c in cands}
    dirs = {c.node: DIRECTIONS for c in cands}
    costs: List[Tuple[int, float]] = []
    decided: Dict[str, Decision] = {}
    while open_:
        left = budget - (clock() - start)
        the_plan = _round_plan(open_, refs, dirs, costs, left, {
            n: len(rounds_of(rounds, n)) for n in open_})
        if the_plan is None:
            break
        t0 = clock()
        try:
            rounds.append(measure(the_plan, left))
        except (RuntimeError, subprocess.SubprocessError, OSError) as err:
            result['notes'].append(str(err))
            break
        costs.append((len(the_plan.pairs), clock() - t0))
        for node in sorted(the_plan.partners):
            d = decide(rounds_of(rounds, node), open_[node], whole, ratio,
                       alpha, slow_alpha=slow_alpha)
            if d.status != 'open':
                decided[node] = d
                del open_[node]
            else:       # a direction decided healthy is not measured again
                dirs[node] = tuple(dr for dr in DIRECTIONS if
                                   d.directions[dr]['state'] != 'healthy')
    for node, c in open_.items():
        decided[node] = decide(rounds_of(rounds, node), c, whole, ratio,
                               alpha, final=True, slow_alpha=slow_alpha)
    result['rounds'] = len(rounds)
    result['control_means'] = _control_means(rounds, whole)
    # each launch's seconds: where a budget went on a loaded machine
    result['launch_s'] = [round(sec, 2) for _, sec in costs]
    return decided


def _control_means(rounds, whole) -> List[float]:
    """The healthy control pairs' means over the retest's ``rounds``
    (:func:`clustergate.links.retest_open.control_means`): the run's
    spread between links that the verdict on an undecided link uses."""
    if whole is None:
        return []
    pairs = dict.fromkeys(p for ctl in whole.controls.values() for p in ctl
                          if not set(p) & set(whole.partners))
    return [round(m, 4) for m in control_means(rounds, list(pairs))]


def rounds_of(rounds, node):
    """The rounds that measured ``node`` (a node decided early is not
    measured any more)."""
    return [r for r in rounds if any(node in p for p in r)]



#: seconds between two looks for the matrix's exit status (--after)
POLL_S = 0.02


def await_matrix(path: str, poll: float = POLL_S) -> int:
    """The matrix's exit status, once the job script wrote it to
    ``path`` (written whole: the script renames it into place). The
    analysis' modules are imported first, while the matrix runs."""
    from clustergate.links import topology  # noqa: F401 (first_round's import)
    import shutil  # noqa: F401 (the retest launch's import)
    while True:
        try:
            with open(path) as fp:
                return int(fp.read().strip())
        except FileNotFoundError:
            time.sleep(poll)


def not_after(rc: int, text: str) -> Optional[str]:
    """Why no retest follows a matrix launch that exited ``rc`` with the
    output ``text``, or None. A launch that failed after a complete
    output (every measurement and ``CG_DONE`` without errors: ranks our
    harness's watchdog stopped in a hung ``MPI_Finalize``, a step torn
    down after its last line) is retested: its figures stand, and the
    borderline links they leave must still be decided."""
    if rc == 0:
        return None
    try:
        cgoutput.verify(cgoutput.parse(text), 'cg_linkmatrix')
    except cgoutput.OutputError as err:
        return (f'the matrix launch exited {rc} before its output was '
                f'whole ({err})')
    return None


def _no_retest(budget: float, why: str) -> Dict:
    return {'budget_s': budget, 'rounds': 0, 'decisions': [],
            'notes': [why]}


def main(argv=None):
    """``python -m clustergate.links.retest_driver --output STDOUT --inputs JSON
    --launch 'LAUNCH EXE --bytes B' --result JSON``: in the job script.
    Always exits 0: the check judges what it wrote (or its absence)."""
    ap = argparse.ArgumentParser(prog='clustergate.links.retest_driver')
    ap.add_argument('--output', required=True, help='the matrix output')
    ap.add_argument('--inputs', required=True)
    ap.add_argument('--launch', required=True)
    ap.add_argument('--result', required=True)
    ap.add_argument('--log', default=None, help='the retests\' CG lines')
    ap.add_argument('--budget', type=float, default=BUDGET)
    ap.add_argument('--trials', type=int, default=TRIALS)
    ap.add_argument('--after', default=None,
                    help='started beside the matrix: wait for this file '
                         '(its exit status); not 0 and an output that is '
                         'not whole: no retest (a result saying why)')
    args = ap.parse_args(argv)
    rc = await_matrix(args.after) if args.after else 0
    try:
        with open(args.output, errors='replace') as fp:
            text = fp.read()
        skip = not_after(rc, text)
        if skip:
            result = _no_retest(args.budget, skip)
        else:
            with open(args.inputs) as fp:
                inputs = json.load(fp)
            log = open(args.log, 'w') if args.log else None
            try:
                result = retest(text, inputs, args.launch, args.budget,
                                args.trials, log)
            finally:
                if log:
                    log.close()
    except Exception as err:    # noqa: BLE001 (the job must go on)
        result = _no_retest(args.budget,
                            f'retest failed: {type(err).__name__}: {err}')
    with open(args.result, 'w') as fp:
        json.dump(result, fp, indent=1)
    for d in result.get('decisions', []):
        print(f'linkretest: {d["node"]} {d["status"]}: {d["text"]}',
              file=sys.stderr)
    for n in result.get('notes', []):
        print(f'linkretest: {n}', file=sys.stderr)
    return 0


def _exit_now(rc: int):
    """Leaves without the interpreter's teardown of ~200 modules (70 ms
    on a loaded node, after the verdict is written, on the job's critical
    path): everything the driver writes is closed or flushed first."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == '__main__':
    _exit_now(main())
