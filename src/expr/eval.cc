// The evaluator of expression programs (expr/eval.h): Python's semantics of each operation
// over the values it models, a hook's application, and the ArgValue of a result.

#include "expr/eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "base/errors.h"

namespace triton_embed::detail::expr {

namespace {

using Kind = Value::Kind;

using i128 = __int128;

constexpr i128 kI128Max = static_cast<i128>((static_cast<unsigned __int128>(1) << 127) - 1);
constexpr i128 kI128Min = -kI128Max - 1;

Value none() { return Value{}; }
Value boolean(bool b) {
  Value v;
  v.kind = Kind::kBool;
  v.i = b ? 1 : 0;
  return v;
}
Value integer(i128 i) {
  Value v;
  v.kind = Kind::kInt;
  v.i = i;
  return v;
}
Value floating(double f) {
  Value v;
  v.kind = Kind::kFloat;
  v.f = f;
  return v;
}

bool is_int(const Value& v) { return v.kind == Kind::kInt || v.kind == Kind::kBool; }
bool is_number(const Value& v) { return is_int(v) || v.kind == Kind::kFloat; }

struct Eval {
  const Program& p;
  const ArgValue* args;
  uint32_t nargs;
  const uint64_t* given;
  Result r;

  bool has(uint16_t param) const {
    return param < nargs && (given == nullptr || ((given[param >> 6] >> (param & 63)) & 1) != 0);
  }

  bool fail(Fault f, const std::string& what) {
    if (r.fault == Fault::kNone) {
      r.fault = f;
      r.what = what;
    }
    return false;
  }

  // Python's truth value.
  static bool truthy(const Value& v) {
    switch (v.kind) {
      case Kind::kNone:
        return false;
      case Kind::kBool:
      case Kind::kInt:
        return v.i != 0;
      case Kind::kFloat:
        return v.f != 0.0;
      case Kind::kStr:
        return !v.s.empty();
      case Kind::kDType:
        return true;
    }
    return false;
  }

  // A float from an int, as float(int) does (exact below 2^53; beyond it the nearest double,
  // which is what Python gives for the ints this evaluator holds).
  static double as_double(const Value& v) {
    return v.kind == Kind::kFloat ? v.f : static_cast<double>(v.i);
  }

  bool arg(uint16_t param, Value* out) {
    if (!has(param)) return fail(Fault::kKeyError, "an argument the call did not give");
    const ArgValue& a = args[param];
    switch (a.kind) {
      case ArgKind::kNone:
        *out = none();
        return true;
      case ArgKind::kBool:
        *out = boolean(a.i != 0);
        return true;
      case ArgKind::kInt:
        *out = integer(a.big ? static_cast<i128>(a.u) : static_cast<i128>(a.i));
        return true;
      case ArgKind::kFloat:
        *out = floating(a.f);
        return true;
      case ArgKind::kScalar:
        if (dtype_is_float(a.dtype)) {
          *out = floating(a.f);
        } else if (a.dtype == DType::u1) {
          *out = boolean(a.i != 0);
        } else {
          *out = integer(a.big ? static_cast<i128>(a.u) : static_cast<i128>(a.i));
        }
        return true;
      case ArgKind::kStr:
        out->kind = Kind::kStr;
        out->s = std::string_view(a.s, a.count);
        return true;
      default:
        // A pointer, tensor descriptor, tuple, constexpr wrapper or Python object: Python hands
        // the heuristic an object this evaluator does not model.
        return fail(Fault::kUnmodelled, "the value of a pointer or object argument");
    }
  }

  bool arg_dtype(uint16_t param, DType* out) {
    if (!has(param)) return fail(Fault::kKeyError, "an argument the call did not give");
    const ArgValue& a = args[param];
    if (a.kind != ArgKind::kPointer || a.dtype == DType::invalid) {
      // Python: AttributeError ('int' object has no attribute 'dtype'), or an object whose
      // dtype this evaluator does not know.
      return fail(Fault::kUnmodelled, ".dtype of an argument that is not a typed pointer");
    }
    *out = a.dtype;
    return true;
  }

