#include "triton_embed/options.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "base/errors.h"
#include "core/jit_internal.h"
#include "core/kernel_state.h"

namespace triton_embed {

Options& Options::set(std::string_view name, OptionValue value) {
  TE_CHECK(!name.empty(), ValueError) << "Options::set: the option name is empty";
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    entries_.emplace(it, std::string(name), std::move(value));
  }
  return *this;
}

std::string Options::str() const {
  std::ostringstream os;
  bool first = true;
  for (const auto& [name, v] : entries_) {
    if (!first) os << ", ";
    first = false;
    os << name << "=";
    switch (v.kind()) {
      case OptionValue::Kind::kBool:
        os << (v.as_bool() ? "True" : "False");
        break;
      case OptionValue::Kind::kInt:
        os << v.as_int();
        break;
      case OptionValue::Kind::kFloat:
        os << v.as_float();
        break;
      case OptionValue::Kind::kString:
        os << "'" << v.as_string() << "'";
        break;
    }
  }
  return os.str();
}

namespace detail {

namespace {
// A process holds few distinct option sets; they are kept for its lifetime so handles can
// point at them and the cache key can use their id.
std::mutex& interned_mu() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
std::vector<std::unique_ptr<InternedOptions>>& interned_table() {
  static auto* table = new std::vector<std::unique_ptr<InternedOptions>>();
  return *table;
}
}  // namespace

const InternedOptions* interned_options_by_id(uint32_t id) {
  std::lock_guard<std::mutex> lock(interned_mu());
  auto& table = interned_table();
  TE_ICHECK(id < table.size()) << "no interned options with id " << id;
  return table[id].get();
}

const InternedOptions* intern_options(const Options& options) {
  std::lock_guard<std::mutex> lock(interned_mu());
  auto* table = &interned_table();
  for (const auto& o : *table) {
    if (o->options == options) return o.get();
  }
  table->push_back(std::make_unique<InternedOptions>(
      InternedOptions{static_cast<uint32_t>(table->size()), options}));
  return table->back().get();
}

}  // namespace detail
}  // namespace triton_embed
