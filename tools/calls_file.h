#pragma once

// Calls files: the kernel calls `triton-embed-bundle build` compiles ahead of time, one per
// line, written by hand (the format is described in docs/aot.md). Reading a file checks its
// syntax whole, before anything is compiled; bind() then turns one call into the arguments
// and options a C++ call of the kernel would pass, with values chosen so that each argument
// specialises as the call the line describes (a 16-byte aligned pointer, an i32 not
// divisible by 16, ...). Every error names the file and line.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "triton_embed/jit.h"

namespace triton_embed::tools {

// One argument (or option value) as written.
struct Value {
  enum class Kind : uint8_t {
    kPointer,     // *DTYPE, *DTYPE:16 (16-byte aligned), *DTYPE:unaligned or *DTYPE:any
    kScalarType,  // i32, i64:16, i32:any, fp16, bool, ...: a value of that type, not its value
    kInt,         // 4096, 1, -3
    kFloat,       // 0.5, 1e-6
    kBool,        // true, false
    kNone,        // None
    kStr,         // "text" or 'text'
    kDType,       // tl.float16
    kWord,        // anything else: only an option's value (num_warps=8 is a kInt; arch=sm90a)
  };
  Kind kind = Kind::kWord;
  std::string text;              // as written (kStr: without the quotes)
  DType dtype = DType::invalid;  // kPointer, kScalarType, kDType
  bool div16 = false;  // kPointer: 16-byte aligned; kScalarType (integers): divisible by 16
  bool big = false;    // kInt above INT64_MAX (in u)
  int64_t i = 0;       // kInt, kBool
  uint64_t u = 0;      // kInt when big
  double f = 0;        // kFloat
  std::string error;   // kWord: why it is not an argument (for a NAME=VALUE that names a parameter)
};

// NAME=VALUE: a named argument when NAME is a parameter of the kernel, else a Triton option.
struct Named {
  std::string name;
  Value value;
};

// One line (with its continuations) of a calls file.
struct Call {
  std::string file;
  int line = 0;
  std::string module, kernel;   // module:kernel or module.kernel
  std::vector<Target> targets;  // @TARGET items; empty: the command line's targets
  std::vector<Value> positional;
  std::vector<Named> named;
  std::string where() const { return file + ":" + std::to_string(line); }
};

// A `#rule MODULE:KERNEL RULE` line: the tuning rule for keys nobody tuned of an autotuned
// kernel (triton_embed::set_tuning_rule checks the rule's text); or, with `grid`, a
// `#grid MODULE:KERNEL DIMS` line: the grid `tune` benchmarks the kernel's configs on, one to
// three comma-separated integer expressions over the kernel's parameters (the call's
// arguments and each config's meta-parameters): + - * //, parentheses, cdiv(a, b).
struct RuleDecl {
  std::string file;
  int line = 0;
  bool grid = false;
  std::string kernel;  // module.name
  std::string rule;    // the rule, or the grid's text
  std::string where() const { return file + ":" + std::to_string(line); }
};

// The most calls one line's value lists expand to.
constexpr size_t kMaxCallsPerLine = 4096;

// Reads and checks the calls file at `path`. ValueError "FILE:LINE: what; expected what" for
// a line that is not a call, ValueError for a file that cannot be read. A line whose integer
// arguments are value lists (`16,256,4096`, `1,2,4,...,65536`) gives one call per
// combination, in order; its `#rule` lines are appended to `rules` (ignored when null).
std::vector<Call> read_calls_file(const std::string& path, std::vector<RuleDecl>* rules = nullptr);
// The same for `text`, reported as the file `file`.
std::vector<Call> parse_calls(std::string_view text, const std::string& file,
                              std::vector<RuleDecl>* rules = nullptr);

// An integer, or a value list of them as a calls file writes one (`16,256,4096`,
// `1,2,3,...,64`), in order. ValueError "`where`: what; expected what" for other text.
std::vector<int64_t> parse_values(std::string_view text, const std::string& where);

// A call's arguments as the library's compiled entry points take them: positional values, then
// named ones with their names, and the options. It points into the Call, which must outlive it.
struct BoundCall {
  std::vector<detail::ArgValue> vals;
  std::vector<ArgName> names;
  size_t npos = 0;
  Options options;
  detail::CallArgs args() const;
};

// Binds `call` to the kernel `k` (its parameters decide which NAME=VALUE items are arguments
// and which are options). TypeError for a type given to a tl.constexpr parameter (it needs a
// value), ValueError for an option or argument value that cannot be one; the message starts
// with call.where(). Argument counts and names are checked by the compile, as for any call.
BoundCall bind(const Call& call, const JitFunction& k);

}  // namespace triton_embed::tools
