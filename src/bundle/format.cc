#include "bundle/format.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "base/errors.h"

#ifndef TRITON_EMBED_VERSION_STRING
#error "TRITON_EMBED_VERSION_STRING must be defined (CMakeLists.txt sets it on this file)"
#endif

namespace triton_embed::detail::bundle {
namespace {

using Reason = BundleError::Reason;

constexpr char kMagic[8] = {'\x89', 'T', 'E', 'B', '\r', '\n', '\x1a', '\n'};
constexpr uint32_t kByteOrderMark = 0x01020304u;
constexpr uint32_t kByteOrderSwapped = 0x04030201u;
constexpr uint32_t kSectionCount = 7;
constexpr size_t kSectionEntrySize = 40;
constexpr size_t kTableEnd = kHeaderSize + kSectionCount * kSectionEntrySize;
constexpr size_t kHeaderCrcAt = 124;

// Section kinds, in file order; index i of the table holds kind i + 1.
enum : uint32_t { kStrings = 1, kWords, kTma, kKernels, kEntries, kRecords, kBlobs };
constexpr const char* kSectionName[] = {"",        "strings", "words",   "tma",
                                        "kernels", "entries", "records", "blobs"};
constexpr size_t kTmaSize = 48;
constexpr size_t kKernelSize = 96;
constexpr size_t kEntrySize = 224;    // version 2: with the CRC-32s of the cubin and the ptx
constexpr size_t kEntrySizeV1 = 216;  // version 1: without them
constexpr size_t kRecordSize = 40;
constexpr size_t kItemSize[] = {0, 1, 8, kTmaSize, kKernelSize, kEntrySize, kRecordSize, 1};

// The size of a section's items in a file of format `version`.
size_t item_size(uint32_t kind, uint32_t version) {
  return kind == kEntries && version == 1 ? kEntrySizeV1 : kItemSize[kind];
}

constexpr const char* kDamaged = "; the file is damaged (copy it again, or rebuild it)";
constexpr const char* kCutShort = "; the file was cut short (copy it again)";

// ---------------------------------------------------------------------------------------
// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), eight bytes per step.
struct CrcTables {
  uint32_t t[8][256];
};
constexpr CrcTables make_crc_tables() {
  CrcTables c{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t v = i;
    for (int k = 0; k < 8; ++k) v = (v & 1) ? (v >> 1) ^ 0xEDB88320u : v >> 1;
    c.t[0][i] = v;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) {
      c.t[k][i] = (c.t[k - 1][i] >> 8) ^ c.t[0][c.t[k - 1][i] & 0xFF];
    }
  }
  return c;
}
constexpr CrcTables kCrc = make_crc_tables();

// ---------------------------------------------------------------------------------------
// Little-endian encoding, independent of the host's byte order.
uint32_t rd32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
}
uint64_t rd64(const char* p) { return uint64_t{rd32(p)} | uint64_t{rd32(p + 4)} << 32; }
void wr32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void wr64(char* p, uint64_t v) {
  wr32(p, static_cast<uint32_t>(v));
  wr32(p + 4, static_cast<uint32_t>(v >> 32));
}

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string key_text(const std::vector<uint64_t>& words) {
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

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// ---------------------------------------------------------------------------------------
// Writing.

struct Ref {
  uint64_t offset = 0, size = 0;
};

// Byte pool whose identical items are stored once; each item starts at a multiple of `align`.
// The index holds views of the caller's strings, which outlive the pool.
class Pool {
 public:
  explicit Pool(size_t align) : align_(align) {}
  Ref add(std::string_view bytes) {
    if (bytes.empty()) return {};
    auto it = index_.find(bytes);
    if (it != index_.end()) return {it->second, bytes.size()};
    data_.resize(align_up(data_.size(), align_), '\0');
    const uint64_t at = data_.size();
    data_.append(bytes.data(), bytes.size());
    index_.emplace(bytes, at);
    return {at, bytes.size()};
  }
  const std::string& data() const { return data_; }

 private:
  size_t align_;
  std::string data_;
  std::unordered_map<std::string_view, uint64_t> index_;
};

// A fixed-size record being encoded.
class Item {
 public:
  explicit Item(size_t size) : b_(size, '\0') {}
  void u32(size_t at, uint32_t v) { wr32(&b_[at], v); }
  void i32(size_t at, int32_t v) { wr32(&b_[at], static_cast<uint32_t>(v)); }
  void u64(size_t at, uint64_t v) { wr64(&b_[at], v); }
  void u8(size_t at, bool v) { b_[at] = v ? 1 : 0; }
  void raw(size_t at, const void* p, size_t n) { std::memcpy(&b_[at], p, n); }
  void ref(size_t at, Ref r) {
    wr64(&b_[at], r.offset);
    wr64(&b_[at + 8], r.size);
  }
  const std::string& bytes() const { return b_; }

 private:
  std::string b_;
};

struct Range {
  uint64_t first = 0, count = 0;
};

Range add_words(std::string& words, const std::vector<uint64_t>& w) {
  if (w.empty()) return {};
  const Range r{words.size() / 8, w.size()};
  for (uint64_t v : w) {
    char b[8];
    wr64(b, v);
    words.append(b, 8);
  }
  return r;
}

// ---- the layout of the header, the section table and each fixed-size item -----------------
//
// Each one's fields with their byte offsets and how they are stored, once: serialize writes
// them by visiting them with an Encoder, the Parser reads them by visiting them with a
// Decoder. (const items are written, mutable ones read.) The magic (bytes 0..7) is the only
// header field written and read as it is.

// The header's fixed fields (the producer's refs are producer_layout's).
struct Header {
  uint32_t version = kFormatVersion;
  uint32_t byte_order = kByteOrderMark;
  uint64_t file_size = 0;
  uint32_t header_size = kHeaderSize;
  uint32_t section_count = kSectionCount;
  uint32_t entry_size = kSectionEntrySize;  // of the section table
  uint32_t table_crc = 0;
  uint32_t flags = 0;
  uint32_t crc = 0;  // of bytes 0..kHeaderCrcAt-1
};

template <class H, class V>
void header_layout(H& h, V& v) {
  v.u32(8, h.version);
  v.u32(12, h.byte_order);
  v.u64(16, h.file_size);
  v.u32(24, h.header_size);
  v.u32(28, h.section_count);
  v.u32(32, h.entry_size);
  v.u32(36, h.table_crc);
  v.u32(40, h.flags);
  v.u32(kHeaderCrcAt, h.crc);
}

template <class P, class V>
void producer_layout(P& p, V& v) {
  v.str(48, p.library_version, "library version");
  v.str(64, p.triton_version, "Triton version");
  v.str(80, p.note, "note");
}

// One entry of the section table.
struct TableEntry {
  uint32_t kind = 0;
  uint32_t item_size = 0;
  uint64_t offset = 0;  // in the file
  uint64_t extent = 0;  // bytes, with the padding after the content
  uint64_t count = 0;   // items
  uint32_t crc = 0;     // of the extent
};

template <class T, class V>
void table_entry_layout(T& t, V& v) {
  v.u32(0, t.kind);
  v.u32(4, t.item_size);
  v.u64(8, t.offset);
  v.u64(16, t.extent);
  v.u64(24, t.count);
  v.u32(32, t.crc);
}

template <class K, class V>
void kernel_layout(K& k, V& v) {
  v.str(0, k.module, "module");
  v.str(16, k.name, "name");
  v.str(32, k.source_hash, "source hash");
  v.str(48, k.wrapper, "wrapper");
  v.str(64, k.params, "params");
  v.str(80, k.layers, "layers");
}

template <class E, class V>
void entry_layout(E& e, V& v) {
  v.kernel(0, e.kernel, "kernel");
  v.u32(4, e.target);
  v.str(8, e.options, "options");
  v.str(24, e.meta.hash, "hash");
  v.str(40, e.meta.name, "function name");
  v.str(56, e.meta.signature, "signature");
  v.words(72, e.key_words, "key");
  v.tma(88, e.tma);  // first record and count
  v.blob(104, e.meta.cubin, "cubin");
  v.blob(120, e.meta.ptx, "ptx");
  v.i32(136, e.meta.num_warps);
  v.i32(140, e.meta.num_ctas);
  v.i32(144, e.meta.num_stages);
  v.i32(148, e.meta.shared);
  v.i32(152, e.meta.num_kernel_params);
  v.i32(156, e.num_runtime_params);
  v.i32(160, e.triton_version);
  for (int d = 0; d < 3; ++d) v.i32(164 + 4 * d, e.cluster_dims[d]);
  v.u64(176, e.meta.global_scratch_size);
  v.u64(184, e.meta.global_scratch_align);
  v.u64(192, e.meta.profile_scratch_size);
  v.u64(200, e.meta.profile_scratch_align);
  v.flag(208, e.meta.launch_cooperative_grid, "launch_cooperative_grid");
  v.flag(209, e.meta.launch_pdl, "launch_pdl");
  v.flag(210, e.oversized_shared_mode, "oversized_shared_mode");
  v.blob_crc(216, e.meta.cubin, e.cubin_crc);  // version 2 on
  v.blob_crc(220, e.meta.ptx, e.ptx_crc);
}

template <class R, class V>
void record_layout(R& r, V& v) {
  v.u32(0, r.kind);
  v.kernel(4, r.kernel, "kernel");
  v.words(8, r.key_words, "key");
  v.str(24, r.payload, "payload");
}

// present and fp4_padded are 32-bit words, checked by the Parser after the record is read.
template <class T, class V>
void tma_layout(T& m, V& v) {
  v.word(0, m.present);
  v.i32(4, m.swizzle);
  v.i32(8, m.elem_size);
  v.i32(12, m.elem_type);
  v.i32(16, m.rank);
  for (int d = 0; d < 5; ++d) v.u32(20 + 4 * d, m.box[d]);
  v.word(40, m.fp4_padded);
}

// Writes an item's fields into `it`, its strings, blobs, words and TMA records into their
// sections.
class Encoder {
 public:
  Encoder(Item& it, Pool& strings, Pool& blobs, std::string& words, std::string& tma)
      : it_(it), strings_(strings), blobs_(blobs), words_(words), tma_(tma) {}
  void u32(size_t at, uint32_t v) { it_.u32(at, v); }
  void kernel(size_t at, uint32_t v, const char*) { it_.u32(at, v); }
  void i32(size_t at, int32_t v) { it_.i32(at, v); }
  void u64(size_t at, uint64_t v) { it_.u64(at, v); }
  void flag(size_t at, bool v, const char*) { it_.u8(at, v); }
  void word(size_t at, bool v) { it_.u32(at, v ? 1 : 0); }
  void str(size_t at, std::string_view v, const char*) { it_.ref(at, strings_.add(v)); }
  void blob(size_t at, std::string_view v, const char*) { it_.ref(at, blobs_.add(v)); }
  // The CRC-32 of the blob's bytes, whatever the item says (reading gives it).
  void blob_crc(size_t at, std::string_view v, uint32_t) { it_.u32(at, crc32(v.data(), v.size())); }
  void words(size_t at, const std::vector<uint64_t>& w, const char*) {
    const Range r = add_words(words_, w);
    it_.u64(at, r.first);
    it_.u64(at + 8, r.count);
  }
  void tma(size_t at, const std::vector<TmaMeta>& records) {
    it_.u64(at, records.empty() ? 0 : tma_.size() / kTmaSize);
    it_.u64(at + 8, records.size());
    for (const TmaMeta& m : records) {
      Item ti(kTmaSize);
      Encoder e(ti, strings_, blobs_, words_, tma_);
      tma_layout(m, e);
      tma_ += ti.bytes();
    }
  }

 private:
  Item& it_;
  Pool& strings_;
  Pool& blobs_;
  std::string& words_;
  std::string& tma_;
};

}  // namespace

