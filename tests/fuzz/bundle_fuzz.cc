// A structure-aware fuzzer of kernel bundles, linked to the runtime only (no Python): it
// mutates the container's fields (entries' integers, TMA records, key words, records) and
// the opaque payloads (parameter tables, layers, options, decisions), recomputes every CRC as
// a writer would, then loads the bundle in a child process and uses what loaded: constructs
// its kernels, compiles the recorded calls, dry-runs the launch path, writes the process's
// bundle back; it also lists the bundle and merges it with itself (what the bundle tool
// does). A bundle must be refused at load with BundleError, or serve without a crash
// and without a BundleError later (docs/bundle_format.md, "What the loader guarantees": the
// one late BundleError, a cubin or PTX whose bytes do not match its entry's CRC-32, cannot
// happen here, where every CRC is recomputed as a writer would; the fuzz mode checks first
// that damaging the seeds' blobs gives it).
//
//   bundle_fuzz fuzz SECONDS OUT_DIR SEED.teb...   mutate the seeds for SECONDS; a failing
//                                                  input is saved in OUT_DIR (keep it in
//                                                  tests/fuzz/regressions)
//   bundle_fuzz replay FILE...                     each must be refused or serve cleanly
//
// The container layout is read here from docs/bundle_format.md, independently of the
// library's reader: the fuzzer does not share its assumptions.

#include <sys/wait.h>
#include <triton_embed/bundle.h>
#include <triton_embed/error.h>
#include <triton_embed/jit.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "../cpp/bundle_calls.h"
#include "bundle/file_reader.h"
#include "bundle/file_writer.h"
#include "bundle/format.h"
#include "bundle/merge.h"
#include "testing/testing.h"

namespace te = triton_embed;

