"""Every way a job dies is named in one line: real outputs of the real
programs run wrongly (tests/fixtures/job-failures, see its README), read by
clustergate.results.launchlog and by the sanity functions of the checks (the
base PointTest: the parser's message plus the job's stderr)."""

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from clustergate.results import launchlog
from conftest import fixture_text
from rfm_loader import family_checks, pick


def failure(name):
    return fixture_text('job-failures', name)


@pytest.mark.parametrize('name, expected', [
    # kill -SEGV of rank 1 of a running mpirun job: OpenMPI's own report
    # and mpirun's say the same; mpirun's names the rank
    ('ompi-rank-segv.err',
     'rank 1 on vm was killed by signal 11 (Segmentation fault)'),
    # kill -KILL (what the OOM killer does): only mpirun's line is left
    ('ompi-rank-sigkill.err', 'rank 1 on vm was killed by signal 9 (Killed)'),
    ('ompi-not-enough-slots.err',
     'OpenMPI has not enough slots for the 4 processes requested (more '
     'ranks than cores: fewer ranks, or --oversubscribe)'),
    ('impi-imb-no-ld-library-path.err',
     'IMB-MPI1 cannot start: shared library libmpi.so.12: cannot open '
     'shared object file: No such file or directory'),
    ('cg-contention-1-rank.err',
     'cg_contention refused to run: needs at least 2 ranks, got 1; '
     'rank 0 called MPI_Abort (error code 2)'),
    ('cg-linkmatrix-1-node.err',
     'cg_linkmatrix refused to run: needs one rank per node, got 2 ranks '
     'on 1 nodes; rank 0 called MPI_Abort (error code 2)'),
    ('cg-linkmatrix-1-rank.err',
     'cg_linkmatrix refused to run: needs at least 2 ranks (one per node), '
     'got 1; rank 0 called MPI_Abort (error code 2)'),
    ('npb3.4.1-cg.S.3-strict.err', 'rank 0 called MPI_Abort (error code 16)'),
    ('stream.f-omp-stack-segv.err', 'stream_f.omp died of Segmentation fault'),
    # bash puts "(core dumped)" between the status and the command: the
    # program's name is the word after it
    ('bash-segv-core-dumped.err', 'segv_prog died of Segmentation fault'),
])
def test_diagnose_real_failures(name, expected):
    assert launchlog.diagnose(failure(name)) == expected


# -- through the checks' sanity (PointTest.explained) ----------------------

def _feed(monkeypatch, check, stdout, stderr='', exit_code=None, tasks=2):
    monkeypatch.setattr(check, 'num_tasks', tasks)
    monkeypatch.setattr(check, 'stdout_text', lambda: stdout, raising=False)
    monkeypatch.setattr(check, 'stderr_text', lambda: stderr, raising=False)
    monkeypatch.setattr(check, 'job_exit_code', lambda: exit_code,
                        raising=False)
    return check


def _sanity_message(check):
    with pytest.raises(SanityError) as err:
        sn.evaluate(check.validate())

    return str(err.value)


def _fixture(name):
    return failure(name) if name else ''


