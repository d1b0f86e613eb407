#!/usr/bin/env bash
# tpl as a meson subproject (issue 13 §5): a parent project whose subprojects/ holds tpl (a link to
# this source tree) and a tpl.wrap that [provide]s the dependency `tpl` and the program `tplc`.
# The parent compiles a view with tplc at build time (--emit c), links libtpl through
# dependency('tpl') and renders the view; the output must be byte-exact. Inside the parent, tpl
# builds only its library and tplc (no tests, benchmarks, fuzzers or examples).
# usage: subproject.sh SOURCE_ROOT [CC]
set -euo pipefail
src=$(cd "$1" && pwd)
export CC=${2:-${CC:-cc}}
tmp=$(mktemp -d /tmp/tpl-subproject.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
p=$tmp/parent
mkdir -p "$p/subprojects"
ln -s "$src" "$p/subprojects/tpl"
cat >"$p/subprojects/tpl.wrap" <<'WRAP'
[wrap-file]
directory = tpl

[provide]
tpl = libtpl_dep
program_names = tplc
WRAP
cat >"$p/meson.build" <<'MESON'
project('agent', 'c', default_options : ['c_std=c11', 'warning_level=2', 'werror=true'])
tpl_dep = dependency('tpl')      # from subprojects/tpl.wrap's [provide]
tplc = find_program('tplc')      # the subproject's tplc (meson.override_find_program)
view_c = custom_target('hello_view', input : 'hello.jinja', output : 'hello_view.c',
  command : [tplc, 'compile', '@INPUT@', '--emit', 'c', '--name', 'hello_view', '-o', '@OUTPUT@'])
executable('agent', 'main.c', view_c, dependencies : tpl_dep)
MESON
printf '%s\n' 'Hello, {{ name }}!{% for i in items %} {{ i * 2 }}{% endfor %}' >"$p/hello.jinja"
cat >"$p/main.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <tpl.h>
extern const struct tpl_static_program hello_view;
int main(void)
{
    tpl_program *p = NULL;
    tpl_error err = { 0 };
    if (tpl_program_load_static(&hello_view, &p, &err) != TPL_OK) return 1;
    tpl_render *r = tpl_render_new(NULL);
    const char *state = "{\"name\": \"Ada\", \"items\": [1, 2, 3]}";
    const char *out;
    size_t n;
    if (!r || tpl_render_set_state_json(r, state, strlen(state)) != TPL_OK || tpl_render_run(r, p, &out, &n) != TPL_OK)
        return 1;
    fwrite(out, 1, n, stdout);
    tpl_render_free(r);
    tpl_program_free(p);
    return 0;
}
C
meson setup "$p/build" "$p" >"$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; exit 1; }
ninja -C "$p/build" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
# Only the library and tplc were configured: no test of tpl's own.
if meson introspect --tests "$p/build" | grep -q '"name"'; then echo "tpl's tests were configured in the parent"; exit 1; fi
got=$("$p/build/agent")
want='Hello, Ada! 2 4 6'
if [ "$got" != "$want" ]; then printf 'got  %q\nwant %q\n' "$got" "$want"; exit 1; fi
echo "subproject: parent built tpl and tplc, rendered: $got"
