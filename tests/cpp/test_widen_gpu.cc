// Record once, serve every shape, on the GPU (issue 37; the cases: widen_gpu_cases.h). Four
// processes, CTest's widen_gpu_* (each skips without a GPU):
//   record  (test_widen_gpu_jit, WidenGpuRecord): the JIT runs each pattern at its two
//           recorded shapes (tuning the autotuned ones; a rule declared for the attention
//           only), checked against torch, and writes the bundle;
//   widen   `triton-embed-bundle widen` (a rule for mm_kernel, rope_kernel at BATCH 1 to 8);
//   serve   (test_widen_gpu_serve: the runtime and libtorch, no Python): every other shape,
//           launched from the widened bundle as an application launches it, each checked
//           against torch; it writes each output and the entry and config that served it;
//   check   (test_widen_gpu_jit, WidenGpuCheck): the JIT compiles each served entry again
//           from its key (the same hash: the bundle holds the JIT's code), launches that very
//           entry with that config on the same inputs, and compares the output bit for bit.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <triton_embed/bundle.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bundle/file_reader.h"
#include "testing/testing.h"
#include "widen_gpu_cases.h"

#ifdef TE_WIDEN_GPU_JIT
#include "core/jit_internal.h"
#include "core/key_values.h"
#endif

namespace te = triton_embed;
namespace tt = triton_embed::detail::testing;
namespace tb = triton_embed::detail::bundle;
using namespace te_widen_gpu;

namespace {

std::string dir() {
  const char* d = std::getenv("TE_BUNDLE_DIR");
  return std::string(d != nullptr ? d : "/tmp") + "/widen_gpu";
}

class WidenGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!te::cuda_available()) GTEST_SKIP() << "no usable GPU";
  }
};

// Launches the case as an application does; the largest error against torch, relative to its
// scale.
double run_checked(const Case& c, Inputs& in) {
  call(c, in, [](const te::JitFunction& k, const auto& grid, const auto&... args) {
    te::launch(k, grid, args...);
  });
  const at::Tensor want = reference(c, in);
  const at::Tensor got = output(in).to(at::kFloat).view(want.sizes());
  return ((got - want).abs().max() / (want.abs().max() + 1e-6)).item<double>();
}

std::string hex_words(const std::vector<uint64_t>& w) {
  std::ostringstream os;
  for (size_t i = 0; i < w.size(); ++i) os << (i ? "," : "") << std::hex << w[i];
  return os.str();
}

#ifdef TE_WIDEN_GPU_JIT

class WidenGpuRecord : public WidenGpu {};

TEST_F(WidenGpuRecord, RecordTwoShapesEach) {
  ::mkdir(dir().c_str(), 0755);
  te::set_tuning_rule("pykernels.attention_tma.attn_fwd_kernel", "N_CTX=nearest");
  for (const Case& c : recorded_cases()) {
    Inputs in = make_inputs(c);
    EXPECT_LT(run_checked(c, in), tolerance(c)) << c.id();
  }
  te::write_bundle(dir() + "/recorded.teb");
}

std::vector<uint64_t> parse_words(const std::string& s) {
  std::vector<uint64_t> out;
  std::stringstream ss(s);
  std::string w;
  while (std::getline(ss, w, ',')) out.push_back(std::stoull(w, nullptr, 16));
  return out;
}

// "NAME=V;NAME=V" -> pairs.
std::vector<std::pair<std::string, int64_t>> parse_pairs(const std::string& s) {
  std::vector<std::pair<std::string, int64_t>> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ';')) {
    const size_t eq = item.find('=');
    if (eq != std::string::npos)
      out.emplace_back(item.substr(0, eq), std::stoll(item.substr(eq + 1)));
  }
  return out;
}

class WidenGpuCheck : public WidenGpu {};

