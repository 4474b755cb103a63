"""The link matrix's verdict from its job's output, without ReFrame: the
fabric's verdict on a declared tree (:func:`tree_verdict`), each node link
against its baseline (:func:`link_baseline`) and its peers, the retest's
decisions and warnings applied to the first round's verdict
(:func:`judge_links`, :func:`judge`), and which performance variables and
bounds the judged run gets (:func:`perf_plan`, :func:`perf_variables`).
The ReFrame test is
:class:`clustergate.rfm.families.linkmatrix.LinkMatrixTest`; the functions
that take it call its methods only."""

from collections import namedtuple

from clustergate.links import linkbaselines as linkbaseline
from clustergate.links import topology
from clustergate.links import matrixjob
from clustergate.links import retest_candidates
from clustergate.links import retest_driver
from clustergate.links import retest_verdict
from clustergate.links import stats as linkstats
from clustergate.parsers import cgoutput
from clustergate.refs import references
from clustergate.site import environment

#: what :func:`judge_links` found: the verdict lines that fail the test,
#: the node figures, the node links' verdict, the retest's warnings
#: (without their ``WARNING:``), the log lines ``(level, text)`` in their
#: order, and whether the retest decided every failing verdict
Judged = namedtuple('Judged', 'final figures links warnings log decided')

#: what :func:`perf_plan` found: the per-node variables ``(name, 'bw' or
#: 'peer', (node, direction))``, whether ``peer_min`` is bounded by the
#: test's ``fraction``, and the lines to log
PerfPlan = namedtuple('PerfPlan', 'node_variables bound_peer_min notes')


def link_baseline(refs_dir, point, check):
    """``(description, {metric: LinkStat})`` of the test case ``point``
    (``(system, partition, axes)``, None: none) of ``check`` in the
    system's link-baseline file under ``refs_dir``, or None. A malformed
    file raises ReferenceFileError, naming file and key."""
    if point is None:
        return None

    system, part, axes = point
    bl = linkbaseline.load_cached(linkbaseline.link_file(refs_dir, system),
                                  system)
    found = bl.lookup(check, part, axes) if bl else None
    if found is None:
        return None

    return f'{bl.describe()}#{found[0]}', found[1]


def baseline_where(refs_dir, point):
    """Where the link baseline of the test case ``point`` would be."""
    if point is None:
        return ''
    path = references._rel(linkbaseline.link_file(refs_dir, point[0]))
    return f'for this point in {path}'


def tree_verdict(topo, run, fabric):
    """``(lines, notes)``: the verdict lines of the output ``run`` judged
    against the declared tree ``topo`` on ``fabric``, and what the
    analysis says besides (to log)."""
    tree = topology.diagnose(
        topo, topology.rounds_from_measurements(run.measurements), fabric)
    notes = [f'topology analysis: {note}' for note in tree.notes]
    return tree.messages(), notes + [tree.summary()]


def judge(test, text):
    """``(verdict lines, node figures, node links' verdict)`` of the link
    matrix ``test`` on its output ``text``: its matrix and analysis, its
    ``verdict_lines``, then :func:`judge_links` with its baseline, its
    declared tree and its retest's result; the retest's notes logged, its
    warnings kept in ``link_warnings``, a verdict the retest decided
    recorded (``decided``)."""
    run = cgoutput.parse(text)
    matrix = test.matrix(run)
    analysis = test.analysis(matrix)
    test.logger.info(analysis.summary())
    lines = test.verdict_lines(analysis)
    found = test.link_baseline()
    basis = found[0] if found else baseline_where(
        environment.references_dir(), test.link_point())
    judged = judge_links(matrix, run, lines, test.declared(), found, basis,
                         test.interconnect, test.naming(), test.budget(),
                         test.retest_result())
    for level, line in judged.log:
        getattr(test.logger, level)(line)
    test.link_warnings = judged.warnings
    if judged.decided:
        test.decided(judged.final)
    return judged.final, judged.figures, judged.links


