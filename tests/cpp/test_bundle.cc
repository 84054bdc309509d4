// Kernel bundles (src/bundle/format.h): round trips of every field, zero-copy cubins, and
// every way a file can be refused (each prefix, each flipped bit, foreign, too new, missing),
// cubins and PTX checked at first use (format version 2) or at open (version 1), merging,
// listing and atomic writes. No Python: the interpreter is never started.
//
// `test_bundle --write-samples DIR` writes the bundles the triton-embed-bundle CTest uses.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "bundle/codec.h"
#include "bundle/enum_codes.h"
#include "bundle/format.h"
#include "core/cache_key.h"
#include "core/layers.h"
#include "core/memo_keys.h"
#include "core/specialize.h"
#include "triton_embed/error.h"

namespace te = triton_embed;
namespace tb = triton_embed::detail::bundle;
namespace fs = std::filesystem;
using Reason = te::BundleError::Reason;

namespace {

constexpr uint32_t kSm90 = 90 | 32u << 16;
constexpr uint32_t kSm100 = 100 | 32u << 16;
constexpr uint32_t kSm90Wave64 = 90 | 64u << 16;
constexpr size_t kTableEnd = 128 + 7 * 40;  // header + section table
constexpr const char* kSectionNames[] = {"strings", "words",   "tma",  "kernels",
                                         "entries", "records", "blobs"};

std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 5)) & 0xFF);
  return s;
}

uint32_t rd32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s[at + i]);
  return v;
}
uint64_t rd64(const std::string& s, size_t at) {
  return rd32(s, at) | static_cast<uint64_t>(rd32(s, at + 4)) << 32;
}
void wr32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>(v >> (8 * i));
}
void wr64(std::string& s, size_t at, uint64_t v) {
  wr32(s, at, static_cast<uint32_t>(v));
  wr32(s, at + 4, static_cast<uint32_t>(v >> 32));
}

// Section i's (offset, extent) from the table, as docs/bundle_format.md lays it out.
std::pair<uint64_t, uint64_t> section(const std::string& f, int i) {
  return {rd64(f, 128 + 40 * i + 8), rd64(f, 128 + 40 * i + 16)};
}

// Recomputes every CRC after a test edits the bytes, so that the structural checks are reached.
// (Not an entry's CRC-32s of its cubin and PTX: a test that edits blobs sets them.)
void reseal(std::string& f) {
  for (int i = 0; i < 7; ++i) {
    const auto [off, ext] = section(f, i);
    wr32(f, 128 + 40 * i + 32, tb::crc32(f.data() + off, ext));
  }
  wr32(f, 36, tb::crc32(f.data() + 128, kTableEnd - 128));
  wr32(f, 124, tb::crc32(f.data(), 124));
}

// The format version 1 file that holds what version 2 file `f` holds, as docs/bundle_format.md
// lays it out (what a version 1 writer wrote): entries of 216 bytes, without the CRC-32s of
// their cubin and PTX; the sections laid out again (8-aligned, the blobs 256-aligned).
std::string to_v1(const std::string& f) {
  std::string out = f.substr(0, kTableEnd);
  for (int i = 0; i < 7; ++i) {
    const uint64_t off = section(f, i).first;
    const uint64_t item = rd32(f, 128 + 40 * i + 4), count = rd64(f, 128 + 40 * i + 24);
    std::string content = f.substr(off, item * count);
    if (i == 4) {
      std::string entries;
      for (uint64_t e = 0; e < count; ++e) entries += content.substr(e * 224, 216);
      content = entries;
      wr32(out, 128 + 40 * i + 4, 216);
    }
    const uint64_t at = out.size();
    out += content;
    if (i < 6) {
      const size_t align = i == 5 ? 256 : 8;  // before the blobs: 256
      out.resize((out.size() + align - 1) / align * align, '\0');
    }
    wr64(out, 128 + 40 * i + 8, at);
    wr64(out, 128 + 40 * i + 16, out.size() - at);
  }
  wr32(out, 8, 1);
  wr64(out, 16, out.size());
  reseal(out);
  return out;
}

