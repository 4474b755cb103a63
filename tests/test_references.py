"""Reference files: lookup by check, partition and sweep axes; malformed
files are configuration errors naming the file and the key."""

import pytest

from clustergate.refs import references as R
from clustergate.rfm.point import reference as RR

GOOD = """
system: emu
references:
  PingPong:
    p:
      "*":
        latency: {value: 10, lower: -0.5, upper: 0.1, unit: us}
      interconnect=fab0:
        latency: {value: 20, lower: null, upper: 0.1, unit: us}
      interconnect=fab0,msg_bytes=8:
        latency: {value: 5, lower: -0.2, upper: 0.1, unit: us}
        bandwidth: {value: 1.5, lower: -0.1, upper: null, unit: MB/s}
"""


def _write(tmp_path, text, name='emu.yaml'):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_most_specific_entry_wins(tmp_path):
    refs = R.load(_write(tmp_path, GOOD), 'emu')
    key, m = refs.lookup('PingPong', 'p', {'interconnect': 'fab0',
                                           'msg_bytes': 8, 'ppn': 1})
    assert key == 'interconnect=fab0,msg_bytes=8'
    assert m == {'latency': (5.0, -0.2, 0.1, 'us'),
                 'bandwidth': (1.5, -0.1, None, 'MB/s')}
    key, m = refs.lookup('PingPong', 'p', {'interconnect': 'fab0',
                                           'msg_bytes': 1000000})
    assert key == 'interconnect=fab0' and m['latency'][0] == 20.0
    key, _ = refs.lookup('PingPong', 'p', {'interconnect': 'fab1'})
    assert key == '*'


def test_no_reference(tmp_path):
    refs = R.load(_write(tmp_path, GOOD), 'emu')
    assert refs.lookup('Other', 'p', {}) is None
    assert refs.lookup('PingPong', 'q', {}) is None
    assert R.load(str(tmp_path / 'missing.yaml')) is None


def test_format_and_parse_axes():
    assert R.format_axes({'ppn': 2, 'interconnect': 'fab0'}) == \
        'interconnect=fab0,ppn=2'
    assert R.parse_axes('interconnect=fab0, ppn=2') == \
        {'interconnect': 'fab0', 'ppn': '2'}
    assert R.format_axes({}) == '*' and R.parse_axes('*') == {}


@pytest.mark.parametrize('text,key,problem', [
    ('references: [1, 2]', 'references', 'must map check names'),
    ('references:\n  A:\n    p:\n      "x=1":\n        m: {value: fast, '
     'lower: -0.1, upper: 0.1, unit: us}',
     'references.A.p.x=1.m.value', 'must be a number'),
    ('references:\n  A:\n    p:\n      "x=1":\n        m: {value: 1, '
     'lower: 0.1, upper: 0.1, unit: us}',
     'references.A.p.x=1.m.lower', 'must be a number <= 0'),
    ('references:\n  A:\n    p:\n      "x=1":\n        m: {value: 1, '
     'lower: -0.1, upper: -0.1}',
     'references.A.p.x=1.m.upper', 'must be a number >= 0'),
    ('references:\n  A:\n    p:\n      "x=1":\n        m: {value: 1, '
     'lower: -0.1}',
     'references.A.p.x=1.m', "missing field 'upper'"),
    ('references:\n  A:\n    p:\n      "x=1":\n        m: {value: 1, '
     'lower: -0.1, upper: 0.1, tolerance: 3}',
     'references.A.p.x=1.m', 'unknown field(s) tolerance'),
    ('references:\n  A:\n    p:\n      "x1":\n        m: {value: 1, '
     'lower: -0.1, upper: 0.1}',
     'references.A.p.x1', 'axis=value pairs'),
    ('references:\n  A:\n    p:\n      "x=1,y=2":\n        m: {value: 1, '
     'lower: -0.1, upper: 0.1}\n      "y=2,x=1":\n        m: {value: 1, '
     'lower: -0.1, upper: 0.1}',
     'references.A.p.y=2,x=1', 'same point'),
    ('references:\n  A:\n    p:\n      "x=1":\n        m: {value: 1, '
     'lower: -0.1, upper: 0.1, direction: up}',
     'references.A.p.x=1.m.direction', 'must be one of'),
    ('references:\n  A:\n    p: 3', 'references.A.p', 'must map point'),
    ('system: other\nreferences: {}', 'system', "expected 'emu'"),
    ('bogus: 1', 'bogus', 'unknown top-level key'),
    ('references:\n  A: [\n', 'line', 'not valid YAML'),
])
def test_malformed_file_names_file_and_key(tmp_path, text, key, problem):
    path = _write(tmp_path, text)
    with pytest.raises(R.ReferenceFileError) as err:
        R.load(path, 'emu')

    msg = str(err.value)
    assert path in msg
    assert key in msg
    assert problem in msg


