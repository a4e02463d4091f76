#include <sinew/buffer_pool.hpp>

#include <cstdlib>
#include <new>

namespace sinew {

void buffer::release() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (pool_) pool_->give_back(this);
  else delete this;  // external memory: only the header is ours
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

buffer_ref buffer_pool::acquire(std::size_t count, const elem_type& type) {
  auto [cls, cap] = size_class(count * type.size);
  acquires_.fetch_add(1, std::memory_order_relaxed);
  buffer* b = nullptr;
  {
    bucket& bk = buckets_[cls];
    std::lock_guard<std::mutex> lk(bk.m);
    if (!bk.free.empty()) {
      b = bk.free.back();
      bk.free.pop_back();
    }
  }
  if (b) {
    reuses_.fetch_add(1, std::memory_order_relaxed);
    cached_.fetch_sub(cap, std::memory_order_relaxed);
  } else {
    void* mem = std::aligned_alloc(buffer::alignment, cap);
    if (!mem) {
      trim();  // give cached memory back and try once more
      mem = std::aligned_alloc(buffer::alignment, cap);
      if (!mem) throw std::bad_alloc();
    }
    b = new buffer();
    b->data_ = mem;
    b->capacity_ = cap;
    b->size_class_ = cls;
    b->pool_ = this;
    allocations_.fetch_add(1, std::memory_order_relaxed);
  }
  b->count_ = count;
  b->type_ = &type;
  std::uint64_t now = in_use_.fetch_add(cap, std::memory_order_relaxed) + cap;
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {}
  return buffer_ref(b);
}

void buffer_pool::give_back(buffer* b) noexcept {
  std::size_t cap = b->capacity_;
  in_use_.fetch_sub(cap, std::memory_order_relaxed);
  if (cached_.fetch_add(cap, std::memory_order_relaxed) + cap <= max_cached_) {
    bucket& bk = buckets_[b->size_class_];
    std::lock_guard<std::mutex> lk(bk.m);
    try {
      bk.free.push_back(b);
      return;
    } catch (...) {
    }
  }
  cached_.fetch_sub(cap, std::memory_order_relaxed);
  std::free(b->data_);
  delete b;
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
      std::free(b->data_);
      delete b;
    }
  }
}

buffer_pool::statistics buffer_pool::stats() const {
  statistics s;
  s.acquires = acquires_.load();
  s.reuses = reuses_.load();
  s.allocations = allocations_.load();
  s.bytes_in_use = in_use_.load();
  s.bytes_cached = cached_.load();
  s.peak_bytes_in_use = peak_.load();
  return s;
}

}  // namespace sinew