uint32_t crc32(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~0u;
  while (size >= 8) {
    const uint32_t lo = rd32(reinterpret_cast<const char*>(p)) ^ c;
    const uint32_t hi = rd32(reinterpret_cast<const char*>(p) + 4);
    c = kCrc.t[7][lo & 0xFF] ^ kCrc.t[6][(lo >> 8) & 0xFF] ^ kCrc.t[5][(lo >> 16) & 0xFF] ^
        kCrc.t[4][lo >> 24] ^ kCrc.t[3][hi & 0xFF] ^ kCrc.t[2][(hi >> 8) & 0xFF] ^
        kCrc.t[1][(hi >> 16) & 0xFF] ^ kCrc.t[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size-- > 0) c = kCrc.t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

KernelMetadata metadata(const EntryView& e, bool with_cubin) {
  BasicKernelMetadata<std::string_view> from = e.meta;
  if (!with_cubin) from.cubin = {};
  KernelMetadata m;
  metadata_fields(m, from, [](const char*, auto& to, const auto& v) { to = v; });
  return m;
}

const char* library_version() { return TRITON_EMBED_VERSION_STRING; }

std::string target_text(uint32_t target) {
  const uint32_t arch = target & 0xFFFF, warp = target >> 16;
  std::string s = "cuda:" + std::to_string(arch);
  if (warp != 32) s += ":" + std::to_string(warp);
  return s;
}

std::string serialize(const Contents& c) {
  const size_t nk = c.kernels.size();
  for (size_t i = 0; i < c.entries.size(); ++i) {
    TE_CHECK(c.entries[i].kernel < nk, ValueError)
        << "bundle writer: entry #" << i << " refers to kernel #" << c.entries[i].kernel
        << ", the bundle has " << plural(nk, "kernel", "kernels") << "; add the kernel first";
    for (size_t j = 0; j < c.entries[i].tma.size(); ++j) {
      const int32_t rank = c.entries[i].tma[j].rank;
      TE_CHECK(rank >= 0 && rank <= 5, ValueError)
          << "bundle writer: entry #" << i << " TMA record #" << j << " has rank " << rank
          << "; a tensor descriptor has 0 to 5 dimensions";
    }
  }
  for (size_t i = 0; i < c.records.size(); ++i) {
    TE_CHECK(c.records[i].kernel < nk, ValueError)
        << "bundle writer: record #" << i << " refers to kernel #" << c.records[i].kernel
        << ", the bundle has " << plural(nk, "kernel", "kernels") << "; add the kernel first";
  }

  Pool strings(1), blobs(kBlobAlign);
  std::string words, tma, kernels, entries, records;
  for (const Kernel& k : c.kernels) {
    Item it(kKernelSize);
    Encoder e(it, strings, blobs, words, tma);
    kernel_layout(k, e);
    kernels += it.bytes();
  }
  for (const Entry& en : c.entries) {
    Item it(kEntrySize);
    Encoder e(it, strings, blobs, words, tma);
    entry_layout(en, e);
    entries += it.bytes();
  }
  for (const Record& r : c.records) {
    Item it(kRecordSize);
    Encoder e(it, strings, blobs, words, tma);
    record_layout(r, e);
    records += it.bytes();
  }
  // The header: the producer's strings go into the pool after the items' (the same contents
  // give the same bytes); its other fields once the sections are laid out.
  Item header(kHeaderSize);
  Encoder he(header, strings, blobs, words, tma);
  producer_layout(c.producer, he);

  // Sections tile the file: each extent runs to where the next section starts (8-aligned,
  // the blobs 256-aligned); the last ends the file.
  const std::string* body[kSectionCount] = {&strings.data(), &words,   &tma,         &kernels,
                                            &entries,        &records, &blobs.data()};
  uint64_t offset[kSectionCount], extent[kSectionCount];
  size_t at = kTableEnd;
  for (uint32_t i = 0; i < kSectionCount; ++i) {
    offset[i] = at;
    const size_t end = at + body[i]->size();
    const uint32_t next_kind = i + 2;
    at = i + 1 == kSectionCount ? end : align_up(end, next_kind == kBlobs ? kBlobAlign : 8);
    extent[i] = at - offset[i];
  }
  std::string out(at, '\0');
  char* p = &out[0];
  for (uint32_t i = 0; i < kSectionCount; ++i) {
    const uint32_t kind = i + 1;
    if (!body[i]->empty()) std::memcpy(p + offset[i], body[i]->data(), body[i]->size());
    TableEntry t;
    t.kind = kind;
    t.item_size = static_cast<uint32_t>(kItemSize[kind]);
    t.offset = offset[i];
    t.extent = extent[i];
    t.count = body[i]->size() / kItemSize[kind];
    t.crc = crc32(p + offset[i], extent[i]);
    Item it(kSectionEntrySize);
    Encoder e(it, strings, blobs, words, tma);
    table_entry_layout(t, e);
    std::memcpy(p + kHeaderSize + i * kSectionEntrySize, it.bytes().data(), kSectionEntrySize);
  }
  Header h;
  h.file_size = out.size();
  h.table_crc = crc32(p + kHeaderSize, kTableEnd - kHeaderSize);
  header.raw(0, kMagic, sizeof kMagic);
  header_layout(h, he);
  h.crc = crc32(header.bytes().data(), kHeaderCrcAt);
  header_layout(h, he);
  std::memcpy(p, header.bytes().data(), kHeaderSize);
  return out;
}

void write_file(const Contents& c, const std::string& path) {
  const std::string bytes = serialize(c);
  auto io_error = [&](const std::string& why) {
    return BundleError("bundle " + path + ": cannot write: " + why, Reason::kIo);
  };
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(&tmp[0]);
  if (fd < 0) {
    throw io_error(
        "cannot create a temporary file next to it: " + std::string(std::strerror(errno)) +
        "; check that its directory exists and is writable");
  }
  // Until the rename succeeds, any failure removes the temporary file.
  struct TempFile {
    int fd;
    const std::string& name;
    bool done = false;
    ~TempFile() {
      if (fd >= 0) ::close(fd);
      if (!done) ::unlink(name.c_str());
    }
  } guard{fd, tmp};
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw io_error("writing " + tmp + " failed: " + std::strerror(n < 0 ? errno : EIO) +
                     "; check the free space");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    throw io_error("writing " + tmp + " failed: " + std::strerror(errno));
  }
  guard.fd = -1;
  if (::close(fd) != 0) throw io_error("writing " + tmp + " failed: " + std::strerror(errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    throw io_error("renaming " + tmp + " to it failed: " + std::strerror(errno) +
                   "; check that the path is not a directory");
  }
  guard.done = true;
}

// ---------------------------------------------------------------------------------------
// Reading: every check before the Bundle is handed out.

namespace {

class Parser {
 public:
  Parser(const std::string& name, const char* p, size_t n) : name_(name), p_(p), n_(n) {}

  uint32_t parse(ContentsView* out) {
    check_header();
    check_sections();
    read_contents(out);
    return version_;
  }

  // The blobs section's CRC, which opening a file of `version` 2 on leaves out
  // (Bundle::check_blobs), for a file that opened.
  void check_blobs_crc(uint32_t version) {
    version_ = version;
    read_table_entry(kBlobs - 1);
    check_crc(kBlobs);
  }

 private:
  [[noreturn]] void fail(Reason r, const std::string& why) const {
    static constexpr const char* kWord[] = {"cannot read", "truncated", "corrupt",
                                            "foreign",     "too new",   "conflict"};
    throw BundleError("bundle " + name_ + ": " + kWord[static_cast<int>(r)] + ": " + why, r);
  }
  [[noreturn]] void corrupt(const std::string& why) const {
    fail(Reason::kCorrupt, why + kDamaged);
  }

  [[noreturn]] void foreign() const {
    std::string got;
    char buf[8];
    for (size_t i = 0; i < std::min<size_t>(n_, 8); ++i) {
      std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", static_cast<unsigned char>(p_[i]));
      got += buf;
    }
    std::string hint;
    if (n_ >= 4 && std::memcmp(p_,
                               "\x7f"
                               "ELF",
                               4) == 0) {
      hint = " (an ELF file: for a bundle embedded in a program, use Bundle::from_memory)";
    } else if (n_ >= 8 && std::memcmp(p_, kMagic, 4) == 0) {
      hint = " (its line-ending bytes differ: copied in text mode?)";
    }
    fail(Reason::kForeign, "not a triton_embed bundle: it starts with " + got + hint +
                               ", a bundle with 89 54 45 42 0d 0a 1a 0a; give a .teb file "
                               "written by triton_embed");
  }

  void check_header() {
    // An empty file maps to no memory at all: compare only bytes there are.
    if (n_ != 0 && std::memcmp(p_, kMagic, std::min<size_t>(n_, 8)) != 0) foreign();
    if (n_ < kHeaderSize) {
      fail(Reason::kTruncated, (n_ == 0 ? std::string("the file is empty")
                                        : "the file has " + plural(n_, "byte", "bytes") +
                                              ", less than the 128-byte header") +
                                   kCutShort);
    }
    Header h;
    Decoder hd{*this, p_, "header", 0};
    header_layout(h, hd);
    if (h.byte_order == kByteOrderSwapped) {
      fail(Reason::kForeign,
           "its byte-order mark says big-endian; this library reads little-endian bundles "
           "only: write the bundle with triton_embed on a little-endian machine");
    }
    if (h.byte_order != kByteOrderMark) {
      corrupt("byte-order mark " + hex32(h.byte_order) + ", expected 0x01020304");
    }
    version_ = h.version;
    if (version_ > kFormatVersion) {
      fail(Reason::kTooNew, "format version " + std::to_string(version_) +
                                ", this library reads versions up to " +
                                std::to_string(kFormatVersion) + ": upgrade triton_embed");
    }
    if (version_ == 0) corrupt("format version 0 (versions start at 1)");
    const uint32_t got = crc32(p_, kHeaderCrcAt);
    if (h.crc != got) {
      corrupt("the header's CRC-32 is " + hex32(h.crc) + ", its bytes give " + hex32(got));
    }
    const uint64_t declared = h.file_size;
    if (declared > n_) {
      fail(Reason::kTruncated, "the header says " + std::to_string(declared) +
                                   " bytes, the file has " + std::to_string(n_) + kCutShort);
    }
    if (declared < n_) {
      corrupt("the header says " + std::to_string(declared) + " bytes, the file has " +
              std::to_string(n_) + " (data after its end)");
    }
    if (h.header_size != kHeaderSize || h.section_count != kSectionCount ||
        h.entry_size != kSectionEntrySize || h.flags != 0) {
      corrupt("header size " + std::to_string(h.header_size) + ", " +
              std::to_string(h.section_count) + " sections of " + std::to_string(h.entry_size) +
              " bytes, flags " + hex32(h.flags) + "; format version " + std::to_string(version_) +
              " has 128, 7 sections of 40 bytes, flags 0");
    }
    if (n_ < kTableEnd) {
      corrupt("the file (" + std::to_string(n_) + " bytes) ends inside the section table");
    }
    const uint32_t tgot = crc32(p_ + kHeaderSize, kTableEnd - kHeaderSize);
    if (h.table_crc != tgot) {
      corrupt("the section table's CRC-32 is " + hex32(h.table_crc) + ", its bytes give " +
              hex32(tgot));
    }
  }

  // Entry i of the section table into sec_[i + 1], checking its kind and item size.
  void read_table_entry(uint32_t i) {
    TableEntry t;
    Decoder d{*this, p_ + kHeaderSize + i * kSectionEntrySize, "section", i};
    table_entry_layout(t, d);
    const uint32_t kind = i + 1;
    const size_t item = item_size(kind, version_);
    if (t.kind != kind || t.item_size != item) {
      corrupt("section #" + std::to_string(i) + " has kind " + std::to_string(t.kind) +
              " and items of " + std::to_string(t.item_size) + " bytes; expected kind " +
              std::to_string(kind) + " (" + kSectionName[kind] + ") with items of " +
              std::to_string(item) + " bytes");
    }
    Section& s = sec_[kind];
    s.offset = t.offset;
    s.extent = t.extent;
    s.count = t.count;
    s.crc = t.crc;
  }

  void check_crc(uint32_t kind) const {
    const Section& s = sec_[kind];
    const uint32_t got = crc32(p_ + s.offset, s.extent);
    if (s.crc != got) {
      corrupt(std::string("section '") + kSectionName[kind] + "' (bytes " +
              std::to_string(s.offset) + ".." + std::to_string(s.offset + s.extent) +
              "): its CRC-32 is " + hex32(s.crc) + ", its bytes give " + hex32(got));
    }
  }

  void check_sections() {
    uint64_t at = kTableEnd;
    for (uint32_t i = 0; i < kSectionCount; ++i) {
      read_table_entry(i);
      const uint32_t kind = i + 1;
      const Section& s = sec_[kind];
      const size_t item = item_size(kind, version_);
      const std::string name = std::string("section '") + kSectionName[kind] + "'";
      const uint64_t align = kind == kBlobs ? kBlobAlign : 8;
      if (s.offset != at || s.offset % align != 0 || s.extent > n_ - s.offset) {
        corrupt(name + " at bytes " + std::to_string(s.offset) + "+" + std::to_string(s.extent) +
                ": expected to start at byte " + std::to_string(at) + ", " + std::to_string(align) +
                "-byte aligned, within the file's " + std::to_string(n_) + " bytes");
      }
      if (s.count > s.extent / item) {
        corrupt(name + " holds " + std::to_string(s.count) + " items of " + std::to_string(item) +
                " bytes in " + std::to_string(s.extent) + " bytes");
      }
      at = s.offset + s.extent;
    }
    if (at != n_) {
      corrupt("the sections end at byte " + std::to_string(at) + ", the file at " +
              std::to_string(n_));
    }
    // From version 2 on each blob is checked when it is first used (Bundle::check_cubin,
    // check_ptx), not here: opening takes time in proportion to the metadata, not to the
    // cubins, and only the cubins used are read.
    for (uint32_t kind = 1; kind <= kSectionCount; ++kind) {
      if (kind != kBlobs || version_ == 1) check_crc(kind);
    }
  }

  // Where a field lies, for messages; formatted only on failure.
  struct Where {
    const char* item;  // "kernel", "entry", "record", "header"
    size_t index;
    const char* field;
    std::string str() const {
      return std::string(item) + (std::strcmp(item, "header") ? " #" + std::to_string(index) : "") +
             " " + field;
    }
  };

  static bool in_bounds(uint64_t first, uint64_t count, uint64_t limit) {
    return count <= limit && first <= limit - count;
  }

  std::string_view str(const char* at, Where w) const {
    const uint64_t off = rd64(at), size = rd64(at + 8);
    const Section& s = sec_[kStrings];
    if (!in_bounds(off, size, s.count)) {
      corrupt(w.str() + ": bytes " + std::to_string(off) + "+" + std::to_string(size) +
              " lie outside the strings (" + std::to_string(s.count) + " bytes)");
    }
    return std::string_view(p_ + s.offset + off, size);
  }
  std::string_view blob(const char* at, Where w) const {
    const uint64_t off = rd64(at), size = rd64(at + 8);
    const Section& s = sec_[kBlobs];
    if (!in_bounds(off, size, s.count)) {
      corrupt(w.str() + ": bytes " + std::to_string(off) + "+" + std::to_string(size) +
              " lie outside the blobs (" + std::to_string(s.count) + " bytes)");
    }
    if (size > 0 && off % kBlobAlign != 0) {
      corrupt(w.str() + ": starts at blob offset " + std::to_string(off) +
              ", not a multiple of 256");
    }
    return std::string_view(size ? p_ + s.offset + off : nullptr, size);
  }
  std::vector<uint64_t> words(const char* at, Where w) const {
    const uint64_t first = rd64(at), count = rd64(at + 8);
    const Section& s = sec_[kWords];
    if (!in_bounds(first, count, s.count)) {
      corrupt(w.str() + ": words " + std::to_string(first) + "+" + std::to_string(count) +
              " lie outside the " + std::to_string(s.count) + " key words");
    }
    std::vector<uint64_t> v(count);
    for (uint64_t i = 0; i < count; ++i) v[i] = rd64(p_ + s.offset + (first + i) * 8);
    return v;
  }
  bool flag(const char* at, Where w) const {
    const auto v = static_cast<unsigned char>(*at);
    if (v > 1) corrupt(w.str() + " is " + std::to_string(v) + ", not 0 or 1");
    return v == 1;
  }
  uint32_t kernel_index(const char* at, Where w) const {
    const uint32_t k = rd32(at);
    if (k >= sec_[kKernels].count) {
      corrupt(w.str() + " is #" + std::to_string(k) + ", the bundle has " +
              plural(sec_[kKernels].count, "kernel", "kernels"));
    }
    return k;
  }

  void read_contents(ContentsView* out) {
    Decoder hd{*this, p_, "header", 0};
    producer_layout(out->producer, hd);

    const Section& ks = sec_[kKernels];
    out->kernels.resize(ks.count);
    for (size_t i = 0; i < ks.count; ++i) {
      Decoder d{*this, p_ + ks.offset + i * kKernelSize, "kernel", i};
      kernel_layout(out->kernels[i], d);
    }
    const Section& es = sec_[kEntries];
    const size_t entry_size = item_size(kEntries, version_);
    out->entries.resize(es.count);
    for (size_t i = 0; i < es.count; ++i) {
      Decoder d{*this, p_ + es.offset + i * entry_size, "entry", i};
      entry_layout(out->entries[i], d);
    }
    const Section& rs = sec_[kRecords];
    out->records.resize(rs.count);
    for (size_t i = 0; i < rs.count; ++i) {
      Decoder d{*this, p_ + rs.offset + i * kRecordSize, "record", i};
      record_layout(out->records[i], d);
    }
  }

  // Reads an item's fields from its bytes at `r` (item `index` of kind `item`), checking each
  // reference against its section.
  struct Decoder {
    const Parser& p;
    const char* r;
    const char* item;
    size_t index;
    void u32(size_t at, uint32_t& v) const { v = rd32(r + at); }
    void kernel(size_t at, uint32_t& v, const char* f) const {
      v = p.kernel_index(r + at, {item, index, f});
    }
    void i32(size_t at, int32_t& v) const { v = static_cast<int32_t>(rd32(r + at)); }
    void u64(size_t at, uint64_t& v) const { v = rd64(r + at); }
    void flag(size_t at, bool& v, const char* f) const { v = p.flag(r + at, {item, index, f}); }
    void str(size_t at, std::string_view& v, const char* f) const {
      v = p.str(r + at, {item, index, f});
    }
    void blob(size_t at, std::string_view& v, const char* f) const {
      v = p.blob(r + at, {item, index, f});
    }
    // Version 2 on: a version 1 entry ends before it.
    void blob_crc(size_t at, std::string_view, uint32_t& crc) const {
      crc = p.version_ >= 2 ? rd32(r + at) : 0;
    }
    void words(size_t at, std::vector<uint64_t>& v, const char* f) const {
      v = p.words(r + at, {item, index, f});
    }
    void tma(size_t at, std::vector<TmaMeta>& v) const { p.tma_records(r + at, index, v); }
  };

  // The TMA records of entry `i` (first record and count at `at`).
  void tma_records(const char* at, size_t i, std::vector<TmaMeta>& out) const {
    const Section& ts = sec_[kTma];
    const uint64_t tfirst = rd64(at), tcount = rd64(at + 8);
    if (!in_bounds(tfirst, tcount, ts.count)) {
      corrupt("entry #" + std::to_string(i) + " TMA records " + std::to_string(tfirst) + "+" +
              std::to_string(tcount) + " lie outside the " + std::to_string(ts.count) + " records");
    }
    out.resize(tcount);
    for (uint64_t j = 0; j < tcount; ++j) {
      // present and fp4_padded as the words they are stored as, to check them.
      struct Words : Decoder {
        uint32_t present = 0, fp4 = 0;
        void word(size_t at, bool&) { (at == 0 ? present : fp4) = rd32(r + at); }
      } d{{*this, p_ + ts.offset + (tfirst + j) * kTmaSize, "entry", i}};
      TmaMeta& m = out[j];
      tma_layout(m, d);
      if (d.present > 1 || d.fp4 > 1 || m.rank < 0 || m.rank > 5) {
        corrupt("entry #" + std::to_string(i) + " TMA record #" + std::to_string(j) + ": present " +
                std::to_string(d.present) + ", fp4_padded " + std::to_string(d.fp4) + ", rank " +
                std::to_string(m.rank) + " (expected 0/1, 0/1, 0..5)");
      }
      m.present = d.present == 1;
      m.fp4_padded = d.fp4 == 1;
    }
  }

  struct Section {
    uint64_t offset = 0, extent = 0, count = 0;
    uint32_t crc = 0;
  };

  const std::string& name_;
  const char* p_;
  size_t n_;
  uint32_t version_ = 0;
  Section sec_[kSectionCount + 1];
};

std::string io_message(const std::string& path, const char* what) {
  return "bundle " + path + ": cannot read: " + what + ": " + std::strerror(errno);
}

}  // namespace

Bundle Bundle::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw BundleError(io_message(path, "cannot open it") + "; check the path and its permissions",
                      Reason::kIo);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const std::string msg = io_message(path, "cannot stat it");
    ::close(fd);
    throw BundleError(msg, Reason::kIo);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw BundleError("bundle " + path + ": cannot read: " +
                          (S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file") +
                          "; give the path of a .teb file",
                      Reason::kIo);
  }
  Bundle b;
  b.name_ = path;
  const size_t size = static_cast<size_t>(st.st_size);
  if (size > 0) {
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const std::string msg = io_message(path, "cannot map it");
      ::close(fd);
      throw BundleError(msg, Reason::kIo);
    }
    b.mapping_ = m;
    b.mapping_size_ = size;
    b.data_ = static_cast<const char*>(m);
    b.size_ = size;
  }
  ::close(fd);  // the mapping stays
  b.parse();    // on failure ~Bundle unmaps
  return b;
}

