"""Heuristics as expressions the runtime evaluates (src/expr/eval.h): a function's source
node, and the translator of a heuristic into a tree of tuples (heuristic_expression), which
hook_translation and grid_translation extend."""

import sys


class NotTranslatable(Exception):
    """A heuristic outside the forms the runtime evaluates; the message names the construct."""


_BINOPS = {"Add": "add", "Sub": "sub", "Mult": "mul", "Div": "truediv", "FloorDiv": "floordiv",
           "Mod": "mod", "Pow": "pow", "LShift": "lshift", "RShift": "rshift", "BitAnd": "bitand",
           "BitOr": "bitor", "BitXor": "bitxor"}
_UNARY = {"USub": "neg", "UAdd": "pos", "Not": "not", "Invert": "invert"}
_COMPARE = {"Eq": "eq", "NotEq": "ne", "Lt": "lt", "LtE": "le", "Gt": "gt", "GtE": "ge"}


_CODE_FIELDS = ("co_code", "co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars",
                "co_argcount", "co_posonlyargcount", "co_kwonlyargcount")


def _module_imports(tree):
    """The import statements of the module's own scope (where the compiler looks for names a
    call's receiver was imported as)."""
    import ast

    found, todo = [], list(tree.body)
    while todo:
        st = todo.pop(0)
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            found.append(st)
        elif not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(st, field, []) or []:
                    todo.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return found


