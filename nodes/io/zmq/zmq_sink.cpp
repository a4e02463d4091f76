// ZeroMQ sinks: PUSH and PUB sockets, a message a record (io/zmq.hpp).
#include <atomic>
#include <cstring>
#include <optional>
#include <vector>

#include "../message_batch.hpp"
#include "../stream.hpp"
#include "zmq_socket.hpp"
#include "zmq_spares.hpp"

namespace sinew::io {
namespace {

// A unit's buffers, kept until ZeroMQ has sent every message pointing into
// them. `left` starts high so that the I/O thread's releases cannot reach
// zero while the sink is still sending; release(n) then takes back what was
// not sent.
struct unit_hold {
  static constexpr std::size_t start = std::size_t(1) << 62;
  std::atomic<std::size_t> left{start};
  std::vector<buffer_ref> bufs;
  explicit unit_hold(const layer& l) {
    for (unsigned b = 0; b < l.size(); ++b) bufs.push_back(l[b]);
  }
  // The sink handed `n` frames to ZeroMQ (each releases one when sent).
  void release(std::size_t n) { drop(start - n); }
  // ZeroMQ's free function, on its I/O thread.
  static void sent(void*, void* self) { static_cast<unit_hold*>(self)->drop(1); }
  // acq_rel: every sender's reads of the buffers happen before the last drop deletes them.
  void drop(std::size_t k) {
    if (left.fetch_sub(k, std::memory_order_acq_rel) == k) delete this;
  }
};

class zmq_sink_impl final : public sinew::detail::sink_impl {
 public:
  explicit zmq_sink_impl(zmq_sink_options o) : o_(std::move(o)) {
    if (o_.socket != zmq_socket::push && o_.socket != zmq_socket::pub)
      throw error(detail::zmq_who(o_.socket, o_.endpoint) + ": a sink writes to a push or pub socket");
    open();  // errors in the endpoint surface when the sink is made
  }
  void prepare(const sinew::detail::type_list&, std::optional<std::uint64_t>) override {
    order_.reset();
    wake_ = std::make_unique<detail::wake_event>();  // a fresh one per run: the last run's stays signalled
    if (!s_) open();  // the last run closed it
  }
  // A message handed to ZeroMQ is written (its queue delivers it while the
  // process lives): the units' notes are released then.
  void consume(work_unit& u) override {
    order_.deliver(u, [&](std::uint64_t, const layer& l, const record_index& r) { send(l, r); });
    order_.written();
  }
  void finish() override {
    order_.finish([&](std::uint64_t, const layer& l, const record_index& r) { send(l, r); });
    s_->close(int(o_.linger.count()));
    s_.reset();
    spares_.clear();  // each holds its decoder's buffer
    next_ = 0;
    order_.written();
  }
  bool takes_notes() const override { return true; }
  void interrupt() override {
    if (auto* w = wake_.get()) w->signal();
  }
  bool writes_records() const override { return true; }
  std::string label() const override { return "sink(" + who_ + ")"; }

 private:
  // A later run binds the port the first one picked: peers keep their address.
  void open() {
    s_.emplace(o_.socket, o_.endpoint, o_.bind, o_.hwm, o_.bound);
    who_ = s_->who;
    o_.endpoint = s_->at;
  }
  // A frame goes in a received message of its size when the pool has one
  // (no allocation: zmq_spares.hpp). Otherwise frames that are slices of the
  // unit's buffers go without a copy (a copy costs ZeroMQ an allocation per
  // message, freed on its I/O thread): they keep the buffers alive until
  // ZeroMQ has sent them. Frames small enough for ZeroMQ to store inline,
  // and frames gathered into scratch_, are copied.
  void send(const layer& l, const record_index& r) {
    unit_hold* hold = nullptr;
    std::size_t held = 0;
    bool dry = false;  // the pool had none for this unit: do not look again
    try {
      detail::for_each_message(l, r, o_.multipart, scratch_,
                               [&](const detail::frame* f, std::size_t n, const detail::frame* bufs) {
        if (o_.socket == zmq_socket::pub) send_frame(zmq::message_t(o_.topic.data(), o_.topic.size()), true);
        for (std::size_t i = 0; i < n; ++i) {
          const bool small = f[i].size <= detail::zmq_spares::inline_bytes;
          if (!small && f[i].size <= detail::zmq_spares::largest) {
            if (next_ == spares_.size() && !dry) {
              spares_.clear();
              next_ = 0;
              detail::zmq_spares::process().take(spares_);
              dry = spares_.empty();
            }
            if (next_ < spares_.size()) {
              zmq::message_t& m = spares_[next_++];
              if (m.size() == f[i].size) {
                std::memcpy(m.data(), f[i].data, f[i].size);
                detail::zmq_spares::sent();
                send_frame(std::move(m), i + 1 < n);
                continue;
              }  // a spare of another size is dropped
            }
          }
          if (f != bufs || small) {
            send_frame(zmq::message_t(f[i].data, f[i].size), i + 1 < n);
            continue;
          }
          if (!hold) hold = new unit_hold(l);
          zmq::message_t m(const_cast<void*>(f[i].data), f[i].size, &unit_hold::sent, hold);
          ++held;  // made: ZeroMQ calls sent() once, whether it sends the frame or it is closed unsent
          send_frame(std::move(m), i + 1 < n);
        }
      });
    } catch (...) {
      if (hold) hold->release(held);
      throw;
    }
    if (hold) hold->release(held);
  }
  // A PUSH socket with no peer able to take the frame waits, until the run
  // fails or is cancelled; a PUB socket never waits (ZeroMQ drops instead).
  // A frame not sent is closed (a zero-copy one gives its hold back).
  void send_frame(zmq::message_t&& m, bool more) {
    const zmq::send_flags fl = more ? zmq::send_flags::sndmore | zmq::send_flags::dontwait : zmq::send_flags::dontwait;
    for (;;) {
      try {
        if (s_->sock.send(m, fl)) return;
      } catch (const zmq::error_t& e) {
        throw error(who_ + ": send failed: " + e.what());
      }
      zmq::pollitem_t items[2] = {{s_->sock.handle(), 0, ZMQ_POLLOUT, 0}, {nullptr, wake_->fd(), ZMQ_POLLIN, 0}};
      try {
        zmq::poll(items, 2, std::chrono::milliseconds(-1));
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw error(who_ + ": poll failed: " + e.what());
      }
      if (wake_->signalled())
        throw error(who_ + ": interrupted while no peer took messages (the run failed or was cancelled)");
    }
  }

  zmq_sink_options o_;
  std::optional<detail::zmq_socket_of> s_;
  std::string who_;
  std::unique_ptr<detail::wake_event> wake_ = std::make_unique<detail::wake_event>();
  std::vector<char> scratch_;
  std::vector<zmq::message_t> spares_;  // taken from the pool; [next_, size) unused
  std::size_t next_ = 0;
  detail::in_order order_;
};

}  // namespace

sinew::sink zmq_sink(zmq_sink_options o) { return sinew::sink(std::make_shared<zmq_sink_impl>(std::move(o))); }

}  // namespace sinew::io
