#pragma once

// The on-disk layout of a bundle file, for the code that reads and writes its bytes
// (file_reader.cc, file_writer.cc; format.cc's crc32): the constants, little-endian integers,
// and each fixed-size item's fields with their offsets. What a bundle holds is format.h's.
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
//     5 entries  (item 224; 216 in version 1)    see entry_layout below; version 2
//                                                adds 216 u32 cubin CRC-32, 220 u32 ptx CRC-32
//     6 records  (item 40)                       u32 kind, u32 kernel, u64 key first,
//                                                u64 key count, ref payload
//     7 blobs    (item 1, count = bytes used)    cubins and ptx; the section and every blob
//                                                start at a multiple of 256 in the file

#include <cstddef>
#include <cstdint>
#include <string>

#include "bundle/format.h"

namespace triton_embed::detail::bundle {

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

// ---------------------------------------------------------------------------------------
// Little-endian encoding, independent of the host's byte order.
inline uint32_t rd32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
}
inline uint64_t rd64(const char* p) { return uint64_t{rd32(p)} | uint64_t{rd32(p + 4)} << 32; }
inline void wr32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
inline void wr64(char* p, uint64_t v) {
  wr32(p, static_cast<uint32_t>(v));
  wr32(p + 4, static_cast<uint32_t>(v >> 32));
}

inline std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
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

}  // namespace triton_embed::detail::bundle
