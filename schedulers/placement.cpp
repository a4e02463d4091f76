// sinew::placement: data distribution policies [Muddukrishna15, Tables 1-3]
// as an accounting model of where the pages of each buffer live.
#include <sinew/schedulers/placement.hpp>

#include <sinew/engine/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include <numa.h>
#include <numaif.h>
#include <unistd.h>

namespace sinew {

std::string_view to_string(placement p) noexcept {
  switch (p) {
    case placement::standard: return "standard";
    case placement::fine: return "fine";
    case placement::coarse: return "coarse";
    case placement::automatic: return "auto";
  }
  return "?";
}

placement parse_placement(std::string_view name) {
  if (name == "standard") return placement::standard;
  if (name == "fine") return placement::fine;
  if (name == "coarse") return placement::coarse;
  if (name == "auto" || name == "automatic") return placement::automatic;
  throw error("unknown placement '" + std::string(name) +
              "' (expected standard, fine, coarse or auto)");
}

placement choose_placement(std::size_t allocations, std::size_t tasks) {
  if (allocations == 0 || tasks == 0)
    throw error("placement auto (Table 3) needs the number of allocations and of tasks, both >= 1 (got " +
                std::to_string(allocations) + " allocations, " + std::to_string(tasks) + " tasks)");
  if (allocations > 1) return placement::coarse;  // many mallocs: coarse for one or many tasks
  return tasks > 1 ? placement::fine               // one malloc, many tasks
                   : placement::standard;          // one malloc, one task: regular malloc
}

// ---- page_map ---------------------------------------------------------------

namespace {
void check_page_size(std::size_t page_size) {
  if (page_size == 0) throw error("page_map: page size must be > 0");
}
}  // namespace

page_map page_map::single(std::size_t bytes, std::size_t nodes, int node, std::size_t page_size) {
  check_page_size(page_size);
  if (node < -1 || (node >= 0 && std::size_t(node) >= nodes))
    throw error("page_map: node " + std::to_string(node) + " out of range (" + std::to_string(nodes) +
                " nodes)");
  page_map m;
  m.kind_ = kind::single;
  m.bytes_ = bytes;
  m.nodes_ = nodes;
  m.page_size_ = page_size;
  m.node_ = node;
  return m;
}

page_map page_map::interleaved(std::size_t bytes, std::size_t nodes, std::size_t first_node,
                               std::size_t page_size) {
  check_page_size(page_size);
  if (nodes == 0) throw error("page_map: interleaving over 0 nodes");
  if (first_node >= nodes)
    throw error("page_map: first node " + std::to_string(first_node) + " out of range (" +
                std::to_string(nodes) + " nodes)");
  page_map m;
  m.kind_ = kind::interleaved;
  m.bytes_ = bytes;
  m.nodes_ = nodes;
  m.page_size_ = page_size;
  m.node_ = int(first_node);
  m.policy_ = placement::fine;
  return m;
}

page_map page_map::explicit_pages(std::size_t bytes, std::size_t nodes, std::vector<int> page_nodes,
                                  std::size_t page_size) {
  check_page_size(page_size);
  page_map m;
  m.bytes_ = bytes;
  m.page_size_ = page_size;
  m.nodes_ = nodes;
  if (page_nodes.size() != m.pages())
    throw error("page_map: " + std::to_string(page_nodes.size()) + " page nodes for " +
                std::to_string(m.pages()) + " pages");
  for (int n : page_nodes)
    if (n < -1 || (n >= 0 && std::size_t(n) >= nodes))
      throw error("page_map: node " + std::to_string(n) + " out of range (" + std::to_string(nodes) +
                  " nodes)");
  m.kind_ = kind::explicit_pages;
  m.pages_ = std::move(page_nodes);
  return m;
}

int page_map::node_of_page(std::size_t i) const {
  if (i >= pages())
    throw error("page_map: page " + std::to_string(i) + " out of range (" + std::to_string(pages()) +
                " pages)");
  switch (kind_) {
    case kind::single: return node_;
    case kind::interleaved: return int((std::size_t(node_) + i % nodes_) % nodes_);
    case kind::explicit_pages: return pages_[i];
  }
  return -1;
}

int page_map::home_node() const noexcept {
  switch (kind_) {
    case kind::single: return node_;
    case kind::interleaved: return pages() <= 1 || nodes_ == 1 ? node_ : -1;
    case kind::explicit_pages: {
      if (pages_.empty()) return -1;
      int n = pages_.front();
      for (int p : pages_)
        if (p != n) return -1;
      return n;
    }
  }
  return -1;
}

namespace {

void check_range(const page_map& m, std::size_t offset, std::size_t length) {
  if (offset > m.bytes() || length > m.bytes() - offset)
    throw error("bytes_per_node: range [" + std::to_string(offset) + ", " + std::to_string(offset) +
                "+" + std::to_string(length) + ") is outside the buffer of " + std::to_string(m.bytes()) +
                " bytes");
}

}  // namespace

std::vector<std::size_t> bytes_per_node(const page_map& m, std::size_t offset, std::size_t length) {
  check_range(m, offset, length);
  std::vector<std::size_t> d(m.nodes_, 0);
  if (length == 0) return d;
  const std::size_t P = m.page_size_;
  const std::size_t end = offset + length;
  const std::size_t first = offset / P, last = (end - 1) / P;
  auto add = [&](int node, std::size_t b) {
    if (node >= 0) d[std::size_t(node)] += b;
  };
  switch (m.kind_) {
    case page_map::kind::single:
      add(m.node_, length);
      break;
    case page_map::kind::interleaved: {
      const std::size_t n = m.nodes_;
      auto node_of = [&](std::size_t page) { return (std::size_t(m.node_) + page % n) % n; };
      if (first == last) {
        d[node_of(first)] += length;
        break;
      }
      d[node_of(first)] += (first + 1) * P - offset;  // head (maybe partial)
      d[node_of(last)] += end - last * P;             // tail (maybe partial)
      // Full pages first+1 .. last-1.
      const std::size_t full = last - first - 1;
      const std::size_t each = full / n, extra = full % n;
      if (each)
        for (auto& x : d) x += each * P;
      for (std::size_t k = 0; k < extra; ++k) d[node_of(first + 1 + k)] += P;
      break;
    }
    case page_map::kind::explicit_pages:
      for (std::size_t p = first; p <= last; ++p) {
        const std::size_t lo = std::max(offset, p * P), hi = std::min(end, (p + 1) * P);
        add(m.pages_[p], hi - lo);
      }
      break;
  }
  return d;
}

std::size_t unknown_bytes(const page_map& m, std::size_t offset, std::size_t length) {
  check_range(m, offset, length);
  std::size_t known = 0;
  for (std::size_t b : bytes_per_node(m, offset, length)) known += b;
  return length - known;
}

// ---- placer -------------------------------------------------------------------

placer::placer(topology topo, placement policy, usage_hint hint, std::size_t page_size)
    : topo_(std::move(topo)), policy_(policy), effective_(policy), page_size_(page_size) {
  if (page_size_ == 0) throw error("placer: page size must be > 0");
  if (policy_ == placement::automatic) effective_ = choose_placement(hint);
}

page_map placer::place(std::size_t bytes, int toucher_node) {
  const std::size_t n = topo_.nodes();
  if (toucher_node < -1 || (toucher_node >= 0 && std::size_t(toucher_node) >= n))
    throw error("placer: toucher node " + std::to_string(toucher_node) + " out of range (" +
                std::to_string(n) + " nodes)");
  page_map m;
  switch (effective_) {
    case placement::fine:
      m = page_map::interleaved(bytes, n, 0, page_size_);
      break;
    case placement::coarse: {
      const std::size_t k = next_.fetch_add(1, std::memory_order_relaxed);
      m = page_map::single(bytes, n, int(k % n), page_size_);
      break;
    }
    case placement::standard:
    case placement::automatic: {  // automatic is resolved in the constructor
      int node = -1;
      if (n == 1) node = 0;
      else if (topo_.synthetic()) node = toucher_node;
      m = page_map::single(bytes, n, node, page_size_);
      break;
    }
  }
  m.policy_ = effective_;
  return m;
}

// ---- binding (libnuma) ------------------------------------------------------------

namespace {

bool libnuma_usable() noexcept {
  static const bool ok = numa_available() >= 0;
  return ok;
}

std::size_t os_page_size() noexcept {
  static const std::size_t ps = std::size_t(sysconf(_SC_PAGESIZE));
  return ps;
}

// OS node id of each topology node: the node of its first cpu.
std::vector<int> os_nodes(const topology& t) {
  std::vector<int> ids(t.nodes(), -1);
  for (std::size_t n = 0; n < t.nodes(); ++n)
    if (!t.cores(n).empty()) ids[n] = numa_node_of_cpu(t.cores(n).front());
  return ids;
}

void check_aligned(const void* p, std::size_t page_size, const char* who) {
  if (reinterpret_cast<std::uintptr_t>(p) % page_size != 0)
    throw error(std::string(who) + ": address is not aligned to the page size (" + std::to_string(page_size) +
                " bytes)");
}

}  // namespace

bool placer::binds() const noexcept { return !topo_.synthetic() && topo_.nodes() > 1 && libnuma_usable(); }

page_map placer::bind(void* p, std::size_t bytes, int toucher_node) {
  check_aligned(p, page_size_, "placer::bind");
  page_map m = place(bytes, toucher_node);
  if (!binds() || bytes == 0) return m;
  if (page_size_ != os_page_size())
    throw error("placer::bind: page size " + std::to_string(page_size_) + " differs from the OS page size " +
                std::to_string(os_page_size()));
  const std::vector<int> ids = os_nodes(topo_);
  auto to_node = [&](std::size_t off, std::size_t len, int node) {
    if (node < 0) return;  // first touch decides
    const int os = ids[std::size_t(node)];
    if (os < 0) throw error("placer::bind: node " + std::to_string(node) + " has no OS node id");
    unsigned long mask[16] = {};
    if (os >= int(sizeof(mask) * 8)) throw error("placer::bind: OS node id " + std::to_string(os) + " too large");
    mask[std::size_t(os) / (8 * sizeof(unsigned long))] |= 1ul << (std::size_t(os) % (8 * sizeof(unsigned long)));
    if (mbind(static_cast<char*>(p) + off, len, MPOL_BIND, mask, sizeof(mask) * 8, MPOL_MF_MOVE) != 0)
      throw error("placer::bind: mbind to node " + std::to_string(node) + " failed: " + std::strerror(errno));
  };
  const std::size_t pages = m.pages();
  if (m.home_node() >= 0 || pages <= 1) {
    to_node(0, bytes, m.node_of_page(0));
  } else {  // page by page (fine), each run of one node in one call
    std::size_t first = 0;
    for (std::size_t i = 1; i <= pages; ++i)
      if (i == pages || m.node_of_page(i) != m.node_of_page(first)) {
        to_node(first * page_size_, std::min(bytes, i * page_size_) - first * page_size_, m.node_of_page(first));
        first = i;
      }
  }
  return m;
}

page_map placer::place_buffer(buffer& b, int toucher_node) {
  const std::size_t bytes = b.bytes();
  const bool aligned = reinterpret_cast<std::uintptr_t>(b.data()) % page_size_ == 0;
  page_map m = (aligned && binds() && page_size_ == os_page_size()) ? bind(b.data(), bytes, toucher_node)
                                                                     : place(bytes, toucher_node);
  const int home = m.home_node();
  const int first = (home < 0 && m.kind_ == page_map::kind::interleaved) ? m.node_ : -1;
  record_placement(b, home, first, unsigned(m.nodes()), m.page_size());
  return m;
}

std::uint64_t add_bytes_on_nodes(const buffer& b, std::span<std::uint64_t> D) noexcept {
  const std::size_t n = D.size(), bytes = b.bytes();
  if (b.numa_node() >= 0) {
    if (std::size_t(b.numa_node()) >= n) return 0;
    D[std::size_t(b.numa_node())] += bytes;
    return bytes;
  }
  if (b.interleave_first() < 0 || b.placed_nodes() != n || n == 0 || bytes == 0) return 0;
  // Page i on node (first + i) % n: whole rounds, then the pages left over
  // (the last one maybe partial).
  const std::size_t P = b.placed_page_size(), pages = (bytes + P - 1) / P, each = pages / n;
  const std::size_t first = std::size_t(b.interleave_first());
  for (std::size_t j = 0; j < n; ++j) D[j] += each * P;
  for (std::size_t k = 0; k < pages % n; ++k) D[(first + each * n + k) % n] += P;
  D[(first + pages - 1) % n] -= pages * P - bytes;  // the partial last page
  return bytes;
}

page_map query_pages(const topology& t, const void* p, std::size_t bytes) {
  if (t.synthetic()) throw error("query_pages: needs the machine's topology, not a synthetic one");
  const std::size_t ps = os_page_size();
  check_aligned(p, ps, "query_pages");
  const std::size_t pages = (bytes + ps - 1) / ps;
  std::vector<int> nodes(pages, -1);
  if (pages != 0 && libnuma_usable()) {
    std::vector<void*> addr(pages);
    std::vector<int> status(pages, -1);
    for (std::size_t i = 0; i < pages; ++i) addr[i] = const_cast<char*>(static_cast<const char*>(p)) + i * ps;
    if (numa_move_pages(0, pages, addr.data(), nullptr, status.data(), 0) != 0)
      throw error(std::string("query_pages: move_pages failed: ") + std::strerror(errno));
    const std::vector<int> ids = os_nodes(t);
    for (std::size_t i = 0; i < pages; ++i)
      for (std::size_t n = 0; n < ids.size(); ++n)
        if (status[i] >= 0 && ids[n] == status[i]) nodes[i] = int(n);
  } else if (pages != 0 && t.nodes() == 1) {
    // No libnuma (e.g. a kernel without NUMA): every page is on the only node.
    std::fill(nodes.begin(), nodes.end(), 0);
  }
  return page_map::explicit_pages(bytes, t.nodes(), std::move(nodes), ps);
}

}  // namespace sinew
