#!/usr/bin/env python3
"""The prompt store's overhead (issue 19), on SQLite and on a throwaway PostgreSQL server:

    bench/store_bench.py BUILD_DIR [RUNS]

1. `tplc prompt render NAME --state S` of a stored prompt against `tplc render FILE --state S` of
   the same template (examples/front-desk/view.jinja, profile pinecall): RUNS processes each
   (default 200), interleaved, median and mean wall milliseconds per process.
2. store-bench: 1,000 loads by name through the C API (tpl_store_load), and 1,000 load+render,
   and the store's round trips per load (tpl_store_round_trips).
The prompt has a row in its own dictionary and binds a second dictionary with 20 rows, so a
load also fetches two catalogs.
Prints a Markdown table for bench/RESULTS.md."""
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
build = os.path.abspath(sys.argv[1])
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
tplc = os.path.join(build, "tplc")
sb = os.path.join(build, "bench", "store-bench")
view = os.path.join(ROOT, "examples", "front-desk", "view.jinja")
state = os.path.join(ROOT, "examples", "front-desk", "view.2.json")

spec = importlib.util.spec_from_file_location("store_cli", os.path.join(ROOT, "tests", "store_cli.py"))
sys.argv = [sys.argv[0], tplc]
store_cli = importlib.util.module_from_spec(spec)
spec.loader.exec_module(store_cli)


def timed(cmd, env):
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t
    if p.returncode:
        raise RuntimeError("%s failed: %s" % (cmd, p.stderr.decode()))
    return dt * 1000, p.stdout


def bench(where, label):
    env = dict(os.environ, TPL_STORE=where)
    subprocess.run([tplc, "prompt", "create", "front.desk", "--file", view, "--profile", "pinecall"], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([tplc, "prompt", "tr-set", "front.desk", "Hello", "fr", "Bonjour"], env=env, check=True)
    for i in range(20):
        subprocess.run([tplc, "prompt", "tr-set", "front.desk", "word %d" % i, "fr", "mot %d" % i, "--dict", "common"],
                       env=env, check=True)
    subprocess.run([tplc, "prompt", "tr-bind", "front.desk", "common"], env=env, check=True)
    plain, stored = [], []
    for i in range(runs):
        a, out_a = timed([tplc, "render", view, "--state", state, "--profile", "pinecall"], env)
        b, out_b = timed([tplc, "prompt", "render", "front.desk", "--state", state], env)
        if out_a != out_b:
            raise RuntimeError("outputs differ")
        plain.append(a)
        stored.append(b)
    p = subprocess.run([sb, where, "front.desk", "1000", state], env=env, check=True, stdout=subprocess.PIPE, text=True)
    fields = dict(kv.split("=") for kv in p.stdout.split()[2:])
    return (label, statistics.median(plain), statistics.mean(plain), statistics.median(stored),
            statistics.mean(stored), float(fields["load_us"]), float(fields["load_render_us"]),
            float(fields["round_trips_per_load"]))


def main():
    rows = []
    tmp = tempfile.mkdtemp(prefix="tpl-store-bench-")
    rows.append(bench(os.path.join(tmp, "store.db"), "SQLite"))
    c = store_cli.PgCluster()
    try:
        c.start()
        c.psql("postgres", "CREATE DATABASE bench")
        rows.append(bench(c.url("bench"), "PostgreSQL (unix socket)"))
    finally:
        c.stop()
    print("| store | `tplc render FILE` ms (median / mean) | `tplc prompt render NAME` ms (median / mean) "
          "| overhead ms (median) | C API: µs per load by name (1,000) | µs per load + render | round trips per load |")
    print("| :--- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, pm, pa, sm, sa, lu, lr, rt in rows:
        print("| %s | %.2f / %.2f | %.2f / %.2f | %+.2f | %.1f | %.1f | %.0f |" % (label, pm, pa, sm, sa, sm - pm, lu, lr, rt))


if __name__ == "__main__":
    main()
