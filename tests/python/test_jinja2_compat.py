"""tpl.jinja2 against real Jinja2 in the same process: same API calls, same bytes."""
import datetime

import jinja2
import pytest

import tpl.chat
import tpl.jinja2 as tj

TEMPLATES = {
    "base.html": "<title>{% block title %}{% endblock %}</title>{% block body %}{% endblock %}",
    "page.html": "{% extends 'base.html' %}{% block title %}{{ title }}{% endblock %}"
                 "{% block body %}{% include 'part.html' %}{% endblock %}",
    "part.html": "{% for u in users %}{{ u.name }}{{ ', ' if not loop.last }}{% endfor %}",
}


class U:
    def __init__(self, name):
        self.name = name


def both(**env):
    return jinja2.Environment(**env), tj.Environment(**env)


@pytest.mark.parametrize("opts", [{}, {"trim_blocks": True, "lstrip_blocks": True}, {"keep_trailing_newline": True}])
def test_from_string_and_globals(opts):
    src = "{% if x %}\n  {{ now().year > 2000 }} {{ g }} {{ x|upper }}\n{% endif %}\n"
    je, te = both(**opts)
    for e in (je, te):
        e.globals["now"] = datetime.datetime.now
        e.globals["g"] = [1, 2]
    assert te.from_string(src).render(x="a") == je.from_string(src).render(x="a")
    assert "".join(te.from_string(src).generate(x="b")) == "".join(je.from_string(src).generate(x="b"))


def test_loaders(tmp_path):
    for n, s in TEMPLATES.items():
        (tmp_path / n).write_text(s)
    ctx = {"title": "T", "users": [U("a"), U("b")]}
    for mk in (lambda m: m.DictLoader(TEMPLATES), lambda m: m.FileSystemLoader(str(tmp_path)),
               lambda m: m.FunctionLoader(TEMPLATES.get),
               lambda m: m.ChoiceLoader([m.DictLoader({}), m.DictLoader(TEMPLATES)])):
        je, te = jinja2.Environment(loader=mk(jinja2)), tj.Environment(loader=mk(tj))
        assert te.get_template("page.html").render(ctx) == je.get_template("page.html").render(ctx)
    te = tj.Environment(loader=tj.DictLoader(TEMPLATES))
    with pytest.raises(tj.TemplateNotFound) as ei:
        te.get_template("nope.html")
    assert ei.value.name == "nope.html"
    assert te.select_template(["x", "part.html"]).render(users=[]) == ""


def test_exceptions():
    te = tj.Environment(undefined=tj.StrictUndefined)
    with pytest.raises(tj.TemplateSyntaxError) as ei:
        te.from_string("a\n{% if %}")
    assert ei.value.lineno == 2
    with pytest.raises(tj.UndefinedError):
        te.from_string("{{ missing }}").render()
    assert tj.Environment().from_string("[{{ missing }}]").render() == "[]"


def test_unsupported_is_named():
    with pytest.raises(NotImplementedError, match="finalize"):
        tj.Environment(finalize=str)
    with pytest.raises(NotImplementedError, match="extensions"):
        tj.Environment(extensions=["jinja2.ext.loopcontrols"])
    e = tj.Environment()
    e.filters["shout"] = str.upper
    with pytest.raises(NotImplementedError, match="shout"):
        e.from_string("{{ 'a'|shout }}")
    with pytest.raises(NotImplementedError, match="autoescape"):
        tj.Environment(autoescape=True).from_string("x")
    with pytest.raises(NotImplementedError, match="compile"):
        tj.Environment().compile("x")
    assert tj.Environment(autoescape=tj.select_autoescape()).get_template if True else None


def test_chat_template():
    src = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
           "{% if add_generation_prompt %}<|assistant|>{% endif %}{{ tools|tojson }}")
    msgs = [{"role": "user", "content": "héllo"}]
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    import json
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    want = env.from_string(src).render(messages=msgs, tools=[{"a": 1}], add_generation_prompt=True)
    assert tpl.chat.apply_chat_template(src, msgs, tools=[{"a": 1}], add_generation_prompt=True) == want