# (family, check, stdout fixture, stderr fixture, exit code, tasks):
# the sanity message, in full or (``...`` first) its end
_SANITY_CASES = {
    'killed rank named': (
        ('contention', 'PingPongDistance', None, 'ompi-rank-sigkill.err',
         137, 2),
        'cg_contention: no CG_DONE completion line: the program did not '
        'finish (crashed, killed or timed out?) [job stderr: rank 1 on vm '
        'was killed by signal 9 (Killed)]'),
    "our program's refusal named": (
        ('contention', 'PingPongDistance', None, 'cg-contention-1-rank.err',
         2, 1),
        '...[job stderr: cg_contention refused to run: needs at least 2 '
        'ranks, got 1; rank 0 called MPI_Abort (error code 2)]'),
    # the wrong executable (cg_stats_cli) ran to its end: say that, not
    # "did not finish"
    'garbage from a program that exited 0': (
        ('contention', 'PingPongDistance', 'cg-stats-cli-as-program.out',
         None, 0, 2),
        "cg_contention exited 0 but its stdout is not cg_contention output: "
        "no CG line in 1 line(s), first: 'n=3 kept=3 mean=2 median=2 min=1 "
        "max=3 filtered=0'"),
    'imb: a wrong option that exited 0': (
        ('imb', 'ImbPingPong', 'impi-imb-list.out', None, 0, 2),
        "IMB output has no '# Benchmarking <name>' block (output ends with: "
        "'Uniband (non-default)') [the job exited 0: the program ended "
        "normally]"),
    'imb refuses PingPong on one process': (
        ('imb', 'ImbPingPong', 'impi-imb-pingpong-1-process.out', None, 0,
         1),
        'IMB refused PingPong: invalid for 1 process(es) [the job exited 0: '
        'the program ended normally]'),
    'imb: loader error': (
        ('imb', 'ImbPingPong', None, 'impi-imb-no-ld-library-path.err', 127,
         2),
        'IMB output is empty [job stderr: IMB-MPI1 cannot start: shared '
        'library libmpi.so.12: cannot open shared object file: No such file '
        'or directory]'),
    "npb: the strict mode's abort is the headline": (
        ('npb', 'NpbCG', 'npb3.4.1-cg.S.3-strict.out',
         'npb3.4.1-cg.S.3-strict.err', 16, 3),
        'NPB aborted in strict process-count mode: 3 processes, it expects '
        'a power-of-two number of processes (such as 2); '
        'NPB_NPROCS_STRICT=off runs it on 2 active processes [job stderr: '
        'rank 0 called MPI_Abort (error code 16)]'),
    'fortran stream: stack segfault named': (
        ('stream', 'Stream', None, 'stream.f-omp-stack-segv.err', 139, 1),
        "STREAM output is empty [job stderr: stream_f.omp died of "
        "Segmentation fault] (a segfault before any output: STREAM's arrays "
        "do not fit the stack, as in stream.f built with OpenMP; raise the "
        "limit: ulimit -s unlimited)"),
    # OSU prints its refusal on stderr and exits 1 with an empty stdout
    'osu_latency refuses 3 ranks in its own words': (
        ('osu', 'OsuLatency', None, 'omb7.4-osu_latency-np3.err', 1, 3),
        "osu_latency refused to run: 'This test requires exactly two "
        "processes' (the job had 3 rank(s) on 1 node(s))"),
    'osu_allreduce refuses 1 rank in its own words': (
        ('osu', 'OsuAllreduce', None, 'omb7.4-osu_allreduce-np1.err', 1, 1),
        "osu_allreduce refused to run: 'This test requires at least two "
        "processes' (the job had 1 rank(s) on 1 node(s))"),
    # a launcher that merges stderr into stdout: the refusal is still
    # quoted, not "not an OSU output ... ends with '-----'"
    'osu refusal in a merged stdout': (
        ('osu', 'OsuLatency', 'omb7.4-osu_latency-np3.err', None, 1, 3),
        "osu_latency refused to run: 'This test requires exactly two "
        "processes' (the job had 3 rank(s) on 1 node(s))"),
}

#: the case picked among a check's variants, where the first will not do
_PICK = {'NpbCG': {'npb_class': 'A'}}


@pytest.mark.parametrize('case', _SANITY_CASES)
def test_sanity_message_names_the_failure(monkeypatch, case):
    (family, name, out, err, code, tasks), expected = _SANITY_CASES[case]
    check = pick(family_checks(family), name, **_PICK.get(name, {}))
    message = _sanity_message(_feed(monkeypatch, check, _fixture(out),
                                    _fixture(err), exit_code=code,
                                    tasks=tasks))
    if expected.startswith('...'):
        assert message.endswith(expected[3:])
    else:
        assert message == expected


def test_garbage_exit_code_unknown_is_not_called_unfinished(monkeypatch):
    c = _feed(monkeypatch,
              pick(family_checks('contention'), 'PingPongDistance'),
              failure('cg-stats-cli-as-program.out'), exit_code=None)
    msg = _sanity_message(c)
    assert msg.startswith('cg_contention: its stdout is not cg_contention '
                          'output: no CG line in 1 line(s)')
    assert 'did not finish' not in msg


def test_fortran_stream_valid_run_passes(monkeypatch):
    c = _feed(monkeypatch, pick(family_checks('stream'), 'Stream'),
              failure('stream.f-omp2.out'), exit_code=0, tasks=1)
    monkeypatch.setattr(c, 'threads', 2)
    assert sn.evaluate(c.validate()) is True
    assert sn.evaluate(c.rate('Triad')) == 5920.1