def judge_links(matrix, run, lines, topo, found, basis, fabric, naming,
                budget, retested):
    """The verdict of the matrix ``matrix`` of the output ``run`` whose
    fabric verdict is ``lines``: each node link against its own baseline
    (``found``, see :func:`link_baseline`; ``basis`` says which) and its
    peers (a node the fabric's verdict named already is not named twice),
    on the declared tree ``topo`` (None: the flat matrix), with the
    naming bounds ``naming`` (retest_candidates.Bounds); then the
    retest's result ``retested`` (the retests of the same job, with
    ``budget`` seconds, decide every named node link, gross or not, and
    the borderline ones). A :class:`Judged`."""
    figures, links, _ = retest_driver.node_links(
        matrix, run, topo, lines, found[1] if found else None, fabric,
        naming, basis=basis)
    first = lines + links.lines
    cands = retest_candidates.retest_candidates(lines, links, naming) \
        if budget > 0 else None
    final, notes = retest_verdict.apply(first, retested, fabric, cands,
                                        tree=topo is not None)
    warned, log = [], []
    for note in notes:
        # a borderline link the retest left within its noise: not a
        # verdict line, but said where the session's output shows it
        # and kept for the report (link_warnings)
        if note.startswith(retest_verdict.WARNING):
            log.append(('warning', f'link retest: {note}'))
            warned.append(note[len(retest_verdict.WARNING):])
        else:
            log.append(('info', f'link retest: {note}'))
    log.append(('info', f'node links on fabric {fabric}: {links.basis}'))
    decided = bool(final) and retest_verdict.decided_all(retested, cands)
    return Judged(final, figures, links, warned, log, decided)


def perf_plan(figures, fraction, max_nodes, cleared_by):
    """The performance variables of the judged ``figures`` (a
    :class:`PerfPlan`): 5 per node up to ``max_nodes`` nodes, above it
    only the summary ones; ``peer_min`` bounded by ``fraction`` unless
    every node link below it in the first round was measured healthy
    alone by the retest (``cleared_by()``: the retest's result, called
    only then): what the retest clears is not a fault."""
    nodes = {n for n, _ in figures}
    variables, notes = [], []
    if len(nodes) <= max_nodes:
        for node, direction in sorted(figures):
            bw, peer = linkstats.metric_names(node, direction)
            if direction != 'both':
                variables.append((bw, 'bw', (node, direction)))
            variables.append((peer, 'peer', (node, direction)))
    else:
        notes.append(f'{len(nodes)} nodes: more than '
                     f'max_node_variables={max_nodes}'
                     f', per-node figures only in the CSV')

    low = {f.node for f in figures.values() if f.peer < fraction}
    healthy = matrixjob.cleared_nodes(cleared_by() if low else None)
    cleared = bool(low) and low <= healthy
    if cleared:
        notes.append(f'peer_min not bounded: {", ".join(sorted(low))}'
                     f' below {fraction:g}x of its peers in the '
                     f'first round, cleared by the retest')
    return PerfPlan(variables, not cleared, notes)


def worst_mads(links):
    """How far the worst node link of the verdict ``links`` is below its
    baseline (or, without one, its peers of the run), in MADs (0: not
    below)."""
    worst = links.worst()
    z = worst.z if worst.z is not None else worst.peer_z
    return max(0.0, -z)


def limits(fraction, bound_peer_min, reference):
    """The bounds of the judged run: no fault, and ``peer_min`` at least
    ``fraction`` where ``bound_peer_min``; otherwise such a bound of an
    earlier run is taken out of ``reference``."""
    out = {'faults': (0, None, 0)}
    own = (fraction, 0, None, 'x')
    if bound_peer_min:
        out['peer_min'] = own
    elif tuple(reference.get('*:peer_min', ())) == own:
        del reference['*:peer_min']     # ours, from an earlier run
    return out


def perf_variables(test):
    """``(performance variables, bounds)`` of the link matrix ``test``:
    the median and the slowest pair; once judged (a dry run has no output:
    None for the bounds) the node links' figures (:func:`perf_plan`),
    ``peer_min``, ``link_mads`` and ``faults``."""
    pv = {'bw_median': test.bw_median(), 'bw_min': test.bw_min()}
    if test.is_dry_run():
        return pv, None

    lines, figures, _ = test.judge()
    plan = perf_plan(
        figures, test.fraction, test.max_node_variables,
        lambda: test.retest_result() if test.budget() > 0 else None)
    for name, kind, link in plan.node_variables:
        pv[name] = (test.node_bw if kind == 'bw' else test.node_peer)(link)
    for note in plan.notes:
        test.logger.info(note)
    if figures:
        pv['peer_min'] = test.peer_min()
        pv['link_mads'] = test.link_mads()
    pv['faults'] = test.faults(lines)
    return pv, limits(test.fraction, plan.bound_peer_min, test.reference)
