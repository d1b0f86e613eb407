#!/usr/bin/env bash
# tplc compile / render of .tplb from the command line: atomic output, compile-time flags
# stored, corrupt files rejected with exit 1, --emit c. Usage: compile_cli.sh TPLC
set -u
tplc=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 pass=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $1"; fi; }

printf '{%% if x %%}\n  {{ x }}\n{%% endif %%}\n' > "$tmp/t.jinja"
echo '{"x": "hi"}' > "$tmp/s.json"
"$tplc" compile "$tmp/t.jinja" --trim-blocks --lstrip-blocks -o "$tmp/t.tplb"
check "compile succeeds" '[ -s "$tmp/t.tplb" ]'
check "options are stored" '[ "$("$tplc" render "$tmp/t.tplb" --state "$tmp/s.json")" = "$("$tplc" render "$tmp/t.jinja" --trim-blocks --lstrip-blocks --state "$tmp/s.json")" ]'
cp "$tmp/t.tplb" "$tmp/before.tplb"
printf '{%% for %%}' > "$tmp/bad.jinja"
"$tplc" compile "$tmp/bad.jinja" -o "$tmp/t.tplb" 2>/dev/null
check "failed compile exits 1" '[ $? -eq 1 ]'
check "failed compile leaves the old artifact" 'cmp -s "$tmp/t.tplb" "$tmp/before.tplb"'
check "no temporary files left" '[ "$(ls "$tmp" | grep -c tmp)" -eq 0 ]'
"$tplc" render "$tmp/t.tplb" --strict >/dev/null 2>&1
check "compile flags on a .tplb are a usage error" '[ $? -eq 2 ]'
head -c 100 "$tmp/t.tplb" > "$tmp/cut.tplb"
"$tplc" render "$tmp/cut.tplb" 2>"$tmp/err" >/dev/null
check "truncated .tplb exits 1" '[ $? -eq 1 ]'
check "truncated .tplb says why" 'grep -q "not a valid .tplb" "$tmp/err"'
cp "$tmp/t.tplb" "$tmp/renamed.bin"
check ".tplb detected by magic" '[ "$("$tplc" render "$tmp/renamed.bin" --state "$tmp/s.json")" = "  hi" ]'
"$tplc" compile "$tmp/t.jinja" --emit c -o "$tmp/my-view.c"
check "--emit c derives the symbol (tpl_view_ prefix)" 'grep -q "^const struct tpl_static_program tpl_view_t = {" "$tmp/my-view.c"'
"$tplc" compile "$tmp/t.jinja" --emit c --name 9bad -o "$tmp/x.c" 2>/dev/null
check "--name must be an identifier" '[ $? -eq 2 ]'
"$tplc" compile "$tmp/t.tplb" --emit c --name from_tplb -o "$tmp/y.c"
check "a .tplb can be emitted as C" 'grep -q "from_tplb = {" "$tmp/y.c"'
mkdir "$tmp/dep"
printf '{%% extends "base.jinja" %%}{%% block b %%}{%% include "part one.jinja" %%}{%% endblock %%}' > "$tmp/dep/main.jinja"
printf '{%% import "macros.jinja" as m %%}[{%% block b %%}{%% endblock %%}]' > "$tmp/dep/base.jinja"
printf '{%% include "part one.jinja" %%}x' > "$tmp/dep/macros.jinja"
printf 'one' > "$tmp/dep/part one.jinja"
"$tplc" compile "$tmp/dep/main.jinja" -o "$tmp/dep/main.tplb" --depfile "$tmp/dep/main.d"
check "--depfile is written" '[ -s "$tmp/dep/main.d" ]'
check "--depfile names the output and the template" 'head -n1 "$tmp/dep/main.d" | grep -qF "$tmp/dep/main.tplb: $tmp/dep/main.jinja"'
printf '%s: %s \\\n  %s \\\n  %s \\\n  %s\n' "$tmp/dep/main.tplb" "$tmp/dep/main.jinja" "$tmp/dep/base.jinja" \
  "$tmp/dep/macros.jinja" "$tmp/dep/part\\ one.jinja" > "$tmp/dep/want.d"
