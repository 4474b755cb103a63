"""The retest's decisions replayed on what the fault campaign measured.

Every node link the retest decided in the campaign on the emulated 9-node
leaf/spine cluster (20 healthy runs, 33 fault runs; fixture
``linkretest-campaign-rounds.json``) is decided again from its recorded
round figures, round by round as the driver would, with the per-link
baseline the run was judged by, and again without one (a fresh site). The
node links at 95 % (n3 on fab0, n8 on fab1) sit at the naming ratio alone:
the ratio's t-test left them undecided after 12-14 rounds; judged against
their baseline's borderline bound, or without one halfway from their
partners' level to the ratio, they are slow. No link of a healthy run and no innocent beside a
fault may be named, and every culprit stays slow."""

import json
import os

import pytest

from clustergate.links import judge as linkjudge
from clustergate.links import retest_candidates
from clustergate.links import retest_driver
from clustergate.links import retest_rules
from clustergate.links import retest_verdict
from conftest import FIXTURES, fixture_text
from retest_replay import replayed
from test_linkretest_faults import inputs
from test_linkretest_load import RATE, Launches, subjects

with open(os.path.join(FIXTURES, 'linkretest-campaign-rounds.json')) as fp:
    CAMPAIGN = json.load(fp)['runs']


def records():
    for run in CAMPAIGN:
        for rec in run['retests']:
            culprit = f'{rec["node"]}@{rec["fabric"]}' in run['culprits']
            yield run, rec, culprit


def _id(x):
    run, rec, _ = x
    return f'{run["run"]}-{rec["node"]}'


def replay(rec, baseline=True):
    """``rec`` decided again by :func:`retest_driver.adaptive`, each launch giving the
    next recorded figure of each direction it measures; the rounds end
    when a direction it needs has no more recorded figures (the budget)."""
    stats = {m: linkjudge.LinkStat(*v) for m, v in rec['baseline'].items()}
    levels, basis = retest_rules.baseline_levels(rec['node'], stats if baseline
                                                 else None, retest_candidates.Bounds())
    cand = retest_candidates.Candidate(rec['node'], rec['why'], 'replayed', 0.9,
                                       levels, basis)
    left = {dr: iter(v) for dr, v in rec['values'].items()}
    return replayed(cand, left, RATE, 'recorded rounds used up')[rec['node']]


def test_the_fixture_is_the_whole_campaign():
    healthy = [r for r in CAMPAIGN if r['case'] == 'healthy']
    assert len(healthy) == 20 and len(CAMPAIGN) == 53
    assert sum(1 for _ in records()) == 35


@pytest.mark.parametrize('rec', [x for x in records() if not x[2]], ids=_id)
def test_no_healthy_link_is_named(rec):
    # the 8 borderline links of healthy runs and the innocents beside
    # faults: cleared, as in the campaign
    run, rec, _ = rec
    assert rec['status'] == 'healthy'
    d = replay(rec)
    assert d.status == 'healthy', (run['run'], d.text)


@pytest.mark.parametrize('rec', [x for x in records() if x[2]], ids=_id)
def test_every_culprit_is_slow(rec):
    run, rec, _ = rec
    d = replay(rec)
    assert d.status == 'slow', (run['run'], d.text)
    assert 'its own link' in d.text
    assert '[retest basis: below ' in d.text


def test_the_95_percent_links_are_slow_without_a_baseline():
    # the campaign judged them against the naming ratio: undecided after
    # 12-14 rounds; without a per-link baseline the halfway level between
    # the partners' level and the ratio (0.975x) decides them slow
    found = [(run, rec) for run, rec, culprit in records()
             if culprit and run['case'] in ('node-n3-95-fab0',
                                            'node-n8-95-fab1')]
    assert len(found) == 4
    for run, rec in found:
        assert rec['status'] == 'inconclusive'
        d = replay(rec, baseline=False)
        assert d.status == 'slow', (run['run'], d.text)
        assert '[retest basis: below 0.975x, halfway from its partners\' ' \
            'level to the naming ratio 0.95x (no per-link baseline)]' in d.text
        assert d.retests <= 6, d.text
        assert replay(rec).status == 'slow'


@pytest.mark.parametrize('rec', list(records()), ids=_id)
def test_without_a_baseline_the_campaign_decides_alike(rec):
    # a fresh site: every recorded retest judged with no per-link
    # baseline: the innocents and the healthy runs' links cleared, every
    # culprit slow
    run, rec, culprit = rec
    d = replay(rec, baseline=False)
    assert d.status == ('slow' if culprit else 'healthy'), (run['run'],
                                                           d.text)


def test_baseline_levels():
    b = retest_candidates.Bounds()

    def level(median, mad):
        stats = {'peer_n1_sent': linkjudge.LinkStat(median, mad, 10)}
        levels, basis = retest_rules.baseline_levels('n1', stats, b)
        assert basis.startswith('per-link baseline (sent ')
        return round(levels['sent'], 4)

    # both borderline bounds: halfway to the naming ratio (0.975x) and
    # half the naming MADs (2.5) below its median, the lower of the two
    assert level(0.99, 0.004) == 0.9652
    assert level(0.99, 0.012) == 0.96
    # noisy: never below the naming ratio (the retest without baseline)
    assert level(0.99, 0.03) == 0.95
    # a median above 1 (its peers' flows held it back in the matrix)
    # does not raise the level of a figure taken alone
    assert level(1.13, 0.01) == 0.975
    assert retest_rules.baseline_levels('n1', {}, b) == ({}, '')


#: the campaign's n8 at 95 % on fab1 (second run), its retest figures per
#: round (sent, received), both 0.95x its partners alone
SENT = [0.949, 0.948, 0.953, 0.954, 0.951, 0.95, 0.955, 0.947, 0.958,
        0.947, 0.948, 0.954, 0.949, 0.962]
RECV = [0.942, 0.949, 0.95, 0.951, 0.951, 0.954, 0.969, 0.95, 0.956,
        0.953, 0.944, 0.956, 0.956, 0.961]


def test_the_driver_names_a_95_percent_link_by_its_baseline(monkeypatch):
    # the healthy fixture's real first round, n1 borderline against a
    # tight baseline (0.96x of it), alone at the recorded 95 % figures:
    # named slow, the line saying what its retest was judged against
    text = fixture_text('cg-outputs', 'emu-linkmatrix-tree9-healthy.out')
    first = retest_driver.first_round(text, inputs())
    stats = {f'peer_{n}_{d}': [f.peer * (1.045 if n == 'n1' else 1.0),
                               0.008, 10]
             for (n, d), f in first.figures.items()}
    launches = Launches(noisy='n1', sent=SENT, recv=RECV)
    monkeypatch.setattr(retest_driver, '_measure', launches)
    result = retest_driver.retest(text, inputs(stats), 'scripted', 120.0,
                                  clock=launches.clock)
    first = retest_driver.first_round(text, inputs(stats))
    cands = retest_candidates.retest_candidates(first.lines, first.verdict, retest_candidates.Bounds())
    assert [c.why for c in cands if c.node == 'n1'] == ['borderline']
    lines, _ = retest_verdict.apply(first.lines + first.verdict.lines, result, 'fab0',
                                    cands, tree=True)
    assert subjects(lines) == ['slow node link n1'], lines
    assert 'the borderline bound of its per-link baseline' in lines[0]
