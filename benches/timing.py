"""Wall time and peak RSS of one command, shared by the benchmarks."""
import os
import resource
import subprocess
import sys
import time


def timed(cmd, cwd):
    """Wall seconds and peak RSS in MB of one run of cmd."""
    has_time = os.path.exists("/usr/bin/time")
    full = ["/usr/bin/time", "-f", "%M"] + cmd if has_time else cmd
    start = time.perf_counter()
    out = subprocess.run(full, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    if has_time:
        rss_kb = int(out.stderr.strip().splitlines()[-1])
    else:
        rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, rss_kb / 1024
