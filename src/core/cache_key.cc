// The cache key's words for a specialised call (core/cache_key.h), written as core/key_words.h
// lays them out, and read back: which cache entries serve a call.

#include "core/cache_key.h"

#include <cstring>
#include <string>
#include <vector>

#include "core/key_words.h"

namespace triton_embed::detail {

void build_key(const KernelState& kernel, const LeafList& leaves, Key& key) {
  key.n = 0;
  key.process_local = 0;
  KeyWriter kw(kernel, key);
  Run run;
  for (uint32_t i = 0; i < leaves.n; ++i) {
    const Leaf& l = leaves.leaves[i];
    if ((l.kind == LeafKind::kScalar || l.kind == LeafKind::kPointer) && l.count == 0) {
      if (const uint64_t full = run.add(run_code(l.kind, l.dtype, l.key, l.is_const))) kw.put(full);
      continue;
    }
    if (const uint64_t pending = run.flush()) kw.put(pending);
    kw.put(leaf_word(l.kind, l.dtype, l.key, l.is_const, l.count));
    if (l.kind == LeafKind::kConstexpr) kw.value(*l.value);
  }
  if (const uint64_t pending = run.flush()) kw.put(pending);
}

// ---- reading keys back: which entries serve a call ---------------------------------------

namespace {

// A runtime leaf's code as the signature writes it: "i32 D", "*fp16", "*kfp32 D".
std::string code_text(uint32_t c) {
  std::string s = (c & (1u << 10)) != 0 ? ((c & (1u << 9)) != 0 ? "*k" : "*") : "";
  s += std::string(dtype_name(static_cast<DType>(c & 0x7Fu)));
  if (((c & kCodeKeyMask) >> kCodeKeyShift) == static_cast<uint32_t>(SpecKey::kDiv16)) s += " D";
  return s;
}

std::string arg_text(const KernelState& k, uint32_t p) {
  std::string s = "argument #" + std::to_string(p);
  if (p < k.params.size()) s += " '" + k.params[p].name + "'";
  return s;
}

// Whether a constexpr leaf is the integer 1 that Triton made a constexpr of a runtime
// parameter (an entry taking the parameter as a plain i32 serves it).
bool is_specialised_one(const KernelState& k, const Leaf& l) {
  return l.kind == LeafKind::kConstexpr && l.param < k.specs.size() &&
         !k.specs[l.param].is_constexpr && l.value != nullptr && l.value->kind == ArgKind::kInt &&
         !l.value->big && l.value->i == 1;
}

}  // namespace

KeyMatch match_key(const KernelState& k, const LeafList& leaves, const Key& call,
                   const uint64_t* entry, size_t nentry, bool explain) {
  KeyMatch m;
  KeyReader c(call.w, call.n), e(entry, nentry);
  bool same = true;
  uint32_t i = 0;
  // Refused at leaf i: the leaves before it match; refused on an assumption alone, nearer.
  auto refuse = [&](uint32_t param, const std::string& why, bool assumption = false) {
    m.verdict = KeyMatch::Verdict::kRefused;
    m.nearness = 2 * i + (assumption ? 1 : 0);
    m.ones.clear();
    if (explain) m.why = arg_text(k, param) + " " + why;
    return m;
  };
  const uint32_t plain_i32[] = {
      static_cast<uint32_t>(run_code(LeafKind::kScalar, DType::i32, SpecKey::kNone, 0)),
      static_cast<uint32_t>(run_code(LeafKind::kScalar, DType::i32, SpecKey::kEmpty, 0))};
  for (; i < leaves.n; ++i) {
    const Leaf& l = leaves.leaves[i];
    if (l.kind == LeafKind::kScalar || l.kind == LeafKind::kPointer) {
      const uint32_t cc = c.code();
      if (!e.next_is_code()) {
        return refuse(l.param,
                      "is a constexpr, a tuple or a descriptor there (the signature "
                      "shows which), a runtime " +
                          code_text(cc) + " in this call");
      }
      const uint32_t ec = e.code();
      if ((cc & ~kCodeKeyMask) != (ec & ~kCodeKeyMask)) {
        return refuse(l.param,
                      "is " + code_text(ec) + " there, " + code_text(cc) + " in this call");
      }
      const uint32_t ck = (cc & kCodeKeyMask) >> kCodeKeyShift;
      const uint32_t ek = (ec & kCodeKeyMask) >> kCodeKeyShift;
      if (ek == static_cast<uint32_t>(SpecKey::kDiv16)) {
        if (ck != ek) {
          return refuse(l.param,
                        std::string("is assumed ") +
                            (l.kind == LeafKind::kPointer ? "16-byte aligned" : "divisible by 16") +
                            " there (" + code_text(ec) + "), and this call's is not",
                        true);
        }
        ++m.assumptions;
      }
      if (ck != ek) same = false;
      continue;
    }
    const uint64_t* cw = nullptr;
    const size_t cn = c.item(&cw);
    const bool one = is_specialised_one(k, l);
    if (one && e.next_is_code()) {
      const uint32_t ec = e.code();
      if (ec != plain_i32[0] && ec != plain_i32[1]) {
        return refuse(l.param,
                      "is 1 in this call, which Triton makes a constexpr; an entry "
                      "serves that only as an i32 with no divisibility assumption, "
                      "and this one's is " +
                          code_text(ec),
                      (ec & ~kCodeKeyMask) == (plain_i32[0] & ~kCodeKeyMask));
      }
      m.ones.push_back(i);
      same = false;
      continue;
    }
    const uint64_t* ew = nullptr;
    const size_t en = e.item(&ew);
    if (en == 0) {
      if (e.next_is_code()) {
        return refuse(l.param, "is a runtime " + code_text(e.code()) +
                                   " there, a constexpr, a tuple or a descriptor in this call");
      }
      return refuse(l.param, "has no counterpart there (another signature)");
    }
    if (en != cn || std::memcmp(ew, cw, en * sizeof(uint64_t)) != 0) {
      if (l.kind == LeafKind::kConstexpr && (ew[0] & 0xFFu) == (cw[0] & 0xFFu)) {
        return refuse(l.param,
                      one ? "is compiled in as another constexpr there, as 1 here"
                          : "is compiled in as another constexpr value there",
                      true);
      }
      return refuse(l.param, "is specialised as another kind of value there (another signature)");
    }
    if (one) ++m.assumptions;
  }
  if (!e.at_end()) {
    return refuse(leaves.n == 0 ? 0 : leaves.leaves[leaves.n - 1].param,
                  "is followed by more values there (another signature)");
  }
  m.verdict = same ? KeyMatch::Verdict::kExact : KeyMatch::Verdict::kServes;
  return m;
}

std::vector<uint32_t> one_slots(const LeafList& leaves, const std::vector<uint32_t>& ones) {
  std::vector<uint32_t> out;
  uint32_t np = 0;
  size_t j = 0;
  for (uint32_t i = 0; i < leaves.n; ++i) {
    const LeafKind kind = leaves.leaves[i].kind;
    if (kind == LeafKind::kScalar || kind == LeafKind::kPointer) {
      ++np;
    } else if (j < ones.size() && ones[j] == i) {
      out.push_back(np++);
      ++j;
    }
  }
  return out;
}

}  // namespace triton_embed::detail
