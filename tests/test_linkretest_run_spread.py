"""A fresh site's retest judged against the run's own spread between links.

The fixtures are the retest results of one rotation night on the 12-node,
4-leaf emulated site as `site init` writes it (Intel MPI over tcp, fab0,
no per-link baseline, the 2-core machine loaded by the nodes' ranks) and
of its retry. The tree was healthy. Each retest left a borderline link
open that leaned low by its own rounds' standard error and failed the
night: n4 (received 0.78-0.98x alone, mean 0.87x, 4 rounds) and, on the
retry, n7 (sent 0.87-1.00x, mean 0.93x). Beside them the other healthy
candidates averaged 0.95-1.08x and 1.02-1.19x: in such a run a healthy
link alone sits off its partners' level by several per cent for the whole
job, and its own rounds do not show that.
"""

import json
import pathlib
import statistics

import pytest

from clustergate.links import retest_candidates
from clustergate.links import retest_driver
from clustergate.links import retest_open
from clustergate.links import retest_verdict
from clustergate.links.retest_rules import Decision

NIGHTS = pathlib.Path(__file__).parent / 'fixtures' / 'linkretest-site-nights'


def recorded(name, shift=None):
    """The fixture's decisions as the budget left them (a borderline link
    the old rule made a warning is open again), ``shift``: ``{node:
    added to every round}``; ``(decided, candidates, links)``."""
    raw = json.loads((NIGHTS / name).read_text())
    decided, cands = {}, []
    for x in raw['decisions']:
        status = 'inconclusive' if x['status'] in (
            'inconclusive', retest_open.UNRESOLVED) else x['status']
        dirs = {}
        for dr, v in x['directions'].items():
            vals = [round(a + (shift or {}).get(x['node'], 0.0), 4)
                    for a in v['values']]
            dirs[dr] = dict(v, values=vals, mean=statistics.fmean(vals))
        decided[x['node']] = Decision(
            x['node'], x['why'], status, x['first'], x['retests'], dirs,
            text='retest inconclusive after the time budget')
        cands.append(retest_candidates.Candidate(x['node'], x['why'],
                                                 x['first'], 0.87))
    return decided, cands, raw['links']


@pytest.mark.parametrize('name, node', [('emusite-intel-fab0.json', 'n4'),
                                        ('emusite-intel-fab0-retry.json',
                                         'n7')])
def test_a_healthy_link_within_the_runs_spread_is_a_warning(name, node):
    decided, cands, links = recorded(name)
    low = min(decided[node].directions.values(),
              key=lambda x: x['mean'])['values']
    # by its own rounds alone it leans to a loss: the night was red
    assert retest_open.leans_to_loss(low, 0.95, links)
    spread = retest_open.run_spread(decided, links, but=node)
    assert spread is not None and spread.series >= 4
    assert not retest_open.leans_to_loss(low, 0.95, links, spread)
    retest_open.unresolved(decided, cands, links=links)
    assert {d.status for d in decided.values()} == {retest_open.UNRESOLVED}
    d = decided[node]
    assert f'retested series of this run spread {spread.sd:.2f}x' in d.text
    assert f'a loss under {spread.loss:.0%} is not told from health in ' \
        'this run' in d.text
    lines, notes = retest_verdict.apply(
        [], {'decisions': [vars(x) for x in decided.values()]}, 'fab0',
        cands, tree=True)
    assert lines == []
    assert any(n.startswith(f'WARNING: undecided node link {node} on '
                            'fabric fab0') for n in notes)


def test_a_loss_beyond_the_runs_spread_is_still_red():
    # n4 a further 12 % down (alone 0.66-0.86x, mean 0.75x): beyond what
    # the healthy links of the same run spread, it stays undecided and the
    # run fails naming it
    decided, cands, links = recorded('emusite-intel-fab0.json',
                                     shift={'n4': -0.12})
    retest_open.unresolved(decided, cands, links=links)
    assert decided['n4'].status == 'inconclusive'
    assert {decided[n].status for n in ('n1', 'n5')} == \
        {retest_open.UNRESOLVED}
    lines, _ = retest_verdict.apply(
        [], {'decisions': [vars(x) for x in decided.values()]}, 'fab0',
        cands, tree=True)
    assert [ln.split(' on fabric ')[0] for ln in lines] == [
        'undecided node link n4']


