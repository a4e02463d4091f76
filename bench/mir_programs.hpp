#pragma once
// The five programs of [Muddukrishna15, §6, Table 4 and Fig. 7]:
// Map, Reduction, Jacobi, blocked Matmul and SparseLU, as task-parallel
// programs against the `sinew::scheduler` interface. Every task passes a
// locality hint: D, the bytes of the buffers it reads and writes on each
// NUMA node, from the page maps the placement policy gave those buffers
// (`sinew::placer`). Shared by bench/mir_suite.cpp (the machine's topology)
// and bench/numa_sim.cpp (a synthetic one).
//
// Allocations follow the paper's descriptions, which is what the `auto`
// policy (Table 3) looks at: Map = one allocation per vector (coarse),
// Reduction = one array (fine), Jacobi = one allocation holding both grids
// (fine), Matmul and SparseLU = one allocation per block (coarse).
//
// Every program checks its result against a sequential run of the same
// kernels (bitwise: each output element is computed by the same operations
// in the same order whatever the schedule).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <sinew/schedulers/placement.hpp>
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/schedulers/topology.hpp>

namespace mir {

using D_t = std::vector<std::uint64_t>;

/// Page-aligned storage, so that `placer::bind` can bind every allocation
/// (on a machine with several NUMA nodes; elsewhere it only keeps the map).
template <class T>
struct page_aligned {
  using value_type = T;
  static constexpr std::size_t page = 4096;
  page_aligned() = default;
  template <class U>
  page_aligned(const page_aligned<U>&) noexcept {}
  T* allocate(std::size_t n) {
    const std::size_t bytes = (n * sizeof(T) + page - 1) / page * page;
    if (void* p = std::aligned_alloc(page, std::max(bytes, page))) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }
  template <class U>
  bool operator==(const page_aligned<U>&) const noexcept { return true; }
};
using floats = std::vector<float, page_aligned<float>>;

/// One allocation and where its pages are.
struct region {
  floats v;
  sinew::page_map map;
  float* data() { return v.data(); }
  const float* data() const { return v.data(); }
};

/// Adds the bytes of `[first, first + count)` floats of `r` to D.
inline void add_floats(D_t& D, const region& r, std::size_t first, std::size_t count) {
  auto b = sinew::bytes_per_node(r.map, first * sizeof(float), count * sizeof(float));
  for (std::size_t j = 0; j < D.size() && j < b.size(); ++j) D[j] += b[j];
}
inline void add_all(D_t& D, const region& r) { add_floats(D, r, 0, r.v.size()); }

/// A hint carrying D (empty D: no hint).
/// Over the hints made since the last reset: their bytes, and the bytes
/// that would be remote if every task ran on the node holding the most of
/// its data -- the least remote fraction any placement of the tasks can
/// reach for this data layout (what `numa_sim` compares dealing with) --
/// or on the node holding the least: the most. Where the two meet, every
/// placement of the tasks gives the same fraction.
inline std::atomic<std::uint64_t> hinted_total{0}, hinted_floor{0}, hinted_ceiling{0};

inline sinew::locality_hint hint_of(const D_t& D) {
  std::uint64_t sum = 0, most = 0, least = D.empty() ? 0 : D[0];
  for (auto d : D) {
    sum += d;
    most = std::max(most, d);
    least = std::min(least, d);
  }
  hinted_total.fetch_add(sum, std::memory_order_relaxed);
  hinted_floor.fetch_add(sum - most, std::memory_order_relaxed);
  hinted_ceiling.fetch_add(sum - least, std::memory_order_relaxed);
  sinew::locality_hint h;
  h.bytes_on_node = D;
  return h;
}

/// Places allocations one after the other under one policy. `standard`
/// (first touch) is modelled as the main thread touching everything:
/// node 0, as in the paper's programs, which initialise their data serially.
class allocator {
 public:
  allocator(const sinew::topology& t, sinew::placement p, sinew::usage_hint u)
      : pl_(t, p, u), nodes_(t.nodes()) {}
  void place(region& r) {
    if (r.v.empty()) r.v.resize(1);
    r.map = pl_.bind(r.v.data(), r.v.size() * sizeof(float), 0);
  }
  std::size_t nodes() const { return nodes_; }
  sinew::placement effective() const { return pl_.effective_policy(); }

