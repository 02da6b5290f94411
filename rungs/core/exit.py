"""The end of a trusted process (the harness CLI, its reference and baseline processes) without the interpreter's
teardown, which frees every object one by one: torch's million make that 0.9 of the 3.3 CPU-s `python3 -c "import
torch"` takes on a 2-core machine, paid again by every such process. What an exit does for the process is done
first, in the interpreter's order. Standard library only."""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_now(code: object) -> NoReturn:
    """sys.exit(code)'s outcome (None is 0; another non-int is printed to stderr and is 1): threads that are not
    daemons joined (and concurrent.futures' hooks), atexit handlers run (pools end their workers, temporary folders
    go, logging flushes), stdout and stderr flushed; then os._exit."""
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    shutdown = getattr(threading, "_shutdown", None)  # what Py_FinalizeEx calls first (CPython 3.11-3.13)
    if callable(shutdown):
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError) as exc:  # a full disk, a closed pipe: the interpreter's exit says so and is 120
            if stream is sys.stdout and code == 0:
                code = 120
                try:
                    print(f"error: writing the output failed: {exc}", file=sys.stderr, flush=True)
                except (OSError, ValueError):
                    pass
    os._exit(code & 0xFF)  # what the OS keeps of any exit status (sys.exit(2**40) does not raise either)
