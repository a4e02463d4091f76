// sinew::io::generator: synthetic units, deterministic per (seed, seq,
// buffer, index), optionally paced at a fixed rate.
#include <sinew/io/generator.hpp>
#include <sinew/io/type_names.hpp>

#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/workloads/image.hpp>
#include <sinew/workloads/random.hpp>

#include "type_switch.hpp"

namespace sinew::io {

namespace {

using workloads::hash64;
using workloads::rgba8;
using workloads::splitmix64;

enum class pattern { random, ramp, constant };

// Uniform bytes: 64-bit word j of the buffer is splitmix64(base + j).
void fill_random_bytes(unsigned char* p, std::size_t n, std::uint64_t base) {
  std::size_t words = n / 8;
  for (std::size_t j = 0; j < words; ++j) {
    std::uint64_t w = splitmix64(base + j);
    std::memcpy(p + 8 * j, &w, 8);
  }
  if (n % 8) {
    std::uint64_t w = splitmix64(base + words);
    std::memcpy(p + 8 * words, &w, n % 8);
  }
}

template <class T>
void fill_random(T* p, std::size_t n, std::uint64_t base) {
  if constexpr (std::is_same_v<T, float>) {
    for (std::size_t i = 0; i < n; ++i) p[i] = float(splitmix64(base + i) >> 40) * 0x1p-24f;
  } else if constexpr (std::is_same_v<T, double>) {
    for (std::size_t i = 0; i < n; ++i) p[i] = double(splitmix64(base + i) >> 11) * 0x1p-53;
  } else {
    fill_random_bytes(reinterpret_cast<unsigned char*>(p), n * sizeof(T), base);
  }
}

template <class T>
T from_small(unsigned v) {
  if constexpr (std::is_same_v<T, rgba8>) return rgba8{std::uint8_t(v), std::uint8_t(v), std::uint8_t(v), 255};
  else return T(v);
}

template <class T>
void fill_ramp(T* p, std::size_t n, std::uint64_t seq) {
  unsigned v = unsigned(seq % 251);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = from_small<T>(v);
    if (++v == 251) v = 0;
  }
}

template <class T>
T from_value(double x) {
  if constexpr (std::is_same_v<T, rgba8>) {
    auto c = std::uint8_t(std::lround(std::min(255.0, std::max(0.0, x))));
    return rgba8{c, c, c, 255};
  } else {
    return T(x);
  }
}

template <class T>
bool representable(double x) {
  if constexpr (std::is_floating_point_v<T>) return true;
  else if constexpr (std::is_same_v<T, rgba8>) return !std::isnan(x);  // clamped to 0..255
  else return x >= double(std::numeric_limits<T>::lowest()) && x <= double(std::numeric_limits<T>::max()) && std::trunc(x) == x;
}

class generator_impl final : public sinew::detail::source_impl {
 public:
  explicit generator_impl(const generator_options& o) : o_(o) {
    const std::string who = "generator";
    o_.layout.check(who);
    if (o.pattern == "random") pat_ = pattern::random;
    else if (o.pattern == "ramp") pat_ = pattern::ramp;
    else if (o.pattern == "constant") pat_ = pattern::constant;
    else throw error(who + ": unknown pattern '" + o.pattern + "' (random, ramp or constant)");
    if (!(o.rate >= 0) || std::isinf(o.rate)) throw error(who + ": rate must be a finite number >= 0, not " + std::to_string(o.rate));
    for (std::size_t b = 0; b < o_.layout.buffers.size(); ++b) {
      const elem_type& t = *o_.layout.buffers[b];
      bool ok = true;
      bool known = detail::visit_type(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (pat_ == pattern::constant) ok = representable<T>(o.value);
      });
      if (!known && pat_ != pattern::random)
        throw error(who + ": the '" + o.pattern + "' pattern cannot fill buffer " + std::to_string(b) + " of type " +
                    type_name(t) + " (only random bytes can)");
      if (!ok)
        throw error(who + ": the constant " + std::to_string(o.value) + " does not fit buffer " + std::to_string(b) +
                    " of type " + type_name(t));
    }
    image_ = pat_ == pattern::random && o_.layout.buffers.size() == 1 && o_.layout.shape.rank == 2 &&
             o_.layout.buffers[0]->same_as(elem_type_of<rgba8>());
  }

  bool next(unit_builder& b) override {
    const std::uint64_t seq = b.seq();
    if (o_.count && seq >= *o_.count) return false;
    if (o_.rate > 0 && !pace(seq)) return false;
    if (b.stop_requested()) return false;
    const record_layout& l = o_.layout;
    b.set_shape(l.shape);
    if (image_) {
      auto img = workloads::make_image(l.shape.ext[0], l.shape.ext[1], hash64(o_.seed, seq));
      b.add(img.buffer());  // shared, not copied
      return true;
    }
    const std::size_t n = l.shape.count();
    for (std::size_t k = 0; k < l.buffers.size(); ++k) {
      buffer_ref buf = buffer_pool::global().acquire(n, *l.buffers[k]);
      void* p = buf->data();
      bool known = detail::visit_type(*l.buffers[k], [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* d = static_cast<T*>(p);
        switch (pat_) {
          case pattern::random: fill_random(d, n, hash64(hash64(o_.seed, seq), k)); break;
          case pattern::ramp: fill_ramp(d, n, seq); break;
          case pattern::constant: std::fill(d, d + n, from_value<T>(o_.value)); break;
        }
      });
      if (!known)  // checked in the constructor: only "random" gets here
        fill_random_bytes(static_cast<unsigned char*>(p), n * l.buffers[k]->size, hash64(hash64(o_.seed, seq), k));
      b.add(std::move(buf));
    }
    return true;
  }

  std::optional<std::uint64_t> size_hint() const override { return o_.count; }
  std::string label() const override { return "source(generator " + o_.pattern + " " + o_.layout.str() + ")"; }
  // Paced generators sleep, so they get a thread; unpaced ones are a stage.
  bool blocking() const override { return o_.rate > 0; }
  void interrupt() override {
    std::lock_guard<std::mutex> lk(m_);
    interrupted_ = true;
    cv_.notify_all();
  }

 private:
  // Sleeps until unit `seq` is due (start + seq / rate); false if interrupted.
  bool pace(std::uint64_t seq) {
    using clock = std::chrono::steady_clock;
    std::unique_lock<std::mutex> lk(m_);
    if (seq == 0) start_ = clock::now();
    auto due = start_ + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(double(seq) / o_.rate));
    return !cv_.wait_until(lk, due, [&] { return interrupted_; });
  }

  generator_options o_;
  pattern pat_ = pattern::random;
  bool image_ = false;
  std::mutex m_;
  std::condition_variable cv_;
  bool interrupted_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

sinew::source generator(const generator_options& o) { return sinew::source(std::make_shared<generator_impl>(o)); }

}  // namespace sinew::io
