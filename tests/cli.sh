#!/usr/bin/env bash
# tplc as a tool people trust (issue 13 §1, §2, §4): the command line (per-subcommand flags and
# --help, usage errors, --flag=value, --, standard input once, limits, checked values), inputs
# (regular files only, size cap), outputs (nothing lost or overwritten), depfiles and write
# errors. Usage: cli.sh TPLC [DOC/TPLC.1]
set -u
tplc=$1
man=${2:-}
# libgettextpo's own leaks (tests/lsan-gettextpo.supp) must not fail an ASan build's PO export
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(cd "$(dirname "$0")" && pwd)/lsan-gettextpo.supp:print_suppressions=0"
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0 pass=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $1"; fi; }
# run: runs tplc with a timeout; $rc, $tmp/out, $tmp/err
run() { timeout 10 "$tplc" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

cd "$tmp"
printf 'Hi {{ n }}' > a.jinja
echo '{"n": 1}' > s.json

# ---- §4: subcommands, --help, flags that do not apply ----
for c in render lint dump compile tr-extract; do
  run "$c" --help
  check "tplc $c --help prints its usage (exit 0)" '[ $rc -eq 0 ] && grep -q "^usage: tplc $c " out && [ ! -s err ]'
done
run render --help
check "render --help lists the limit flags with their defaults" 'grep -q -- "--fuel N .*default 20000000" out && grep -q -- "--max-memory BYTES .*default 256M" out'
check "render --help does not list compile-only flags" '! grep -q -- "--depfile" out'
run compile --help
check "compile --help documents the --emit c symbol default" 'grep -q "tpl_view_" out'
run frobnicate a.jinja
check "an unknown subcommand says so (exit 2)" '[ $rc -eq 2 ] && grep -q "unknown subcommand .frobnicate." err'
run render a.jinja --depfile x.d
check "render --depfile is a usage error" '[ $rc -eq 2 ] && grep -q "does not apply to render" err && [ ! -e x.d ]'
run dump a.jinja -o x.out
check "dump -o is a usage error" '[ $rc -eq 2 ] && grep -q "does not apply to dump" err && [ ! -e x.out ]'
run compile a.jinja --state missing.json -o a.tplb
check "compile --state is a usage error" '[ $rc -eq 2 ] && grep -q "does not apply to compile" err && [ ! -e a.tplb ]'
run render a.jinja --bogus
check "an unknown flag is a usage error" '[ $rc -eq 2 ] && grep -q "unknown flag --bogus" err'
run render a.jinja --state=s.json
check "--flag=value works" '[ $rc -eq 0 ] && [ "$(cat out)" = "Hi 1" ]'
run render --strict=yes a.jinja
check "a boolean flag with =value is a usage error" '[ $rc -eq 2 ]'
printf 'dash {{ n }}' > ./-d.jinja
run render --state s.json -- -d.jinja
check "-- ends the flags" '[ $rc -eq 0 ] && [ "$(cat out)" = "dash 1" ]'
run render a.jinja --state s.json --state s.json
check "a flag given twice is a usage error" '[ $rc -eq 2 ] && grep -q "given twice" err'
timeout 10 "$tplc" render - --state - < a.jinja >out 2>err; rc=$?
check "TEMPLATE - with --state - is a usage error" '[ $rc -eq 2 ] && grep -q "only once" err'
echo '{"n": 2}' | timeout 10 "$tplc" render a.jinja --state - >out 2>err; rc=$?
check "--state - reads standard input" '[ $rc -eq 0 ] && [ "$(cat out)" = "Hi 2" ]'
run render a.jinja --state s.json -o -
check "-o - means standard output" '[ $rc -eq 0 ] && [ "$(cat out)" = "Hi 1" ] && [ ! -e ./- ]'
run compile a.jinja -o - --depfile x.d
check "--depfile with -o - is a usage error" '[ $rc -eq 2 ] && [ ! -e x.d ]'
run compile a.jinja -o a.tplb --name foo
check "--name without --emit c is a usage error" '[ $rc -eq 2 ] && [ ! -e a.tplb ]'
run render a.jinja extra.jinja
check "render takes one template" '[ $rc -eq 2 ] && grep -q "unexpected argument extra.jinja" err'
run render
check "render without a template is a usage error" '[ $rc -eq 2 ]'
run
check "tplc alone prints the usage (exit 2)" '[ $rc -eq 2 ] && grep -q "^usage: tplc render" err'

# ---- §4: checked values ----
run render a.jinja --channel fone
check "--channel is checked" '[ $rc -eq 2 ] && grep -q "phone|web|whatsapp" err'
run render a.jinja --medium video
check "--medium is checked" '[ $rc -eq 2 ] && grep -q "voice|text" err'
printf '{{ call.channel }}/{{ call.medium }}' > call.jinja
run render call.jinja --channel=whatsapp
check "--channel whatsapp gives medium text" '[ $rc -eq 0 ] && [ "$(cat out)" = "whatsapp/text" ]'
run render a.jinja --syntax jinja2
check "--syntax is checked" '[ $rc -eq 2 ] && grep -q "jinja|erb|fmt" err'
run lint a.jinja --format yaml
check "lint --format is checked" '[ $rc -eq 2 ]'
echo '{"stat": {"n": 5}}' > typo.golden.json
run render a.jinja --golden typo.golden.json
check "a misspelled golden key is a located error, not an empty state" '[ $rc -eq 1 ] && grep -q "^typo.golden.json:1:2: error: unknown key \"stat\"" err'
printf '[{"state": {"n": 1}},\n {"state": {"memroy": 1}, "memroy": ["x"]}]' > typos.golden.json
run render a.jinja --golden typos.golden.json --case 1
check "a misspelled key of a golden array's case is located in that case" '[ $rc -eq 1 ] && grep -q "^typos.golden.json:2:27: error: unknown key \"memroy\"" err'
echo '{"state": {"n": 5}, "memory": ["x"]}' > ok.golden.json
run render a.jinja --golden ok.golden.json
check "a golden with state and memory renders" '[ $rc -eq 0 ] && [ "$(cat out)" = "Hi 5" ]'

# ---- §4: render limits ----
printf '{%% for i in range(100000) %%}{{ i }}{%% endfor %%}' > loop.jinja
run render loop.jinja --fuel 1000
check "--fuel limits the render (exit 1, limit error)" '[ $rc -eq 1 ] && grep -qi "fuel" err'
run render loop.jinja --max-output 1K
check "--max-output limits the output" '[ $rc -eq 1 ] && grep -qi "output" err'
printf '{%% macro f(n) %%}{{ f(n + 1) }}{%% endmacro %%}{{ f(0) }}' > deep.jinja
run render deep.jinja --max-depth 10
check "--max-depth limits the depth" '[ $rc -eq 1 ] && grep -qi "depth\|deep" err'
printf '{{ "x" * 3000000 }}' > big.jinja
run render big.jinja --max-memory 1M
check "--max-memory limits the render memory" '[ $rc -eq 1 ]'
run render big.jinja --max-memory 64M --max-output 16M
check "limits above the need render" '[ $rc -eq 0 ] && [ "$(wc -c < out)" -eq 3000000 ]'
run render loop.jinja --fuel 0
check "--fuel 0 is a usage error" '[ $rc -eq 2 ]'
run render loop.jinja --max-output 12Q
check "a bad byte count is a usage error" '[ $rc -eq 2 ]'

# ---- §1: inputs are regular files, within 256 MiB ----
mkfifo fifo.jinja
run render fifo.jinja
check "a FIFO template is refused, not waited on" '[ $rc -eq 2 ] && grep -q "fifo.jinja: error: cannot read template: not a regular file" err'
printf 'x{%% include "fifo.jinja" %%}' > inc-fifo.jinja
run render inc-fifo.jinja
check "an included FIFO is a located 'not a regular file' error" '[ $rc -eq 1 ] && grep -q "^inc-fifo.jinja:1:5: error: template .fifo.jinja. is not a regular file" err'
ln -s /dev/zero zero.jinja
printf '{%% extends "zero.jinja" %%}' > ext-zero.jinja
run render ext-zero.jinja
check "/dev/zero through a symlink is not read by the loader" '[ $rc -eq 1 ] && grep -q "template .zero.jinja. is not a regular file" err'
run lint inc-fifo.jinja
check "lint reports the included FIFO the same way" '[ $rc -eq 1 ] && grep -q "inc-fifo.jinja:1:5: error: template .fifo.jinja. is not a regular file" out'
mkfifo fifo.json
run render a.jinja --state fifo.json
check "a FIFO state is refused" '[ $rc -eq 2 ] && grep -q "cannot read state: not a regular file" err'
run render a.jinja --golden /dev/zero
check "a device golden is refused" '[ $rc -eq 2 ] && grep -q "cannot read golden: not a regular file" err'
run render a.jinja --catalog fifo.json
check "a FIFO catalog is refused" '[ $rc -eq 2 ] && grep -q "cannot read catalog: not a regular file" err'
run lint a.jinja --schema fifo.json
check "a FIFO schema is refused" '[ $rc -eq 2 ] && grep -q "cannot read schema: not a regular file" err'
run lint a.jinja --state /dev/zero
check "lint refuses a device state" '[ $rc -eq 2 ] && grep -q "not a regular file" err'
truncate -s 300M huge.json
run render a.jinja --state huge.json
check "a state over 256 MiB is refused by its size" '[ $rc -eq 2 ] && grep -q "too large (over 256 MiB)" err'
truncate -s 300M huge.jinja
run render huge.jinja
check "a template over 256 MiB is refused by its size" '[ $rc -eq 2 ] && grep -q "too large" err'
printf '{%% include "huge.jinja" %%}' > inc-huge.jinja
run render inc-huge.jinja
check "an included template over 256 MiB is refused" '[ $rc -eq 1 ] && grep -q "template .huge.jinja. is too large" err'
head -c 270000000 /dev/zero | timeout 120 "$tplc" render - >out 2>err; rc=$?
check "standard input stops at the cap" '[ $rc -eq 2 ] && grep -q "too large" err'
# a PO file on standard input too (libgettextpo read "-" itself, without end)
head -c 270000000 /dev/zero | timeout 120 "$tplc" prompt tr-import - --dict d --store cap.db >out 2>err; rc=$?
check "tr-import - stops at the cap" '[ $rc -eq 2 ] && grep -q "^-: error: cannot read the PO file: too large" err'
rm -f huge.json huge.jinja

# ---- §2: outputs: nothing lost, nothing overwritten ----
echo secret > victim.txt
( ln -s victim.txt "out.txt.tmp.$BASHPID"; exec "$tplc" render a.jinja --state s.json -o out.txt ) 2>err
check "a symlink planted at the old temporary name is not followed" '[ "$(cat victim.txt)" = secret ] && [ "$(cat out.txt)" = "Hi 1" ]'
check "no temporary file is left" '[ -z "$(ls -a | grep "^\.out\.txt\.")" ]'
rm -f out.txt.tmp.*
# a signal while the temporary file exists (^C, kill, a hangup): it is renamed or unlinked first
printf '{%% for i in range(600000) %%}line {{ i }} xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n{%% endfor %%}' > big.jinja
for sig in TERM INT HUP; do
  mkdir "sig$sig"
  # a job started from a script ignores SIGINT: the subshell restores the default action
  ( trap - INT; exec timeout 60 "$tplc" render big.jinja --fuel 100000000 -o "sig$sig/out.txt" ) 2>/dev/null & p=$!
  for i in $(seq 600); do [ -n "$(ls -A "sig$sig")" ] && break; sleep 0.02; done
  kill -"$sig" $p 2>/dev/null
  wait $p 2>/dev/null
  check "SIG$sig during -o leaves no temporary file" '[ -z "$(ls -A "sig$sig" | grep -v "^out\.txt$")" ]'
done
# SIGKILL cannot be blocked: the payload is written to an unnamed file (O_TMPFILE) and named only when
# whole, so a kill at any moment leaves the old target or the new one, and nothing else
mkdir sigKILL; left=""
for i in $(seq 40); do
  ( exec "$tplc" render big.jinja --fuel 100000000 -o sigKILL/out.txt ) 2>/dev/null & p=$!
  sleep "$(awk "BEGIN { print $i * 0.05 }")"
  kill -KILL $p 2>/dev/null
  wait $p 2>/dev/null
  left="$left$(ls -A sigKILL | grep -v "^out\.txt$")"
  [ -e sigKILL/out.txt ] && break
done
check "SIGKILL at any moment during -o leaves no temporary file" '[ -z "$left" ]'
rm -rf big.jinja sigTERM sigINT sigHUP sigKILL
# The store's PO files are written the same way (tpl_file_write): a PO export killed at any moment
# leaves the old file or the new one and nothing else, keeps the old file's mode, writes through a
# symlink, and `-o -` / /dev/stdout is standard output (not a file named "-", not a rename in /dev)
if timeout 60 "$tplc" prompt create po.big --template "x" --store po.db >/dev/null 2>&1; then
  { printf 'msgid ""\nmsgstr ""\n"Language: fr\\n"\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    for i in $(seq 30000); do printf 'msgid "message number %d with some text to write"\nmsgstr "message numéro %d avec du texte à écrire"\n\n' $i $i; done
  } > big.po
  timeout 120 "$tplc" prompt tr-import big.po --dict po.big --store po.db >/dev/null 2>&1
  mkdir poKILL; left=""; done_one=""
  for i in $(seq 40); do
    ( exec "$tplc" prompt tr-export po.big --lang fr -o poKILL/out.po --store po.db ) 2>/dev/null & p=$!
    sleep "$(awk "BEGIN { print $i * 0.04 }")"
    kill -KILL $p 2>/dev/null
    wait $p 2>/dev/null
    left="$left$(ls -A poKILL | grep -v "^out\.po$")"
    [ -e poKILL/out.po ] && { [ -n "$done_one" ] && break; done_one=1; rm poKILL/out.po; }
  done
  check "SIGKILL at any moment during a PO export leaves no temporary file" '[ -z "$left" ]'
  timeout 60 "$tplc" prompt tr-export po.big --lang fr -o poKILL/out.po --store po.db >/dev/null 2>&1
  check "a PO export writes the file" 'grep -q "message numéro 30000 " poKILL/out.po'
  chmod 600 poKILL/out.po
  timeout 60 "$tplc" prompt tr-export po.big --lang fr -o poKILL/out.po --store po.db >/dev/null 2>&1
  check "a PO export keeps the old file's mode" '[ "$(stat -c %a poKILL/out.po)" = 600 ]'
  ln -s out.po poKILL/link.po
  timeout 60 "$tplc" prompt tr-export po.big --lang fr -o poKILL/link.po --store po.db >/dev/null 2>&1
  check "a PO export through a symlink writes the file it names and keeps the link" '[ -L poKILL/link.po ] && grep -q "numéro 30000 " poKILL/out.po'
  (umask 027; timeout 60 "$tplc" prompt tr-export po.big --lang fr -o poKILL/new.po --store po.db >/dev/null 2>&1)
  check "a new PO file gets 0666 less the umask" '[ "$(stat -c %a poKILL/new.po)" = 640 ]'
  timeout 60 "$tplc" prompt tr-export po.big --lang fr -o - --store po.db >po-stdout.txt 2>/dev/null; rc=$?
  check "tr-export -o - writes standard output" '[ $rc -eq 0 ] && grep -q "numéro 30000 " po-stdout.txt && [ ! -e ./- ]'
  echo old > po-log.txt
  timeout 60 "$tplc" prompt tr-export po.big --lang fr -o /dev/stdout --store po.db >>po-log.txt 2>/dev/null; rc=$?
  check "tr-export -o /dev/stdout >> log appends" '[ $rc -eq 0 ] && [ "$(head -1 po-log.txt)" = old ] && grep -q "numéro 30000 " po-log.txt && [ -c /dev/null ]'
  rm -rf poKILL big.po po.db po-stdout.txt po-log.txt
else
  echo "SKIP: the prompt store is not available"
fi
echo old > log.txt
timeout 10 "$tplc" render a.jinja --state s.json -o /dev/stdout >> log.txt; rc=$?
check "-o /dev/stdout >> log.txt appends" '[ $rc -eq 0 ] && [ "$(cat log.txt)" = "$(printf "old\nHi 1")" ]'
timeout 10 "$tplc" render a.jinja --state s.json -o /proc/self/fd/1 >> log.txt; rc=$?
check "-o /proc/self/fd/1 >> log.txt appends" '[ $rc -eq 0 ] && [ "$(cat log.txt)" = "$(printf "old\nHi 1Hi 1")" ]'
ln -s /dev/stdout to-stdout
timeout 10 "$tplc" render a.jinja --state s.json -o to-stdout >> log.txt; rc=$?
check "a link to /dev/stdout writes standard output" '[ $rc -eq 0 ] && [ -L to-stdout ] && [ "$(cat log.txt)" = "$(printf "old\nHi 1Hi 1Hi 1")" ]'
ln -s made.txt dangling
run render a.jinja --state s.json -o dangling
check "-o on a dangling symlink creates the file it names" '[ $rc -eq 0 ] && [ -L dangling ] && [ "$(cat made.txt)" = "Hi 1" ]'
umask 022
run render a.jinja --state s.json -o fresh.txt
check "a new output gets 0666 & ~umask" '[ "$(stat -c %a fresh.txt)" = 644 ]'
mkdir dep
printf '{%% extends "base.jinja" %%}{%% block b %%}{%% include "part.jinja" %%}{%% endblock %%}' > dep/page.jinja
printf '[{%% block b %%}{%% endblock %%}]' > dep/base.jinja
printf 'part' > dep/part.jinja
cp dep/base.jinja base.orig; cp dep/part.jinja part.orig
run compile dep/page.jinja -o dep/base.jinja
check "compile -o naming the parent it extends is refused" '[ $rc -eq 2 ] && cmp -s dep/base.jinja base.orig && grep -q "is an input (dep/base.jinja)" err'
run compile dep/page.jinja -o dep/page.tplb --depfile dep/part.jinja
check "--depfile naming an included template is refused" '[ $rc -eq 2 ] && cmp -s dep/part.jinja part.orig && [ ! -e dep/page.tplb ]'
run render dep/page.jinja -o dep/part.jinja
check "render -o naming an included template is refused" '[ $rc -eq 2 ] && cmp -s dep/part.jinja part.orig'
printf '{{ tr("Hi") }}{%% include "part.jinja" %%}' > dep/t.jinja
run tr-extract dep/t.jinja -o dep/part.jinja
check "tr-extract -o naming an included template is refused" '[ $rc -eq 2 ] && cmp -s dep/part.jinja part.orig'
echo '{"main_lang": "en"}' > cat.json
run render a.jinja --catalog cat.json -o cat.json
check "render -o naming a catalog is refused" '[ $rc -eq 2 ] && grep -q main_lang cat.json'
# a catalog language whose rows are not an object: Python's tr raises (AttributeError on a list or
# string, TypeError on a number or bool) where tpl rendered the source text, exit 0 (session 38)
printf '{{ tr("Hi") }}' > trc.jinja
for v in '[1]' '"s"' '5' 'true'; do
  printf '{"main_lang": "en", "zz": %s}' "$v" > badcat.json
  run render trc.jinja --catalog badcat.json --lang zz
  check "a catalog language that is $v is refused, located" '[ $rc -eq 1 ] && [ ! -s out ] && grep -q "^badcat.json:1:1: error: catalog language .zz. must be an object of translations, not a" err'
done
printf '{"main_lang": "en", "zz": null, "de": {"Hi": "Hallo"}}' > okcat.json
run render trc.jinja --catalog okcat.json --lang zz
check "a catalog language that is null has no rows" '[ $rc -eq 0 ] && [ "$(cat out)" = Hi ]'
run render trc.jinja --catalog okcat.json --lang de
check "the other languages of that catalog translate" '[ $rc -eq 0 ] && [ "$(cat out)" = Hallo ]'
echo '{"n": 2}' > defs.json
run render a.jinja --defaults defs.json -o defs.json
check "render -o naming the --defaults file is refused" '[ $rc -eq 2 ] && grep -q "is an input (defs.json)" err && grep -q '"'"'"n": 2'"'"' defs.json'
ln -sf defs.json defs-link.json
run render a.jinja --defaults defs-link.json -o ./defs.json
check "render -o naming the --defaults file through a link is refused" '[ $rc -eq 2 ] && grep -q '"'"'"n": 2'"'"' defs.json'
run render a.jinja -o ''
check "render -o with an empty name is a usage error naming -o" '[ $rc -eq 2 ] && grep -q "^tplc: error: -o needs a file name" err'
run compile a.jinja -o a.tplb --depfile ''
check "compile --depfile with an empty name is a usage error" '[ $rc -eq 2 ] && grep -q "^tplc: error: --depfile needs a file name" err && [ ! -e a.tplb ]'
run compile dep/page.jinja -o dep/page.tplb --depfile dep/page.tplb
check "-o and --depfile naming one file is refused" '[ $rc -eq 2 ] && [ ! -e dep/page.tplb ]'
run compile dep/page.jinja -o nodir/page.tplb --depfile dep/page.d
check "the depfile is written only when the output was" '[ $rc -eq 2 ] && [ ! -e dep/page.d ] && grep -q "nodir/page.tplb: error: cannot write: No such file or directory" err'
mkdir odd
printf '{%% include "a$b.jinja" %%}{%% include "c#d e.jinja" %%}' > 'odd/m.jinja'
printf 'x' > 'odd/a$b.jinja'; printf 'y' > 'odd/c#d e.jinja'
run compile odd/m.jinja -o 'odd/o$#.tplb' --depfile odd/m.d
printf '%s\n' 'odd/o$$\#.tplb: odd/m.jinja \' '  odd/a$$b.jinja \' '  odd/c\#d\ e.jinja' > want.d
check "depfile escapes \$, # and spaces as make and ninja read them" '[ $rc -eq 0 ] && cmp -s odd/m.d want.d'
nl=$'odd/new\nline.tplb'
run compile odd/m.jinja -o "$nl" --depfile odd/nl.d
check "a newline in a depfile path is refused before anything is written" '[ $rc -eq 2 ] && [ ! -e odd/nl.d ] && [ ! -e "$nl" ] && grep -q "newline" err'
for c in "render a.jinja --state s.json" "dump a.jinja" "lint a.jinja --reads" "--help" "--version" "render --help"; do
  timeout 10 "$tplc" $c > /dev/full 2>err; rc=$?
  check "tplc $c > /dev/full: exit 2 with the reason" '[ $rc -eq 2 ] && grep -q "No space left on device" err'
done
for c in "render a.jinja --state s.json" "compile a.jinja" "tr-extract dep/t.jinja"; do
  timeout 10 "$tplc" $c -o /dev/full > /dev/null 2>err; rc=$?
  check "tplc $c -o /dev/full: exit 2 with the reason" '[ $rc -eq 2 ] && grep -q "/dev/full: error: cannot write: No space left on device" err'
done

# ---- §4: ERB tr() calls are extracted and linted as Jinja's ----
printf '<%%= tr("Hello") %%> <%%= tr(name) %%> <%%= tr "Bye" %%> <%%= tr(text: "Kw", lang: "de") %%> <%%= "abc".tr("a", "b") %%>\n' > t.erb
run tr-extract t.erb -o -
check "tr-extract lists ERB tr() texts (positional, no parentheses, text:), not String#tr" '[ $rc -eq 0 ] && [ "$(tr -d " \n" < out)" = "{\"main_lang\":\"en\",\"xx\":{\"Hello\":\"Hello\",\"Bye\":\"Bye\",\"Kw\":\"Kw\"}}" ] && grep -q "t.erb:1:24: warning: tr() argument is not a literal string: skipped" err'
run lint t.erb
check "lint reports an ERB tr() whose text is not a literal" '[ $rc -eq 1 ] && grep -q "^t.erb:1:24: warning: tr() argument is not a literal string" out'

# host text that is not UTF-8 (--remember, --lang, --tr-key) is refused with the reason, exit 2
# (render exited 2 printing nothing; page said "out of memory")
printf '{{ remembers("x") }}' > r.jinja
run render r.jinja --remember "$(printf 'a\377b')"
check "render --remember that is not UTF-8 says so (exit 2)" '[ $rc -eq 2 ] && [ ! -s out ] && grep -q "the fact is not valid UTF-8 (byte 0xFF at offset 1)" err'
run render r.jinja --lang "$(printf '\377')"
check "render --lang that is not UTF-8 says so (exit 2)" '[ $rc -eq 2 ] && grep -q "the language is not valid UTF-8" err'
run render r.jinja --tr-key "$(printf 'k\377')"
check "render --tr-key that is not UTF-8 says so (exit 2)" '[ $rc -eq 2 ] && grep -q "not valid UTF-8 (byte 0xFF at offset 1)" err'
mkdir -p rpage && printf '{"blocks": [{"name": "v", "region": "dynamic", "template": "v.jinja"}]}' > rpage/page.json && cp r.jinja rpage/v.jinja
run page ""
check "page with an empty folder name reads nothing (was /page.json)" '[ $rc -eq 2 ] && grep -q "folder name is empty" err'
run lint --page ""
check "lint --page with an empty folder name reads nothing" '[ $rc -eq 2 ] && grep -q "folder name is empty" err'
run page rpage --remember "$(printf 'a\377b')"
check "page --remember that is not UTF-8 says so" '[ $rc -eq 2 ] && grep -q "the fact is not valid UTF-8" err && ! grep -q "out of memory" err'

# ---- copies compiled in place, nested (session 41): 12 levels of partials each including the
# next twice (4,096 copies of a 600-statement body: 5.5 s, 120 MB) and 10 levels of extends whose
# block calls super() six times (6^10 copies: 7 s to "template too large") compiled for seconds;
# now a located error at once
body=$(for i in $(seq 0 299); do printf '{{ x%d }}t%d' "$i" "$i"; done)
printf '%s' "$body" > inc0.jinja
for i in $(seq 1 12); do printf '{%% include "inc%d.jinja" %%}{%% include "inc%d.jinja" %%}' $((i - 1)) $((i - 1)) > "inc$i.jinja"; done
run render inc12.jinja
check "12 levels of partials included twice each: a located error, not seconds of compile" '[ $rc -eq 1 ] && grep -q "^inc12.jinja:1:.*words of copies" err && grep -q "\^" err'
printf '{%% block a %%}A{%% endblock %%}' > sup0.jinja
for i in $(seq 1 10); do printf '{%% extends "sup%d.jinja" %%}{%% block a %%}({{ super() }}{{ super() }}{{ super() }}{{ super() }}{{ super() }}{{ super() }}){%% endblock %%}' $((i - 1)) > "sup$i.jinja"; done
run render sup10.jinja
check "10 extends levels calling super() six times: a located error" '[ $rc -eq 1 ] && grep -q "words of copies" err'
run render sup4.jinja
check "4 such levels render (1,296 copies)" '[ $rc -eq 0 ] && [ "$(tr -cd A < out | wc -c)" -eq 1296 ]'

if [ -n "$man" ]; then
  # the man page documents every flag any subcommand's --help prints
  for c in render lint dump compile tr-extract page; do
    for f in $("$tplc" "$c" --help | grep -o '^  -[-a-z]*'); do
      g=$(printf '%s' "$f" | sed 's/-/\\-/g')
      check "docs/tplc.1 documents $c $f" 'grep -qF -- "$g" "$man"'
    done
  done
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
