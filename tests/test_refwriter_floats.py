"""Every float the reference writer prints reads back as the same float,
in YAML 1.1 (PyYAML: what validates the files) and YAML 1.2 (ruamel: what
rewrites them). A MAD of 6e-06 printed as ``6e-06`` read back as the
string '6e-06' and `clustergate baseline --links` ended in a traceback."""

import io
import math
import random
import sys

import pytest
import yaml
from ruamel.yaml import YAML

from clustergate import cli
from clustergate.refs import refwriter
from clustergate.links import linkbaselines as lb
from clustergate.commands import baseline_cmd

#: tiny, huge, negative exponents, the edges of the double range
EDGES = [6e-06, 1e-05, 3.2e-07, -3e-07, 1e-300, 5e-324, 2.2250738585072014e-308,
         1.7976931348623157e+308, 1e+20, -1e+16, 1.5e+16, 1e15, 0.1, 0.0004,
         123456789.123, 0.30000000000000004, 1 / 3, -2.5, 1e-4]


def read_both(text):
    return yaml.safe_load(text), YAML().load(text)


def assert_same(got, want):
    assert isinstance(got, (int, float)) and not isinstance(got, bool), \
        f'{want!r} read back as {got!r}'
    assert got == want or (math.isnan(want) and math.isnan(got)), \
        f'{want!r} read back as {got!r}'


@pytest.mark.parametrize('x', EDGES)
def test_float_text_round_trips_at_the_edges(x):
    for data in read_both(refwriter.dump({'v': {'x': x}}, flow_depth=1)):
        assert_same(data['v']['x'], x)


def test_special_values():
    for x in (math.inf, -math.inf, math.nan):
        for data in read_both(refwriter.dump({'x': x})):
            assert_same(data['x'], x)


def random_floats(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        mant = rng.uniform(1, 10) * rng.choice((1, -1))
        out.append(mant * 10.0 ** rng.randint(-307, 307))
        # shortest reprs too (e.g. 6e-06, 2e+20): the forms that broke
        out.append(float(f'{rng.randint(1, 9)}e{rng.randint(-320, 308)}'))
        out.append(rng.getrandbits(64) / 2 ** rng.randint(0, 80))
    return [x for x in out if math.isfinite(x)]


def test_many_floats_round_trip_in_one_file():
    values = random_floats(2000, seed=20)
    doc = {'v': {f'k{i}': {'x': x} for i, x in enumerate(values)}}
    text = refwriter.dump(doc, flow_depth=3)
    for data in read_both(text):
        for i, x in enumerate(values):
            assert_same(data['v'][f'k{i}']['x'], x)


def test_written_into_a_reference_file_round_trips():
    # the reference file's writer (update) prints through the same path
    values = random_floats(300, seed=21) + EDGES
    table = {('C', 'p', 'num_nodes=1'): {
        f'm{i}': {'value': x, 'lower': -0.1, 'upper': 0.1, 'unit': 'x',
                  'mad': abs(x)} for i, x in enumerate(values)}}
    text = refwriter.update('', 'sys', table)
    for data in read_both(text):
        point = data['references']['C']['p']['num_nodes=1']
        for i, x in enumerate(values):
            assert_same(point[f'm{i}']['value'], x)
            assert_same(point[f'm{i}']['mad'], abs(x))


POINT = '%num_nodes=9 %ppn=1 %interconnect=fab0 %msg_bytes=4000000'


def perflog(values):
    # the perflog format of the LinkMatrix check (one node link; values
    # given: three nights whose figure differs by a few millionths)
    return ''.join(
        f'2026-11-2{i}T23:0{i}:00|reframe 4.10.4|LinkMatrix {POINT}|openmpi|'
        f'n[1-9]|{100 + i}|pass|x|peer_n4_both={v!r}|ref=0|lower=None|'
        f'upper=None|unit=x|peer_n5_both={1e6 * v!r}|ref=0|lower=None|'
        f'upper=None|unit=x|\n' for i, v in enumerate(values, 1))


def test_baseline_links_with_a_tiny_spread_writes_a_file_that_loads(
        tmp_path):
    logs = tmp_path / 'perflogs' / 'emucluster' / 'emu'
    logs.mkdir(parents=True)
    (logs / 'LinkMatrix.log').write_text(perflog(
        [1.000012, 1.000006, 1.000000]))
    out = tmp_path / 'links' / 'emucluster.yaml'
    args = cli.build_parser().parse_args(
        ['baseline', '--links', '--system', 'emucluster', '--min-runs', '3',
         '--perflogs', str(tmp_path / 'perflogs'), '-o', str(out)])
    err = io.StringIO()
    assert baseline_cmd.run(args, out=sys.stdout, err=err) == 0, \
        err.getvalue()
    got = lb.load(str(out), 'emucluster')
    _, st = got.lookup('LinkMatrix', 'emu', {
        'environ': 'openmpi', 'interconnect': 'fab0', 'msg_bytes': 4000000,
        'num_nodes': 9, 'ppn': 1})
    assert st['peer_n4_both'].mad == pytest.approx(6e-06)
    assert st['peer_n5_both'].mad == pytest.approx(6.0)
    # the file keeps 4 significant digits of a median (3 of a MAD)
    assert st['peer_n5_both'].median == 1000000
    assert st['peer_n4_both'].median == 1.0