  bool int_result(i128 v, bool overflow, const char* what, Value* out) {
    if (overflow)
      return fail(Fault::kUnmodelled, std::string("an int beyond 128 bits from ") + what);
    *out = integer(v);
    return true;
  }

  // Python's floor division and modulo of ints.
  bool int_divmod(i128 a, i128 b, i128* q, i128* m, const char* what) {
    if (b == 0) return fail(Fault::kZeroDivision, std::string("integer ") + what + " by zero");
    if (a == kI128Min && b == -1) return fail(Fault::kUnmodelled, "an int beyond 128 bits");
    i128 qq = a / b, mm = a % b;
    if (mm != 0 && ((mm < 0) != (b < 0))) {
      mm += b;
      qq -= 1;
    }
    *q = qq;
    *m = mm;
    return true;
  }

  // Python's float floor division and modulo (float_divmod): the remainder takes the divisor's
  // sign, the quotient is the exact floor of the true quotient rounded as Python rounds it.
  bool float_divmod(double a, double b, double* q, double* m, const char* what) {
    if (b == 0.0) return fail(Fault::kZeroDivision, std::string("float ") + what + " by zero");
    double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0.0) {
      if ((b < 0) != (mod < 0)) {
        mod += b;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, b);
    }
    double floordiv;
    if (div != 0.0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
      floordiv = std::copysign(0.0, a / b);
    }
    *q = floordiv;
    *m = mod;
    return true;
  }

  // int / int as Python computes it: the exact quotient rounded once to the nearest double
  // (ties to even), for ints below 2^63 in magnitude; 0 / -n is -0.0.
  bool int_true_divide(i128 a, i128 b, Value* out) {
    if (b == 0) return fail(Fault::kZeroDivision, "division by zero");
    const i128 lim = static_cast<i128>(1) << 63;
    if (a >= lim || a <= -lim || b >= lim || b <= -lim) {
      return fail(Fault::kUnmodelled, "/ of ints beyond 2**63");
    }
    const bool negative = (a < 0) != (b < 0);
    using u128 = unsigned __int128;
    const u128 A = static_cast<u128>(a < 0 ? -a : a), B = static_cast<u128>(b < 0 ? -b : b);
    if (A == 0) {
      *out = floating(negative ? -0.0 : 0.0);
      return true;
    }
    auto bits = [](u128 v) {
      int n = 0;
      while (v != 0) {
        ++n;
        v >>= 1;
      }
      return n;
    };
    // q = floor(A * 2^k / B) with at least 55 significant bits (53, a rounding bit, a guard),
    // and whether anything was left over.
    const int k = 55 + bits(B) - bits(A);
    u128 num = A, den = B;
    if (k >= 0) {
      num <<= k;  // A * 2^k < 2^56 * B < 2^119
    } else {
      den <<= -k;  // B * 2^-k <= A / 2^54 < 2^9
    }
    u128 q = num / den;
    const bool sticky = num % den != 0;
    const int extra = bits(q) - 53;  // 2 or 3
    u128 mant = q >> extra;
    const u128 rest = q & ((static_cast<u128>(1) << extra) - 1);
    const u128 half = static_cast<u128>(1) << (extra - 1);
    if (rest > half || (rest == half && (sticky || (mant & 1) != 0))) ++mant;
    double r = std::ldexp(static_cast<double>(static_cast<uint64_t>(mant)), extra - k);
    *out = floating(negative ? -r : r);
    return true;
  }