def test_status_of_perflog_fields():
    assert R.status_of(0, None, None) == R.NO_REFERENCE
    assert R.status_of(None, None, None) == R.NO_REFERENCE
    assert R.status_of(10.0, -0.1, None) == 'checked'


class _Part:
    name = 'p'
    fullname = 'emu:p'


class _Sys:
    name = 'emu'


class _Logger:
    def __init__(self):
        self.lines = []

    def info(self, msg):
        self.lines.append(msg)


def _fake_test(**axes):
    from reframe.core.parameters import TestParam
    params = {k: TestParam([v]) for k, v in axes.items()}

    class Space:
        pass

    class PingPong:
        param_space = Space()
        param_space.params = params
        current_system = _Sys()
        current_partition = _Part()
        display_name = 'PingPong %...'
        reference = {}
        reference_status = ''

        def __init__(self):
            self.logger = _Logger()
            for k, v in axes.items():
                setattr(self, k, v)

    return PingPong()


def test_apply_sets_reference_or_says_no_reference(tmp_path, monkeypatch):
    monkeypatch.setenv('CG_REFERENCES_DIR', str(tmp_path))
    _write(tmp_path, GOOD)
    t = _fake_test(interconnect='fab0', msg_bytes=8)
    status = RR.apply(t)
    assert status.endswith('emu.yaml#PingPong.p.interconnect=fab0,'
                           'msg_bytes=8')
    assert t.reference == {'emu:p': {'latency': (5.0, -0.2, 0.1, 'us'),
                                     'bandwidth': (1.5, -0.1, None,
                                                   'MB/s')}}
    t = _fake_test(interconnect='fab0', msg_bytes=8)
    type(t).__name__ = 'Other'
    assert RR.apply(t) == R.NO_REFERENCE
    assert t.reference_status == R.NO_REFERENCE
    assert 'no reference' in t.logger.lines[0]


def test_apply_malformed_is_a_config_error(tmp_path, monkeypatch):
    from reframe.core.exceptions import ConfigError
    monkeypatch.setenv('CG_REFERENCES_DIR', str(tmp_path))
    path = _write(tmp_path, 'references:\n  PingPong: 3\n')
    with pytest.raises(ConfigError) as err:
        RR.apply(_fake_test(interconnect='fab0'))

    assert path in str(err.value) and 'references.PingPong' in str(err.value)


class _Judged:
    """A test of a partition whose extras say ``improvements``."""

    def __init__(self, policy=None):
        part = type('Part', (), {'extras': {} if policy is None else
                                 {'improvements': policy}})
        self.current_partition = part()


MEMRANDOM = {'bw': (1000.0, -0.5, 1.5, 'MB/s'),
             'ratio': (2.0, -0.5, 0.5, 'x')}
NOISE = {'slowdown_k': (0.5, -0.5, 0.5, 'x')}


def test_improvements_are_reported_by_default_not_failed():
    t = _Judged()
    # bandwidth: higher is better, its upper bound opened; the ratio of
    # times: lower is better, its lower bound opened
    assert RR.judged_bounds(t, 'MemoryRandom', MEMRANDOM) == {
        'bw': (1000.0, -0.5, None, 'MB/s'), 'ratio': (2.0, None, 0.5, 'x')}
    assert t._cg_better_bounds == {'bw': (-0.5, 1.5), 'ratio': (-0.5, 0.5)}
    # a slowdown is lower-is-better: a quieter machine passes
    assert RR.judged_bounds(t, 'OsNoise', NOISE) == {
        'slowdown_k': (0.5, None, 0.5, 'x')}


def test_improvements_fail_where_the_site_says_so():
    t = _Judged('fail')
    assert RR.judged_bounds(t, 'MemoryRandom', MEMRANDOM) == MEMRANDOM
    assert t._cg_better_bounds == {}


def test_undeclared_metric_keeps_both_bounds():
    t = _Judged()
    both = {'latency_ratio': (1.0, -0.2, 0.2, 'x')}
    assert RR.judged_bounds(t, 'PingPongVsImb', both) == both


def test_improvement_is_named_with_its_bound():
    from clustergate.rfm.point import refmetrics
    # MemoryRandom bandwidth +318 %: the line the test's log gets
    assert refmetrics._beyond([4180.0, 1000.0, -0.5, 1.5, 'MB/s', None]) == \
        '= 4180 MB/s, +318.0 % of reference 1000 (bound +150 %)'
    assert refmetrics._beyond([0.002, 0.5, -0.5, 0.5, 'x', None]) == \
        '= 0.002 x, -99.6 % of reference 0.5 (bound -50 %)'
    assert refmetrics._beyond([1100.0, 1000.0, -0.5, 1.5, 'MB/s', None]) == ''
