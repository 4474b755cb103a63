"""Did a run use the transport its interconnect names? Ask the MPI.

A point labelled ``tcp`` that ran over shared memory measures the wrong
thing and looks healthy (Intel MPI on one node kept its collectives in
shared memory under ``I_MPI_FABRICS=ofi``: Barrier 0.19 us "over tcp").
So an interconnect may declare, per MPI family, how to verify it in the run
itself (partition ``extras``)::

    'tcp': {
        'scope': 'network',
        'env': {'openmpi': {...}},
        'verify': {
            'openmpi': {
                # what makes the MPI say which transport it uses
                'env': {'OMPI_MCA_btl_base_verbose': '20'},
                # description -> regex that must occur in stdout+stderr
                'expect': {'the tcp btl to a peer': r'...'},
                # description -> regex that must not occur
                'reject': {'a btl other than tcp or self': r'...'},
            },
        },
    }

:func:`mismatch` turns the job's output into a one-line reason, which
the placement (:func:`clustergate.rfm.point.placement.verify_transport`)
raises as a sanity failure. A run of one rank has no peer and is not
verified.
"""

import re
from typing import Mapping, Optional


def rules(model, interconnect: str,
          family: Optional[str]) -> Optional[Mapping]:
    """The verification rules of ``interconnect`` for ``family`` on the
    partition ``model`` (:class:`~clustergate.site.partition.PartitionModel`),
    or None."""
    ic = model.interconnects.get(interconnect)
    return ((ic and ic.verify) or {}).get(family) if family else None


def mismatch(rules_: Optional[Mapping], output: str,
             interconnect: str) -> Optional[str]:
    """Why ``output`` (stdout + stderr of the job) does not show the
    declared transport, in one line; None when it does or nothing is
    declared."""
    if not rules_:
        return None

    head = f'interconnect {interconnect!r} not verified'
    for what, pattern in rules_.get('reject', {}).items():
        m = re.search(pattern, output, re.M)
        if m:
            return f'{head}: {what}: {m.group(0).strip()!r}'

    for what, pattern in rules_.get('expect', {}).items():
        if not re.search(pattern, output, re.M):
            settings = ' '.join(f'{k}={v}' for k, v in
                                rules_.get('env', {}).items())
            return (f'{head}: the MPI did not report {what} '
                    f'(asked with {settings or "its defaults"})')

    return None


def validate(verify, where: str):
    """Raise ValueError naming ``where`` if a ``verify`` block is
    malformed."""
    if not isinstance(verify, Mapping):
        raise ValueError(f'{where}: "verify" must map MPI family to rules')

    for family, r in verify.items():
        if not isinstance(r, Mapping):
            raise ValueError(f'{where}: verify.{family} must be a mapping')

        unknown = set(r) - {'env', 'expect', 'reject'}
        if unknown:
            raise ValueError(f'{where}: verify.{family}: unknown key(s) '
                             f'{sorted(unknown)}')

        for key in ('env', 'expect', 'reject'):
            val = r.get(key, {})
            if not isinstance(val, Mapping) or not all(
                    isinstance(v, str) for v in val.values()):
                raise ValueError(f'{where}: verify.{family}.{key} must be '
                                 f'a str->str map')

            if key != 'env':
                for what, pattern in val.items():
                    try:
                        re.compile(pattern)
                    except re.error as err:
                        raise ValueError(
                            f'{where}: verify.{family}.{key}[{what!r}]: bad '
                            f'regex: {err}') from None
