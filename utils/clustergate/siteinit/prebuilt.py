"""Benchmarks a site already has installed, for ``clustergate site init``.

A site without Spack still has binaries: Debian's ``hpcc`` package puts
``/usr/bin/hpcc`` on every node (built against Debian's OpenMPI), an
Intel MPI installation ships ``IMB-MPI1`` in its ``bin`` (the PyPI impi-rt
wheel in the environment's ``bin``, a oneAPI module under
``$I_MPI_ROOT/bin``). Such a binary runs only under the MPI it was linked
with: OpenMPI's ``hpcc`` started by Intel MPI's launcher is N singletons.

So, on one node of each partition (``srun -N1 -p PART bash -lc SCRIPT``,
as the other node probes), each MPI environment is set up as its jobs set
it up (its module loaded, its Spack installation loaded, or nothing for a
system wrapper) and asked where :data:`BINARIES` are (``command -v``),
which MPI library each links (``ldd``, resolved in that environment) and
where that environment's launcher is. A binary is that environment's when
its MPI library has a soname of the environment's MPI family
(:data:`SONAME_FAMILIES`) and lies in the installation of its launcher.
It becomes a ``prebuilt`` source limited to those environments
(:mod:`clustergate.site.benchmarks`); a family with no such binary gets
no source, and one line says which benchmark, which partition and why.
NPB, OSU and STREAM are not probed: they stay unsourced (NOT RUN with
the reason the checks give) unless the site adds a source.

Pure apart from :func:`probe`, which takes the runner: the parsing and the
decision are tested on recorded outputs.
"""

import os
import re
import shlex
from typing import Dict, List, Optional, Tuple

#: benchmark family -> the binary probed for it
BINARIES = {'hpcc': 'hpcc', 'imb': 'IMB-MPI1'}

#: MPI library soname -> the MPI families whose launcher runs a binary
#: linked with it (libmpi.so.12 is the MPICH ABI: MPICH, MVAPICH, Cray
#: MPICH and Intel MPI; Open MPI 1.x-5.x use libmpi.so.1/.20/.40)
SONAME_FAMILIES = (
    (re.compile(r'^libmpi\.so\.(1|20|40)$'), ('openmpi',)),
    (re.compile(r'^libmpich\.so\.12$'), ('mpich',)),
    (re.compile(r'^libmpi\.so\.12$'), ('mpich', 'intelmpi')),
)


def probe_name(partition: str) -> str:
    """The name of a partition's probe (and of its recorded output)."""
    return f'prebuilt-{partition}'


def _load(mpi) -> str:
    """Shell that sets the environment up as its jobs do."""
    if 'spack_hash' in mpi:
        # eval of an empty string succeeds: a failed load must not
        return (f's=$({shlex.quote(mpi["spack"])} load --sh '
                f'/{mpi["spack_hash"]}) && eval "$s"')

    if 'module' in mpi:
        return f'module load {shlex.quote(mpi["module"])}'

    return 'true'


def launcher(mpi) -> str:
    """The launcher command of an environment (a system wrapper's MPI has
    its own suffixed one, ``mpirun.openmpi``)."""
    wrapper = mpi.get('wrapper', '')
    if '.' in wrapper:
        return 'mpirun.' + wrapper.split('.', 1)[1]

    return 'mpirun'


_PER_ENV = '''echo "== env {name}"
(
  {load} >/dev/null 2>&1 || {{ echo "unloadable"; exit 0; }}
  l=$(command -v {launcher}) && echo "launcher $(readlink -f "$l")"
  for b in {binaries}; do
    p=$(command -v "$b") || {{ echo "missing $b"; continue; }}
    echo "found $b $p"
    ldd "$p" 2>/dev/null | while read -r so arrow lib rest; do
      case $so in libmpi.so*|libmpich.so*) ;; *) continue ;; esac
      if [ "$lib" = not ]; then echo "lib $b $so not-found"
      else echo "lib $b $so $(readlink -f "$lib")"; fi
    done
  done
)'''


def script(mpis) -> str:
    """The probe's shell script: each environment in its own subshell."""
    return '\n'.join(_PER_ENV.format(
        name=m['name'], load=_load(m), launcher=shlex.quote(launcher(m)),
        binaries=' '.join(BINARIES.values())) for m in mpis) + '\n'


def parse(text: str) -> Dict[str, dict]:
    """The probe's output: per environment name, ``launcher`` (resolved
    path or None), ``unloadable`` and per binary its ``path`` (None when
    not on PATH) and ``libs`` ([(soname, resolved path or None)])."""
    out, cur = {}, None
    for line in text.splitlines():
        words = line.split()
        if line.startswith('== env ') and len(words) == 3:
            cur = out.setdefault(words[2], {'launcher': None,
                                            'unloadable': False,
                                            'binaries': {}})
        elif cur is None or not words:
            continue
        elif words[0] == 'unloadable':
            cur['unloadable'] = True
        elif words[0] == 'launcher' and len(words) == 2:
            cur['launcher'] = words[1]
        elif words[0] == 'missing' and len(words) == 2:
            cur['binaries'][words[1]] = {'path': None, 'libs': []}
        elif words[0] == 'found' and len(words) == 3:
            cur['binaries'][words[1]] = {'path': words[2], 'libs': []}
        elif words[0] == 'lib' and len(words) == 4 and \
                words[1] in cur['binaries']:
            cur['binaries'][words[1]]['libs'].append(
                (words[2], None if words[3] == 'not-found' else words[3]))

    return out