 private:
  sinew::placer pl_;
  std::size_t nodes_;
};

class program {
 public:
  virtual ~program() = default;
  virtual std::string name() const = 0;
  /// Sizes, for the benchmark's parameters.
  virtual std::string describe() const = 0;
  /// Allocations and tasks, for Table 3 (`auto`).
  virtual sinew::usage_hint usage() const = 0;
  /// Places every allocation with `a` and computes the tasks' D.
  virtual void place(allocator& a) = 0;
  /// Restores the inputs (untimed, before every run).
  virtual void reset() = 0;
  /// The timed work: every task through `s`, with its hint.
  virtual void run(sinew::scheduler& s) = 0;
  /// "" when the result is right, else what is wrong.
  virtual std::string check() const = 0;
};

// ---------------------------------------------------------------- Map

/// "Map (pattern-based): 1D vector scaling" -- task k scales vector k into
/// output vector k (paper: 48 vectors of 1 MB; Listing 1).
class map_program final : public program {
 public:
  map_program(std::size_t vectors, std::size_t floats) : in_(vectors), out_(vectors), D_(vectors) {
    for (std::size_t k = 0; k < vectors; ++k) {
      in_[k].v.resize(floats);
      out_[k].v.resize(floats);
      for (std::size_t i = 0; i < floats; ++i) in_[k].v[i] = float((k * 31 + i) % 1000);
    }
  }
  std::string name() const override { return "map"; }
  std::string describe() const override {
    return std::to_string(in_.size()) + " vectors x " + std::to_string(in_[0].v.size() * 4 / 1024) + " KiB";
  }
  sinew::usage_hint usage() const override { return {2 * in_.size(), in_.size()}; }
  void place(allocator& a) override {
    // Inputs first, then outputs: under coarse, in[k] and out[k] share a node.
    for (auto& r : in_) a.place(r);
    for (auto& r : out_) a.place(r);
    for (std::size_t k = 0; k < in_.size(); ++k) {
      D_[k].assign(a.nodes(), 0);
      add_all(D_[k], in_[k]);
      add_all(D_[k], out_[k]);
    }
  }
  void reset() override {
    for (auto& r : out_) std::fill(r.v.begin(), r.v.end(), -1.0f);
  }
  void run(sinew::scheduler& s) override {
    sinew::task_group g(s);
    for (std::size_t k = 0; k < in_.size(); ++k)
      g.run(
          [this, k] {
            const float* x = in_[k].data();
            float* y = out_[k].data();
            const std::size_t n = in_[k].v.size();
            for (std::size_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
          },
          hint_of(D_[k]));
    g.wait();
  }
  std::string check() const override {
    for (std::size_t k = 0; k < in_.size(); ++k)
      for (std::size_t i = 0; i < in_[k].v.size(); ++i)
        if (out_[k].v[i] != 2.0f * in_[k].v[i] + 1.0f)
          return "map: vector " + std::to_string(k) + " element " + std::to_string(i) + " wrong";
    return {};
  }

 private:
  std::vector<region> in_, out_;
  std::vector<D_t> D_;
};

// ---------------------------------------------------------------- Reduction

/// "Reduction (pattern-based)": the sum of one array, as a tree of the given
/// depth: 2^depth leaf tasks sum their chunk, then each level's tasks add
/// pairs (the iterative merge of the paper's version of BOTS Sort).
class reduction_program final : public program {
 public:
  reduction_program(std::size_t floats, unsigned depth) : depth_(depth), D_(std::size_t(1) << depth) {
    a_.v.resize(floats);
    for (std::size_t i = 0; i < floats; ++i) a_.v[i] = float(i % 7);  // exact sums in double
    for (std::size_t i = 0; i < floats; ++i) expected_ += double(a_.v[i]);
  }
  std::string name() const override { return "reduction"; }
  std::string describe() const override {
    return std::to_string(a_.v.size() * 4 / (1024 * 1024)) + " MiB, depth " + std::to_string(depth_);
  }
  sinew::usage_hint usage() const override { return {1, D_.size()}; }
  void place(allocator& a) override {
    a.place(a_);
    for (std::size_t k = 0; k < D_.size(); ++k) {
      D_[k].assign(a.nodes(), 0);
      auto [b, e] = chunk(k);
      add_floats(D_[k], a_, b, e - b);
    }
  }
  void reset() override {
    partial_.assign(D_.size(), 0.0);
    result_ = -1.0;
  }
  void run(sinew::scheduler& s) override {
    const std::size_t leaves = D_.size();
    {
      sinew::task_group g(s);
      for (std::size_t k = 0; k < leaves; ++k)
        g.run(
            [this, k] {
              auto [b, e] = chunk(k);
              double sum = 0.0;
              for (std::size_t i = b; i < e; ++i) sum += double(a_.v[i]);
              partial_[k] = sum;
            },
            hint_of(D_[k]));
      g.wait();
    }
    for (std::size_t width = leaves / 2; width >= 1; width /= 2) {  // merge levels
      sinew::task_group g(s);
      for (std::size_t k = 0; k < width; ++k)
        g.run([this, k, width] { partial_[k] = partial_[k] + partial_[k + width]; });
      g.wait();
    }
    result_ = partial_[0];
  }
  std::string check() const override {
    if (result_ != expected_)
      return "reduction: sum " + std::to_string(result_) + ", expected " + std::to_string(expected_);
    return {};
  }

