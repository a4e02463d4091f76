// Coherence of host/device copies (include/sinew/opencl/coherence.hpp), checked
// against simulated device spaces (plain host memory with counted transfers)
// by enumerating every short sequence of reads and writes over the host, two
// devices and sub-views with halos.
#include <catch2/catch.hpp>

#include <sinew/engine/buffer_pool.hpp>
#include <sinew/opencl/coherence.hpp>
#include <sinew/engine/error.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <vector>

namespace coh = sinew::coherence;

namespace {

/// A device with its own memory (malloc'd), so stale copies really differ.
class sim_space final : public coh::memory_space {
 public:
  explicit sim_space(std::string n, bool unified = false) : name_(std::move(n)), unified_(unified) {}
  ~sim_space() override { retire(); }
  std::string name() const override { return name_; }
  bool shares_host() const override { return unified_; }
  void* allocate(void* host, std::size_t bytes) override {
    if (unified_) return host;
    auto* p = new std::vector<unsigned char>(bytes, 0xEE);  // garbage until uploaded
    live++;
    return p;
  }
  void release(void* h) noexcept override {
    if (!unified_) delete static_cast<std::vector<unsigned char>*>(h), live--;
  }
  void upload(void* h, std::size_t off, const void* src, std::size_t n) override {
    std::memcpy(mem(h) + off, src, n);
  }
  void download(void* h, std::size_t off, void* dst, std::size_t n) override {
    std::memcpy(dst, mem(h) + off, n);
  }
  void sync_to_host(void*, std::size_t, std::size_t n) override { synced += n; }
  unsigned char* mem(void* h) const {
    return unified_ ? static_cast<unsigned char*>(h) : static_cast<std::vector<unsigned char>*>(h)->data();
  }
  std::atomic<int> live{0};
  std::atomic<std::size_t> synced{0};

 private:
  std::string name_;
  bool unified_;
};

using bytes = std::vector<bool>;

bytes as_bits(const std::vector<coh::range>& rs, std::size_t n) {
  bytes b(n, false);
  for (auto r : rs)
    for (std::size_t i = r.begin; i < r.end; ++i) b[i] = true;
  return b;
}

}  // namespace