def soname_families(soname: str) -> Tuple[str, ...]:
    """The MPI families whose library has this soname (empty: none)."""
    for pat, fams in SONAME_FAMILIES:
        if pat.match(soname):
            return fams

    return ()


def _install_root(path: str) -> str:
    """``/usr`` of ``/usr/bin/mpirun``."""
    return os.path.dirname(os.path.dirname(path))


def _under(path: str, root: str) -> bool:
    root = root.rstrip('/') or '/'
    return root == '/' or path == root or path.startswith(root + '/')


def verdict(mpi, env: Optional[dict], binary: str) -> Tuple[bool, str]:
    """Whether ``binary`` runs in the environment ``mpi``, by what the
    probe saw there, and the evidence (or the reason) in a few words."""
    if env is None:
        return False, 'the probe printed nothing for it'
    if env['unloadable']:
        return False, 'its setup failed on the node'

    got = env['binaries'].get(binary)
    if got is None:
        return False, f'the probe said nothing of {binary}'
    if got['path'] is None:
        return False, f'{binary} not on PATH'

    path, libs = got['path'], got['libs']
    if os.path.basename(os.path.dirname(path)) != 'bin':
        return False, f'{path} is not in a bin/ folder'
    if not libs:
        return False, f'{path} links no MPI library'

    soname, lib = libs[0]
    fams = soname_families(soname)
    if lib is None:
        return False, f'{path} needs {soname}, not found there'
    if mpi['family'] not in fams:
        what = '/'.join(fams) or 'an unknown MPI'
        return False, f'{path} links {soname} ({what}), not {mpi["family"]}'

    if env['launcher'] and not _under(lib, _install_root(env['launcher'])):
        return False, (f'{path} links {lib}, outside the MPI of '
                       f'{env["launcher"]}')

    how = '' if env['launcher'] else ' (no launcher on PATH: by soname)'
    return True, f'{path} links {soname} => {lib}{how}'


def sources(mpis, parsed: Dict[str, dict], partition: str):
    """Per family of :data:`BINARIES`: the ``prebuilt`` entries (a list,
    each with ``environs`` and a ``why`` comment), and one summary line
    per family: what was found for which environments, and why the
    others (or all of them) have no source on this partition."""
    found, lines = {}, []
    for fam, binary in BINARIES.items():
        entries, why_not = {}, []
        for mpi in mpis:
            ok, why = verdict(mpi, parsed.get(mpi['name']), binary)
            if ok:
                path = parsed[mpi['name']]['binaries'][binary]['path']
                e = entries.setdefault(path, {
                    'source': 'prebuilt', 'prefix': _install_root(path),
                    'environs': [], 'why': []})
                e['environs'].append(mpi['name'])
                e['why'].append(f'{mpi["name"]}: {why}')
            else:
                why_not.append(f'{mpi["name"]}: {why}')
        if entries:
            found[fam] = list(entries.values())
            got = '; '.join(f'prebuilt {path} for {", ".join(e["environs"])}'
                            for path, e in entries.items())
            lines.append(f'{fam.upper()} on partition {partition}: {got}' +
                         (f'; not for {"; ".join(why_not)}' if why_not
                          else ''))
        else:
            lines.append(f'{fam.upper()} on partition {partition}: no '
                         f'source ({"; ".join(why_not) or "no MPI found"})')

    return found, lines


def probe(runner, desc) -> None:
    """Runs the probe on one node of each partition and records in each
    partition of ``desc`` its ``prebuilt`` sources, and in
    ``desc['prebuilt_notes']`` one line per family and partition."""
    desc['prebuilt_notes'] = []
    for part in desc['partitions']:
        part['prebuilt'], part['prebuilt_notes'] = _partition(
            runner, desc['mpis'], part)
        desc['prebuilt_notes'] += part['prebuilt_notes']


def _partition(runner, mpis, part):
    """The prebuilt sources of one partition and its summary lines."""
    where = f'on partition {part["name"]}'
    if not mpis:
        return {}, [f'{f.upper()} {where}: no source (no MPI found)'
                    for f in BINARIES]

    rc, text = runner(probe_name(part['slurm_name']),
                      ['srun', '-N1', '-p', part['slurm_name'], 'bash',
                       '-lc', script(mpis)])
    if rc != 0:
        first = next((ln.strip() for ln in text.splitlines()
                      if ln.strip()), '')
        return {}, [f'{f.upper()} {where}: no source (the probe failed: '
                    f'exit {rc}: {first[:100]})' for f in BINARIES]

    return sources(mpis, parse(text), part['name'])


def lines(part: dict, pad: str) -> List[str]:
    """The partition's ``benchmarks`` entries of the probed binaries (the
    inside of the mapping), each with the evidence as a comment."""
    out = []
    for fam, entries in (part.get('prebuilt') or {}).items():
        out.append(f'{pad}# srun -N1 -p {part["slurm_name"]}: '
                   f'{BINARIES[fam]} of each environment (command -v, ldd)')
        for e in entries:
            out += [f'{pad}#   {w}' for w in e['why']]
        written = [{k: v for k, v in e.items() if k != 'why'}
                   for e in entries]
        out.append(f'{pad}{fam!r}: {written!r},')

    return out
