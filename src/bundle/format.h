#pragma once

// Kernel bundles: one file that holds compiled Triton kernels and the tuning decisions made
// for them, so a C++ program can launch them with no Python (issue 10). This header is the
// container format only: what a bundle holds (plain structs), writing one (serialize,
// write_file), reading one (Bundle: a read-only mapping, validated before it is returned),
// merging and listing. It knows nothing of Python, torch or the kernel registry.
//
// On-disk layout, format version 2 (version 1 differs only in its entries: 216 bytes, without
// the CRC-32s of the entry's cubin and PTX, and its blobs are checked at open; it is still
// read). Every integer is little-endian; offsets are from the start of the file; "ref" is
// {u64 offset, u64 size} into the strings section (text and opaque bytes) or the blobs section
// (cubin, ptx), relative to that section's start.
//
//   header (128 bytes)
//     0   u8[8] magic "\x89TEB\r\n\x1a\n" (a non-ASCII first byte and CR LF / ^Z / LF catch
//               a file copied in text mode)
//     8   u32   format version (2)
//     12  u32   byte-order mark 0x01020304 (bytes 04 03 02 01)
//     16  u64   file size: the exact size of the whole file
//     24  u32   header size (128)     28  u32 section count (7)
//     32  u32   section table entry size (40)
//     36  u32   CRC-32 of the section table
//     40  u32   flags (0)             44  u32 reserved (0)
//     48  ref   library version       64  ref Triton version     80  ref creation note
//     96  u8[28] reserved (0)
//     124 u32   CRC-32 of header bytes 0..123
//   section table (7 entries of 40 bytes, at offset 128)
//     0 u32 kind   4 u32 item size   8 u64 offset   16 u64 extent   24 u64 count
//     32 u32 CRC-32 of the section's extent   36 u32 reserved (0)
//   sections, in this order, one of each, tiling the rest of the file with no gap: each starts
//   where the one before ends (the first right after the table) and the last ends at the file
//   size. An extent includes the zero padding after the section's content (to 8 bytes, and to
//   256 before the blobs), so the header CRC, the table CRC and the seven section CRCs
//   together cover every byte of the file.
//     1 strings  (item 1, count = bytes used)    text and opaque bytes, deduplicated
//     2 words    (item 8)                        u64 cache-key words
//     3 tma      (item 48)                       TMA descriptor metadata records
//     4 kernels  (item 96)                       6 refs: module, name, source_hash, wrapper,
//                                                params, layers
//     5 entries  (item 224; 216 in version 1)    see entry_layout in format.cc; version 2
//                                                adds 216 u32 cubin CRC-32, 220 u32 ptx CRC-32
//     6 records  (item 40)                       u32 kind, u32 kernel, u64 key first,
//                                                u64 key count, ref payload
//     7 blobs    (item 1, count = bytes used)    cubins and ptx; the section and every blob
//                                                start at a multiple of 256 in the file
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

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tma_meta.h"
#include "triton_embed/detail/export.h"
#include "triton_embed/detail/kernel_metadata.h"
#include "triton_embed/error.h"

