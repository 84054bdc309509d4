"""Running a kernel on the host through Triton's interpreter (CPU tensors)."""

from .triton_facts import _facts

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