namespace {

// ---- the container (docs/bundle_format.md) -----------------------------------------------

constexpr size_t kHeader = 128, kTable = 128, kEntrySize = 40, kSections = 7;
enum Section { kStrings, kWords, kTma, kKernels, kEntries, kRecords, kBlobs };
// Entries are 216 bytes in format version 1; version 2 adds u32 cubin CRC-32 at 216 and u32 ptx
// CRC-32 at 220.
constexpr size_t kItem[kSections] = {1, 8, 48, 96, 224, 40, 1};
constexpr size_t kEntryV1 = 216, kCubinCrc = 216, kPtxCrc = 220;

uint32_t crc32(const uint8_t* p, size_t n) {
  static uint32_t table[256];
  static bool made = false;
  if (!made) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    made = true;
  }
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

template <class T>
T rd(const std::vector<uint8_t>& b, size_t at) {
  T v{};
  if (at + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}
template <class T>
void wr(std::vector<uint8_t>& b, size_t at, T v) {
  if (at + sizeof(T) <= b.size()) std::memcpy(b.data() + at, &v, sizeof(T));
}

struct Layout {
  uint64_t offset[kSections] = {}, extent[kSections] = {}, count[kSections] = {};
  size_t item[kSections] = {};  // kItem, for the file's version
  bool ok = false;
};

Layout layout(const std::vector<uint8_t>& b) {
  Layout l;
  for (size_t s = 0; s < kSections; ++s) l.item[s] = kItem[s];
  if (rd<uint32_t>(b, 8) == 1) l.item[kEntries] = kEntryV1;
  if (b.size() < kHeader + kTable + kSections * kEntrySize - kTable) return l;
  for (size_t s = 0; s < kSections; ++s) {
    const size_t at = kTable + s * kEntrySize;
    l.offset[s] = rd<uint64_t>(b, at + 8);
    l.extent[s] = rd<uint64_t>(b, at + 16);
    l.count[s] = rd<uint64_t>(b, at + 24);
    if (l.offset[s] > b.size() || l.extent[s] > b.size() - l.offset[s]) return l;
  }
  l.ok = true;
  return l;
}

// Every CRC again, as a writer computes them: the entries' of their cubin and ptx (version 2;
// unless `blobs` is false), the sections', then the table's, then the header's.
void fix_crcs(std::vector<uint8_t>& b, bool blobs = true) {
  const Layout l = layout(b);
  if (!l.ok) return;
  const size_t entry = l.item[kEntries];
  for (uint64_t e = 0;
       blobs && entry != kEntryV1 && e < l.count[kEntries] && (e + 1) * entry <= l.extent[kEntries];
       ++e) {
    const size_t at = l.offset[kEntries] + e * entry;
    for (const auto& [ref, crc] : {std::pair<size_t, size_t>{104, kCubinCrc}, {120, kPtxCrc}}) {
      const uint64_t off = rd<uint64_t>(b, at + ref), size = rd<uint64_t>(b, at + ref + 8);
      if (off > l.extent[kBlobs] || size > l.extent[kBlobs] - off) continue;  // refused anyway
      wr<uint32_t>(b, at + crc, crc32(b.data() + l.offset[kBlobs] + off, size));
    }
  }
  for (size_t s = 0; s < kSections; ++s) {
    wr<uint32_t>(b, kTable + s * kEntrySize + 32, crc32(b.data() + l.offset[s], l.extent[s]));
  }
  wr<uint32_t>(b, 36, crc32(b.data() + kTable, kSections * kEntrySize));
  wr<uint32_t>(b, 124, crc32(b.data(), 124));
}

// ---- mutations ------------------------------------------------------------------------------

struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
};

uint64_t interesting(Rng& r) {
  static const uint64_t kValues[] = {
      0,           1,          2,          3,          4,        7,           8,
      16,          31,         32,         64,         255,      256,         1024,
      4096,        65535,      65536,      1u << 26,   1u << 30, 0x7FFFFFFFu, 0x80000000u,
      0xFFFFFFFFu, 1ull << 32, 1ull << 62, 1ull << 63, ~0ull,    ~0ull - 1};
  return r.below(4) == 0 ? r.next() : kValues[r.below(sizeof(kValues) / sizeof(kValues[0]))];
}

// A ref {u64 offset, u64 size} somewhere in a section's items: the payloads it points at.
struct Ref {
  size_t at;  // where the ref itself is
};

std::vector<Ref> refs(const std::vector<uint8_t>& b, const Layout& l) {
  std::vector<Ref> out;
  for (uint64_t k = 0; k < l.count[kKernels]; ++k) {
    for (size_t f = 0; f < 6; ++f) out.push_back({l.offset[kKernels] + k * 96 + f * 16});
  }
  for (uint64_t e = 0; e < l.count[kEntries]; ++e) {
    for (size_t off : {8, 24, 40, 56}) {
      out.push_back({l.offset[kEntries] + e * l.item[kEntries] + off});
    }
  }
  for (uint64_t r = 0; r < l.count[kRecords]; ++r)
    out.push_back({l.offset[kRecords] + r * 40 + 24});
  (void)b;
  return out;
}

void mutate(std::vector<uint8_t>& b, Rng& r) {
  const Layout l = layout(b);
  if (!l.ok) return;
  auto item = [&](Section s) -> size_t {
    return l.count[s] == 0 ? 0 : l.offset[s] + r.below(l.count[s]) * l.item[s];
  };
  switch (r.below(9)) {
    case 0: {  // an entry's i32 fields (warps, CTAs, stages, shared, parameter counts, version,
               // cluster)
      if (const size_t e = item(kEntries))
        wr<uint32_t>(b, e + 136 + 4 * r.below(10), static_cast<uint32_t>(interesting(r)));
      break;
    }
    case 1: {  // scratch sizes and alignments
      if (const size_t e = item(kEntries))
        wr<uint64_t>(b, e + 176 + 8 * r.below(4), interesting(r));
      break;
    }
    case 2: {  // flags, and the key / TMA ranges
      if (const size_t e = item(kEntries)) {
        if (r.below(2)) {
          wr<uint8_t>(b, e + 208 + r.below(3),
                      static_cast<uint8_t>(r.below(4) == 0 ? 255 : r.below(3)));
        } else {
          const size_t at = e + 72 + 8 * r.below(4);
          wr<uint64_t>(b, at,
                       r.below(2) ? rd<uint64_t>(b, at) + (r.below(2) ? 1 : -1) : interesting(r));
        }
      }
      break;
    }
    case 3: {  // a TMA record's fields
      if (const size_t t = item(kTma))
        wr<uint32_t>(b, t + 4 * r.below(11),
                     static_cast<uint32_t>(r.below(3) ? r.below(8) : interesting(r)));
      break;
    }
    case 4: {  // key words
      if (const size_t w = item(kWords))
        wr<uint64_t>(b, w,
                     r.below(2) ? rd<uint64_t>(b, w) ^ (1ull << r.below(64)) : interesting(r));
      break;
    }
    case 5:
    case 6: {  // an opaque payload's bytes: flip some, fill a stretch with one byte (nesting)
      const std::vector<Ref> rs = refs(b, l);
      if (rs.empty()) break;
      const Ref ref = rs[r.below(rs.size())];
      const uint64_t off = rd<uint64_t>(b, ref.at), size = rd<uint64_t>(b, ref.at + 8);
      if (size == 0 || off > l.extent[kStrings] || size > l.extent[kStrings] - off) break;
      uint8_t* p = b.data() + l.offset[kStrings] + off;
      if (r.below(2)) {
        for (int n = 1 + static_cast<int>(r.below(3)); n > 0; --n)
          p[r.below(size)] ^= static_cast<uint8_t>(1 + r.below(255));
      } else {
        const uint64_t from = r.below(size);
        const uint8_t v = r.below(2) ? p[r.below(size)] : static_cast<uint8_t>(r.below(256));
        for (uint64_t i = from; i < size; ++i) p[i] = v;
      }
      break;
    }
    case 7: {  // a ref shortened, or moved
      const std::vector<Ref> rs = refs(b, l);
      if (rs.empty()) break;
      const Ref ref = rs[r.below(rs.size())];
      const uint64_t size = rd<uint64_t>(b, ref.at + 8);
      if (r.below(2)) {
        wr<uint64_t>(b, ref.at + 8, size == 0 ? 0 : r.below(size));
      } else {
        wr<uint64_t>(b, ref.at, rd<uint64_t>(b, ref.at) + r.below(3));
      }
      break;
    }
    default: {  // a record's kind, kernel or key range
      if (const size_t rec = item(kRecords)) {
        const size_t f = r.below(4);
        if (f < 2) {
          wr<uint32_t>(b, rec + 4 * f, static_cast<uint32_t>(r.below(4)));
        } else {
          wr<uint64_t>(b, rec + 8 + 8 * (f - 2),
                       r.below(2) ? rd<uint64_t>(b, rec + 8 + 8 * (f - 2)) + 1 : interesting(r));
        }
      }
      break;
    }
  }
}

// ---- using a bundle (in a child process) -----------------------------------------------------

enum Outcome { kRefused = 10, kServed = 11, kLateBundleError = 12, kUnexpected = 13 };

// Loads and uses the bundle; returns an Outcome (the process exits with it).
int use(const std::vector<uint8_t>& bytes) {
  namespace tb = te::detail::bundle;
  // What `triton-embed-bundle list` and `merge` do with it (they read the container only).
  try {
    const tb::Bundle b = tb::Bundle::from_memory(bytes.data(), bytes.size(), "fuzzed");
    const std::string listing = tb::describe(b);
    const std::string merged = tb::serialize(tb::merge({&b, &b}));
    if (listing.empty() || merged.empty()) return kUnexpected;
  } catch (const te::BundleError&) {
  }
  try {
    te::load_bundle_from_memory(bytes.data(), bytes.size(), "fuzzed");
  } catch (const te::BundleError&) {
    return kRefused;
  }
  te::set_target(te::Target::parse("cuda:90"));
  int late = 0;
  auto attempt = [&](auto&& f) {
    try {
      f();
    } catch (const te::BundleError& e) {
      std::fprintf(stderr, "BundleError after the bundle was accepted: %s\n", e.what());
      late = 1;
    } catch (const te::Error&) {
      // NotInBundleError, TypeError, ...: a typed refusal of this call.
    }
  };
  attempt([&] {
    const te::JitFunction add("pykernels.vector", "add_kernel");
    for (const char* which : te_bundle::kRecorded) {
      attempt([&] {
        te_bundle::compile_call(add, which);
        uint64_t slots[64];
        te::detail::testing::dry_run(add, slots, te_bundle::kX, te_bundle::kY, te_bundle::kOut,
                                     4096, 1024);
      });
    }
  });
  attempt([&] {
    const te::JitFunction axpy("pykernels.vector", "axpy_kernel");
    te_bundle::compile_axpy(axpy);
  });
  for (const te_bundle::WrappedCall& w : te_bundle::kWrapped) {
    attempt([&] {
      const te::JitFunction k("te_tune_kernels", w.kernel);
      te_bundle::compile_wrapped(k, w.which);
    });
  }
  attempt([&] {
    char dir[] = "/tmp/te_fuzz_XXXXXX";
    if (mkdtemp(dir) == nullptr) return;
    const std::string out = std::string(dir) + "/back.teb";
    te::write_bundle(out);
    std::remove(out.c_str());
    rmdir(dir);
  });
  return late ? kLateBundleError : kServed;
}

// Runs use() in a child; "" when the outcome is allowed, else what went wrong.
std::string check(const std::vector<uint8_t>& bytes) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    // Silence the child's stderr unless asked: refusals print nothing, crashes are reported
    // by the sanitizer (which writes to stderr before the exit code says so).
    _exit(use(bytes));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  const int code = WEXITSTATUS(status);
  if (code == kRefused || code == kServed) return "";
  if (code == kLateBundleError) return "a BundleError after the bundle was accepted";
  return "exit status " + std::to_string(code) + " (a sanitizer report or an uncaught exception)";
}

