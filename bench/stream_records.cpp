// stream_records: a stream of small records through `sinew run` (the CLI,
// a separate process) against a single-threaded C++ loop doing the same
// work, in the same run: text lines (10^8 lines, about 1 GB) and fixed
// 64-byte binary records (1 GB), each XORed byte by byte with a key, from a
// file and from standard input (a pipe this program feeds), to a file. Sinew reads record batches
// (docs/io.md) and runs farm(xor) on every core; the loop is getline / xor /
// write (lines) or read / xor / write (records) through 1 MiB stream buffers.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench.hpp"

namespace {

namespace sb = sinew_bench;
namespace fs = std::filesystem;

constexpr unsigned char kKey = 90;

/// The `sinew` command: $SINEW_CLI, else beside this executable (the device
/// carry folder), else ../tools/sinew (the build tree).
std::string sinew_cli() {
  if (const char* e = std::getenv("SINEW_CLI"); e && *e) return e;
  const fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  for (const fs::path& p : {self / "sinew", self.parent_path() / "tools" / "sinew"})
    if (fs::exists(p)) return p.string();
  return "sinew";
}

/// Runs `child` in a child process whose standard input is a pipe fed with
/// the bytes of `in` (empty: inherited), as `cat in | program` does; throws
/// when the child exits with a non-zero status (`what` names it).
void run_child(const std::function<void()>& child, const std::string& in, const std::string& what) {
  int p[2] = {-1, -1};
  if (!in.empty() && ::pipe(p) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!in.empty()) {
      ::dup2(p[0], 0);
      ::close(p[0]);
      ::close(p[1]);
    }
    child();
    ::_exit(127);
  }
  if (!in.empty()) {
    ::close(p[0]);
    int fd = ::open(in.c_str(), O_RDONLY);
    std::vector<char> buf(std::size_t(1) << 20);
    for (ssize_t n; fd >= 0 && (n = ::read(fd, buf.data(), buf.size())) > 0;)
      for (ssize_t w = 0; w < n;) {
        ssize_t k = ::write(p[1], buf.data() + w, std::size_t(n - w));
        if (k <= 0) break;
        w += k;
      }
    if (fd >= 0) ::close(fd);
    ::close(p[1]);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    throw std::runtime_error(what + " exited with status " + std::to_string(WEXITSTATUS(st)));
}

/// `sinew run` with `args`, its summary line sent to /dev/null.
void run_process(const std::vector<std::string>& args, const std::string& in) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  run_child(
      [&] {
        int devnull = ::open("/dev/null", O_WRONLY);
        if (devnull >= 0) ::dup2(devnull, 2);
        ::execv(argv[0], argv.data());
      },
      in, args[0] + " " + args[1] + " " + args[2]);
}

/// The floor of any program that reads descriptor `in` (0: standard input)
/// and writes every byte to the file `out` through the same kernel paths:
/// read and write in 1 MiB blocks, no work on the bytes. `buf` is allocated by the caller (a
/// forked child must not allocate). False on an I/O error.
bool copy_fd(int in, const std::string& out, std::vector<char>& buf) {
  const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (o < 0) return false;
  bool ok = true;
  for (ssize_t n; ok && (n = ::read(in, buf.data(), buf.size())) != 0;) {
    if (n < 0) {
      ok = errno == EINTR;
      continue;
    }
    for (ssize_t w = 0; ok && w < n;) {
      const ssize_t k = ::write(o, buf.data() + w, std::size_t(n - w));
      ok = k > 0;
      w += k;
    }
  }
  return ::close(o) == 0 && ok;
}

/// Lines of 1..17 random printable bytes (about 10 bytes with the newline).
void make_lines(const std::string& path, std::size_t lines) {
  std::ofstream out(path, std::ios::binary);
  std::mt19937_64 rng(7);
  std::string buf;
  buf.reserve(std::size_t(1) << 20);
  for (std::size_t i = 0; i < lines; ++i) {
    const std::uint64_t r = rng();
    const std::size_t len = 1 + r % 17;
    for (std::size_t k = 0; k < len; ++k) buf.push_back(char('!' + (r >> (5 + 3 * k % 50)) % 90));
    buf.push_back('\n');
    if (buf.size() >= (std::size_t(1) << 20) - 32) {
      out.write(buf.data(), std::streamsize(buf.size()));
      buf.clear();
    }
  }
  out.write(buf.data(), std::streamsize(buf.size()));
}

void make_records(const std::string& path, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  std::mt19937_64 rng(11);
  std::vector<std::uint64_t> buf(std::size_t(1) << 17);
  for (std::size_t done = 0; done < bytes;) {
    for (auto& w : buf) w = rng();
    const std::size_t n = std::min(bytes - done, buf.size() * 8);
    out.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(n));
    done += n;
  }
}

