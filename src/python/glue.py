"""triton_embed's Python side, compiled into the C++ library.

The C++ code calls these functions with the GIL held, on start-up and on cache misses only.
They use Triton's own objects (JITFunction.params, JITFunction._pack_args, ASTSource,
triton.compile) so a kernel compiled from C++ is the kernel Python would compile for the same
arguments, with the same hash and the same disk cache entry.
"""

import contextlib
import difflib
import importlib
import sys
import traceback

compile_count = 0  # number of compile() calls; tests read it


class KernelNotFound(Exception):
    """The module or the kernel does not exist."""


class KernelNotSupported(Exception):
    """The kernel has a parameter triton_embed cannot bind as the installed Triton does."""


# What differs in the installed Triton, from src/core/triton_versions.h (configure() sets it
# once, at start-up): glue.py asks these, never a version number or an attribute's presence.
_facts = {}


def setup():
    import triton

    parts = triton.__version__.split(".")
    major = int(parts[0])
    minor = int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    return triton.__version__, sys.version.split()[0], sys.executable, major, minor


def configure(facts):
    _facts.update(facts)


def _knob(path):
    from triton import knobs

    value = knobs
    for part in path.split("."):
        value = getattr(value, part)
    return value


def run_options(fn, options):
    """The options JITFunction.run gives the backend for a call with these launch options:
    the call's, the kernel's debug flag and the options it sets from knobs."""
    from triton import knobs

    kwargs = dict(options)
    kwargs["debug"] = kwargs.get("debug", fn.debug) or knobs.runtime.debug
    for option, knob in _facts["run_knobs"]:
        kwargs[option] = _knob(knob)
    return kwargs


def format_exception(exc):
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def format_cause(exc):
    """The traceback of the exception that caused exc, or ''."""
    cause = exc.__cause__
    if cause is None:
        return ""
    return "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)).rstrip()


def _kernels_in(module):
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    kinds = (JITFunction, Autotuner, Heuristics)
    return sorted(name for name, value in vars(module).items() if isinstance(value, kinds))


def load_kernel(module_name, attr):
    """Imports module_name and returns its kernel `attr` with Triton's view of its params."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise KernelNotFound(
                "no module named '%s' (looked in sys.path = %r)" % (module_name, sys.path)
            ) from exc
        raise
    if not hasattr(module, attr):
        kernels = _kernels_in(module)
        hint = ""
        close = difflib.get_close_matches(attr, kernels, n=1)
        if close:
            hint = "; did you mean '%s'?" % close[0]
        elif kernels:
            hint = "; its kernels are: %s" % ", ".join(kernels)
        raise KernelNotFound(
            "module '%s' (%s) has no attribute '%s'%s"
            % (module_name, getattr(module, "__file__", "?"), attr, hint)
        )
    return describe_kernel(getattr(module, attr), module_name, attr)


def _jit_function_of(obj):
    """The @triton.jit function under obj's autotune and heuristics wrappers, or None."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    while isinstance(obj, (Autotuner, Heuristics)):
        obj = obj.fn
    return obj if isinstance(obj, JITFunction) else None


def locate_kernel(obj):
    """(module, name, True) when obj (a kernel object, or triton_embed.jit's view of one) is
    its module's attribute of its function's name, so that C++ can load it by name and share
    its state; else (module, a name of this object alone, False)."""
    fn = _jit_function_of(obj)
    if fn is None:
        what = type(obj).__module__ + "." + type(obj).__qualname__
        raise TypeError(
            "triton_embed.jit takes a @triton.jit function, or one wrapped in "
            "@triton.autotune or @triton.heuristics; got a %s" % what
        )
    module_name, name = fn.module, fn.__name__
    module = sys.modules.get(module_name)
    found = getattr(module, name, None) if module is not None else None
    # triton_embed.jit's view of a kernel shares the kernel's __dict__.
    if found is not None and (found is obj or getattr(found, "__dict__", None) is obj.__dict__):
        return module_name, name, True
    return module_name, "%s@%x" % (fn.__qualname__, id(obj.__dict__)), False


