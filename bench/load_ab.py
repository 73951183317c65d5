"""Bulk load of the peers workload by one checkout: items/s and bytes per memory.

    python bench/load_ab.py /path/to/checkout-a 100k      # then alternate
    python bench/load_ab.py /path/to/checkout-b 100k

Each call imports nervamem from the checkout given (never the installed one), loads
bench/peers.py's workload of that size into a new store in a temporary folder the way
peers.py does (``store_many`` in batches, one transaction), and prints the load rate
(per wall second, and per CPU second: steadier on a shared machine),
the file's bytes per memory and the per-memory bytes of each B-tree (bench/bytes.py).
Alternate the checkouts a few times on a shared machine and compare.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    root = Path(sys.argv[1]).resolve()
    size_label = sys.argv[2] if len(sys.argv) > 2 else "100k"
    bench = Path(__file__).resolve().parent
    sys.path[:0] = [str(root), str(bench)]
    import nervamem

    if not nervamem.__file__ or not nervamem.__file__.startswith(str(root)):
        raise SystemExit(f"nervamem was imported from {nervamem.__file__}, not {root}")
    import latency
    import peers

    size = latency.parse_size(size_label)
    work = peers.Workload(size)
    scratch = Path(tempfile.mkdtemp(prefix="nervamem-load-"))
    try:
        system = peers.Nervamem(scratch)
        began, cpu = time.perf_counter(), time.process_time()
        system.load(work)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        on_disk = peers.disk_bytes(system.files())
        print(
            f"{root} {size_label}: load {size / seconds:,.0f} items/s "
            f"({size / cpu:,.0f} per CPU second), "
            f"{on_disk / size:,.1f} bytes/memory on disk"
        )
        breakdown = subprocess.run(
            [sys.executable, str(bench / "bytes.py"), str(system.path), str(size)],
            capture_output=True,
            text=True,
            check=True,
        )
        print(breakdown.stdout, end="")
    finally:
        shutil.rmtree(scratch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
