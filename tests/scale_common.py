"""The harness the scale tests share (compile_scale.py, erb_scale.py): pass/fail counting and
tplc runs bounded by their CPU time (not wall time: the machine may be busy).
TPL_SCALE_CPU overrides the CPU seconds a case may take (default 3.0: linear work takes ~0.1-0.2 s in a
plain build; tests/meson.build gives sanitized and libFuzzer trees 8.0, where it takes 1-2.5 s)."""
import os
import resource
import subprocess
import sys

CPU_LIMIT = float(os.environ.get("TPL_SCALE_CPU", "3.0"))
_counts = {"passed": 0, "failed": 0}


def check(ok, what, detail=""):
    """Counts one assertion; prints FAIL, what and detail when ok is false."""
    _counts["passed" if ok else "failed"] += 1
    if not ok:
        print(f"FAIL {what}" + (f"\n  {detail}" if detail else ""))


def run_cpu(argv, stdin=None, timeout=120):
    """Runs argv; returns (exit status, stdout, stderr, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.returncode, p.stdout, p.stderr, cpu


def finish():
    """Prints "N passed, N failed" and exits 1 when any check failed."""
    print(f"{_counts['passed']} passed, {_counts['failed']} failed")
    sys.exit(1 if _counts["failed"] else 0)
