// sinew::trace: per-thread event buffers and the Chrome trace-event writer
// (format: "Trace Event Format", Google, the JSON Object Format with
// "traceEvents" and "displayTimeUnit").
#include <sinew/engine/trace.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sinew {

namespace {

std::atomic<std::uint64_t> next_recorder_id{1};
// The recorder of a traced run that is live: where events from threads that
// work for no particular run go (scheduler steals, for instance).
std::atomic<trace*> live_recorder{nullptr};
// The recorder of the run this thread is working for (set by the runtime).
thread_local trace* tl_current = nullptr;

void append_escaped(std::string& out, std::string_view s) {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += ch;
        }
    }
  }
}

void append_string(std::string& out, std::string_view s) {
  out += '"';
  append_escaped(out, s);
  out += '"';
}

void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {  // JSON has no NaN or infinity
    out += "null";
    return;
  }
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  out += b;
}

// Body of the "args" object, rendered when the event is recorded (the
// caller's string_views need not live longer than the call).
std::string render_args(trace_args args) {
  std::string s;
  for (const trace_arg& a : args) {
    if (!s.empty()) s += ',';
    append_string(s, a.key);
    s += ':';
    switch (a.k) {
      case trace_arg::kind::integer: s += std::to_string(a.i); break;
      case trace_arg::kind::real: append_number(s, a.d); break;
      case trace_arg::kind::text: append_string(s, a.s); break;
    }
  }
  return s;
}

// Microseconds since `origin`, 3 decimals (Chrome's "ts" and "dur" unit).
void append_us(std::string& out, std::int64_t ns) {
  char b[40];
  std::snprintf(b, sizeof b, "%.3f", double(ns) / 1000.0);
  out += b;
}

}  // namespace

struct trace::impl {
  struct event {
    char ph;  // 'X' complete, 'i' instant
    std::uint64_t ts, dur;
    std::string cat, name, args;
  };
  // Written by one thread; the lock is only ever contended by a writer
  // taking a snapshot.
  struct buffer {
    std::mutex m;
    std::vector<event> events;
    std::size_t dropped = 0;
    std::string name;
    unsigned tid = 0;
  };

  explicit impl(std::size_t max) : max_events(max) {}
  const std::size_t max_events;  // per thread
  const std::uint64_t id = next_recorder_id.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t origin = trace::now_ns();
  std::atomic<int> live_runs{0};
  mutable std::mutex m;  // guards the two below (a thread's first event only)
  std::vector<std::unique_ptr<buffer>> buffers;
  std::unordered_map<std::thread::id, buffer*> by_thread;

  buffer& local() {
    // One recorder is the common case: remember the last one per thread.
    struct cache {
      std::uint64_t id = 0;
      buffer* b = nullptr;
    };
    thread_local cache c;
    if (c.id == id) return *c.b;
    std::lock_guard<std::mutex> lk(m);
    auto [it, fresh] = by_thread.try_emplace(std::this_thread::get_id(), nullptr);
    if (fresh) {
      buffers.push_back(std::make_unique<buffer>());
      buffer& b = *buffers.back();
      b.tid = unsigned(buffers.size());
      b.name = "thread " + std::to_string(b.tid);
      it->second = &b;
    }
    c = {id, it->second};
    return *it->second;
  }

  void record(char ph, std::string_view cat, std::string_view name, std::uint64_t ts, std::uint64_t dur,
              trace_args args) {
    buffer& b = local();
    {
      std::lock_guard<std::mutex> lk(b.m);
      if (b.events.size() >= max_events) {
        ++b.dropped;
        return;
      }
    }
    event e{ph, ts, dur, std::string(cat), std::string(name), render_args(args)};
    std::lock_guard<std::mutex> lk(b.m);
    b.events.push_back(std::move(e));
  }
};

trace::trace(std::size_t max_events_per_thread) : p_(std::make_unique<impl>(max_events_per_thread)) {}

trace::~trace() {
  trace* self = this;
  live_recorder.compare_exchange_strong(self, nullptr);
}