TEST_F(WidenGpuCheck, CheckTheJitLaunchesTheSameEntriesBitForBit) {
  std::ifstream index(dir() + "/served.txt");
  ASSERT_TRUE(index.good()) << "run widen_gpu_serve first";
  std::map<std::string, Case> cases;
  for (const Case& c : served_cases()) cases[c.id()] = c;
  std::string line;
  size_t checked = 0;
  while (std::getline(index, line)) {
    std::istringstream ls(line);
    std::string id, hash, words, options, config;
    ls >> id >> hash >> words >> options >> config;
    ASSERT_EQ(cases.count(id), 1u) << line;
    const Case& c = cases[id];
    const bool tuned = c.pattern == "mm" || c.pattern.rfind("attn", 0) == 0;
    te::Options opts;
    for (const auto& [name, v] : parse_pairs(options == "-" ? "" : options)) opts.set(name, v);
    const te::JitFunction k = kernel_of(c);
    const te::JitFunction handle = (tuned ? k.inner() : k).with_options(opts);
    // The served entry, compiled by Triton here from the call its key names.
    te::detail::KeyCall twin;
    std::string why;
    const std::vector<uint64_t> key = parse_words(words);
    ASSERT_TRUE(te::detail::call_from_key(*te::detail::JitAccess::state(handle), key.data(),
                                          key.size(), te::detail::KeyCallKind::kAsKeyed, &twin,
                                          &why))
        << id << ": " << why;
    const te::CompiledKernel& entry = te::detail::compile(te::detail::JitAccess::state(handle),
                                                          te::detail::JitAccess::options(handle),
                                                          twin.args.data(), twin.args.size());
    EXPECT_EQ(entry.hash(), hash) << id;
    // That entry launched on the served call, at the served config.
    Inputs in = make_inputs(c);
    inner_call(c, in, parse_pairs(config == "-" ? "" : config),
               [&](const te::Grid& grid, const auto&... args) {
                 if (tt::key_words_of(handle, args...) != key) {
                   tt::serve_with_args(handle, entry, args...);
                 }
                 te::launch(handle, grid, args...);
               });
    const at::Tensor got = output(in).cpu().contiguous();
    std::ifstream f(dir() + "/" + id + ".bin", std::ios::binary);
    std::vector<char> served((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ASSERT_EQ(served.size(), static_cast<size_t>(got.nbytes())) << id;
    EXPECT_EQ(std::memcmp(served.data(), got.data_ptr(), served.size()), 0)
        << id << ": the runtime-only program's output differs from the JIT's launch of " << hash;
    ++checked;
  }
  EXPECT_EQ(checked, served_cases().size());
}

#else  // the runtime-only program

TEST_F(WidenGpu, ServeEveryOtherShape) {
  size_t rules = 0, generic = 0;
  te::set_bundle_notice_callback([&](const te::BundleNotice& n) {
    rules += n.tuning_rule ? 1 : 0;
    generic += n.less_specialised ? 1 : 0;
  });
  // The widened bundle's entries by hash: the key words of the entry that served a call (a
  // call served with fewer assumptions has a cache entry under its own key).
  const char* path = std::getenv("TRITON_EMBED_BUNDLE");
  ASSERT_NE(path, nullptr);
  const tb::Bundle widened = tb::Bundle::open(path);
  std::map<std::string, std::vector<uint64_t>> keys;
  for (const tb::EntryView& e : widened.entries()) keys.emplace(e.meta.hash, e.key_words);
  std::ofstream index(dir() + "/served.txt");
  size_t served = 0;
  for (const Case& c : served_cases()) {
    Inputs in = make_inputs(c);
    double err = 0;
    try {
      err = run_checked(c, in);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.id() << " was not served: " << e.what();
      continue;
    }
    EXPECT_LT(err, tolerance(c)) << c.id();
    ++served;
    // The entry and config that served it, and its output, for the JIT's check.
    std::string hash, words, options = "-", config = "-";
    std::string step = "compile";
    try {
      call(c, in, [&](const te::JitFunction& k, const auto&, const auto&... args) {
        const te::CompiledKernel& ck = k.compile(args...);
        hash = ck.hash();
        step = "the entry's key";
        const bool wrapped = !k.wrapper().empty();
        const te::JitFunction inner = wrapped ? k.inner() : k;
        words = keys.count(hash) != 0 ? hex_words(keys.at(hash)) : "";
        step = "the entry's options";
        std::string o;
        const te::Options entry_options = tt::entry_options(inner, ck);
        for (const auto& [name, v] : entry_options.entries()) {
          o += (o.empty() ? "" : ";") + name + "=" + std::to_string(v.as_int());
        }
        if (!o.empty()) options = o;
        step = "the tuned config";
        if (const te::TuningResult* r = wrapped ? k.tuning_result(args...) : nullptr) {
          config.clear();
          for (const auto& [name, repr] : r->best.kwargs) {
            config += (config.empty() ? "" : ";") + name + "=" + repr;
          }
        }
      });
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.id() << ": " << step << ": " << e.what();
      continue;
    }
    ASSERT_FALSE(words.empty()) << c.id();
    index << c.id() << " " << hash << " " << words << " " << options << " " << config << "\n";
    const at::Tensor out = output(in).cpu().contiguous();
    std::ofstream(dir() + "/" + c.id() + ".bin", std::ios::binary)
        .write(static_cast<const char*>(out.data_ptr()),
               static_cast<std::streamsize>(out.nbytes()));
  }
  EXPECT_EQ(served, served_cases().size());
  EXPECT_GT(rules, 0u);    // keys nobody tuned, served by the rules
  EXPECT_GT(generic, 0u);  // the 1s Triton makes constexprs, served by the twins
  std::printf(
      "served %zu of %zu shapes (%zu tuning keys by a rule, %zu by an entry with fewer "
      "assumptions)\n",
      served, served_cases().size(), rules, generic);
}

#endif

}  // namespace
