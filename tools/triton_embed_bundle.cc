// triton-embed-bundle: what a kernel bundle holds, and merging bundles.
//
//   triton-embed-bundle list FILE...          print what each bundle holds
//   triton-embed-bundle merge -o OUT IN...    write the union of IN... to OUT
//
// Exit status: 0 done, 1 a bundle could not be read, merged or written (the message on
// stderr says which and why), 2 bad usage. A subcommand is one row of kCommands.

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bundle/format.h"
#include "triton_embed/error.h"

namespace bundle = triton_embed::detail::bundle;

namespace {

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

// Thrown for a bad command line; main prints it with the usage.
struct UsageError {
  std::string what;
};

int list(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError{"list: give at least one bundle file"};
  for (size_t i = 0; i < args.size(); ++i) {
    const bundle::Bundle b = bundle::Bundle::open(args[i]);
    if (i > 0) std::cout << "\n";
    std::cout << bundle::describe(b);
  }
  return kOk;
}

int merge(const std::vector<std::string>& args) {
  std::string out;
  std::vector<std::string> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o") {
      if (i + 1 == args.size()) throw UsageError{"merge: -o needs a file name"};
      if (!out.empty()) throw UsageError{"merge: -o given twice"};
      out = args[++i];
    } else {
      inputs.push_back(args[i]);
    }
  }
  if (out.empty()) throw UsageError{"merge: give the output file with -o OUT"};
  if (inputs.empty()) throw UsageError{"merge: give at least one input bundle"};
  std::vector<bundle::Bundle> bundles;
  bundles.reserve(inputs.size());
  std::vector<const bundle::Bundle*> ptrs;
  for (const std::string& in : inputs) {
    bundles.push_back(bundle::Bundle::open(in));
    ptrs.push_back(&bundles.back());
  }
  const bundle::Contents merged = bundle::merge(ptrs);
  bundle::write_file(merged, out);
  std::cout << "wrote " << out << ": " << merged.kernels.size() << " kernels, "
            << merged.entries.size() << " entries, " << merged.records.size()
            << " records from " << inputs.size() << " bundles\n";
  return kOk;
}

struct Command {
  const char* name;
  const char* usage;
  int (*run)(const std::vector<std::string>& args);
};

constexpr Command kCommands[] = {
    {"list", "list FILE...          print what each bundle holds", list},
    {"merge", "merge -o OUT IN...    write the union of the bundles IN... to OUT", merge},
};

void usage(std::ostream& os) {
  os << "usage: triton-embed-bundle COMMAND ARGS...\n";
  for (const Command& c : kCommands) os << "  triton-embed-bundle " << c.usage << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(std::cerr);
    return kUsage;
  }
  const std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    usage(std::cout);
    return kOk;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.run(args);
    } catch (const UsageError& e) {
      std::cerr << "triton-embed-bundle: " << e.what << "\n";
      usage(std::cerr);
      return kUsage;
    } catch (const triton_embed::Error& e) {
      std::cerr << "triton-embed-bundle: " << e.what() << "\n";
      return kFailed;
    }
  }
  std::cerr << "triton-embed-bundle: unknown command '" << name << "'\n";
  usage(std::cerr);
  return kUsage;
}
