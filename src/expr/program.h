#pragma once

// Expressions the runtime evaluates without Python: a @triton.heuristics function, or a
// config's pre-hook, translated by the JIT layer into a small tree of Python operations over
// the call's arguments. This file holds the programs themselves (the operations, nodes and
// hooks) and what program.cc does with them: programs are plain data, encoded into bundles and
// decoded with every field checked (node count, child order, depth, parameter indices,
// strings), and written as Python-like text. expr/eval.h evaluates them.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/internal_api.h"
#include "triton_embed/dtype.h"

namespace triton_embed::detail::expr {

// One operation. Children are earlier nodes (a program is in post-order), so a program is
// acyclic by construction and its depth is bounded at decode.
enum class Op : uint8_t {
  // Constants: the node's value.
  kNone,
  kBool,
  kInt,
  kFloat,
  kStr,
  kDType,  // flag: kTorchDType (torch.float16) or kTritonDType (tl.float16); they never compare
           // equal
  // Reads of parameter `param`: args["name"], args["name"].dtype,
  // args["name"].element_size(), args["name"] is None.
  kArg,
  kArgDType,
  kArgElementSize,
  kArgIsNone,
  // Unary (a): -x, +x, not x, ~x, abs(x), triton.next_power_of_2(x), int(x), float(x), bool(x).
  kNeg,
  kPos,
  kNot,
  kInvert,
  kAbs,
  kNextPow2,
  kToInt,
  kToFloat,
  kToBool,
  // args.get("name", a): a is evaluated (its error raised); then the argument when the call gave
  // it (or a config set it), else a.
  kArgOr,
  // Binary (a, b).
  kAdd,
  kSub,
  kMul,
  kTrueDiv,
  kFloorDiv,
  kMod,
  kPow,
  kLShift,
  kRShift,
  kBitAnd,
  kBitOr,
  kBitXor,
  kCdiv,  // triton.cdiv(a, b) = (a + (b - 1)) // b
  kMin,   // min(a, b): a unless b < a
  kMax,   // max(a, b): a unless b > a
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kIsSame,  // a is b, for None and bools (True is True)
  kAnd,     // a and b: a if falsy, else b
  kOr,      // a or b: a if truthy, else b
  // Ternary: b if a else c.
  kIf,
  // Appended (the numbers above are stored in bundles; expression format 2 brings these):
  // isinstance(args["name"], triton.tools.tensor_descriptor.TensorDescriptor), true when the
  // argument is a host tensor descriptor (ArgKind::kTensorDesc). A read of parameter `param`.
  kArgIsDescriptor,
  kCount
};

inline constexpr uint8_t kTorchDType = 0;
inline constexpr uint8_t kTritonDType = 1;

struct Node {
  Op op = Op::kNone;
  uint8_t flag = 0;              // kDType: its flavour
  uint16_t param = 0;            // kArg*: the parameter's index
  uint32_t a = 0, b = 0, c = 0;  // children (node indices, each below this node's)
  int64_t i = 0;                 // kBool, kInt; kDType: the DType
  double f = 0;                  // kFloat
  std::string s;                 // kStr
};

// Limits a program must keep (decode refuses more): nodes, nesting, string bytes.
inline constexpr size_t kMaxNodes = 1024;
inline constexpr int kMaxDepth = 64;
inline constexpr size_t kMaxString = 4096;

// How many operands an operation takes (its node's children a, b, c in that order).
enum class Arity : uint8_t { kLeaf, kUnary, kBinary, kTernary };

inline Arity arity(Op op) {
  if (op == Op::kArgIsDescriptor) return Arity::kLeaf;
  if (op <= Op::kArgIsNone) return Arity::kLeaf;
  if (op <= Op::kArgOr) return Arity::kUnary;
  if (op <= Op::kOr) return Arity::kBinary;
  return Arity::kTernary;
}

// The operation as Python writes it ("+", "min", "None"), for text and messages.
const char* op_text(Op op);

// A checked program: nodes in post-order, the last the result.
class Program {
 public:
  Program() = default;
  // Checks `nodes` (what decode checks) and keeps them; throws ValueError naming the problem
  // (callers that decode untrusted bytes use decode()).
  TE_INTERNAL_API static Program from_nodes(std::vector<Node> nodes);
  // The program's bytes (a format byte, then the nodes); decode(encode(p)) == p. The format
  // is 2 when the program uses an operation format 1 has not (kArgIsDescriptor), else 1.
  TE_INTERNAL_API std::string encode() const;
  // Decodes and checks `bytes` (expression format 1 or 2); on failure returns false and says
  // why in `why`.
  TE_INTERNAL_API static bool decode(std::string_view bytes, uint32_t num_params, Program* out,
                                     std::string* why);
  // The expression format encode() writes: 2 when the program uses kArgIsDescriptor, else 1.
  TE_INTERNAL_API uint8_t format() const noexcept;

  bool empty() const noexcept { return nodes_.empty(); }
  const std::vector<Node>& nodes() const noexcept { return nodes_; }
  // The parameters it reads, ascending, each with what of it (value or dtype).
  struct Read {
    uint16_t param;
    bool dtype;  // .dtype / .element_size() (else the value, `is None` or isinstance)
  };
  const std::vector<Read>& reads() const noexcept { return reads_; }
  // Python-like source text, for listings and messages.
  TE_INTERNAL_API std::string str(const std::vector<std::string>& param_names) const;

 private:
  friend struct Hook;
  static std::string check(const std::vector<Node>& nodes, uint32_t num_params);
  // decode(), refusing expression formats above `max_format` (a hook of format 1 or 2 holds
  // format 1 programs only).
  static bool decode_up_to(std::string_view bytes, uint32_t num_params, uint8_t max_format,
                           Program* out, std::string* why);
  void index_reads();
  std::vector<Node> nodes_;
  std::vector<Read> reads_;
};
// A config's pre_hook as the runtime applies it (Autotuner.run calls it before the launch):
// block shapes it sets on tensor descriptor arguments, and tensor arguments it zeroes, each
// unconditionally or when its guard holds (an effect the hook makes on one branch of an `if`,
// or after an early `return` on the other).
struct HookAction {
  // kBlockShapeTuple: a block shape the hook assigns as a tuple, not a list (what the caller's
  // Python descriptor then holds).
  enum class Kind : uint8_t { kBlockShape, kZero, kBlockShapeTuple } kind = Kind::kBlockShape;
  uint16_t param = 0;
  std::vector<Program> dims;  // kBlockShape, kBlockShapeTuple: one program per dimension
  Program guard;              // empty: unconditional; else the action applies when it is truthy
};
struct Hook {
  std::vector<HookAction> actions;  // in the order the hook makes them
  // The hook's bytes: format 1; 2 when an action assigns a tuple; 3 when an action has a guard
  // or a program of expression format 2 (each action's dims are then followed by its guard).
  TE_INTERNAL_API std::string encode() const;
  TE_INTERNAL_API static bool decode(std::string_view bytes, uint32_t num_params, Hook* out,
                                     std::string* why);
  TE_INTERNAL_API std::string str(const std::vector<std::string>& param_names) const;
};

// The most actions a hook has (translation and decode refuse more).
inline constexpr size_t kMaxHookActions = 16;
}  // namespace triton_embed::detail::expr
