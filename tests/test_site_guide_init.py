"""The site guide's first section followed literally: its fenced ``sh``
blocks, in order, in a copy of the project whose probes are answered from
a recorded site (tests/fixtures/site-init/no-topology: Slurm, the system
MPIs, Spack). ``clustergate site init`` is parsed by the real command
line and writes into the copy (``--root``); the other commands run there
as the guide writes them. The indented blocks of that section (nightly
runs, baselines) need the cluster itself and are not run here."""

import os
import re
import shlex
import subprocess

from conftest import BINDIR, ROOT, isolated_env, reframe_cmd
from test_site_init import LMOD_CMD, project_copy, runner_for

from clustergate.cli import build_parser

GUIDE = os.path.join(ROOT, 'docs', 'guide', 'site-guide.md')
MARKER = '<!-- the test suite runs the shell blocks of this section'
KIND = 'no-topology'


def guide_section():
    text = open(GUIDE).read()
    start = text.index(MARKER)
    return text[start:text.index('\n### ', start)]


def guide_commands(section):
    """Each command line of the section's fenced ``sh`` blocks, in
    order (the blocks may be indented under a list item)."""
    cmds = []
    for block in re.findall(r'^( *)```sh\n(.*?)^\1```$', section,
                            re.M | re.S):
        cmds += [ln.strip() for ln in block[1].splitlines() if ln.strip()]

    return cmds


def run_step(argv, root, env):
    """One command of the guide in the project copy: (exit status,
    output)."""
    if argv[:3] == ['clustergate', 'site', 'init']:
        args = build_parser().parse_args(argv[1:] + ['--root', str(root)])
        return args.func(args, runner_for(KIND)), ''

    exe = {'clustergate': [os.path.join(BINDIR, 'clustergate')],
           'reframe': reframe_cmd()}[argv[0]]
    res = subprocess.run(exe + argv[1:], capture_output=True, text=True,
                         cwd=str(root), env=env, timeout=600)
    return res.returncode, res.stdout + res.stderr


def test_the_guides_first_section_runs_in_order(tmp_path, capsys):
    root = project_copy(tmp_path)
    os.symlink(os.path.join(ROOT, 'checks'), root / 'checks')
    env = dict(isolated_env(root / 'config' / 'references', root / 'out'),
               LMOD_CMD=LMOD_CMD)
    section = guide_section()
    cmds = guide_commands(section)
    assert [c.split()[:2] for c in cmds] == [
        ['clustergate', 'site'], ['clustergate', 'sweep'],
        ['reframe', '-C']], cmds

    outputs = []
    for cmd in cmds:
        code, out = run_step(shlex.split(cmd), root, env)
        assert code == 0, f'{cmd}: exit {code}\n{out[-3000:]}'
        outputs.append(out)
        if cmd.startswith('clustergate site init'):
            # the files the guide's table names are the ones written
            named = re.findall(r'^ *\| `([^`]+)` \|', section, re.M)
            wrote = re.findall(r'^wrote (.*)$', capsys.readouterr().out,
                               re.M)
            assert named and sorted(named) == sorted(
                os.path.relpath(p, root) for p in wrote)

    # the sweep offers points on the written partition, the listing
    # finds checks for them
    assert re.search(r'^mysite:batch$', outputs[1], re.M), outputs[1]
    assert re.search(r' run$', outputs[1], re.M), outputs[1]
    found = int(re.search(r'Found (\d+) check\(s\)', outputs[2])[1])
    assert found > 0