/// Input and output file streams with 1 MiB buffers, as a careful
/// single-threaded program would open them.
struct buffered_files {
  std::vector<char> ib = std::vector<char>(std::size_t(1) << 20), ob = std::vector<char>(std::size_t(1) << 20);
  std::ifstream is;
  std::ofstream os;
  buffered_files(const std::string& in, const std::string& out) {
    is.rdbuf()->pubsetbuf(ib.data(), std::streamsize(ib.size()));
    is.open(in, std::ios::binary);
    os.rdbuf()->pubsetbuf(ob.data(), std::streamsize(ob.size()));
    os.open(out, std::ios::binary | std::ios::trunc);
  }
};

/// The single-threaded reference: getline, xor, write.
void loop_lines(const std::string& in, const std::string& out) {
  buffered_files f(in, out);
  std::string line;
  while (std::getline(f.is, line)) {
    for (char& c : line) c = char(static_cast<unsigned char>(c) ^ kKey);
    line.push_back('\n');
    f.os.write(line.data(), std::streamsize(line.size()));
  }
}

/// The single-threaded reference for 64-byte records: read, xor, write.
void loop_records(const std::string& in, const std::string& out) {
  buffered_files f(in, out);
  char rec[64];
  while (f.is.read(rec, sizeof rec)) {
    for (char& c : rec) c = char(static_cast<unsigned char>(c) ^ kKey);
    f.os.write(rec, sizeof rec);
  }
}