Bundle Bundle::from_memory(const void* data, size_t size, std::string name) {
  Bundle b;
  b.name_ = std::move(name);
  b.data_ = static_cast<const char*>(data);
  b.size_ = data ? size : 0;
  b.parse();
  return b;
}

void Bundle::parse() {
  version_ = Parser(name_, data_, size_).parse(&view_);
  if (version_ >= 2) {
    // Value-initialised: zero, nothing checked yet.
    checked_.reset(new std::atomic<uint8_t>[view_.entries.size() + 1]());
  }
}

void Bundle::check_blob(size_t entry, bool ptx) const {
  if (checked_ == nullptr) return;  // version 1: the blobs section's CRC was checked at open
  TE_ICHECK(entry < view_.entries.size())
      << "bundle " << name_ << ": entry #" << entry << " of " << view_.entries.size();
  const uint8_t bit = ptx ? 2 : 1;
  std::atomic<uint8_t>& done = checked_[entry];
  if ((done.load(std::memory_order_acquire) & bit) != 0) return;
  const EntryView& e = view_.entries[entry];
  const std::string_view bytes = ptx ? e.meta.ptx : e.meta.cubin;
  const uint32_t want = ptx ? e.ptx_crc : e.cubin_crc;
  const uint32_t got = crc32(bytes.data(), bytes.size());
  if (got != want) {
    const KernelView& k = view_.kernels[e.kernel];
    const std::string what = "entry #" + std::to_string(entry) + " (kernel " +
                             std::string(k.module) + "." + std::string(k.name) + "): its " +
                             (ptx ? "PTX's" : "cubin's");
    throw BundleError("bundle " + name_ + ": corrupt: " + what + " CRC-32 is " + hex32(want) +
                          ", its bytes give " + hex32(got) + kDamaged,
                      Reason::kCorrupt);
  }
  done.fetch_or(bit, std::memory_order_release);
}

