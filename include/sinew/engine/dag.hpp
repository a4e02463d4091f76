#pragma once
/// \file dag.hpp
/// `sinew::dag`: skeleton trees joined into a directed acyclic graph, with
/// several named sources and sinks, fan-out (broadcast, split) and fan-in
/// (merge, zip, join by key). Each vertex that runs a tree is compiled as a tree is by
/// `graph`; the edges are bounded queues like the ones between stages. A
/// `graph` built from a dag runs like one built from a tree.
///
/// An output used as the input of several vertices is a *broadcast*: every
/// unit goes to each of them, sharing its buffers (no copy; a tree that
/// works in place on them copies them first, and never writes the memory of
/// a source such as `from(items)` there). Vertices are added after their
/// inputs, so a dag cannot have a cycle; iteration stays with `loop`.
///
/// \code
/// sinew::dag d;
/// auto frames = d.source("frames");
/// auto gray = d.add("decode", sinew::map<Decode>(), frames);
/// auto edges = d.add("edges", sinew::farm(sinew::map<Sobel>(), 4), gray);  // gray feeds
/// auto hist = d.add("hist", sinew::map<Histogram>(), gray);                // two trees
/// auto both = d.zip("both", {edges, hist});     // one unit: edges' buffers, then hist's
/// d.sink("out", d.add("combine", sinew::map<Combine>(), both));
/// d.sink("preview", edges);
/// sinew::graph g(d);
/// g.run({{"frames", sinew::from(images)}},
///       {{"out", sinew::into(results)}, {"preview", sinew::for_each(show)}}).get();
/// \endcode
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <sinew/engine/node.hpp>
#include <sinew/engine/work_unit.hpp>

namespace sinew {

/// How `dag::split` chooses an output for each unit.
enum class split_policy {
  round_robin,   ///< in turn, skipping outputs whose queue is full
  least_loaded,  ///< the output whose queue holds the fewest units
};

/// The key `dag::split_by_key` routes by (units of one key go to one output,
/// in order).
using key_function = std::function<std::uint64_t(const work_unit&)>;

/// What `dag::join` does with a unit that finds no match.
enum class join_unmatched {
  drop,  ///< release it, counted as the join's stage counter "unmatched"
  fail,  ///< fail the run, naming the join, the input's branch and the key
};

/// How `dag::join` matches units.
struct join_options {
  /// Most units one input may have waiting for a match; a unit arriving on
  /// an input that has this many makes its oldest waiting unit unmatched.
  std::size_t window = 1024;
  join_unmatched unmatched = join_unmatched::drop;
};

class dag {
 public:
  /// One output of a vertex, to be used as the input of later ones.
  class port {
   public:
    port() = default;
    bool valid() const noexcept { return v_ != none; }

   private:
    friend class dag;
    static constexpr std::uint32_t none = UINT32_MAX;
    port(std::uint32_t v, std::uint32_t k) : v_(v), k_(k) {}
    std::uint32_t v_ = none, k_ = 0;
  };

