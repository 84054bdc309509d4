#pragma once

// The evaluator of expression programs (expr/program.h): it gives what Python gives for the
// same arguments (types included: ints stay ints, `and` / `or` return an operand, max returns
// the first maximum), or says it cannot (a value beyond what it models): then the caller falls
// back to what it did without the expression. Also a hook's application to a call and the
// ArgValue a result becomes.

#include <cstdint>
#include <string>
#include <string_view>

#include "base/internal_api.h"
#include "expr/program.h"
#include "triton_embed/arg_value.h"
#include "triton_embed/dtype.h"

namespace triton_embed::detail::expr {

// A value as Python would hold it.
struct Value {
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kDType } kind = Kind::kNone;
  uint8_t flavour = 0;  // kDType
  __int128 i = 0;       // kBool (0/1), kInt
  double f = 0;         // kFloat
  std::string_view s;   // kStr (into the program, or an argument's bytes)
  DType dtype = DType::invalid;
};

// Why an evaluation gave no value.
enum class Fault : uint8_t {
  kNone,
  kZeroDivision,   // Python raises ZeroDivisionError
  kTypeError,      // Python raises TypeError (e.g. None < 1, 1.5 | 2)
  kValueError,     // Python raises ValueError (a negative shift count, int() of nan)
  kOverflowError,  // Python raises OverflowError (int() of inf, a float ** that overflows)
  kKeyError,       // Python raises KeyError (args["name"] of a parameter the call left out)
  kUnmodelled,     // Python gives a value this evaluator does not model (an int beyond 128 bits,
                   // a complex power, a string built by an operation, an argument it cannot read)
};

struct Result {
  Value value;
  Fault fault = Fault::kNone;
  std::string what;  // for a fault: the operation, in Python terms
};

// Raises the error a fault Python raises maps to (ZeroDivisionError and ValueError:
// ValueError, TypeError: TypeError, OverflowError: OverflowError, KeyError: LookupError), as
// "`where`: `what` (Python raises ...)". Not for kNone or kUnmodelled (internal error).
[[noreturn]] TE_INTERNAL_API void raise(Fault fault, const std::string& where,
                                        const std::string& what);

// Evaluates `p` over `args` (indexed by parameter; what a heuristic sees as args[name]).
// `given` (bit p of word p / 64; null: every parameter) says which parameters the dict Python
// hands the function holds: the call's arguments and what earlier layers or the config set,
// not the defaults of those left out.
TE_INTERNAL_API Result evaluate(const Program& p, const ArgValue* args, uint32_t num_args,
                                const uint64_t* given = nullptr);

// What a hook did for one call: the block shapes it set and the tensors it zeroed, in the
// order it made them (an action whose guard is falsy is skipped), or the fault that stopped it
// (a guard's or a block dimension's; a block dimension that is no int included). Fixed-size:
// applying a hook on the launch path allocates nothing.
struct HookResult {
  struct Block {
    uint16_t param = 0;
    uint8_t rank = 0;
    bool tuple = false;  // assigned as a tuple (HookAction::Kind::kBlockShapeTuple)
    int64_t dims[5] = {};
  };
  Block blocks[kMaxHookActions];
  uint32_t num_blocks = 0;
  uint16_t zeroed[kMaxHookActions] = {};
  uint32_t num_zeroed = 0;
  Fault fault = Fault::kNone;
  std::string what;
};
TE_INTERNAL_API HookResult apply(const Hook& h, const ArgValue* args, uint32_t num_args,
                                 const uint64_t* given = nullptr);

// The ArgValue a heuristic's result becomes (a constexpr or an option), or false when Triton
// would see a value no ArgValue holds (a torch dtype, an int beyond 64 bits). A string's
// bytes stay where the value points (the program, or the call's argument): a caller that keeps
// the ArgValue beyond the call keeps a copy.
TE_INTERNAL_API bool to_arg(const Value& v, ArgValue* out);

}  // namespace triton_embed::detail::expr
