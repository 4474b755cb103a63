"""Bad input to the commands: one line on stderr naming the cause and a
non-zero exit status (2: bad input or usage; 1 where the command checks
the thing that is bad, as sweep checks the configuration), never a
traceback. Each case runs the command as a user would, in a subprocess."""

import os
import subprocess
import sys

import pytest

from clustergate import cli
from clustergate.commands import sources
from clustergate.results import times
from conftest import ROOT

CG = ['-m', 'clustergate.cli']
LAB = ['-m', 'clustergate_lab.cli']


@pytest.fixture
def files(tmp_path):
    return bad_inputs(tmp_path)


def bad_inputs(tmp_path):
    """Inputs that are not what the commands take, in ``tmp_path``."""
    (tmp_path / 'not.db').write_text('not a database\n')
    (tmp_path / 'results.db').write_bytes(b'SQLite format 3\x00' + bytes(84))
    (tmp_path / 'site.yaml').write_text(
        open(os.path.join(ROOT, 'docs', 'examples',
                          'cost-1000-nodes.yaml')).read())
    (tmp_path / 'raises.py').write_text(
        "raise ValueError('partition mysite:cpu: sweep.nodes must be a '\n"
        "                 'list of node counts')\n")
    (tmp_path / 'empty.db').write_bytes(b'')
    import sqlite3
    with sqlite3.connect(tmp_path / 'foreign.db') as conn:
        conn.execute('CREATE TABLE photos (id INTEGER, path TEXT)')
    (tmp_path / 'run.json').write_text(open(os.path.join(
        ROOT, 'tests', 'fixtures', 'reports',
        'hpcc-ci-localhost.report.json')).read())
    (tmp_path / 'syntax.py').write_text('site_configuration = {\n')
    (tmp_path / 'empty.py').write_text('systems = []\n')
    for name, text in (('json', '{oops'), ('list', '[1, 2]'),
                       ('keys', '[{"level": 90, "colour": "red"}]')):
        (tmp_path / name).mkdir()
        (tmp_path / name / 'runs.json').write_text(text)
    return tmp_path


