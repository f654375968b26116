// A main() for a fuzz target built without libFuzzer: runs LLVMFuzzerTestOneInput once on
// every file named on the command line or found (recursively) in a directory named there, so
// the seed corpus and every crash added to it are a regression test under any compiler.
// Exits 1 when an argument cannot be read or names no file; a crashing input aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool ReadFile(const std::filesystem::path& path, std::string& contents) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  contents.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return !file.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path argument(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(argument, error)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(argument)) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else {
      inputs.push_back(argument);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s CORPUS_DIRECTORY_OR_FILE...: no input found\n", argv[0]);
    return 1;
  }
  std::string contents;
  for (const std::filesystem::path& input : inputs) {
    if (!ReadFile(input, contents)) {
      std::fprintf(stderr, "cannot read %s\n", input.c_str());
      return 1;
    }
    std::fprintf(stderr, "running %s (%zu bytes)\n", input.c_str(), contents.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(contents.data()), contents.size());
  }
  std::fprintf(stderr, "ran %zu inputs\n", inputs.size());
  return 0;
}
