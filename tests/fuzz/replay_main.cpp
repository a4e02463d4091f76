// Runs a fuzz harness over files (a corpus) without libFuzzer: what ctest does
// with the committed corpora under tests/fuzz/corpus/, so the harnesses and
// every past finding keep being exercised by `make test`.
//   usage: fuzz_<name> FILE|DIR...
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {
int run_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<char> v((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(v.data()), v.size());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st {};
    if (::stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "no such file or directory: %s\n", argv[i]);
      return 1;
    }
    if (S_ISDIR(st.st_mode)) {
      DIR* d = ::opendir(argv[i]);
      while (dirent* e = d ? ::readdir(d) : nullptr) {
        if (e->d_name[0] == '.') continue;
        if (run_file(std::string(argv[i]) + "/" + e->d_name)) return 1;
        ++n;
      }
      if (d) ::closedir(d);
    } else {
      if (run_file(argv[i])) return 1;
      ++n;
    }
  }
  std::printf("replayed %zu inputs\n", n);
  return n ? 0 : 1;
}