  /// A source, given to `graph::run` by this name.
  ///
  /// \code
  /// auto in = d.source("lines");
  /// \endcode
  port source(std::string name);
  /// A skeleton tree fed by `in`; its units leave with the tree's result in
  /// layer 0. The tree's stages are named `name/...` in errors and stats.
  ///
  /// \code
  /// auto scaled = d.add("scale", sinew::farm(sinew::map<Scale>(), 8), in);
  /// \endcode
  port add(std::string name, node tree, port in);
  /// Units of every input, interleaved as they arrive; each keeps its
  /// sequence number and origin (`work_unit::origin()`, its source).
  ///
  /// \code
  /// auto all = d.merge("all", {d.source("left"), d.source("right")});
  /// \endcode
  port merge(std::string name, std::vector<port> ins);
  /// The units of equal sequence number from every input, made one unit
  /// whose layer 0 holds the buffers of input 0, then input 1, ... (their
  /// shapes must be equal; at most 8 buffers in all). A unit no other
  /// input can match any more fails the run, naming both branches.
  ///
  /// \code
  /// auto pair = d.zip("pair", {edges, hist});   // layer 0: edge map, histogram
  /// \endcode
  port zip(std::string name, std::vector<port> ins);
  /// Units of equal key from every input, made one unit whose layer 0 holds
  /// the buffers of input 0, then input 1, ... (their shapes must be
  /// equal; at most 8 buffers in all). `keys` has one function for every
  /// input, or one per input. A unit arriving on input i is joined with the
  /// oldest waiting unit of its key of every other input; when one has
  /// none, it waits. Each input keeps at most `o.window` units waiting:
  /// past it, and once an input has ended, units are unmatched
  /// (`join_unmatched`). The joined units are numbered afresh (0, 1, ...
  /// in the order their matches complete) with the join as their origin:
  /// sinks order them as a stream of their own.
  ///
  /// \code
  /// // each order (order id, ...) with the payment of the same order id
  /// auto paid = d.join("paid", {orders, payments},
  ///     {[](const sinew::work_unit& u) { return u.input<std::uint32_t>(0)[0]; }},
  ///     {.window = 4096, .unmatched = sinew::join_unmatched::drop});
  /// \endcode
  port join(std::string name, std::vector<port> ins, std::vector<key_function> keys, join_options o = {});
  /// `n` outputs; each unit goes to one of them.
  ///
  /// \code
  /// auto parts = d.split("spread", in, 4, sinew::split_policy::least_loaded);
  /// \endcode
  std::vector<port> split(std::string name, port in, unsigned n, split_policy p = split_policy::round_robin);
  /// `n` outputs; a unit goes to output `key(unit) % n`, so every unit of a
  /// key takes the same path and keeps its order.
  ///
  /// \code
  /// auto shards = d.split_by_key("by_sensor", in, 4,
  ///                              [](const sinew::work_unit& u) { return u.input<std::uint32_t>(0)[0]; });
  /// \endcode
  std::vector<port> split_by_key(std::string name, port in, unsigned n, key_function key);
  /// A farm of `replicas` trees, each made once by `make_replica(r)` (so it
  /// may hold state of its own: a running count, a session table), with
  /// units routed by key: every unit of a key goes to the same replica, in
  /// order. The replicas' results are merged. Each replica runs its units
  /// one at a time (a farm inside one is refused): state needs no lock.
  /// Its stages are named `name[r]/...`, the router `name/route`.
  ///
  /// \code
  /// struct Count {                       // per element: (sensor, value) -> running count
  ///   std::unordered_map<int, int>* seen;
  ///   void operator()(int sensor, int* count) const { *count = ++(*seen)[sensor]; }
  /// };
  /// std::vector<std::unordered_map<int, int>> state(4);   // one per replica
  /// auto counts = d.keyed_farm("count", in, 4,
  ///     [](const sinew::work_unit& u) { return std::uint64_t(u.input<int>(0)[0]); },
  ///     [&](unsigned r) { return sinew::map(Count{&state[r]}); });
  /// \endcode
  port keyed_farm(std::string name, port in, unsigned replicas, key_function key,
                  const std::function<node(unsigned replica)>& make_replica);
  /// A sink fed by `in`, given to `graph::run` by this name.
  ///
  /// \code
  /// d.sink("out", scaled);
  /// \endcode
  void sink(std::string name, port in);

  /// One vertex as added (read by graph's constructor).
  struct vertex {
    enum kind { source, tree, merge, zip, join, split, sink } k;
    vertex(kind k_, std::string name_, node root_, std::vector<port> ins_, unsigned outs_ = 1)
        : k(k_), name(std::move(name_)), root(std::move(root_)), ins(std::move(ins_)), outs(outs_) {}
    std::string name;
    node root;                    // tree
    std::vector<port> ins;
    unsigned outs = 1;            // ports it offers
    split_policy policy = split_policy::round_robin;
    key_function key;             // split by key
    std::vector<key_function> keys;  // join: one for every input, or one per input
    join_options join_opts;       // join
    bool serial = false;          // tree: a keyed farm's replica (no farm inside)
  };
  const std::vector<vertex>& vertices() const noexcept { return v_; }
  /// Where the dag treats a unit as a whole, so that record batches
  /// (records.hpp) would change what its sinks get: a tree's leaf that does
  /// (node_impl::whole_unit_leaf), a zip or join (they pair units) or a split by key
  /// (it routes units). Empty when its sources may batch.
  ///
  /// \code
  /// if (d.whole_unit_at().empty()) { /* read_lines(...) sources batch lines */ }
  /// \endcode
  std::string whole_unit_at() const;
  /// Vertex and output index of a port.
  static std::uint32_t vertex_of(port p) noexcept { return p.v_; }
  static std::uint32_t output_of(port p) noexcept { return p.k_; }

 private:
  std::uint32_t add_vertex(vertex v);
  std::vector<vertex> v_;
};

}  // namespace sinew
