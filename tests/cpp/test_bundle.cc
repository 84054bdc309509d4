// Kernel bundles (src/bundle/format.h, file_reader.h, file_writer.h, merge.h): round trips of every
// field, zero-copy cubins, every length and flipped bit refused, and cubins and PTX checked at
// first use (format version 2). Files (version 1, foreign, too new, missing), merging and listing:
// test_bundle_files.cc; the format's numbers for the library's enums: test_bundle_enum_codes.cc. No
// Python: the interpreter is never started.
//
// `test_bundle --write-samples DIR` writes the bundles the triton-embed-bundle CTest uses.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "bundle/format.h"
#include "bundle_bytes.h"
#include "triton_embed/error.h"

namespace te = triton_embed;
namespace tb = triton_embed::detail::bundle;
namespace fs = std::filesystem;
using Reason = te::BundleError::Reason;

namespace {

using namespace te_bundle_bytes;

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
