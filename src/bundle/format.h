#pragma once

// Kernel bundles: one file that holds compiled Triton kernels and the tuning decisions made
// for them, so a C++ program can launch them with no Python (issue 10). This header is what a
// bundle holds (plain structs) and the little that reading and writing share (CRC-32, the
// library's version, a target's text); the container's on-disk layout is file_layout.h's,
// reading one file_reader.h's (Bundle: a read-only mapping, validated before it is returned),
// writing one file_writer.h's, merging and listing merge.h's. It knows nothing of Python,
// torch or the kernel registry.

#include <array>
#include <cstddef>
#include <cstdint>
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
using BundleEntry = BasicEntry<std::string>;
using Record = BasicRecord<std::string>;
/*! \brief A bundle's contents to write (owning). */
using Contents = BasicContents<std::string>;

using ProducerView = BasicProducer<std::string_view>;
using KernelView = BasicKernel<std::string_view>;
using EntryView = BasicEntry<std::string_view>;
using RecordView = BasicRecord<std::string_view>;
/*! \brief A bundle's contents as read (views into the bundle's bytes). */
using ContentsView = BasicContents<std::string_view>;

/*! \brief Owning copies of what a bundle holds (Bundle::contents, merge). */
std::string own(std::string_view s);
Kernel own(const KernelView& k);
BundleEntry own(const EntryView& v);
Record own(const RecordView& r);

/*! \brief The CRC-32 (IEEE 802.3, as zlib's \c crc32) of \p size bytes at \p data: what the
 *  header and the section table store. */
TRITON_EMBED_API uint32_t crc32(const void* data, size_t size);

/*! \brief This library's version, as bundles record it. */
TRITON_EMBED_API const char* library_version();

/*! \brief "cuda:90", or "cuda:90:64" for a warp size other than 32. */
TRITON_EMBED_API std::string target_text(uint32_t target);

}  // namespace triton_embed::detail::bundle
