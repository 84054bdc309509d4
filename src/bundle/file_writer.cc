// Writing a bundle file: its contents encoded into the layout of file_layout.h (serialize),
// and the file written atomically (write_file).

#include "bundle/file_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "base/errors.h"
#include "bundle/file_layout.h"

namespace triton_embed::detail::bundle {
namespace {

using Reason = BundleError::Reason;

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

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
  for (const BundleEntry& en : c.entries) {
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

}  // namespace triton_embed::detail::bundle