 private:
  std::pair<std::size_t, std::size_t> chunk(std::size_t k) const {
    const std::size_t n = a_.v.size(), L = D_.size();
    return {n * k / L, n * (k + 1) / L};
  }
  unsigned depth_;
  region a_;
  std::vector<D_t> D_;
  std::vector<double> partial_;
  double expected_ = 0.0, result_ = 0.0;
};

// ---------------------------------------------------------------- Jacobi

/// "Jacobi: blocked 2D heat equation solver": `iters` sweeps of a 5-point
/// stencil over an n x n grid, one task per block x block tile per sweep
/// (the sweep waits for all of them); boundary rows and columns stay fixed.
class jacobi_program final : public program {
 public:
  jacobi_program(std::size_t n, std::size_t block, unsigned iters) : n_(n), bs_(block), iters_(iters) {
    g_.v.resize(2 * n * n);
    init(g_.v.data());
    floats ref(2 * n * n);
    init(ref.data());
    for (unsigned t = 0; t < iters_; ++t)
      for (std::size_t bi = 0; bi < nb(); ++bi)
        for (std::size_t bj = 0; bj < nb(); ++bj) tile(ref.data(), t, bi, bj);
    expected_.assign(ref.begin() + std::ptrdiff_t((iters_ % 2) * n * n),
                     ref.begin() + std::ptrdiff_t((iters_ % 2 + 1) * n * n));
  }
  std::string name() const override { return "jacobi"; }
  std::string describe() const override {
    return std::to_string(n_) + "^2 grid, block " + std::to_string(bs_) + ", " + std::to_string(iters_) + " sweeps";
  }
  sinew::usage_hint usage() const override { return {1, nb() * nb()}; }
  void place(allocator& a) override {
    a.place(g_);
    D_.assign(2 * nb() * nb(), D_t(a.nodes(), 0));
    for (unsigned parity = 0; parity < 2; ++parity)
      for (std::size_t bi = 0; bi < nb(); ++bi)
        for (std::size_t bj = 0; bj < nb(); ++bj) {
          D_t& D = D_[(parity * nb() + bi) * nb() + bj];
          const std::size_t src = parity * n_ * n_, dst = (1 - parity) * n_ * n_;
          const std::size_t c0 = bj * bs_, c1 = std::min(n_, c0 + bs_);
          for (std::size_t r = bi * bs_; r < std::min(n_, (bi + 1) * bs_); ++r) {
            add_floats(D, g_, src + r * n_ + c0, c1 - c0);
            add_floats(D, g_, dst + r * n_ + c0, c1 - c0);
          }
        }
  }
  void reset() override { init(g_.v.data()); }
  void run(sinew::scheduler& s) override {
    for (unsigned t = 0; t < iters_; ++t) {
      sinew::task_group g(s);
      for (std::size_t bi = 0; bi < nb(); ++bi)
        for (std::size_t bj = 0; bj < nb(); ++bj)
          g.run([this, t, bi, bj] { tile(g_.v.data(), t, bi, bj); },
                hint_of(D_[((t % 2) * nb() + bi) * nb() + bj]));
      g.wait();
    }
  }
  std::string check() const override {
    const float* out = g_.v.data() + (iters_ % 2) * n_ * n_;
    for (std::size_t i = 0; i < n_ * n_; ++i)
      if (out[i] != expected_[i]) return "jacobi: point " + std::to_string(i) + " differs from the sequential run";
    return {};
  }

