#include "python/handles.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "base/errors.h"

namespace triton_embed::detail {

namespace py {

namespace {

struct Held {
  KernelObjects objects;
  std::vector<PyObject*> kept;
};

struct Table {
  std::mutex mu;  // no Python runs while it is held
  std::unordered_map<const KernelState*, Held> kernels;
  std::unordered_map<const Choice*, PyObject*> configs;
};

Table& table() {
  static Table* t = new Table();  // never destroyed: threads may launch during exit
  return *t;
}

// Every reference `h` holds, appended to `out`.
void take_refs(Held& h, std::vector<PyObject*>& out) {
  out.push_back(h.objects.jit_function);
  out.push_back(h.objects.object);
  for (PyObject* o : h.objects.layers) out.push_back(o);
  for (const auto& fns : h.objects.heuristics) out.insert(out.end(), fns.begin(), fns.end());
  out.insert(out.end(), h.kept.begin(), h.kept.end());
}

}  // namespace

void set_objects(const KernelState& k, KernelObjects objects) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.kernels[&k].objects = std::move(objects);
}

void keep(const KernelState& k, PyObject* obj, bool once) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<PyObject*>& kept = t.kernels[&k].kept;
  if (once && std::find(kept.begin(), kept.end(), obj) != kept.end()) return;
  Py_INCREF(obj);
  kept.push_back(obj);
}

void drop_objects(const KernelState& k) {
  std::vector<PyObject*> refs;
  {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.kernels.find(&k);
    if (it == t.kernels.end()) return;
    take_refs(it->second, refs);
    t.kernels.erase(it);
  }
  for (PyObject* o : refs) Py_XDECREF(o);
}

PyObject* jit_function(const KernelState& k) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.kernels.find(&k);
  return it == t.kernels.end() ? nullptr : it->second.objects.jit_function;
}

PyObject* heuristic_function(const KernelState& k, const Heuristic& h) {
  for (size_t li = 0; li < k.layers.size(); ++li) {
    const auto& hs = k.layers[li]->heuristics;
    for (size_t hi = 0; hi < hs.size(); ++hi) {
      if (hs[hi].get() != &h) continue;
      Table& t = table();
      std::lock_guard<std::mutex> lock(t.mu);
      auto it = t.kernels.find(&k);
      return it == t.kernels.end() ? nullptr : it->second.objects.heuristics.at(li).at(hi);
    }
  }
  TE_ICHECK(false) << "a heuristic not of its kernel";
  return nullptr;
}

PyObject* tuner(const KernelState& k, const TuneLayer& tl) {
  for (size_t li = 0; li < k.layers.size(); ++li) {
    if (k.layers[li]->tune.get() != &tl) continue;
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.kernels.find(&k);
    return it == t.kernels.end() ? nullptr : it->second.objects.layers.at(li);
  }
  TE_ICHECK(false) << "an autotune layer not of its kernel";
  return nullptr;
}

void set_config(const Choice& c, PyObject* config) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.configs[&c] = config;
}

PyObject* config(const Choice& c) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.configs.find(&c);
  return it == t.configs.end() ? nullptr : it->second;
}

}  // namespace py

void release_python_objects() {
  // Take the references out under the table's lock, drop them after releasing it: a decref
  // can run Python code that lets another thread (holding the GIL) wait on this lock.
  std::vector<PyObject*> refs;
  {
    py::Table& t = py::table();
    std::lock_guard<std::mutex> lock(t.mu);
    for (auto& [k, held] : t.kernels) py::take_refs(held, refs);
    t.kernels.clear();
    t.configs.clear();
  }
  for (PyObject* o : refs) Py_XDECREF(o);
}

}  // namespace triton_embed::detail
