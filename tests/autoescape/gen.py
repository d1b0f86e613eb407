#!/usr/bin/env python3
"""Writes NAME.out for every NAME.jinja here (not _*) with real Jinja2, Environment(autoescape=True)
and a FileSystemLoader on this folder: the expected outputs autoescape_check.py compares with
`tplc render --autoescape`. usage: gen.py (run after a deliberate change; needs jinja2)."""
import json, os, sys
import jinja2
here = os.path.dirname(os.path.abspath(__file__))
env = jinja2.Environment(autoescape=True, loader=jinja2.FileSystemLoader(here))
for name in sorted(os.listdir(here)):
    if not name.endswith(".jinja") or name.startswith("_"):
        continue
    base = name[:-6]
    state = {}
    if os.path.exists(os.path.join(here, base + ".json")):
        with open(os.path.join(here, base + ".json"), encoding="utf-8") as f:
            state = json.load(f)
    out = env.get_template(name).render(**state)
    with open(os.path.join(here, base + ".out"), "w", encoding="utf-8", newline="") as f:
        f.write(out)
