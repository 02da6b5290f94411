"""Timing, shared by the processes that time a callable: the candidate's worker (rungs/worker/bench.py) and the
trusted processes the parent starts (rungs/ladder/baseline.py times the references, rungs/ladder/bench_reference.py
rebuilds the fresh inputs of checked calls). Nothing here judges, and nothing here imports either side: only
rungs/core/ (tests/test_layout.py checks it).

- measure.py: how one callable is timed (TimingConfig, the samples' statistics, `measure`);
- devices.py: the CUDA device it is timed on, or the host clock for CPU tests;
- inputs.py: a bench entry's inputs, made where they are timed;
- fresh.py: fresh input values for every timed call, by a rule the worker and the parent share.
"""
