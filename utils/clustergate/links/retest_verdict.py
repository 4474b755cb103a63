"""The verdict lines of the link matrix after its retest
(:func:`apply`), from the first round's lines and the result the driver
(:mod:`clustergate.links.retest_driver`) wrote; whether the retest decided
every candidate (:func:`decided_all`)."""

import re
from typing import List, Mapping, Optional, Sequence, Tuple

from clustergate.links.retest_candidates import Candidate, node_link_of
from clustergate.links.retest_open import UNRESOLVED

#: the retest's statuses that are not named (logged)
CLEARED = ('healthy', 'explained')
#: how a note of :func:`apply` that the check logs as a warning starts
WARNING = 'WARNING: '

#: what a later run of a case whose failing verdict the retest decided
#: says (it fails before its job: :class:`clustergate.rfm.families.linkmatrix.
#: DecidedVerdict`)
DECIDED = 'decided by the link retest in an earlier run of this session'


#: what a first-round line stands on, when it does not say it
FABRIC_BASIS = {True: 'fabric model', False: 'matrix median'}
_FABRIC_LINE = re.compile(r'^(?:suspect node|suspect link|uplink|'
                          r'miscabled node) \S+ on fabric ')


def with_basis(line: str, tree: bool) -> str:
    """``line`` saying which basis judged it: the per-link verdict's lines
    say it already (its baseline, or its peers only); the fabric's are
    judged against the fitted fabric model on a tree, the matrix median
    when flat."""
    if '[basis: ' in line or not _FABRIC_LINE.match(line):
        return line         # a subclass's own verdict: its own words
    return f'{line} [basis: {FABRIC_BASIS[bool(tree)]}]'


# long: one branch per retest outcome of a named line, then of a
# borderline candidate, each saying what became of it
def apply(lines: List[str], result: Optional[Mapping], fabric: str,
          cands: Optional[Sequence[Candidate]], tree: bool = False
          ) -> Tuple[List[str], List[str]]:
    """The verdict lines after the retest, and the notes to log.

    ``lines``: the first round's lines (the fabric's and the per-link
    verdict's); ``result``: the driver's result (None: none was written);
    ``cands``: what the retest had to decide (:func:`clustergate.links.retest_candidates.retest_candidates`;
    None: no retest, its budget is 0). A named node link the retest
    cleared is dropped (logged); a confirmed one keeps its line with the
    retest's confidence; one the retest could not decide (inconclusive
    within the budget, or not retested) keeps its line saying why: the
    gate does not pass what it could not check. A borderline one becomes a
    line when confirmed or undecided (not when :func:`clustergate.links.retest_open.explain` explained
    it: logged; not when :func:`clustergate.links.retest_open.unresolved` found it within the retest's
    noise: a note starting with ``WARNING``)."""
    out = [with_basis(ln, tree) for ln in lines]
    if cands is None:
        return out, ['no retest (its budget is 0): named node links stand '
                     'on the first round']
    by_node = {d['node']: d for d in (result or {}).get('decisions', [])}
    notes = list((result or {}).get('notes', []))
    why = '; '.join(notes) or ('no retest result' if result is None else
                               'no decision')
    lined = {node_link_of(ln) for ln in lines} - {None}
    final = []
    for ln in out:
        node = node_link_of(ln)
        d = by_node.get(node)
        if node is None or node not in {c.node for c in cands}:
            final.append(ln)
        elif d is None:
            final.append(f'{ln}; not retested: {why}')
        elif d['status'] in CLEARED:
            notes.append(f'{ln} -- {d["text"]}')
        elif d['status'] == 'partner':
            final.append(_partner_line(d, fabric))
        else:               # slow, inconclusive, untested
            final.append(f'{ln}; {d["text"]}')
    head = 'slow node link {} on fabric ' + fabric + ': '
    for c in cands:
        if c.node in lined:
            continue
        d = by_node.get(c.node) or {'status': 'missing', 'text':
                                     f'not retested: {why}'}
        if d['status'] == 'partner':
            final.append(_partner_line(d, fabric))
        elif d['status'] in CLEARED:
            notes.append(f'borderline node link {c.node} on fabric {fabric} '
                         f'({c.first}): {d["text"]}')
        elif d['status'] == UNRESOLVED:
            notes.append(f'{WARNING}undecided node link {c.node} on fabric '
                         f'{fabric} ({c.first}): {d["text"]}')
        else:
            what = head if d['status'] == 'slow' else \
                'undecided node link {} on fabric ' + fabric + ': '
            final.append(what.format(c.node) + f'{d["text"]} (first round: '
                         f'{c.first}, not named on its own)')
    return final, notes


def decided_all(result: Optional[Mapping],
                cands: Optional[Sequence[Candidate]]) -> bool:
    """Whether the retest ran and decided every candidate (slow, a
    partner's, healthy, explained, or untested for want of clean
    partners): then a later run has nothing to add. One left inconclusive
    at the end of its budget is not decided: a retry of the session
    (``--max-retries``) measures the matrix again, on a loaded node a
    borderline link's second chance, while a confirmed fault's verdict
    stands without a second run."""
    if result is None or cands is None:
        return False
    done = {d['node'] for d in result.get('decisions', [])
            if d.get('status') != 'inconclusive'}
    return {c.node for c in cands} <= done


def _partner_line(d, fabric):
    node, ends = d['node'], d['blamed']
    arrow = '->' if d['direction'] == 'sent' else '<-'
    return (f'slow link {node}{arrow}{",".join(ends)} on fabric {fabric}: '
            f'{d["text"]}')
