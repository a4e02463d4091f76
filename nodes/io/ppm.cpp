// PPM (Netpbm P6/P3, maxval 255) images and directories of them.
#include <sinew/io/ppm.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <sinew/engine/buffer_pool.hpp>

#include "stream.hpp"

namespace sinew::io {

namespace {

using workloads::rgba8;
namespace fs = std::filesystem;

std::vector<unsigned char> slurp(const std::string& path) {
  detail::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw error("'" + path + "': cannot open: " + detail::errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) throw error("'" + path + "': not a regular file");
  std::vector<unsigned char> v(std::size_t(st.st_size));
  detail::fd_reader r(fd.get(), "'" + path + "'", nullptr);
  std::size_t got = 0;
  r.read_exact(v.data(), v.size(), got);
  v.resize(got);
  return v;
}

// Parses the header and pixels of a PPM held in memory.
class ppm_parser {
 public:
  ppm_parser(const std::string& path, const std::vector<unsigned char>& d) : path_(path), d_(d) {}

  void header() {
    if (d_.size() < 2 || d_[0] != 'P' || (d_[1] != '6' && d_[1] != '3'))
      fail("not a PPM image: the file does not start with P6 or P3");
    ascii_ = d_[1] == '3';
    pos_ = 2;
    cols_ = number("width");
    rows_ = number("height");
    std::size_t maxval = number("maxval");
    if (cols_ == 0 || rows_ == 0) fail("empty image (" + std::to_string(cols_) + "x" + std::to_string(rows_) + ")");
    if (maxval != 255) fail("maxval " + std::to_string(maxval) + " is not supported (only 255)");
    if (rows_ > (std::size_t(1) << 40) / cols_) fail("image too large (" + std::to_string(rows_) + "x" + std::to_string(cols_) + ")");
    if (ascii_ && d_.size() - pos_ + 1 < rows_ * cols_ * 6)  // at least "d " per sample: refuse before allocating
      fail("pixel data is truncated: " + std::to_string(rows_) + "x" + std::to_string(cols_) +
           " needs at least " + std::to_string(rows_ * cols_ * 6 - 1) + " bytes of samples");
    if (!ascii_) {  // exactly one whitespace byte before the raster
      if (pos_ >= d_.size() || !std::isspace(d_[pos_])) fail("no whitespace after the maxval");
      ++pos_;
      std::size_t need = rows_ * cols_ * 3;
      if (d_.size() - pos_ < need)
        fail("pixel data is truncated: " + std::to_string(rows_) + "x" + std::to_string(cols_) + " needs " +
             std::to_string(rows_ * cols_ * 3) + " bytes, the file has " + std::to_string(d_.size() - pos_));
    }
  }
  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }

  void pixels(rgba8* out) {
    const std::size_t n = rows_ * cols_;
    if (!ascii_) {
      const unsigned char* p = d_.data() + pos_;
      for (std::size_t i = 0; i < n; ++i, p += 3) out[i] = rgba8{p[0], p[1], p[2], 255};
      return;
    }
    for (std::size_t i = 0; i < n; ++i) {
      std::uint8_t c[3];
      for (auto& x : c) {
        std::size_t v = number("sample of pixel " + std::to_string(i));
        if (v > 255) fail("sample " + std::to_string(v) + " of pixel " + std::to_string(i) + " exceeds the maxval 255");
        x = std::uint8_t(v);
      }
      out[i] = rgba8{c[0], c[1], c[2], 255};
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw error("PPM '" + path_ + "': " + what); }
  // Skips whitespace and '#' comments, then reads a decimal number.
  std::size_t number(const std::string& what) {
    for (;;) {
      while (pos_ < d_.size() && std::isspace(d_[pos_])) ++pos_;
      if (pos_ < d_.size() && d_[pos_] == '#') {
        while (pos_ < d_.size() && d_[pos_] != '\n') ++pos_;
        continue;
      }
      break;
    }
    if (pos_ >= d_.size()) fail("the file ends before the " + what);
    if (!std::isdigit(d_[pos_])) fail("bad " + what + ": expected a number at byte " + std::to_string(pos_));
    std::size_t v = 0;
    while (pos_ < d_.size() && std::isdigit(d_[pos_])) {
      v = v * 10 + std::size_t(d_[pos_++] - '0');
      if (v > (std::size_t(1) << 32)) fail(what + " is too large");
    }
    return v;
  }

  std::string path_;
  const std::vector<unsigned char>& d_;
  std::size_t pos_ = 0, rows_ = 0, cols_ = 0;
  bool ascii_ = false;
};

bool is_ppm_name(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e == ".ppm";
}

class ppm_dir_source final : public detail::io_source {
 public:
  explicit ppm_dir_source(std::string dir) : dir_(std::move(dir)) {
    std::error_code ec;
    if (!fs::is_directory(dir_, ec)) throw error("read_ppm_dir '" + dir_ + "': not a directory" + (ec ? ": " + ec.message() : ""));
    fs::directory_iterator it(dir_, ec), end;
    if (ec) throw error("read_ppm_dir '" + dir_ + "': cannot list: " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) throw error("read_ppm_dir '" + dir_ + "': cannot list: " + ec.message());
      if (is_ppm_name(it->path()) && !it->is_directory(ec)) files_.push_back(it->path().string());
    }
    std::sort(files_.begin(), files_.end());
  }
  bool produce(unit_builder& b) override {
    if (i_ >= files_.size() || b.stop_requested()) return false;
    const std::string& f = files_[i_++];
    auto data = slurp(f);
    ppm_parser p(f, data);
    p.header();
    b.set_shape(shape::d2(p.rows(), p.cols()));
    p.pixels(b.add<rgba8, 2>().data());
    return true;
  }
  std::optional<std::uint64_t> size_hint() const override { return files_.size(); }
  std::string label() const override { return "source(read_ppm_dir '" + dir_ + "')"; }
  // Not blocking(): files do not wait for a producer, so the source runs as
  // a task like any stage (see record_source in io_records.cpp).

