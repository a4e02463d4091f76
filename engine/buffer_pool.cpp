#include <sinew/engine/buffer_pool.hpp>

#include <sinew/engine/error.hpp>
#include <string>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace sinew {

void buffer::release() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (hook_.load(std::memory_order_relaxed)) drop_hook();
  if (pool_) pool_->give_back(this);
  else delete this;  // external memory: only the header is ours
}

void record_placement(buffer& b, int node, int interleave_first, unsigned nodes,
                      std::size_t page_size) noexcept {
  b.numa_node_ = std::int16_t(node);
  b.interleave_first_ = std::int16_t(interleave_first);
  b.placed_nodes_ = std::uint16_t(nodes);
  b.placed_page_ = std::uint32_t(page_size);
}

buffer_ref buffer_ref::wrap_bytes(void* data, std::size_t count, const elem_type& type) {
  auto* b = new buffer();
  b->data_ = data;
  b->count_ = count;
  b->capacity_ = count * type.size;
  b->type_ = &type;
  return buffer_ref(b);
}

buffer_pool::buffer_pool(std::size_t max_cached_bytes)
    : buckets_(new bucket[kClasses]), max_cached_(max_cached_bytes) {}

buffer_pool::~buffer_pool() { trim(); }

buffer_pool& buffer_pool::global() {
  static buffer_pool* p = new buffer_pool();  // intentionally immortal
  return *p;
}

std::pair<unsigned, std::size_t> buffer_pool::size_class(std::size_t bytes) noexcept {
  if (bytes == 0) bytes = 1;
  std::size_t lines = (bytes + 63) / 64;
  if (lines <= 16) return {unsigned(lines - 1), lines * 64};
  // 4 classes per power of two above 1 KiB.
  unsigned e = 63u - unsigned(__builtin_clzll(bytes - 1));  // 2^e < bytes <= 2^(e+1)
  std::size_t step = std::size_t(1) << (e - 2);             // quarter of 2^e
  std::size_t rounded = (bytes + step - 1) / step * step;   // 5..8 steps
  unsigned sub = unsigned(rounded / step) - 5;              // 0..3
  return {16 + (e - 10) * 4 + sub, rounded};
}

// ---- per-thread cache of the global pool ---------------------------------
// Owner-only counters (plain loads and stores on atomics: readable by stats()
// from other threads, no lock prefix on the hot path).
struct thread_cache {
  static constexpr unsigned depth = 32, batch = 16;
  struct bin {
    buffer* items[depth];
    unsigned n = 0;
  };
  bin bins[buffer_pool::kThreadCachedClasses];
  std::atomic<std::int64_t> in_use{0};
  std::atomic<std::uint64_t> acquires{0}, reuses{0};
  std::atomic<std::int64_t> cached{0};

