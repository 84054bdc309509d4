#include "bundle/tuning_rule.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>

#include "base/errors.h"
#include "triton_embed/bundle.h"

namespace triton_embed::detail::bundle {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

bool parse_int(std::string_view s, int64_t* out) {
  s = trim(s);
  if (s.empty()) return false;
  const size_t digits = s[0] == '-' || s[0] == '+' ? 1 : 0;
  if (digits == s.size()) return false;
  for (size_t i = digits; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  const std::string text(s);
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *out = v;
  return true;
}

constexpr const char* kForms =
    "expected exact, nearest, bucket:pow2 or bucket:B1,B2,... (ascending upper bounds), "
    "optionally as NAME=RULE for one key argument, items separated by ';'";

bool parse_dim(std::string_view s, DimRule* r, std::string* why) {
  s = trim(s);
  if (s == "exact") {
    r->kind = DimRule::Kind::kExact;
  } else if (s == "nearest") {
    r->kind = DimRule::Kind::kNearest;
  } else if (s == "bucket:pow2") {
    r->kind = DimRule::Kind::kPow2;
  } else if (s.substr(0, 7) == "bucket:") {
    r->kind = DimRule::Kind::kBounds;
    std::string_view list = s.substr(7);
    while (true) {
      const size_t comma = list.find(',');
      int64_t b = 0;
      if (!parse_int(list.substr(0, comma), &b)) {
        *why = "'" + std::string(s) + "': the bound '" + std::string(trim(list.substr(0, comma))) +
               "' is not an integer";
        return false;
      }
      if (!r->bounds.empty() && b <= r->bounds.back()) {
        *why = "'" + std::string(s) + "': the bounds must ascend";
        return false;
      }
      r->bounds.push_back(b);
      if (comma == std::string_view::npos) break;
      list = list.substr(comma + 1);
    }
  } else {
    *why = "'" + std::string(s) + "' is not a rule; " + kForms;
    return false;
  }
  return true;
}

std::string list_values(const std::vector<int64_t>& have) {
  std::string s;
  for (size_t i = 0; i < have.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(have[i]);
  if (have.size() > 8) s += ", ... (" + std::to_string(have.size()) + " values)";
  return s;
}

struct Declared {
  std::mutex mu;
  std::map<std::string, std::string> rules;  // module.name -> canonical text
};
Declared& declared() {
  static Declared* d = new Declared();  // never destroyed: recorded at exit
  return *d;
}

}  // namespace

std::string DimRule::str() const {
  switch (kind) {
    case Kind::kExact:
      return "exact";
    case Kind::kNearest:
      return "nearest";
    case Kind::kPow2:
      return "bucket:pow2";
    case Kind::kBounds:
      break;
  }
  std::string s = "bucket:";
  for (size_t i = 0; i < bounds.size(); ++i) s += (i ? "," : "") + std::to_string(bounds[i]);
  return s;
}

bool TuningRule::parse(std::string_view text, TuningRule* out, std::string* why) {
  TuningRule r;
  bool have_fallback = false;
  if (trim(text).empty()) {
    *why = "an empty rule; " + std::string(kForms);
    return false;
  }
  std::string_view rest = text;
  while (true) {
    const size_t semi = rest.find(';');
    const std::string_view item = trim(rest.substr(0, semi));
    const size_t eq = item.find('=');
    DimRule d;
    if (eq == std::string_view::npos) {
      if (have_fallback) {
        *why = "two rules for every key argument ('" + r.fallback.str() + "' and '" +
               std::string(item) + "'): name one of them NAME=RULE";
        return false;
      }
      if (!parse_dim(item, &r.fallback, why)) return false;
      have_fallback = true;
    } else {
      const std::string name(trim(item.substr(0, eq)));
      if (!identifier(name)) {
        *why = "'" + name + "' is not a key argument's name";
        return false;
      }
      for (const auto& [n, _] : r.named) {
        if (n == name) {
          *why = "two rules for key argument '" + name + "'";
          return false;
        }
      }
      if (!parse_dim(item.substr(eq + 1), &d, why)) return false;
      r.named.emplace_back(name, std::move(d));
    }
    if (semi == std::string_view::npos) break;
    rest = rest.substr(semi + 1);
  }
  *out = std::move(r);
  return true;
}

std::string TuningRule::str() const {
  std::string s;
  if (fallback.kind != DimRule::Kind::kExact || named.empty()) s = fallback.str();
  for (const auto& [name, d] : named) s += (s.empty() ? "" : ";") + name + "=" + d.str();
  return s;
}

const DimRule& TuningRule::for_dim(std::string_view name) const {
  for (const auto& [n, d] : named) {
    if (n == name) return d;
  }
  return fallback;
}

bool TuningRule::all_exact() const {
  if (fallback.kind != DimRule::Kind::kExact) return false;
  return std::all_of(named.begin(), named.end(),
                     [](const auto& nd) { return nd.second.kind == DimRule::Kind::kExact; });
}

bool serve_dim(const DimRule& r, int64_t x, const std::vector<int64_t>& have_in, int64_t* out,
               std::string* why) {
  std::vector<int64_t> have = have_in;
  std::sort(have.begin(), have.end());
  have.erase(std::unique(have.begin(), have.end()), have.end());
  if (std::binary_search(have.begin(), have.end(), x)) {
    *out = x;
    return true;
  }
  const std::string tuned = " (tuned: " + list_values(have) + ")";
  const std::string xs = std::to_string(x);
  // The largest recorded value in (lo, hi].
  auto in_bucket = [&](bool open_below, int64_t lo, int64_t hi) {
    for (auto it = have.rbegin(); it != have.rend(); ++it) {
      if (*it <= hi && (open_below || *it > lo)) {
        *out = *it;
        return true;
      }
    }
    return false;
  };
  switch (r.kind) {
    case DimRule::Kind::kExact:
      *why = "its rule is exact, and " + xs + " was not tuned" + tuned;
      return false;
    case DimRule::Kind::kNearest: {
      if (x <= 0) {
        *why = "its rule is nearest, on a log2 scale of positive values, and " + xs +
               " was not tuned" + tuned;
        return false;
      }
      int64_t lo = 0, hi = 0;  // the nearest positive values below and above x (0: none)
      for (int64_t v : have) {
        if (v > 0 && v < x) lo = v;
        if (v > x && hi == 0) hi = v;
      }
      if (lo == 0 && hi == 0) {
        *why = "its rule is nearest, and no positive value was tuned" + tuned;
        return false;
      }
      // Nearer on a log2 scale: x / lo against hi / x, i.e. x * x against lo * hi; ties to hi.
      if (lo == 0 || (hi != 0 && static_cast<__int128>(x) * x >= static_cast<__int128>(lo) * hi)) {
        *out = hi;
      } else {
        *out = lo;
      }
      return true;
    }
    case DimRule::Kind::kPow2: {
      if (x <= 0) {
        *why = "its rule is bucket:pow2, whose buckets hold positive values, and " + xs +
               " was not tuned" + tuned;
        return false;
      }
      uint64_t up = 1;
      while (up < static_cast<uint64_t>(x)) up <<= 1;
      const uint64_t lo = up >> 1;
      for (auto it = have.rbegin(); it != have.rend(); ++it) {
        if (*it > 0 && static_cast<uint64_t>(*it) <= up && static_cast<uint64_t>(*it) > lo) {
          *out = *it;
          return true;
        }
      }
      *why = "its rule is bucket:pow2, and no value in " + xs + "'s bucket (" + std::to_string(lo) +
             ", " + std::to_string(up) + "] was tuned" + tuned;
      return false;
    }
    case DimRule::Kind::kBounds: {
      size_t i = 0;
      while (i < r.bounds.size() && r.bounds[i] < x) ++i;
      if (i == r.bounds.size()) {
        *why = "its rule is " + r.str() + ", and " + xs + " is above its last bound" + tuned;
        return false;
      }
      const bool first = i == 0;
      const int64_t lo = first ? std::numeric_limits<int64_t>::min() : r.bounds[i - 1];
      if (in_bucket(first, lo, r.bounds[i])) return true;
      *why = "its rule is " + r.str() + ", and no value in " + xs + "'s bucket (" +
             (first ? std::string("-inf") : std::to_string(lo)) + ", " +
             std::to_string(r.bounds[i]) + "] was tuned" + tuned;
      return false;
    }
  }
  return false;
}

void declared_rules(std::vector<std::pair<std::string, std::string>>& out) {
  Declared& d = declared();
  std::lock_guard<std::mutex> lock(d.mu);
  for (const auto& kv : d.rules) out.push_back(kv);
}

bool declared_rule(const std::string& kernel, std::string* text) {
  Declared& d = declared();
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.rules.find(kernel);
  if (it == d.rules.end()) return false;
  *text = it->second;
  return true;
}

}  // namespace triton_embed::detail::bundle

namespace triton_embed {

void set_tuning_rule(std::string_view kernel, std::string_view rule) {
  const size_t dot = kernel.rfind('.');
  TE_CHECK(dot != std::string_view::npos && dot > 0 && dot + 1 < kernel.size(), ValueError)
      << "set_tuning_rule(\"" << kernel << "\", \"" << rule
      << "\"): name the kernel as module.name, e.g. \"pykernels.matmul.matmul_kernel\"";
  detail::bundle::TuningRule r;
  std::string why;
  TE_CHECK(detail::bundle::TuningRule::parse(rule, &r, &why), ValueError)
      << "set_tuning_rule(\"" << kernel << "\", \"" << rule << "\"): " << why;
  detail::bundle::Declared& d = detail::bundle::declared();
  std::lock_guard<std::mutex> lock(d.mu);
  if (r.all_exact() && r.named.empty()) {
    d.rules.erase(std::string(kernel));  // exact: what a bundle without a rule does
  } else {
    d.rules[std::string(kernel)] = r.str();
  }
}

}  // namespace triton_embed