namespace triton_embed::detail::bundle {

/*! \brief The format version this library writes and the newest it reads. */
inline constexpr uint32_t kFormatVersion = 2;
/*! \brief Cubins and PTX start at a multiple of this many bytes in the file, so they can be
 *  given to \c cuModuleLoadData straight from the mapping. */
inline constexpr size_t kBlobAlign = 256;
/*! \brief The size of the fixed header. */
inline constexpr size_t kHeaderSize = 128;

/*! \brief Who wrote the bundle. \c Bytes is \c std::string (to write) or \c std::string_view
 *  (read: views into the bundle's bytes). */
template <class Bytes>
struct BasicProducer {
  Bytes library_version;  // triton_embed's version
  Bytes triton_version;   // free text, e.g. "3.8.0"
  Bytes note;             // free text: what built it, when
};

/*! \brief A kernel's identity and what the integration needs to bind its calls. */
template <class Bytes>
struct BasicKernel {
  Bytes module;       // e.g. "pykernels.vector"
  Bytes name;         // e.g. "add_kernel"
  Bytes source_hash;  // of the kernel's source (Triton's JITFunction cache_key)
  Bytes wrapper;      // "", "autotune" or "heuristics"
  Bytes params;       // opaque: the parameter table
  Bytes layers;       // opaque: the heuristics / autotune layers
};

/*! \brief One compiled kernel: which kernel, for which target, options and cache key, with
 *  the compiled kernel's metadata (\c meta: its one definition, kernel_metadata.h, the cubin
 *  included) and what else a launch reads of it. */
template <class Bytes>
struct BasicEntry {
  uint32_t kernel = 0;  // index into the kernels
  uint32_t target = 0;  // arch | warp_size << 16, e.g. 90 | 32 << 16
  Bytes options;        // canonical text of the Triton options, "num_warps=4;num_stages=3"
  std::vector<uint64_t> key_words;  // the cache key
  BasicKernelMetadata<Bytes> meta;  // hash, entry point, signature, cubin, ptx, launch metadata
  int32_t num_runtime_params = 0;
  int32_t triton_version = 0;  // major * 100 + minor
  std::array<int32_t, 3> cluster_dims = {};
  bool oversized_shared_mode = false;
  std::vector<TmaMeta> tma;  // one per tensor-descriptor leaf, in order
  // The CRC-32s of meta.cubin and meta.ptx as a version 2 file stores them (0 when read from
  // version 1). Read only: serialize computes its own, and entry_fields leaves them out.
  uint32_t cubin_crc = 0, ptx_crc = 0;
};

/*! \brief Calls f(name, a.field, b.field) for every field of two entries but their identity
 *  (kernel, target, options, key words), once each, in the order merge compares them: the
 *  metadata's (metadata_fields), then the entry's own. What Bundle::contents() copies and
 *  merge() compares. */
template <class A, class B, class F>
void entry_fields(A& a, B& b, F&& f) {
  metadata_fields(a.meta, b.meta, f);
  f("num_runtime_params", a.num_runtime_params, b.num_runtime_params);
  f("Triton version", a.triton_version, b.triton_version);
  f("cluster dims", a.cluster_dims, b.cluster_dims);
  f("oversized_shared_mode", a.oversized_shared_mode, b.oversized_shared_mode);
  f("TMA metadata", a.tma, b.tma);
}

/*! \brief A compiled kernel's metadata from a bundle entry, owned (its cubin only
 *  \c with_cubin: left out, the driver compiles the PTX). */
TRITON_EMBED_API KernelMetadata metadata(const BasicEntry<std::string_view>& e, bool with_cubin);

/*! \brief A tuning decision or a heuristic's result for one kernel and key; \c kind and
 *  \c payload are the integration's. */
template <class Bytes>
struct BasicRecord {
  uint32_t kind = 0;
  uint32_t kernel = 0;  // index into the kernels
  std::vector<uint64_t> key_words;
  Bytes payload;
};

/*! \brief Everything a bundle holds. */
template <class Bytes>
struct BasicContents {
  BasicProducer<Bytes> producer;
  std::vector<BasicKernel<Bytes>> kernels;
  std::vector<BasicEntry<Bytes>> entries;
  std::vector<BasicRecord<Bytes>> records;
};

using Producer = BasicProducer<std::string>;
using Kernel = BasicKernel<std::string>;
using Entry = BasicEntry<std::string>;
using Record = BasicRecord<std::string>;
/*! \brief A bundle's contents to write (owning). */
using Contents = BasicContents<std::string>;

using ProducerView = BasicProducer<std::string_view>;
using KernelView = BasicKernel<std::string_view>;
using EntryView = BasicEntry<std::string_view>;
using RecordView = BasicRecord<std::string_view>;
/*! \brief A bundle's contents as read (views into the bundle's bytes). */
using ContentsView = BasicContents<std::string_view>;

/*! \brief The CRC-32 (IEEE 802.3, as zlib's \c crc32) of \p size bytes at \p data: what the
 *  header and the section table store. */
TRITON_EMBED_API uint32_t crc32(const void* data, size_t size);

/*! \brief This library's version, as bundles record it. */
TRITON_EMBED_API const char* library_version();

/*! \brief The bundle file for \p c. Throws ValueError when an entry or record refers to a
 *  kernel that \p c does not hold. Identical strings and blobs are stored once. */
TRITON_EMBED_API std::string serialize(const Contents& c);

/*! \brief Writes serialize(c) to \p path atomically: into a temporary file next to it, then
 *  renamed over it. On failure (BundleError kIo) no temporary file is left and \p path is
 *  untouched. */
TRITON_EMBED_API void write_file(const Contents& c, const std::string& path);

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

/*! \brief The union of \p bundles: kernels deduplicated by (module, name, source_hash),
 *  entries by (kernel, target, options, key_words), records by (kernel, kind, key_words).
 *  Identical duplicates are kept once; two that share an identity but differ otherwise
 *  throw BundleError kConflict naming the kernel, the entry and both bundles. The producer
 *  is this library; its note names the inputs. Each input's blobs are checked first
 *  (Bundle::check_blobs): a damaged input is refused. */
TRITON_EMBED_API Contents merge(const std::vector<const Bundle*>& bundles);

/*! \brief What \p b holds, for people: the producer, then per kernel its identity and per
 *  entry its target ("cuda:90"), options, hash, key length, signature and cubin / ptx
 *  sizes, and its records' count. Ends with a newline. Checks the blobs first
 *  (Bundle::check_blobs): a damaged bundle throws, as opening a version 1 file does. */
TRITON_EMBED_API std::string describe(const Bundle& b);

/*! \brief "cuda:90", or "cuda:90:64" for a warp size other than 32. */
TRITON_EMBED_API std::string target_text(uint32_t target);

}  // namespace triton_embed::detail::bundle