std::vector<uint8_t> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// `b` with a byte of each cubin and ptx flipped and their entries' CRC-32s left as they were
// (the other CRCs recomputed): a version 2 file loads, and its first launch must raise the one
// late BundleError (a version 1 file is refused at load). Blobs are stored once: each is
// damaged once.
std::vector<uint8_t> damage_blobs(std::vector<uint8_t> b) {
  const Layout l = layout(b);
  if (!l.ok) return b;
  std::set<uint64_t> done;
  for (uint64_t e = 0; e < l.count[kEntries]; ++e) {
    for (size_t ref : {104, 120}) {
      const size_t at = l.offset[kEntries] + e * l.item[kEntries] + ref;
      const uint64_t off = rd<uint64_t>(b, at), size = rd<uint64_t>(b, at + 8);
      if (size == 0 || off > l.extent[kBlobs] || size > l.extent[kBlobs] - off ||
          !done.insert(off).second) {
        continue;
      }
      b[l.offset[kBlobs] + off + size / 2] ^= 0x20;
    }
  }
  fix_crcs(b, /*blobs=*/false);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "replay" && argc > 2) {
    int failed = 0;
    for (int i = 2; i < argc; ++i) {
      const std::string why = check(read(argv[i]));
      std::printf("%s: %s\n", argv[i], why.empty() ? "ok" : why.c_str());
      failed += !why.empty();
    }
    std::printf("%d passed, %d failed\n", argc - 2 - failed, failed);
    return failed ? 1 : 0;
  }
  if (mode != "fuzz" || argc < 5) {
    std::fprintf(stderr, "usage: %s fuzz SECONDS OUT_DIR SEED.teb... | replay FILE...\n", argv[0]);
    return 2;
  }
  const double seconds = std::atof(argv[2]);
  const std::string out_dir = argv[3];
  std::vector<std::vector<uint8_t>> seeds;
  for (int i = 4; i < argc; ++i) {
    seeds.push_back(read(argv[i]));
    if (seeds.back().empty() || !check(seeds.back()).empty()) {
      std::fprintf(stderr, "seed %s: unreadable or failing as it is\n", argv[i]);
      return 2;
    }
    // What tells a bug here is a BundleError after the load: damaged blobs give one (format
    // version 2, checked at first use), so every other CRC must be the writer's.
    if (rd<uint32_t>(seeds.back(), 8) >= 2) {
      const std::string damaged = check(damage_blobs(seeds.back()));
      if (damaged != "a BundleError after the bundle was accepted") {
        std::fprintf(stderr,
                     "seed %s with damaged blobs: %s; expected a BundleError at first use\n",
                     argv[i], damaged.empty() ? "no error" : damaged.c_str());
        return 2;
      }
    }
  }
  const char* seed_env = std::getenv("TE_FUZZ_SEED");
  Rng rng{seed_env != nullptr
              ? std::strtoull(seed_env, nullptr, 10)
              : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  std::printf("seed %llu\n", static_cast<unsigned long long>(rng.s));
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  long runs = 0, refused = 0, failures = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::vector<uint8_t> b = seeds[rng.below(seeds.size())];
    for (int n = 1 + static_cast<int>(rng.below(3)); n > 0; --n) mutate(b, rng);
    fix_crcs(b);
    const std::string why = check(b);
    ++runs;
    if (!why.empty()) {
      ++failures;
      char name[64];
      std::snprintf(name, sizeof(name), "/crash-%08x.teb", crc32(b.data(), b.size()));
      std::ofstream(out_dir + name, std::ios::binary)
          .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
      std::printf("FAILED (%s): saved %s%s\n", why.c_str(), out_dir.c_str(), name);
    }
    (void)refused;
  }
  std::printf("%ld inputs, %ld passed, %ld failed\n", runs, runs - failures, failures);
  return failures ? 1 : 0;
}