 private:
  std::string dir_;
  std::vector<std::string> files_;
  std::size_t i_ = 0;
};

void write_p6(const std::string& path, const rgba8* px, std::size_t rows, std::size_t cols, const std::string& who) {
  detail::unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) throw error(who + ": cannot create '" + path + "': " + detail::errno_text(errno));
  detail::fd_writer w(fd.get(), who + " '" + path + "'");
  std::string h = "P6\n" + std::to_string(cols) + " " + std::to_string(rows) + "\n255\n";
  w.write(h.data(), h.size());
  std::vector<unsigned char> row(cols * 3);
  for (std::size_t r = 0; r < rows; ++r) {
    const rgba8* p = px + r * cols;
    for (std::size_t c = 0; c < cols; ++c) {
      row[3 * c] = p[c].r;
      row[3 * c + 1] = p[c].g;
      row[3 * c + 2] = p[c].b;
    }
    w.write(row.data(), row.size());
  }
  w.flush();
  if (::close(fd.release()) != 0) throw error(who + ": close of '" + path + "' failed: " + detail::errno_text(errno));
}

class ppm_dir_sink final : public sinew::detail::sink_impl {
 public:
  ppm_dir_sink(std::string dir, std::string prefix) : dir_(std::move(dir)), prefix_(std::move(prefix)) {}
  void prepare(const sinew::detail::type_list& out, std::optional<std::uint64_t>) override {
    if (!out.any && (out.types.empty() || out.types[0]->size != 4))
      throw graph_error(label(), "PPM images need 4-byte rgba8 pixels in buffer 0; the graph produces " + out.str());
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec || !fs::is_directory(dir_)) throw error(who() + ": cannot create the directory: " + ec.message());
  }
  void consume(work_unit& u) override {
    const layer& l = u.in();
    if (l.empty() || l[0]->type().size != 4 || l.shape().rank != 2)
      throw error(who() + ": unit " + std::to_string(u.seq()) + " is not a 2-D image of 4-byte pixels (shape " +
                  l.shape().str() + ")");
    char name[32];
    std::snprintf(name, sizeof name, "_%06llu.ppm", static_cast<unsigned long long>(u.seq()));
    write_p6((fs::path(dir_) / (prefix_ + name)).string(), static_cast<const rgba8*>(l[0]->data()),
             l.shape().ext[0], l.shape().ext[1], who());
  }
  std::string label() const override { return "sink(" + who() + ")"; }

 private:
  std::string who() const { return "write_ppm_dir '" + dir_ + "'"; }
  std::string dir_, prefix_;
};

}  // namespace

array<rgba8, 2> read_ppm(const std::string& path) {
  auto data = slurp(path);
  ppm_parser p(path, data);
  p.header();
  array<rgba8, 2> img(shape::d2(p.rows(), p.cols()));
  p.pixels(img.data());
  return img;
}

void write_ppm(const std::string& path, const array<rgba8, 2>& img) {
  write_p6(path, img.data(), img.shape().ext[0], img.shape().ext[1], "write_ppm");
}

sinew::source read_ppm_dir(std::string dir) { return sinew::source(std::make_shared<ppm_dir_source>(std::move(dir))); }

sinew::sink write_ppm_dir(std::string dir, std::string prefix) {
  return sinew::sink(std::make_shared<ppm_dir_sink>(std::move(dir), std::move(prefix)));
}

}  // namespace sinew::io
