"""A launch's grid callable as one expression per grid dimension, with the names it reads at
every launch."""

from .translation import NotTranslatable, _function_node, _Translator


class _GridTranslator(_Translator):
    """A launch's grid callable (lambda meta: (cdiv(n, meta["BLOCK"]),)) as one expression
    per grid dimension. Unlike a heuristic's, its other names are read at every launch (a
    closure's cell, a global): each becomes a parameter after the kernel's own, listed in
    self.free. Calls (triton.cdiv, min, max, ...) are resolved now."""

    def __init__(self, fn, params, source):
        super().__init__(fn, params, source)
        self.free = []  # ("cell", index) or ("global", name), each read at every launch
        self.callees = []  # (root, attribute names, the object): checked at every launch

    def where(self, name):
        """Where fn reads name: ("cell", index) of its closure, or ("global", name)."""
        code = self.fn.__code__
        if name in code.co_freevars:
            return ("cell", code.co_freevars.index(name))
        return ("global", name)

    def callee(self, node):
        """A callee (triton.cdiv, min, ...), resolved now; the launch checks that its names
        still denote it: a name, then attributes of modules."""
        import ast
        import types

        obj = self.resolve(node)
        attrs = []
        root = node
        while isinstance(root, ast.Attribute):
            attrs.insert(0, root.attr)
            root = root.value
        base = self.scope[root.id]
        for attr in attrs:
            if not isinstance(base, types.ModuleType):
                self.stop(node, "a call of an attribute of something other than a module")
            base = getattr(base, attr)
        self.callees.append((self.where(root.id), attrs, obj))
        return obj

    def expr(self, node):
        import ast

        if isinstance(node, ast.Name) and node.id not in self.env:
            if node.id == self.argname:
                self.stop(node, "the whole meta-parameters dict")
            where = self.where(node.id)
            if where not in self.free:
                self.free.append(where)
            return ("arg", len(self.params) + self.free.index(where))
        if isinstance(node, ast.Attribute) and not (node.attr == "dtype"
                                                    and self.param_of(node.value) is not None):
            self.stop(node, "an attribute read in a grid")
        return super().expr(node)

    def grid(self, node):
        import ast

        a = node.args
        if len(a.args) != 1 or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            self.stop(node, "a grid callable that does not take one argument")
        self.argname = a.args[0].arg
        if isinstance(node, ast.Lambda):
            body = node.body
        else:
            statements = [st for st in node.body
                          if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
            if len(statements) != 1 or not isinstance(statements[0], ast.Return) \
                    or statements[0].value is None:
                self.stop(node, "a grid function other than one return statement")
            body = statements[0].value
        if isinstance(body, (ast.Tuple, ast.List)):
            if not 1 <= len(body.elts) <= 3 or any(isinstance(e, ast.Starred) for e in body.elts):
                self.stop(body, "a grid of other than 1 to 3 dimensions")
            return [self.expr(e) for e in body.elts]
        self.stop(body, "a grid that is no tuple or list (Triton takes its len())")


def grid_expression(fn, params):
    """The grid callable fn as (dims, free, callees): a tree per dimension (as
    heuristic_expression's; ("arg", i) past the kernel's n parameters reads free[i - n], a
    ("cell", index) of fn's closure or a ("global", name), at every launch), and the functions
    it calls, each as (root, attribute names, the object), whose names must still denote them
    at a launch. Raises NotTranslatable naming what it cannot translate."""
    import inspect

    if not inspect.isfunction(fn):
        raise NotTranslatable("a %s, not a function" % type(fn).__name__)
    node, source = _function_node(fn)
    t = _GridTranslator(fn, params, source)
    return t.grid(node), t.free, t.callees
