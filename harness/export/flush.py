"""The L2 flush and spin of the export's C test program: the harness's own timing method (rungs/timing/), in C.

The harness times a call as: read a buffer of at least twice the L2 (256 MiB or more) -> a device spin (so the start
event does not wait on the host) -> event -> call -> event -> wait for the device, and takes the median. The test
program does the same, so its time and the harness's are one method on two launch paths. Back-to-back calls, which
it also prints, ran the gemm demo 1.07-1.15x slower than the harness's time on the H200 (2026-12-02); so did calls
each after a flush but queued without waiting (the first version of this file): a compute-bound kernel that never
lets the device idle runs at a lower clock, so the wait after each call is part of the method. A read-only flush
needs a kernel: this PTX, loaded with cuModuleLoadData (the driver compiles it for the GPU at hand), reads the buffer
16 bytes a thread at a time and keeps the xor of what it read; a store that never happens (the buffer holds ones)
keeps the loads from being optimized away. The spin is one thread reading %clock64 until the cycles have passed
(torch.cuda._sleep's loop, the harness's spin).
"""
from __future__ import annotations

KERNEL = "kh_flush"
SPIN_KERNEL = "kh_spin"
PTX = r""".version 6.0
.target sm_52
.address_size 64

.visible .entry kh_flush(.param .u64 buf, .param .u64 chunks, .param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [buf];
  ld.param.u64 %rd2, [chunks];
  ld.param.u64 %rd3, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.u64 %rd4, %rd4, %rd5;
  mul.wide.u32 %rd6, %r4, %r2;
  mov.u32 %r5, 0;
LOOP:
  setp.ge.u64 %p1, %rd4, %rd2;
  @%p1 bra DONE;
  shl.b64 %rd7, %rd4, 4;
  add.u64 %rd8, %rd1, %rd7;
  ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd8];
  xor.b32 %r5, %r5, %r6;
  xor.b32 %r5, %r5, %r7;
  xor.b32 %r5, %r5, %r8;
  xor.b32 %r5, %r5, %r9;
  add.u64 %rd4, %rd4, %rd6;
  bra LOOP;
DONE:
  setp.eq.u32 %p2, %r5, 0x7eadbeef;
  @%p2 st.global.u32 [%rd3], %r5;
  ret;
}

.visible .entry kh_spin(.param .u64 cycles)
{
  .reg .pred %q<2>;
  .reg .b64 %rs<5>;
  ld.param.u64 %rs1, [cycles];
  mov.u64 %rs2, %clock64;
SPIN:
  mov.u64 %rs3, %clock64;
  sub.u64 %rs4, %rs3, %rs2;
  setp.lt.u64 %q1, %rs4, %rs1;
  @%q1 bra SPIN;
  ret;
}
"""


def c_string(text: str = PTX) -> str:
    """The PTX as one C string literal, a line per source line."""
    return "\n".join('"' + line.replace("\\", "\\\\").replace('"', '\\"') + '\\n"' for line in text.splitlines())
