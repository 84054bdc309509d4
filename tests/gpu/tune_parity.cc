// The C++ side of the autotune parity test; tests/gpu/tune_parity.py drives it and checks
// what it writes against Python's Triton.
//
//   tune_parity cases DIR DEVICE NAME...
//       For each case NAME: reads DIR/NAME.args (key=value lines: the case's kind and sizes)
//       and its fp16 inputs DIR/NAME.<input>.bin (row-major), launches the autotuned kernel
//       with triton_embed::launch on DEVICE ("cuda": tuned by the kernel's Autotuner on the
//       first launch; "cpu": Triton's interpreter, no tuning), and writes the outputs
//       DIR/NAME.<output>.cpp.bin and DIR/NAME.cpp.json: the launch arguments and grid, the
//       tuning key, the best configuration, every configuration's timings, from_cache, and
//       the hash of the kernel that ran.
//   tune_parity cached DIR TAG N
//       Launches te_tune_kernels.cached_kernel (cache_results=True) on N random floats on the
//       GPU and writes DIR/cached_TAG.cpp.json: the tuning result and whether out == x * x.
//       Run with a TRITON_CACHE_DIR that Python shares (the disk-cache round trip).

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <triton_embed/autotune.h>
#include <triton_embed/jit.h>
#include <triton_embed/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace te = triton_embed;
using namespace triton_embed::literals;

