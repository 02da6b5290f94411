"""What the `harness` command's modules share: the one-line errors and exit codes (`friendly`), the options that
several commands take, and the checks they make before starting (a writable folder, the sandbox, a run folder).

harness/cli.py (run, check) and the sub-command modules it registers (steer_cli, task_cli, eval_cli, context_cli,
mcp_cli, export/cli) all import this module; none of them imports harness/cli.py back (tests/test_layout.py).
"""
from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional

import typer

from harness.console import error, say, warning
from rungs.core.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_RUN_ERROR, BadInput, HarnessError

if TYPE_CHECKING:
    from harness.store import RunStore
    from rungs.core.spec import TaskSpec


def friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn harness errors into one line and an exit code; never a traceback on the terminal."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HarnessError as exc:
            error(str(exc))
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            say("interrupted")
            exit_on_another_ctrl_c()
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except typer.Exit:
            raise
        except OSError as exc:
            if exc.filename is None or exc.errno not in UNWRITABLE:
                internal_error(exc)
            # a place the harness cannot write (a read-only mount, a folder of another user's): the user's to fix
            error(f"{exc.filename}: cannot write there ({exc.strerror}); make it writable, or give the command "
                  "another folder (its --help names the options)")
            raise typer.Exit(EXIT_BAD_INPUT) from None
        except Exception as exc:
            internal_error(exc)
        finally:
            forget_caught_interrupts()

    return wrapper


def exit_on_another_ctrl_c() -> None:
    """After "interrupted", the process still tears down (a `-j N` pool's processes ended, files closed): a Ctrl-C
    that lands there, or a second one, ends it at once and still with the interrupted exit code, never as a process
    killed by SIGINT (a script must tell an interrupted command from a crashed one)."""
    def leave(*_: Any) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(EXIT_INTERRUPTED)

    try:
        signal.signal(signal.SIGINT, leave)
    except ValueError:  # not the main thread: nothing to change
        pass
    forget_caught_interrupts()


def forget_caught_interrupts() -> None:
    """CPython marks a KeyboardInterrupt that leaves code run from a string (exec/eval of source) as unhandled, even
    when a caller catches it, and at exit then kills its own process with SIGINT (Py_RunMain's exit_sigint): a
    Ctrl-C that landed while the loop lazily imported a module defining a dataclass (dataclasses.py execs each
    generated __init__) made an "interrupted" run end killed by signal 2, not with 130 (about 1 in 12 under load;
    the flake in tests/test_terminal.py); a problem file's `exec("raise KeyboardInterrupt")`, failed and judged by
    the eval, would end the eval the same way. Running a string that completes clears the mark (run_eval_code_obj
    sets it anew each time): every command does it as it ends (`friendly`)."""
    exec("")  # noqa: S102 - an empty string, for the side effect above


UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
"""OSErrors of a place the harness may not write, rather than of a bug."""


def internal_error(exc: BaseException) -> NoReturn:
    """A bug in the harness: say so in one line, with the traceback in a file of this user's (error_log)."""
    text = traceback.format_exc()
    try:
        log = error_log()
        log.write_text(text)
        where = f"traceback in {log}"
    except OSError as why:
        where = f"the traceback could not be saved: {why}"
    error(f"{type(exc).__name__}: {exc} ({where})", label="internal error")
    raise typer.Exit(EXIT_RUN_ERROR) from None


def error_log() -> Path:
    """A new file for one internal error's traceback: in the harness's cache folder (~/.cache/kernel-harness/errors,
    KERNEL_HARNESS_CACHE moves it), else in a folder of this user's under the system temp folder; never a file
    another user or another run overwrites."""
    from rungs.ladder.roofline import cache_dir

    name = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}.txt"
    try:
        folder = cache_dir() / "errors"
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK | os.X_OK):
            return folder / name
    except OSError:
        pass
    folder = Path(tempfile.gettempdir()) / f"kernel-harness-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.is_symlink() or folder.stat().st_uid != os.getuid():  # someone else's: a private one instead
        folder = Path(tempfile.mkdtemp(prefix="kernel-harness-errors-"))
    return folder / name


def writable_folder(path: Path, what: str, fix: str = "") -> None:
    """Refuse in one line (exit 2) a folder this command must write into but cannot: a read-only mount, a file in
    its place, a folder of another user's. Made (with its parents) when it is not there yet. `what`: the option
    that names it (its fix: another folder), or a description with `fix`."""
    shown = f"{what} {path}" + ("" if path.is_absolute() else f" ({path.absolute()})")
    fix = fix or f"give a writable folder with {what} DIR"
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".harness-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except FileExistsError:
        raise BadInput(f"{shown}: a file, not a folder; {fix}") from None
    except OSError as exc:
        raise BadInput(f"{shown}: cannot write there ({exc.strerror}); {fix}") from None


