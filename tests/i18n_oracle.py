#!/usr/bin/env python3
"""The conformance oracle (../shared/conformance/oracle) with Jinja2's i18n extension enabled, for
tpl's {% trans %}, _(), gettext(), ngettext(), pgettext() and npgettext() (issue 19).

usage: i18n_oracle.py render TEMPLATE [tplc render flags]     (the oracle's command line)

tpl's Jinja environment is Jinja2's with jinja2.ext.i18n and newstyle gettext
(env.install_gettext_callables(..., newstyle=True)). The callables read the render's catalogs
(--catalog, --lang) as tpl's do (stdlib/tr.c):
  gettext(s)          tr(s): exact row, then {placeholder} pattern rows, else s; a plural row
                      (its target a list of forms) gives its first form, any other target its str()
                      (tr() itself is the oracle's: a row's target as it is)
  ngettext(s, p, n)   a plural row of s: form number plural(n) of the language's Plural-Forms
                      (the header row "", as in a gettext catalog; default n != 1); else
                      s when n == 1, else p
  pgettext(c, s)      the row "c\\x04s" (gettext's context key), else s
  npgettext(c, s, p, n)  ngettext on the row "c\\x04s"
Per catalog in order: the catalog's main language answers the source text; a language without
the row goes on to the next catalog. Everything else is the oracle's own (it is loaded, not copied).
"""
import gettext as pygettext
import importlib.machinery
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.environ.get("TPL_ORACLE") or os.path.join(HERE, "..", "..", "shared", "conformance", "oracle")

_loader = importlib.machinery.SourceFileLoader("tpl_oracle", ORACLE)
_spec = importlib.util.spec_from_loader("tpl_oracle", _loader)
oracle = importlib.util.module_from_spec(_spec)
_loader.exec_module(oracle)

CURRENT = []  # the render's translator (one render per process)


class Translator(oracle.Translator):
    def __init__(self, catalogs, lang):
        super().__init__(catalogs, lang)
        CURRENT[:] = [self]

    def lookup(self, key, plural, n):
        """gettext's exact lookup (no pattern rows): the row's text or None."""
        if not self.lang:
            return None
        for cat in self.catalogs:
            if self.lang == cat.get("main_lang", "en"):
                return None
            rows = cat.get(self.lang)
            if not isinstance(rows, dict):
                continue
            row = rows.get(key)
            if row is not None and not plural:
                return str(row[0] if isinstance(row, list) else row)
            if isinstance(row, list):
                k = plural_index(rows, n)
                if k is not None and 0 <= k < len(row):
                    return str(row[k])
        return None


def plural_index(rows, n):
    expr = "(n != 1)"
    hdr = rows.get("")
    if isinstance(hdr, str):
        for line in hdr.split("\n"):
            if line.startswith("Plural-Forms:") and "plural=" in line:
                expr = line.split("plural=", 1)[1].split(";")[0]
    try:
        return pygettext.c2py(expr)(n)
    except (ValueError, ZeroDivisionError):
        return None


def count(n):
    if isinstance(n, float) and n == int(n):
        n = int(n)
    if not isinstance(n, int):
        raise TypeError("Plural value must be an integer, got %s" % type(n).__name__)
    return n


def t_gettext(s):
    rv = CURRENT[0](s)
    if isinstance(rv, list):
        rv = rv[0]
    return rv if isinstance(rv, str) else str(rv)


def t_ngettext(s, p, n):
    rv = CURRENT[0].lookup(s, True, count(n))
    return rv if rv is not None else (s if n == 1 else p)


def t_pgettext(c, s):
    rv = CURRENT[0].lookup("%s\x04%s" % (c, s), False, 0)
    return rv if rv is not None else s


def t_npgettext(c, s, p, n):
    rv = CURRENT[0].lookup("%s\x04%s" % (c, s), True, count(n))
    return rv if rv is not None else (s if n == 1 else p)


def with_i18n(cls):
    class I18n(cls):
        def __init__(self, *args, **kw):
            kw["extensions"] = list(kw.get("extensions", ())) + ["jinja2.ext.i18n"]
            super().__init__(*args, **kw)
            self.install_gettext_callables(t_gettext, t_ngettext, newstyle=True,
                                           pgettext=t_pgettext, npgettext=t_npgettext)
    return I18n


def main(argv):
    import jinja2
    import jinja2.sandbox
    jinja2.Environment = with_i18n(jinja2.Environment)
    jinja2.sandbox.ImmutableSandboxedEnvironment = with_i18n(jinja2.sandbox.ImmutableSandboxedEnvironment)
    oracle.Translator = Translator
    return oracle.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
