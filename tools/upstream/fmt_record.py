"""Runs CPython 3.11's format tests with every str.format / str.format_map / format() call
recorded (template, args, kwargs, result or exception) into a JSON-lines file.
usage: fmt_rec.py OUT TESTFILE[:Class.method,...] ..."""
import ast, json, sys, unittest, types, os, importlib

OUT = open(sys.argv[1], "w", encoding="utf-8")
CUR = {"test": None}
_format = format


def enc(v, depth=0):
    """JSON-able form of a value or raise TypeError. Floats: ['float', repr]."""
    t = type(v)
    if depth > 10:
        raise TypeError
    if v is None or t in (bool, int, str):
        return v
    if t is float:
        return {"__float__": repr(v)}
    if t is list:
        return [enc(x, depth + 1) for x in v]
    if t is dict and all(type(k) is str for k in v):
        return {k: enc(x, depth + 1) for k, x in v.items()}
    raise TypeError(t.__name__)


def record(tpl, args, kwargs, fn):
    try:
        res = fn()
    except Exception as e:
        _write(tpl, args, kwargs, exc="%s: %s" % (type(e).__name__, e))
        raise
    _write(tpl, args, kwargs, out=res)
    return res


def _write(tpl, args, kwargs, **r):
    if not CUR["test"]:
        return
    try:
        a, k = enc(list(args)), enc(dict(kwargs))
    except TypeError as e:
        a, k = None, None
    if isinstance(r.get("out"), str) or "exc" in r:
        OUT.write(json.dumps(dict(test=CUR["test"], tpl=tpl, args=a, kwargs=k, ok=a is not None,
                                  argrepr=repr((args, kwargs))[:200], **r)) + "\n")


def rec_attr(obj, name):
    if type(obj) is str and name in ("format", "format_map"):
        if name == "format":
            return lambda *a, **k: record(obj, a, k, lambda: obj.format(*a, **k))
        return lambda m: record(obj, [], m if type(m) is dict else {"__map__": None}, lambda: obj.format_map(m))
    return getattr(obj, name)


def rec_builtin(v, spec=""):
    if type(spec) is str and "{" not in spec and "}" not in spec:
        return record("{:" + spec + "}" if spec else "{}", [v], {}, lambda: _format(v, spec))
    return _format(v, spec)


def rec_dunder(obj, spec):
    return rec_builtin(obj, spec) if type(obj) in (int, float, str, bool) else obj.__format__(spec)


class T(ast.NodeTransformer):
    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load) and node.attr in ("format", "format_map"):
            return ast.copy_location(ast.Call(ast.Name("REC_attr", ast.Load()), [node.value, ast.Constant(node.attr)], []), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "format":
            node.func = ast.copy_location(ast.Name("REC_builtin", ast.Load()), f)
        if isinstance(f, ast.Attribute) and f.attr == "__format__" and len(node.args) == 1:
            return ast.copy_location(ast.Call(ast.Name("REC_dunder", ast.Load()), [f.value] + node.args, []), node)
        return node


def load(path, modname):
    src = open(path, encoding="utf-8").read()
    tree = ast.fix_missing_locations(T().visit(ast.parse(src)))
    mod = types.ModuleType(modname)
    mod.__file__ = path
    mod.__dict__.update(REC_attr=rec_attr, REC_builtin=rec_builtin, REC_dunder=rec_dunder)
    sys.modules[modname] = mod
    exec(compile(tree, path, "exec"), mod.__dict__)
    return mod


class Res(unittest.TextTestResult):
    def startTest(self, test):
        CUR["test"] = test.id()
        super().startTest(test)

    def stopTest(self, test):
        CUR["test"] = None
        super().stopTest(test)


for spec in sys.argv[2:]:
    path, _, names = spec.partition(":")
    modname = "test." + os.path.basename(path)[:-3]
    mod = load(path, modname)
    loader = unittest.TestLoader()
    if names:
        suite = unittest.TestSuite(loader.loadTestsFromName(n, mod) for n in names.split(","))
    else:
        suite = loader.loadTestsFromModule(mod)
    r = unittest.TextTestRunner(resultclass=Res, verbosity=0, stream=open(os.devnull, "w")).run(suite)
    print(path, "ran", r.testsRun, "failures", len(r.failures), "errors", len(r.errors), file=sys.stderr)