check "--depfile lists extends, import and include once each (spaces escaped)" 'cmp -s "$tmp/dep/main.d" "$tmp/dep/want.d"'
# tplc never writes to its inputs; -o keeps symlinks, permissions and special files
mkdir "$tmp/io"
printf 'Hi {{ n }}' > "$tmp/io/a.jinja"
echo '{"n": 1}' > "$tmp/io/s.json"
cp "$tmp/io/a.jinja" "$tmp/io/a.orig"
"$tplc" compile "$tmp/io/a.jinja" -o "$tmp/io/a.jinja" 2>"$tmp/io/err"
check "-o naming the template is refused" '[ $? -eq 2 ] && cmp -s "$tmp/io/a.jinja" "$tmp/io/a.orig" && grep -q "is an input" "$tmp/io/err"'
"$tplc" render "$tmp/io/a.jinja" --state "$tmp/io/s.json" -o "$tmp/io/s.json" 2>/dev/null
check "-o naming the state is refused" '[ $? -eq 2 ] && grep -q "\"n\"" "$tmp/io/s.json"'
"$tplc" compile "$tmp/io/a.jinja" -o "$tmp/io/a.tplb" --depfile "$tmp/io/a.jinja" 2>/dev/null
check "--depfile naming the template is refused" '[ $? -eq 2 ] && cmp -s "$tmp/io/a.jinja" "$tmp/io/a.orig"'
echo old > "$tmp/io/real.txt"
chmod 640 "$tmp/io/real.txt"
ln -s real.txt "$tmp/io/link.txt"
"$tplc" render "$tmp/io/a.jinja" --state "$tmp/io/s.json" -o "$tmp/io/link.txt"
check "-o through a symlink writes its target and keeps the link" '[ -L "$tmp/io/link.txt" ] && [ "$(cat "$tmp/io/real.txt")" = "Hi 1" ]'
check "-o keeps the permissions of an existing file" '[ "$(stat -c %a "$tmp/io/real.txt")" = 640 ]'
mkfifo "$tmp/io/fifo"
(cat "$tmp/io/fifo" > "$tmp/io/fifo.out") &
"$tplc" render "$tmp/io/a.jinja" --state "$tmp/io/s.json" -o "$tmp/io/fifo"
wait
check "-o to a FIFO writes into it" '[ -p "$tmp/io/fifo" ] && [ "$(cat "$tmp/io/fifo.out")" = "Hi 1" ]'
"$tplc" render /dev/zero 2>"$tmp/io/err"
check "an endless input is refused" '[ $? -eq 2 ] && grep -q "not a regular file" "$tmp/io/err"'

mkdir -p "$tmp/trav/sub"
echo secret > "$tmp/trav/secret.txt"
printf '{%% include "../secret.txt" %%}' > "$tmp/trav/sub/a.jinja"
"$tplc" render "$tmp/trav/sub/a.jinja" >"$tmp/trav/out" 2>&1
check "an include never leaves the template's folder through .. (as Jinja2's FileSystemLoader)" '[ $? -eq 1 ] && grep -q "not found" "$tmp/trav/out" && ! grep -qx secret "$tmp/trav/out"'
printf '{{ tr("Hello") }}' > "$tmp/io/t.jinja"
"$tplc" compile "$tmp/io/t.jinja" -o "$tmp/io/t.tplb"
"$tplc" tr-extract "$tmp/io/t.tplb" -o "$tmp/io/cat.json" 2>"$tmp/io/err"
check "tr-extract refuses a .tplb (it keeps no record of tr() calls)" '[ $? -eq 2 ] && [ ! -e "$tmp/io/cat.json" ] && grep -q "not a .tplb" "$tmp/io/err"'
"$tplc" compile "$tmp/io/a.jinja" --emit c --name int -o "$tmp/io/int.c" 2>/dev/null
check "--name refuses a C keyword" '[ $? -eq 2 ] && [ ! -e "$tmp/io/int.c" ]'
# --name: a symbol the generated C cannot define is refused (exit 2, nothing written); every accepted
# one compiles (gcc -std=c11 and the default gnu mode): main, libc's and libtpl's functions and
# variables, the included headers' macros and types, reserved names, tpl's namespace, GNU/C23 keywords
inc="$(cd "$(dirname "$0")/.." && pwd)/include"
cc_=${CC:-cc}
if command -v "$cc_" >/dev/null; then
  for nm in main printf getline fileno strdup memcpy environ stdout errno NULL EOF bool true size_t uint32_t FILE \
            INT8_MAX UINT64_C SIZE_MAX linux unix asm typeof _x __x tpl_render tpl_native_step tpl_static_name \
            tpl_program TPL_OK; do
    rm -f "$tmp/io/n.c"
    "$tplc" compile "$tmp/io/a.jinja" --emit c --native --name "$nm" -o "$tmp/io/n.c" 2>"$tmp/io/err"
    check "--name $nm is refused" '[ $? -eq 2 ] && [ ! -e "$tmp/io/n.c" ] && grep -q "not a symbol the generated C can define" "$tmp/io/err"'
  done
  for nm in view data name code str tpl_view_x front_desk2; do
    "$tplc" compile "$tmp/io/a.jinja" --emit c --native --name "$nm" -o "$tmp/io/n.c"
    check "--name $nm compiles (c11 and gnu)" '"$cc_" -std=c11 -Wall -Wextra -Werror -I"$inc" -c "$tmp/io/n.c" -o "$tmp/io/n.o" && "$cc_" -Werror -I"$inc" -c "$tmp/io/n.c" -o "$tmp/io/n.o"'
  done
  # the template's path goes into the header comment: a path with */, a newline or a backslash-newline
  # (a line splice: *\<newline>/ is */ too) must not end the comment
  wd=$(printf '%s/io/we*/x\n"*\\\n.' "$tmp")
  mkdir -p "$wd"
  wp="$wd/t.jinja"
  cp "$tmp/io/a.jinja" "$wp"
  for native in "" --native; do
    rm -f "$tmp/io/n.c"
    "$tplc" compile "$wp" --emit c $native --name weird -o "$tmp/io/n.c"
    check "--emit c $native of a template whose path holds */ and a newline compiles" '"$cc_" -std=c11 -Wall -Wextra -Werror -I"$inc" -c "$tmp/io/n.c" -o "$tmp/io/n.o"'
  done