namespace {

// ---- a minimal JSON writer ----------------------------------------------------------------

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Exact (17 significant digits); Python's json reads Infinity and NaN.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

// An object under construction: add(key, already-encoded JSON value).
struct Obj {
  std::vector<std::pair<std::string, std::string>> items;
  Obj& add(const std::string& k, const std::string& json) {
    items.emplace_back(k, json);
    return *this;
  }
  Obj& str(const std::string& k, const std::string& v) { return add(k, quote(v)); }
  Obj& num(const std::string& k, double v) { return add(k, number(v)); }
  Obj& integer(const std::string& k, int64_t v) { return add(k, std::to_string(v)); }
  Obj& boolean(const std::string& k, bool v) { return add(k, v ? "true" : "false"); }
  std::string json() const {
    std::string out = "{";
    for (size_t i = 0; i < items.size(); ++i) {
      out += (i ? ", " : "") + quote(items[i].first) + ": " + items[i].second;
    }
    return out + "}";
  }
};

std::string array(const std::vector<std::string>& elems) {
  std::string out = "[";
  for (size_t i = 0; i < elems.size(); ++i) out += (i ? ", " : "") + elems[i];
  return out + "]";
}

std::string config_json(const te::TunedConfig& c) {
  Obj kwargs;
  for (const auto& kv : c.kwargs) kwargs.str(kv.first, kv.second);  // Python repr of the value
  return Obj()
      .str("str", c.str)
      .add("kwargs", kwargs.json())
      .integer("num_warps", c.num_warps)
      .integer("num_stages", c.num_stages)
      .integer("num_ctas", c.num_ctas)
      .integer("maxnreg", c.maxnreg)
      .json();
}

// What tuning chose (null when the launch did not tune: the interpreter).
void add_tuning(Obj& out, const te::TuningResult* r) {
  out.boolean("tuned", r != nullptr);
  if (r == nullptr) return;
  std::vector<std::string> timings;
  for (const te::ConfigTiming& t : r->timings) {
    std::vector<std::string> ms;
    for (double v : t.ms) ms.push_back(number(v));
    timings.push_back(array({quote(t.config.str), array(ms)}));
  }
  out.str("key", r->key)
      .add("best", config_json(r->best))
      .add("timings", array(timings))
      .boolean("from_cache", r->from_cache)
      .num("seconds", r->seconds);
}

void add_kernel(Obj& out, const te::CompiledKernel& k) {
  out.str("hash", k.hash())
      .str("kernel_name", k.name())
      .integer("compiled_num_warps", k.num_warps())
      .integer("compiled_num_stages", k.num_stages())
      .integer("shared", k.shared());
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text << "\n";
  if (!f) throw std::runtime_error("cannot write " + path);
}

// ---- inputs and outputs -------------------------------------------------------------------

std::map<std::string, std::string> read_args(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(f, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

int64_t int_arg(const std::map<std::string, std::string>& a, const std::string& k) {
  const auto it = a.find(k);
  if (it == a.end()) throw std::runtime_error("missing argument " + k);
  return std::stoll(it->second);
}

std::string str_arg(const std::map<std::string, std::string>& a, const std::string& k) {
  const auto it = a.find(k);
  if (it == a.end()) throw std::runtime_error("missing argument " + k);
  return it->second;
}

// A row-major tensor of `shape` and `dtype` read from `path`, on `device`.
at::Tensor read_tensor(const std::string& path, at::IntArrayRef shape, at::ScalarType dtype,
                       at::Device device) {
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(dtype));
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw std::runtime_error("cannot read " + path);
  const auto size = static_cast<size_t>(f.tellg());
  if (size != t.nbytes()) {
    throw std::runtime_error(path + ": " + std::to_string(size) + " bytes, expected " +
                             std::to_string(t.nbytes()));
  }
  f.seekg(0);
  f.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(size));
  return t.to(device);
}

// Writes `t` row-major to DIR/NAME.KEY.cpp.bin; returns its description for the JSON.
std::string write_tensor(const std::string& dir, const std::string& name, const std::string& key,
                         const at::Tensor& t) {
  const at::Tensor c = t.contiguous().cpu();
  const std::string file = name + "." + key + ".cpp.bin";
  std::ofstream f(dir + "/" + file, std::ios::binary);
  f.write(static_cast<const char*>(c.const_data_ptr()), static_cast<std::streamsize>(c.nbytes()));
  if (!f) throw std::runtime_error("cannot write " + dir + "/" + file);
  std::vector<std::string> shape;
  for (int64_t s : c.sizes()) shape.push_back(std::to_string(s));
  return Obj()
      .str("file", file)
      .str("dtype", std::string(c10::toString(c.scalar_type())))
      .add("shape", array(shape))
      .json();
}

// Outputs start as NaN, so an element the kernel leaves unwritten cannot pass a check.
at::Tensor nan_tensor(at::IntArrayRef shape, at::ScalarType dtype, at::Device device) {
  return at::full(shape, std::nan(""), at::TensorOptions().dtype(dtype).device(device));
}

void synchronize(at::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

// ---- the cases ------------------------------------------------------------------------------

int64_t config_int(const te::TunedConfig& c, const std::string& name) {
  for (const auto& kv : c.kwargs) {
    if (kv.first == name) return std::stoll(kv.second);
  }
  throw std::runtime_error("config '" + c.str + "' has no " + name);
}

// c = ACTIVATION(a @ b) with pykernels.matmul.matmul_kernel (autotuned on M, N, K).
std::string run_matmul(const std::string& dir, const std::string& name,
                       const std::map<std::string, std::string>& a, at::Device device) {
  static const te::JitFunction mm("pykernels.matmul", "matmul_kernel");
  const int64_t M = int_arg(a, "M"), N = int_arg(a, "N"), K = int_arg(a, "K");
  const std::string activation = str_arg(a, "activation");
  const at::Tensor A = read_tensor(dir + "/" + name + ".a.bin", {M, K}, at::kHalf, device);
  const at::Tensor B = read_tensor(dir + "/" + name + ".b.bin", {K, N}, at::kHalf, device);
  at::Tensor C = nan_tensor({M, N}, at::kHalf, device);
  auto grid = [&](const te::Meta& m) {
    return te::Grid(te::cdiv(M, m["BLOCK_M"]) * te::cdiv(N, m["BLOCK_N"]));
  };
  // As Python's matmul_kernel[grid](a, b, c, M, N, K, strides..., ACTIVATION=...).
  te::launch(mm, grid, A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
             C.stride(0), C.stride(1), "ACTIVATION"_a = activation.c_str());
  synchronize(device);

  Obj out;
  out.str("case", name).str("device", device.str()).str("kernel", "pykernels.matmul.matmul_kernel");
  Obj args;
  args.integer("M", M).integer("N", N).integer("K", K);
  args.integer("stride_am", A.stride(0)).integer("stride_ak", A.stride(1));
  args.integer("stride_bk", B.stride(0)).integer("stride_bn", B.stride(1));
  args.integer("stride_cm", C.stride(0)).integer("stride_cn", C.stride(1));
  out.add("args", args.json()).add("constexprs", Obj().str("ACTIVATION", activation).json());
  const te::TuningResult* r = nullptr;
  if (device.is_cuda()) {
    r = mm.tuning_result(A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                         C.stride(0), C.stride(1), "ACTIVATION"_a = activation.c_str());
    if (r == nullptr) throw std::runtime_error(name + ": no tuning result after the launch");
    // The key is tuned: prepare() gives the chosen configuration's kernel without tuning.
    add_kernel(
        out, mm.prepare(grid, A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                        C.stride(0), C.stride(1), "ACTIVATION"_a = activation.c_str()));
    out.add("grid", array({std::to_string(te::cdiv(M, config_int(r->best, "BLOCK_M")) *
                                          te::cdiv(N, config_int(r->best, "BLOCK_N")))}));
  }
  add_tuning(out, r);
  out.add("outputs", Obj().add("c", write_tensor(dir, name, "c", C)).json());
  return out.json();
}

// Causal attention forward with pykernels.attention.attn_fwd_kernel (autotuned on N_CTX,
// HEAD_DIM): o [Z, H, N_CTX, HEAD_DIM] fp16 and m, the logsumexp [Z * H, N_CTX] fp32.
std::string run_attention(const std::string& dir, const std::string& name,
                          const std::map<std::string, std::string>& a, at::Device device) {
  static const te::JitFunction attn("pykernels.attention", "attn_fwd_kernel");
  const int64_t Z = int_arg(a, "Z"), H = int_arg(a, "H"), N_CTX = int_arg(a, "N_CTX");
  const int64_t D = int_arg(a, "HEAD_DIM");
  const bool causal = int_arg(a, "causal") != 0;
  const double sm_scale = std::stod(str_arg(a, "sm_scale"));  // Python's repr: exact
  const at::Tensor q =
      read_tensor(dir + "/" + name + ".q.bin", {Z, H, N_CTX, D}, at::kHalf, device);
  const at::Tensor k =
      read_tensor(dir + "/" + name + ".k.bin", {Z, H, N_CTX, D}, at::kHalf, device);
  const at::Tensor v =
      read_tensor(dir + "/" + name + ".v.bin", {Z, H, N_CTX, D}, at::kHalf, device);
  at::Tensor o = nan_tensor({Z, H, N_CTX, D}, at::kHalf, device);
  at::Tensor m = nan_tensor({Z * H, N_CTX}, at::kFloat, device);
  auto grid = [&](const te::Meta& meta) {
    return te::Grid(te::cdiv(N_CTX, meta["BLOCK_M"]), Z * H);
  };
  // As Python's attn_fwd_kernel[grid](q, k, v, sm_scale, m, o, *strides, Z, H, N_CTX,
  // HEAD_DIM=D, CAUSAL=causal).
  auto call = [&](auto&& f) -> decltype(auto) {
    return f(q, k, v, sm_scale, m, o, q.stride(0), q.stride(1), q.stride(2), q.stride(3),
             k.stride(0), k.stride(1), k.stride(2), k.stride(3), v.stride(0), v.stride(1),
             v.stride(2), v.stride(3), o.stride(0), o.stride(1), o.stride(2), o.stride(3), Z, H,
             N_CTX, "HEAD_DIM"_a = D, "CAUSAL"_a = causal);
  };
  call([&](const auto&... args) { te::launch(attn, grid, args...); });
  synchronize(device);

  Obj out;
  out.str("case", name)
      .str("device", device.str())
      .str("kernel", "pykernels.attention.attn_fwd_kernel");
  Obj args;
  args.num("sm_scale", sm_scale).integer("Z", Z).integer("H", H).integer("N_CTX", N_CTX);
  const char* names[4][4] = {{"stride_qz", "stride_qh", "stride_qm", "stride_qk"},
                             {"stride_kz", "stride_kh", "stride_kn", "stride_kk"},
                             {"stride_vz", "stride_vh", "stride_vk", "stride_vn"},
                             {"stride_oz", "stride_oh", "stride_om", "stride_on"}};
  const at::Tensor* ts[4] = {&q, &k, &v, &o};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) args.integer(names[i][j], ts[i]->stride(j));
  }
  out.add("args", args.json())
      .add("constexprs", Obj().integer("HEAD_DIM", D).boolean("CAUSAL", causal).json());
  const te::TuningResult* r = nullptr;
  if (device.is_cuda()) {
    r = call([&](const auto&... args) { return attn.tuning_result(args...); });
    if (r == nullptr) throw std::runtime_error(name + ": no tuning result after the launch");
    add_kernel(out, call([&](const auto&... args) -> const te::CompiledKernel& {
                 return attn.prepare(grid, args...);
               }));
    out.add("grid", array({std::to_string(te::cdiv(N_CTX, config_int(r->best, "BLOCK_M"))),
                           std::to_string(Z * H)}));
  }
  add_tuning(out, r);
  out.add("outputs", Obj()
                         .add("o", write_tensor(dir, name, "o", o))
                         .add("m", write_tensor(dir, name, "m", m))
                         .json());
  return out.json();
}