// Where `blob`, a view into b, lies in b's bytes.
size_t offset_of(const tb::Bundle& b, std::string_view blob) {
  return static_cast<size_t>(blob.data() - b.data());
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Two kernels, three entries (one with PTX and TMA records, one for a 64-wide warp, two
// sharing a cubin), two records; every field has a value of its own.
tb::Contents sample() {
  tb::Contents c;
  c.producer = {"0.1.0", "3.8.0", "test sample"};
  c.kernels.push_back(
      {"pykernels.vector", "add_kernel", "a1b2c3", "", std::string("\x01\x02params\0", 9), ""});
  c.kernels.push_back({"pykernels.matmul", "matmul_kernel", "d4e5f6", "autotune", "P1",
                       std::string("L1\0\xff", 4)});
  tb::Entry e0;
  e0.kernel = 0;
  e0.target = kSm90;
  e0.options = "num_warps=4;num_stages=3";
  e0.key_words = {1, 2, 0xFFFFFFFFFFFFFFFFull};
  e0.meta.hash = "9f2c81aa";
  e0.meta.name = "add_kernel";
  e0.meta.signature = "*fp32,*fp32,*fp32,i32";
  e0.meta.num_warps = 4;
  e0.meta.num_ctas = 1;
  e0.meta.num_stages = 3;
  e0.meta.shared = 1024;
  e0.meta.num_kernel_params = 6;
  e0.num_runtime_params = 4;
  e0.triton_version = 308;
  e0.cluster_dims[0] = 1;
  e0.cluster_dims[1] = 1;
  e0.cluster_dims[2] = 1;
  e0.meta.global_scratch_size = 0;
  e0.meta.global_scratch_align = 1;
  e0.meta.profile_scratch_size = 0;
  e0.meta.profile_scratch_align = 1;
  e0.meta.cubin = pattern(1000, 1);
  e0.meta.ptx = "//\n.version 8.7\n.target sm_90a\n";
  c.entries.push_back(e0);

  tb::Entry e1;
  e1.kernel = 1;
  e1.target = kSm100;
  e1.options = "num_warps=8;num_stages=4;num_ctas=2";
  e1.key_words = {7};
  e1.meta.hash = "77aa0e";
  e1.meta.name = "matmul_kernel";
  e1.meta.signature = "tensordesc<fp16[64, 64]>,i32,i32";
  e1.meta.num_warps = 8;
  e1.meta.num_ctas = 2;
  e1.meta.num_stages = 4;
  e1.meta.shared = 232448;
  e1.meta.num_kernel_params = 11;
  e1.num_runtime_params = 9;
  e1.triton_version = 307;
  e1.cluster_dims[0] = 2;
  e1.cluster_dims[1] = 3;
  e1.cluster_dims[2] = 5;
  e1.meta.global_scratch_size = 1ull << 33;
  e1.meta.global_scratch_align = 128;
  e1.meta.profile_scratch_size = 4096;
  e1.meta.profile_scratch_align = 64;
  e1.meta.launch_cooperative_grid = true;
  e1.meta.launch_pdl = true;
  e1.oversized_shared_mode = true;
  triton_embed::detail::TmaMeta t0;
  t0.present = true;
  t0.swizzle = 3;
  t0.elem_size = 2;
  t0.elem_type = 6;
  t0.rank = 2;
  t0.box[0] = 64;
  t0.box[1] = 32;
  triton_embed::detail::TmaMeta t1;
  t1.present = false;
  t1.swizzle = -1;
  t1.elem_size = 1;
  t1.elem_type = 9;
  t1.rank = 5;
  for (int d = 0; d < 5; ++d) t1.box[d] = 0xFFFFFFF0u + d;
  t1.fp4_padded = true;
  e1.tma = {t0, t1};
  e1.meta.cubin = pattern(3000, 2);
  c.entries.push_back(e1);

  tb::Entry e2 = e0;
  e2.kernel = 1;
  e2.target = kSm90Wave64;
  e2.options = "num_warps=2";
  e2.key_words = {};
  e2.meta.hash = "0c0c";
  e2.meta.ptx = "";
  e2.meta.num_warps = -3;   // any int round-trips
  c.entries.push_back(e2);  // shares e0's cubin

  c.records.push_back({1, 1, {7}, "BLOCK_M=128;BLOCK_N=64"});
  c.records.push_back({2, 0, {}, ""});
  return c;
}

// Small enough to refuse at every length and every flipped bit.
tb::Contents small() {
  tb::Contents c;
  c.producer = {"0.1.0", "3.8.0", ""};
  c.kernels.push_back({"m", "k", "h", "heuristics", "p", "l"});
  tb::Entry e;
  e.target = kSm90;
  e.options = "num_warps=1";
  e.key_words = {42};
  e.meta.hash = "ab";
  e.meta.name = "k";
  e.meta.cubin = pattern(40, 3);
  e.meta.ptx = "ptx";
  triton_embed::detail::TmaMeta t;
  t.present = true;
  t.rank = 1;
  e.tma = {t};
  e.meta.launch_pdl = true;
  c.entries.push_back(e);
  c.records.push_back({3, 0, {5, 6}, "x"});
  return c;
}

template <class A, class B>
void expect_entry(const A& want, const B& got, size_t i) {
  SCOPED_TRACE("entry #" + std::to_string(i));
  EXPECT_EQ(got.kernel, want.kernel);
  EXPECT_EQ(got.target, want.target);
  EXPECT_EQ(got.options, want.options);
  EXPECT_EQ(got.key_words, want.key_words);
  EXPECT_EQ(got.meta.hash, want.meta.hash);
  EXPECT_EQ(got.meta.name, want.meta.name);
  EXPECT_EQ(got.meta.signature, want.meta.signature);
  EXPECT_EQ(got.meta.num_warps, want.meta.num_warps);
  EXPECT_EQ(got.meta.num_ctas, want.meta.num_ctas);
  EXPECT_EQ(got.meta.num_stages, want.meta.num_stages);
  EXPECT_EQ(got.meta.shared, want.meta.shared);
  EXPECT_EQ(got.meta.num_kernel_params, want.meta.num_kernel_params);
  EXPECT_EQ(got.num_runtime_params, want.num_runtime_params);
  EXPECT_EQ(got.triton_version, want.triton_version);
  for (int d = 0; d < 3; ++d) EXPECT_EQ(got.cluster_dims[d], want.cluster_dims[d]) << d;
  EXPECT_EQ(got.meta.global_scratch_size, want.meta.global_scratch_size);
  EXPECT_EQ(got.meta.global_scratch_align, want.meta.global_scratch_align);
  EXPECT_EQ(got.meta.profile_scratch_size, want.meta.profile_scratch_size);
  EXPECT_EQ(got.meta.profile_scratch_align, want.meta.profile_scratch_align);
  EXPECT_EQ(got.meta.launch_cooperative_grid, want.meta.launch_cooperative_grid);
  EXPECT_EQ(got.meta.launch_pdl, want.meta.launch_pdl);
  EXPECT_EQ(got.oversized_shared_mode, want.oversized_shared_mode);
  ASSERT_EQ(got.tma.size(), want.tma.size());
  for (size_t j = 0; j < want.tma.size(); ++j) {
    const triton_embed::detail::TmaMeta &g = got.tma[j], &w = want.tma[j];
    EXPECT_EQ(g.present, w.present) << j;
    EXPECT_EQ(g.swizzle, w.swizzle) << j;
    EXPECT_EQ(g.elem_size, w.elem_size) << j;
    EXPECT_EQ(g.elem_type, w.elem_type) << j;
    EXPECT_EQ(g.rank, w.rank) << j;
    for (int d = 0; d < 5; ++d) EXPECT_EQ(g.box[d], w.box[d]) << j << " " << d;
    EXPECT_EQ(g.fp4_padded, w.fp4_padded) << j;
  }
  EXPECT_EQ(got.meta.cubin, want.meta.cubin);
  EXPECT_EQ(got.meta.ptx, want.meta.ptx);
}

template <class A, class B>
void expect_contents(const A& want, const B& got) {
  EXPECT_EQ(got.producer.library_version, want.producer.library_version);
  EXPECT_EQ(got.producer.triton_version, want.producer.triton_version);
  EXPECT_EQ(got.producer.note, want.producer.note);
  ASSERT_EQ(got.kernels.size(), want.kernels.size());
  for (size_t i = 0; i < want.kernels.size(); ++i) {
    SCOPED_TRACE("kernel #" + std::to_string(i));
    EXPECT_EQ(got.kernels[i].module, want.kernels[i].module);
    EXPECT_EQ(got.kernels[i].name, want.kernels[i].name);
    EXPECT_EQ(got.kernels[i].source_hash, want.kernels[i].source_hash);
    EXPECT_EQ(got.kernels[i].wrapper, want.kernels[i].wrapper);
    EXPECT_EQ(got.kernels[i].params, want.kernels[i].params);
    EXPECT_EQ(got.kernels[i].layers, want.kernels[i].layers);
  }
  ASSERT_EQ(got.entries.size(), want.entries.size());
  for (size_t i = 0; i < want.entries.size(); ++i) expect_entry(want.entries[i], got.entries[i], i);
  ASSERT_EQ(got.records.size(), want.records.size());
  for (size_t i = 0; i < want.records.size(); ++i) {
    SCOPED_TRACE("record #" + std::to_string(i));
    EXPECT_EQ(got.records[i].kind, want.records[i].kind);
    EXPECT_EQ(got.records[i].kernel, want.records[i].kernel);
    EXPECT_EQ(got.records[i].key_words, want.records[i].key_words);
    EXPECT_EQ(got.records[i].payload, want.records[i].payload);
  }
}

// The BundleError that opening `bytes` from memory throws (named "mem").
te::BundleError refusal(const std::string& bytes, size_t n) {
  try {
    tb::Bundle::from_memory(bytes.data(), n, "mem");
  } catch (const te::BundleError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted " << n << " bytes";
  return te::BundleError("", Reason::kIo);
}
te::BundleError refusal(const std::string& bytes) { return refusal(bytes, bytes.size()); }

const char* reason_name(Reason r) {
  static constexpr const char* kNames[] = {"kIo",      "kTruncated", "kCorrupt",
                                           "kForeign", "kTooNew",    "kConflict"};
  return kNames[static_cast<int>(r)];
}

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::path(::testing::TempDir()) / "te_bundle_XXXXXX").string();
    if (::mkdtemp(&t[0]) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(path_)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string open_error(const std::string& path) {
  try {
    tb::Bundle::open(path);
  } catch (const te::BundleError& e) {
    return std::string(reason_name(e.reason())) + ": " + e.what();
  }
  return "opened";
}

// ---------------------------------------------------------------------------------------

TEST(Bundle, ErrorTypes) {
  static_assert(std::is_base_of_v<te::Error, te::BundleError>);
  static_assert(std::is_base_of_v<te::LookupError, te::NotInBundleError>);
  const te::BundleError e("x", Reason::kTooNew);
  EXPECT_EQ(e.reason(), Reason::kTooNew);
  EXPECT_STREQ(e.what(), "x");
}

TEST(Bundle, Crc32IsZlibs) {
  EXPECT_EQ(tb::crc32("", 0), 0u);
  EXPECT_EQ(tb::crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(tb::crc32("The quick brown fox jumps over the lazy dog", 43), 0x414FA339u);
  // Eight bytes at a time agrees with one bit at a time, for every length and alignment.
  const std::string data = pattern(300, 9);
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; start + n <= data.size(); n += 7) {
      uint32_t c = ~0u;
      for (size_t i = start; i < start + n; ++i) {
        c ^= static_cast<unsigned char>(data[i]);
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
      }
      ASSERT_EQ(tb::crc32(data.data() + start, n), ~c) << start << " " << n;
    }
  }
}

TEST(Bundle, RoundTripsEveryField) {
  TempDir dir;
  const tb::Contents want = sample();
  tb::write_file(want, dir / "s.teb");
  const tb::Bundle b = tb::Bundle::open(dir / "s.teb");
  EXPECT_EQ(b.name(), dir / "s.teb");
  EXPECT_EQ(b.format_version(), 2u);
  EXPECT_EQ(b.size(), fs::file_size(dir / "s.teb"));
  expect_contents(want, b.view());
  expect_contents(want, b.contents());
  // Each entry's CRC-32s of its cubin and PTX (of no bytes: 0).
  for (const tb::EntryView& e : b.entries()) {
    EXPECT_EQ(e.cubin_crc, tb::crc32(e.meta.cubin.data(), e.meta.cubin.size()));
    EXPECT_EQ(e.ptx_crc, tb::crc32(e.meta.ptx.data(), e.meta.ptx.size()));
  }
  EXPECT_EQ(b.entries()[1].ptx_crc, 0u);
  // Byte-exact: what is read back serialises to the same file.
  EXPECT_EQ(tb::serialize(b.contents()), std::string(b.data(), b.size()));
  EXPECT_EQ(tb::serialize(want), tb::serialize(want));
}

TEST(Bundle, CubinsAreViewsIntoTheMappingAlignedTo256) {
  TempDir dir;
  tb::write_file(sample(), dir / "s.teb");
  const tb::Bundle b = tb::Bundle::open(dir / "s.teb");
  const char* lo = b.data();
  const char* hi = b.data() + b.size();
  int blobs = 0;
  for (const tb::EntryView& e : b.entries()) {
    for (std::string_view blob : {e.meta.cubin, e.meta.ptx}) {
      if (blob.empty()) continue;
      ++blobs;
      EXPECT_GE(blob.data(), lo);
      EXPECT_LE(blob.data() + blob.size(), hi);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(blob.data()) % 256, 0u);
    }
  }
  EXPECT_EQ(blobs, 4);
  // Entries 0 and 2 have one cubin: stored once.
  EXPECT_EQ(b.entries()[0].meta.cubin.data(), b.entries()[2].meta.cubin.data());
  // Strings are views too.
  EXPECT_GE(b.kernels()[0].module.data(), lo);
  EXPECT_LT(b.kernels()[0].module.data(), hi);
}

TEST(Bundle, MovingKeepsTheViews) {
  const std::string bytes = tb::serialize(sample());
  tb::Bundle a = tb::Bundle::from_memory(bytes.data(), bytes.size(), "embedded:sample");
  EXPECT_EQ(a.data(), bytes.data());  // not copied
  const std::string_view cubin = a.entries()[1].meta.cubin;
  tb::Bundle b = std::move(a);
  EXPECT_EQ(b.entries()[1].meta.cubin.data(), cubin.data());
  EXPECT_EQ(b.name(), "embedded:sample");
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_TRUE(a.entries().empty());
  TempDir dir;
  tb::write_file(small(), dir / "m.teb");
  b = tb::Bundle::open(dir / "m.teb");  // the old one's views go, the mapping stays owned
  EXPECT_EQ(b.entries().size(), 1u);
  EXPECT_EQ(b.entries()[0].meta.cubin, pattern(40, 3));
}

TEST(Bundle, EmptyBundle) {
  const std::string bytes = tb::serialize(tb::Contents{});
  // Header and table (408 bytes), empty sections, padded so the (empty) blobs start at 512.
  EXPECT_EQ(bytes.size(), 512u);
  const tb::Bundle b = tb::Bundle::from_memory(bytes.data(), bytes.size(), "empty");
  EXPECT_TRUE(b.kernels().empty());
  EXPECT_TRUE(b.entries().empty());
  EXPECT_TRUE(b.records().empty());
  EXPECT_EQ(b.producer().library_version, "");
  EXPECT_EQ(tb::describe(b),
            "bundle empty: format version 2, 512 bytes\n"
            "  written by triton_embed ? (Triton ?)\n"
            "  0 kernels, 0 entries, 0 records\n");
}

TEST(Bundle, LayoutIsTheDocumentedOne) {
  const std::string f = tb::serialize(small());
  EXPECT_EQ(f.substr(0, 8), std::string("\x89TEB\r\n\x1a\n", 8));
  EXPECT_EQ(rd32(f, 8), 2u);
  EXPECT_EQ(rd32(f, 12), 0x01020304u);
  EXPECT_EQ(rd64(f, 16), f.size());
  EXPECT_EQ(rd32(f, 24), 128u);
  EXPECT_EQ(rd32(f, 28), 7u);
  EXPECT_EQ(rd32(f, 32), 40u);
  uint64_t at = kTableEnd;
  const uint32_t item[] = {1, 8, 48, 96, 224, 40, 1};
  const uint64_t count[] = {0, 3, 1, 1, 1, 1, 0};  // strings and blobs checked below
  for (int i = 0; i < 7; ++i) {
    SCOPED_TRACE(kSectionNames[i]);
    EXPECT_EQ(rd32(f, 128 + 40 * i), static_cast<uint32_t>(i + 1));
    EXPECT_EQ(rd32(f, 128 + 40 * i + 4), item[i]);
    const auto [off, ext] = section(f, i);
    EXPECT_EQ(off, at);
    EXPECT_EQ(off % (i == 6 ? 256 : 8), 0u);
    if (i != 0 && i != 6) {
      EXPECT_EQ(rd64(f, 128 + 40 * i + 24), count[i]);
    }
    at = off + ext;
  }
  EXPECT_EQ(at, f.size());
  // The blobs: cubin (40 bytes) at 0, ptx at 256.
  EXPECT_EQ(rd64(f, 128 + 40 * 6 + 24), 256u + 3);
  // The entry's refs to them, and their CRC-32s at 216 and 220.
  const uint64_t entry = section(f, 4).first, blobs = section(f, 6).first;
  EXPECT_EQ(rd64(f, entry + 104), 0u);
  EXPECT_EQ(rd64(f, entry + 112), 40u);
  EXPECT_EQ(rd64(f, entry + 120), 256u);
  EXPECT_EQ(rd64(f, entry + 128), 3u);
  EXPECT_EQ(rd32(f, entry + 216), tb::crc32(f.data() + blobs, 40));
  EXPECT_EQ(rd32(f, entry + 220), tb::crc32(f.data() + blobs + 256, 3));
  EXPECT_EQ(rd32(f, entry + 220), tb::crc32("ptx", 3));
  // Every CRC is over what docs/bundle_format.md says; resealing changes nothing.
  std::string copy = f;
  reseal(copy);
  EXPECT_EQ(copy, f);
}

TEST(Bundle, TruncatedAtEveryLength) {
  const std::string f = tb::serialize(small());
  ASSERT_GT(f.size(), 512u);
  for (size_t n = 0; n < f.size(); ++n) {
    const te::BundleError e = refusal(f, n);
    ASSERT_EQ(e.reason(), Reason::kTruncated) << n << ": " << e.what();
  }
  EXPECT_STREQ(refusal(f, 0).what(),
               "bundle mem: truncated: the file is empty; the file was cut short (copy it again)");
  EXPECT_STREQ(refusal(f, 5).what(),
               "bundle mem: truncated: the file has 5 bytes, less than the 128-byte header; the "
               "file was cut short (copy it again)");
  EXPECT_EQ(std::string(refusal(f, 200).what()),
            "bundle mem: truncated: the header says " + std::to_string(f.size()) +
                " bytes, the file has 200; the file was cut short (copy it again)");
}

// Flips each bit of `f` outside the blobs section (everywhere too, with `blobs`): each is
// refused at open, with the reason and the message that where it lies gives.
void expect_each_flipped_bit_refused_at_open(const std::string& f, bool blobs) {
  const uint64_t blobs_at = section(f, 6).first;  // the last section
  for (size_t at = 0; at < (blobs ? f.size() : blobs_at); ++at) {
    // Where the byte lies decides the reason and what the message names.
    Reason want = Reason::kCorrupt;
    std::string names;
    if (at < 8) {
      want = Reason::kForeign;
      names = "not a triton_embed bundle";
    } else if (at < 12) {
      names = "format version";
    } else if (at < 16) {
      names = "byte-order mark";
    } else if (at < 128) {
      names = "the header's CRC-32";
    } else if (at < kTableEnd) {
      names = "the section table's CRC-32";
    } else {
      for (int i = 0; i < 7; ++i) {
        const auto [off, ext] = section(f, i);
        if (at >= off && at < off + ext) {
          names = std::string("section '") + kSectionNames[i] + "' (bytes " + std::to_string(off) +
                  ".." + std::to_string(off + ext) + "): its CRC-32 is";
        }
      }
    }
    ASSERT_FALSE(names.empty()) << "byte " << at << " lies in no section";
    for (int bit = 0; bit < 8; ++bit) {
      std::string g = f;
      g[at] = static_cast<char>(g[at] ^ (1 << bit));
      Reason w = want;
      if (at >= 8 && at < 12) w = rd32(g, 8) == 0 ? Reason::kCorrupt : Reason::kTooNew;
      const te::BundleError e = refusal(g);
      ASSERT_EQ(e.reason(), w) << "byte " << at << " bit " << bit << ": " << e.what();
      ASSERT_NE(std::string(e.what()).find(names), std::string::npos)
          << "byte " << at << " bit " << bit << ": " << e.what();
    }
  }
}

TEST(Bundle, AFlippedBitAnywhereIsRefused) {
  // Version 2: every byte but the blobs at open (the blobs: below); version 1: every byte.
  expect_each_flipped_bit_refused_at_open(tb::serialize(small()), false);
  expect_each_flipped_bit_refused_at_open(to_v1(tb::serialize(small())), true);
}

// What `f` throws, as a BundleError's reason and message, or "passed".
std::string thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const te::BundleError& e) {
    return std::string(reason_name(e.reason())) + ": " + e.what();
  }
  return "passed";
}

