#pragma once

// Reading a kernel bundle (format.h): Bundle maps a file, or takes bytes embedded in the
// executable, and checks them before it is returned.
//
// Opening checks, in this order (each failure is a BundleError with its Reason):
//   the first bytes are the magic (or a prefix of it, for a file shorter than 8 bytes)
//                                                             else kForeign
//   the file holds a whole header                             else kTruncated
//   byte-order mark                 kForeign when byte-swapped, else kCorrupt
//   format version                  kTooNew above kFormatVersion, kCorrupt for 0
//   header CRC                                                else kCorrupt
//   file size: the header's vs the file's    kTruncated when shorter, kCorrupt when longer
//   table shape and CRC, the sections' tiling, each section's CRC (in version 2 all but the
//   blobs')                                                   else kCorrupt
//   the contents: every ref in bounds, every index in range, bools 0/1,
//   blobs 256-aligned                                         else kCorrupt
// The header CRC is checked before the size so that a damaged size field reads as corrupt,
// not as truncated; the version is checked before it because a newer format may lay out its
// header differently. In version 2 a blob is checked against its entry's CRC-32 when it is
// first used (Bundle::check_cubin, check_ptx; check_blobs checks all of them and the blobs
// section's CRC): a large bundle opens in time proportional to its metadata, and only the
// cubins used are read.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bundle/format.h"
#include "triton_embed/detail/export.h"

namespace triton_embed::detail::bundle {

/*! \brief A bundle, read-only and validated: a file mapped into memory, or bytes embedded in
 *  the executable. Every view it hands out points into those bytes (cubins are never
 *  copied) and lives as long as the Bundle. Movable, not copyable. Opening checks all but
 *  the blobs of a version 2 file: check an entry's cubin or PTX before using it.
 *  \code
 *  auto b = bundle::Bundle::open("kernels.teb");
 *  for (size_t i = 0; i < b.entries().size(); ++i) {
 *    b.check_cubin(i);
 *    load(b.entries()[i].meta.cubin.data(), b.entries()[i].meta.cubin.size());
 *  }
 *  \endcode
 */
class TRITON_EMBED_API Bundle {
 public:
  /*! \brief Maps \p path read-only and validates all of it. Throws BundleError (kIo when it
   *  cannot be read; otherwise see the checks above); nothing stays mapped on failure. */
  static Bundle open(const std::string& path);
  /*! \brief Validates \p size bytes at \p data, which must outlive the Bundle and are not
   *  copied (a bundle embedded in the executable; align it to kBlobAlign for aligned
   *  cubins). \p name stands for the file in messages. */
  static Bundle from_memory(const void* data, size_t size, std::string name);

  Bundle(Bundle&& other) noexcept;
  Bundle& operator=(Bundle&& other) noexcept;
  Bundle(const Bundle&) = delete;
  Bundle& operator=(const Bundle&) = delete;
  ~Bundle();

  /*! \brief The path, or the name given to from_memory. */
  const std::string& name() const noexcept { return name_; }
  /*! \brief The bundle's bytes (the mapping). */
  const char* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  uint32_t format_version() const noexcept { return version_; }

  const ProducerView& producer() const noexcept { return view_.producer; }
  const std::vector<KernelView>& kernels() const noexcept { return view_.kernels; }
  const std::vector<EntryView>& entries() const noexcept { return view_.entries; }
  const std::vector<RecordView>& records() const noexcept { return view_.records; }
  /*! \brief All of the above in one struct. */
  const ContentsView& view() const noexcept { return view_; }
  /*! \brief An owning copy of the contents (copies the cubins, after check_blobs()). */
  Contents contents() const;

  /*! \brief Checks entry \p entry's cubin against the CRC-32 its entry stores (format
   *  version 2); once it passed, later calls for the entry return at once. A no-op for
   *  version 1, whose blobs were checked at open. Thread-safe. Throws BundleError kCorrupt
   *  naming the bundle and the entry when the bytes differ. */
  void check_cubin(size_t entry) const { check_blob(entry, false); }
  /*! \brief As check_cubin, for the entry's PTX. */
  void check_ptx(size_t entry) const { check_blob(entry, true); }
  /*! \brief Every entry's cubin and PTX, then the CRC-32 of the whole blobs section (its
   *  padding included), as opening a version 1 file does: for tools, which read every blob.
   *  Throws as check_cubin, or naming the section. */
  void check_blobs() const;

 private:
  Bundle() = default;
  void parse();  // validates the bytes into view_ (all but a version 2 file's blobs)
  void release() noexcept;
  void check_blob(size_t entry, bool ptx) const;

  std::string name_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // what open() mapped, unmapped by the destructor
  size_t mapping_size_ = 0;
  uint32_t version_ = 0;
  ContentsView view_;
  // Version 2: per entry, bit 1 once its cubin passed check_cubin, bit 2 its PTX; one more
  // slot after the entries, bit 1 once the blobs section's CRC passed check_blobs. Null for
  // version 1. Atomic: a check may run on any thread, and a race only checks twice.
  std::unique_ptr<std::atomic<uint8_t>[]> checked_;
};

}  // namespace triton_embed::detail::bundle
