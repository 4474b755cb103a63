"""The link matrix's retest driver starts inside the job, beside the
matrix, on 2 busy cores: what it imports is CPU taken from the matrix.
It must not load the file side of baselines (YAML, the reference files,
the results store) nor the parsers of other benchmarks."""

import json
import subprocess
import sys

import pytest

import clustergate.parsers as parsers

#: module prefixes the driver has no use for
NOT_IN_DRIVER = ('yaml', 'ruamel', 'clustergate.refs', 'clustergate.results',
                 'clustergate.site', 'clustergate.parsers.npb_output',
                 'clustergate.parsers.imb_output', 'clustergate.parsers.osu_output',
                 'clustergate.parsers.stream_output', 'clustergate.parsers.hpcc_output',
                 'reframe', 'matplotlib')


def modules_after(stmt):
    out = subprocess.run(
        [sys.executable, '-c', f'{stmt}\nimport sys, json\n'
         'print(json.dumps(sorted(sys.modules)))'],
        capture_output=True, text=True, check=True, timeout=60).stdout
    return json.loads(out)


def test_the_retest_driver_imports_only_what_it_judges_with():
    mods = modules_after('import clustergate.links.retest_driver')
    assert 'clustergate.links.judge' in mods
    assert 'clustergate.parsers.cgoutput' in mods
    heavy = [m for m in mods
             if any(m == p or m.startswith(p + '.') for p in NOT_IN_DRIVER)]
    assert heavy == []


def test_the_parsers_package_imports_each_parser_on_first_use():
    mods = modules_after('import clustergate.parsers')
    assert 'clustergate.parsers.npb_output' not in mods
    mods = modules_after('from clustergate.parsers import parse_npb')
    assert 'clustergate.parsers.npb_output' in mods
    assert 'clustergate.parsers.osu_output' not in mods


@pytest.mark.parametrize('name', ['parse_npb', 'parse_imb', 'parse_osu',
                                  'parse_stream', 'parse_hpcc'])
def test_every_parser_is_reachable_from_the_package(name):
    sub = name[len('parse_'):]
    assert getattr(parsers, name).__module__ == f'clustergate.parsers.{sub}_output'


def test_an_unknown_parser_is_an_attribute_error():
    with pytest.raises(AttributeError, match='parse_nope'):
        parsers.parse_nope
    with pytest.raises(ImportError):
        from clustergate.parsers import parse_nope  # noqa: F401