// In a version 2 file a flipped bit in the blobs section opens; the cubin or PTX it damages is
// refused when it is checked (its first use), naming the entry, and so are contents(), merge()
// and describe(), which read every blob; a bit in the padding between blobs only by the
// section's CRC, which check_blobs() (and so contents(), merge() and describe()) checks.
TEST(Bundle, AFlippedBitInABlobIsRefusedAtItsFirstUse) {
  const std::string f = tb::serialize(small());
  const tb::Bundle good = tb::Bundle::from_memory(f.data(), f.size(), "mem");
  const std::string_view cubin = good.entries()[0].meta.cubin, ptx = good.entries()[0].meta.ptx;
  const size_t cubin_at = offset_of(good, cubin), ptx_at = offset_of(good, ptx);
  const auto [off, ext] = section(f, 6);
  ASSERT_EQ(off + ext, f.size());
  const std::string damaged = "; the file is damaged (copy it again, or rebuild it)";
  for (size_t at = off; at < f.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      SCOPED_TRACE("byte " + std::to_string(at) + " bit " + std::to_string(bit));
      std::string g = f;
      g[at] = static_cast<char>(g[at] ^ (1 << bit));
      const tb::Bundle b = tb::Bundle::from_memory(g.data(), g.size(), "mem");  // opens
      const bool in_cubin = at >= cubin_at && at < cubin_at + cubin.size();
      const bool in_ptx = at >= ptx_at && at < ptx_at + ptx.size();
      std::string want;
      if (in_cubin || in_ptx) {
        const std::string_view was = in_cubin ? cubin : ptx;
        const std::string_view is(g.data() + offset_of(good, was), was.size());
        want = std::string("kCorrupt: bundle mem: corrupt: entry #0 (kernel m.k): its ") +
               (in_cubin ? "cubin's" : "PTX's") + " CRC-32 is " +
               hex32(tb::crc32(was.data(), was.size())) + ", its bytes give " +
               hex32(tb::crc32(is.data(), is.size())) + damaged;
      } else {
        want = "kCorrupt: bundle mem: corrupt: section 'blobs' (bytes " + std::to_string(off) +
               ".." + std::to_string(off + ext) + "): its CRC-32 is " +
               hex32(rd32(f, 128 + 40 * 6 + 32)) + ", its bytes give " +
               hex32(tb::crc32(g.data() + off, ext)) + damaged;
      }
      ASSERT_EQ(thrown([&] { b.check_cubin(0); }), in_cubin ? want : "passed");
      ASSERT_EQ(thrown([&] { b.check_ptx(0); }), in_ptx ? want : "passed");
      ASSERT_EQ(thrown([&] { b.check_blobs(); }), want);
      ASSERT_EQ(thrown([&] { b.contents(); }), want);
      ASSERT_EQ(thrown([&] { tb::merge({&good, &b}); }), want);
      ASSERT_EQ(thrown([&] { tb::describe(b); }), want);
    }
  }
  // The bundle as written passes every check.
  EXPECT_EQ(thrown([&] { good.check_blobs(); }), "passed");
}