def describe_kernel(obj, module_name, attr):
    """obj's kernel with Triton's view of its params (load_kernel's result)."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    wrappers = []
    fn = obj
    while not isinstance(fn, JITFunction):
        if isinstance(fn, Autotuner):
            wrappers.append(("autotune", fn, list(fn.keys), len(fn.configs), fn.configs[0]))
        elif isinstance(fn, Heuristics):
            wrappers.append(("heuristics", fn, list(fn.values.items())))
        else:
            what = type(fn).__module__ + "." + type(fn).__qualname__
            if type(fn).__name__ == "InterpretedFunction":
                raise TypeError(
                    "'%s.%s' is an InterpretedFunction because TRITON_INTERPRET=1 is set; "
                    "unset it to compile and launch kernels from C++" % (module_name, attr)
                )
            raise TypeError(
                "'%s.%s' is not a @triton.jit function (it is a %s)" % (module_name, attr, what)
            )
        fn = fn.fn

    import inspect

    for p in fn.params:
        kind = p._param.kind
        if kind == inspect.Parameter.VAR_POSITIONAL and _facts["var_positional_collects"]:
            raise KernelNotSupported(
                "parameter '*%s' collects extra positional arguments into a tuple, which "
                "triton_embed does not bind; make it a plain parameter and pass a tuple" % p.name
            )
        if kind == inspect.Parameter.KEYWORD_ONLY and _facts["keyword_only_enforced"]:
            raise KernelNotSupported(
                "parameter '%s' is keyword-only, which triton_embed does not enforce; make it "
                "a positional-or-keyword parameter (it can still be passed by name)" % p.name
            )
    params = []
    for p in fn.params:
        has_default = p.has_default
        default = p.default if has_default else None
        params.append(
            (
                p.name,
                bool(p.is_constexpr),
                bool(p.do_not_specialize),
                bool(p.do_not_specialize_on_alignment),
                bool(p.is_const),
                p.annotation,
                p.annotation_type,
                bool(has_default),
                default,
                repr(default) if has_default else "",
            )
        )
    return obj, fn, wrappers, fn.__name__, params


def _fmt_spec(ty, key):
    if isinstance(ty, tuple):
        return "(" + ", ".join(_fmt_spec(t, k) for t, k in zip(ty, key)) + ")"
    if ty == "constexpr":
        return "constexpr = %r" % (key,)
    if isinstance(key, str) and key:
        return "%s %s" % (ty, key)
    return ty


def describe(fn, specialization):
    """add_kernel(x_ptr: *fp32 D, n: i32, BLOCK: constexpr = 1024)"""
    parts = []
    for p, (ty, key) in zip(fn.params, specialization):
        parts.append("%s: %s" % (p.name, _fmt_spec(ty, key)))
    return "%s(%s)" % (fn.__name__, ", ".join(parts))


def _option_fields(backend):
    """The fields of the backend's options dataclass, read off the class: parse_options({})
    would build one, which Triton 3.9 takes as a compile that leaves FP fusion to its default
    and warns about, once per process, so a user's own compile would then not warn."""
    return importlib.import_module(type(backend).__module__).CUDAOptions.__dataclass_fields__


def option_names(arch, warp_size):
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    backend = make_backend(GPUTarget("cuda", arch, warp_size))
    return sorted(_option_fields(backend))