# (entry, arguments, exit status, what the one line names); {d}: the files
CASES = {
    'sweep-config-raises': (CG, 'sweep -C {d}/raises.py', 1,
                            ['{d}/raises.py', 'sweep.nodes must be a list']),
    'sweep-config-syntax': (CG, 'sweep -C {d}/syntax.py', 1,
                            ['{d}/syntax.py', 'SyntaxError']),
    'sweep-config-empty': (CG, 'sweep -C {d}/empty.py', 1,
                           ['{d}/empty.py', 'no site_configuration']),
    'sweep-no-config': (CG, 'sweep -C /nonexistent.py', 2,
                        ['/nonexistent.py', 'no such']),
    'npb-missing': (CG, 'npb {d}/missing.json', 2,
                    ['{d}/missing.json', 'No such file']),
    'npb-not-json': (CG, 'npb {d}/not.db', 2,
                     ['{d}/not.db', 'not a JSON run report']),
    'linkmatrix-missing': (CG, 'linkmatrix {d}/missing.csv', 2,
                           ['{d}/missing.csv', 'No such file']),
    'linkmatrix-not-csv': (CG, 'linkmatrix {d}/site.yaml', 2,
                           ['{d}/site.yaml', 'not a link matrix CSV']),
    'baseline-check-regex': (CG, 'baseline --check [', 2,
                             ['--check', "'['", 'regular expression']),
    'history-check-regex': (CG, 'history --check (', 2,
                            ['--check', "'('", 'regular expression']),
    'baseline-min-runs-0': (CG, 'baseline --min-runs 0', 2,
                            ['--min-runs', "'0'"]),
    'history-since-garbage': (CG, 'history --since yesterday', 2,
                              ['--since', "'yesterday'"]),
    'history-db-not-sqlite': (CG, 'history --db {d}/not.db', 2,
                              ['{d}/not.db', 'not an SQLite']),
    'baseline-db-not-sqlite': (CG, 'baseline --db {d}/not.db', 2,
                               ['{d}/not.db', 'not an SQLite']),
    'report-db-not-sqlite': (CG, 'report --db {d}/not.db -o {d}/r.html', 2,
                             ['{d}/not.db', 'not an SQLite']),
    'report-o-directory': (CG, 'report -o {d}', 2,
                           ['-o {d} is a directory', '{d}/index.html']),
    # a file it cannot write (site init into a checkout it may not write)
    'report-o-unwritable': (CG, 'report --json {d}/run.json -o '
                            '/proc/nosuch/r.html', 2,
                            ['clustergate report: No such file',
                             '/proc/nosuch']),
    'score-db-not-sqlite': (CG, 'score --db {d}/not.db', 2,
                            ['{d}/not.db', 'not an SQLite']),
    'timing-db-not-sqlite': (CG, 'timing --db {d}/not.db', 2,
                             ['{d}/not.db', 'not an SQLite']),
    'cost-measured-db': (CG, 'cost {d}/site.yaml --measured {d}/results.db',
                         2, ['{d}/results.db', 'not a JSON run report']),
    # the results database: empty (0 bytes), another program's
    **{f'{cmd}-db-empty': (CG, f'{cmd} --db {{d}}/empty.db{extra}', 2,
                           ['{d}/empty.db', 'empty file (0 bytes)'])
       for cmd, extra in (('report', ' -o {d}/r.html'), ('timing', ''),
                          ('score', ''), ('history', ''), ('baseline', ''))},
    **{f'{cmd}-db-foreign': (CG, f'{cmd} --db {{d}}/foreign.db{extra}', 2,
                             ['{d}/foreign.db', "not ReFrame's results "
                              'database', 'photos'])
       for cmd, extra in (('report', ' -o {d}/r.html'), ('timing', ''),
                          ('score', ''), ('history', ''), ('baseline', ''))},
    # names that select nothing: the line lists what they could name
    **{f'{cmd}-system-unknown': (
        CG, f'{cmd} --json {{d}}/run.json --system nosuch{extra}', 2,
        ['--system nosuch: no such system', '{d}/run.json',
         '(systems: localhost)'])
       for cmd, extra in (('report', ' -o {d}/r.html'), ('history', ''),
                          ('baseline', ' --dry-run'))},
    **{f'{cmd}-partition-unknown': (
        CG, f'{cmd} --json {{d}}/run.json --system localhost:gpu{extra}', 2,
        ['system localhost has no partition gpu', '(partitions: '
         'localhost:local)'])
       for cmd, extra in (('report', ' -o {d}/r.html'), ('history', ''),
                          ('baseline', ' --dry-run'))},
    **{f'{cmd}-check-unknown': (
        CG, f'{cmd} --json {{d}}/run.json --check NoSuchCheck{extra}', 2,
        ['--check NoSuchCheck: matches no check', 'HpccHpl'])
       for cmd, extra in (('report', ' -o {d}/r.html'), ('history', ''),
                          ('baseline', ' --dry-run'))},
    **{f'{cmd}-session-unknown': (
        CG, f'{cmd} --json {{d}}/run.json --session 0000{extra}', 2,
        ['--session 0000: no session', '(1 session(s); the latest: '])
       for cmd, extra in (('report', ' -o {d}/r.html'), ('timing', ''),
                          ('score', ' -o {d}/s.json'))},
    'baseline-links-partition': (
        CG, 'baseline --json {d}/run.json --links --system localhost:local',
        2, ['--links --system localhost:local', 'one file a system',
            '--system localhost']),
    'baseline-validate-missing': (CG, 'baseline --validate {d}/none.yaml', 2,
                                  ['--validate {d}/none.yaml',
                                   'no such file']),
    'sweep-system-unknown': (CG, 'sweep --system nosuch', 2,
                             ['--system nosuch: no such system',
                              'localhost']),
    'lab-table-not-json': (LAB, 'sensitivity table --workdir {d}/json', 2,
                           ['{d}/json/runs.json', 'JSONDecodeError']),
    'lab-table-not-runs': (LAB, 'sensitivity table --workdir {d}/list', 2,
                           ['{d}/list/runs.json', 'not a record']),
    'lab-table-bad-keys': (LAB, 'sensitivity table --workdir {d}/keys', 2,
                           ['{d}/keys/runs.json', 'colour']),
    'lab-table-no-runs': (LAB, 'sensitivity table --workdir {d}/none', 2,
                          ['{d}/none/runs.json', 'no such file']),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_bad_input_is_one_line_and_an_exit_status(files, case):
    entry, argv, status, named = CASES[case]
    argv = [a.format(d=files) for a in argv.split()]
    cp = subprocess.run([sys.executable, *entry, *argv], capture_output=True,
                        text=True, cwd=files, timeout=300,
                        env=dict(os.environ, SLURM_CONF=''))
    assert 'Traceback' not in cp.stderr + cp.stdout, cp.stderr
    assert cp.returncode == status, (cp.returncode, cp.stderr)
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1, cp.stderr
    for word in named:
        assert word.format(d=files) in lines[0], lines[0]
    if 'site.yaml --measured' in CASES[case][1]:
        # the report is at fault, not the site description
        assert f'{files}/site.yaml' not in lines[0]


@pytest.mark.parametrize('entry,prog', [(CG, 'clustergate'),
                                        (LAB, 'clustergate-lab')])
def test_version(entry, prog):
    cp = subprocess.run([sys.executable, *entry, '--version'],
                        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.strip() == f'{prog} {cli.version()}'
    assert cli.version()[0].isdigit()


def test_every_subcommand_documents_its_exit_status():
    top = cli.build_parser()
    sub = next(a for a in top._actions
               if a.__class__.__name__ == '_SubParsersAction')
    for name, parser in sub.choices.items():
        assert sources.EXIT_CODES in parser.format_help(), name
        assert f'clustergate {name}' in parser.epilog, name


NOW = 1795521600.0      # 2026-11-24T12:00:00Z


@pytest.mark.parametrize('text,iso', [
    ('now', '2026-11-24T12:00:00Z'),
    ('now-1d', '2026-11-23T12:00:00Z'),
    ('now-12h', '2026-11-24T00:00:00Z'),
    ('now-2w', '2026-11-10T12:00:00Z'),
    ('now-30m', '2026-11-24T11:30:00Z'),
    ('2026-11-20', '2026-11-20T00:00:00Z'),
    ('20261120T0000', '2026-11-20T00:00:00Z'),
    ('20261120T0630-1d', '2026-11-19T06:30:00Z'),
    ('2026-11-20T20:00+09:00', '2026-11-20T11:00:00Z'),
])
def test_since_takes_iso_and_reframe_times(text, iso):
    assert times.iso_utc(times.point_in_time(text, NOW).timestamp()) == iso


@pytest.mark.parametrize('text', ['yesterday', 'now-1x', '-1d', 'now-'])
def test_since_refuses_what_is_not_a_time(text):
    with pytest.raises(ValueError):
        times.point_in_time(text, NOW)


def test_docs_list_every_subcommand_with_an_example():
    from clustergate import commands
    from clustergate_lab import cli as lab_cli

    with open(os.path.join(ROOT, 'docs', 'cli.md')) as fp:
        doc = fp.read()
    names = [f'clustergate {n}' for n in commands.COMMANDS] + \
        [f'clustergate-lab {n}' for n in lab_cli.COMMANDS]
    for name in names:
        assert f'## `{name}`' in doc, name
        assert f'    {name} ' in doc or f'    {name}\n' in doc, name


@pytest.mark.parametrize('cmd', ['report', 'history', 'baseline'])
def test_no_runs_anywhere_names_both_defaults(files, cmd):
    """Given no input, where neither the results database nor the perflog
    directory exists (a new checkout before its first session): one line
    naming both, not the errno of the last one tried or a silent 0 runs."""
    env = dict(os.environ, SLURM_CONF='',
               CG_RESULTS_DB=str(files / 'none.db'),
               CG_PERFLOG_DIR=str(files / 'no-perflogs'))
    cp = subprocess.run([sys.executable, *CG, cmd], capture_output=True,
                        text=True, cwd=files, timeout=300, env=env)
    assert 'Traceback' not in cp.stderr + cp.stdout, cp.stderr
    assert cp.returncode == 2, (cp.returncode, cp.stdout, cp.stderr)
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1, cp.stderr
    assert f'clustergate {cmd}: error: no runs to read' in lines[0]
    assert f'{files}/none.db' in lines[0] and \
        f'{files}/no-perflogs' in lines[0], lines[0]
