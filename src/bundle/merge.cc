// Merging bundles into one (merge), and listing one for people (describe): what
// triton-embed-bundle does with the bundles it opened.

#include "bundle/merge.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "bundle/file_layout.h"

namespace triton_embed::detail::bundle {
namespace {

using Reason = BundleError::Reason;

std::string key_words_text(const std::vector<uint64_t>& words) {
  std::string s = "[";
  char buf[24];
  for (size_t i = 0; i < words.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s0x%llx", i ? ", " : "",
                  static_cast<unsigned long long>(words[i]));
    s += buf;
  }
  return s + "]";
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// Options as the integration stores them ("name=<b|i|f|s><value>" lines, kernel_table.h),
// for people: "name=value; name=value". Other text is shown as it is.
std::string options_for_people(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const size_t eq = line.find('=');
    if (!out.empty()) out += "; ";
    if (eq != std::string_view::npos && eq + 1 < line.size() &&
        std::string_view("bifs").find(line[eq + 1]) != std::string_view::npos) {
      out.append(line.substr(0, eq + 1)).append(line.substr(eq + 2));
    } else {
      out.append(line);
    }
  }
  return out;
}

// The first field in which two kernels of one identity differ, or nullptr.
const char* difference(const KernelView& a, const KernelView& b) {
  if (a.wrapper != b.wrapper) return "wrapper";
  if (a.params != b.params) return "parameter table (params)";
  if (a.layers != b.layers) return "layers";
  return nullptr;
}

// The first field in which two entries of one identity differ (the kernel index aside, which
// the caller has mapped), or nullptr.
const char* difference(const EntryView& a, const EntryView& b) {
  const char* field = nullptr;
  entry_fields(a, b, [&](const char* name, const auto& x, const auto& y) {
    if (field == nullptr && x != y) field = name;
  });
  return field;
}

std::string kernel_text(const KernelView& k) {
  return std::string(k.module) + "." + std::string(k.name) + " (source hash " +
         std::string(k.source_hash) + ")";
}

[[noreturn]] void conflict(const Bundle& here, const Bundle& there, const std::string& what,
                           const std::string& field) {
  throw BundleError("bundle " + here.name() + ": conflict: " + what + " is also in bundle " +
                        there.name() + ", with a different " + field +
                        "; merge bundles built from the same kernel sources by the same "
                        "Triton, or leave one of them out",
                    Reason::kConflict);
}

}  // namespace

