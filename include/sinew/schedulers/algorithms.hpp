#pragma once
/// \file algorithms.hpp
/// Parallel algorithms over any `sinew::scheduler`: invoke, reduce, scan and
/// sort. They are built on `task_group` and `parallel_for`, so they run under
/// every policy, from outside threads and from inside tasks (a worker that
/// waits runs other tasks meanwhile, so they nest). An exception thrown by a
/// user function is rethrown in the caller once the algorithm's other tasks
/// have finished (the first one recorded wins).
///
/// Reduce and scan split the range into fixed blocks (`grain` elements, or
/// sizes that depend only on the length and the scheduler's concurrency)
/// and combine the per-block results in index order, so their
/// results do not depend on which worker ran which block: an associative
/// but non-commutative operation gives the serial order's result, and a
/// floating-point one gives the same bits on every run of a given length,
/// grain and concurrency.
///
/// \code
/// sinew::steal_scheduler s(4);
/// int a = 0, b = 0;
/// sinew::parallel_invoke(s, [&] { a = f(); }, [&] { b = g(); });   // rethrows if either threw
///
/// // Index form: block(b, e, acc) folds [b, e) into acc (given the identity).
/// double sum = sinew::parallel_reduce(
///     s, x.size(), 4096, 0.0,
///     [&](std::size_t b, std::size_t e, double acc) { for (auto i = b; i < e; ++i) acc += x[i]; return acc; },
///     std::plus<>{});
/// // Iterator form: init op x[0] op x[1] ... (op associative).
/// double sum2 = sinew::parallel_reduce(s, x.begin(), x.end(), 0.0);
///
/// sinew::parallel_inclusive_scan(s, x.begin(), x.end(), y.begin());        // y[i] = x[0] + ... + x[i]
/// sinew::parallel_exclusive_scan(s, x.begin(), x.end(), x.begin(), 0.0);   // in place: x[0] + ... + x[i-1]
///
/// sinew::parallel_sort(s, v.begin(), v.end());                           // std::less<>
/// sinew::parallel_sort(s, v.begin(), v.end(), std::greater<>{});
/// \endcode
#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <sinew/schedulers/scheduler.hpp>