fi
"$tplc" render "$tmp/io/a.jinja" --state "$tmp/io/s.json" --golden "$tmp/io/s.json" 2>/dev/null
check "--state with --golden is a usage error" '[ $? -eq 2 ]'
"$tplc" render "$tmp/io/a.jinja" --case 1 2>/dev/null
check "--case without --golden is a usage error" '[ $? -eq 2 ]'
check "--help prints the usage and exits 0" '"$tplc" --help | grep -q "^usage: tplc render"'

# tplc compile --lang L binds L into the program (issue 19): tr() uses it when the render gives
# no language; the render's --lang and tr(lang=) still win; the .tplb (format 4) and --emit c keep it
mkdir "$tmp/lang"
printf "{{ tr('Hi') }} {{ tr('Hi', lang='de') }}" > "$tmp/lang/b.jinja"
echo '{"fr": {"Hi": "Salut"}, "de": {"Hi": "Hallo"}}' > "$tmp/lang/cat.json"
"$tplc" compile "$tmp/lang/b.jinja" --lang fr -o "$tmp/lang/b.tplb"
check "compile --lang: the bound language translates" '[ "$("$tplc" render "$tmp/lang/b.tplb" --catalog "$tmp/lang/cat.json")" = "Salut Hallo" ]'
check "compile --lang: render --lang wins" '[ "$("$tplc" render "$tmp/lang/b.tplb" --catalog "$tmp/lang/cat.json" --lang de)" = "Hallo Hallo" ]'
"$tplc" compile "$tmp/lang/b.jinja" -o "$tmp/lang/none.tplb"
check "without --lang nothing is bound" '[ "$("$tplc" render "$tmp/lang/none.tplb" --catalog "$tmp/lang/cat.json")" = "Hi Hallo" ]'
printf 'Hi {x}' > "$tmp/lang/f.fmt"
echo '{"fr": {"Hi {x}": "Salut {x}"}}' > "$tmp/lang/c2.json"
echo '{"x": 1}' > "$tmp/lang/x.json"
"$tplc" compile "$tmp/lang/f.fmt" --lang fr -o "$tmp/lang/f.tplb"
check "compile --lang: a format string is translated" '[ "$("$tplc" render "$tmp/lang/f.tplb" --catalog "$tmp/lang/c2.json" --state "$tmp/lang/x.json")" = "Salut 1" ]'
"$tplc" compile "$tmp/lang/b.jinja" --lang fr --emit c --name bound -o "$tmp/lang/b.c"
check "--emit c keeps the bound language" 'grep -A12 "^const struct tpl_static_program bound = {" "$tmp/lang/b.c" | grep -q "^    \"fr\",$"'

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
