#pragma once
/// \file trace.hpp
/// `sinew::trace`: a recorder of timed events, written out as Chrome
/// trace-event JSON (open it in https://ui.perfetto.dev or chrome://tracing).
/// Give it to a graph in `graph_options::trace`; the runtime then records, on
/// one track per thread:
///
/// | category | name        | one event per                     | args                  |
/// |----------|-------------|-----------------------------------|-----------------------|
/// | `leaf`   | stage path  | (stage, data unit) executed       | `seq`                 |
/// | `chunk`  | stage path  | chunk a map split a unit into     | `seq`, `begin`, `end` |
/// | `source` | source label| unit the source produced          | `seq`                 |
/// | `sink`   | sink label  | unit the sink consumed            | `seq`                 |
///
/// Other components add their own events through `trace::emit` (a no-op
/// costing one branch when nothing records): transfers (`transfer`), balancer
/// decisions (`balance`), steals (`steal`). See docs/observability.md.
///
/// \code
/// sinew::trace rec;
/// sinew::graph g(tree, {.trace = &rec});
/// g.run(in, out).get();
/// std::ofstream f("trace.json");
/// rec.write_chrome_json(f);          // {"traceEvents":[...],"displayTimeUnit":"ms"}
///
/// // From any component (records only while a traced run is live):
/// auto t0 = sinew::trace::now_ns();
/// copy_to_device(...);
/// sinew::trace::emit("transfer", "h2d gpu0", t0, sinew::trace::now_ns() - t0, {{"bytes", n}});
/// \endcode
///
/// Costs: events go to a buffer of the calling thread (one uncontended lock
/// each, no lock shared between threads); a graph without a recorder pays one
/// predictable branch per unit. The recorder must outlive the runs that use it.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace sinew {

/// One argument of an event: a key with an integer, a real or a text value.
/// Keys and texts are copied when the event is recorded.
struct trace_arg {
  enum class kind { integer, real, text };
  std::string_view key;
  kind k = kind::integer;
  std::int64_t i = 0;
  double d = 0;
  std::string_view s;

  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  trace_arg(std::string_view key_, T v) : key(key_), k(kind::integer), i(std::int64_t(v)) {}
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  trace_arg(std::string_view key_, T v) : key(key_), k(kind::real), d(double(v)) {}
  trace_arg(std::string_view key_, std::string_view v) : key(key_), k(kind::text), s(v) {}
  trace_arg(std::string_view key_, const char* v) : key(key_), k(kind::text), s(v) {}
};

using trace_args = std::initializer_list<trace_arg>;

class trace {
 public:
  /// Keeps at most `max_events_per_thread` events per thread (about 150
  /// bytes each); later ones are counted in `dropped()`, not kept.
  explicit trace(std::size_t max_events_per_thread = 1'000'000);
  ~trace();
  trace(const trace&) = delete;
  trace& operator=(const trace&) = delete;

  /// Clock of every timestamp (steady clock, nanoseconds).
  static std::uint64_t now_ns() noexcept;

  /// Records a complete event (`"ph":"X"`) on the calling thread's track.
  void complete(std::string_view category, std::string_view name, std::uint64_t start_ns, std::uint64_t dur_ns,
                trace_args args = {});
  /// Records an instant event (`"ph":"i"`, thread scope).
  void instant(std::string_view category, std::string_view name, std::uint64_t at_ns, trace_args args = {});
  /// Names the calling thread's track (default: "thread <n>").
  void name_thread(std::string_view name);

  /// The recorder events from this thread go to: the one of the traced run
  /// whose work this thread is doing (set by the runtime, or by a `scope`),
  /// else the one of a traced run that is live in the process, else null.
  static trace* current() noexcept;
  /// True when `current()` is not null: test it before building costly args.
  static bool active() noexcept { return current() != nullptr; }
  /// The hook for components that do not hold the recorder (devices,
  /// balancers, schedulers): a complete event on `current()`, or nothing.
  static void emit(std::string_view category, std::string_view name, std::uint64_t start_ns, std::uint64_t dur_ns,
                   trace_args args = {});
  /// As `emit`, an instant event.
  static void emit_instant(std::string_view category, std::string_view name, std::uint64_t at_ns,
                           trace_args args = {});

  /// Makes `t` the calling thread's `current()` until the scope ends (for
  /// threads a component starts on behalf of a run).
  ///
  /// \code
  /// sinew::trace::scope s(rec);
  /// sinew::trace::emit("balance", "split", t0, dt, {{"gpu_share", 0.7}});
  /// \endcode
  class scope {
   public:
    explicit scope(trace* t) noexcept;
    explicit scope(trace& t) noexcept : scope(&t) {}
    ~scope();
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    trace* prev_;
  };

  /// Events recorded so far (all threads).
  std::size_t size() const;
  /// Events not kept because their thread's buffer was full.
  std::size_t dropped() const;
  /// Drops every event (thread names are kept).
  void clear();
  /// `{"traceEvents":[...],"displayTimeUnit":"ms","otherData":{...}}`:
  /// thread-name metadata (`"ph":"M"`) then the events, timestamps in
  /// microseconds since the recorder was made; `otherData.dropped_events`
  /// counts events over the per-thread limit. Safe while runs are still
  /// recording (a snapshot).
  void write_chrome_json(std::ostream& os) const;

  /// Runtime use: a traced run started / ended (makes this recorder the
  /// process-wide fallback of `current()` while any of its runs is live).
  void run_started() noexcept;
  void run_ended() noexcept;

  struct impl;

 private:
  std::unique_ptr<impl> p_;
};

}  // namespace sinew
