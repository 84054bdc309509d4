// Kernel bundle files (part of test_bundle; src/bundle/format.h): version 1 files read,
// every way a file can be refused (foreign, too new, missing, damaged in ways that keep the
// CRCs right), atomic writes, merging, listing and the entries' metadata.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
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
  const std::vector<std::pair<const char*, std::function<void(tb::BundleEntry&)>>> fields = {
      {"function name", [](tb::BundleEntry& e) { e.meta.name += "2"; }},
      {"signature", [](tb::BundleEntry& e) { e.meta.signature += ",i32"; }},
      {"num_warps", [](tb::BundleEntry& e) { e.meta.num_warps *= 2; }},
      {"num_stages", [](tb::BundleEntry& e) { ++e.meta.num_stages; }},
      {"shared memory size", [](tb::BundleEntry& e) { e.meta.shared += 16; }},
      {"num_kernel_params", [](tb::BundleEntry& e) { ++e.meta.num_kernel_params; }},
      {"global scratch", [](tb::BundleEntry& e) { e.meta.global_scratch_align *= 2; }},
      {"profile scratch", [](tb::BundleEntry& e) { e.meta.profile_scratch_size += 8; }},
      {"launch_cooperative_grid",
       [](tb::BundleEntry& e) { e.meta.launch_cooperative_grid ^= true; }},
      {"launch_pdl", [](tb::BundleEntry& e) { e.meta.launch_pdl ^= true; }},
      {"num_runtime_params", [](tb::BundleEntry& e) { ++e.num_runtime_params; }},
      {"Triton version", [](tb::BundleEntry& e) { ++e.triton_version; }},
      {"cluster dims", [](tb::BundleEntry& e) { e.cluster_dims[2] = 7; }},
      {"oversized_shared_mode", [](tb::BundleEntry& e) { e.oversized_shared_mode ^= true; }},
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

}  // namespace
