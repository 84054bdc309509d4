"""A config's pre_hook as the actions the runtime applies (src/expr/program.h's Hook)."""

from .translation import NotTranslatable, _function_node, _Translator

_TRUE = ("bool", True)
_FALSE = ("bool", False)


def _const_truth(t):
    """The truth value of a constant tree, or None when t is not a constant."""
    if t[0] == "none":
        return False
    if t[0] in ("bool", "int", "float", "str"):
        return bool(t[1])
    if t[0] == "dtype":
        return True
    return None


def _cond(t):
    """Tree t where only its truth value counts (an if's test, an action's guard), simplified:
    the same truth value from the same operations in the same order (so the same errors),
    constants folded to ("bool", b)."""
    c = _const_truth(t)
    if c is not None:
        return ("bool", c)
    kind = t[0]
    if kind == "to_bool":
        return _cond(t[1])
    if kind == "not":
        x = _cond(t[1])
        if x[0] == "bool":
            return ("bool", not x[1])
        return x[1] if x[0] == "not" else ("not", x)
    if kind in ("and", "or"):
        a = _cond(t[1])
        if a[0] == "bool":
            return a if a[1] == (kind == "or") else _cond(t[2])  # True or x, False and x: a
        b = _cond(t[2])
        if b == ("bool", kind == "and"):
            return a  # x and True, x or False: the truth of x
        return (kind, a, b)
    if kind == "if":
        test = _cond(t[1])
        if test[0] == "bool":
            return _cond(t[2] if test[1] else t[3])
        a, b = _cond(t[2]), _cond(t[3])
        if a == b:
            return a
        if b == _FALSE:
            return _cond(("and", test, a))
        if a == _FALSE:
            return _cond(("and", ("not", test), b))
        if b == _TRUE:
            return _cond(("or", ("not", test), a))
        if a == _TRUE:
            return _cond(("or", test, b))
        return ("if", test, a, b)
    return t


