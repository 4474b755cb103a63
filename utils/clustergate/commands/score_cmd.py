"""clustergate score: the acceptance score of a run (a ReFrame session).

One figure per partition: the geometric mean of every measured metric
relative to its reference (times and latencies inverted, so above 1 is
better), and the metrics that pulled it down; written to a JSON file a
site can archive as its signed-off baseline (and pass back with
--baseline where config/references has no reference). Reads a JSON run
report (reframe --report-file) or a run of the results database
(default: output/results.db, or $CG_RESULTS_DB): the latest, or the one
--session names; the first line names the session read.
"""

import json
import os
import sys

from clustergate.results import score
from clustergate.site import environment as cgenv
from clustergate.commands import sources

EXAMPLES = (
    'clustergate score                 # latest run of the results DB',
    'clustergate score --report run-report.json --annotate',
    'clustergate score --baseline signed-off.json -o score.json',
)


def run(args, out=None, err=None):
    out, err = out or sys.stdout, err or sys.stderr
    report = sources.read_session(args.json, args.db, 'score', err,
                                  args.session)
    if report is None:
        return 2

    try:
        base = None
        if args.baseline:
            with open(args.baseline) as fp:
                base = json.load(fp)
    except (OSError, ValueError) as e:
        print(f'clustergate score: error: {e}', file=err)
        return 2

    from clustergate.results import timing
    print(f'read: {timing.describe_session(report)}', file=out)
    scores = score.compute(report, base)
    for line in score.summary_lines(scores):
        print(line, file=out)

    doc = score.to_json(scores, report)
    path = args.output or score.default_path(
        report, cgenv.get(cgenv.SCORE_FILE))
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        score.write_json(path, doc)
        if args.json and args.annotate:
            # the run report carries its own score
            report['clustergate_score'] = doc
            with open(args.json, 'w') as fp:
                json.dump(report, fp, indent=2)
    except OSError as e:
        print(f'clustergate score: error: cannot write {e.filename}: '
              f'{e.strerror}', file=err)
        return 2

    print(f'  written to {path}', file=out)
    return 0


def add_parser(subparsers):
    p = sources.add_session_command(
        subparsers, 'score', 'acceptance score per partition', __doc__,
        EXAMPLES, run)
    p.add_argument('--baseline', metavar='FILE',
                   help='a signed-off score JSON: references for metrics '
                        'config/references does not cover')
    sources.add_output(p, 'where to write the score JSON (default: '
                          '$CG_SCORE_FILE or output/score-<run>.json)')
    p.add_argument('--annotate', action='store_true',
                   help='also add the score to the JSON run report '
                        '(key clustergate_score)')
    return p
