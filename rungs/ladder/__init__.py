"""The ladder: the rungs and their judging, in the harness's own trusted process.

A climb (climb.py) holds what the rungs share; the ordered rungs (rung.py) each read it and leave a result; `Ladder`
(ladder.py) walks them. Nothing here runs candidate code: it asks a worker pool (rungs/sandbox/) to run the worker
(rungs/worker/) on a job, and judges the files that come back. The trusted child processes it starts itself
(baseline.py, bench_reference.py: `python -m rungs.ladder.<name>`) never run candidate code either.

From the worker's room it imports only the job format (rungs/worker/job.py); tests/test_layout.py checks it.
"""