Contents merge(const std::vector<const Bundle*>& bundles) {
  Contents out;
  out.producer.library_version = library_version();
  std::vector<std::string_view> tritons;
  std::string names;
  for (const Bundle* b : bundles) {
    b->check_blobs();  // what is copied or compared below is what was written
    names += (names.empty() ? "" : ", ") + b->name();
    const std::string_view t = b->producer().triton_version;
    if (std::find(tritons.begin(), tritons.end(), t) == tritons.end()) tritons.push_back(t);
  }
  for (size_t i = 0; i < tritons.size(); ++i) {
    out.producer.triton_version += (i ? " + " : "") + std::string(tritons[i]);
  }
  out.producer.note = "merged from " + names;

  // Where each kept item came from, to compare later duplicates with it.
  struct From {
    const Bundle* bundle;
    size_t index;
  };
  using KernelId = std::tuple<std::string_view, std::string_view, std::string_view>;
  using EntryId = std::tuple<uint32_t, uint32_t, std::string_view, std::vector<uint64_t>>;
  using RecordId = std::tuple<uint32_t, uint32_t, std::vector<uint64_t>>;
  std::map<KernelId, std::pair<uint32_t, From>> kernels;
  std::map<EntryId, From> entries;
  std::map<RecordId, From> records;
  for (const Bundle* b : bundles) {
    std::vector<uint32_t> remap(b->kernels().size());
    for (size_t i = 0; i < b->kernels().size(); ++i) {
      const KernelView& k = b->kernels()[i];
      const auto [it, added] = kernels.try_emplace(
          KernelId{k.module, k.name, k.source_hash},
          std::make_pair(static_cast<uint32_t>(out.kernels.size()), From{b, i}));
      if (added) {
        out.kernels.push_back(own(k));
      } else if (const char* d =
                     difference(it->second.second.bundle->kernels()[it->second.second.index], k)) {
        conflict(*b, *it->second.second.bundle, "kernel " + kernel_text(k), d);
      }
      remap[i] = it->second.first;
    }
    for (size_t i = 0; i < b->entries().size(); ++i) {
      const EntryView& e = b->entries()[i];
      const auto [it, added] = entries.try_emplace(
          EntryId{remap[e.kernel], e.target, e.options, e.key_words}, From{b, i});
      if (added) {
        out.entries.push_back(own(e));
        out.entries.back().kernel = remap[e.kernel];
        continue;
      }
      const EntryView& first = it->second.bundle->entries()[it->second.index];
      if (const char* d = difference(first, e)) {
        std::string field = d;
        if (field == "hash") {
          field += " (" + std::string(e.meta.hash) + " here, " + std::string(first.meta.hash) +
                   " there)";
        }
        conflict(*b, *it->second.bundle,
                 "kernel " + kernel_text(b->kernels()[e.kernel]) + ": its entry for " +
                     target_text(e.target) + " options " + quoted(e.options) + " key " +
                     key_words_text(e.key_words),
                 field);
      }
    }
    for (size_t i = 0; i < b->records().size(); ++i) {
      const RecordView& r = b->records()[i];
      const auto [it, added] =
          records.try_emplace(RecordId{remap[r.kernel], r.kind, r.key_words}, From{b, i});
      if (added) {
        out.records.push_back(own(r));
        out.records.back().kernel = remap[r.kernel];
      } else if (it->second.bundle->records()[it->second.index].payload != r.payload) {
        conflict(*b, *it->second.bundle,
                 "kernel " + kernel_text(b->kernels()[r.kernel]) + ": its record of kind " +
                     std::to_string(r.kind) + " key " + key_words_text(r.key_words),
                 "payload");
      }
    }
  }
  return out;
}

std::string describe(const Bundle& b) {
  b.check_blobs();  // a damaged bundle is refused, not listed
  std::ostringstream os;
  const ProducerView& p = b.producer();
  os << "bundle " << b.name() << ": format version " << b.format_version() << ", "
     << plural(b.size(), "byte", "bytes") << "\n";
  auto or_unknown = [](std::string_view v) { return v.empty() ? std::string_view("?") : v; };
  os << "  written by triton_embed " << or_unknown(p.library_version) << " (Triton "
     << or_unknown(p.triton_version) << ")\n";
  if (!p.note.empty()) os << "  note: " << p.note << "\n";
  os << "  " << plural(b.kernels().size(), "kernel", "kernels") << ", "
     << plural(b.entries().size(), "entry", "entries") << ", "
     << plural(b.records().size(), "record", "records") << "\n";
  std::vector<std::vector<size_t>> by_kernel(b.kernels().size());
  std::vector<size_t> records(b.kernels().size());
  for (size_t i = 0; i < b.entries().size(); ++i) by_kernel[b.entries()[i].kernel].push_back(i);
  for (const RecordView& r : b.records()) ++records[r.kernel];
  for (size_t k = 0; k < b.kernels().size(); ++k) {
    const KernelView& kv = b.kernels()[k];
    os << "kernel #" << k << " " << kv.module << "." << kv.name << ": source hash "
       << kv.source_hash;
    if (!kv.wrapper.empty()) os << ", " << kv.wrapper;
    os << "\n";
    for (size_t i : by_kernel[k]) {
      const EntryView& e = b.entries()[i];
      os << "  entry #" << i << " " << target_text(e.target) << " "
         << quoted(options_for_people(e.options)) << ": hash " << e.meta.hash << ", key "
         << plural(e.key_words.size(), "word", "words") << ", signature "
         << quoted(e.meta.signature) << ", cubin " << plural(e.meta.cubin.size(), "byte", "bytes")
         << ", ";
      if (e.meta.ptx.empty()) {
        os << "no ptx\n";
      } else {
        os << "ptx " << plural(e.meta.ptx.size(), "byte", "bytes") << "\n";
      }
    }
    if (records[k] > 0) os << "  " << plural(records[k], "record", "records") << "\n";
  }
  return os.str();
}

}  // namespace triton_embed::detail::bundle
