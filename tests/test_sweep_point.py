"""The base of every check (clustergate.rfm.point.base.PointTest): its hooks call
the steps in the order its docstring writes, before the families' own hooks
of the same stage; one parse/check protocol for every family."""

import re

import pytest
from reframe.core.exceptions import SanityError

from clustergate.parsers import ParseError
from clustergate import adapter
from clustergate.rfm.point import capable, joboptions as concurrency, modes, placement, base as point, reference, refmetrics
from rfm_loader import load_checks

STEPS = [(modes, 'guard_dry_run'), (capable, 'keep_capable_points'),
         (modes, 'set_mode_tags'), (placement, 'apply_sweep_point'),
         (reference, 'apply'), (concurrency, 'apply'),
         (placement, 'verify_transport'),
         (refmetrics, 'reference_names_reported_metrics'),
         (refmetrics, 'report_improvements')]

#: the base's hook at each stage, in the order ReFrame runs the stages
HOOKS = [('post___init__', 'point_init'),
         ('post___init__', 'point_init_last'),
         ('post_setup', 'point_setup'), ('pre_sanity', 'point_before_sanity'),
         ('pre_performance', 'point_before_performance'),
         ('post_performance', 'point_after_performance')]


def npb_check():
    return next(c for c in load_checks('checks/npb/npb_checks.py')
                if type(c).__name__ == 'NpbCG')


def test_hooks_call_the_steps_in_the_written_order(monkeypatch):
    check = npb_check()     # loaded (its init hooks run) before the count
    calls = []
    for mod, name in STEPS:
        step = f'{mod.__name__.rsplit(".", 1)[-1]}.{name}'
        monkeypatch.setattr(mod, name,
                            lambda *a, step=step: calls.append(step))
    for _, hook in HOOKS:
        getattr(check, hook)()

    where = [re.search(rf'\s{re.escape(c)}\s', point.__doc__).start()
             for c in calls]
    assert where == sorted(where), calls
    assert len(calls) == len(STEPS), calls


def test_the_base_hooks_come_first_or_last_at_their_stage():
    # the families' hooks of a stage run after the base's (its init hook,
    # which takes the family's requirements, last of all)
    for rel in ('checks/npb/npb_checks.py', 'checks/hpcc/hpcc_checks.py',
                'checks/stream/stream_checks.py',
                'checks/linkmatrix/linkmatrix_check.py'):
        for check in load_checks(rel):
            hooks = adapter.pipeline_hooks(type(check))
            if 'point_setup' not in hooks.get('post_setup', []):
                continue    # a build fixture

            init = hooks['post___init__']
            assert init[0] == 'point_init' and init[-1] == 'point_init_last'
            assert hooks['pre_performance'][-1] == 'point_before_performance'
            setup = hooks['post_setup']
            # the link matrix's decided verdict fails a rerun before all
            assert setup[0] == 'point_setup' or \
                setup[:2] == ['keep_decided_verdict', 'point_setup'], setup


def test_one_parse_check_protocol(monkeypatch):
    check = npb_check()
    seen = []
    monkeypatch.setattr(check, 'parse', lambda text: seen.append(text) or 42,
                        raising=False)
    monkeypatch.setattr(check, 'check', lambda result: seen.append(result),
                        raising=False)
    assert check.check_output('some output') is True
    assert seen == ['some output', 42]

    def refuse(text):
        raise ParseError('no Verification line (run cut short? 3 lines)')

    monkeypatch.setattr(check, 'parse', refuse, raising=False)
    monkeypatch.setattr(check, 'stderr_text', lambda: '', raising=False)
    monkeypatch.setattr(check, 'job_exit_code', lambda: None, raising=False)
    with pytest.raises(SanityError, match='no Verification line'):
        check.check_output('cut')
