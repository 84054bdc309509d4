// Reading a kernel's parameters from its JITFunction, once per process.

#include "python/introspect.h"

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/kernel_state.h"
#include "core/registry.h"
#include "python/convert.h"
#include "python/cpython.h"
#include "python/layers.h"

namespace triton_embed::detail {

namespace {

namespace pyb = pybind11;

void parse_annotation(const std::string& ann_type, ParamSpec& spec) {
  if (ann_type.empty()) {
    spec.ann = AnnKind::kNone;
    return;
  }
  if (ann_type[0] == '*') {
    std::string elem = ann_type.substr(ann_type.rfind("*k", 0) == 0 ? 2 : 1);
    spec.ann_dtype = dtype_from_name(elem);
    spec.ann = spec.ann_dtype == DType::invalid ? AnnKind::kUnsupported : AnnKind::kPointer;
    return;
  }
  spec.ann_dtype = dtype_from_name(ann_type);
  spec.ann = dtype_is_scalar_arg(spec.ann_dtype) ? AnnKind::kScalar : AnnKind::kUnsupported;
}

// A default value as an ArgValue. Plain values (None, bool, int, float, str, tl.dtype,
// tl.constexpr and tuples of them) get their C++ form, so a runtime parameter's default is
// specialised and packed like a passed value; anything else stays the Python object (a
// tl.constexpr parameter accepts it as it is).
ArgValue convert_default(KernelState& k, pyb::handle obj) {
  ArgValue v;
  if (!py::from_python(k, obj, v)) v = py::keep_object(k, obj);
  return v;
}

std::unique_ptr<KernelState> make_state(const std::string& module, const std::string& fn_name,
                                        pyb::handle fn, pyb::list params) {
  TE_CHECK(params.size() <= kMaxArgs, NotSupportedError)
      << module << "." << fn_name << " has " << params.size()
      << " parameters; triton_embed launches kernels with at most " << kMaxArgs;
  auto k = std::make_unique<KernelState>();
  k->module = module;
  k->name = fn_name;
  k->triton_version = py::triton_major() * 100 + py::triton_minor();
  // Triton's hash of the source and what it depends on (its disk cache key): a bundle entry
  // recorded from other source is never used for this kernel.
  k->source_hash = pyb::str(fn.attr("cache_key")).cast<std::string>();
  bool seen_default = false;
  int index = 0;
  for (pyb::handle item : params) {
    pyb::tuple t = pyb::reinterpret_borrow<pyb::tuple>(item);
    ParamInfo info;
    ParamSpec spec;
    info.name = t[0].cast<std::string>();
    info.index = index++;
    info.is_constexpr = t[1].cast<bool>();
    info.do_not_specialize = t[2].cast<bool>();
    info.do_not_specialize_on_alignment = t[3].cast<bool>();
    info.is_const = t[4].cast<bool>();
    info.annotation = t[5].cast<std::string>();
    const std::string ann_type = t[6].cast<std::string>();
    info.has_default = t[7].cast<bool>();
    info.default_repr = t[9].cast<std::string>();
    spec.is_constexpr = info.is_constexpr;
    spec.specialize = !info.do_not_specialize;
    spec.align = !info.do_not_specialize_on_alignment;
    spec.is_const = info.is_const;
    if (!info.is_constexpr) parse_annotation(ann_type, spec);
    ArgValue def{};
    def.kind = ArgKind::kNone;
    if (info.has_default) {
      def = convert_default(*k, t[8]);
      seen_default = true;
    } else if (!seen_default) {
      k->min_args = k->params.size() + 1;
    }
    k->name_hashes.push_back(name_hash(info.name.data(), info.name.size()));
    k->params.push_back(std::move(info));
    k->specs.push_back(spec);
    k->defaults.push_back(def);
  }
  return k;
}

KernelState* register_state(const std::string& module, const std::string& key,
                            std::unique_ptr<KernelState> k) {
  std::unique_ptr<KernelState> loser;
  KernelState* registered = insert_kernel(module, key, std::move(k), &loser);
  if (loser) {
    // Another thread loaded it first; drop our references.
    py::Gil gil;
    py::drop_objects(*loser);
  }
  return registered;
}

// Reads the kernel `describe` returns (glue.load_kernel's tuple; GIL held) and registers it as
// module.name.
template <class Describe>
KernelState* load_described(const std::string& module, const std::string& name,
                            Describe&& describe) {
  std::unique_ptr<KernelState> outer, inner;
  {
    py::Gil gil;
    try {
      pyb::tuple r = describe();
      pyb::handle obj = r[0];
      pyb::handle fn = r[1];
      pyb::list wrappers = r[2];
      const std::string fn_name = r[3].cast<std::string>();
      pyb::list params = r[4];
      outer = make_state(module, fn_name, fn, params);
      py::KernelObjects objects;
      objects.jit_function = fn.inc_ref().ptr();
      objects.object = obj.inc_ref().ptr();
      if (!wrappers.empty()) {
        outer->wrapper = pyb::reinterpret_borrow<pyb::tuple>(wrappers[0])[0].cast<std::string>();
        outer->wrapper_kind =
            outer->wrapper == "autotune" ? WrapperKind::kAutotune : WrapperKind::kHeuristics;
        inner = make_state(module, fn_name, fn, params);
        py::KernelObjects inner_objects;
        inner_objects.jit_function = fn.inc_ref().ptr();
        py::set_objects(*inner, std::move(inner_objects));
        load_layers(*outer, wrappers.ptr(), objects);
      }
      py::set_objects(*outer, std::move(objects));
    } catch (pyb::error_already_set& e) {
      const std::string type = py::exception_type(e);
      const std::string trace = py::format_exception(e);
      if (type == "KernelNotFound") {
        // The message says what is missing; the traceback of what Python raised follows.
        const std::string cause = py::glue().attr("format_cause")(e.value()).cast<std::string>();
        TE_THROW(LookupError) << "cannot load kernel " << module << "." << name << ": "
                              << pyb::str(e.value()).cast<std::string>()
                              << (cause.empty() ? "" : "\n" + cause);
      }
      if (type == "KernelNotSupported") {
        TE_THROW(NotSupportedError) << "cannot load kernel " << module << "." << name << ": "
                                    << pyb::str(e.value()).cast<std::string>();
      }
      if (type == "TypeError") {
        TE_THROW(TypeError) << "cannot load kernel " << module << "." << name << ": "
                            << pyb::str(e.value()).cast<std::string>();
      }
      TE_THROW(PythonError) << "cannot load kernel " << module << "." << name
                            << ": importing or reading it raised\n"
                            << trace;
    }
  }
  if (inner) {
    KernelState* in = register_state(module, name + "[inner]", std::move(inner));
    outer->inner = in;
  }
  return register_state(module, name, std::move(outer));
}

void check_open(const std::string& what) {
  py::ensure_runtime();
  TE_CHECK(!py::closed(), PythonError)
      << "cannot load " << what << ": the Python interpreter has shut down";
}

}  // namespace

KernelState* python_load_kernel(std::string_view module_sv, std::string_view name_sv) {
  const std::string module(module_sv), name(name_sv);
  if (KernelState* k = find_kernel(module, name)) return k;
  check_open(module + "." + name);
  return load_described(module, name, [&] { return py::glue().attr("load_kernel")(module, name); });
}

KernelState* python_load_object(void* object) {
  check_open("a kernel object");
  const pyb::handle obj(static_cast<PyObject*>(object));
  std::string module, name;
  bool by_name = false;
  {
    py::Gil gil;
    try {
      pyb::tuple r = py::glue().attr("locate_kernel")(obj);
      module = r[0].cast<std::string>();
      name = r[1].cast<std::string>();
      by_name = r[2].cast<bool>();
    } catch (pyb::error_already_set& e) {
      if (py::exception_type(e) == "TypeError") {
        TE_THROW(TypeError) << pyb::str(e.value()).cast<std::string>();
      }
      TE_THROW(PythonError) << "reading a kernel object raised\n" << py::format_exception(e);
    }
  }
  // By name where C++ could load it so (the runtime asks its sources in order, and both
  // share one state); else as this object alone.
  if (by_name) return load_kernel(module, name);
  if (KernelState* k = find_kernel(module, name)) return k;
  return load_described(module, name,
                        [&] { return py::glue().attr("describe_kernel")(obj, module, name); });
}

}  // namespace triton_embed::detail
