"""Every way a job dies is named in one line: real outputs of the real
programs run wrongly (tests/fixtures/job-failures, see its README), read by
clustergate.launchlog and by the sanity functions of the checks (the
JobOutput mixin: the parser's message plus the job's stderr)."""

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from clustergate import launchlog
from conftest import fixture_text
from rfm_loader import load_checks, pick


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
])
def test_diagnose_real_failures(name, expected):
    assert launchlog.diagnose(failure(name)) == expected


# -- through the checks' sanity (JobOutput) ----------------------------------

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


@pytest.fixture(scope='module')
def contention():
    return load_checks('checks/contention/contention_checks.py')


@pytest.fixture(scope='module')
def imb():
    return load_checks('checks/imb/imb_checks.py')


@pytest.fixture(scope='module')
def npb():
    return load_checks('checks/npb/npb_checks.py')


@pytest.fixture(scope='module')
def stream():
    return load_checks('checks/stream/stream_checks.py')


def test_killed_rank_is_named_in_the_sanity_message(monkeypatch, contention):
    c = _feed(monkeypatch, pick(contention, 'PingPongDistance'), '',
              failure('ompi-rank-sigkill.err'), exit_code=137)
    assert _sanity_message(c) == (
        'cg_contention: no CG_DONE completion line: the program did not '
        'finish (crashed, killed or timed out?) [job stderr: rank 1 on vm '
        'was killed by signal 9 (Killed)]')


def test_our_programs_refusal_is_named(monkeypatch, contention):
    c = _feed(monkeypatch, pick(contention, 'PingPongDistance'), '',
              failure('cg-contention-1-rank.err'), exit_code=2, tasks=1)
    assert _sanity_message(c).endswith(
        '[job stderr: cg_contention refused to run: needs at least 2 '
        'ranks, got 1; rank 0 called MPI_Abort (error code 2)]')


def test_garbage_from_a_program_that_exited_0(monkeypatch, contention):
    # the wrong executable (cg_stats_cli) ran to its end: say that, not
    # "did not finish"
    c = _feed(monkeypatch, pick(contention, 'PingPongDistance'),
              failure('cg-stats-cli-as-program.out'), exit_code=0)
    assert _sanity_message(c) == (
        "cg_contention exited 0 but its stdout is not cg_contention output: "
        "no CG line in 1 line(s), first: 'n=3 kept=3 mean=2 median=2 min=1 "
        "max=3 filtered=0'")


def test_garbage_exit_code_unknown_is_not_called_unfinished(monkeypatch,
                                                            contention):
    c = _feed(monkeypatch, pick(contention, 'PingPongDistance'),
              failure('cg-stats-cli-as-program.out'), exit_code=None)
    msg = _sanity_message(c)
    assert msg.startswith('cg_contention: its stdout is not cg_contention '
                          'output: no CG line in 1 line(s)')
    assert 'did not finish' not in msg


def test_imb_output_of_a_wrong_option_that_exited_0(monkeypatch, imb):
    c = _feed(monkeypatch, pick(imb, 'ImbPingPong'),
              failure('impi-imb-list.out'), exit_code=0)
    assert _sanity_message(c) == (
        "IMB output has no '# Benchmarking <name>' block (output ends with: "
        "'Uniband (non-default)') [the job exited 0: the program ended "
        "normally]")


def test_imb_refuses_pingpong_on_one_process(monkeypatch, imb):
    c = _feed(monkeypatch, pick(imb, 'ImbPingPong'),
              failure('impi-imb-pingpong-1-process.out'), exit_code=0,
              tasks=1)
    assert _sanity_message(c) == (
        'IMB refused PingPong: invalid for 1 process(es) [the job exited 0: '
        'the program ended normally]')


def test_imb_loader_error(monkeypatch, imb):
    c = _feed(monkeypatch, pick(imb, 'ImbPingPong'), '',
              failure('impi-imb-no-ld-library-path.err'), exit_code=127)
    assert _sanity_message(c) == (
        'IMB output is empty [job stderr: IMB-MPI1 cannot start: shared '
        'library libmpi.so.12: cannot open shared object file: No such file '
        'or directory]')


def test_npb_strict_mode_abort_is_the_headline(monkeypatch, npb):
    c = _feed(monkeypatch, pick(npb, 'NpbCG', npb_class='A'),
              failure('npb3.4.1-cg.S.3-strict.out'),
              failure('npb3.4.1-cg.S.3-strict.err'), exit_code=16, tasks=3)
    assert _sanity_message(c) == (
        'NPB aborted in strict process-count mode: 3 processes, it expects '
        'a power-of-two number of processes (such as 2); '
        'NPB_NPROCS_STRICT=off runs it on 2 active processes [job stderr: '
        'rank 0 called MPI_Abort (error code 16)]')


def test_fortran_stream_valid_run_passes(monkeypatch, stream):
    c = _feed(monkeypatch, pick(stream, 'Stream'),
              failure('stream.f-omp2.out'), exit_code=0, tasks=1)
    monkeypatch.setattr(c, 'threads', 2)
    assert sn.evaluate(c.validate()) is True
    assert sn.evaluate(c.rate('Triad')) == 5920.1


def test_fortran_stream_stack_segfault_is_named(monkeypatch, stream):
    c = _feed(monkeypatch, pick(stream, 'Stream'), '',
              failure('stream.f-omp-stack-segv.err'), exit_code=139, tasks=1)
    assert _sanity_message(c) == (
        "STREAM output is empty [job stderr: stream_f.omp died of "
        "Segmentation fault] (a segfault before any output: STREAM's arrays "
        "do not fit the stack, as in stream.f built with OpenMP; raise the "
        "limit: ulimit -s unlimited)")