def compile(fn, bound_args, specialization, options, arch, warp_size):
    """Compiles fn as JITFunction.run would for these arguments; returns the artefacts."""
    global compile_count
    compile_count += 1

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    target = GPUTarget("cuda", arch, warp_size)
    backend = make_backend(target)

    known = _option_fields(backend)
    unknown = [k for k in options if k not in known]
    if unknown:
        raise ValueError(
            "unknown Triton option%s %s; the options are: %s"
            % ("s" if len(unknown) > 1 else "", ", ".join(repr(k) for k in unknown),
               ", ".join(sorted(known)))
        )

    kwargs = run_options(fn, options)
    names = [p.name for p in fn.params]
    bound = dict(zip(names, bound_args))
    opts, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, None)
    src = ASTSource(fn, signature, constexprs, attrs)
    kernel = triton.compile(src, target=target, options=opts.__dict__)

    md = kernel.metadata
    asm = kernel.asm
    ptx = asm["ptx"] if "ptx" in asm else ""
    flat_params = 0

    def count(sig):
        nonlocal flat_params
        if isinstance(sig, tuple):
            for s in sig:
                count(s)
        elif sig != "constexpr":
            flat_params += 1

    for s in signature.values():
        count(s)
    # A tensordesc parameter is several kernel parameters: a CUtensorMap (or, where Triton
    # did not lower it to TMA, base, shape, strides and flags), then the shape and strides.
    metas = list(md.tensordesc_meta or [])  # [] where no descriptor was lowered to TMA
    descs = [s for s in signature.values() if isinstance(s, str) and s.startswith("tensordesc")]
    desc_meta = []
    for i, s in enumerate(descs):
        rank = s[s.index("[") : s.index("]")].count(",") + 1
        meta = metas[i] if metas else None
        if meta is None:
            flat_params += 2 * rank + _facts["descriptor_flag_params"] + 2 * rank
            desc_meta.append(None)
        else:
            flat_params += 2 * rank
            desc_meta.append((int(meta["swizzle"]), int(meta["elem_size"]), int(meta["elem_type"]),
                              [int(b) for b in meta["block_size"]], bool(meta["fp4_padded"]),
                              bool(meta.get("is_im2col", False))))
    return {
        "name": kernel.name,
        "hash": kernel.hash,
        "cubin": bytes(asm["cubin"]),
        "ptx": ptx if isinstance(ptx, str) else ptx.decode(),
        "num_warps": int(md.num_warps),
        "num_ctas": int(md.num_ctas),
        "num_stages": int(md.num_stages),
        "shared": int(md.shared),
        # 3.6 and 3.7 leave the global scratch fields None for a kernel that needs none.
        "global_scratch_size": int(md.global_scratch_size or 0),
        "global_scratch_align": int(md.global_scratch_align or 1),
        "profile_scratch_size": int(md.profile_scratch_size),
        "profile_scratch_align": int(md.profile_scratch_align),
        "launch_cooperative_grid": bool(md.launch_cooperative_grid),
        "launch_pdl": bool(md.launch_pdl),
        "instrumentation_mode": str(md.instrumentation_mode or ""),
        "tensordesc_meta": desc_meta,
        "warp_size": int(md.warp_size),
        "runtime_params": flat_params,
        "signature": describe(fn, specialization),
    }


# ---- Triton's interpreter (CPU tensors) -------------------------------------------------

_interpreted = {}  # id(JITFunction) -> (JITFunction, InterpretedFunction)


def _as_interpreted(jit_fn):
    # Keyed by id: hashing a JITFunction computes its cache key, which must not run while
    # the interpreter has patched triton.language.
    entry = _interpreted.get(id(jit_fn))
    if entry is None:
        from triton.runtime.interpreter import InterpretedFunction

        entry = _interpreted[id(jit_fn)] = (jit_fn, InterpretedFunction(jit_fn.fn))
    return entry[1]


def _interpreted_call(self, *args, **kwargs):
    """JITFunction.__call__ while a kernel is interpreted: a @triton.jit helper (ours, or
    Triton's standard library such as tl.max) runs interpreted too."""
    # As InterpretedFunction.__call__, but the patches of triton.language it makes for the
    # helper are undone afterwards (Triton keeps them, which breaks later GPU compiles in a
    # process that also launches on the GPU).
    import triton.runtime.interpreter as interpreter

    fn = _as_interpreted(self)
    scope = interpreter._patch_lang(fn.fn)
    try:
        return fn.rewrite()(*args, **kwargs)
    except Exception as e:
        raise interpreter.InterpreterError(repr(e)) from e
    finally:
        scope.restore()


def interpret(jit_fn, args, grid):
    """Runs jit_fn on the host through Triton's interpreter.

    Triton picks JITFunction or InterpretedFunction when @triton.jit runs, so kernels imported
    for GPU launches are JITFunctions. They are run through an InterpretedFunction of the same
    Python function; while it runs, calls to other JITFunctions are interpreted as well."""
    from triton.runtime.jit import JITFunction

    fn = _as_interpreted(jit_fn)
    import triton.runtime.interpreter as interpreter

    saved_call = JITFunction.__call__
    saved_patch = interpreter._patch_lang_tensor
    JITFunction.__call__ = _interpreted_call
    if _facts["interpreter_index_via_int"]:
        interpreter._patch_lang_tensor = _patch_lang_tensor_with_index(saved_patch)
    try:
        fn[tuple(grid)](*args)
    finally:
        JITFunction.__call__ = saved_call
        interpreter._patch_lang_tensor = saved_patch


def _patch_lang_tensor_with_index(patch):
    """Triton 3.6's interpreter turns a scalar into a Python int with int() on a 1-element
    array, which numpy 2.3 rejects (a runtime loop bound such as range(0, n, BLOCK) fails);
    Triton 3.7 takes the element. Convert as 3.7 does."""

    def patched(tensor, scope):
        patch(tensor, scope)  # records the original attributes for the scope to restore
        tensor.__index__ = lambda self: int(self.handle.data.reshape(-1)[0])

    return patched