  thread_cache();
  ~thread_cache();
  static void bump(std::atomic<std::uint64_t>& c, std::uint64_t d = 1) {
    c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
  static void bump(std::atomic<std::int64_t>& c, std::int64_t d) {
    c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
};

namespace {
struct cache_registry {
  std::mutex m;
  std::vector<thread_cache*> live;
  // Totals of caches whose threads have ended.
  std::int64_t in_use = 0;
  std::uint64_t acquires = 0, reuses = 0;
};
cache_registry& registry() {
  static cache_registry* r = new cache_registry();  // immortal, like the global pool
  return *r;
}
// Fast access: a plain initial-exec pointer (no guard, no __tls_get_addr);
// the object itself is created on first use and flushed at thread exit.
// After that (thread-exit destructors that release buffers) the thread uses
// the locked path.
[[gnu::tls_model("initial-exec")]] thread_local thread_cache* tls_ptr = nullptr;
[[gnu::tls_model("initial-exec")]] thread_local bool tls_dead = false;
thread_cache* my_cache() {
  if (thread_cache* p = tls_ptr; __builtin_expect(p != nullptr, 1)) return p;
  if (tls_dead) return nullptr;
  static thread_local thread_cache holder;
  tls_ptr = &holder;
  return &holder;
}
}  // namespace

thread_cache::thread_cache() {
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.m);
  r.live.push_back(this);
}

thread_cache::~thread_cache() {
  tls_ptr = nullptr;
  tls_dead = true;
  auto& pool = buffer_pool::global();
  for (unsigned c = 0; c < buffer_pool::kThreadCachedClasses; ++c) {
    bin& b = bins[c];
    if (b.n == 0) continue;
    auto& bk = pool.buckets_[c];
    std::size_t bytes = 0;
    {
      std::lock_guard<std::mutex> lk(bk.m);
      for (unsigned i = 0; i < b.n; ++i) {
        bytes += b.items[i]->capacity();
        bk.free.push_back(b.items[i]);
      }
    }
    // Counted in the pool's cached bytes from now on (a refill subtracts
    // them again: uncounted, the total would wrap below zero and the pool
    // would stop keeping large buffers).
    pool.cached_.fetch_add(bytes, std::memory_order_relaxed);
    b.n = 0;
  }
  auto& r = registry();
  std::lock_guard<std::mutex> lk(r.m);
  r.live.erase(std::find(r.live.begin(), r.live.end(), this));
  r.in_use += in_use.load();
  r.acquires += acquires.load();
  r.reuses += reuses.load();
}

buffer* buffer_pool::take_cached(unsigned cls, std::size_t cap) noexcept {
  bucket& bk = buckets_[cls];
  std::lock_guard<std::mutex> lk(bk.m);
  if (bk.free.empty()) return nullptr;
  buffer* b = bk.free.back();
  bk.free.pop_back();
  cached_.fetch_sub(cap, std::memory_order_relaxed);
  return b;
}

buffer* buffer_pool::allocate(unsigned cls, std::size_t cap) {
  if (const std::size_t lim = limit_.load(std::memory_order_relaxed)) {
    if (held_.load(std::memory_order_relaxed) + cap > lim) {
      trim();  // cached buffers count against the limit: free them first
      const std::uint64_t held = held_.load(std::memory_order_relaxed);
      if (held + cap > lim)
        throw error("memory limit of " + std::to_string(lim >> 20) + " MiB exceeded: a buffer of " +
                    std::to_string(cap >> 10) + " KiB was needed with " + std::to_string(held >> 10) +
                    " KiB already in use");
    }
  }
  // Below 64 KiB the header and the data are one block, the header in the
  // line before the data and both in one 128-byte pair: whoever reads the
  // buffer next (often another core) fetches them together instead of
  // following data_ to a second miss. Blocks of 64 KiB and more start on a
  // page (their size classes are whole pages), so that a placer can bind
  // their pages to NUMA nodes.
  auto block = [this](std::size_t align, std::size_t bytes) {
    void* mem = std::aligned_alloc(align, bytes);
    if (!mem) {
      trim();  // give cached memory back and try once more
      mem = std::aligned_alloc(align, bytes);
      if (!mem) throw std::bad_alloc();
    }
    return mem;
  };
  buffer* b;
  if (cap < inline_below) {
    constexpr std::size_t pair = 2 * buffer::alignment;
    void* mem = block(pair, (buffer::alignment + cap + pair - 1) / pair * pair);
    b = new (mem) buffer();
    b->data_ = static_cast<char*>(mem) + buffer::alignment;
  } else {
    void* mem = block(4096, cap);
    b = new buffer();
    b->data_ = mem;
  }
  b->capacity_ = cap;
  b->size_class_ = std::uint16_t(cls);
  b->pool_ = this;
  allocations_.fetch_add(1, std::memory_order_relaxed);
  held_.fetch_add(cap, std::memory_order_relaxed);
  return b;
}

void buffer_pool::note_in_use(std::int64_t delta) noexcept {
  std::uint64_t now = in_use_.fetch_add(std::uint64_t(delta), std::memory_order_relaxed) + std::uint64_t(delta);
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && now < (std::uint64_t(1) << 63) &&
         !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {}
}

buffer_ref buffer_pool::acquire(std::size_t count, const elem_type& type) {
  auto [cls, cap] = size_class(count * type.size);
  buffer* b = nullptr;
  thread_cache* tcp = (this == &global() && cls < kThreadCachedClasses) ? my_cache() : nullptr;
  if (tcp) {
    thread_cache& tc = *tcp;
    thread_cache::bin& bin = tc.bins[cls];
    if (bin.n == 0) {  // refill a batch under one lock
      bucket& bk = buckets_[cls];
      std::lock_guard<std::mutex> lk(bk.m);
      unsigned take = unsigned(std::min<std::size_t>(thread_cache::batch, bk.free.size()));
      for (unsigned i = 0; i < take; ++i) {
        bin.items[bin.n++] = bk.free.back();
        bk.free.pop_back();
      }
      cached_.fetch_sub(take * cap, std::memory_order_relaxed);
      thread_cache::bump(tc.cached, std::int64_t(take * cap));
      note_in_use(0);  // sample the peak on the slow path
    }
    thread_cache::bump(tc.acquires);
    if (bin.n) {
      b = bin.items[--bin.n];
      thread_cache::bump(tc.reuses);
      thread_cache::bump(tc.cached, -std::int64_t(cap));
    } else {
      b = allocate(cls, cap);
    }
    thread_cache::bump(tc.in_use, std::int64_t(cap));
  } else {
    acquires_.fetch_add(1, std::memory_order_relaxed);
    b = take_cached(cls, cap);
    if (b) reuses_.fetch_add(1, std::memory_order_relaxed);
    else b = allocate(cls, cap);
    note_in_use(std::int64_t(cap));
  }
  b->count_ = count;
  b->type_ = &type;
  if (b->placed_nodes_) record_placement(*b, -1, -1, 0, 0);  // a reused block: placed anew by its next writer
  return buffer_ref(b);
}

void buffer_pool::give_back(buffer* b) noexcept {
  std::size_t cap = b->capacity_;
  unsigned cls = b->size_class_;
  thread_cache* tcp = (this == &global() && cls < kThreadCachedClasses) ? my_cache() : nullptr;
  if (tcp) {
    thread_cache& tc = *tcp;
    thread_cache::bump(tc.in_use, -std::int64_t(cap));
    thread_cache::bin& bin = tc.bins[cls];
    if (bin.n == thread_cache::depth) {  // drain a batch under one lock
      bucket& bk = buckets_[cls];
      std::lock_guard<std::mutex> lk(bk.m);
      try {
        for (unsigned i = 0; i < thread_cache::batch; ++i) bk.free.push_back(bin.items[--bin.n]);
      } catch (...) {
      }
      cached_.fetch_add(thread_cache::batch * cap, std::memory_order_relaxed);
      thread_cache::bump(tc.cached, -std::int64_t(thread_cache::batch * cap));
    }
    bin.items[bin.n++] = b;
    thread_cache::bump(tc.cached, std::int64_t(cap));
    return;
  }
  note_in_use(-std::int64_t(cap));
  if (cached_.fetch_add(cap, std::memory_order_relaxed) + cap <= max_cached_) {
    bucket& bk = buckets_[cls];
    std::lock_guard<std::mutex> lk(bk.m);
    try {
      bk.free.push_back(b);
      return;
    } catch (...) {
    }
  }
  cached_.fetch_sub(cap, std::memory_order_relaxed);
  held_.fetch_sub(cap, std::memory_order_relaxed);
  free_block(b);
}

void buffer_pool::free_block(buffer* b) noexcept {
  if (b->capacity_ < inline_below) {  // one block with its header (allocate)
    b->~buffer();
    std::free(b);
  } else {
    std::free(b->data_);
    delete b;
  }
}

void buffer_pool::trim() {
  for (unsigned c = 0; c < kClasses; ++c) {
    std::vector<buffer*> v;
    {
      std::lock_guard<std::mutex> lk(buckets_[c].m);
      v.swap(buckets_[c].free);
    }
    for (buffer* b : v) {
      cached_.fetch_sub(b->capacity_, std::memory_order_relaxed);
      held_.fetch_sub(b->capacity_, std::memory_order_relaxed);
      free_block(b);
    }
  }
}

buffer_pool::statistics buffer_pool::stats() const {
  statistics s;
  s.acquires = acquires_.load();
  s.reuses = reuses_.load();
  s.allocations = allocations_.load();
  std::int64_t in_use = std::int64_t(in_use_.load());
  std::int64_t cached = std::int64_t(cached_.load());
  if (this == &global()) {
    auto& r = registry();
    std::lock_guard<std::mutex> lk(r.m);
    in_use += r.in_use;
    s.acquires += r.acquires;
    s.reuses += r.reuses;
    for (thread_cache* c : r.live) {
      in_use += c->in_use.load(std::memory_order_relaxed);
      s.acquires += c->acquires.load(std::memory_order_relaxed);
      s.reuses += c->reuses.load(std::memory_order_relaxed);
      cached += c->cached.load(std::memory_order_relaxed);
    }
  }
  s.bytes_in_use = std::uint64_t(std::max<std::int64_t>(0, in_use));
  s.bytes_cached = std::uint64_t(std::max<std::int64_t>(0, cached));
  s.peak_bytes_in_use = std::max<std::uint64_t>(peak_.load(), s.bytes_in_use);
  s.bytes_held = held_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace sinew
