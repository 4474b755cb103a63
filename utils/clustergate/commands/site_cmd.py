"""``clustergate site init NAME``: a site's configuration from what its own
tools say, run on a login node.

Reads the partitions, nodes (cores, memory, features, gres) and topology
from Slurm (``scontrol show partition|node|topology``, their text form:
the ``--json`` form is not read), the interconnects
of a compute node of the default partition (through ``srun -N1 -p PART``:
``ip -j link``, ``/sys/class/infiniband``, ``ucx_info -d``, ``fi_info``),
the GPUs of one node of each partition whose GRES has GPUs (``nvidia-smi
-L`` and ``nvidia-smi topo -m``: model, count, NUMA node and NIC of each),
and the MPIs the site offers (Lmod's ``module -t avail``, the system
wrappers on PATH and their ``mpirun --version``, the MPI providers
installed in the site's Spack by ``spack find --json``: ``spack`` on
PATH, else ``$SPACK_ROOT/bin/spack``), and on one node of each
partition the ``hpcc`` and ``IMB-MPI1`` each MPI environment has
(clustergate.siteinit.prebuilt: a prebuilt source for the environments whose
MPI the binary links, one summary line per benchmark and partition).
Writes
``config/systems/NAME.py`` (every choice commented with its source),
``config/references/NAME.yaml`` (empty) and ``spack-env/NAME/spack.yaml``
(the site's MPIs as externals). A probe that fails or is absent leaves a
note in the file and one line here. Never overwrites without ``--force``;
``--check`` then lists what each partition runs and why the rest cannot
(as ``clustergate sweep``).

Example: ``clustergate site init mysite --check``.
"""

import argparse
import os
import shutil
import subprocess

from clustergate import PROJECT_ROOT
from clustergate.commands import sources
from clustergate.site import environment as cgenv
from clustergate.siteinit import discover
from clustergate.siteinit import gpuconfig, prebuilt, siteconfig, spackenv

#: seconds one probe may take (an srun waits for a node)
TIMEOUT = 300

#: probe name -> command; PART is replaced by the default partition
PROBES = {
    'scontrol-partition': ['scontrol', 'show', 'partition'],
    'scontrol-node': ['scontrol', 'show', 'node'],
    'scontrol-topology': ['scontrol', 'show', 'topology'],
    'scontrol-config': ['scontrol', 'show', 'config'],
    'ip-link': ['srun', '-N1', '-p', 'PART', 'ip', '-j', 'link'],
    'sys-infiniband': ['srun', '-N1', '-p', 'PART', 'ls',
                       '/sys/class/infiniband'],
    'ucx_info': ['srun', '-N1', '-p', 'PART', 'ucx_info', '-d'],
    'fi_info': ['srun', '-N1', '-p', 'PART', 'fi_info'],
    'module-avail': ['bash', '-lc', 'module -t avail 2>&1'],
    'which': ['which'] + list(discover.WRAPPERS),
    'version-openmpi': ['mpirun.openmpi', '--version'],
    'version-mpich': ['mpirun.mpich', '--version'],
    # every installed spec (the MPI providers are picked out of them)
    'spack-find': ['SPACK', 'find', '--json'],
}

#: probes whose non-zero exit still carries the answer (``which`` exits 1
#: when one of several names is missing)
_PARTIAL_OK = ('which',)