// Blobs are stored once: a damaged cubin that two entries share is refused for each of them.
TEST(Bundle, ADamagedSharedCubinIsRefusedForEachEntry) {
  const std::string f = tb::serialize(sample());
  const tb::Bundle good = tb::Bundle::from_memory(f.data(), f.size(), "s.teb");
  const std::string_view cubin = good.entries()[0].meta.cubin;
  ASSERT_EQ(cubin.data(), good.entries()[2].meta.cubin.data());
  std::string g = f;
  g[offset_of(good, cubin) + 500] ^= 0x04;
  const tb::Bundle b = tb::Bundle::from_memory(g.data(), g.size(), "s.teb");
  const std::string crcs = " CRC-32 is " + hex32(tb::crc32(cubin.data(), cubin.size())) +
                           ", its bytes give " +
                           hex32(tb::crc32(g.data() + offset_of(good, cubin), cubin.size())) +
                           "; the file is damaged (copy it again, or rebuild it)";
  const std::string entry0 =
      "kCorrupt: bundle s.teb: corrupt: entry #0 (kernel pykernels.vector.add_kernel): its "
      "cubin's" +
      crcs;
  EXPECT_EQ(thrown([&] { b.check_cubin(0); }), entry0);
  EXPECT_EQ(thrown([&] { b.check_cubin(2); }),
            "kCorrupt: bundle s.teb: corrupt: entry #2 (kernel pykernels.matmul.matmul_kernel): "
            "its cubin's" +
                crcs);
  // Refused again at each use: a blob that failed is not remembered as checked.
  EXPECT_EQ(thrown([&] { b.check_cubin(0); }), entry0);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(thrown([&] { b.check_ptx(i); }), "passed") << i;
  EXPECT_EQ(thrown([&] { b.check_cubin(1); }), "passed");
  EXPECT_EQ(thrown([&] { b.contents(); }), entry0);
}

// A blob that passed is not checked again by the same Bundle (nor by the one it moves to);
// another Bundle of the same bytes checks it.
TEST(Bundle, EachBlobIsCheckedOncePerBundle) {
  std::string f = tb::serialize(sample());
  tb::Bundle b = tb::Bundle::from_memory(f.data(), f.size(), "s.teb");  // not copied
  b.check_cubin(1);
  f[offset_of(b, b.entries()[1].meta.cubin) + 7] ^= 0x01;  // changes under the Bundle
  EXPECT_EQ(thrown([&] { b.check_cubin(1); }), "passed");
  const tb::Bundle moved = std::move(b);
  EXPECT_EQ(thrown([&] { moved.check_cubin(1); }), "passed");
  const tb::Bundle again = tb::Bundle::from_memory(f.data(), f.size(), "s.teb");
  EXPECT_NE(thrown([&] { again.check_cubin(1); }).find("entry #1"), std::string::npos);
}