int run_cases(const std::string& dir, const std::string& device_name,
              const std::vector<std::string>& names) {
  const at::Device device(device_name);
  if (device.is_cuda() && !torch::cuda::is_available()) throw std::runtime_error("no GPU");
  for (const std::string& name : names) {
    const auto args = read_args(dir + "/" + name + ".args");
    const std::string kind = str_arg(args, "kind");
    std::string json;
    if (kind == "matmul") {
      json = run_matmul(dir, name, args, device);
    } else if (kind == "attention") {
      json = run_attention(dir, name, args, device);
    } else {
      throw std::runtime_error(name + ": unknown kind '" + kind + "'");
    }
    write_file(dir + "/" + name + ".cpp.json", json);
    std::printf("tune_parity: %s done\n", name.c_str());
    std::fflush(stdout);
  }
  return 0;
}

// ---- the disk-cache round trip --------------------------------------------------------------

int run_cached(const std::string& dir, const std::string& tag, int64_t n) {
  if (!torch::cuda::is_available()) throw std::runtime_error("no GPU");
  static const te::JitFunction cached("te_tune_kernels", "cached_kernel");
  at::manual_seed(0);
  const at::Tensor x = at::randn({n}, at::TensorOptions().device(at::kCUDA));
  at::Tensor out = nan_tensor({n}, at::kFloat, at::kCUDA);
  auto grid = [&](const te::Meta& m) { return te::Grid(te::cdiv(n, m["BLOCK"])); };
  te::launch(cached, grid, x, out, n);
  torch::cuda::synchronize();
  const te::TuningResult* r = cached.tuning_result(x, out, n);
  if (r == nullptr) throw std::runtime_error("cached_kernel: no tuning result after the launch");
  Obj o;
  o.str("tag", tag).integer("n", n).boolean("output_ok", at::equal(out, x * x));
  add_tuning(o, r);
  write_file(dir + "/cached_" + tag + ".cpp.json", o.json());
  std::printf("tune_parity: cached %s: %s (from_cache %d)\n", tag.c_str(), r->best.str.c_str(),
              static_cast<int>(r->from_cache));
  return 0;
}

void init() {
  te::RuntimeOptions opts;
  opts.python_paths.push_back(TE_TEST_KERNELS);
  te::initialize(opts);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "cases" && argc > 4) {
      init();
      return run_cases(argv[2], argv[3], std::vector<std::string>(argv + 4, argv + argc));
    }
    if (mode == "cached" && argc == 5) {
      init();
      return run_cached(argv[2], argv[3], std::stoll(argv[4]));
    }
    std::fprintf(stderr, "usage: %s cases DIR cuda|cpu NAME... | cached DIR TAG N\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_parity: error: %s\n", e.what());
    return 1;
  }
}