TEST_CASE("coherence: every read/write sequence over host, two devices and sub-views keeps one correct valid set",
          "[coherence][opencl]") {
  // Buffer of 16 u8 elements; ranges: whole, halves, and a sub-view of 4
  // elements with a 2-element halo (reads 2..10, writes 4..8).
  constexpr std::size_t N = 16;
  sim_space dev_a("a"), dev_b("b");
  struct rng {
    coh::range read, write;
  };
  coh::subview v{4, 4, 2, 2};
  auto probe = sinew::buffer_pool::global().acquire<std::uint8_t>(N);
  const std::vector<rng> regions = {{{0, N}, {0, N}},
                                    {{0, N / 2}, {0, N / 2}},
                                    {{N / 2, N}, {N / 2, N}},
                                    {v.read_range(*probe), v.write_range(*probe)}};
  probe.reset();
  REQUIRE(regions[3].read == coh::range{2, 10});
  REQUIRE(regions[3].write == coh::range{4, 8});

  // op = space (0 host, 1 a, 2 b) x read/write x region.
  struct op {
    int space;
    bool write;
    int region;
  };
  std::vector<op> ops;
  for (int s = 0; s < 3; ++s)
    for (int w = 0; w < 2; ++w)
      for (int r = 0; r < 4; ++r) ops.push_back({s, w == 1, r});

  std::size_t sequences = 0;
  const std::size_t L = 3;
  std::vector<std::size_t> idx(L, 0);
  for (;;) {
    auto buf = sinew::buffer_pool::global().acquire<std::uint8_t>(N);
    std::uint8_t* host = buf.data<std::uint8_t>();
    std::vector<std::uint8_t> truth(N);
    for (std::size_t i = 0; i < N; ++i) truth[i] = host[i] = std::uint8_t(i);
    // Model: which spaces hold a valid copy of each byte.
    std::vector<bytes> model(3, bytes(N, false));
    model[0] = bytes(N, true);
    sim_space* devs[3] = {nullptr, &dev_a, &dev_b};
    std::uint8_t stamp = 100;
    for (std::size_t k = 0; k < L; ++k) {
      const op& o = ops[idx[k]];
      const rng& g = regions[o.region];
      INFO("sequence " << sequences << " step " << k << ": space " << o.space << (o.write ? " write" : " read") << " region "
                            << o.region);
      if (!o.write) {
        unsigned char* mem = host;
        if (o.space == 0) coh::host_read(*buf, g.read);
        else mem = devs[o.space]->mem(coh::read(*buf, *devs[o.space], g.read));
        for (std::size_t i = g.read.begin; i < g.read.end; ++i) {
          REQUIRE(mem[i] == truth[i]);
          // Device-to-device transfers are staged through the host, which
          // then holds a valid copy too.
          if (!model[o.space][i] && !model[0][i]) model[0][i] = true;
          model[o.space][i] = true;
        }
      } else {
        // A kernel writing the range: the space's memory gets a new stamp.
        ++stamp;
        unsigned char* mem = host;
        if (o.space == 0) coh::host_write(*buf, g.write);
        else {
          coh::access a(*buf, *devs[o.space], {}, g.write);
          mem = devs[o.space]->mem(a.handle());
        }
        for (std::size_t i = g.write.begin; i < g.write.end; ++i) {
          mem[i] = truth[i] = std::uint8_t(stamp + i);
          for (int s = 0; s < 3; ++s) model[s][i] = s == o.space;
        }
      }
      // The record's valid sets are exactly the model's, every byte has a
      // valid copy, and every valid copy holds the right bytes.
      for (int s = 0; s < 3; ++s) {
        unsigned id = s == 0 ? 0 : devs[s]->id();
        bytes got = as_bits(coh::valid_ranges(*buf, id), N);
        INFO("valid set of space " << s);
        REQUIRE(got == model[s]);
      }
      for (std::size_t i = 0; i < N; ++i) {
        REQUIRE((model[0][i] || model[1][i] || model[2][i]));
        if (model[0][i]) REQUIRE(host[i] == truth[i]);
      }
      for (int s = 1; s < 3; ++s) {
        auto vr = coh::valid_ranges(*buf, devs[s]->id());
        if (vr.empty()) continue;
        unsigned char* mem = devs[s]->mem(coh::read(*buf, *devs[s], vr.front()));
        for (auto r : vr)
          for (std::size_t i = r.begin; i < r.end; ++i) REQUIRE(mem[i] == truth[i]);
      }
    }
    // Finally the host sees the latest data everywhere.
    coh::host_read(*buf, coh::whole(*buf));
    for (std::size_t i = 0; i < N; ++i) REQUIRE(host[i] == truth[i]);
    REQUIRE_FALSE(coh::host_stale(*buf));
    ++sequences;
    std::size_t k = 0;
    while (k < L && ++idx[k] == ops.size()) idx[k++] = 0;
    if (k == L) break;
  }
  CHECK(sequences == 24 * 24 * 24);
  // Releasing the buffers released their device copies.
  CHECK(dev_a.live == 0);
  CHECK(dev_b.live == 0);
}

TEST_CASE("coherence: lazy transfers move only what is missing", "[coherence][opencl]") {
  sim_space dev("d");
  auto buf = sinew::buffer_pool::global().acquire<float>(1000);
  for (int i = 0; i < 1000; ++i) buf.data<float>()[i] = float(i);
  const std::size_t B = 4000;
  coh::read(*buf, dev, {0, B / 2});
  coh::read(*buf, dev, {0, B});  // only the second half goes up
  auto s = dev.stats();
  CHECK(s.uploads == 2);
  CHECK(s.upload_bytes == B);
  coh::read(*buf, dev, {0, B});  // nothing to do
  CHECK(dev.stats().uploads == 2);
  // The device writes a middle part: the host reads it back, once.
  coh::write(*buf, dev, {1000, 2000});
  CHECK(coh::host_stale(*buf));
  coh::host_read(*buf, {0, 500});  // valid there already
  CHECK(dev.stats().downloads == 0);
  coh::host_read(*buf, {0, B});
  CHECK(dev.stats().downloads == 1);
  CHECK(dev.stats().download_bytes == 1000);
  CHECK_FALSE(coh::host_stale(*buf));
}

