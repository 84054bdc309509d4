#include "bundle/format.h"

#include "bundle/file_layout.h"

#ifndef TRITON_EMBED_VERSION_STRING
#error "TRITON_EMBED_VERSION_STRING must be defined (CMakeLists.txt sets it on this file)"
#endif

namespace triton_embed::detail::bundle {
namespace {

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

std::string own(std::string_view s) { return std::string(s); }

Kernel own(const KernelView& k) {
  return {own(k.module),  own(k.name),   own(k.source_hash),
          own(k.wrapper), own(k.params), own(k.layers)};
}

BundleEntry own(const EntryView& v) {
  BundleEntry e;
  e.kernel = v.kernel;
  e.target = v.target;
  e.options = own(v.options);
  e.key_words = v.key_words;
  entry_fields(e, v, [](const char*, auto& to, const auto& from) { to = from; });
  return e;
}

Record own(const RecordView& r) { return {r.kind, r.kernel, r.key_words, own(r.payload)}; }

}  // namespace triton_embed::detail::bundle