/// "" when files `a` and `b` hold the same bytes.
std::string same_files(const std::string& a, const std::string& b) {
  auto map = [](const std::string& p, std::size_t& n) -> const char* {
    int fd = ::open(p.c_str(), O_RDONLY);
    if (fd < 0) return nullptr;
    struct stat st {};
    ::fstat(fd, &st);
    n = std::size_t(st.st_size);
    void* m = n ? ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    ::close(fd);
    return m == MAP_FAILED ? nullptr : static_cast<const char*>(m);
  };
  std::size_t na = 0, nb = 0;
  const char *pa = map(a, na), *pb = map(b, nb);
  std::string why;
  if (na != nb) why = b + " has " + std::to_string(nb) + " bytes, " + a + " " + std::to_string(na);
  else if (na && (!pa || !pb || std::memcmp(pa, pb, na) != 0)) why = b + " differs from " + a;
  if (pa) ::munmap(const_cast<char*>(pa), na);
  if (pb) ::munmap(const_cast<char*>(pb), nb);
  return why;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

void run(sb::context& ctx) {
  const unsigned threads = sb::thread_count();
  const std::size_t lines = ctx.smoke() ? 20'000 : ctx.quick() ? 2'000'000 : 100'000'000;
  const std::size_t rec_bytes = lines * 10 / 64 * 64;  // about the lines' size
  const char* tmp = std::getenv("TMPDIR");
  const fs::path dir = fs::path(tmp && *tmp ? tmp : "/tmp") / ("sinew-bench-stream-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string txt = (dir / "in.txt").string(), bin = (dir / "in.bin").string();
  const std::string ref_txt = (dir / "ref.txt").string(), ref_bin = (dir / "ref.bin").string();
  const std::string out_txt = (dir / "out.txt").string(), out_bin = (dir / "out.bin").string();
  make_lines(txt, lines);
  make_records(bin, rec_bytes);
  const double txt_mb = double(fs::file_size(txt)) / 1e6, bin_mb = double(fs::file_size(bin)) / 1e6;
  ctx.param("lines", lines);
  ctx.param("lines_bytes", fs::file_size(txt));
  ctx.param("records", rec_bytes / 64);
  ctx.param("record_bytes", 64);
  ctx.param("threads", threads);
  ctx.param("dir", dir.string());

  // The graphs: farm(xor) over every core; sources batch by default.
  const std::string farm = R"("graph": {"farm": {"map": "xor", "args": {"key": 90}}, "workers": )" + std::to_string(threads) + "},";
  const std::string lines_out = R"("sink": {"type": "file", "format": "lines", "path": ")" + out_txt + "\"}}";
  const std::string bin_out = R"("sink": {"type": "file", "path": ")" + out_bin + "\"}}";
  const std::string g_lf = (dir / "lines_file.json").string(), g_ls = (dir / "lines_stdin.json").string();
  const std::string g_bf = (dir / "bin_file.json").string(), g_bs = (dir / "bin_stdin.json").string();
  write_text(g_lf, R"({"sinew": 1, "name": "lines_file", "source": {"type": "file", "format": "lines", "path": ")" + txt +
                       "\"}, " + farm + lines_out);
  write_text(g_ls, R"({"sinew": 1, "name": "lines_stdin", "source": {"type": "stdin", "format": "lines"}, )" + farm + lines_out);
  write_text(g_bf, R"({"sinew": 1, "name": "bin_file", "source": {"type": "file", "path": ")" + bin +
                       R"(", "buffers": ["u8"], "shape": [64]}, )" + farm + bin_out);
  write_text(g_bs, R"({"sinew": 1, "name": "bin_stdin", "source": {"type": "stdin", "buffers": ["u8"], "shape": [64]}, )" +
                       farm + bin_out);
  const std::string cli = sinew_cli(), th = std::to_string(threads);
  auto sinew_run = [&](const std::string& graph, const std::string& in) {
    run_process({cli, "run", graph, "--threads", th}, in);
  };
  auto mbs = [](double mb) { return [mb](double s) { return mb / s; }; };

  // Reference outputs first: every variant's output is compared with them.
  loop_lines(txt, ref_txt);
  loop_records(bin, ref_bin);

  // The copy floor: the same bytes read and written with no work on them,
  // from the file and through a pipe as `cat file | program` gets them.
  std::vector<char> copy_buf(std::size_t(1) << 20);
  auto copy_file = [&](const std::string& in, const std::string& out) {
    const int fd = ::open(in.c_str(), O_RDONLY);
    const bool ok = fd >= 0 && copy_fd(fd, out, copy_buf);
    if (fd >= 0) ::close(fd);
    if (!ok) throw std::runtime_error("copying " + in + " to " + out + " failed");
  };
  auto copy_stdin = [&](const std::string& in, const std::string& out) {
    run_child([&] { ::_exit(copy_fd(0, out, copy_buf) ? 0 : 1); }, in, "the copy of standard input");
  };

  struct group {
    const char* name;
    double mb;
    std::string in, ref, out;
    std::function<void()> loop, from_file, from_stdin;
  };
  const group groups[] = {
      {"lines", txt_mb, txt, ref_txt, out_txt, [&] { loop_lines(txt, out_txt); }, [&] { sinew_run(g_lf, ""); },
       [&] { sinew_run(g_ls, txt); }},
      {"records64", bin_mb, bin, ref_bin, out_bin, [&] { loop_records(bin, out_bin); }, [&] { sinew_run(g_bf, ""); },
       [&] { sinew_run(g_bs, bin); }},
  };
  const double target = threads >= 16 ? 4.0 : 1.0;
  for (const group& gr : groups) {
    auto check = [&gr] { return same_files(gr.ref, gr.out); };
    auto check_copy = [&gr] { return same_files(gr.in, gr.out); };
    const std::string n = gr.name;
    auto s = ctx.measure_interleaved(
        {{.name = n + " loop", .unit = "MB/s", .better = sb::higher, .setup = nullptr, .run = gr.loop,
          .to_metric = mbs(gr.mb), .check = check, .note = "single thread: read, xor, write"},
         {.name = n + " sinew file", .unit = "MB/s", .better = sb::higher, .setup = nullptr, .run = gr.from_file,
          .to_metric = mbs(gr.mb), .check = check, .note = "sinew run: file -> farm(xor) x" + th + " -> file"},
         {.name = n + " sinew stdin", .unit = "MB/s", .better = sb::higher, .setup = nullptr, .run = gr.from_stdin,
          .to_metric = mbs(gr.mb), .check = check, .note = "cat file | sinew run: stdin pipe -> farm(xor) x" + th + " -> file"},
         {.name = n + " copy file", .unit = "MB/s", .better = sb::higher, .setup = nullptr,
          .run = [&] { copy_file(gr.in, gr.out); }, .to_metric = mbs(gr.mb), .check = check_copy,
          .note = "informational: read/write 1 MiB blocks, no xor (the I/O floor)"},
         {.name = n + " copy stdin", .unit = "MB/s", .better = sb::higher, .setup = nullptr,
          .run = [&] { copy_stdin(gr.in, gr.out); }, .to_metric = mbs(gr.mb), .check = check_copy,
          .note = "informational: the same from a pipe, in a child process"}});
    if (s[0]->stats.n == 0 || s[1]->stats.n == 0 || s[2]->stats.n == 0) continue;
    for (int k = 1; k <= 2; ++k) {
      const std::string how = k == 1 ? "_file" : "_stdin";
      ctx.ratio("stream_" + n + how, sb::paired_ratio(*s[k], *s[0]), target, sb::higher,
                "sinew run MB/s / single-threaded loop MB/s, paired rounds (target " +
                    std::string(threads >= 16 ? ">= 4 on 16 cores" : ">= 1 on fewer than 16") + ")");
      // Informational: how close Sinew comes to copying the bytes, and the
      // ratio to the loop that a program doing no work at all would reach.
      if (s[k + 2]->stats.n == 0) continue;
      ctx.informational_ratio("stream_" + n + how + "_vs_copy", sb::paired_ratio(*s[k], *s[k + 2]), 1.0, sb::higher,
                              "the copy is the I/O floor, not a peer",
                              "sinew run MB/s / plain copy MB/s, paired rounds");
      ctx.informational_ratio("stream_" + n + how + "_copy_vs_loop", sb::paired_ratio(*s[k + 2], *s[0]), target,
                              sb::higher, "the most any program reaches against the loop through these files",
                              "plain copy MB/s / single-threaded loop MB/s, paired rounds");
    }
  }
  fs::remove_all(dir);
}

const sb::registrar reg("stream_records",
                        "text lines and 64-byte records through `sinew run` (farm(xor), record batches) vs a "
                        "single-threaded read/xor/write loop; MB/s",
                        run);

}  // namespace
