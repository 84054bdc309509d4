"""Loading kernels: importing a kernel's module, finding the @triton.jit function under its
autotune and heuristics wrappers, and describing it with Triton's view of its parameters."""

import difflib
import importlib
import sys
import traceback

from .triton_facts import _facts


class KernelNotFound(Exception):
    """The module or the kernel does not exist."""


class KernelNotSupported(Exception):
    """The kernel has a parameter triton_embed cannot bind as the installed Triton does."""


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
