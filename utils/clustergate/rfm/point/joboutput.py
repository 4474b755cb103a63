"""The job's own files in the stage directory, and the cause of a failure
read from its stderr (clustergate.results.launchlog): "the output is
missing or cut short" made into a message that also names what the job's
stderr says (a node failure, a crashed rank, a refused connection).
The methods of :class:`clustergate.rfm.point.base.PointTest` call these."""

import os

from reframe.core.exceptions import SanityError

from clustergate.results import launchlog

#: The parsers' guess for output that stops early (clustergate.parsers
#: ending_hint); wrong when the program exited 0
CUT_SHORT = '(run cut short? '


def job_file(test, name, missing_ok):
    """The text of the job's file ``name`` in the stage directory of
    ``test``; '' when it is missing and ``missing_ok``, else a
    SanityError naming the file."""
    if test.stagedir is None and missing_ok:
        return ''       # not staged (e.g. a unit test)

    path = os.path.join(test.stagedir, str(name))
    try:
        with open(path, errors='replace') as fp:
            return fp.read()
    except OSError as err:
        if missing_ok:
            return ''
        raise SanityError(f'cannot read the job output {path}: '
                          f'{err.strerror}') from None


def job_exit_code(test):
    """The job's exit code where the scheduler reports it (the local one
    does; squeue does not), else None."""
    return getattr(getattr(test, 'job', None), 'exitcode', None)


def exited_zero_with_output(test):
    """Did the job end with exit code 0 after printing something?"""
    if test.job_exit_code() != 0:
        return False

    try:
        return bool(test.stdout_text().strip())
    except SanityError:
        return False


def check_not_ended(test):
    """Raise SanityError when the scheduler ended the job for a reason it
    names (a time limit, a node failure, preemption, the OOM killer; see
    :func:`clustergate.results.launchlog.ended_by_scheduler`), even after
    a complete output: ranks that outlived their last result held the
    nodes to the limit, and a job cut off is not a pass. True otherwise.
    A cancellation without a reason is judged after the output
    (:func:`check_not_cancelled`): srun also ends a step that way when a
    task crashed, and the crash is the better message."""
    why = launchlog.ended_by_scheduler(test.stderr_text())
    if why and not why.endswith(launchlog.NO_REASON):
        raise SanityError(f'the job did not end by itself: {why}')

    return True


def check_not_cancelled(test):
    """After a complete output: raise SanityError when the job or a step
    was cancelled without a reason (scancel, a signal), unless our
    harness's watchdog stopped ranks that hung after their last result
    (:func:`note_hang` names them). True otherwise."""
    stderr = test.stderr_text()
    why = launchlog.ended_by_scheduler(stderr)
    if why and why.endswith(launchlog.NO_REASON) and \
            not launchlog.hung_ranks(stderr):
        raise SanityError(f'the job did not end by itself: {why}')

    return True


def note_hang(test):
    """A warning naming the ranks that hung after a complete output (our
    harness's watchdog stopped them within seconds: the results stand,
    the MPI library's defect is named). True."""
    why = launchlog.hung_ranks(test.stderr_text())
    if why:
        from reframe.core.logging import getlogger

        getlogger().warning(f'{test.display_name}: {why}')
        test.cg_hang_note = why

    return True


def explained(test, message):
    """``message``, followed by the cause found in the job's stderr when
    there is one; or, when the job exited 0 with output, a note that the
    program ended normally (its output is not what was expected: it was
    not cut short)."""
    stderr = test.stderr_text()
    # the job's own end where nothing else explains it: an 8-node HPCC
    # run cancelled in HPL said only "no complete Summary section"
    cause = launchlog.diagnose(stderr) or launchlog.ended_by_scheduler(
        stderr)
    if cause:
        return f'{message} [job stderr: {cause}]'

    if exited_zero_with_output(test):
        message = message.replace(CUT_SHORT, '(')
        return f'{message} [the job exited 0: the program ended normally]'

    return message
