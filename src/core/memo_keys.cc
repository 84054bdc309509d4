// The layers' memo keys (core/memo_keys.h), and the decisions noted under them for bundles.

#include "core/memo_keys.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "core/registry.h"

namespace triton_embed::detail {

namespace {

// A value's tag in the low byte of its first word. Bundles store memo keys (heuristic and
// tuning records' key words, bundle/decisions.h), so the numbers are the format's: fixed, never
// reused (dtypes in these keys are DType's numbers, pinned in bundle/enum_codes.h).
enum : uint64_t {
  kTagAbsent = 1,
  kTagNone = 2,
  kTagBool = 3,
  kTagInt = 4,
  kTagFloat = 5,
  kTagPointer = 6,
  kTagStr = 7,
  kTagDType = 8,
  kTagScalar = 9,
  kTagConstexpr = 10,
  kTagTuple = 11,
  kTagJit = 12,
};

}  // namespace

void encode_value(const ArgValue& v, MemoKey& key) {
  switch (v.kind) {
    case ArgKind::kNone:
      key.push(kTagNone);
      return;
    case ArgKind::kBool:
      key.push(kTagBool | static_cast<uint64_t>(v.i) << 8);
      return;
    case ArgKind::kInt:
      key.push(kTagInt | static_cast<uint64_t>(v.big) << 8);
      key.push(v.u);
      return;
    case ArgKind::kFloat: {
      uint64_t bits;
      std::memcpy(&bits, &v.f, sizeof(bits));
      key.push(kTagFloat);
      key.push(bits);
      return;
    }
    case ArgKind::kPointer:
      key.push(kTagPointer);
      return;
    case ArgKind::kStr: {
      key.push(kTagStr | static_cast<uint64_t>(v.count) << 8);
      for (uint32_t i = 0; i < v.count; i += 8) {
        uint64_t w = 0;
        std::memcpy(&w, v.s + i, v.count - i < 8 ? v.count - i : 8);
        key.push(w);
      }
      return;
    }
    case ArgKind::kDType:
      key.push(kTagDType | static_cast<uint64_t>(v.dtype) << 8);
      return;
    case ArgKind::kScalar:
      key.push(kTagScalar | static_cast<uint64_t>(v.dtype) << 8 |
               static_cast<uint64_t>(v.big) << 16);
      key.push(v.u);
      return;
    case ArgKind::kConstexpr:
      key.push(kTagConstexpr);
      encode_value(*v.elems, key);
      return;
    case ArgKind::kTuple:
      key.push(kTagTuple | static_cast<uint64_t>(v.count) << 8);
      for (uint32_t i = 0; i < v.count; ++i) encode_value(v.elems[i], key);
      return;
    case ArgKind::kJitFunction:
      key.push(kTagJit);
      key.push(reinterpret_cast<uintptr_t>(v.ptr));
      return;
    case ArgKind::kPyObject:
    case ArgKind::kTensorDesc:  // Python code may read any of a descriptor's fields
      key.overflow = true;      // an arbitrary Python object: not keyed, Python decides each time
      return;
  }
}

void heuristic_memo_key(const HeuristicPlan& plan, const Frame& f, MemoKey& key) {
  for (const Dep& d : plan.deps) {
    const uint32_t p = d.param;
    if (f.given[p] == kAbsent) {
      key.push(kTagAbsent);
      continue;
    }
    const ArgValue& v = f.vals[p];
    switch (d.aspect) {
      case Aspect::kValue:
        if (TE_LIKELY(v.kind == ArgKind::kInt)) {  // the common case, inline
          key.push(kTagInt | static_cast<uint64_t>(v.big) << 8);
          key.push(v.u);
        } else {
          encode_value(v, key);
        }
        break;
      case Aspect::kDType:
        key.push(v.kind == ArgKind::kPointer ? 0x100u | static_cast<uint64_t>(v.dtype) : 0);
        break;
      case Aspect::kAddress:
        key.push(v.kind == ArgKind::kPointer ? v.u : ~0ull);
        break;
    }
  }
}

// Autotuner.run's key: the values of the key arguments that were given, then the dtype of
// every given argument that has one, in Python's order (positional, then by name). A
// one-config autotuner has no key: only the handle's options.
void tuning_key(const TuneLayer& t, const Frame& f, MemoKey& key) {
  key.push(f.options->id);
  if (t.num_configs == 1) return;
  for (int p : t.key_params) {
    if (p < 0 || f.given[p] == kAbsent) {
      key.push(kTagAbsent);
    } else if (f.vals[p].kind == ArgKind::kPointer) {
      key.overflow = true;  // a tensor in the key: Python compares the objects themselves
    } else {
      encode_value(f.vals[p], key);
    }
  }
  auto dtype_of = [&](uint32_t p) {
    if (f.vals[p].kind == ArgKind::kPointer)
      key.push(0x100u | static_cast<uint64_t>(f.vals[p].dtype));
  };
  for (uint32_t p = 0; p < f.npos; ++p) dtype_of(p);
  for (uint32_t i = 0; i < f.nkw; ++i) dtype_of(f.kw[i]);
}

namespace {

// Whether another process can rebuild `v` from its bytes (no Python object, no address of
// this process's).
bool replayable(const ArgValue& v) noexcept {
  switch (v.kind) {
    case ArgKind::kJitFunction:
    case ArgKind::kPyObject:
    case ArgKind::kTensorDesc:
      return false;
    case ArgKind::kConstexpr:
      return replayable(*v.elems);
    case ArgKind::kTuple:
      for (uint32_t i = 0; i < v.count; ++i) {
        if (!replayable(v.elems[i])) return false;
      }
      return true;
    default:
      return true;
  }
}

}  // namespace

void record_heuristic(Heuristic& h, const Frame& f, const ArgValue& value) {
  if (!replayable(value)) return;
  std::lock_guard<std::mutex> lock(h.mu);
  const HeuristicPlan* plan = h.plan.load(std::memory_order_acquire);
  if (plan == nullptr) return;  // not memoised: Python decides every call
  for (const Dep& d : plan->deps) {
    if (d.aspect == Aspect::kAddress) return;
    if (d.aspect == Aspect::kValue && f.given[d.param] != kAbsent && !replayable(f.vals[d.param])) {
      return;
    }
  }
  MemoKey key;
  heuristic_memo_key(*plan, f, key);
  if (key.overflow) return;
  if (h.recorded_plan != plan) {
    h.recorded.clear();
    h.recorded_plan = plan;
  }
  if (h.recorded.size() >= kMaxDecisions) return;
  h.recorded.emplace(std::vector<uint64_t>(key.w, key.w + key.n), value);
}

void record_choice(TuneLayer& t, const Frame& f, const MemoKey& key, uint32_t target,
                   const Choice* choice, uint64_t epoch) {
  if (target == 0 || key.overflow || choice == nullptr) return;
  for (int p : t.key_params) {
    if (p >= 0 && f.given[p] != kAbsent && !replayable(f.vals[p])) return;
  }
  std::vector<uint64_t> words;
  words.reserve(key.n + 1);
  words.push_back(target);
  words.insert(words.end(), key.w, key.w + key.n);
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.recorded.size() >= kMaxDecisions || !still_current(epoch)) return;
  t.recorded.emplace(std::move(words), choice);
}

}  // namespace triton_embed::detail
