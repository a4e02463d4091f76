// sinew::io::checksum: FNV-1a over a whole stream, in sequence order.
#include <sinew/io/checksum.hpp>

#include "stream.hpp"

namespace sinew::io {

std::uint64_t checksum_of_layer(const layer& l, std::uint64_t h) {
  for (unsigned i = 0; i < l.size(); ++i) h = workloads::checksum(l[i]->data(), l.bytes_of(i), h);
  return h;
}

namespace {

class checksum_sink final : public sinew::detail::sink_impl {
 public:
  explicit checksum_sink(std::shared_ptr<checksum_result> r) : r_(std::move(r)) {
    if (!r_) throw error("checksum: the result pointer is null");
  }
  void prepare(const sinew::detail::type_list&, std::optional<std::uint64_t>) override {
    *r_ = checksum_result{};
    order_.reset();
  }
  // A unit folded into the sum is written: its note is released then.
  void consume(work_unit& u) override {
    order_.deliver(u, [&](std::uint64_t, const layer& l, const record_index& r) { add(l, r); });
    order_.written();
  }
  void finish() override {
    order_.finish([&](std::uint64_t, const layer& l, const record_index& r) { add(l, r); });
    order_.written();
  }
  std::string label() const override { return "sink(checksum)"; }
  bool writes_records() const override { return true; }
  bool takes_notes() const override { return true; }

 private:
  // The bytes write_file writes: record by record for a batch.
  void add(const layer& l, const record_index& r) {
    detail::for_each_record_bytes(l, r, [&](const void* p, std::size_t n, unsigned) { r_->value = workloads::checksum(p, n, r_->value); });
    r_->units++;
    r_->records += r.fits(l.count()) ? r.size() : 1;
    r_->bytes += detail::layer_bytes(l);
  }
  std::shared_ptr<checksum_result> r_;
  detail::in_order order_;
};

}  // namespace

sinew::sink checksum(std::shared_ptr<checksum_result> result) {
  return sinew::sink(std::make_shared<checksum_sink>(std::move(result)));
}

}  // namespace sinew::io
