"""``clustergate baseline`` writes into the reference file as it is: a
comment written by hand, a point key in another order and a check these
runs did not measure survive a re-baseline; only measured values change."""

import io
import json

import yaml

from clustergate import cli
from clustergate.commands import baseline_cmd
from test_times import run_report

HAND_WRITTEN = '''\
# Performance references of system localhost (docs/guide/references.md).
# Review the diff before committing; edit by hand where needed.
system: "localhost"
references:
  "PingPong":
    "local":
      # widened by hand: shm latency jitters on this VM (ticket 42)
      "ppn=2,interconnect=shm,num_nodes=1,environ=openmpi":
        "latency": {value: 2.0, lower: null, upper: 0.9, unit: "us"}  # wide
  "Kept":
    "local":
      "*":
        "time": {value: 1, lower: null, upper: 0.1, unit: "s"}
'''


def rebaseline(tmp_path, refs_text):
    refs = tmp_path / 'refs.yaml'
    refs.write_text(refs_text)
    paths = []
    for i, (hour, lat) in enumerate([(6, 3.1), (8, 3.2), (10, 3.0)]):
        path = tmp_path / f'r{i}.json'
        path.write_text(json.dumps(run_report(i, hour, lat)))
        paths.append(str(path))

    args = cli.build_parser().parse_args(
        ['baseline', '--json', *paths, '-o', str(refs)])
    out, err = io.StringIO(), io.StringIO()
    assert baseline_cmd.run(args, out=out, err=err) == 0, err.getvalue()
    return refs.read_text()


def test_rebaselining_keeps_a_hand_written_comment(tmp_path):
    text = rebaseline(tmp_path, HAND_WRITTEN)
    lines = text.splitlines()
    assert ('      # widened by hand: shm latency jitters on this VM '
            '(ticket 42)') in lines
    # the end-of-line comment, the key as written, the unmeasured check
    latency = next(ln for ln in lines if '"latency"' in ln)
    assert latency.endswith(' # wide')
    assert ('      "ppn=2,interconnect=shm,num_nodes=1,environ=openmpi":'
            in lines)
    data = yaml.safe_load(text)
    assert data['references']['Kept']['local']['*']['time']['value'] == 1
    # ...and the measured value did change, to the median of the runs
    point = data['references']['PingPong']['local'][
        'ppn=2,interconnect=shm,num_nodes=1,environ=openmpi']
    assert point['latency']['value'] == 3.1
    # one header: the new one, saying which runs made the file
    assert text.count('# Performance references of system') == 1
    assert '# Written by: clustergate baseline (3 runs,' in text


def test_rebaselining_twice_changes_nothing(tmp_path):
    once = rebaseline(tmp_path, HAND_WRITTEN)
    assert rebaseline(tmp_path, once) == once