std::uint64_t trace::now_ns() noexcept {
  return std::uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

void trace::complete(std::string_view category, std::string_view name, std::uint64_t start_ns, std::uint64_t dur_ns,
                     trace_args args) {
  p_->record('X', category, name, start_ns, dur_ns, args);
}

void trace::instant(std::string_view category, std::string_view name, std::uint64_t at_ns, trace_args args) {
  p_->record('i', category, name, at_ns, 0, args);
}

void trace::name_thread(std::string_view name) {
  impl::buffer& b = p_->local();
  std::lock_guard<std::mutex> lk(b.m);
  b.name = std::string(name);
}

trace* trace::current() noexcept {
  if (trace* t = tl_current) return t;
  return live_recorder.load(std::memory_order_acquire);
}

void trace::emit(std::string_view category, std::string_view name, std::uint64_t start_ns, std::uint64_t dur_ns,
                 trace_args args) {
  if (trace* t = current()) t->complete(category, name, start_ns, dur_ns, args);
}

void trace::emit_instant(std::string_view category, std::string_view name, std::uint64_t at_ns, trace_args args) {
  if (trace* t = current()) t->instant(category, name, at_ns, args);
}

trace::scope::scope(trace* t) noexcept : prev_(tl_current) { tl_current = t; }
trace::scope::~scope() { tl_current = prev_; }

std::size_t trace::size() const {
  std::lock_guard<std::mutex> lk(p_->m);
  std::size_t n = 0;
  for (auto& b : p_->buffers) {
    std::lock_guard<std::mutex> bl(b->m);
    n += b->events.size();
  }
  return n;
}

std::size_t trace::dropped() const {
  std::lock_guard<std::mutex> lk(p_->m);
  std::size_t n = 0;
  for (auto& b : p_->buffers) {
    std::lock_guard<std::mutex> bl(b->m);
    n += b->dropped;
  }
  return n;
}

void trace::clear() {
  std::lock_guard<std::mutex> lk(p_->m);
  for (auto& b : p_->buffers) {
    std::lock_guard<std::mutex> bl(b->m);
    b->events.clear();
    b->dropped = 0;
  }
}

void trace::write_chrome_json(std::ostream& os) const {
  std::vector<impl::buffer*> bufs;
  {
    std::lock_guard<std::mutex> lk(p_->m);
    for (auto& b : p_->buffers) bufs.push_back(b.get());
  }
  os << "{\"traceEvents\":[\n";
  std::string line;
  bool first = true;
  auto put = [&] {
    if (!first) os << ",\n";
    first = false;
    os << line;
    line.clear();
  };
  line = "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"sinew\"}}";
  put();
  for (impl::buffer* b : bufs) {
    std::lock_guard<std::mutex> bl(b->m);
    line = "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(b->tid) + ",\"args\":{\"name\":";
    append_string(line, b->name);
    line += "}}";
    put();
  }
  std::size_t dropped = 0;
  for (impl::buffer* b : bufs) {
    std::lock_guard<std::mutex> bl(b->m);
    dropped += b->dropped;
    const std::string tid = std::to_string(b->tid);
    for (const impl::event& e : b->events) {
      line = "{\"name\":";
      append_string(line, e.name);
      line += ",\"cat\":";
      append_string(line, e.cat);
      line += e.ph == 'X' ? ",\"ph\":\"X\",\"ts\":" : ",\"ph\":\"i\",\"s\":\"t\",\"ts\":";
      append_us(line, std::int64_t(e.ts - p_->origin));
      if (e.ph == 'X') {
        line += ",\"dur\":";
        append_us(line, std::int64_t(e.dur));
      }
      line += ",\"pid\":1,\"tid\":" + tid + ",\"args\":{" + e.args + "}}";
      put();
    }
  }
  os << "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":" << dropped << "}}\n";
}

void trace::run_started() noexcept {
  if (p_->live_runs.fetch_add(1, std::memory_order_acq_rel) == 0) {
    trace* none = nullptr;
    live_recorder.compare_exchange_strong(none, this, std::memory_order_acq_rel);
  }
}

void trace::run_ended() noexcept {
  if (p_->live_runs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    trace* self = this;
    live_recorder.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
  }
}

}  // namespace sinew
