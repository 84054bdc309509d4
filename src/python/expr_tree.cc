#include "python/expr_tree.h"

#include <cstring>

#include "base/errors.h"

namespace triton_embed::detail::py {

namespace {

using expr::Node;
using expr::Op;

struct OpName {
  const char* name;
  Op op;
};

// The tree names of glue/translation.py, and the operation each is.
constexpr OpName kOps[] = {
    {"neg", Op::kNeg},         {"pos", Op::kPos},
    {"not", Op::kNot},         {"invert", Op::kInvert},
    {"abs", Op::kAbs},         {"next_power_of_2", Op::kNextPow2},
    {"to_int", Op::kToInt},    {"to_float", Op::kToFloat},
    {"to_bool", Op::kToBool},  {"add", Op::kAdd},
    {"sub", Op::kSub},         {"mul", Op::kMul},
    {"truediv", Op::kTrueDiv}, {"floordiv", Op::kFloorDiv},
    {"mod", Op::kMod},         {"pow", Op::kPow},
    {"lshift", Op::kLShift},   {"rshift", Op::kRShift},
    {"bitand", Op::kBitAnd},   {"bitor", Op::kBitOr},
    {"bitxor", Op::kBitXor},   {"cdiv", Op::kCdiv},
    {"min", Op::kMin},         {"max", Op::kMax},
    {"eq", Op::kEq},           {"ne", Op::kNe},
    {"lt", Op::kLt},           {"le", Op::kLe},
    {"gt", Op::kGt},           {"ge", Op::kGe},
    {"is", Op::kIsSame},       {"and", Op::kAnd},
    {"or", Op::kOr},           {"if", Op::kIf},
};

// Appends the nodes of `t` in post-order; returns the index of its root. `depth` bounds the
// recursion (the program's check refuses deeper ones anyway).
uint32_t add(pyb::handle t, std::vector<Node>& out, int depth) {
  TE_CHECK(depth <= expr::kMaxDepth, ValueError)
      << "the expression is nested deeper than " << expr::kMaxDepth;
  TE_CHECK(out.size() < expr::kMaxNodes, ValueError)
      << "the expression has more than " << expr::kMaxNodes << " operations";
  const pyb::tuple tup = pyb::reinterpret_borrow<pyb::tuple>(t);
  const std::string kind = tup[0].cast<std::string>();
  Node n;
  if (kind == "none") {
    n.op = Op::kNone;
  } else if (kind == "bool") {
    n.op = Op::kBool;
    n.i = tup[1].cast<bool>() ? 1 : 0;
  } else if (kind == "int") {
    n.op = Op::kInt;
    n.i = tup[1].cast<int64_t>();
  } else if (kind == "float") {
    n.op = Op::kFloat;
    n.f = tup[1].cast<double>();
  } else if (kind == "str") {
    n.op = Op::kStr;
    n.s = tup[1].cast<std::string>();
  } else if (kind == "dtype") {
    n.op = Op::kDType;
    n.flag = tup[1].cast<std::string>() == "triton" ? expr::kTritonDType : expr::kTorchDType;
    const std::string name = tup[2].cast<std::string>();
    const DType d = dtype_from_name(name);
    TE_CHECK(d != DType::invalid, ValueError)
        << "the dtype " << name << ", which Triton has no type for";
    n.i = static_cast<int64_t>(d);
  } else if (kind == "arg" || kind == "arg_dtype" || kind == "arg_element_size" ||
             kind == "arg_is_none" || kind == "arg_is_descriptor") {
    n.op = kind == "arg"                ? Op::kArg
           : kind == "arg_dtype"        ? Op::kArgDType
           : kind == "arg_element_size" ? Op::kArgElementSize
           : kind == "arg_is_none"      ? Op::kArgIsNone
                                        : Op::kArgIsDescriptor;
    n.param = tup[1].cast<uint16_t>();
  } else if (kind == "arg_or") {
    n.op = Op::kArgOr;
    n.param = tup[1].cast<uint16_t>();
    n.a = add(tup[2], out, depth + 1);
  } else {
    const OpName* found = nullptr;
    for (const OpName& o : kOps) {
      if (kind == o.name) found = &o;
    }
    TE_ICHECK(found != nullptr) << "the glue's expression tree has an unknown node '" << kind
                                << "'";
    n.op = found->op;
    const size_t nk = tup.size() - 1;
    TE_ICHECK(nk >= 1 && nk <= 3) << "expression node '" << kind << "' with " << nk << " operands";
    uint32_t kids[3] = {0, 0, 0};
    for (size_t k = 0; k < nk; ++k) kids[k] = add(tup[k + 1], out, depth + 1);
    n.a = kids[0];
    n.b = kids[1];
    n.c = kids[2];
  }
  out.push_back(std::move(n));
  return static_cast<uint32_t>(out.size() - 1);
}

// glue's translation of fn, or none (with `why`) when it is not translatable.
pyb::object translate(const char* what, pyb::handle fn, const std::vector<std::string>& params,
                      std::string* why) {
  pyb::list names;
  for (const std::string& p : params) names.append(p);
  try {
    return glue().attr(what)(fn, names);
  } catch (pyb::error_already_set& e) {
    if (exception_type(e) != "NotTranslatable") throw;
    *why = pyb::str(e.value()).cast<std::string>();
    return pyb::object();
  }
}

expr::Program program_of(pyb::handle tree) {
  std::vector<Node> nodes;
  add(tree, nodes, 1);
  return expr::Program::from_nodes(std::move(nodes));
}

}  // namespace

expr::Program heuristic_program(pyb::handle fn, const std::vector<std::string>& params,
                                std::string* why) {
  const pyb::object tree = translate("heuristic_expression", fn, params, why);
  if (!tree) return {};
  try {
    return program_of(tree);
  } catch (const ValueError& e) {
    *why = e.what();
    return {};
  }
}

expr::Hook hook_program(pyb::handle fn, const std::vector<std::string>& params, std::string* why) {
  const pyb::object actions = translate("pre_hook_actions", fn, params, why);
  if (!actions) return {};
  expr::Hook h;
  try {
    for (pyb::handle a : actions) {
      const pyb::tuple t = pyb::reinterpret_borrow<pyb::tuple>(a);
      expr::HookAction act;
      const std::string kind = t[0].cast<std::string>();
      act.kind = kind == "zero"                ? expr::HookAction::Kind::kZero
                 : kind == "block_shape_tuple" ? expr::HookAction::Kind::kBlockShapeTuple
                                               : expr::HookAction::Kind::kBlockShape;
      act.param = t[1].cast<uint16_t>();
      for (pyb::handle d : t[2]) act.dims.push_back(program_of(d));
      // The guard: when the action applies (None: always).
      if (t.size() > 3 && !t[3].is_none()) act.guard = program_of(t[3]);
      TE_CHECK(act.dims.size() <= 5, ValueError) << "a block shape of rank " << act.dims.size();
      h.actions.push_back(std::move(act));
      TE_CHECK(h.actions.size() <= expr::kMaxHookActions, ValueError)
          << "more than " << expr::kMaxHookActions << " actions";
    }
  } catch (const ValueError& e) {
    *why = e.what();
    return {};
  }
  return h;
}

GridProgram::~GridProgram() {
  for (const Free& f : free) Py_XDECREF(f.name);
  for (const Callee& c : callees) {
    Py_XDECREF(c.root.name);
    for (PyObject* a : c.attrs) Py_DECREF(a);
    Py_XDECREF(c.object);
  }
}

namespace {

PyObject* interned(pyb::handle s) {
  PyObject* name = s.ptr();
  Py_INCREF(name);
  PyUnicode_InternInPlace(&name);
  return name;
}

GridProgram::Free free_of(pyb::handle where) {
  const pyb::tuple t = pyb::reinterpret_borrow<pyb::tuple>(where);
  GridProgram::Free f;
  if (t[0].cast<std::string>() == "cell") {
    f.cell = t[1].cast<int>();
  } else {
    f.name = interned(t[1]);
  }
  return f;
}

}  // namespace

bool grid_program(pyb::handle fn, const std::vector<std::string>& params, GridProgram* out,
                  std::string* why) {
  const pyb::object found = translate("grid_expression", fn, params, why);
  if (!found) return false;
  const pyb::tuple t = pyb::reinterpret_borrow<pyb::tuple>(found);
  std::vector<expr::Program> dims;
  try {
    for (pyb::handle d : t[0]) dims.push_back(program_of(d));
  } catch (const ValueError& e) {
    *why = e.what();
    return false;
  }
  out->dims = std::move(dims);
  for (pyb::handle f : t[1]) out->free.push_back(free_of(f));
  for (pyb::handle c : t[2]) {
    const pyb::tuple callee = pyb::reinterpret_borrow<pyb::tuple>(c);
    GridProgram::Callee k;
    k.root = free_of(callee[0]);
    for (pyb::handle a : callee[1]) k.attrs.push_back(interned(a));
    k.object = pyb::object(callee[2]).release().ptr();
    out->callees.push_back(std::move(k));
  }
  return true;
}

}  // namespace triton_embed::detail::py
