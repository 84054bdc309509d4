#pragma once

// The kernel bundle format tests' helpers (test_bundle.cc, test_bundle_files.cc): sample
// contents, reading and editing a bundle's bytes, comparing contents, temporary directories.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "bundle/codec.h"
#include "bundle/enum_codes.h"
#include "bundle/file_reader.h"
#include "bundle/file_writer.h"
#include "bundle/format.h"
#include "bundle/merge.h"
#include "core/layers.h"
#include "core/specialize.h"
#include "triton_embed/error.h"

namespace te_bundle_bytes {

namespace te = triton_embed;
namespace tb = triton_embed::detail::bundle;
namespace fs = std::filesystem;
using Reason = te::BundleError::Reason;

inline constexpr uint32_t kSm90 = 90 | 32u << 16;
inline constexpr uint32_t kSm100 = 100 | 32u << 16;
inline constexpr uint32_t kSm90Wave64 = 90 | 64u << 16;
inline constexpr size_t kTableEnd = 128 + 7 * 40;  // header + section table
inline constexpr const char* kSectionNames[] = {"strings", "words",   "tma",  "kernels",
                                                "entries", "records", "blobs"};

inline std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 5)) & 0xFF);
  return s;
}

inline uint32_t rd32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(s[at + i]);
  return v;
}
inline uint64_t rd64(const std::string& s, size_t at) {
  return rd32(s, at) | static_cast<uint64_t>(rd32(s, at + 4)) << 32;
}
inline void wr32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>(v >> (8 * i));
}
inline void wr64(std::string& s, size_t at, uint64_t v) {
  wr32(s, at, static_cast<uint32_t>(v));
  wr32(s, at + 4, static_cast<uint32_t>(v >> 32));
}

// Section i's (offset, extent) from the table, as docs/bundle_format.md lays it out.
inline std::pair<uint64_t, uint64_t> section(const std::string& f, int i) {
  return {rd64(f, 128 + 40 * i + 8), rd64(f, 128 + 40 * i + 16)};
}

// Recomputes every CRC after a test edits the bytes, so that the structural checks are reached.
// (Not an entry's CRC-32s of its cubin and PTX: a test that edits blobs sets them.)
inline void reseal(std::string& f) {
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
inline std::string to_v1(const std::string& f) {
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
inline size_t offset_of(const tb::Bundle& b, std::string_view blob) {
  return static_cast<size_t>(blob.data() - b.data());
}

inline std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Two kernels, three entries (one with PTX and TMA records, one for a 64-wide warp, two
// sharing a cubin), two records; every field has a value of its own.
inline tb::Contents sample() {
  tb::Contents c;
  c.producer = {"0.1.0", "3.8.0", "test sample"};
  c.kernels.push_back(
      {"pykernels.vector", "add_kernel", "a1b2c3", "", std::string("\x01\x02params\0", 9), ""});
  c.kernels.push_back({"pykernels.matmul", "matmul_kernel", "d4e5f6", "autotune", "P1",
                       std::string("L1\0\xff", 4)});
  tb::BundleEntry e0;
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

  tb::BundleEntry e1;
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

  tb::BundleEntry e2 = e0;
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
inline tb::Contents small() {
  tb::Contents c;
  c.producer = {"0.1.0", "3.8.0", ""};
  c.kernels.push_back({"m", "k", "h", "heuristics", "p", "l"});
  tb::BundleEntry e;
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
inline te::BundleError refusal(const std::string& bytes, size_t n) {
  try {
    tb::Bundle::from_memory(bytes.data(), n, "mem");
  } catch (const te::BundleError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted " << n << " bytes";
  return te::BundleError("", Reason::kIo);
}
inline te::BundleError refusal(const std::string& bytes) { return refusal(bytes, bytes.size()); }

inline const char* reason_name(Reason r) {
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

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string open_error(const std::string& path) {
  try {
    tb::Bundle::open(path);
  } catch (const te::BundleError& e) {
    return std::string(reason_name(e.reason())) + ": " + e.what();
  }
  return "opened";
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
    tb::BundleEntry soft = s.entries[0];
    soft.kernel = 0;
    soft.meta.hash = "50f7";
    tb::BundleEntry mm = s.entries[1];
    mm.kernel = 1;
    cb.entries = {soft, mm, s.entries[2]};
    cb.entries[2].kernel = 1;
    cb.records = {{1, 1, {7}, "BLOCK_M=128;BLOCK_N=64"}, {4, 0, {9}, "y"}};
    a = tb::serialize(ca);
    b = tb::serialize(cb);
  }
};

}  // namespace te_bundle_bytes