def test_a_confirmed_fault_does_not_widen_the_spread():
    # the retry's n2 confirmed slow at half its rate: left out of the
    # spread, which the other healthy links give as before
    decided, _, links = recorded('emusite-intel-fab0-retry.json')
    before = retest_open.run_spread(decided, links)
    for x in decided['n2'].directions.values():
        x['values'] = [0.5 * v for v in x['values']]
    decided['n2'].status = 'slow'
    after = retest_open.run_spread(decided, links)
    assert after.series == before.series - 2
    assert after.sd < 1.5 * before.sd


def test_too_few_series_give_no_spread():
    # one candidate (two directions): its own rounds are all the run says
    decided, _, links = recorded('emusite-intel-fab0.json')
    one = {'n4': decided['n4']}
    assert retest_open.run_spread(one, links) is None


def lone_candidate(shift=0.0):
    """A later night's fab1 retest with one candidate, n7 (healthy), as
    the budget left it, its sent rounds moved by ``shift``; ``(decided,
    candidates, links, rounds, plan)``."""
    raw = json.loads((NIGHTS / 'emusite-intel-fab1-lone-candidate.json')
                     .read_text())
    (x,) = raw['result']['decisions']
    sent = x['directions']['sent']
    sent['values'] = [round(v + shift, 4) for v in sent['values']]
    sent['mean'] = statistics.fmean(sent['values'])
    decided = {'n7': Decision('n7', x['why'], 'inconclusive', x['first'],
                              x['retests'], x['directions'],
                              text='retest inconclusive after the time '
                                   'budget')}
    cands = [retest_candidates.Candidate('n7', x['why'], x['first'], 0.86)]
    rounds = [{tuple(k.split('>')): v for k, v in launch.items()}
              for launch in raw['launches']]
    the_plan = retest_candidates.plan(['n7'], ['n10', 'n2', 'n8', 'n6'])
    return decided, cands, raw['result']['links'], rounds, the_plan


def test_a_lone_candidate_is_held_to_the_control_pairs_spread():
    # alone n7 sent 0.92x over 10 launches: red by its own rounds, on a
    # fabric whose healthy pairs between its partners sat at 0.96-1.06x
    # of their median for the whole job
    decided, cands, links, rounds, the_plan = lone_candidate()
    sent = decided['n7'].directions['sent']['values']
    assert retest_open.leans_to_loss(sent, 0.95, links)
    assert retest_open.run_spread(decided, links, but='n7') is None
    controls = retest_driver._control_means(rounds, the_plan)
    assert len(controls) == 4 and min(controls) < 0.97 < 1.04 < max(controls)
    spread = retest_open.run_spread(decided, links, 'n7', controls)
    assert spread.series == 4 and spread.loss > 0.1
    retest_open.unresolved(decided, cands, links=links, controls=controls)
    assert decided['n7'].status == retest_open.UNRESOLVED
    lines, notes = retest_verdict.apply(
        [], {'decisions': [vars(decided['n7'])]}, 'fab1', cands, tree=True)
    assert lines == [] and any(
        n.startswith('WARNING: undecided node link n7') for n in notes)


def test_a_lone_candidate_beyond_the_control_pairs_spread_is_red():
    # the same link a further 15 % down (mean 0.77x): beyond what the
    # healthy pairs of its own launches spread
    decided, cands, links, rounds, the_plan = lone_candidate(-0.15)
    controls = retest_driver._control_means(rounds, the_plan)
    retest_open.unresolved(decided, cands, links=links, controls=controls)
    assert decided['n7'].status == 'inconclusive'