def run_command(argv):
    """Runs ``argv``: (exit status, output); 127 when it is not there."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True,
                             timeout=TIMEOUT)
    except FileNotFoundError:
        return 127, f'{argv[0]}: not found'
    except OSError as e:
        # a PATH directory this user may not search (root's, in a job
        # user's PATH) turns a program that is not there into EACCES
        if shutil.which(argv[0]) is None:
            return 127, f'{argv[0]}: not found'
        return 126, f'{argv[0]}: {e.strerror}'
    except subprocess.TimeoutExpired:
        return 124, f'no answer in {TIMEOUT} s'

    return res.returncode, res.stdout + (res.stderr if res.returncode
                                         else '')


def _note(name, rc, text):
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()),
                 '')
    return f'exit {rc}: {first[:120]}' if first else f'exit {rc}'


def probe_all(runner, partition=None):
    """Every probe's output by name (discover.ProbeOutput); ``runner(name,
    argv)`` returns (exit status, text)."""
    out = {}
    for name in ('scontrol-partition', 'scontrol-node',
                 'scontrol-topology', 'scontrol-config'):
        out[name] = _probe(runner, name, PROBES[name])

    parts = discover.partitions(out['scontrol-partition'].text
                                if out['scontrol-partition'].ok else '')
    part = partition or next((p['name'] for p in parts if p['default']),
                             parts[0]['name'] if parts else None)
    for name, argv in PROBES.items():
        if name in out:
            continue

        fam = name[len('version-'):] if name.startswith('version-') else ''
        if fam and not any(w['family'] == fam for w in discover.path_wrappers(
                out['which'].text)):
            continue  # no such wrapper on PATH: no version to ask

        if 'PART' in argv and part is None:
            out[name] = discover.ProbeOutput(1, '', 'no partition to run on')
            continue

        argv = [spack_command() if a == 'SPACK' else a for a in argv]
        out[name] = _probe(runner, name, [part if a == 'PART' else a
                                          for a in argv])
        out[name].command = argv[0]

    out.update(probe_gpus(runner, out))
    return out


def probe_gpus(runner, out):
    """``nvidia-smi -L`` and ``nvidia-smi topo -m`` on one node of each
    partition whose nodes have GPUs in their Slurm GRES (asking for all
    of them: with Slurm's device cgroup a job sees only the GPUs it asked
    for); by probe name ``gpu-list-<partition>``, ``gpu-topo-<partition>``
    (:func:`clustergate.siteinit.discover.gpu_probe_names`)."""
    got = {}
    text = out['scontrol-node'].text if out['scontrol-node'].ok else ''
    allnodes = discover.nodes(text)
    for part in discover.partitions(out['scontrol-partition'].text
                                    if out['scontrol-partition'].ok else ''):
        gres = discover.gpu_gres(discover.partition_nodes(part, allnodes))
        if gres is None:
            continue
        lst, topo = discover.gpu_probe_names(part['name'])
        srun = ['srun', '-N1', '-p', part['name'], f'--gres={gres}']
        got[lst] = _probe(runner, lst, srun + ['nvidia-smi', '-L'])
        got[topo] = _probe(runner, topo, srun + ['nvidia-smi', 'topo', '-m'])
    return got


def spack_command(environ=None, which=shutil.which):
    """The site's Spack: ``spack`` on PATH, else ``$SPACK_ROOT/bin/spack``
    (a configured root), else plain ``spack`` (the probe then says it is
    not found)."""
    environ = os.environ if environ is None else environ
    if which('spack'):
        return 'spack'

    root = environ.get('SPACK_ROOT')
    return os.path.join(root, 'bin', 'spack') if root else 'spack'


def _probe(runner, name, argv):
    rc, text = runner(name, argv)
    ok = rc == 0 or (name in _PARTIAL_OK and rc == 1 and text.strip())
    if ok:
        return discover.ProbeOutput(0, text)

    return discover.ProbeOutput(rc, text, _note(name, rc, text))


def targets(root, name):
    """The three files ``site init NAME`` writes under ``root``."""
    return {'system': os.path.join(root, 'config', 'systems', f'{name}.py'),
            'references': os.path.join(root, 'config', 'references',
                                       f'{name}.yaml'),
            'spack': os.path.join(root, 'spack-env', name, 'spack.yaml')}


def write_site(desc, root, force=False):
    """Writes the site's files; the existing ones named in a SystemExit
    unless ``force``."""
    files = targets(root, desc['name'])
    there = [p for p in files.values() if os.path.exists(p)]
    if there and not force:
        raise SystemExit(f'clustergate site init: {there[0]} exists '
                         f'(--force overwrites)')

    texts = {'system': siteconfig.system_module(desc),
             'references': siteconfig.references_file(desc),
             'spack': spackenv.spack_env(desc)}
    gpu_env = gpuconfig.spack_env(desc)
    if gpu_env is not None:
        # the GPU benchmarks' own environment (OSU is built twice)
        files['spack-gpu'] = os.path.join(
            root, 'spack-env', gpuconfig.spack_env_name(desc['name']),
            'spack.yaml')
        texts['spack-gpu'] = gpu_env
    for key, path in files.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as fp:
            fp.write(texts[key])

    return files


def init(args, runner=None):
    """``site init``: probe, describe, write, and with --check sweep."""
    if not args.name.replace('_', '').replace('-', '').isalnum():
        raise SystemExit(f'clustergate site init: {args.name!r}: a system '
                         f'name is letters, digits, - and _')

    runner = runner or (lambda name, argv: run_command(argv))
    desc = discover.describe(args.name, probe_all(runner, args.partition))
    for note in desc['notes']:
        print(f'note: {note}')
    if not desc['partitions']:
        raise SystemExit('clustergate site init: no partition from scontrol '
                         'show partition: is this a Slurm login node?')

    # the benchmarks the nodes already have, in each MPI environment
    prebuilt.probe(runner, desc)
    for line in desc['prebuilt_notes']:
        print(f'benchmark: {line}')

    files = write_site(desc, args.root, args.force)
    for path in files.values():
        print(f'wrote {path}')
    written = os.path.dirname(files['references'])
    if os.path.realpath(cgenv.references_dir()) != os.path.realpath(written):
        # the checks read references where the variable or the project
        # says, not beside a settings file written elsewhere: without this
        # line, references filled in here would never judge a run
        print(f'note: the checks read references from '
              f'{cgenv.references_dir()}, not {written}: export '
              f'{cgenv.REFERENCES_DIR}={written}')

    if args.check:
        from clustergate.commands import sweep_cmd as sweep
        return sweep.run(argparse.Namespace(
            config=os.path.join(args.root, 'config', 'settings.py'),
            system=args.name, min_ranks=2))

    return 0


def add_parser(subparsers):
    p = sources.add_subcommand(
        subparsers, 'site', help="write a site's configuration from Slurm, "
        'modules and its nodes', doc=__doc__,
        examples=['clustergate site init mysite --check'])
    sub = p.add_subparsers(dest='site_cmd', metavar='CMD')
    sub.required = True
    q = sub.add_parser('init', help='probe the site and write '
                       'config/systems/NAME.py and the rest',
                       description=__doc__.split('::')[0].strip(),
                       epilog=sources.EXIT_CODES)
    q.add_argument('name', metavar='NAME', help='the system name')
    q.add_argument('--force', action='store_true',
                   help='overwrite files that exist')
    q.add_argument('--check', action='store_true',
                   help='then list what each partition runs and why the '
                        'rest cannot (clustergate sweep)')
    q.add_argument('--partition', help='partition whose node is probed '
                   "(default: Slurm's default partition)")
    q.add_argument('--root', default=PROJECT_ROOT,
                   help='project directory to write into (default: this '
                        'one)')
    q.set_defaults(func=init)
