"""The job's own files in the stage directory, and the cause of a failure
read from its stderr (clustergate.results.launchlog), shared by every base test."""

import os

from reframe.core.exceptions import SanityError

from clustergate.results import launchlog

#: The parsers' guess for output that stops early (clustergate.parsers
#: ending_hint); wrong when the program exited 0
CUT_SHORT = '(run cut short? '


class JobOutput:
    """Mixin for run-only tests: reads the job's stdout and stderr, and
    turns "the output is missing or cut short" into a message that also
    names what the job's stderr says (a node failure, a crashed rank, a
    refused connection)."""

    def _job_file(self, name, missing_ok):
        if self.stagedir is None and missing_ok:
            return ''       # not staged (e.g. a unit test)

        path = os.path.join(self.stagedir, str(name))
        try:
            with open(path, errors='replace') as fp:
                return fp.read()
        except OSError as err:
            if missing_ok:
                return ''
            raise SanityError(f'cannot read the job output {path}: '
                              f'{err.strerror}') from None

    def stdout_text(self):
        return self._job_file(self.stdout, missing_ok=False)

    def stderr_text(self):
        return self._job_file(self.stderr, missing_ok=True)

    def job_exit_code(self):
        """The job's exit code where the scheduler reports it (the local
        one does; squeue does not), else None."""
        return getattr(getattr(self, 'job', None), 'exitcode', None)

    def exited_zero_with_output(self):
        """Did the job end with exit code 0 after printing something?"""
        if self.job_exit_code() != 0:
            return False

        try:
            return bool(self.stdout_text().strip())
        except SanityError:
            return False

    def explained(self, message):
        """``message``, followed by the cause found in the job's stderr
        when there is one; or, when the job exited 0 with output, a note
        that the program ended normally (its output is not what was
        expected: it was not cut short)."""
        cause = launchlog.diagnose(self.stderr_text())
        if cause:
            return f'{message} [job stderr: {cause}]'

        if self.exited_zero_with_output():
            message = message.replace(CUT_SHORT, '(')
            return f'{message} [the job exited 0: the program ended normally]'

        return message