# ---- heuristics as expressions the runtime evaluates (src/expr/) ---------------------------


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


def heuristic_expression(fn, params):
    """The heuristic fn (a lambda or a function of one argument, `args`) as a tree of tuples
    the runtime turns into an expression program (src/python/expr.cc, src/expr/program.h):
    ("int", 3), ("arg", parameter index), ("add", a, b), ... Names other than args and
    builtins are read now (a global or closure constant is frozen at its current value).
    Raises NotTranslatable naming the construct it cannot translate."""
    if not hasattr(fn, "__code__"):
        raise NotTranslatable("a %s, not a function" % type(fn).__name__)
    node, source = _function_node(fn)
    return _Translator(fn, params, source).translate(node)


# ---- @triton.heuristics and @triton.autotune -----------------------------------------------

_TORCH_DTYPES = {
    "u1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2", "fp8e4b8": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz", "fp16": "float16", "bf16": "bfloat16",
    "fp32": "float32", "fp64": "float64",
}


class _NamedDtype:
    """A dtype that prints as torch's (for processes without torch): Triton reads str(dtype)."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name

    __repr__ = __str__

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return str(other) == str(self)


def torch_dtype(triton_name):
    """The torch dtype a tensor of Triton element type `triton_name` has."""
    name = _TORCH_DTYPES.get(triton_name, triton_name)
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            return _NamedDtype(name)
    return getattr(torch, name, None) or _NamedDtype(name)


class DevicePointer:
    """A raw device pointer passed from C++: what Triton's launcher needs of a tensor (its
    address and dtype). It carries no shape, strides or storage."""

    __slots__ = ("_address", "dtype", "_param")

    def __init__(self, address, dtype, param):
        self._address = address
        self.dtype = dtype
        self._param = param

    def data_ptr(self):
        return self._address

    def element_size(self):
        return int(getattr(self.dtype, "itemsize", 0)) or _itemsize(str(self.dtype))

    def __getattr__(self, attr):
        raise RawPointerAttribute(
            "argument '%s' is a raw device pointer from C++, which has no attribute '%s' (it has "
            "data_ptr(), dtype and element_size()); pass an at::Tensor through the torch layer "
            "(triton_embed::launch) for what needs a tensor" % (self._param, attr)
        )


def _itemsize(dtype_str):
    name = dtype_str.split(".")[-1]
    for bits in ("64", "32", "16", "8"):
        if name.endswith(bits) or ("float" + bits) in name or ("int" + bits) in name:
            return int(bits) // 8
    return 1


def make_descriptor(address, dtype_name, shape, strides, block_shape, padding, round_f32_to_tf32):
    """A triton.tools.tensor_descriptor.TensorDescriptor for a C++ one (checked there): its
    base a DevicePointer, so hooks and heuristics see what Python code would."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    d = object.__new__(TensorDescriptor)
    d.base = DevicePointer(address, torch_dtype(dtype_name), "base")
    d.shape = list(shape)
    d.strides = list(strides)
    d.block_shape = list(block_shape)
    d.padding = padding
    if "round_f32_to_tf32" in TensorDescriptor.__dataclass_fields__:
        d.round_f32_to_tf32 = round_f32_to_tf32
    return d


class RawPointerAttribute(AttributeError):
    """A heuristic or hook asked a raw pointer for what only a tensor has."""


# Aspects of an argument a heuristic read (the C++ side keys its cache on them).
ASPECT_VALUE, ASPECT_DTYPE, ASPECT_ADDRESS, ASPECT_OBJECT = 0, 1, 2, 3


class _Watched:
    """A pointer argument as a heuristic sees it: the tensor (or DevicePointer), recording
    which of its attributes the heuristic reads."""

    def __init__(self, obj, name, reads):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_reads", reads)

    def __getattr__(self, attr):
        reads = object.__getattribute__(self, "_reads")
        name = object.__getattribute__(self, "_name")
        obj = object.__getattribute__(self, "_obj")
        if attr == "dtype":
            reads.append((name, ASPECT_DTYPE))
        elif attr == "data_ptr":
            reads.append((name, ASPECT_ADDRESS))
        elif attr == "element_size":
            reads.append((name, ASPECT_DTYPE))
        else:
            reads.append((name, ASPECT_OBJECT))
        return getattr(obj, attr)

    def __repr__(self):
        return repr(object.__getattribute__(self, "_obj"))


