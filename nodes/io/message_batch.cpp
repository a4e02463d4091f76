// Records in and out of messages: the batch a message source fills.
#include "message_batch.hpp"

#include <algorithm>
#include <cstring>

namespace sinew::io::detail {

message_batch::message_batch(message_format f, std::size_t records, std::size_t bytes)
    : f_(std::move(f)), max_records_(std::max<std::size_t>(records, 1)), max_bytes_(std::max<std::size_t>(bytes, 1)) {
  if (f_.layout) {
    f_.layout->check("a message format");
    record_bytes_ = f_.layout->bytes();
    adopts_ = record_bytes_ >= adopt_from;
    // Binary records have one size: the record count alone bounds a unit.
    max_records_ = std::max<std::size_t>(1, std::min(max_records_, max_bytes_ / record_bytes_));
  }
  start();
}

void message_batch::start() {
  n_ = used_ = 0;
  bufs_.clear();
  buffer_pool& pool = buffer_pool::global();
  if (f_.layout) {
    const std::size_t per = f_.layout->shape.count();
    for (const elem_type* t : f_.layout->buffers) bufs_.push_back(pool.acquire(per * max_records_, *t));
    return;
  }
  bufs_.push_back(pool.acquire<std::uint8_t>(max_bytes_));
  offs_ = pool.acquire<std::uint64_t>(max_records_ + 1);
  offs_.data<std::uint64_t>()[0] = 0;
}

message_batch::added message_batch::add(const frame* frames, std::size_t n) {
  if (full()) return added::full;
  if (!f_.layout) {  // text: the frames' bytes are the line
    std::size_t len = 0;
    for (std::size_t i = 0; i < n; ++i) len += frames[i].size;
    if (used_ + len > bufs_[0]->count()) {
      if (n_ > 0) return added::full;
      bufs_[0] = buffer_pool::global().acquire<std::uint8_t>(len);  // a line longer than a unit: a unit of its own
    }
    char* d = reinterpret_cast<char*>(bufs_[0].data<std::uint8_t>()) + used_;
    for (std::size_t i = 0; i < n; ++i) {
      if (frames[i].size) std::memcpy(d, frames[i].data, frames[i].size);
      d += frames[i].size;
    }
    used_ += len;
    offs_.data<std::uint64_t>()[++n_] = used_;
    return added::ok;
  }
  const record_layout& l = *f_.layout;
  const std::size_t per = l.shape.count();
  if (f_.multipart) {
    if (n != l.buffers.size()) {
      why_ = std::to_string(n) + " frames where the layout " + l.str() + " has " + std::to_string(l.buffers.size()) +
             " buffers (one frame each)";
      return added::malformed;
    }
    for (std::size_t b = 0; b < n; ++b)
      if (frames[b].size != per * l.buffers[b]->size) {
        why_ = "frame " + std::to_string(b) + " holds " + std::to_string(frames[b].size) + " bytes, buffer " +
               std::to_string(b) + " of the layout " + l.str() + " has " + std::to_string(per * l.buffers[b]->size);
        return added::malformed;
      }
    for (std::size_t b = 0; b < n; ++b)
      std::memcpy(static_cast<char*>(bufs_[b]->data()) + n_ * frames[b].size, frames[b].data, frames[b].size);
    ++n_;
    return added::ok;
  }
  if (n != 1 || frames[0].size != record_bytes_) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += frames[i].size;
    why_ = n != 1 ? std::to_string(n) + " frames where a record is one"
                  : std::to_string(total) + " bytes where a record of the layout " + l.str() + " has " +
                        std::to_string(record_bytes_);
    return added::malformed;
  }
  const char* p = static_cast<const char*>(frames[0].data);
  for (std::size_t b = 0; b < bufs_.size(); ++b) {
    const std::size_t sz = per * l.buffers[b]->size;
    std::memcpy(static_cast<char*>(bufs_[b]->data()) + n_ * sz, p, sz);
    p += sz;
  }
  ++n_;
  return added::ok;
}

void message_batch::finish(unit_builder& b, bool batch) {
  if (f_.layout) {
    shape s = f_.layout->shape;
    s.ext[0] *= n_;
    b.set_shape(s);
    for (buffer_ref& x : bufs_) {
      x->shrink(f_.layout->shape.count() * n_);
      b.add(std::move(x));
    }
    if (batch) b.set_records(record_index::fixed(n_, f_.layout->shape));
  } else {
    bufs_[0]->shrink(used_);
    offs_->shrink(n_ + 1);
    b.set_shape(shape::d1(used_));
    b.add(std::move(bufs_[0]));
    if (batch) b.set_records(record_index::varying(std::move(offs_), n_));
  }
  start();
}

namespace {
// Keeps a message's memory alive while a buffer wraps part of it.
struct message_hold final : buffer_hook {
  explicit message_hold(std::shared_ptr<void> m) : message(std::move(m)) {}
  std::shared_ptr<void> message;
};
}  // namespace

bool message_batch::frames_fit(const frame* frames, std::size_t n) const {
  const record_layout& l = *f_.layout;
  if (!f_.multipart) return n == 1 && frames[0].size == record_bytes_;
  if (n != l.buffers.size()) return false;
  for (std::size_t b = 0; b < n; ++b)
    if (frames[b].size != l.shape.count() * l.buffers[b]->size) return false;
  return true;
}

void message_batch::adopt(const frame* frames, std::size_t n, std::shared_ptr<void> message, unit_builder& b,
                          bool batch) const {
  const record_layout& l = *f_.layout;
  const std::size_t per = l.shape.count();
  b.set_shape(l.shape);
  const char* p = static_cast<const char*>(frames[0].data);
  for (std::size_t i = 0; i < l.buffers.size(); ++i) {
    // A multipart message has a frame per buffer; a single frame holds them back to back.
    const char* at = f_.multipart ? static_cast<const char*>(frames[i].data) : p;
    buffer_ref r = buffer_ref::wrap_bytes(const_cast<char*>(at), per, *l.buffers[i]);
    r->attach_hook(new message_hold(message));
    b.add(std::move(r));
    p += per * l.buffers[i]->size;
  }
  (void)n;
  if (batch) b.set_records(record_index::fixed(1, l.shape));
}

}  // namespace sinew::io::detail
