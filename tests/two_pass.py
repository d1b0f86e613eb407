#!/usr/bin/env python3
"""A large Jinja template is compiled in two passes over its top-level statements, one
statement's tree in memory at a time (issue 13 §1: the whole tree of a template of sets,
macros, with or block statements was 15-35x its size; a block that self.NAME() calls from
another statement, or that the base template of an extends chain places, is parsed again
there); a small one from its whole tree. Both must give the same program. Every Jinja template of the
corpus (../shared/conformance and tests/cases) is compiled as it is (whole tree) and padded
past the two-pass size with a comment before its last line end (two passes); the two
disassemblies must be the same instruction for instruction (source lines aside: the padding is
on the last one), and a failing template must fail in both.
Usage: two_pass.py TPLC CORPUS_DIR... Prints "N passed, N failed"."""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shard  # noqa: E402  (TPL_TEST_SHARD: this tree's half of the corpus, tests/shard.py)

TPLC = sys.argv[1]
ROOTS = sys.argv[2:]
PAD = "{#" + "pad " * 17000 + "#}"  # 68 KB: past the two-pass size (64 KiB)
RAW_BEGIN = re.compile(r"\{%[-+]?\s*raw\s*-?%\}")
RAW_END = re.compile(r"\{%[-+]?\s*endraw\b")
STATEMENT = re.compile(r"\{%[-+]?\s*(?!(?:if|elif|else|endif|for|endfor|break|continue)\b)[a-z]")
# A large block of a template that extends another is parsed again where the base template
# places it and compiled a statement at a time (after two parses that gather its frame's names):
# the pad goes inside the first block of every child template (after a plain `%}`: no whitespace
# control or trimming changes around it), and the program must be the whole tree's.
# (Session 17: the line notes are compared too. Text of a parent template whose TEXT was emitted
# after the compile left that template was located by its offset in the main template's lines,
# and a frame's UNDEF_MSGs took whatever offset the compile had seen last: in
# s16-forms-page/s16-pelican-index "; 4" where the whole tree said "; 7".)
BLOCK_TAG = re.compile(r"\{%\+?\s*block\s+\w+(?:\s+(?:scoped|required))*\s*%\}")


def dump(path, extra):
    p = subprocess.run([TPLC, "dump", path] + extra, capture_output=True, timeout=60)
    lines = p.stdout.decode(errors="replace").split("\n")[1:]  # (the header names the file and its size)
    return p.returncode, [re.sub(r"(; \d+):.*$", r"\1", x) for x in lines]


def compare(t, ppath, extra, what, cache):
    """The template's program and its padded copy's; a failure's line, or None."""
    key = (t, tuple(extra))
    if key not in cache:
        cache[key] = dump(t, extra)
    rc0, d0 = cache[key]
    rc1, d1 = dump(ppath, extra)
    os.unlink(ppath)
    if rc0 == rc1 and (rc0 != 0 or d0 == d1):
        return None
    diff = next((f"{a!r} / {b!r}" for a, b in zip(d0, d1) if a != b), f"{len(d0)} / {len(d1)} lines")
    return f"FAIL {t}{what}: exit {rc0} / {rc1} (padded); first difference: {diff}"


def check_template(t, src, extra, big_block, links):
    """Both checks of one template (in its folder of links): a list of failure lines."""
    out, cache = [], {}
    sub = links[os.path.dirname(t)]
    if extra is not None:
        end = len(src.rstrip("\r\n"))
        ppath = os.path.join(sub, "two-pass-" + os.path.basename(t))
        with open(ppath, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(src[:end] + PAD + src[end:])
        out.append(compare(t, ppath, extra, (" " + " ".join(extra)) if extra else "", cache))
    if big_block is not None:
        ppath = os.path.join(sub, "big-block-" + os.path.basename(t))
        with open(ppath, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(src[:big_block] + PAD + src[big_block:])
        out.append(compare(t, ppath, [], " (large block)", cache))
    return [x for x in out if x]


templates = []
for root in ROOTS:
    for dp, _, fns in os.walk(root):
        templates += [os.path.join(dp, f) for f in fns if f.endswith((".jinja", ".j2"))]
templates.sort()
# What each template is checked for, over the whole corpus (so that the shards of
# TPL_TEST_SHARD together check exactly what one unsharded run does).
work = []  # (template, source, two-pass options or None, large block's offset or None)
two_pass = 0
for t in templates:
    with open(t, "rb") as f:
        src = f.read().decode("utf-8", errors="surrogateescape")
    if len(src) >= 65536:
        continue  # (the whole-tree compile either way)
    extra = None
    opens = [m.end() for m in RAW_BEGIN.finditer(src)]
    if not STATEMENT.search(src):
        pass  # (only if/for statements: compiled one statement at a time either way)
    elif opens and not RAW_END.search(src, opens[-1]):
        pass  # (a {% raw %} ending the template would take the padding as its text)
    else:
        # padded past the two-pass size with a comment before its last line end; the options that
        # change what is compiled, on every other template (not when the template's last line is
        # blanks only: lstrip_blocks strips them before the pad's comment, as Jinja2 does, so the
        # padded template is another template there)
        end = len(src.rstrip("\r\n"))
        last = src[:end].rsplit("\n", 1)[-1]
        blank_tail = last != "" and last.strip(" \t") == ""
        extra = ["--trim-blocks", "--lstrip-blocks", "--autoescape"] if two_pass % 2 and not blank_tail else []
        two_pass += 1
    m = BLOCK_TAG.search(src)
    big_block = m.end() if "extends" in src and m else None
    if (extra is not None or big_block is not None) and shard.mine(t):
        work.append((t, src, extra, big_block))
two_pass = sum(1 for w in work if w[2] is not None)
big_blocks = sum(1 for w in work if w[3] is not None)
failures = []
with tempfile.TemporaryDirectory() as d:
    # each template's padded copies go in a folder of links to its neighbours (included and
    # imported templates)
    links = {}
    for t, *_ in work:
        folder = os.path.dirname(t)
        if folder not in links:
            links[folder] = os.path.join(d, str(len(links)))
            os.mkdir(links[folder])
            for x in os.listdir(folder):
                os.symlink(os.path.abspath(os.path.join(folder, x)), os.path.join(links[folder], x))
    # (two workers: the 2-core CI machine, when meson runs this test alone at the end of a tree)
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        for lines in pool.map(lambda w: check_template(*w, links), work):
            failures += lines
for line in failures:
    print(line)
checks = two_pass + big_blocks
print(f"{two_pass} templates compiled both ways, {big_blocks} with a large block{shard.describe()}")
print(f"{checks - len(failures)} passed, {len(failures)} failed")
sp = shard.spec()
n = sp[1] if sp else 1
sys.exit(1 if failures or two_pass < 100 // n or big_blocks < 10 // n else 0)
