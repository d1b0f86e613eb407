#!/bin/bash
# tpl-count prints a failed render's or state's error (it printed "render failed" / "state failed",
# no message, session 26): FILE:LINE:COL: error: ..., exit 1; under valgrind when it is installed,
# without a leak (session 27: the input buffers leaked on every error exit). Usage: count_errors.sh TPL_COUNT
set -u
count=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
vg=()
# valgrind when it can run this binary: not a sanitizer build (ASan's own leak check runs at exit
# there and fails the check by its exit status), nor one whose debug info it cannot read (clang's
# DWARF 5 in Debian 12's valgrind 3.19: "Possibly corrupted debuginfo file", exit 1)
if command -v valgrind >/dev/null && ! grep -q -a -E '__(asan|tsan|msan)_init' "$count"; then
    valgrind -q "$count" >/dev/null 2>"$d/probe"
    grep -q 'Valgrind:' "$d/probe" ||
        vg=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=3 --log-file="$d/vg")
fi
check() { # name, want (a line of stderr)
    "${vg[@]}" "$count" "$d" 2 >"$d/out" 2>"$d/err"
    rc=$?
    leak=0
    if [ -s "$d/vg" ]; then cat "$d/vg" >>"$d/err"; leak=1; rm -f "$d/vg"; fi
    if [ "$rc" = 1 ] && [ "$leak" = 0 ] && grep -qxF -- "$2" "$d/err"; then echo "ok $1"
    else echo "FAIL $1 (exit $rc)"; cat "$d/err"; fail=1; fi
}
printf 'a\n{{ 1 // 0 }}\n' >"$d/template.jinja"
echo '{"x": 1}' >"$d/context.json"
check render 'template.jinja:2:6: error: integer division or modulo by zero'
echo '{"x": ' >"$d/context.json"
check state 'context.json:2:1: error: unexpected token near end of file'
printf '{{ x }\n' >"$d/template.jinja"
echo '{"x": 1}' >"$d/context.json"
check compile "template.jinja:1:6: error: unexpected '}'"
exit $fail
