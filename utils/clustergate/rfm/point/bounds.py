"""Documented bounds of performance variables that compare two measured
values (a ratio, an ordering).

Sanity judges the program (did it run, finish, print what it measured,
verify its payload); a judgement on measured numbers is a performance
variable, so that noise on a busy machine shows as a number against a
bound, not as a broken program. A base test that has such a bound of its
own (e.g. the fidelity check's tolerance) adds it with :func:`add_bounds`:
it applies where the reference file (or an inline reference) gives
nothing for that variable.
"""


def add_bounds(test, bounds):
    """Add ``bounds`` (``{variable: (value, lower, upper, unit)}``, ReFrame's
    reference tuples) to ``test.reference`` at the global scope, for each
    variable that has no reference for the test's partition yet."""
    part = test.current_partition
    scope = part.fullname if part else '*'
    for name, ref in bounds.items():
        try:
            test.reference[f'{scope}:{name}']
        except KeyError:
            test.reference[f'*:{name}'] = ref