namespace sinew {

// ------------------------------------------------------------------ invoke

/// Runs every `f()` in parallel and returns when all have finished: all but
/// the last as tasks of one `task_group`, the last on the calling thread.
/// If several throw, the exception of the last function (the caller's) is
/// rethrown if it threw, else the first a task threw.
///
/// \code
/// sinew::parallel_invoke(s, [&] { left = sum(b, mid); }, [&] { right = sum(mid, e); });
/// \endcode
template <class... F>
void parallel_invoke(scheduler& s, F&&... f) {
  if constexpr (sizeof...(F) == 1) {
    (f(), ...);
  } else if constexpr (sizeof...(F) > 1) {
    task_group g(s);
    std::exception_ptr own;
    std::size_t i = 0;
    const std::size_t last = sizeof...(F) - 1;
    auto start = [&](auto& fn) {
      if (i++ < last) {
        g.run([&fn] { fn(); });
      } else {
        try {
          fn();
        } catch (...) {
          own = std::current_exception();
        }
      }
    };
    try {
      (start(f), ...);
      g.wait();
    } catch (...) {
      if (!own) own = std::current_exception();  // g.run threw (then the group's destructor waits) or a task did
    }
    if (own) std::rethrow_exception(own);
  }
}

namespace detail {

/// Block length for the iterator form of reduce: about eight
/// blocks per worker, none shorter than 16384 elements (a shorter block
/// costs more to hand out than to run). Depends only on n and concurrency.
inline std::size_t auto_grain(std::size_t n, unsigned concurrency) noexcept {
  const std::size_t blocks = std::size_t(concurrency == 0 ? 1 : concurrency) * 8;
  return std::max<std::size_t>((n + blocks - 1) / blocks, 16384);
}

/// Runs `part(b, e)` for each block [k grain, min(n, (k+1) grain)) in
/// parallel and returns the results in block order.
template <class T, class Part>
std::vector<std::optional<T>> block_results(scheduler& s, const locality_hint& hint, std::size_t n,
                                            std::size_t grain, Part&& part) {
  if (grain == 0) grain = 1;
  const std::size_t blocks = (n + grain - 1) / grain;
  std::vector<std::optional<T>> r(blocks);
  s.parallel_for_at(hint, blocks, 1, [&](std::size_t kb, std::size_t ke) {
    for (std::size_t k = kb; k < ke; ++k) r[k].emplace(part(k * grain, std::min(n, (k + 1) * grain)));
  });
  return r;
}

}  // namespace detail

// ------------------------------------------------------------------ reduce

/// Index form: splits [0, n) into blocks of `grain` elements, computes
/// `block(b, e, identity)` for each in parallel (it folds [b, e) into the
/// accumulator it is given and returns it), then folds the block results
/// with `combine` in index order on the calling thread. Returns `identity`
/// for n == 0. The blocks go to `parallel_for_at(hint, ...)`.
///
/// \code
/// std::string all = sinew::parallel_reduce(
///     s, words.size(), 64, std::string{},
///     [&](std::size_t b, std::size_t e, std::string acc) {
///       for (auto i = b; i < e; ++i) acc += words[i];
///       return acc;
///     },
///     [](std::string l, const std::string& r) { return l + r; });          // words in order
/// \endcode
template <class T, class Block, class Combine>
T parallel_reduce(scheduler& s, std::size_t n, std::size_t grain, const T& identity, Block&& block,
                  Combine&& combine, const locality_hint& hint = {}) {
  if (n == 0) return identity;
  auto parts = detail::block_results<T>(s, hint, n, grain,
                                        [&](std::size_t b, std::size_t e) -> T { return block(b, e, T(identity)); });
  T acc = std::move(*parts[0]);
  for (std::size_t k = 1; k < parts.size(); ++k) acc = combine(std::move(acc), std::move(*parts[k]));
  return acc;
}

/// Iterator form: `init op x[0] op x[1] op ... op x[n-1]` for an
/// associative `op` (std::plus<> by default) over a random-access range,
/// grouped by blocks of `detail::auto_grain` elements. No locality hint (the
/// iterators do not say which buffers they point into: use the index form).
///
/// \code
/// long total = sinew::parallel_reduce(s, v.begin(), v.end(), 0L);
/// auto m = sinew::parallel_reduce(s, v.begin(), v.end(), v[0], [](int a, int b) { return std::max(a, b); });
/// \endcode
template <class It, class T, class Op = std::plus<>>
T parallel_reduce(scheduler& s, It first, It last, T init, Op op = {}) {
  const std::size_t n = std::size_t(last - first);
  if (n == 0) return init;
  auto parts = detail::block_results<T>(s, {}, n, detail::auto_grain(n, s.concurrency()),
                                        [&](std::size_t b, std::size_t e) -> T {
                                          T acc(first[b]);
                                          for (std::size_t i = b + 1; i < e; ++i) acc = op(std::move(acc), first[i]);
                                          return acc;
                                        });
  for (auto& p : parts) init = op(std::move(init), std::move(*p));
  return init;
}

// -------------------------------------------------------------------- scan

namespace detail {

/// Scans [b, e) (not empty) of `first` into `out` from `acc` (none: from
/// x[b], inclusive only); returns the running value after x[e-1]. Reads x[i]
/// before writing out[i], so `out` may be `first`.
template <class T, bool Inclusive, class In, class Out, class Op>
T scan_block(In first, Out out, std::size_t b, std::size_t e, std::optional<T> acc, Op& op) {
  std::size_t i = b;
  if (!acc) acc.emplace(first[i++]);
  else if constexpr (Inclusive) acc.emplace(op(std::move(*acc), first[i++]));
  T a = std::move(*acc);
  if constexpr (Inclusive) {
    out[b] = a;
    for (; i < e; ++i) {
      a = op(std::move(a), first[i]);
      out[i] = a;
    }
  } else {
    for (; i < e; ++i) {
      T next = op(a, first[i]);
      out[i] = std::move(a);
      a = std::move(next);
    }
  }
  return a;
}

/// Blocked scan of n elements in two parallel passes, for P workers. The
/// range is cut into a head of n/(2P-1) elements and P sub-blocks for each
/// of the 2P-2 equal parts after it. Pass 1: one task scans the head for
/// good (reading and writing it costs about twice a sum) while the others
/// sum the parts' sub-blocks; a serial scan of those sums gives every
/// sub-block's offset; pass 2: the sub-blocks are scanned from their
/// offsets, P per worker. The grouping depends only on n and P.
template <class T, bool Inclusive, class In, class Out, class Op>
Out blocked_scan(scheduler& s, In first, In last, Out out, std::optional<T> init, Op& op) {
  const std::size_t n = std::size_t(last - first);
  if (n == 0) return out;
  const std::size_t P = std::max(1u, s.concurrency());
  const std::size_t parts = 2 * P - 2, subs = parts * P;
  if (P == 1 || n < 8192 * (subs + 1)) {  // too short to share
    scan_block<T, Inclusive>(first, out, 0, n, std::move(init), op);
    return out + std::ptrdiff_t(n);
  }
  const std::size_t head = n / (2 * P - 1);
  auto sub_begin = [&](std::size_t k) { return head + (n - head) * k / subs; };
  std::vector<std::optional<T>> sum(subs + 1);  // sum[0]: through the head; sum[k+1]: sub-block k
  s.parallel_for(parts + 1, 1, [&](std::size_t jb, std::size_t je) {
    for (std::size_t j = jb; j < je; ++j) {
      if (j == 0) {
        sum[0].emplace(scan_block<T, Inclusive>(first, out, 0, head, init, op));
        continue;
      }
      for (std::size_t k = (j - 1) * P; k < j * P; ++k) {
        const std::size_t b = sub_begin(k), e = sub_begin(k + 1);
        T acc(first[b]);
        for (std::size_t i = b + 1; i < e; ++i) acc = op(std::move(acc), first[i]);
        sum[k + 1].emplace(std::move(acc));
      }
    }
  });
  for (std::size_t k = 1; k < subs; ++k) sum[k].emplace(op(*sum[k - 1], std::move(*sum[k])));
  // sum[k] is now the running value before sub-block k.
  s.parallel_for(subs, 1, [&](std::size_t kb, std::size_t ke) {
    for (std::size_t k = kb; k < ke; ++k)
      scan_block<T, Inclusive>(first, out, sub_begin(k), sub_begin(k + 1), sum[k], op);
  });
  return out + std::ptrdiff_t(n);
}

}  // namespace detail

/// out[i] = x[0] op x[1] op ... op x[i] (op associative, std::plus<> by
/// default), over random-access ranges; `out` may be `first` (in place).
/// Returns the end of the output. No locality hint, as for the iterator
/// reduce.
///
/// \code
/// sinew::parallel_inclusive_scan(s, x.begin(), x.end(), x.begin());                  // prefix sums in place
/// sinew::parallel_inclusive_scan(s, x.begin(), x.end(), y.begin(), std::plus<>{}, 100L);  // 100 + ...
/// \endcode
template <class In, class Out, class Op = std::plus<>>
Out parallel_inclusive_scan(scheduler& s, In first, In last, Out out, Op op = {}) {
  return detail::blocked_scan<std::iter_value_t<In>, true>(s, first, last, out, std::nullopt, op);
}

/// As above, starting from `init`: out[i] = init op x[0] op ... op x[i].
template <class In, class Out, class Op, class T>
Out parallel_inclusive_scan(scheduler& s, In first, In last, Out out, Op op, T init) {
  return detail::blocked_scan<T, true>(s, first, last, out, std::optional<T>(std::move(init)), op);
}

/// out[i] = init op x[0] op ... op x[i-1] (out[0] = init); `out` may be
/// `first`. Returns the end of the output.
///
/// \code
/// std::vector<std::size_t> starts(sizes.size());
/// sinew::parallel_exclusive_scan(s, sizes.begin(), sizes.end(), starts.begin(), std::size_t{0});
/// \endcode
template <class In, class Out, class T, class Op = std::plus<>>
Out parallel_exclusive_scan(scheduler& s, In first, In last, Out out, T init, Op op = {}) {
  return detail::blocked_scan<T, false>(s, first, last, out, std::optional<T>(std::move(init)), op);
}

// -------------------------------------------------------------------- sort

namespace detail {

/// Moves the sorted runs [a, ae) and [b, be) into `out` in order (ties take
/// from the first run). For scalars the choice is a conditional move
/// instead of a branch, which random data mispredicts half the time.
template <class A, class B, class Out, class Comp>
Out merge_runs(A a, A ae, B b, B be, Out out, Comp& comp) {
  using T = std::iter_value_t<A>;
  if constexpr (std::is_scalar_v<T>) {
    while (a != ae && b != be) {
      const T x = *a, y = *b;
      const bool take_b = comp(y, x);
      *out = take_b ? y : x;
      ++out;
      b += take_b;
      a += !take_b;
    }
  } else {
    while (a != ae && b != be) {
      if (comp(*b, *a)) {
        *out = std::move(*b);
        ++b;
      } else {
        *out = std::move(*a);
        ++a;
      }
      ++out;
    }
  }
  out = std::move(a, ae, out);
  return std::move(b, be, out);
}

/// How many of the first d outputs of merging [a, a+m) and [b, b+k) (ties
/// first from a) come from a: a binary search along the merge's diagonal d,
/// so that independent pieces of one merge can run in parallel.
template <class A, class B, class Comp>
std::size_t merge_split(A a, std::size_t m, B b, std::size_t k, std::size_t d, Comp& comp) {
  std::size_t lo = d > k ? d - k : 0, hi = std::min(d, m);
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (!comp(b[d - mid - 1], a[mid])) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/// Parallel merge sort with a scratch buffer of n elements: `leaves` runs
/// sorted by std::sort in parallel, then ceil(log2 leaves) levels, each
/// merging pairs of runs into the other array with parallel_for over
/// pieces of the output (each piece's inputs found by `merge_split`, so a
/// level keeps all workers busy however many runs are left). The leaves are
/// sorted where an even number of levels leaves the result in place.
template <class It, class Comp>
class merge_sorter {
  using T = std::iter_value_t<It>;
  /// Types the buffer may hold without constructing objects in it.
  static constexpr bool raw = std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T> &&
                              std::is_trivially_destructible_v<T>;

 public:
  merge_sorter(scheduler& s, It first, std::size_t n, std::size_t leaves, Comp& comp)
      : s_(s), a_(first), n_(n), comp_(comp), leaves_(leaves + 1), built_(leaves, 0) {
    for (std::size_t i = 0; i <= leaves; ++i) leaves_[i] = n * i / leaves;
    bounds_ = leaves_;
    buf_ = std::allocator<T>().allocate(n);
  }
  merge_sorter(const merge_sorter&) = delete;
  merge_sorter& operator=(const merge_sorter&) = delete;
  ~merge_sorter() {
    if constexpr (!raw) {
      for (std::size_t i = 0; i < built_.size(); ++i)
        if (built_[i]) std::destroy(buf_ + leaves_[i], buf_ + leaves_[i + 1]);
    }
    std::allocator<T>().deallocate(buf_, n_);
  }

  void run() {
    std::size_t levels = 0;
    while ((std::size_t(1) << levels) < built_.size()) ++levels;
    // Objects are moved into the buffer before sorting (which constructs
    // it); trivially copyable values are copied only when the level count
    // is odd, so that the last level writes into the input.
    const bool leaves_in_buf = !raw || levels % 2 == 1;
    // One task per leaf (a task group, not parallel_for: a loop of many
    // chunks may first time one on the calling thread, alone).
    task_group g(s_);
    for (std::size_t i = 0; i < built_.size(); ++i)
      g.run([this, i, leaves_in_buf] {
        const std::size_t b = leaves_[i], e = leaves_[i + 1];
        if (!leaves_in_buf) {
          std::sort(a_ + b, a_ + e, comp_);
        } else {
          if constexpr (raw) std::copy(a_ + b, a_ + e, buf_ + b);
          else std::uninitialized_move(a_ + b, a_ + e, buf_ + b);
          built_[i] = 1;
          std::sort(buf_ + b, buf_ + e, comp_);
        }
      });
    g.wait();
    bool in_buf = leaves_in_buf;
    while (bounds_.size() > 2) {
      if (in_buf) merge_level(buf_, a_);
      else merge_level(a_, buf_);
      in_buf = !in_buf;
    }
    if (in_buf) {  // objects after an even number of levels
      s_.parallel_for(n_, grain(), [&](std::size_t b, std::size_t e) { std::move(buf_ + b, buf_ + e, a_ + b); });
    }
  }

 private:
  /// Output elements per merge piece: many pieces per worker, so that the
  /// first, which parallel_for may time alone on the caller, is short.
  std::size_t grain() const { return std::max<std::size_t>(n_ / (64 * std::max(1u, s_.concurrency())), 1 << 15); }

  /// Merges runs 2j and 2j+1 of `src` (an odd last run is moved as it is)
  /// into `dst`, and keeps the merged runs' bounds. The output is cut into
  /// pieces of grain() elements; where each cut falls in its run's inputs
  /// is found first, for all pieces, because merging moves from the inputs
  /// (objects are left moved-from) and another piece's search must not
  /// read them.
  template <class Src, class Dst>
  void merge_level(Src src, Dst dst) {
    std::vector<std::size_t> next;
    for (std::size_t j = 0; j + 1 < bounds_.size(); j += 2) next.push_back(bounds_[j]);
    next.push_back(n_);
    const std::size_t g = grain(), pieces = (n_ + g - 1) / g;
    auto run_of = [&](std::size_t d) {
      return std::size_t(std::upper_bound(next.begin(), next.end(), d) - next.begin()) - 1;
    };
    auto split = [&](std::size_t r, std::size_t x) {  // elements of run r's first input among its first x outputs
      const std::size_t lo = next[r], mid = bounds_[2 * r + 1], hi = next[r + 1];  // mid == hi: an odd last run
      return merge_split(src + lo, mid - lo, src + mid, hi - mid, x, comp_);
    };
    std::vector<std::size_t> cut(pieces + 1, 0);  // cut[p]: split at p * g in the run containing it
    s_.parallel_for(pieces, 1, [&](std::size_t pb, std::size_t pe) {
      for (std::size_t p = std::max<std::size_t>(pb, 1); p < pe; ++p) {
        const std::size_t r = run_of(p * g);
        cut[p] = split(r, p * g - next[r]);
      }
    });
    s_.parallel_for(pieces, 1, [&](std::size_t pb, std::size_t pe) {
      for (std::size_t p = pb; p < pe; ++p) {
        const std::size_t d0 = p * g, d1 = std::min(n_, d0 + g);
        for (std::size_t r = run_of(d0); r + 1 < next.size() && next[r] < d1; ++r) {
          const std::size_t lo = next[r], mid = bounds_[2 * r + 1], hi = next[r + 1];
          const std::size_t i0 = d0 > lo ? cut[p] : 0, i1 = d1 < hi ? cut[p + 1] : mid - lo;
          const std::size_t x0 = std::max(d0, lo) - lo, x1 = std::min(d1, hi) - lo;
          merge_runs(src + lo + i0, src + lo + i1, src + mid + (x0 - i0), src + mid + (x1 - i1), dst + lo + x0, comp_);
        }
      }
    });
    bounds_ = std::move(next);
  }

  scheduler& s_;
  It a_;
  std::size_t n_;
  Comp& comp_;
  std::vector<std::size_t> leaves_;  ///< leaf i is [leaves_[i], leaves_[i + 1])
  std::vector<std::size_t> bounds_;  ///< run r of the current level is [bounds_[r], bounds_[r + 1])
  std::vector<char> built_;          ///< one per leaf: its part of the buffer holds objects (!raw)
  T* buf_ = nullptr;
};

}  // namespace detail

/// Sorts [first, last) (random-access) by `comp`, not stably, in parallel:
/// a merge sort over about four runs per worker with a scratch buffer of
/// n elements (`detail::merge_sorter`); std::sort for short ranges or one
/// worker. No locality hint: the data moves between halves and the buffer.
/// If `comp` throws, the exception is rethrown and the range holds an
/// unspecified arrangement (as after std::sort).
///
/// \code
/// sinew::parallel_sort(s, v.begin(), v.end());
/// sinew::parallel_sort(s, people.begin(), people.end(), [](auto& a, auto& b) { return a.age < b.age; });
/// \endcode
template <class It, class Comp = std::less<>>
void parallel_sort(scheduler& s, It first, It last, Comp comp = {}) {
  const std::size_t n = std::size_t(last - first);
  constexpr std::size_t min_leaf = std::size_t(1) << 14;
  const std::size_t leaves = std::min<std::size_t>(std::size_t(s.concurrency()) * 4, n / min_leaf);
  if (leaves < 2) {
    std::sort(first, last, comp);
    return;
  }
  detail::merge_sorter<It, Comp>(s, first, n, leaves, comp).run();
}

}  // namespace sinew