def _compiles_to(node, code, filename, imports):
    """Whether node (a Lambda or FunctionDef of fn's source) compiles to fn's code: compiled as
    the nested code of a function whose parameters are fn's free variables, below the module's
    imports, it is built as fn's was (closure reads as such, other names as globals, calls on
    imported names as the compiler makes them)."""
    import ast
    import builtins  # compile() is this module's
    import copy
    import types

    inner = copy.copy(node)
    if isinstance(inner, ast.FunctionDef):
        inner.decorator_list = []
        statement = inner
    else:
        statement = ast.Return(value=inner)
    outer = ast.parse("def _te_outer(%s):\n    pass\n" % ", ".join(code.co_freevars)).body[0]
    outer.body = [statement]
    module = ast.Module(body=imports + [outer], type_ignores=[])
    ast.fix_missing_locations(module)
    try:
        compiled = builtins.compile(module, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return False
    for outer_code in compiled.co_consts:
        if not isinstance(outer_code, types.CodeType):
            continue
        for c in outer_code.co_consts:
            if isinstance(c, types.CodeType) and c.co_name == code.co_name and all(
                    getattr(c, f) == getattr(code, f) for f in _CODE_FIELDS):
                return True
    return False


def _function_node(fn):
    """The ast node (Lambda or FunctionDef) of fn, from its module's source: the one at fn's
    first line that compiles to fn's code (a file edited since it was loaded has none)."""
    import ast
    import inspect
    import linecache

    code = fn.__code__
    try:
        filename = inspect.getsourcefile(fn) or code.co_filename
    except TypeError:
        filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    if not lines:
        raise NotTranslatable("its source is not available (%s)" % code.co_filename)
    source = "".join(lines)
    tree = ast.parse(source, filename)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno:
            found.append(node)
        elif isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first == code.co_firstlineno:
                found.append(node)
    if not found:
        raise NotTranslatable("its source was not found in %s line %d" % (filename, code.co_firstlineno))
    # Several on one line compiling to the same code are the same function: the first of them.
    imports = _module_imports(tree)
    found = [n for n in found if _compiles_to(n, code, filename, imports)]
    if not found:
        raise NotTranslatable("its source in %s line %d does not compile to its code (edited since "
                              "it was loaded?)" % (filename, code.co_firstlineno))
    return found[0], source


_KNOWN_CALLS = []


def _known_calls():
    """The functions the evaluator computes, as (function, operation): read once, so that a
    module attribute replaced later (triton.cdiv = ...) is not taken for them."""
    import builtins

    import triton

    if not _KNOWN_CALLS:
        _KNOWN_CALLS.extend([(builtins.min, "min"), (builtins.max, "max"), (builtins.abs, "abs"),
                             (builtins.int, "to_int"), (builtins.float, "to_float"),
                             (builtins.bool, "to_bool"), (triton.cdiv, "cdiv"),
                             (triton.next_power_of_2, "next_power_of_2")])
    return _KNOWN_CALLS


class _Translator:
    def __init__(self, fn, params, source):
        import builtins

        self.fn = fn
        self.params = {name: i for i, name in enumerate(params)}
        self.source = source
        self.env = {}  # a hook's local names: their expressions
        self.scope = dict(vars(builtins))
        self.scope.update(fn.__globals__)
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.scope[name] = cell.cell_contents
                except ValueError:
                    pass

    def stop(self, node, what):
        import ast

        text = ast.get_source_segment(self.source, node) or type(node).__name__
        lines = text.strip().splitlines()
        text = lines[0] + (" ..." if len(lines) > 1 else "") if lines else type(node).__name__
        if len(text) > 100:
            text = text[:96] + " ..."
        raise NotTranslatable("%s: %s (line %d)" % (what, text, getattr(node, "lineno", 0)))

    def translate(self, node):
        import ast

        if isinstance(node, ast.Lambda):
            a = node.args
            if len(a.args) != 1 or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
                self.stop(node, "a heuristic that does not take one argument")
            self.argname = a.args[0].arg
            return self.expr(node.body)
        a = node.args
        if len(a.args) != 1 or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            self.stop(node, "a heuristic that does not take one argument")
        self.argname = a.args[0].arg
        return self.returned(node.body)

    # ---- statements: local names and if / else (a heuristic's body, a pre_hook's) --------

    def local(self, st):
        """Takes a statement that only names a value (`name = expr`), or does nothing (a
        docstring, `pass`); False for any other."""
        import ast

        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            return True  # a docstring
        if isinstance(st, ast.Pass):
            return True
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            if st.targets[0].id == self.argname:
                self.stop(st, "an assignment to the arguments dict")
            self.env[st.targets[0].id] = self.expr(st.value)
            return True
        return False

    def merge_env(self, test, then_env, else_env):
        """The local names after an if / else whose branches left then_env and else_env: a
        name both set to one value keeps it, to two values becomes ("if", test, a, b); a name
        set on one branch only cannot be read after it (None)."""
        self.env = {}
        for name in set(then_env) | set(else_env):
            a, b = then_env.get(name), else_env.get(name)
            self.env[name] = a if a == b else (("if", test, a, b) if a is not None and b is not None
                                               else None)

    def returned(self, body):
        """The value the statements `body` (the rest of the function) return, as a tree: local
        names, and if / else. An if whose branches hold no return sets names for what follows
        (merge_env); one with a return in a branch becomes ("if", test, what its branch and the
        statements after it return, what the other and those statements return). Falling off
        the end returns None, as in Python."""
        import ast

        for i, st in enumerate(body):
            if self.local(st):
                continue
            if isinstance(st, ast.Return):
                return ("none",) if st.value is None else self.expr(st.value)
            if not isinstance(st, ast.If):
                self.stop(st, "the statement %s" % type(st).__name__)
            test = self.expr(st.test)
            before = dict(self.env)
            if not any(isinstance(n, ast.Return) for b in (st.body, st.orelse) for s in b
                       for n in ast.walk(s)):
                self.returned_none(st.body)
                then_env = self.env
                self.env = dict(before)
                self.returned_none(st.orelse)
                self.merge_env(test, then_env, self.env)
                continue
            rest = body[i + 1:]
            then_value = self.returned(st.body + rest)
            self.env = dict(before)
            else_value = self.returned(st.orelse + rest)
            return ("if", test, then_value, else_value)
        return ("none",)

    def returned_none(self, body):
        """The statements of a branch with no return: they only set names."""
        self.returned(body)

    def constant(self, value, node):
        if value is None:
            return ("none",)
        if isinstance(value, bool):
            return ("bool", value)
        if isinstance(value, int):
            if not -(2**63) <= value < 2**63:
                self.stop(node, "an int constant beyond 64 bits")
            return ("int", value)
        if isinstance(value, float):
            return ("float", value)
        if isinstance(value, str):
            return ("str", value)
        dtype = self.dtype_constant(value)
        if dtype is not None:
            return dtype
        self.stop(node, "a constant of type %s" % type(value).__name__)

    @staticmethod
    def dtype_constant(value):
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.dtype):
            return ("dtype", "torch", str(value).split(".")[-1])
        try:
            import triton.language as tl
        except ImportError:
            return None
        if isinstance(value, tl.dtype):
            return ("dtype", "triton", value.name)
        return None

    def resolve(self, node):
        """The object a Name or an attribute chain of names denotes (a module, a function, a
        constant), read now."""
        import ast

        if isinstance(node, ast.Name):
            if node.id == self.argname:
                self.stop(node, "the whole arguments dict")
            if node.id not in self.scope:
                self.stop(node, "a name it does not define")
            return self.scope[node.id]
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if not hasattr(base, node.attr):
                self.stop(node, "an attribute that does not exist")
            return getattr(base, node.attr)
        self.stop(node, "an expression that is not a name")

    def callee(self, node):
        """The function a call names (a Name or an attribute chain), read now."""
        return self.resolve(node)

    def param_of(self, node):
        """The parameter index of args["name"], or None when node is not such a read."""
        import ast

        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id == self.argname:
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if key.value not in self.params:
                    self.stop(node, "an argument that is not a parameter of the kernel")
                return self.params[key.value]
            self.stop(node, "an argument read with a key that is not a string constant")
        return None

    def expr(self, node):
        import ast


        p = self.param_of(node)
        if p is not None:
            return ("arg", p)
        if isinstance(node, ast.Constant):
            return self.constant(node.value, node)
        if isinstance(node, ast.Name) and node.id in self.env:
            value = self.env[node.id]
            if value is None:
                self.stop(node, "a name set on one branch of an if only")
            return value
        if isinstance(node, (ast.Name, ast.Attribute)):
            if isinstance(node, ast.Attribute) and node.attr == "dtype":
                q = self.param_of(node.value)
                if q is not None:
                    return ("arg_dtype", q)
            return self.constant(self.resolve(node), node)
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op).__name__)
            if op is None:
                self.stop(node, "the operator %s" % type(node.op).__name__)
            return (op, self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.UnaryOp):
            return (_UNARY[type(node.op).__name__], self.expr(node.operand))
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            out = self.expr(node.values[0])
            for v in node.values[1:]:
                out = (op, out, self.expr(v))
            return out
        if isinstance(node, ast.IfExp):
            return ("if", self.expr(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, ast.Compare):
            parts = []
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                parts.append(self.comparison(node, op, left, right))
                left = right
            out = parts[0]
            for part in parts[1:]:
                out = ("and", out, part)
            return out
        if isinstance(node, ast.Call):
            return self.call(node)
        self.stop(node, "the construct %s" % type(node).__name__)

    def comparison(self, node, op, left, right):
        import ast

        name = type(op).__name__
        if name in ("Is", "IsNot"):
            singleton = None
            other = None
            for a, b in ((left, right), (right, left)):
                if isinstance(b, ast.Constant) and (b.value is None or isinstance(b.value, bool)):
                    singleton, other = b, a
                    break
            if singleton is None:
                self.stop(node, "`is` other than against None, True or False")
            p = self.param_of(other)
            if p is not None and singleton.value is None:
                out = ("arg_is_none", p)
            else:
                out = ("is", self.expr(other), self.constant(singleton.value, singleton))
            return ("not", out) if name == "IsNot" else out
        if name not in _COMPARE:
            self.stop(node, "the comparison %s" % name)
        return (_COMPARE[name], self.expr(left), self.expr(right))

    def call(self, node):
        import ast

        if node.keywords:
            self.stop(node, "a call with keyword arguments")
        if any(isinstance(a, ast.Starred) for a in node.args):
            self.stop(node, "a call with *arguments")
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "element_size" and not node.args:
            q = self.param_of(f.value)
            if q is not None:
                return ("arg_element_size", q)
        if isinstance(f, ast.Attribute) and f.attr == "get" and isinstance(f.value, ast.Name) \
                and f.value.id == self.argname:
            key = node.args[0] if node.args else None
            if len(node.args) not in (1, 2) or not isinstance(key, ast.Constant) \
                    or not isinstance(key.value, str):
                self.stop(node, "a get() other than of a string constant, with an optional default")
            if key.value not in self.params:
                self.stop(node, "an argument that is not a parameter of the kernel")
            default = self.expr(node.args[1]) if len(node.args) == 2 else ("none",)
            return ("arg_or", self.params[key.value], default)
        fn = self.callee(f)
        args = node.args
        op = next((op for known, op in _known_calls() if fn is known), None)
        if op in ("min", "max"):
            if len(args) < 2:
                self.stop(node, "min or max of one iterable")
            out = self.expr(args[0])
            for a in args[1:]:
                out = (op, out, self.expr(a))
            return out
        if op == "cdiv":
            if len(args) != 2:
                self.stop(node, "triton.cdiv with %d arguments" % len(args))
            return ("cdiv", self.expr(args[0]), self.expr(args[1]))
        if op is not None:
            if len(args) != 1:
                self.stop(node, "%s with %d arguments" % (op, len(args)))
            return (op, self.expr(args[0]))
        self.stop(node, "a call of %s" % getattr(fn, "__qualname__", type(fn).__name__))


def heuristic_expression(fn, params):
    """The heuristic fn (a lambda or a function of one argument, `args`) as a tree of tuples
    the runtime turns into an expression program (src/python/expr_tree.cc, src/expr/program.h):
    ("int", 3), ("arg", parameter index), ("add", a, b), ... Names other than args and
    builtins are read now (a global or closure constant is frozen at its current value).
    Raises NotTranslatable naming the construct it cannot translate."""
    if not hasattr(fn, "__code__"):
        raise NotTranslatable("a %s, not a function" % type(fn).__name__)
    node, source = _function_node(fn)
    return _Translator(fn, params, source).translate(node)