  // Python's comparison of two values; false (with a fault) where Python raises.
  bool compare(Op op, const Value& x, const Value& y, bool* out) {
    const bool eq_op = op == Op::kEq || op == Op::kNe;
    int c = 0;  // -1, 0, 1; 2: unordered (nan, or different kinds under == / !=)
    if (is_number(x) && is_number(y)) {
      if (is_int(x) && is_int(y)) {
        c = x.i < y.i ? -1 : x.i > y.i ? 1 : 0;
      } else if (x.kind == Kind::kFloat && y.kind == Kind::kFloat) {
        c = std::isnan(x.f) || std::isnan(y.f) ? 2 : x.f < y.f ? -1 : x.f > y.f ? 1 : 0;
      } else {
        // An int against a float, exactly (Python does not round the int).
        const bool flip = x.kind == Kind::kFloat;
        const double f = flip ? x.f : y.f;
        const i128 i = flip ? y.i : x.i;
        int ci;  // i against f
        if (std::isnan(f)) {
          ci = 2;
        } else if (std::isinf(f)) {
          ci = f > 0 ? -1 : 1;
        } else {
          const double fl = std::floor(f);
          // Every i128 lies in [-2^127, 2^127): beyond that, f is above or below each of them.
          if (fl >= 0x1p127) {
            ci = -1;
          } else if (fl < -0x1p127) {
            ci = 1;
          } else {
            const i128 fi = static_cast<i128>(fl);
            if (i < fi) {
              ci = -1;
            } else if (i > fi) {
              ci = 1;
            } else {
              ci = f > fl ? -1 : 0;  // i == floor(f): equal unless f has a fraction
            }
          }
        }
        c = ci == 2 ? 2 : (flip ? -ci : ci);
      }
    } else if (x.kind == Kind::kStr && y.kind == Kind::kStr) {
      const int s = x.s.compare(y.s);
      c = s < 0 ? -1 : s > 0 ? 1 : 0;
    } else if (x.kind == Kind::kNone && y.kind == Kind::kNone) {
      if (!eq_op) return fail(Fault::kTypeError, "an order comparison of None");
      c = 0;
    } else if (x.kind == Kind::kDType && y.kind == Kind::kDType) {
      if (!eq_op) return fail(Fault::kTypeError, "an order comparison of dtypes");
      c = x.flavour == y.flavour && x.dtype == y.dtype ? 0 : 2;
    } else {
      if (!eq_op) return fail(Fault::kTypeError, "an order comparison of different types");
      c = 2;  // different kinds are never equal
    }
    switch (op) {
      case Op::kEq:
        *out = c == 0;
        return true;
      case Op::kNe:
        *out = c != 0;
        return true;
      case Op::kLt:
        *out = c == -1;
        return true;
      case Op::kLe:
        *out = c == -1 || c == 0;
        return true;
      case Op::kGt:
        *out = c == 1;
        return true;
      case Op::kGe:
        *out = c == 1 || c == 0;
        return true;
      default:
        return fail(Fault::kUnmodelled, "a comparison");
    }
  }

