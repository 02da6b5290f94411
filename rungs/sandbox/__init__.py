"""The sandbox: how the trusted parent runs candidate processes, apart from it.

Worker pools, one per device (pool.py: start, hand over a job, watch, kill, take back what came out), the bubblewrap
wrapper (bwrap.py), the process isolation under it (isolation.py) and one GPU per pool (gpus.py). The ladder asks a
pool for a worker and never knows how it is isolated; nothing here imports the worker's own code but the job format.
"""