// Checks run from many threads at once on one Bundle (TSan builds check the memo).
TEST(Bundle, BlobChecksAreThreadSafe) {
  const std::string f = tb::serialize(sample());
  std::string g = f;
  g[g.size() - 1] ^= 0x01;  // the last blob: entry #1's cubin
  const tb::Bundle good = tb::Bundle::from_memory(f.data(), f.size(), "s.teb");
  const tb::Bundle bad = tb::Bundle::from_memory(g.data(), g.size(), "s.teb");
  std::vector<std::thread> threads;
  std::vector<int> refused(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < 50; ++n) {
        for (size_t i = 0; i < 3; ++i) {
          good.check_cubin(i);
          good.check_ptx(i);
          try {
            bad.check_cubin(i);
          } catch (const te::BundleError&) {
            ++refused[t];
          }
        }
        good.check_blobs();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(refused, std::vector<int>(8, 50));
}

// Version 1 files (216-byte entries, no CRC per blob) are still read: their blobs are checked
// at open, as the blobs section's CRC, and the checks at first use do nothing.
TEST(Bundle, Version1FilesAreRead) {
  // to_v1 lays out what the version 1 writer wrote: these are its bytes for small().
  const std::string small_v1 = to_v1(tb::serialize(small()));
  EXPECT_EQ(small_v1.size(), 1283u);
  EXPECT_EQ(tb::crc32(small_v1.data(), small_v1.size()), 0x760aa80bu);

  const std::string v2 = tb::serialize(sample());
  const std::string v1 = to_v1(v2);
  const tb::Bundle b = tb::Bundle::from_memory(v1.data(), v1.size(), "old.teb");
  EXPECT_EQ(b.format_version(), 1u);
  EXPECT_EQ(rd32(v1, 128 + 40 * 4 + 4), 216u);
  expect_contents(sample(), b.view());
  for (const tb::EntryView& e : b.entries()) {
    EXPECT_EQ(e.cubin_crc, 0u);
    EXPECT_EQ(e.ptx_crc, 0u);
  }
  // Written again, it is the version 2 file of the same contents.
  EXPECT_EQ(tb::serialize(b.contents()), v2);
  EXPECT_EQ(tb::describe(b).rfind(
                "bundle old.teb: format version 1, " + std::to_string(v1.size()) + " bytes\n", 0),
            0u);
  // A damaged cubin is refused at open.
  std::string g = v1;
  const auto [off, ext] = section(v1, 6);
  g[offset_of(b, b.entries()[1].meta.cubin)] ^= 0x80;
  const te::BundleError e = refusal(g);
  EXPECT_EQ(e.reason(), Reason::kCorrupt);
  EXPECT_EQ(std::string(e.what()), "bundle mem: corrupt: section 'blobs' (bytes " +
                                       std::to_string(off) + ".." + std::to_string(off + ext) +
                                       "): its CRC-32 is " + hex32(rd32(v1, 128 + 40 * 6 + 32)) +
                                       ", its bytes give " + hex32(tb::crc32(g.data() + off, ext)) +
                                       "; the file is damaged (copy it again, or rebuild it)");
  // Checks at first use are no-ops: the bytes were checked at open.
  for (size_t i = 0; i < 3; ++i) {
    b.check_cubin(i);
    b.check_ptx(i);
  }
  b.check_blobs();
}

TEST(Bundle, ForeignFiles) {
  TempDir dir;
  // An ELF file: this test program (its first bytes: "\x7f" "ELF", then class, byte order,
  // version and OS ABI, which vary).
  char head[8];
  std::ifstream("/proc/self/exe", std::ios::binary).read(head, 8);
  std::string hex = "7f 45 4c 46";
  for (int i = 4; i < 8; ++i) {
    char b[4];
    std::snprintf(b, sizeof b, " %02x", static_cast<unsigned char>(head[i]));
    hex += b;
  }
  EXPECT_EQ(open_error("/proc/self/exe"),
            "kForeign: bundle /proc/self/exe: foreign: not a triton_embed bundle: it starts with " +
                hex +
                " (an ELF file: for a bundle embedded in a program, use Bundle::from_memory), a "
                "bundle with 89 54 45 42 0d 0a 1a 0a; give a .teb file written by triton_embed");
  write_bytes(dir / "notes.txt", "hello, world\n");
  EXPECT_EQ(open_error(dir / "notes.txt"),
            "kForeign: bundle " + (dir / "notes.txt") +
                ": foreign: not a triton_embed bundle: it starts with 68 65 6c 6c 6f 2c 20 77, a "
                "bundle with 89 54 45 42 0d 0a 1a 0a; give a .teb file written by triton_embed");
  write_bytes(dir / "hi.txt", "hi");
  EXPECT_EQ(open_error(dir / "hi.txt"),
            "kForeign: bundle " + (dir / "hi.txt") +
                ": foreign: not a triton_embed bundle: it starts with 68 69, a bundle with 89 54 "
                "45 42 0d 0a 1a 0a; give a .teb file written by triton_embed");
  // Copied in text mode: CR LF became LF.
  std::string f = tb::serialize(small());
  f.erase(4, 1);
  EXPECT_EQ(refusal(f).reason(), Reason::kForeign);
  EXPECT_NE(std::string(refusal(f).what())
                .find("(its line-ending bytes differ: copied in text "
                      "mode?)"),
            std::string::npos);
}

TEST(Bundle, BigEndianIsForeign) {
  std::string f = tb::serialize(small());
  wr32(f, 12, 0x04030201u);
  const te::BundleError e = refusal(f);
  EXPECT_EQ(e.reason(), Reason::kForeign);
  EXPECT_STREQ(e.what(),
               "bundle mem: foreign: its byte-order mark says big-endian; this library reads "
               "little-endian bundles only: write the bundle with triton_embed on a little-endian "
               "machine");
}

TEST(Bundle, NewerVersionIsTooNew) {
  std::string f = tb::serialize(small());
  wr32(f, 8, tb::kFormatVersion + 1);
  reseal(f);
  const te::BundleError e = refusal(f);
  EXPECT_EQ(e.reason(), Reason::kTooNew);
  EXPECT_STREQ(e.what(),
               "bundle mem: too new: format version 3, this library reads versions up to 2: "
               "upgrade triton_embed");
}

TEST(Bundle, IoErrors) {
  TempDir dir;
  EXPECT_EQ(open_error(dir / "missing.teb"),
            "kIo: bundle " + (dir / "missing.teb") +
                ": cannot read: cannot open it: No such file or directory; check the path and "
                "its permissions");
  EXPECT_EQ(open_error(dir.path().string()),
            "kIo: bundle " + dir.path().string() +
                ": cannot read: it is a directory; give the path of a .teb file");
  write_bytes(dir / "empty.teb", "");
  EXPECT_EQ(open_error(dir / "empty.teb"),
            "kTruncated: bundle " + (dir / "empty.teb") +
                ": truncated: the file is empty; the file was cut short (copy it again)");
}

TEST(Bundle, TruncatedFileMessage) {
  TempDir dir;
  const std::string f = tb::serialize(sample());
  write_bytes(dir / "y.teb", f.substr(0, 4096));
  EXPECT_EQ(open_error(dir / "y.teb"),
            "kTruncated: bundle " + (dir / "y.teb") + ": truncated: the header says " +
                std::to_string(f.size()) +
                " bytes, the file has 4096; the file was cut short (copy it again)");
}

TEST(Bundle, DataAfterTheEndIsCorrupt) {
  const std::string f = tb::serialize(small()) + "x";
  EXPECT_EQ(std::string(refusal(f).what()),
            "bundle mem: corrupt: the header says " + std::to_string(f.size() - 1) +
                " bytes, the file has " + std::to_string(f.size()) +
                " (data after its end); the file is damaged (copy it again, or rebuild it)");
}

// Damage that keeps every CRC right (a faulty writer) is caught by the structural checks.
TEST(Bundle, StructuralChecks) {
  const std::string f = tb::serialize(small());
  const uint64_t entries = section(f, 4).first, records = section(f, 5).first;
  const uint64_t kernels = section(f, 3).first, tma = section(f, 2).first;
  auto refused = [&](const std::function<void(std::string&)>& edit) {
    std::string g = f;
    edit(g);
    reseal(g);
    const te::BundleError e = refusal(g);
    EXPECT_EQ(e.reason(), Reason::kCorrupt) << e.what();
    return std::string(e.what());
  };
  const std::string damaged = "; the file is damaged (copy it again, or rebuild it)";
  EXPECT_EQ(refused([&](std::string& g) { wr32(g, entries, 1); }),
            "bundle mem: corrupt: entry #0 kernel is #1, the bundle has 1 kernel" + damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr32(g, records + 4, 7); }),
            "bundle mem: corrupt: record #0 kernel is #7, the bundle has 1 kernel" + damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr64(g, kernels + 8, 1000); }),
            "bundle mem: corrupt: kernel #0 module: bytes 0+1000 lie outside the strings (" +
                std::to_string(rd64(f, 128 + 24)) + " bytes)" + damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr64(g, kernels + 16, ~0ull); }),
            "bundle mem: corrupt: kernel #0 name: bytes 18446744073709551615+1 lie outside the "
            "strings (" +
                std::to_string(rd64(f, 128 + 24)) + " bytes)" + damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr64(g, entries + 120, 8); }),
            "bundle mem: corrupt: entry #0 ptx: starts at blob offset 8, not a multiple of 256" +
                damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr64(g, entries + 112, 100000); }),
            "bundle mem: corrupt: entry #0 cubin: bytes 0+100000 lie outside the blobs (259 "
            "bytes)" +
                damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr64(g, entries + 80, 4); }),
            "bundle mem: corrupt: entry #0 key: words 0+4 lie outside the 3 key words" + damaged);
  EXPECT_EQ(refused([&](std::string& g) { g[entries + 209] = 2; }),
            "bundle mem: corrupt: entry #0 launch_pdl is 2, not 0 or 1" + damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr32(g, tma + 16, 6); }),
            "bundle mem: corrupt: entry #0 TMA record #0: present 1, fp4_padded 0, rank 6 "
            "(expected 0/1, 0/1, 0..5)" +
                damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr64(g, entries + 96, 2); }),
            "bundle mem: corrupt: entry #0 TMA records 0+2 lie outside the 1 records" + damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr32(g, 28, 8); }),
            "bundle mem: corrupt: header size 128, 8 sections of 40 bytes, flags 0x00000000; "
            "format version 2 has 128, 7 sections of 40 bytes, flags 0" +
                damaged);
  EXPECT_EQ(refused([&](std::string& g) { wr64(g, 128 + 40 + 8, kTableEnd + 8); }),
            "bundle mem: corrupt: section 'words' at bytes " + std::to_string(kTableEnd + 8) + "+" +
                std::to_string(section(f, 1).second) + ": expected to start at byte " +
                std::to_string(section(f, 1).first) + ", 8-byte aligned, within the file's " +
                std::to_string(f.size()) + " bytes" + damaged);
  EXPECT_EQ(
      refused([&](std::string& g) { wr64(g, 128 + 40 * 3 + 24, 50); }),
      "bundle mem: corrupt: section 'kernels' holds 50 items of 96 bytes in 96 bytes" + damaged);
  // Entries are 224 bytes in version 2, 216 in version 1.
  EXPECT_EQ(refused([&](std::string& g) { wr32(g, 128 + 40 * 4 + 4, 216); }),
            "bundle mem: corrupt: section #4 has kind 5 and items of 216 bytes; expected kind 5 "
            "(entries) with items of 224 bytes" +
                damaged);
  EXPECT_EQ(refused([&](std::string& g) {
              g = to_v1(g);
              wr32(g, 128 + 40 * 4 + 4, 224);
            }),
            "bundle mem: corrupt: section #4 has kind 5 and items of 224 bytes; expected kind 5 "
            "(entries) with items of 216 bytes" +
                damaged);
}

TEST(Bundle, WriterRejectsABadKernelIndex) {
  tb::Contents c = small();
  c.entries[0].kernel = 3;
  try {
    tb::serialize(c);
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "bundle writer: entry #0 refers to kernel #3, the bundle has 1 kernel; add the "
                 "kernel first");
  }
  c = small();
  c.records[0].kernel = 1;
  EXPECT_THROW(tb::serialize(c), te::ValueError);
  c = small();
  c.entries[0].tma[0].rank = 6;
  try {
    tb::serialize(c);
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "bundle writer: entry #0 TMA record #0 has rank 6; a tensor descriptor has 0 to "
                 "5 dimensions");
  }
}

bool mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(path) != std::string::npos) return true;
  }
  return false;
}

