#pragma once

// The _fast module's launch counts (stats(), triton_embed.fast_path_stats()), defined with the
// module (module.cc).

#include <atomic>
#include <cstdint>

namespace triton_embed::detail {

// How many launches took each path (triton_embed.fast_path_stats()).
extern std::atomic<uint64_t> g_fast_calls;
extern std::atomic<uint64_t> g_triton_calls;
// Launches whose grid callable's program gave the grid in place of calling it.
extern std::atomic<uint64_t> g_grid_programs;

}  // namespace triton_embed::detail
