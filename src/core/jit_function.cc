// JitFunction's compiled members: loading the kernel, its description, and the compile-side
// forms of a call. The launch templates call detail::launch / detail::launch_call directly
// (src/core/launch.cc), with nothing in between.

#include <string>
#include <vector>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/jit_internal.h"
#include "core/kernel_state.h"

namespace triton_embed {

JitFunction::JitFunction(std::string_view module, std::string_view name)
    : JitFunction(detail::load_kernel(module, name), detail::intern_options(Options())) {}

JitFunction JitFunction::with_options(const Options& options) const {
  return JitFunction(state_, detail::intern_options(options));
}

const Options& JitFunction::options() const noexcept { return options_->options; }

JitFunction JitFunction::inner() const {
  TE_CHECK(state_->inner != nullptr, ValueError)
      << detail::full_name(*state_) << " is a plain @triton.jit function; inner() is for kernels "
      << "wrapped in @triton.autotune or @triton.heuristics";
  return JitFunction(state_->inner, options_);
}

const std::string& JitFunction::wrapper() const noexcept { return state_->wrapper; }
const std::string& JitFunction::module() const noexcept { return state_->module; }
const std::string& JitFunction::name() const noexcept { return state_->name; }
const std::vector<ParamInfo>& JitFunction::params() const noexcept { return state_->params; }

std::string JitFunction::signature() const {
  std::string s = state_->name + "(";
  for (size_t i = 0; i < state_->params.size(); ++i) {
    const ParamInfo& p = state_->params[i];
    if (i) s += ", ";
    s += p.name;
    if (!p.annotation.empty()) s += ": " + p.annotation;
    if (p.has_default) s += " = " + p.default_repr;
  }
  return s + ")";
}

const CompiledKernel& JitFunction::compile_args(const ArgValue* args, size_t nargs) const {
  return detail::compile(state_, options_, args, nargs);
}

const CompiledKernel& JitFunction::compile_call(const detail::CallArgs& call,
                                                const detail::GridSpec* prepare_grid) const {
  return detail::compile_call(state_, options_, call, prepare_grid);
}

std::vector<const CompiledKernel*> JitFunction::warmup_call(const detail::CallArgs& call) const {
  return detail::warmup_call(state_, options_, call);
}

const TuningResult* JitFunction::tuning_result_call(const detail::CallArgs& call) const {
  return detail::tuning_result_call(state_, options_, call);
}

}  // namespace triton_embed
