"""The worker's command line, the argv the sandbox starts it with and the profile rung's ncu matches:

    python -m rungs.worker JOB_DIR                                   run the job in JOB_DIR now
    python -m rungs.worker --wait DEVICE WORKER_MODULE [READY_FILE]  pre-started: import, then read JOB_DIR from stdin
    python -m rungs.worker --zygote DEVICE WORKER_MODULE READY ACK_FD  a CPU climb's phases, a fork each (zygote.py)
"""
import gc
import sys
from pathlib import Path

gc.disable()  # torch and the DSL import with the collector off; main() freezes them and turns it back on
from rungs.worker.loop import main, wait_for_job  # noqa: E402

if __name__ == "__main__":
    if sys.argv[1] == "--zygote":
        from rungs.worker.zygote import serve

        serve(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif sys.argv[1] == "--wait":
        wait_for_job(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        main(Path(sys.argv[1]))
