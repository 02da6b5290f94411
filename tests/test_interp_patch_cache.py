"""rungs.backends.triton_lang_patch: the interpreter's patch of triton.language looks up the builtins found at install
instead of walking the packages on every launch and every call of a @jit helper, and patches exactly what the walk
did. Each check runs in a child process: TRITON_INTERPRET=1 must be set before triton is imported."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import inspect, json
import torch, triton, triton.language as tl
from triton.runtime import interpreter as interp
from triton.language import standard
from rungs.backends import triton_lang_patch

@triton.jit
def helper(x):
    return tl.exp(x - tl.max(x, axis=0))

@triton.jit
def softmax(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * n + offs, mask=offs < n, other=-float("inf"))
    e = helper(x)
    tl.store(out_ptr + row * n + offs, e / tl.sum(e, axis=0), mask=offs < n)

def changes():
    # a launch's patch, then a nested @jit call's (tl.max's module sees triton.language.core) while it holds
    outer = interp._patch_lang(softmax.fn)
    nested = interp._patch_lang(standard.max.fn)
    if outer is None or not hasattr(outer, "_changes"):
        return None  # a Triton whose patch keeps no record
    made = [[[type(o).__name__, getattr(o, "__name__", ""), n] for o, n, _ in s._changes] for s in (outer, nested)]
    nested.restore()
    outer.restore()
    return made

def run():
    x = torch.randn(5, 300, generator=torch.Generator().manual_seed(0))
    y = torch.empty_like(x)
    softmax[(5,)](y, x, 300, BLOCK=512)
    return y

# A nested call's patch is never undone (Triton 3.9), so a launch changes what later patches find: compared before
# any launch, or (LAUNCH_FIRST) after one, with the stand-ins it left in place when the names are found
if LAUNCH_FIRST:
    run()
before, walk = changes(), interp._patch_builtin
assert triton_lang_patch.install() and triton_lang_patch.install()  # installed, and idempotent
after = changes()
walks = []
getmembers = inspect.getmembers
inspect.getmembers = lambda *a, **k: walks.append(1) or getmembers(*a, **k)
y1 = run()
inspect.getmembers = getmembers

# A builtin registered after install (red team 2026-12-06: a candidate's own `_tensor_member_fn`, which ran one branch
# unpatched here and another on the GPU; patched, it is handed _semantic and can tell the interpreter's from the
# compiler's): refused
@tl.core._tensor_member_fn
@tl.core.builtin
def rowscale(x, _semantic=None):
    return x

try:
    added_after = changes()
except Exception as exc:  # refused: a builtin whose code is not Triton's
    added_after = type(exc).__name__
interp._patch_builtin = walk
added_before = changes()  # Triton's walk again, from here on
y0 = run()
print(json.dumps({"before": before, "after": after, "added_before": added_before, "added_after": added_after,
                  "same_output": bool(torch.equal(y0, y1)),
                  "close": bool(torch.allclose(y1, torch.softmax(torch.randn(5, 300, generator=torch.Generator().manual_seed(0)), -1))),
                  "walks": len(walks), "patched": sum(len(s) for s in (before or []))}))
"""


@pytest.mark.parametrize("launch_first", [False, True])
def test_the_cached_patch_makes_the_walks_changes_without_walking(launch_first: bool):
    """The patch a launch makes and the one a nested @jit call makes (tl.max's, whose module sees tl.core) change the
    same attributes of the same objects in the same order as Triton's own walk, whether installed before any launch
    or after one; a launch with a helper, tl.max and tl.sum then walks no package (the walk was half of an
    interpreted softmax's time), and computes the same bits. A builtin whose code is not Triton's (a candidate's own,
    registered after install) is refused, where Triton's walk patches it."""
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", f"LAUNCH_FIRST = {launch_first}\n" + CHILD], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out["before"] is None:
        pytest.skip("this Triton's _patch_lang keeps no record of its changes")
    assert out["patched"] > (30 if launch_first else 100)  # the walk found builtins: not two empty lists compared
    assert out["after"] == out["before"]
    assert ["type", "tensor", "rowscale"] in out["added_before"][0]  # Triton's walk patches it (and hands it _semantic)
    assert out["added_after"] == "ForeignBuiltin"  # here it is refused: its code is not Triton's
    assert out["walks"] == 0
    assert out["same_output"] and out["close"]
