#!/usr/bin/env bash
# TileLang for the GPU machine in one carried folder, .dev/tilelang-xz (git-ignored), instead of two commands.
# ../shared/device/tilelang.sh fetches its wheels into .dev/tilelang-a (z3-solver, apache-tvm-ffi, torch-c-dlpack-ext:
# 32 MB) and .dev/tilelang-b (tilelang: 48 MB), together past the 64 MiB a device command carries, so a session had to
# `park` part A on a machine and carry part B in the next command within the 30 s the machine stays up. Here they are
# unpacked as `pip install --target` would lay them out, z3's duplicate libz3.so made a link to libz3.so.4.*, z3's
# command-line binary dropped (TileLang loads libz3, never runs z3), and the tree packed with xz: 37.4 MB for
# TileLang 0.1.15, which with .whl (9 MB) fits one command. Takes about 3 minutes here (xz -9).
#   bash ../shared/device/tilelang.sh && bash benchmarks/tilelang_pack.sh
#   then carry .dev/tilelang-xz (and .whl): benchmarks/gpu_session.sh installs from it when it is there.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
[ -d .dev/tilelang-a ] && [ -d .dev/tilelang-b ] || { echo "tilelang_pack: run bash ../shared/device/tilelang.sh first" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/site"
for w in .dev/tilelang-a/*.whl .dev/tilelang-b/*.whl; do unzip -q -o "$w" -d "$stage/site"; done
rm -rf "$stage"/site/*.data "$stage/site/build_backend.py"
(cd "$stage/site/z3/lib" && for v in libz3.so.4.*; do cmp -s libz3.so "$v" && ln -sf "$v" libz3.so; done)
mkdir -p .dev/tilelang-xz
tar -C "$stage" -cf - site | xz -9 -T0 > .dev/tilelang-xz/tilelang-site.tar.xz
cat > .dev/tilelang-xz/install.sh <<'INNER'
# Unpacks TileLang into /tmp/site on the GPU machine (a no-op once it is there); made by benchmarks/tilelang_pack.sh.
set -e
here=$(dirname "$0")
[ -f /tmp/site/tilelang/__init__.py ] || python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall('/tmp', filter='tar')" "$here/tilelang-site.tar.xz"
INNER
du -sh .dev/tilelang-xz
