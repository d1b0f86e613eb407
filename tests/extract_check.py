#!/usr/bin/env python3
"""tplc tr-extract against Jinja2's own extractor (jinja2.ext.babel_extract, what Babel runs on
Jinja templates): the gettext messages of {% trans %} blocks, _(), gettext(), ngettext(),
pgettext() and npgettext() calls, with Babel's default keyword specs (gettext/_: msgid;
ngettext: msgid, msgid_plural; pgettext: msgctxt, msgid; npgettext: msgctxt, msgid,
msgid_plural); a call whose picked arguments are not all string literals is skipped.

usage: extract_check.py TPLC            (prints 'N agree, N differ'; exit 1 when any differ)

Checks the JSON skeleton (-o -: key msgid or "msgctxt\\x04msgid", target msgid or [msgid,
msgid_plural]) equals what babel_extract finds, that the PO template (-o FILE.pot) has a
"#: FILE:LINE" reference for each message at Jinja2's line, and that msgfmt --check accepts it
(when Debian's gettext is installed)."""
import io, json, os, shutil, subprocess, sys, tempfile

TEMPLATES = {
    "greet.jinja": """{% trans %}Hello {{ user }}!{% endtrans %}
{% trans count=items|length %}{{ count }} apple{% pluralize %}{{ count }} apples{% endtrans %}
{{ _('Goodbye') }} {{ gettext('Goodbye') }} {{ _('Hi %(name)s', name=user) }} {{ _(dynamic) }}
{% trans 'menu' %}Open{% endtrans %} {{ pgettext('menu', 'Close') }} {{ pgettext(ctx, 'Skip') }}
{{ ngettext('%(num)d day', '%(num)d days', n) }} {{ npgettext('cal', '%(num)d week', '%(num)d weeks', n) }}
{% trans trimmed user=user %}
   Dear   {{ user }},
   welcome.
{% endtrans %}
{% macro m() %}{{ _('In a macro') }}{% endmacro %}{% for x in xs %}{{ _('In a loop') }}{% endfor %}
{% if a %}{% trans %}100% sure{% endtrans %}{% else %}{{ gettext('50%% off') }}{% endif %}
{{ ngettext(one, 'many', 2) }} {{ _('x' ~ 'y') }} {% set t = _('Set here') %}
{% trans 'ctx' n=1 %}{{ n }} one{% pluralize %}{{ n }} many{% endtrans %}""",
    "plain.jinja": "{{ _('Hello %(user)s!') }} no translation calls {{ 1 + 2 }}",
}

# libgettextpo's own leaks (tests/lsan-gettextpo.supp) must not fail an ASan build's run
_supp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsan-gettextpo.supp")
os.environ["LSAN_OPTIONS"] = ":".join(x for x in (os.environ.get("LSAN_OPTIONS", ""), "suppressions=" + _supp,
                                                  "print_suppressions=0") if x)

SPECS = {"_": ((0,), None), "gettext": ((0,), None), "ngettext": ((0, 1), None),
         "pgettext": ((1,), 0), "npgettext": ((1, 2), 0)}


def expected(src):
    import jinja2
    import jinja2.ext
    env = jinja2.Environment(extensions=["jinja2.ext.i18n"])
    env.install_null_translations(newstyle=True)
    rows, lines = {}, {}
    for lineno, func, msg in jinja2.ext.extract_from_ast(env.parse(src)):
        msg = msg if isinstance(msg, tuple) else (msg,)
        ids, ctx = SPECS[func]
        picked = [msg[i] if i < len(msg) else None for i in ids]
        c = msg[ctx] if ctx is not None and ctx < len(msg) else None
        if any(p is None for p in picked) or (ctx is not None and c is None):
            continue
        key = picked[0] if c is None else "%s\x04%s" % (c, picked[0])
        rows.setdefault(key, picked[0] if len(picked) == 1 else picked)
        lines.setdefault(key, set()).add(lineno)
    return rows, lines


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    tplc = argv[0]
    agree = differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, src in TEMPLATES.items():
            path = os.path.join(tmp, name)
            open(path, "w").write(src)
            rows, lines = expected(src)
            p = subprocess.run([tplc, "tr-extract", path, "-o", "-", "--lang", "zz"], capture_output=True, text=True)
            got = json.loads(p.stdout)["zz"] if p.returncode == 0 else None
            ok = got == rows
            pot = os.path.join(tmp, name + ".pot")
            q = subprocess.run([tplc, "tr-extract", path, "-o", pot], capture_output=True, text=True)
            text = open(pot).read() if q.returncode == 0 else ""
            refs = {ln.strip() for ln in text.splitlines() if ln.startswith("#:")}
            words = {w for r in refs for w in r[2:].split()}
            missing = [(k, ln) for k, s in lines.items() for ln in s if "%s:%d" % (path, ln) not in words]
            ok = ok and q.returncode == 0 and not missing
            if shutil.which("msgfmt") and q.returncode == 0:
                m = subprocess.run(["msgfmt", "--check", "-o", "/dev/null", pot], capture_output=True, text=True)
                ok = ok and m.returncode == 0
                if m.returncode:
                    print("msgfmt --check %s: %s" % (name, m.stderr))
            if ok:
                agree += 1
            else:
                differ += 1
                print("DIFFER %s:\n  tplc:   %r %s\n  Jinja2: %r\n  missing references: %r\n  pot: %s" %
                      (name, got, p.stderr.strip(), rows, missing, text[:2000]))
    print("%d agree, %d differ" % (agree, differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