def _tensor_descriptor_class():
    """triton.tools.tensor_descriptor.TensorDescriptor, the class of host descriptors (None
    where this Triton has none)."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None
    return TensorDescriptor


class _HookTranslator(_Translator):
    """A config's pre_hook (def hook(nargs): ...) as the actions the runtime applies: block
    shapes set on tensor descriptor arguments (nargs["d"].block_shape = [...]) and tensor
    arguments zeroed (nargs["t"].zero_()), with local names, if / else over them and early
    returns. An action the hook makes on some paths only is guarded by the tests that lead to
    it; tests may ask isinstance(nargs["d"], TensorDescriptor) (whether the call passes a host
    descriptor) and whether a global name is None (answered now)."""

    def hook(self, node):
        import ast

        a = node.args
        if isinstance(node, ast.Lambda) or len(a.args) != 1 or a.vararg or a.kwarg \
                or a.kwonlyargs or a.posonlyargs:
            self.stop(node, "a pre_hook that is not a function of one argument")
        self.argname = a.args[0].arg
        self.tuples = {}  # parameter -> whether its block_shape is assigned a tuple, not a list
        # (kind, parameter) -> (guard, dims): the effect's dimension trees (a list, empty for a
        # zero_()) and when it is made (_TRUE: always), in the order first made.
        effects = {}
        self.block(node.body, effects)
        out = []
        for (kind, p), (guard, dims) in effects.items():
            if guard == _FALSE:
                continue  # made on no path
            if kind == "block_shape" and self.tuples[p]:
                kind = "block_shape_tuple"
            out.append((kind, p, dims, None if guard == _TRUE else guard))
        return out

    def target_param(self, node):
        p = self.param_of(node)
        if p is None:
            self.stop(node, "an object other than an argument, nargs[name]")
        return p

    def block(self, body, effects):
        """Runs the statements `body` (up to a return) on `effects`, what the hook has done
        when it reaches them."""
        import ast

        for i, st in enumerate(body):
            if self.local(st):
                continue
            if isinstance(st, ast.Return):
                if st.value is not None and not (isinstance(st.value, ast.Constant)
                                                 and st.value.value is None):
                    self.stop(st, "a return with a value")
                return  # what follows never runs
            if isinstance(st, ast.Assign) and len(st.targets) == 1:
                t = st.targets[0]
                if isinstance(t, ast.Attribute) and t.attr == "block_shape":
                    p = self.target_param(t.value)
                    if not isinstance(st.value, (ast.List, ast.Tuple)) or not st.value.elts:
                        self.stop(st, "a block_shape that is not a list of expressions")
                    is_tuple = isinstance(st.value, ast.Tuple)  # what the descriptor then holds
                    if self.tuples.setdefault(p, is_tuple) != is_tuple:
                        self.stop(st, "a block_shape set to a list and to a tuple")
                    effects[("block_shape", p)] = (_TRUE, [self.expr(e) for e in st.value.elts])
                    continue
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "zero_" \
                    and not st.value.args and not st.value.keywords:
                p = self.target_param(st.value.func.value)
                effects[("zero", p)] = (_TRUE, [])
                continue
            if isinstance(st, ast.If):
                test = _cond(self.expr(st.test))
                returns = any(isinstance(n, ast.Return) for b in (st.body, st.orelse) for s in b
                              for n in ast.walk(s))
                # A branch that returns takes the statements after the if with it (each path
                # runs them after its branch); the block ends there.
                rest = body[i + 1:] if returns else []
                if test[0] == "bool":  # a test known now: Python runs that branch only
                    self.block((st.body if test[1] else st.orelse) + rest, effects)
                else:
                    self.branch(st, test, st.body + rest, st.orelse + rest, effects)
                if returns:
                    return
                continue
            self.stop(st, "the statement %s" % type(st).__name__)

    def branch(self, st, test, then_body, else_body, effects):
        before_env = dict(self.env)
        then_effects = dict(effects)
        self.block(then_body, then_effects)
        then_env = self.env
        self.env = dict(before_env)
        else_effects = dict(effects)
        self.block(else_body, else_effects)
        else_env = self.env
        self.merge_env(test, then_env, else_env)
        for key in list(then_effects) + [k for k in else_effects if k not in then_effects]:
            a = then_effects.get(key, (_FALSE, None))
            b = else_effects.get(key, (_FALSE, None))
            if a == b:
                effects[key] = a
                continue
            guard = _cond(("if", test, a[0], b[0]))
            if a[1] is None or b[1] is None or a[1] == b[1]:
                effects[key] = (guard, a[1] if b[1] is None else b[1])
            elif len(a[1]) != len(b[1]):
                self.stop(st, "block shapes of different ranks on the two branches")
            else:
                effects[key] = (guard, [x if x == y else ("if", test, x, y)
                                        for x, y in zip(a[1], b[1])])

    def frozen_name(self, node):
        """Whether node is a name (or an attribute of one) the hook reads from its globals or
        closure, rather than a local name or the arguments."""
        import ast

        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id != self.argname and root.id not in self.env

    def expr(self, node):
        import ast

        if isinstance(node, ast.BoolOp):
            # Left to right, as Python: after an operand known now that decides the result,
            # the rest is never evaluated (`TensorDescriptor is None or ...`).
            op = "and" if isinstance(node.op, ast.And) else "or"
            out = self.expr(node.values[0])
            for v in node.values[1:]:
                known = _const_truth(out)
                if known is None:
                    out = (op, out, self.expr(v))
                elif known == (op == "or"):
                    return out
                else:
                    out = self.expr(v)
            return out
        if isinstance(node, ast.IfExp):
            known = _const_truth(self.expr(node.test))
            if known is not None:
                return self.expr(node.body if known else node.orelse)
        return super().expr(node)

    def comparison(self, node, op, left, right):
        import ast

        name = type(op).__name__
        if name in ("Is", "IsNot"):
            # A global or closure name against None, True or False: answered now, as the
            # hook's other names are read now.
            for a, b in ((left, right), (right, left)):
                if isinstance(b, ast.Constant) and (b.value is None or isinstance(b.value, bool)) \
                        and self.frozen_name(a):
                    same = self.resolve(a) is b.value
                    return ("bool", same if name == "Is" else not same)
        return super().comparison(node, op, left, right)

    def call(self, node):
        import ast
        import builtins

        f = node.func
        if self.frozen_name(f) and self.resolve(f) is builtins.isinstance:
            if node.keywords or len(node.args) != 2 \
                    or any(isinstance(a, ast.Starred) for a in node.args):
                self.stop(node, "isinstance other than of two arguments")
            what, cls = node.args
            p = self.param_of(what)
            if p is None and isinstance(what, ast.Name) and isinstance(self.env.get(what.id), tuple) \
                    and self.env[what.id][0] == "arg":
                p = self.env[what.id][1]  # a local name for nargs[name]
            if p is None:
                self.stop(node, "isinstance of something other than an argument, nargs[name]")
            descriptor = _tensor_descriptor_class()
            if not self.frozen_name(cls):
                self.stop(node, "isinstance with a class other than "
                          "triton.tools.tensor_descriptor.TensorDescriptor")
            found = self.resolve(cls)
            if descriptor is None or found is not descriptor:
                what = getattr(found, "__qualname__", None) or type(found).__name__
                module = getattr(found, "__module__", None)
                if isinstance(found, type) and module not in (None, "builtins"):
                    what = "%s.%s" % (module, what)  # Gluon's TensorDescriptor is another class
                self.stop(node, "isinstance with a class other than "
                          "triton.tools.tensor_descriptor.TensorDescriptor (%s)" % what)
            return ("arg_is_descriptor", p)
        return super().call(node)


def pre_hook_actions(fn, params):
    """A config's pre_hook as a list of ("block_shape", parameter, [dimension trees], guard) (or
    "block_shape_tuple", where the hook assigns a tuple) and ("zero", parameter, [], guard) the
    runtime applies (expr/program.h's Hook); guard is None for an action the hook always makes,
    else the tree that says when it makes it. Raises NotTranslatable naming the construct it
    cannot translate."""
    if not hasattr(fn, "__code__"):
        raise NotTranslatable("a %s, not a function" % type(fn).__name__)
    node, source = _function_node(fn)
    return _HookTranslator(fn, params, source).hook(node)
