// Reading a bundle: a file mapped (or bytes embedded in the executable) and checked before
// the Bundle is handed out, and each entry's cubin and PTX checked when first used.

#include "bundle/file_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/errors.h"
#include "bundle/file_layout.h"

namespace triton_embed::detail::bundle {
namespace {

using Reason = BundleError::Reason;

// The size of a section's items in a file of format `version`.
size_t item_size(uint32_t kind, uint32_t version) {
  return kind == kEntries && version == 1 ? kEntrySizeV1 : kItemSize[kind];
}

constexpr const char* kDamaged = "; the file is damaged (copy it again, or rebuild it)";
constexpr const char* kCutShort = "; the file was cut short (copy it again)";

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

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

}  // namespace triton_embed::detail::bundle