  bool arith(Op op, const Value& x, const Value& y, Value* out) {
    if (!is_number(x) || !is_number(y)) {
      if (op == Op::kAdd && x.kind == Kind::kStr && y.kind == Kind::kStr) {
        return fail(Fault::kUnmodelled, "string concatenation");
      }
      if (op == Op::kMul &&
          ((x.kind == Kind::kStr && is_int(y)) || (is_int(x) && y.kind == Kind::kStr))) {
        return fail(Fault::kUnmodelled, "string repetition");
      }
      return fail(Fault::kTypeError, std::string("unsupported operand types for ") + op_text(op));
    }
    const bool ints = is_int(x) && is_int(y);
    const bool bitwise = op == Op::kLShift || op == Op::kRShift || op == Op::kBitAnd ||
                         op == Op::kBitOr || op == Op::kBitXor;
    if (bitwise) {
      if (!ints) return fail(Fault::kTypeError, std::string("a float operand of ") + op_text(op));
      const bool both_bool = x.kind == Kind::kBool && y.kind == Kind::kBool;
      switch (op) {
        case Op::kBitAnd:
          *out = both_bool ? boolean((x.i & y.i) != 0) : integer(x.i & y.i);
          return true;
        case Op::kBitOr:
          *out = both_bool ? boolean((x.i | y.i) != 0) : integer(x.i | y.i);
          return true;
        case Op::kBitXor:
          *out = both_bool ? boolean((x.i ^ y.i) != 0) : integer(x.i ^ y.i);
          return true;
        case Op::kLShift: {
          if (y.i < 0) return fail(Fault::kValueError, "a negative shift count");
          if (x.i == 0) {
            *out = integer(0);
            return true;
          }
          if (y.i >= 127) return fail(Fault::kUnmodelled, "an int beyond 128 bits from <<");
          const int sh = static_cast<int>(y.i);
          const i128 r = static_cast<i128>(static_cast<unsigned __int128>(x.i) << sh);
          if ((r >> sh) != x.i) return fail(Fault::kUnmodelled, "an int beyond 128 bits from <<");
          *out = integer(r);
          return true;
        }
        case Op::kRShift: {
          if (y.i < 0) return fail(Fault::kValueError, "a negative shift count");
          const int sh = y.i >= 127 ? 127 : static_cast<int>(y.i);
          *out = integer(x.i >> sh);  // arithmetic, as Python's (GCC shifts signed values so)
          return true;
        }
        default:
          break;
      }
    }
    if (ints && op != Op::kTrueDiv) {
      i128 r = 0, q = 0, m = 0;
      switch (op) {
        case Op::kAdd: {
          const bool o = __builtin_add_overflow(x.i, y.i, &r);
          return int_result(r, o, "+", out);
        }
        case Op::kSub: {
          const bool o = __builtin_sub_overflow(x.i, y.i, &r);
          return int_result(r, o, "-", out);
        }
        case Op::kMul: {
          const bool o = __builtin_mul_overflow(x.i, y.i, &r);
          return int_result(r, o, "*", out);
        }
        case Op::kFloorDiv:
          if (!int_divmod(x.i, y.i, &q, &m, "division")) return false;
          *out = integer(q);
          return true;
        case Op::kMod:
          if (!int_divmod(x.i, y.i, &q, &m, "modulo")) return false;
          *out = integer(m);
          return true;
        case Op::kCdiv: {
          // (x + (y - 1)) // y, each step as Python's ints.
          i128 ym1 = 0, s = 0;
          if (__builtin_sub_overflow(y.i, 1, &ym1) || __builtin_add_overflow(x.i, ym1, &s)) {
            return fail(Fault::kUnmodelled, "an int beyond 128 bits from triton.cdiv");
          }
          if (!int_divmod(s, y.i, &q, &m, "division (triton.cdiv)")) return false;
          *out = integer(q);
          return true;
        }
        case Op::kPow: {
          if (y.i < 0) break;  // a float, below
          i128 acc = 1, base = x.i, e = y.i;
          while (e > 0) {
            if (e & 1) {
              if (__builtin_mul_overflow(acc, base, &acc))
                return fail(Fault::kUnmodelled, "an int beyond 128 bits from **");
            }
            e >>= 1;
            if (e > 0 && __builtin_mul_overflow(base, base, &base)) {
              return fail(Fault::kUnmodelled, "an int beyond 128 bits from **");
            }
          }
          *out = integer(acc);
          return true;
        }
        default:
          break;
      }
    }
    // Floats (or ints with / or a negative exponent).
    const double a = as_double(x), b = as_double(y);
    if (ints && op == Op::kTrueDiv) return int_true_divide(x.i, y.i, out);
    double q = 0, m = 0;
    switch (op) {
      case Op::kAdd:
        *out = floating(a + b);
        return true;
      case Op::kSub:
        *out = floating(a - b);
        return true;
      case Op::kMul:
        *out = floating(a * b);
        return true;
      case Op::kTrueDiv:
        if (b == 0.0) return fail(Fault::kZeroDivision, "float division by zero");
        *out = floating(a / b);
        return true;
      case Op::kFloorDiv:
        if (!float_divmod(a, b, &q, &m, "floor division")) return false;
        *out = floating(q);
        return true;
      case Op::kMod:
        if (!float_divmod(a, b, &q, &m, "modulo")) return false;
        *out = floating(m);
        return true;
      case Op::kCdiv: {
        // (a + (b - 1)) // b on floats.
        if (!float_divmod(a + (b - 1.0), b, &q, &m, "division (triton.cdiv)")) return false;
        *out = floating(q);
        return true;
      }
      case Op::kPow: {
        if (a == 0.0 && b < 0.0) return fail(Fault::kZeroDivision, "0.0 to a negative power");
        if (a < 0.0 && std::floor(b) != b && std::isfinite(b)) {
          return fail(Fault::kUnmodelled, "a negative number to a fractional power (complex)");
        }
        const double r = std::pow(a, b);
        if (std::isinf(r) && std::isfinite(a) && std::isfinite(b)) {
          return fail(Fault::kOverflowError, "a float overflow in **");
        }
        *out = floating(r);
        return true;
      }
      default:
        return fail(Fault::kUnmodelled, op_text(op));
    }
  }