void Bundle::check_blobs() const {
  if (checked_ == nullptr) return;
  for (size_t i = 0; i < view_.entries.size(); ++i) {
    check_cubin(i);
    check_ptx(i);
  }
  // Then the whole section, padding included: what no entry's CRC covers.
  std::atomic<uint8_t>& done = checked_[view_.entries.size()];
  if ((done.load(std::memory_order_acquire) & 1) != 0) return;
  Parser(name_, data_, size_).check_blobs_crc(version_);
  done.fetch_or(1, std::memory_order_release);
}

Bundle::Bundle(Bundle&& o) noexcept
    : name_(std::move(o.name_)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      mapping_(std::exchange(o.mapping_, nullptr)),
      mapping_size_(std::exchange(o.mapping_size_, 0)),
      version_(std::exchange(o.version_, 0)),
      view_(std::exchange(o.view_, ContentsView{})),
      checked_(std::move(o.checked_)) {}

Bundle& Bundle::operator=(Bundle&& o) noexcept {
  if (this != &o) {
    release();
    name_ = std::move(o.name_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapping_ = std::exchange(o.mapping_, nullptr);
    mapping_size_ = std::exchange(o.mapping_size_, 0);
    version_ = std::exchange(o.version_, 0);
    view_ = std::exchange(o.view_, ContentsView{});
    checked_ = std::move(o.checked_);
  }
  return *this;
}

Bundle::~Bundle() { release(); }

void Bundle::release() noexcept {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
  mapping_ = nullptr;
  mapping_size_ = 0;
}

namespace {

std::string own(std::string_view s) { return std::string(s); }

Kernel own(const KernelView& k) {
  return {own(k.module),  own(k.name),   own(k.source_hash),
          own(k.wrapper), own(k.params), own(k.layers)};
}

Entry own(const EntryView& v) {
  Entry e;
  e.kernel = v.kernel;
  e.target = v.target;
  e.options = own(v.options);
  e.key_words = v.key_words;
  entry_fields(e, v, [](const char*, auto& to, const auto& from) { to = from; });
  return e;
}

Record own(const RecordView& r) { return {r.kind, r.kernel, r.key_words, own(r.payload)}; }

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

Contents Bundle::contents() const {
  check_blobs();
  Contents c;
  c.producer = {own(view_.producer.library_version), own(view_.producer.triton_version),
                own(view_.producer.note)};
  for (const KernelView& k : view_.kernels) c.kernels.push_back(own(k));
  for (const EntryView& e : view_.entries) c.entries.push_back(own(e));
  for (const RecordView& r : view_.records) c.records.push_back(own(r));
  return c;
}

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
                     key_text(e.key_words),
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
                     std::to_string(r.kind) + " key " + key_text(r.key_words),
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
