# What triton-embed-bundle prints as its usage (after a bad command line's message), for the
# tests that check its whole output (aot_build.cmake, bundle_tool.cmake).
set(usage "usage: triton-embed-bundle COMMAND ARGS...
  triton-embed-bundle list FILE...          print what each bundle holds
  triton-embed-bundle merge -o OUT IN...    write the union of the bundles IN... to OUT
  triton-embed-bundle build -o OUT [--target TARGET]... [--python-path DIR]... CALLS...
                                            compile the calls listed in CALLS... (see docs/aot.md)
                                            for each target into the bundle OUT
                                            (--rule MODULE:KERNEL=RULE: a tuning rule)
  triton-embed-bundle tune -o OUT [--target TARGET]... [--python-path DIR]... CALLS...
                                            the same, tuning autotuned kernels at each call's key
                                            on the GPU (--target: compile-only; --rule, --buffer-mib N)
  triton-embed-bundle widen -o OUT [--python-path DIR]... [--rule MODULE:KERNEL=RULE]... IN
                                            add to IN each entry's twin with its integers
                                            unspecialised (--values MODULE:KERNEL:PARAM=VALUES:
                                            entries at other constexpr values; --no-generic)
")