TEST_CASE("coherence: a space sharing host memory never copies", "[coherence][opencl]") {
  sim_space uni("u", /*unified*/ true), dev("d");
  auto buf = sinew::buffer_pool::global().acquire<std::uint32_t>(64);
  for (int i = 0; i < 64; ++i) buf.data<std::uint32_t>()[i] = 7;
  {
    coh::access a(*buf, uni, coh::whole(*buf), coh::whole(*buf));
    CHECK(a.handle() == buf->data());
    static_cast<std::uint32_t*>(a.handle())[5] = 9;  // the "kernel"
  }
  CHECK(uni.synced == buf->bytes());  // map/unmap after the write
  CHECK(uni.stats().uploads == 0);
  CHECK(uni.stats().downloads == 0);
  CHECK(coh::valid_ranges(*buf, 0) == std::vector<coh::range>{coh::whole(*buf)});
  // A discrete device then writes; the unified one reads: one download.
  coh::write(*buf, dev, {0, 16});
  std::memset(dev.mem(coh::read(*buf, dev, {0, 16})), 1, 16);
  coh::read(*buf, uni, coh::whole(*buf));
  CHECK(dev.stats().downloads == 1);
  CHECK(buf.data<std::uint32_t>()[0] == 0x01010101u);
  CHECK(buf.data<std::uint32_t>()[5] == 9u);
}

TEST_CASE("coherence: eviction under a budget never loses the only valid copy", "[coherence][opencl]") {
  sim_space dev("small");
  constexpr std::size_t n = 256;  // floats: 1 KiB per buffer
  dev.set_budget(2 * n * sizeof(float));
  std::vector<sinew::buffer_ref> bufs;
  for (int k = 0; k < 5; ++k) {
    auto b = sinew::buffer_pool::global().acquire<float>(n);
    for (std::size_t i = 0; i < n; ++i) b.data<float>()[i] = 0;
    // The device produces the buffer: its only valid copy is on the device.
    coh::access a(*b, dev, {}, coh::whole(*b));
    float* d = reinterpret_cast<float*>(dev.mem(a.handle()));
    for (std::size_t i = 0; i < n; ++i) d[i] = float(k * 1000 + int(i));
    bufs.push_back(b);
  }
  auto s = dev.stats();
  CHECK(s.resident_bytes <= dev.budget());
  CHECK(s.evictions == 3);
  CHECK(s.write_backs == 3);  // each evicted copy was the only one: written back first
  CHECK(dev.live == 2);
  for (int k = 0; k < 5; ++k) {
    coh::host_read(*bufs[k], coh::whole(*bufs[k]));
    for (std::size_t i = 0; i < n; ++i) REQUIRE(bufs[k].data<float>()[i] == float(k * 1000 + int(i)));
  }
  // A copy in use (an access alive) is not evicted; others are.
  {
    coh::access pinned(*bufs[0], dev, coh::whole(*bufs[0]), {});
    CHECK_FALSE(coh::evict(*bufs[0], dev));
    coh::read(*bufs[1], dev, coh::whole(*bufs[1]));
    coh::read(*bufs[2], dev, coh::whole(*bufs[2]));
    CHECK(coh::valid_ranges(*bufs[0], dev.id()).size() == 1);
  }
  CHECK(coh::evict(*bufs[0], dev));
  CHECK(coh::valid_ranges(*bufs[0], dev.id()).empty());
  // Host copies survived every eviction (host still valid: nothing was lost).
  for (int k = 0; k < 5; ++k) CHECK_FALSE(coh::host_stale(*bufs[k]));
}

