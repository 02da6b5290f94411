"""The worker: the code that runs inside the candidate's sandboxed process (`python -m rungs.worker`).

It imports the candidate, runs the phases its job names (compile, autotune, run, bench, witness) under its in-process
guards, and writes phase files and outputs for the parent to judge. It never sees a reference output, and it imports
nothing of the trusted parent (rungs/ladder/, rungs/sandbox/, harness/): only this room, rungs/core/, the timing both
sides share (rungs/timing/) and the backends' worker halves, all without pydantic, so it starts fast on a bare image.
The one module the parent imports from here is the job format (job.py). tests/test_layout.py checks both rules.
"""