// A refused file is unmapped before the error reaches the caller; an open one until its
// Bundle goes.
TEST(Bundle, NothingStaysMappedAfterARefusal) {
  TempDir dir;
  std::string f = tb::serialize(small());
  f[kTableEnd] ^= 1;  // the strings (a blob's damage is refused when it is used)
  write_bytes(dir / "bad.teb", f);
  for (int i = 0; i < 100; ++i) {
    EXPECT_THROW(tb::Bundle::open(dir / "bad.teb"), te::BundleError);
  }
  EXPECT_FALSE(mapped(dir / "bad.teb"));
  tb::write_file(small(), dir / "good.teb");
  {
    const tb::Bundle b = tb::Bundle::open(dir / "good.teb");
    EXPECT_TRUE(mapped(dir / "good.teb"));
  }
  EXPECT_FALSE(mapped(dir / "good.teb"));
}

TEST(Bundle, WriteFileLeavesNoTemporaryFile) {
  TempDir dir;
  tb::write_file(small(), dir / "a.teb");
  tb::write_file(sample(), dir / "a.teb");  // replaces it
  EXPECT_EQ(dir.names(), std::vector<std::string>{"a.teb"});
  EXPECT_EQ(tb::Bundle::open(dir / "a.teb").entries().size(), 3u);
  struct stat st;
  ASSERT_EQ(::stat((dir / "a.teb").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);

  // The rename fails (the path is a non-empty directory): the temporary file goes.
  fs::create_directories(dir / "d.teb/inside");
  try {
    tb::write_file(small(), dir / "d.teb");
    FAIL() << "expected BundleError";
  } catch (const te::BundleError& e) {
    EXPECT_EQ(e.reason(), Reason::kIo);
    const std::string msg = e.what();
    EXPECT_EQ(msg.substr(0, msg.find(".tmp.")),
              "bundle " + (dir / "d.teb") + ": cannot write: renaming " + (dir / "d.teb"))
        << msg;
    EXPECT_NE(msg.find(" to it failed: Is a directory; check that the path is not a directory"),
              std::string::npos)
        << msg;
  }
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"a.teb", "d.teb"}));
  EXPECT_EQ(tb::Bundle::open(dir / "a.teb").entries().size(), 3u);

  // No directory to write into.
  try {
    tb::write_file(small(), dir / "no/such/dir/x.teb");
    FAIL() << "expected BundleError";
  } catch (const te::BundleError& e) {
    EXPECT_EQ(e.reason(), Reason::kIo);
    EXPECT_EQ(std::string(e.what()),
              "bundle " + (dir / "no/such/dir/x.teb") +
                  ": cannot write: cannot create a temporary file next to it: No such file or "
                  "directory; check that its directory exists and is writable");
  }
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"a.teb", "d.teb"}));
}

// a: kernels add, matmul; b: matmul (the same), softmax; one shared entry and record.
struct MergeInputs {
  std::string a, b;
  tb::Contents ca, cb;
  MergeInputs() {
    const tb::Contents s = sample();
    ca.producer = {"0.1.0", "3.8.0", "a"};
    ca.kernels = {s.kernels[0], s.kernels[1]};
    ca.entries = {s.entries[0], s.entries[1]};
    ca.records = {s.records[0]};
    cb.producer = {"0.1.0", "3.7.1", "b"};
    cb.kernels = {{"pykernels.softmax", "softmax_kernel", "0f0f", "heuristics", "", ""},
                  s.kernels[1]};
    tb::Entry soft = s.entries[0];
    soft.kernel = 0;
    soft.meta.hash = "50f7";
    tb::Entry mm = s.entries[1];
    mm.kernel = 1;
    cb.entries = {soft, mm, s.entries[2]};
    cb.entries[2].kernel = 1;
    cb.records = {{1, 1, {7}, "BLOCK_M=128;BLOCK_N=64"}, {4, 0, {9}, "y"}};
    a = tb::serialize(ca);
    b = tb::serialize(cb);
  }
};

TEST(Bundle, MergeDeduplicates) {
  MergeInputs in;
  const tb::Bundle a = tb::Bundle::from_memory(in.a.data(), in.a.size(), "A");
  const tb::Bundle b = tb::Bundle::from_memory(in.b.data(), in.b.size(), "B");
  const tb::Contents m = tb::merge({&a, &b});
  EXPECT_EQ(m.producer.library_version, tb::library_version());
  EXPECT_EQ(m.producer.triton_version, "3.8.0 + 3.7.1");
  EXPECT_EQ(m.producer.note, "merged from A, B");
  ASSERT_EQ(m.kernels.size(), 3u);
  EXPECT_EQ(m.kernels[0].name, "add_kernel");
  EXPECT_EQ(m.kernels[1].name, "matmul_kernel");
  EXPECT_EQ(m.kernels[2].name, "softmax_kernel");
  ASSERT_EQ(m.entries.size(), 4u);
  tb::Contents want;
  want.entries = {in.ca.entries[0], in.ca.entries[1], in.cb.entries[0], in.cb.entries[2]};
  want.entries[2].kernel = 2;  // softmax
  want.entries[3].kernel = 1;  // matmul
  for (size_t i = 0; i < 4; ++i) expect_entry(want.entries[i], m.entries[i], i);
  ASSERT_EQ(m.records.size(), 2u);
  EXPECT_EQ(m.records[0].kernel, 1u);
  EXPECT_EQ(m.records[0].payload, "BLOCK_M=128;BLOCK_N=64");
  EXPECT_EQ(m.records[1].kernel, 2u);
  EXPECT_EQ(m.records[1].kind, 4u);
  // Merging with itself, or alone, changes nothing but the producer.
  const tb::Contents self = tb::merge({&a, &a});
  EXPECT_EQ(self.kernels.size(), 2u);
  EXPECT_EQ(self.entries.size(), 2u);
  EXPECT_EQ(self.records.size(), 1u);
  // What merge returns is a valid bundle.
  const std::string bytes = tb::serialize(m);
  expect_contents(m, tb::Bundle::from_memory(bytes.data(), bytes.size(), "merged").view());
}

std::string merge_error(const tb::Contents& x, const tb::Contents& y) {
  const std::string bx = tb::serialize(x), by = tb::serialize(y);
  const tb::Bundle a = tb::Bundle::from_memory(bx.data(), bx.size(), "A");
  const tb::Bundle b = tb::Bundle::from_memory(by.data(), by.size(), "B");
  try {
    tb::merge({&a, &b});
  } catch (const te::BundleError& e) {
    EXPECT_EQ(e.reason(), Reason::kConflict);
    return e.what();
  }
  return "merged";
}

TEST(Bundle, MergeConflicts) {
  const tb::Contents s = sample();
  const std::string advice =
      "; merge bundles built from the same kernel sources by the same Triton, or leave one of "
      "them out";
  tb::Contents other = s;
  other.entries[1].meta.hash = "deadbeef";
  EXPECT_EQ(merge_error(s, other),
            "bundle B: conflict: kernel pykernels.matmul.matmul_kernel (source hash d4e5f6): its "
            "entry for cuda:100 options 'num_warps=8;num_stages=4;num_ctas=2' key [0x7] is also "
            "in bundle A, with a different hash (deadbeef here, 77aa0e there)" +
                advice);
  other = s;
  other.entries[2].meta.cubin[10] ^= 1;
  EXPECT_EQ(merge_error(s, other),
            "bundle B: conflict: kernel pykernels.matmul.matmul_kernel (source hash d4e5f6): its "
            "entry for cuda:90:64 options 'num_warps=2' key [] is also in bundle A, with a "
            "different cubin" +
                advice);
  other = s;
  other.entries[0].tma.push_back({});
  EXPECT_EQ(merge_error(s, other),
            "bundle B: conflict: kernel pykernels.vector.add_kernel (source hash a1b2c3): its "
            "entry for cuda:90 options 'num_warps=4;num_stages=3' key [0x1, 0x2, "
            "0xffffffffffffffff] is also in bundle A, with a different TMA metadata" +
                advice);
  other = s;
  other.kernels[1].params = "P2";
  EXPECT_EQ(merge_error(s, other),
            "bundle B: conflict: kernel pykernels.matmul.matmul_kernel (source hash d4e5f6) is "
            "also in bundle A, with a different parameter table (params)" +
                advice);
  other = s;
  other.records[0].payload = "BLOCK_M=64";
  EXPECT_EQ(merge_error(s, other),
            "bundle B: conflict: kernel pykernels.matmul.matmul_kernel (source hash d4e5f6): its "
            "record of kind 1 key [0x7] is also in bundle A, with a different payload" +
                advice);
  // Each field of an entry (entry_fields: the metadata's, then the entry's own) is named.
  const std::vector<std::pair<const char*, std::function<void(tb::Entry&)>>> fields = {
      {"function name", [](tb::Entry& e) { e.meta.name += "2"; }},
      {"signature", [](tb::Entry& e) { e.meta.signature += ",i32"; }},
      {"num_warps", [](tb::Entry& e) { e.meta.num_warps *= 2; }},
      {"num_stages", [](tb::Entry& e) { ++e.meta.num_stages; }},
      {"shared memory size", [](tb::Entry& e) { e.meta.shared += 16; }},
      {"num_kernel_params", [](tb::Entry& e) { ++e.meta.num_kernel_params; }},
      {"global scratch", [](tb::Entry& e) { e.meta.global_scratch_align *= 2; }},
      {"profile scratch", [](tb::Entry& e) { e.meta.profile_scratch_size += 8; }},
      {"launch_cooperative_grid", [](tb::Entry& e) { e.meta.launch_cooperative_grid ^= true; }},
      {"launch_pdl", [](tb::Entry& e) { e.meta.launch_pdl ^= true; }},
      {"num_runtime_params", [](tb::Entry& e) { ++e.num_runtime_params; }},
      {"Triton version", [](tb::Entry& e) { ++e.triton_version; }},
      {"cluster dims", [](tb::Entry& e) { e.cluster_dims[2] = 7; }},
      {"oversized_shared_mode", [](tb::Entry& e) { e.oversized_shared_mode ^= true; }},
  };
  for (const auto& [name, change] : fields) {
    other = s;
    change(other.entries[0]);
    const std::string why = merge_error(s, other);
    EXPECT_NE(why.find(std::string("is also in bundle A, with a different ") + name + advice),
              std::string::npos)
        << why;
  }
  // A different source hash is another kernel, not a conflict.
  other = s;
  for (auto& k : other.kernels) k.source_hash += "-v2";
  for (auto& e : other.entries) e.meta.hash += "-v2";
  EXPECT_EQ(merge_error(s, other), "merged");
}