def require_sandbox(unsandboxed: bool) -> str:
    """Refuse (exit 2, one line) where candidates cannot be sandboxed, unless the user opted out: then every
    worker of this process runs unsandboxed, and the verdicts and run.json say so. Returns the sandbox note."""
    from rungs.sandbox import bwrap

    if unsandboxed:
        os.environ[bwrap.UNSANDBOXED_VAR] = "1"
        warning("--unsandboxed: candidate code runs with no OS sandbox")
    try:
        bwrap.require()
    except bwrap.SandboxUnavailable as exc:
        raise BadInput(str(exc)) from None
    return bwrap.note()


UNSANDBOXED_HELP = "Run candidate code with no OS sandbox (only for code you trust; recorded in every verdict)."


def warn_if_degenerate(task: TaskSpec) -> None:
    """Say so when a kernel returning zeros or a constant could pass the task (issue: a weak task, not a bad file)."""
    from rungs.ladder.cases import degenerate_warnings

    for text in [*degenerate_warnings(task), *getattr(task, "notes", [])]:  # notes: a KernelBench problem's
        warning(f"{task.path.name}: {text}")


def open_run(run: str, runs_dir: Path) -> "RunStore":
    from harness.store import RunStore

    for candidate in (Path(run), runs_dir / run):
        if (candidate / "run.json").is_file():
            return RunStore.open(candidate)
    raise BadInput(f"{run}: not a run folder (no run.json there or under {runs_dir})")


def writable_run(store: "RunStore") -> None:
    writable_folder(store.root, "run folder", "copy the run folder somewhere writable and go on with the copy")


def timeout_option() -> Any:
    return typer.Option(None, "--timeout-s", min=1.0, help="Seconds one worker process (compile, run) may take "
                        "before it is killed (overrides the task's timeout_s).")


def parallel_option() -> Any:
    return typer.Option(1, "--parallel", "-j", min=1, help="Candidates climbing side by side, each in worker "
                        "processes of its own: on a CPU, P at once; on GPUs, P per GPU, whose compiles, runs and "
                        "checks overlap while their timings take turns (a per-GPU timing lock).")


def refuse_parallel_menu(parallel: int, executor: str = "local", gpus: int = 0) -> None:
    if parallel > 1 or executor != "local" or gpus > 1:
        raise BadInput("--interactive pauses between rungs of one climb at a time: leave out "
                       + ("--parallel" if parallel > 1 else f"--executor {executor}" if executor != "local"
                          else "--gpus (one GPU at most)"))


def executor_option() -> Any:
    return typer.Option("local", "--executor", help="Where climbs run: local (this process) or ray (each climb a Ray "
                        "task with one GPU, or one CPU where the cluster has none; a local Ray instance unless "
                        "--ray-address).")


def ray_address_option() -> Any:
    return typer.Option(None, "--ray-address", help="An existing Ray cluster to climb on (ray.init(address=...)), "
                        "with --executor ray.")


def gpus_option() -> Any:
    return typer.Option(None, "--gpus", help="GPUs to climb on, by index (0,1) or all: one worker pool per GPU, a "
                        "round's candidates climbing side by side, one per pool at a time (--parallel P: P pools a "
                        "GPU, timings taking turns) (default: the first GPU). "
                        "With --executor ray: the GPUs a local Ray instance may hand out.")


def max_gpu_seconds_option() -> Any:
    return typer.Option(None, "--max-gpu-seconds", min=0.001, help="GPU-seconds budget: the time candidates' climbs "
                        "hold their GPUs, summed over all GPUs (overrides the task's).")


def placement(gpus_text: Optional[str], executor: str, ray_address: Optional[str], parallel: int) -> tuple[Any, list[Any]]:
    """(the executor, the local executor's GPU pools) for --gpus, --executor, --ray-address and --parallel."""
    from harness.executors import gpu_pools, parse_executor
    from rungs.sandbox import gpus

    names = gpus.names() if gpus_text is not None or executor == "local" else ()
    picked = gpus.parse(gpus_text, names)
    climbs = parse_executor(executor, ray_address, parallel, picked if gpus_text is not None else None)
    # --parallel P on GPUs: P pools per GPU, whose climbs overlap everything but their timings (those take turns
    # through the GPU's timing lock, rungs/timing/gpu_lock.py)
    return climbs, gpu_pools([i for i in picked for _ in range(parallel)], names) if climbs.name == "local" else []


def autotune_option() -> Any:
    return typer.Option(None, "--autotune-s", min=0.0, help="GPU seconds one candidate may spend timing its declared "
                        "config space (CONFIGS or @triton.autotune; overrides the task's autotune_s).")