class _RecordingArgs(dict):
    """The dict a heuristic gets: records each key read (and what of a pointer argument).
    Reading the whole dict (iteration, items(), len, copy) counts as reading every value."""

    def __init__(self, values, pointers):
        super().__init__(values)
        self.reads = []
        self.everything = False
        self._pointers = pointers

    def __getitem__(self, key):
        self.reads.append((key, ASPECT_VALUE))
        value = dict.__getitem__(self, key)
        if key in self._pointers:
            return _Watched(value, key, self.reads)
        return value

    def get(self, key, default=None):
        self.reads.append((key, ASPECT_VALUE))
        if dict.__contains__(self, key):
            return self[key]
        return default

    def __contains__(self, key):
        self.reads.append((key, ASPECT_VALUE))
        return dict.__contains__(self, key)

    def _all(self):
        self.everything = True

    def keys(self):
        self._all()
        return dict.keys(self)

    def values(self):
        self._all()
        return dict.values(self)

    def items(self):
        self._all()
        return dict.items(self)

    def __iter__(self):
        self._all()
        return dict.__iter__(self)

    def __len__(self):
        self._all()
        return dict.__len__(self)

    def copy(self):
        self._all()
        return dict(dict.items(self))


def eval_heuristic(fn, values, pointers):
    """Runs one heuristic as Triton's Heuristics.run does (on the dict of the arguments given
    so far) and returns (value, reads, read_everything)."""
    args = _RecordingArgs(values, pointers)
    value = fn(args)
    return value, args.reads, args.everything


def config_info(config):
    """What C++ keeps of a triton.Config."""
    return (
        str(config),
        [(k, v, repr(v)) for k, v in config.kwargs.items()],
        int(config.num_warps) if config.num_warps is not None else 4,
        int(config.num_stages) if config.num_stages is not None else 3,
        int(config.num_ctas) if config.num_ctas is not None else 1,
        int(config.maxnreg) if config.maxnreg is not None else 0,
        config.ir_override,
        config.pre_hook is not None,
    )


def tuning_key(tuner, args, kwargs):
    """Autotuner.run's key for these arguments."""
    nargs = dict(zip(tuner.arg_names, args))
    all_args = {**nargs, **kwargs}
    _args = {k: v for (k, v) in all_args.items() if k in tuner.arg_names}
    key = [_args[key] for key in tuner.keys if key in _args]
    for _, arg in _args.items():
        if hasattr(arg, "dtype"):
            key.append(str(arg.dtype))
    return tuple(key)


def _timings_list(timings):
    out = []
    for config, t in timings.items():
        ms = list(t) if isinstance(t, (list, tuple)) else [t]
        out.append((config_info(config), [float(x) for x in ms]))
    return out


class _Scratch:
    """Global scratch memory for one launch of Triton's launcher, from triton_embed's scratch
    allocator. The launcher drops it as soon as it has queued the launch; it is then given back
    on the launch's stream (stream-ordered: after the kernel ran), as triton_embed's own
    launches give theirs back."""

    __slots__ = ("_ptr", "_size", "_stream", "_release")

    def __init__(self, ptr, size, stream, release):
        self._ptr = ptr
        self._size = size
        self._stream = stream
        self._release = release

    def data_ptr(self):
        return self._ptr

    def __del__(self):
        self._release(self._ptr, self._size, self._stream)


class ScratchAllocator:
    """triton_embed's scratch allocator in the form triton.set_allocator takes:
    fn(size, alignment, stream) returns an object with data_ptr(). allocate(size, alignment,
    stream) and release(ptr, size, stream) are the C++ allocator's (src/python/layers.cc)."""

    def __init__(self, allocate, release):
        self._allocate = allocate
        self._release = release

    def __call__(self, size, alignment, stream):
        stream = 0 if stream is None else int(stream)
        return _Scratch(self._allocate(size, alignment, stream), size, stream, self._release)