TEST(Bundle, Describe) {
  const std::string bytes = tb::serialize(sample());
  const tb::Bundle b = tb::Bundle::from_memory(bytes.data(), bytes.size(), "sample.teb");
  EXPECT_EQ(
      tb::describe(b),
      "bundle sample.teb: format version 2, " + std::to_string(bytes.size()) +
          " bytes\n"
          "  written by triton_embed 0.1.0 (Triton 3.8.0)\n"
          "  note: test sample\n"
          "  2 kernels, 3 entries, 2 records\n"
          "kernel #0 pykernels.vector.add_kernel: source hash a1b2c3\n"
          "  entry #0 cuda:90 'num_warps=4;num_stages=3': hash 9f2c81aa, key 3 words, signature "
          "'*fp32,*fp32,*fp32,i32', cubin 1000 bytes, ptx 31 bytes\n"
          "  1 record\n"
          "kernel #1 pykernels.matmul.matmul_kernel: source hash d4e5f6, autotune\n"
          "  entry #1 cuda:100 'num_warps=8;num_stages=4;num_ctas=2': hash 77aa0e, key 1 word, "
          "signature 'tensordesc<fp16[64, 64]>,i32,i32', cubin 3000 bytes, no ptx\n"
          "  entry #2 cuda:90:64 'num_warps=2': hash 0c0c, key 0 words, signature "
          "'*fp32,*fp32,*fp32,i32', cubin 1000 bytes, no ptx\n"
          "  1 record\n");
  EXPECT_EQ(tb::target_text(kSm90), "cuda:90");
  EXPECT_EQ(tb::target_text(kSm90Wave64), "cuda:90:64");
  // Options as the library stores them ("name=<type><value>" lines) read as name=value.
  tb::Contents c = sample();
  c.entries[0].options = "debug=b1\nnum_warps=i8\nratio=f0x1p-1\n";
  const std::string stored = tb::serialize(c);
  const std::string text =
      tb::describe(tb::Bundle::from_memory(stored.data(), stored.size(), "s.teb"));
  EXPECT_NE(text.find("  entry #0 cuda:90 'debug=1; num_warps=8; ratio=0x1p-1': hash 9f2c81aa"),
            std::string::npos)
      << text;
}

TEST(Bundle, EntryMetadataIsTheCompiledKernels) {
  // An entry holds a compiled kernel's metadata (kernel_metadata.h); metadata() owns a copy.
  const tb::Contents c = sample();
  const std::string bytes = tb::serialize(c);
  const tb::Bundle b = tb::Bundle::from_memory(bytes.data(), bytes.size(), "s.teb");
  const te::detail::KernelMetadata m = tb::metadata(b.entries()[1], /*with_cubin=*/true);
  const te::detail::KernelMetadata& want = c.entries[1].meta;
  te::detail::metadata_fields(
      m, want, [](const char* name, const auto& got, const auto& w) { EXPECT_EQ(got, w) << name; });
  EXPECT_EQ(m.name, "matmul_kernel");
  EXPECT_EQ(m.global_scratch_size, 1ull << 33);
  EXPECT_TRUE(m.launch_pdl);
  EXPECT_NE(m.cubin.data(), b.entries()[1].meta.cubin.data());  // owned
  // Without the cubin (the driver compiles the PTX), the rest is the same.
  const te::detail::KernelMetadata p = tb::metadata(b.entries()[0], /*with_cubin=*/false);
  EXPECT_TRUE(p.cubin.empty());
  EXPECT_EQ(p.ptx, c.entries[0].meta.ptx);
  EXPECT_EQ(p.hash, "9f2c81aa");
}

// ---------------------------------------------------------------------------------------
// The numbers bundles store for the library's enums (bundle/enum_codes.h), and the key words
// that embed the in-memory ones. Each number here is the format: a test that fails here is a
// format change (bump the version), not a test to update.

template <class E>
void expect_codes(const std::vector<std::pair<E, int>>& want) {
  ASSERT_EQ(std::size(tb::EnumCodes<E>::table), want.size());
  for (const auto& [value, code] : want) {
    SCOPED_TRACE(code);
    EXPECT_EQ(tb::to_disk(value), code);
    E back{};
    ASSERT_TRUE(tb::from_disk(static_cast<uint8_t>(code), &back));
    EXPECT_EQ(back, value);
  }
  for (int code = static_cast<int>(want.size()); code < 256; ++code) {
    E back{};
    EXPECT_FALSE(tb::from_disk(static_cast<uint8_t>(code), &back)) << code;
  }
}

TEST(BundleEnumCodes, NumbersArePinned) {
  using te::ArgKind;
  using te::DType;
  using te::detail::AnnKind;
  using te::detail::Aspect;
  using te::detail::LeafKind;
  using te::detail::SpecKey;
  expect_codes<ArgKind>({{ArgKind::kNone, 0},
                         {ArgKind::kBool, 1},
                         {ArgKind::kInt, 2},
                         {ArgKind::kFloat, 3},
                         {ArgKind::kPointer, 4},
                         {ArgKind::kStr, 5},
                         {ArgKind::kDType, 6},
                         {ArgKind::kScalar, 7},
                         {ArgKind::kConstexpr, 8},
                         {ArgKind::kTuple, 9},
                         {ArgKind::kJitFunction, 10},
                         {ArgKind::kPyObject, 11},
                         {ArgKind::kTensorDesc, 12}});
  expect_codes<DType>({{DType::invalid, 0},
                       {DType::u1, 1},
                       {DType::i8, 2},
                       {DType::i16, 3},
                       {DType::i32, 4},
                       {DType::i64, 5},
                       {DType::u8, 6},
                       {DType::u16, 7},
                       {DType::u32, 8},
                       {DType::u64, 9},
                       {DType::fp8e4nv, 10},
                       {DType::fp8e5, 11},
                       {DType::fp8e4b15, 12},
                       {DType::fp8e4b8, 13},
                       {DType::fp8e5b16, 14},
                       {DType::fp16, 15},
                       {DType::bf16, 16},
                       {DType::fp32, 17},
                       {DType::fp64, 18}});
  expect_codes<AnnKind>({{AnnKind::kNone, 0},
                         {AnnKind::kScalar, 1},
                         {AnnKind::kPointer, 2},
                         {AnnKind::kUnsupported, 3}});
  expect_codes<Aspect>({{Aspect::kValue, 0}, {Aspect::kDType, 1}, {Aspect::kAddress, 2}});
  expect_codes<LeafKind>({{LeafKind::kConstexpr, 0},
                          {LeafKind::kScalar, 1},
                          {LeafKind::kPointer, 2},
                          {LeafKind::kTupleBegin, 3},
                          {LeafKind::kTupleEnd, 4},
                          {LeafKind::kTensorDesc, 5}});
  expect_codes<SpecKey>(
      {{SpecKey::kNone, 0}, {SpecKey::kEmpty, 1}, {SpecKey::kDiv16, 2}, {SpecKey::kOne, 3}});
  // Expression programs (heuristics' expressions, pre_hooks: expr/program.cc).
  using Op = te::detail::expr::Op;
  expect_codes<Op>({{Op::kNone, 0},
                    {Op::kBool, 1},
                    {Op::kInt, 2},
                    {Op::kFloat, 3},
                    {Op::kStr, 4},
                    {Op::kDType, 5},
                    {Op::kArg, 6},
                    {Op::kArgDType, 7},
                    {Op::kArgElementSize, 8},
                    {Op::kArgIsNone, 9},
                    {Op::kNeg, 10},
                    {Op::kPos, 11},
                    {Op::kNot, 12},
                    {Op::kInvert, 13},
                    {Op::kAbs, 14},
                    {Op::kNextPow2, 15},
                    {Op::kToInt, 16},
                    {Op::kToFloat, 17},
                    {Op::kToBool, 18},
                    {Op::kArgOr, 19},
                    {Op::kAdd, 20},
                    {Op::kSub, 21},
                    {Op::kMul, 22},
                    {Op::kTrueDiv, 23},
                    {Op::kFloorDiv, 24},
                    {Op::kMod, 25},
                    {Op::kPow, 26},
                    {Op::kLShift, 27},
                    {Op::kRShift, 28},
                    {Op::kBitAnd, 29},
                    {Op::kBitOr, 30},
                    {Op::kBitXor, 31},
                    {Op::kCdiv, 32},
                    {Op::kMin, 33},
                    {Op::kMax, 34},
                    {Op::kEq, 35},
                    {Op::kNe, 36},
                    {Op::kLt, 37},
                    {Op::kLe, 38},
                    {Op::kGt, 39},
                    {Op::kGe, 40},
                    {Op::kIsSame, 41},
                    {Op::kAnd, 42},
                    {Op::kOr, 43},
                    {Op::kIf, 44},
                    {Op::kArgIsDescriptor, 45}});
  using HookKind = te::detail::expr::HookAction::Kind;
  expect_codes<HookKind>(
      {{HookKind::kBlockShape, 0}, {HookKind::kZero, 1}, {HookKind::kBlockShapeTuple, 2}});
}