  bool unary(Op op, const Value& x, Value* out) {
    switch (op) {
      case Op::kNot:
        *out = boolean(!truthy(x));
        return true;
      case Op::kToBool:
        *out = boolean(truthy(x));
        return true;
      default:
        break;
    }
    if (!is_number(x)) {
      if (op == Op::kToInt && x.kind == Kind::kStr)
        return fail(Fault::kUnmodelled, "int() of a string");
      if (op == Op::kToFloat && x.kind == Kind::kStr)
        return fail(Fault::kUnmodelled, "float() of a string");
      return fail(Fault::kTypeError, std::string("bad operand type for ") + op_text(op));
    }
    const bool isint = is_int(x);
    switch (op) {
      case Op::kNeg:
        if (isint) {
          if (x.i == kI128Min) return fail(Fault::kUnmodelled, "an int beyond 128 bits");
          *out = integer(-x.i);
        } else {
          *out = floating(-x.f);
        }
        return true;
      case Op::kPos:
        *out = isint ? integer(x.i) : floating(x.f);
        return true;
      case Op::kAbs:
        if (isint) {
          if (x.i == kI128Min) return fail(Fault::kUnmodelled, "an int beyond 128 bits");
          *out = integer(x.i < 0 ? -x.i : x.i);
        } else {
          *out = floating(std::fabs(x.f));
        }
        return true;
      case Op::kInvert:
        if (!isint) return fail(Fault::kTypeError, "bad operand type for unary ~: 'float'");
        *out = integer(~x.i);
        return true;
      case Op::kToInt:
        if (isint) {
          *out = integer(x.i);
          return true;
        }
        if (std::isnan(x.f)) return fail(Fault::kValueError, "int() of nan");
        if (std::isinf(x.f)) return fail(Fault::kOverflowError, "int() of inf");
        if (std::fabs(x.f) >= 1.7e38) return fail(Fault::kUnmodelled, "an int beyond 128 bits");
        *out = integer(static_cast<i128>(std::trunc(x.f)));
        return true;
      case Op::kToFloat:
        *out = floating(as_double(x));
        return true;
      case Op::kNextPow2: {
        // Triton's: n -= 1; n |= n >> 1, 2, 4, 8, 16, 32; n += 1 (on Python ints).
        if (!isint) return fail(Fault::kTypeError, "triton.next_power_of_2 of a float");
        const i128 lim = static_cast<i128>(1) << 126;
        if (x.i >= lim || x.i <= -lim) return fail(Fault::kUnmodelled, "an int beyond 128 bits");
        i128 n = x.i - 1;
        for (int sh : {1, 2, 4, 8, 16, 32}) n |= n >> sh;
        *out = integer(n + 1);
        return true;
      }
      default:
        return fail(Fault::kUnmodelled, op_text(op));
    }
  }

