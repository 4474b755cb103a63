"""The job's own files in the stage directory, and the cause of a failure
read from its stderr (clustergate.launchlog), shared by every base test."""

import os

from reframe.core.exceptions import SanityError

from clustergate import launchlog


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

    def explained(self, message):
        """``message``, followed by the cause found in the job's stderr
        when there is one."""
        cause = launchlog.diagnose(self.stderr_text())
        return f'{message} [job stderr: {cause}]' if cause else message