te::ArgValue value_of(te::ArgKind kind, te::DType dtype = te::DType::invalid) {
  te::ArgValue v{};
  v.kind = kind;
  v.dtype = dtype;
  return v;
}

// The bytes the codec writes for a value (codec.h): kind, dtype, big, flags, then the payload.
TEST(BundleEnumCodes, ValuesAreStoredWithTheFormatsNumbers) {
  te::ArgValue ptr = value_of(te::ArgKind::kPointer, te::DType::fp16);
  ptr.u = 0x1122334455667788ull;
  te::ArgValue dtype = value_of(te::ArgKind::kDType, te::DType::bf16);
  te::ArgValue str = value_of(te::ArgKind::kStr);
  str.s = "ab";
  str.count = 2;
  const te::ArgValue elems[] = {dtype, str};
  te::ArgValue tuple = value_of(te::ArgKind::kTuple);
  tuple.elems = elems;
  tuple.count = 2;
  tb::Writer w;
  w.value(ptr);
  w.value(tuple);
  w.value(value_of(te::ArgKind::kPyObject));  // stored as "needs Python"
  const std::string want(
      "\x04\x0f\x00\x00\x88\x77\x66\x55\x44\x33\x22\x11"  // pointer
      "\x09\x00\x00\x00\x02\x00\x00\x00"                  // tuple of 2
      "\x06\x10\x00\x00"                                  // dtype bf16
      "\x05\x00\x00\x00\x02\x00\x00\x00"
      "ab"     // str
      "\xff",  // needs Python
      35);
  const std::string bytes = w.take();
  EXPECT_EQ(bytes, want);

  // Read back; a number the tables do not name is refused, saying where.
  te::detail::KernelState k;
  const std::string where = "bundle b.teb: kernel m.k";
  tb::Reader r(bytes, k, where, "parameter table");
  te::ArgValue v;
  ASSERT_TRUE(r.value(v));
  EXPECT_EQ(v.kind, te::ArgKind::kPointer);
  EXPECT_EQ(v.dtype, te::DType::fp16);
  EXPECT_EQ(v.u, ptr.u);
  ASSERT_TRUE(r.value(v));
  ASSERT_EQ(v.kind, te::ArgKind::kTuple);
  ASSERT_EQ(v.count, 2u);
  EXPECT_EQ(v.elems[0].dtype, te::DType::bf16);
  EXPECT_EQ(std::string(v.elems[1].s, v.elems[1].count), "ab");
  EXPECT_FALSE(r.value(v));
  EXPECT_TRUE(r.done());
  auto refusal_of = [&](const std::string& b) {
    tb::Reader bad(b, k, where, "parameter table");
    te::ArgValue x;
    try {
      bad.value(x);
    } catch (const te::BundleError& e) {
      EXPECT_EQ(e.reason(), Reason::kCorrupt);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal_of(std::string("\x0d\x00\x00\x00", 4)),
            where +
                ": its parameter table is damaged (unknown value kind at byte 1 of 4); rebuild "
                "the bundle");
  EXPECT_EQ(refusal_of(std::string("\x02\x13\x00\x00", 4)),
            where +
                ": its parameter table is damaged (an unknown dtype at byte 2 of 4); rebuild "
                "the bundle");
  EXPECT_EQ(refusal_of(std::string("\x0b\x00\x00\x00", 4)),
            where +
                ": its parameter table is damaged (an object value where only plain data is "
                "stored at byte 4 of 4); rebuild the bundle");
}

// An entry's key words are the cache key as build_key writes it (stored as they are): runtime
// leaves five to a run word, others a word each, constexpr values after them.
TEST(BundleEnumCodes, CacheKeyWordsArePinned) {
  te::detail::KernelState k;
  te::ArgValue block = value_of(te::ArgKind::kInt);
  block.i = 1024;
  const te::ArgValue out_dtype = value_of(te::ArgKind::kDType, te::DType::fp16);
  te::detail::LeafList leaves;
  auto leaf = [&](te::detail::LeafKind kind, te::DType t, te::detail::SpecKey key,
                  const te::ArgValue* v) {
    te::detail::Leaf& l = leaves.leaves[leaves.n++];
    l = te::detail::Leaf{};
    l.kind = kind;
    l.dtype = t;
    l.key = key;
    l.value = v;
  };
  using te::detail::LeafKind;
  using te::detail::SpecKey;
  leaf(LeafKind::kPointer, te::DType::fp32, SpecKey::kDiv16, nullptr);  // *fp32 D
  leaf(LeafKind::kScalar, te::DType::i32, SpecKey::kEmpty, nullptr);    // i32
  leaf(LeafKind::kConstexpr, te::DType::invalid, SpecKey::kNone, &block);
  leaf(LeafKind::kConstexpr, te::DType::invalid, SpecKey::kNone, &out_dtype);
  te::detail::Key key;
  te::detail::build_key(k, leaves, key);
  // Run codes: 1 << 11 | pointer << 10 | const << 9 | spec key << 7 | dtype.
  const std::vector<uint64_t> want = {
      uint64_t{1} << 63 | 0x884ull << 12 | 0xD11ull,  // the run: *fp32 D, i32
      0,
      2,
      1024,  // constexpr: kInt, 1024
      0,
      0xF06,  // constexpr: kDType fp16
  };
  EXPECT_EQ(std::vector<uint64_t>(key.w, key.w + key.n), want);
}

// A heuristic record's key words end with the memo key (core/memo_keys.cc's tags, numbered there,
// and DType's numbers).
TEST(BundleEnumCodes, MemoKeyWordsArePinned) {
  te::detail::HeuristicPlan plan;
  plan.deps = {{0, te::detail::Aspect::kValue},
               {1, te::detail::Aspect::kDType},
               {2, te::detail::Aspect::kValue},
               {3, te::detail::Aspect::kValue}};
  te::detail::Frame f;
  f.np = 4;
  f.vals[0] = value_of(te::ArgKind::kInt);
  f.vals[0].i = 7;
  f.vals[1] = value_of(te::ArgKind::kPointer, te::DType::fp16);
  f.vals[2] = value_of(te::ArgKind::kStr);
  f.vals[2].s = "ab";
  f.vals[2].count = 2;
  for (uint32_t p = 0; p < 3; ++p) f.given[p] = te::detail::kPositional;
  f.given[3] = te::detail::kAbsent;
  te::detail::MemoKey key;
  te::detail::heuristic_memo_key(plan, f, key);
  const std::vector<uint64_t> want = {4,          7,       // int 7
                                      0x100 | 15,          // a pointer's dtype: fp16
                                      7 | 2 << 8, 0x6261,  // str 'ab'
                                      1};                  // absent
  EXPECT_EQ(std::vector<uint64_t>(key.w, key.w + key.n), want);
}

// The bundles tests/cmake/bundle_tool.cmake lists and merges.
int write_samples(const std::string& dir) {
  MergeInputs in;
  write_bytes(dir + "/a.teb", in.a);
  write_bytes(dir + "/b.teb", in.b);
  std::string corrupt = in.a;
  corrupt[corrupt.size() - 1] ^= 0x10;  // the last cubin byte: entry #1's
  write_bytes(dir + "/corrupt.teb", corrupt);
  tb::Contents conflict = in.cb;
  conflict.entries[1].meta.hash = "deadbeef";
  tb::write_file(conflict, dir + "/conflict.teb");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--write-samples") == 0) return write_samples(argv[2]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