  bool eval(uint32_t n, Value* out) {
    const Node& x = p.nodes()[n];
    switch (x.op) {
      case Op::kNone:
        *out = none();
        return true;
      case Op::kBool:
        *out = boolean(x.i != 0);
        return true;
      case Op::kInt:
        *out = integer(x.i);
        return true;
      case Op::kFloat:
        *out = floating(x.f);
        return true;
      case Op::kStr:
        out->kind = Kind::kStr;
        out->s = x.s;
        return true;
      case Op::kDType:
        out->kind = Kind::kDType;
        out->flavour = x.flag;
        out->dtype = static_cast<DType>(x.i);
        return true;
      case Op::kArg:
        return arg(x.param, out);
      case Op::kArgDType: {
        DType t;
        if (!arg_dtype(x.param, &t)) return false;
        out->kind = Kind::kDType;
        out->flavour = kTorchDType;  // a tensor's (or DevicePointer's) dtype is torch's
        out->dtype = t;
        return true;
      }
      case Op::kArgElementSize: {
        DType t;
        if (!arg_dtype(x.param, &t)) return false;
        *out = integer(dtype_size(t));
        return true;
      }
      case Op::kArgIsNone:
        if (!has(x.param)) return fail(Fault::kKeyError, "an argument the call did not give");
        *out = boolean(args[x.param].kind == ArgKind::kNone);
        return true;
      case Op::kArgIsDescriptor:
        // A host descriptor is what Python holds as a triton TensorDescriptor (the caller's
        // object, or the one the JIT layer makes of a C++ descriptor); nothing else is one.
        if (!has(x.param)) return fail(Fault::kKeyError, "an argument the call did not give");
        *out = boolean(args[x.param].kind == ArgKind::kTensorDesc);
        return true;
      case Op::kArgOr: {
        // Python evaluates the default before the call: its error is raised either way.
        Value d;
        if (!eval(x.a, &d)) return false;
        if (has(x.param)) return arg(x.param, out);
        *out = d;
        return true;
      }
      case Op::kAnd:
      case Op::kOr: {
        Value a;
        if (!eval(x.a, &a)) return false;
        if (truthy(a) == (x.op == Op::kOr)) {
          *out = a;
          return true;
        }
        return eval(x.b, out);
      }
      case Op::kIf: {
        Value c;
        if (!eval(x.a, &c)) return false;
        return eval(truthy(c) ? x.b : x.c, out);
      }
      default:
        break;
    }
    const Arity ar = arity(x.op);
    Value a, b;
    if (!eval(x.a, &a)) return false;
    if (ar == Arity::kUnary) return unary(x.op, a, out);
    if (!eval(x.b, &b)) return false;
    switch (x.op) {
      case Op::kEq:
      case Op::kNe:
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe: {
        bool r;
        if (!compare(x.op, a, b, &r)) return false;
        *out = boolean(r);
        return true;
      }
      case Op::kIsSame:
        // The translator emits `is` only against None, True or False: singletons.
        *out = boolean(a.kind == b.kind &&
                       (a.kind == Kind::kNone || (a.kind == Kind::kBool && a.i == b.i)));
        return true;
      case Op::kMin:
      case Op::kMax: {
        bool better;
        // min(a, b): b only if b < a; max(a, b): b only if b > a (the first wins ties).
        if (!compare(x.op == Op::kMin ? Op::kLt : Op::kGt, b, a, &better)) return false;
        *out = better ? b : a;
        return true;
      }
      default:
        return arith(x.op, a, b, out);
    }
  }
};

}  // namespace

Result evaluate(const Program& p, const ArgValue* args, uint32_t num_args, const uint64_t* given) {
  Eval e{p, args, num_args, given, {}};
  if (p.empty()) {
    e.fail(Fault::kUnmodelled, "an empty program");
    return e.r;
  }
  Value v;
  if (e.eval(static_cast<uint32_t>(p.nodes().size() - 1), &v)) e.r.value = v;
  return std::move(e.r);
}

