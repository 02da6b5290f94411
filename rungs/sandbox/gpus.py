"""Which GPUs a run may use, and how a process is pinned to one of them.

A GPU index is CUDA's, as this process sees it (0 is the first device in the harness's own CUDA_VISIBLE_DEVICES,
when that is set). Every process started for a climb on GPU i (its sandboxed worker, the baseline and bench-reference
processes, ncu) gets `pinned_env(i)`, so its "cuda" device is GPU i and no other GPU is in CUDA's sight.
"""
from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rungs.core.errors import BadInput


def _own_devices() -> list[str] | None:
    """The harness's own CUDA_VISIBLE_DEVICES entries; None where it is not set (every GPU is in sight)."""
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        return None
    return [d.strip() for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]


def physical(index: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry of the harness's GPU `index`: itself, or its entry in the harness's own list
    (an index into the harness's view of the devices, not the machine's)."""
    own = _own_devices()
    if own is not None and index < len(own):
        return own[index]
    return str(index)


def index_of(entry: str) -> int:
    """The harness's index of a CUDA_VISIBLE_DEVICES entry (a Ray GPU id on this host): the inverse of physical."""
    own = _own_devices()
    if own is not None and entry in own:
        return own.index(entry)
    return int(entry)


def pinned_env(index: int | None) -> dict[str, str]:
    """Environment entries that show a process only GPU `index` (nothing for None: what the harness sees). Where the
    machine has several GPUs and GPU `index`'s device node is known, the GPU is named by its UUID: a sandbox pinned
    to it sees only that node (`sandbox_nodes`), and CUDA there may number the GPUs it can open from 0."""
    if index is None:
        return {}
    found = devices()
    if len(found) > 1 and index < len(found) and found[index].uuid and _minor(found[index].bus) is not None:
        return {"CUDA_VISIBLE_DEVICES": found[index].uuid}
    return {"CUDA_VISIBLE_DEVICES": physical(index)}


def identity(pinned: dict[str, str] | None) -> str:
    """The GPU a process started with `pinned` (a pool's pinned_env, or {} for the harness's first GPU) runs on, as
    one name whichever way a process numbers the GPUs: its UUID where known, else its CUDA_VISIBLE_DEVICES entry.
    It names the GPU's timing lock (rungs/timing/gpu_lock.py) and is what `nvidia-smi -i` takes."""
    entry = (pinned or {}).get("CUDA_VISIBLE_DEVICES", "").strip()
    if entry.startswith("GPU-"):
        return entry
    index = index_of(entry) if entry.isdigit() else 0
    found = devices()
    if index < len(found) and found[index].uuid:
        return found[index].uuid
    return physical(index)


@dataclass(frozen=True)
class Device:
    """One GPU as the harness's CUDA numbering shows it."""

    name: str
    uuid: str = ""
    """`GPU-...`, as CUDA_VISIBLE_DEVICES takes it; "" where torch does not say."""
    bus: str = ""
    """Its PCI address (`0000:19:00.0`), which names its folder in /proc/driver/nvidia/gpus; "" where unknown."""


PROBE = """import json, torch
out = []
for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
    p = torch.cuda.get_device_properties(i)
    uuid = str(getattr(p, "uuid", "") or "")
    bus = ""
    if all(hasattr(p, a) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
        bus = "%04x:%02x:%02x.0" % (p.pci_domain_id, p.pci_bus_id, p.pci_device_id)
    out.append({"name": torch.cuda.get_device_name(i), "uuid": uuid and ("" if uuid.startswith("GPU-") else "GPU-") + uuid,
                "bus": bus})
print(json.dumps(out))
"""


@functools.lru_cache(maxsize=1)
def devices() -> tuple[Device, ...]:
    """The GPUs this process sees, by index; () with none. Asked of a short child process, so the harness's own
    process never makes a CUDA context (its children are pinned to other GPUs)."""
    import torch

    if not torch.cuda.is_available():
        return ()
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=False)
    try:
        return tuple(Device(**{k: str(d.get(k, "")) for k in ("name", "uuid", "bus")})
                     for d in json.loads(out.stdout.strip().splitlines()[-1]))
    except (json.JSONDecodeError, IndexError, AttributeError, TypeError):
        return tuple(Device(f"GPU {i}") for i in range(torch.cuda.device_count()))


def names() -> tuple[str, ...]:
    """The names of the GPUs this process sees, by index; () with none."""
    return tuple(d.name for d in devices())


DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")
"""One folder per GPU, named by PCI address, whose `information` gives the GPU's device node (`Device Minor: 1`)."""


def _pci(address: str) -> tuple[int, ...] | None:
    """`0000:19:00.0` or nvidia-smi's `00000000:19:00.0` as numbers, so the two spellings compare equal."""
    found = re.fullmatch(r"([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-7])", address.strip())
    return tuple(int(g, 16) for g in found.groups()) if found else None


def _minor(bus: str) -> int | None:
    """The /dev/nvidiaN number of the GPU at PCI address `bus`; None where the driver's folder does not say."""
    root = DRIVER_GPUS
    want = _pci(bus) if bus else None
    if want is None or not root.is_dir():
        return None
    for folder in root.iterdir():
        if _pci(folder.name) != want:
            continue
        try:
            found = re.search(r"^Device Minor:\s*(\d+)", (folder / "information").read_text(), re.M)
        except OSError:
            return None
        return int(found.group(1)) if found else None
    return None


def sandbox_nodes(env: dict[str, str], dev: Path = Path("/dev")) -> list[str] | None:
    """The GPU device nodes a sandbox started with `env` may see: where `env` pins it to one GPU by UUID
    (`pinned_env` on a machine of several), that GPU's node and the driver's shared ones (nvidiactl, nvidia-uvm,
    nvidia-caps), so a candidate cannot open, read or load the GPU another climb is timing on; None (every node)
    otherwise."""
    pinned = env.get("CUDA_VISIBLE_DEVICES", "")
    match = next((d for d in devices() if d.uuid and d.uuid == pinned), None)
    minor = _minor(match.bus) if match is not None else None
    if minor is None:
        return None
    shared = [str(p) for p in sorted(dev.glob("nvidia*")) if not re.fullmatch(r"nvidia\d+", p.name)]
    own = dev / f"nvidia{minor}"
    return shared + ([str(own)] if own.exists() else [])


def parse(text: str | None, available: tuple[str, ...]) -> list[int]:
    """`--gpus`'s value: "0,1", "all", or None (the first GPU; none on a machine without one). A GPU that is not
    there is one line naming those that are."""
    if text is None:
        return [0] if available else []
    have = (f"this machine has {len(available)} ({', '.join(f'{i}: {n}' for i, n in enumerate(available))})"
            if available else "this machine has no CUDA device")
    if text.strip() == "all":
        if not available:
            raise BadInput(f"--gpus all: {have}")
        return list(range(len(available)))
    picked: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise BadInput(f"--gpus {text!r}: {part!r} is not a GPU index (give indexes like 0,1 or 'all')")
        if int(part) >= len(available):
            raise BadInput(f"--gpus {text!r}: there is no GPU {part}; {have}")
        if int(part) not in picked:
            picked.append(int(part))
    return picked


__all__ = ["physical", "index_of", "pinned_env", "identity", "devices", "names", "sandbox_nodes", "parse", "Device"]