 private:
  std::size_t nb() const { return (n_ + bs_ - 1) / bs_; }
  void init(float* g) const {
    for (std::size_t r = 0; r < n_; ++r)
      for (std::size_t c = 0; c < n_; ++c) {
        const bool edge = r == 0 || c == 0 || r + 1 == n_ || c + 1 == n_;
        g[r * n_ + c] = g[n_ * n_ + r * n_ + c] = edge ? float((r + 2 * c) % 100) : 0.0f;
      }
  }
  // Sweep t: grid t%2 -> grid 1 - t%2, tile (bi, bj).
  void tile(float* g, unsigned t, std::size_t bi, std::size_t bj) const {
    const float* src = g + (t % 2) * n_ * n_;
    float* dst = g + (1 - t % 2) * n_ * n_;
    const std::size_t r0 = std::max<std::size_t>(1, bi * bs_), r1 = std::min(n_ - 1, (bi + 1) * bs_);
    const std::size_t c0 = std::max<std::size_t>(1, bj * bs_), c1 = std::min(n_ - 1, (bj + 1) * bs_);
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t c = c0; c < c1; ++c)
        dst[r * n_ + c] = 0.25f * (src[(r - 1) * n_ + c] + src[(r + 1) * n_ + c] + src[r * n_ + c - 1] +
                                   src[r * n_ + c + 1]);
  }
  std::size_t n_, bs_;
  unsigned iters_;
  region g_;  // both grids in one allocation
  std::vector<D_t> D_;
  floats expected_;
};

// ---------------------------------------------------------------- blocked Matmul

/// "Matmul: blocked matrix multiplication": C = A B over nb x nb blocks of
/// bs x bs floats, each block its own allocation; task (i, j) computes
/// C[i][j] = sum_k A[i][k] B[k][j] (k in order).
class matmul_program final : public program {
 public:
  matmul_program(std::size_t nb, std::size_t bs) : nb_(nb), bs_(bs), A_(nb * nb), B_(nb * nb), C_(nb * nb) {
    for (std::size_t b = 0; b < nb * nb; ++b) {
      A_[b].v.resize(bs * bs);
      B_[b].v.resize(bs * bs);
      C_[b].v.resize(bs * bs);
      for (std::size_t i = 0; i < bs * bs; ++i) {
        A_[b].v[i] = float((b * 7 + i) % 13) * 0.125f;
        B_[b].v[i] = float((b * 3 + i * 5) % 11) * 0.25f;
      }
    }
    expected_.resize(nb * nb);
    for (std::size_t i = 0; i < nb; ++i)
      for (std::size_t j = 0; j < nb; ++j) {
        expected_[i * nb + j].assign(bs * bs, 0.0f);
        block(i, j, expected_[i * nb + j].data());
      }
  }
  std::string name() const override { return "matmul"; }
  std::string describe() const override {
    return std::to_string(nb_ * bs_) + "^2, block " + std::to_string(bs_);
  }
  sinew::usage_hint usage() const override { return {3 * nb_ * nb_, nb_ * nb_}; }
  void place(allocator& a) override {
    for (auto* M : {&A_, &B_, &C_})
      for (auto& r : *M) a.place(r);
    D_.assign(nb_ * nb_, D_t(a.nodes(), 0));
    for (std::size_t i = 0; i < nb_; ++i)
      for (std::size_t j = 0; j < nb_; ++j) {
        D_t& D = D_[i * nb_ + j];
        for (std::size_t k = 0; k < nb_; ++k) {
          add_all(D, A_[i * nb_ + k]);
          add_all(D, B_[k * nb_ + j]);
        }
        add_all(D, C_[i * nb_ + j]);
      }
  }
  void reset() override {
    for (auto& r : C_) std::fill(r.v.begin(), r.v.end(), -1.0f);
  }
  void run(sinew::scheduler& s) override {
    sinew::task_group g(s);
    for (std::size_t i = 0; i < nb_; ++i)
      for (std::size_t j = 0; j < nb_; ++j)
        g.run([this, i, j] { block(i, j, C_[i * nb_ + j].data()); }, hint_of(D_[i * nb_ + j]));
    g.wait();
  }
  std::string check() const override {
    for (std::size_t b = 0; b < nb_ * nb_; ++b)
      if (C_[b].v != expected_[b]) return "matmul: block " + std::to_string(b) + " differs from the sequential run";
    return {};
  }