void raise(Fault fault, const std::string& where, const std::string& what) {
  switch (fault) {
    case Fault::kZeroDivision:
      TE_THROW(ValueError) << where << ": " << what << " (Python raises ZeroDivisionError)";
    case Fault::kTypeError:
      TE_THROW(TypeError) << where << ": " << what << " (Python raises TypeError)";
    case Fault::kValueError:
      TE_THROW(ValueError) << where << ": " << what << " (Python raises ValueError)";
    case Fault::kOverflowError:
      TE_THROW(OverflowError) << where << ": " << what << " (Python raises OverflowError)";
    case Fault::kKeyError:
      TE_THROW(LookupError) << where << ": " << what << " (Python raises KeyError)";
    case Fault::kNone:
    case Fault::kUnmodelled:
      break;
  }
  TE_THROW(Error) << "triton_embed internal error: " << where << ": no error to raise for " << what;
}

HookResult apply(const Hook& h, const ArgValue* args, uint32_t num_args, const uint64_t* given) {
  HookResult out;
  for (const HookAction& a : h.actions) {
    if (!a.guard.empty()) {
      Result g = evaluate(a.guard, args, num_args, given);
      if (g.fault != Fault::kNone) {
        out.fault = g.fault;
        out.what = std::move(g.what);
        return out;
      }
      if (!Eval::truthy(g.value)) continue;
    }
    if (a.kind == HookAction::Kind::kZero) {
      out.zeroed[out.num_zeroed++] = a.param;
      continue;
    }
    HookResult::Block& b = out.blocks[out.num_blocks++];
    b.param = a.param;
    b.tuple = a.kind == HookAction::Kind::kBlockShapeTuple;
    for (const Program& d : a.dims) {
      Result r = evaluate(d, args, num_args, given);
      if (r.fault == Fault::kNone && r.value.kind != Value::Kind::kInt) {
        r.fault = Fault::kUnmodelled;
        r.what = "a block dimension that is not an int";
      }
      if (r.fault == Fault::kNone && (r.value.i < std::numeric_limits<int64_t>::min() ||
                                      r.value.i > std::numeric_limits<int64_t>::max())) {
        r.fault = Fault::kUnmodelled;
        r.what = "a block dimension beyond 64 bits";
      }
      if (r.fault != Fault::kNone) {
        out.fault = r.fault;
        out.what = std::move(r.what);
        return out;
      }
      b.dims[b.rank++] = static_cast<int64_t>(r.value.i);
    }
  }
  return out;
}

bool to_arg(const Value& v, ArgValue* out) {
  std::memset(static_cast<void*>(out), 0, sizeof(*out));
  switch (v.kind) {
    case Kind::kNone:
      out->kind = ArgKind::kNone;
      return true;
    case Kind::kBool:
      out->kind = ArgKind::kBool;
      out->i = v.i != 0;
      return true;
    case Kind::kInt:
      out->kind = ArgKind::kInt;
      if (v.i >= std::numeric_limits<int64_t>::min() &&
          v.i <= std::numeric_limits<int64_t>::max()) {
        out->i = static_cast<int64_t>(v.i);
        return true;
      }
      if (v.i > 0 && v.i <= static_cast<i128>(std::numeric_limits<uint64_t>::max())) {
        out->u = static_cast<uint64_t>(v.i);
        out->big = 1;
        return true;
      }
      return false;
    case Kind::kFloat:
      out->kind = ArgKind::kFloat;
      out->f = v.f;
      return true;
    case Kind::kStr:
      out->kind = ArgKind::kStr;
      out->s = v.s.data();
      out->count = static_cast<uint32_t>(v.s.size());
      return true;
    case Kind::kDType:
      if (v.flavour != kTritonDType) return false;
      out->kind = ArgKind::kDType;
      out->dtype = v.dtype;
      return true;
  }
  return false;
}

}  // namespace triton_embed::detail::expr
