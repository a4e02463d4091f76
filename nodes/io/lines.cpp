// Text lines as units of one 1-D u8 buffer.
#include <sinew/io/lines.hpp>

#include <cstring>

#include <sinew/engine/buffer_pool.hpp>

#include "stream.hpp"

namespace sinew::io {

namespace {

std::string fd_label(const char* what, int fd) { return std::string(what) + "(descriptor " + std::to_string(fd) + ")"; }

class lines_source final : public detail::io_source {
 public:
  explicit lines_source(int fd) : who_(fd_label("read_lines", fd)), r_(fd, who_, &wake_) {}
  bool produce(unit_builder& b) override {
    if (r_.read_line(line_) != detail::fd_reader::status::ok) return false;  // end, or stopped
    b.set_shape(shape::d1(line_.size()));
    auto v = b.add<std::uint8_t>();
    if (!line_.empty()) std::memcpy(v.data(), line_.data(), line_.size());
    return true;
  }
  std::string label() const override { return "source(" + who_ + ")"; }
  bool blocking() const override { return true; }

 private:
  std::string who_;
  detail::fd_reader r_;
  std::vector<std::uint8_t> line_;
};

class lines_sink final : public sinew::detail::sink_impl {
 public:
  explicit lines_sink(int fd) : fd_(fd), who_(fd_label("write_lines", fd)) {}
  void prepare(const sinew::detail::type_list& out, std::optional<std::uint64_t>) override {
    if (!out.any && (out.types.empty() || out.types[0]->size != 1))
      throw graph_error(label(), "lines need 1-byte elements in buffer 0; the graph produces " + out.str());
    order_.reset();
    w_.emplace(fd_, who_);
  }
  void consume(work_unit& u) override { order_.deliver(u, [&](std::uint64_t s, const layer& l) { line(s, l); }); }
  void finish() override {
    order_.finish([&](std::uint64_t s, const layer& l) { line(s, l); });
    w_->flush();
  }
  std::string label() const override { return "sink(" + who_ + ")"; }

 private:
  void line(std::uint64_t seq, const layer& l) {
    if (l.empty() || l[0]->type().size != 1)
      throw error(who_ + ": unit " + std::to_string(seq) + " has no buffer of 1-byte elements to write as a line");
    w_->write(l[0]->data(), l.count());
    w_->write("\n", 1);
  }
  int fd_;
  std::string who_;
  std::optional<detail::fd_writer> w_;
  detail::in_order order_;
};

}  // namespace

sinew::source read_lines(int fd) { return sinew::source(std::make_shared<lines_source>(fd)); }
sinew::sink write_lines(int fd) { return sinew::sink(std::make_shared<lines_sink>(fd)); }

}  // namespace sinew::io