@contextlib.contextmanager
def triton_allocator(scratch):
    """For the scope: Triton's launcher (through which the Autotuner benchmarks) takes a
    kernel's global scratch from `scratch` (a ScratchAllocator) when no allocator is set; one
    already set (a Python user's own triton.set_allocator) is kept. Nothing of ours stays set
    after. Triton 3.6 to 3.9 keep the allocator in the ContextVar
    triton.runtime._allocation._allocator, NullAllocator when none is set; a ContextVar is per
    thread (and context), so this sets and resets it for the calling thread only."""
    from triton.runtime import _allocation

    var = _allocation._allocator
    if scratch is None or not isinstance(var.get(), _allocation.NullAllocator):
        yield
        return
    token = var.set(scratch)
    try:
        yield
    finally:
        # A hook that set its own allocator meanwhile keeps it.
        if var.get() is scratch:
            var.reset(token)


def tune(tuner, args, kwargs, progress, scratch=None):
    """Autotuner.run up to the choice of the configuration, without the final launch: the
    same key, pruning, benchmarking (Autotuner._bench with its hooks), disk cache, listener
    and printing as the installed Triton. `scratch` (a ScratchAllocator) serves the launches'
    global scratch when no Triton allocator is set (triton_allocator). Returns (config,
    key_str, timings, from_cache, seconds)."""
    with triton_allocator(scratch):
        return _tune(tuner, args, kwargs, progress)


def _tune(tuner, args, kwargs, progress):
    import builtins
    import time

    from triton import knobs

    tuner.nargs = dict(zip(tuner.arg_names, args))
    try:
        key = tuning_key(tuner, args, kwargs)
        if key in tuner.cache:
            return tuner.cache[key], str(key), [], True, 0.0
        used_cached_result = False
        pruned_configs = tuner.prune_configs(kwargs)
        timings_out = []
        new_listener = _facts["autotune_listener"]

        if new_listener and len(pruned_configs) == 1:
            tuner.cache[key] = pruned_configs[0]
            used_cached_result = True
        else:

            def benchmark():
                bench_start = time.time()
                timings = {}
                best, best_ms = None, float("inf")
                for i, config in enumerate(pruned_configs):
                    t = tuner._bench(*args, config=config, **kwargs)
                    timings[config] = t
                    ms = t[0] if isinstance(t, (list, tuple)) else t
                    if best is None or ms < best_ms:
                        best, best_ms = config, ms
                    if progress is not None:
                        progress(str(key), i + 1, len(pruned_configs), str(best), float(best_ms),
                                 time.time() - bench_start)
                bench_end = time.time()
                tuner.bench_time = bench_end - bench_start
                tuner.cache[key] = builtins.min(timings, key=timings.get)
                full_nargs = {**tuner.nargs, **kwargs, **tuner.cache[key].all_kwargs()}
                tuner.pre_hook(full_nargs, reset_only=True)
                tuner.configs_timings = timings

            if tuner.cache_results:
                used_cached_result = tuner.check_disk_cache(key, pruned_configs, benchmark)
            else:
                benchmark()
            timings_out = _timings_list(getattr(tuner, "configs_timings", {}) or {})

            if new_listener and knobs.autotuning.listener is not None:
                from triton.runtime.jit import JITFunction

                jit_fn = tuner.fn
                while not isinstance(jit_fn, JITFunction):
                    jit_fn = jit_fn.fn
                knobs.autotuning.listener(
                    fn=jit_fn,
                    key=key,
                    best_config=tuner.cache[key],
                    configs_timings=tuner.configs_timings,
                    duration=getattr(tuner, "bench_time", None) if not used_cached_result else None,
                    cache_hit=used_cached_result,
                )
        config = tuner.cache[key]
        tuner.best_config = config
        if knobs.autotuning.print and not used_cached_result:
            print(
                f"Triton autotuning for function {tuner.base_fn.__name__},\nwith key as {key},\n"
                f"finished after {tuner.bench_time:.2f}s,\nbest config selected: {tuner.best_config};"
            )
        seconds = 0.0 if used_cached_result else float(getattr(tuner, "bench_time", 0.0))
        return config, str(key), timings_out, used_cached_result, seconds
    finally:
        tuner.nargs = None


def prune(tuner, args, kwargs):
    """Autotuner.warmup's configurations: those left after pruning."""
    tuner.nargs = dict(zip(tuner.arg_names, args))
    try:
        return list(tuner.prune_configs(kwargs))
    finally:
        tuner.nargs = None


def run_config_pre_hook(config, args, arg_names, kwargs):
    """Autotuner.run's call of the chosen config's pre_hook; returns the arguments it saw."""
    full_nargs = {**dict(zip(arg_names, args)), **kwargs, **config.all_kwargs()}
    config.pre_hook(full_nargs)
    return full_nargs