 private:
  void block(std::size_t i, std::size_t j, float* c) const {
    const std::size_t n = bs_;
    std::fill(c, c + n * n, 0.0f);
    for (std::size_t k = 0; k < nb_; ++k) {
      const float* a = A_[i * nb_ + k].data();
      const float* b = B_[k * nb_ + j].data();
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t q = 0; q < n; ++q) {
          const float arq = a[r * n + q];
          for (std::size_t col = 0; col < n; ++col) c[r * n + col] += arq * b[q * n + col];
        }
    }
  }
  std::size_t nb_, bs_;
  std::vector<region> A_, B_, C_;
  std::vector<D_t> D_;
  std::vector<floats> expected_;
};

// ---------------------------------------------------------------- SparseLU

/// "SparseLU: LU factorisation of a sparse matrix, derived from BOTS
/// SparseLU": nb x nb blocks of bs x bs floats, some empty; for each kk:
/// lu0 on the diagonal block, then fwd (row kk) and bdiv (column kk) tasks,
/// then bmod tasks on the trailing blocks (a phase waits for the previous
/// one, as BOTS's taskwaits do). Blocks that fill in are allocated up front
/// (zero), each block its own allocation.
class sparselu_program final : public program {
 public:
  sparselu_program(std::size_t nb, std::size_t bs) : nb_(nb), bs_(bs), blocks_(nb * nb), present_(nb * nb, 0) {
    // Sparsity as in BOTS's genmat: dense-ish band plus a pattern.
    for (std::size_t i = 0; i < nb; ++i)
      for (std::size_t j = 0; j < nb; ++j)
        present_[i * nb + j] = i == j || (i + 1 == j) || (j + 1 == i) || ((i * j) % 3 == 0) ? 1 : 0;
    initial_ = present_;
    // Symbolic fill-in.
    for (std::size_t k = 0; k < nb; ++k)
      for (std::size_t i = k + 1; i < nb; ++i)
        for (std::size_t j = k + 1; j < nb; ++j)
          if (present_[i * nb + k] && present_[k * nb + j]) present_[i * nb + j] = 1;
    for (std::size_t b = 0; b < nb * nb; ++b)
      if (present_[b]) blocks_[b].v.resize(bs * bs);
    reset();
    std::vector<floats> m(nb * nb);
    for (std::size_t b = 0; b < nb * nb; ++b) m[b] = blocks_[b].v;
    factor_sequential(m);
    expected_ = std::move(m);
  }
  std::string name() const override { return "sparselu"; }
  std::string describe() const override {
    std::size_t n = 0;
    for (auto p : present_) n += p;
    return std::to_string(nb_) + "x" + std::to_string(nb_) + " blocks of " + std::to_string(bs_) + "^2 (" +
           std::to_string(n) + " non-empty after fill-in)";
  }
  sinew::usage_hint usage() const override {
    std::size_t n = 0;
    for (auto p : present_) n += p;
    return {n, nb_ * nb_};
  }
  void place(allocator& a) override {
    nodes_ = a.nodes();
    for (std::size_t b = 0; b < nb_ * nb_; ++b)
      if (present_[b]) a.place(blocks_[b]);
  }
  void reset() override {
    for (std::size_t i = 0; i < nb_; ++i)
      for (std::size_t j = 0; j < nb_; ++j) {
        auto& v = blocks_[i * nb_ + j].v;
        if (v.empty()) continue;
        for (std::size_t r = 0; r < bs_; ++r)
          for (std::size_t c = 0; c < bs_; ++c)
            v[r * bs_ + c] = !initial_[i * nb_ + j] ? 0.0f
                             : (i == j && r == c)  ? float(4 * bs_)  // diagonally dominant
                                                   : float(((i * 13 + j * 7 + r * 3 + c) % 17)) / 17.0f;
      }
  }
  void run(sinew::scheduler& s) override {
    auto B = [&](std::size_t i, std::size_t j) { return blocks_[i * nb_ + j].data(); };
    auto has = [&](std::size_t i, std::size_t j) { return present_[i * nb_ + j] != 0; };
    auto D_of = [&](std::initializer_list<std::pair<std::size_t, std::size_t>> bl) {
      D_t D(nodes_, 0);
      for (auto [i, j] : bl) add_all(D, blocks_[i * nb_ + j]);
      return D;
    };
    for (std::size_t k = 0; k < nb_; ++k) {
      lu0(B(k, k));
      {
        sinew::task_group g(s);
        for (std::size_t j = k + 1; j < nb_; ++j)
          if (has(k, j)) g.run([&, j] { fwd(B(k, k), B(k, j)); }, hint_of(D_of({{k, k}, {k, j}})));
        for (std::size_t i = k + 1; i < nb_; ++i)
          if (has(i, k)) g.run([&, i] { bdiv(B(k, k), B(i, k)); }, hint_of(D_of({{k, k}, {i, k}})));
        g.wait();
      }
      sinew::task_group g(s);
      for (std::size_t i = k + 1; i < nb_; ++i)
        if (has(i, k))
          for (std::size_t j = k + 1; j < nb_; ++j)
            if (has(k, j))
              g.run([&, i, j] { bmod(B(i, k), B(k, j), B(i, j)); }, hint_of(D_of({{i, k}, {k, j}, {i, j}})));
      g.wait();
    }
  }
  std::string check() const override {
    for (std::size_t b = 0; b < nb_ * nb_; ++b)
      if (blocks_[b].v != expected_[b]) return "sparselu: block " + std::to_string(b) + " differs from the sequential run";
    return {};
  }