TEST_CASE("coherence: a released copy's memory serves the next copy of its size, within the reuse limit",
          "[coherence][opencl]") {
  sim_space dev("reusing");
  constexpr std::size_t n = 256;  // floats: 1 KiB per buffer
  const std::size_t kib = n * sizeof(float);
  dev.set_reuse_limit(3 * kib);
  auto filled = [](float v) {
    auto b = sinew::buffer_pool::global().acquire<float>(n);
    for (std::size_t i = 0; i < n; ++i) b.data<float>()[i] = v;
    return b;
  };
  {
    auto b = filled(1);
    coh::access a(*b, dev, {}, coh::whole(*b));  // the device writes it: its only valid copy
    std::memset(dev.mem(a.handle()), 0xAA, kib);
  }  // released: its device memory is kept, its bytes forgotten
  auto s = dev.stats();
  CHECK(s.allocations == 1);
  CHECK(s.kept_bytes == kib);
  CHECK(s.resident_bytes == 0);
  CHECK(dev.live == 1);
  {
    auto b = filled(7);
    auto* mem = reinterpret_cast<float*>(dev.mem(coh::read(*b, dev, coh::whole(*b))));
    for (std::size_t i = 0; i < n; ++i) REQUIRE(mem[i] == 7.0f);  // uploaded over the old bytes
    s = dev.stats();
    CHECK(s.allocations == 1);
    CHECK(s.reuses == 1);
    CHECK(s.kept_bytes == 0);
    CHECK(dev.live == 1);
    auto other = sinew::buffer_pool::global().acquire<float>(2 * n);  // another size: a fresh allocation
    coh::read(*other, dev, coh::whole(*other));
    CHECK(dev.stats().allocations == 2);
  }
  CHECK(dev.stats().kept_bytes == 3 * kib);
  // Beyond the limit the largest kept allocations are released.
  {
    std::vector<sinew::buffer_ref> bufs;
    for (int k = 0; k < 4; ++k) {
      bufs.push_back(filled(float(k)));
      coh::read(*bufs.back(), dev, coh::whole(*bufs.back()));
    }
    s = dev.stats();
    CHECK(s.reuses == 2);  // the kept 1 KiB allocation serves the first; the kept 2 KiB one fits none
    CHECK(dev.live == 5);
  }
  s = dev.stats();
  CHECK(s.kept_bytes == 3 * kib);
  CHECK(dev.live == 3);
  // Under a budget kept memory goes before any resident copy is evicted.
  dev.set_budget(4 * kib);
  {
    auto big = sinew::buffer_pool::global().acquire<float>(3 * n);
    coh::read(*big, dev, coh::whole(*big));
    s = dev.stats();
    CHECK(s.evictions == 0);
    CHECK(s.resident_bytes + s.kept_bytes <= dev.budget());
    CHECK(s.kept_bytes == kib);
    CHECK(dev.live == 2);
  }
  dev.set_budget(0);
  dev.trim();
  CHECK(dev.stats().kept_bytes == 0);
  CHECK(dev.live == 0);
}

TEST_CASE("coherence: out-of-range accesses are errors", "[coherence][opencl]") {
  sim_space dev("d");
  auto b = sinew::buffer_pool::global().acquire<float>(4);
  CHECK_THROWS_WITH(coh::read(*b, dev, {0, 17}), Catch::Contains("outside the buffer (16 bytes)"));
  CHECK_THROWS_AS(coh::host_write(*b, {8, 4}), sinew::error);
}

TEST_CASE("coherence: threads evicting each other's copies under a budget lose nothing", "[coherence][opencl][tsan]") {
  sim_space dev("shared");
  constexpr std::size_t n = 64;  // u32: 256 bytes per buffer
  dev.set_budget(3 * n * sizeof(std::uint32_t));  // fewer copies than the threads use
  constexpr int threads = 4, rounds = 200;
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  // All buffers live and the rounds start together, so the threads' copies
  // compete for the budget (8 buffers, room for 3).
  std::latch start(threads), done(threads);
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      std::vector<sinew::buffer_ref> mine;
      for (int k = 0; k < 2; ++k) {
        auto b = sinew::buffer_pool::global().acquire<std::uint32_t>(n);
        for (std::size_t i = 0; i < n; ++i) b.data<std::uint32_t>()[i] = 0;
        mine.push_back(b);
      }
      start.arrive_and_wait();
      for (int r = 1; r <= rounds; ++r) {
        auto& b = mine[r % 2];
        {
          // The device increments the buffer: only valid copy on the device.
          coh::access a(*b, dev, coh::whole(*b), coh::whole(*b));
          auto* d = reinterpret_cast<std::uint32_t*>(dev.mem(a.handle()));
          for (std::size_t i = 0; i < n; ++i) d[i] += 1;
        }
        if (r % 7 == 0) {
          coh::host_read(*b, coh::whole(*b));
          auto* h = b.data<std::uint32_t>();
          // Rounds r' <= r with the parity of r touched this buffer.
          for (std::size_t i = 0; i < n; ++i) bad += h[i] != std::uint32_t((r + 1) / 2);
        }
      }
      // Each buffer was incremented rounds/2 times, whatever was evicted meanwhile.
      for (auto& b : mine) {
        coh::host_read(*b, coh::whole(*b));
        for (std::size_t i = 0; i < n; ++i) bad += b.data<std::uint32_t>()[i] != std::uint32_t(rounds / 2);
      }
      done.arrive_and_wait();
    });
  for (auto& t : ts) t.join();
  CHECK(bad == 0);
  // 8 buffers stay alive until the end with room for 3: copies were evicted
  // (whether they needed a write-back depends on the interleaving).
  CHECK(dev.stats().evictions > 0);
}