 private:
  void lu0(float* d) const {
    const std::size_t n = bs_;
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t i = k + 1; i < n; ++i) {
        d[i * n + k] /= d[k * n + k];
        for (std::size_t j = k + 1; j < n; ++j) d[i * n + j] -= d[i * n + k] * d[k * n + j];
      }
  }
  void fwd(const float* d, float* col) const {
    const std::size_t n = bs_;
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t i = k + 1; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) col[i * n + j] -= d[i * n + k] * col[k * n + j];
  }
  void bdiv(const float* d, float* row) const {
    const std::size_t n = bs_;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < n; ++k) {
        row[i * n + k] /= d[k * n + k];
        for (std::size_t j = k + 1; j < n; ++j) row[i * n + j] -= row[i * n + k] * d[k * n + j];
      }
  }
  void bmod(const float* row, const float* col, float* inner) const {
    const std::size_t n = bs_;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < n; ++k) {
        const float rik = row[i * n + k];
        for (std::size_t j = 0; j < n; ++j) inner[i * n + j] -= rik * col[k * n + j];
      }
  }
  void factor_sequential(std::vector<floats>& m) const {
    auto B = [&](std::size_t i, std::size_t j) { return m[i * nb_ + j].data(); };
    auto has = [&](std::size_t i, std::size_t j) { return present_[i * nb_ + j] != 0; };
    for (std::size_t k = 0; k < nb_; ++k) {
      lu0(B(k, k));
      for (std::size_t j = k + 1; j < nb_; ++j)
        if (has(k, j)) fwd(B(k, k), B(k, j));
      for (std::size_t i = k + 1; i < nb_; ++i)
        if (has(i, k)) bdiv(B(k, k), B(i, k));
      for (std::size_t i = k + 1; i < nb_; ++i)
        if (has(i, k))
          for (std::size_t j = k + 1; j < nb_; ++j)
            if (has(k, j)) bmod(B(i, k), B(k, j), B(i, j));
    }
  }
  std::size_t nb_, bs_, nodes_ = 1;
  std::vector<region> blocks_;
  std::vector<char> present_, initial_;
  std::vector<floats> expected_;
};

/// Problem sizes of one suite run.
struct sizes {
  std::size_t map_vectors, map_floats;
  std::size_t red_floats;
  unsigned red_depth;
  std::size_t jac_n, jac_block;
  unsigned jac_iters;
  std::size_t mm_blocks, mm_bs;
  std::size_t lu_blocks, lu_bs;
};

inline std::vector<std::unique_ptr<program>> make_suite(const sizes& z) {
  std::vector<std::unique_ptr<program>> v;
  v.push_back(std::make_unique<map_program>(z.map_vectors, z.map_floats));
  v.push_back(std::make_unique<jacobi_program>(z.jac_n, z.jac_block, z.jac_iters));
  v.push_back(std::make_unique<matmul_program>(z.mm_blocks, z.mm_bs));
  v.push_back(std::make_unique<sparselu_program>(z.lu_blocks, z.lu_bs));
  v.push_back(std::make_unique<reduction_program>(z.red_floats, z.red_depth));
  return v;
}

}  // namespace mir
