// Coherence records of host/device copies [Vinas17, Appendix B]. See
// include/sinew/opencl/coherence.hpp for the invariants.
//
// Locking: a record's mutex, then a space's mutex. Eviction holds a space's
// mutex and only try_locks other records, so two threads evicting each
// other's buffers skip rather than deadlock.
#include <sinew/opencl/coherence.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <utility>

#include <sinew/engine/error.hpp>

namespace sinew::coherence {

namespace {

using ranges = std::vector<range>;

void add(ranges& v, range r) {
  if (r.empty()) return;
  ranges out;
  out.reserve(v.size() + 1);
  bool placed = false;
  for (const range& x : v) {
    if (x.end < r.begin) out.push_back(x);
    else if (r.end < x.begin) {
      if (!placed) out.push_back(r), placed = true;
      out.push_back(x);
    } else {
      r = {std::min(r.begin, x.begin), std::max(r.end, x.end)};
    }
  }
  if (!placed) out.push_back(r);
  v.swap(out);
}

void subtract(ranges& v, range r) {
  if (r.empty()) return;
  ranges out;
  out.reserve(v.size() + 1);
  for (const range& x : v) {
    if (x.end <= r.begin || r.end <= x.begin) { out.push_back(x); continue; }
    if (x.begin < r.begin) out.push_back({x.begin, r.begin});
    if (r.end < x.end) out.push_back({r.end, x.end});
  }
  v.swap(out);
}

/// Parts of `r` not covered by `v`.
ranges missing(const ranges& v, range r) {
  ranges out;
  std::size_t at = r.begin;
  for (const range& x : v) {
    if (x.end <= at) continue;
    if (x.begin >= r.end) break;
    if (x.begin > at) out.push_back({at, x.begin});
    at = std::max(at, x.end);
    if (at >= r.end) break;
  }
  if (at < r.end) out.push_back({at, r.end});
  return out;
}

ranges intersect(const ranges& v, range r) {
  ranges out;
  for (const range& x : v) {
    range y{std::max(x.begin, r.begin), std::min(x.end, r.end)};
    if (!y.empty()) out.push_back(y);
  }
  return out;
}

struct record;

struct space_state {
  memory_space* space = nullptr;
  std::mutex m;
  std::list<record*> lru;  // resident copies, least recently used first
  std::multimap<std::size_t, void*> kept;  // memory of released copies by size (set_reuse_limit); bytes in c.kept_bytes
  memory_space::counters c;

  /// Kept memory of exactly `bytes`, or null (lock held).
  void* reuse(std::size_t bytes) {
    auto it = kept.find(bytes);
    if (it == kept.end()) return nullptr;
    void* h = it->second;
    kept.erase(it);
    c.kept_bytes -= bytes;
    c.reuses++;
    return h;
  }
  /// Releases the largest kept allocations until `target` bytes or fewer
  /// stay kept; each release outside the lock (a driver's free may wait
  /// for the device).
  void shed(std::size_t target) noexcept {
    for (;;) {
      void* h;
      {
        std::lock_guard g(m);
        if (c.kept_bytes <= target || kept.empty()) return;
        auto last = std::prev(kept.end());
        c.kept_bytes -= last->first;
        h = last->second;
        kept.erase(last);
      }
      space->release(h);
    }
  }
};

struct registry {
  std::mutex m;
  std::vector<space_state*> spaces{nullptr};  // index 0: the host
  static registry& get() {
    static registry* r = new registry();  // immortal: records may die at exit
    return *r;
  }
  space_state& state(unsigned id) {
    std::lock_guard g(m);
    return *spaces.at(id);
  }
};

struct copy {
  unsigned space = 0;
  void* handle = nullptr;
  ranges valid;          // unused for spaces sharing host memory (they alias the host copy)
  unsigned pins = 0;
  bool resident = false;
  std::list<record*>::iterator lru;
};

struct record final : buffer_hook {
  explicit record(buffer& b) : buf(&b) { host_valid.push_back({0, b.bytes()}); }
  ~record() override {
    std::lock_guard g(m);  // waits for an eviction in progress
    for (copy& c : copies) drop(c, true);
  }

  copy* find(unsigned space) {
    for (copy& c : copies)
      if (c.space == space) return &c;
    return nullptr;
  }
  bool shares_host(const copy& c) const { return registry::get().state(c.space).space->shares_host(); }

  /// Releases copy `c`'s memory (the caller made sure nothing is lost), or
  /// with `keep` (its buffer is going away) keeps it for reuse within the
  /// space's reuse limit, shedding the largest kept ones beyond it.
  void drop(copy& c, bool keep = false) {
    space_state& s = registry::get().state(c.space);
    const std::size_t limit = s.space->reuse_limit();
    bool kept = false;
    {
      std::lock_guard g(s.m);
      if (c.resident) {
        s.lru.erase(c.lru);
        c.resident = false;
        if (!s.space->shares_host()) s.c.resident_bytes -= buf->bytes();
      }
      if (keep && c.handle && limit && !s.space->shares_host() && buf->bytes() <= limit) try {
        s.kept.emplace(buf->bytes(), c.handle);
        s.c.kept_bytes += buf->bytes();
        c.handle = nullptr;
        kept = true;
      } catch (...) {  // no memory for the entry: released below instead
      }
    }
    if (kept) s.shed(limit);
    if (c.handle) s.space->release(c.handle);
    c.handle = nullptr;
    c.valid.clear();
  }

  /// Downloads from device copies whatever of `r` the host lacks.
  void host_fill(range r) {
    ranges need = missing(host_valid, r);
    for (copy& c : copies) {
      if (need.empty()) break;
      if (!c.handle || shares_host(c)) continue;
      space_state& s = registry::get().state(c.space);
      for (const range& n : need)
        for (const range& piece : intersect(c.valid, n)) {
          s.space->download(c.handle, piece.begin, static_cast<char*>(buf->data()) + piece.begin,
                            piece.end - piece.begin);
          std::lock_guard g(s.m);
          s.c.downloads++;
          s.c.download_bytes += piece.end - piece.begin;
        }
      for (const range& piece : intersect(c.valid, r)) add(host_valid, piece);
      need = missing(host_valid, r);
    }
    if (!need.empty())
      throw error("coherence: bytes " + std::to_string(need.front().begin) + ".." + std::to_string(need.front().end) +
                  " of a buffer have no valid copy (internal error)");
  }

  /// The copy in `s`, allocated (after evicting others if over budget).
  copy& ensure(space_state& s) {
    copy* c = find(s.space->id());
    if (!c) {
      copies.push_back(copy{});
      c = &copies.back();
      c->space = s.space->id();
    }
    if (!c->handle) {
      bool unified = s.space->shares_host();
      if (!unified) {
        std::lock_guard g(s.m);
        c->handle = s.reuse(buf->bytes());
      }
      const bool reused = c->handle != nullptr;
      if (!reused) {
        if (!unified) make_room(s, buf->bytes());
        c->handle = s.space->allocate(buf->data(), buf->bytes());
      }
      std::lock_guard g(s.m);
      if (!reused) s.c.allocations++;
      if (!unified) s.c.resident_bytes += buf->bytes();
      c->lru = s.lru.insert(s.lru.end(), this);
      c->resident = true;
    } else {
      std::lock_guard g(s.m);
      s.lru.splice(s.lru.end(), s.lru, c->lru);  // most recently used
    }
    return *c;
  }

  /// Evicts least recently used copies in `s` until `need` more bytes fit.
  void make_room(space_state& s, std::size_t need) {
    std::size_t budget = s.space->budget();
    if (!budget) return;
    std::unique_lock g(s.m);
    if (s.c.kept_bytes && s.c.resident_bytes + s.c.kept_bytes + need > budget) {  // kept memory goes first
      const std::size_t room = budget > s.c.resident_bytes + need ? budget - s.c.resident_bytes - need : 0;
      g.unlock();
      s.shed(room);
      g.lock();
    }
    auto it = s.lru.begin();
    while (s.c.resident_bytes + s.c.kept_bytes + need > budget && it != s.lru.end()) {
      record* v = *it;
      if (v == this || !v->m.try_lock()) { ++it; continue; }
      copy* vc = v->find(s.space->id());
      if (!vc || vc->pins) {
        v->m.unlock();
        ++it;
        continue;
      }
      ++it;
      g.unlock();
      v->evict_locked(*vc, s);
      v->m.unlock();
      g.lock();
      it = s.lru.begin();  // the list may have changed meanwhile
    }
  }

  /// Evicts copy `c` (lock held): written back to the host first where it
  /// holds bytes no other space has.
  void evict_locked(copy& c, space_state& s) {
    bool wrote_back = false;
    if (!s.space->shares_host()) {
      for (const range& r : c.valid) {
        ranges lost = missing(host_valid, r);
        for (copy& o : copies)
          if (&o != &c && o.handle && !shares_host(o))
            for (const range& x : o.valid) subtract(lost, x);
        for (const range& piece : lost) {
          s.space->download(c.handle, piece.begin, static_cast<char*>(buf->data()) + piece.begin,
                            piece.end - piece.begin);
          add(host_valid, piece);
          wrote_back = true;
          std::lock_guard g(s.m);
          s.c.downloads++;
          s.c.download_bytes += piece.end - piece.begin;
        }
      }
    }
    drop(c);
    std::lock_guard g(s.m);
    s.c.evictions++;
    if (wrote_back) s.c.write_backs++;
  }

  void* read(space_state& s, range r) {
    copy& c = ensure(s);
    if (s.space->shares_host()) {
      host_fill(r);
      return c.handle;
    }
    for (const range& piece : missing(c.valid, r)) {
      host_fill(piece);
      s.space->upload(c.handle, piece.begin, static_cast<const char*>(buf->data()) + piece.begin,
                      piece.end - piece.begin);
      add(c.valid, piece);
      std::lock_guard g(s.m);
      s.c.uploads++;
      s.c.upload_bytes += piece.end - piece.begin;
    }
    return c.handle;
  }

  void write(space_state& s, range r) {
    copy& c = ensure(s);
    bool unified = s.space->shares_host();
    for (copy& o : copies)
      if (&o != &c) subtract(o.valid, r);
    if (unified) add(host_valid, r);
    else {
      subtract(host_valid, r);
      add(c.valid, r);
    }
  }

  void host_write(range r) {
    for (copy& o : copies) subtract(o.valid, r);
    add(host_valid, r);
  }

  std::mutex m;
  buffer* buf;
  ranges host_valid;
  std::list<copy> copies;  // stable addresses: `copy&` survives push_back
};

record* record_of(const buffer& b) { return static_cast<record*>(b.hook()); }
record& record_for(buffer& b) {
  if (record* r = record_of(b)) return *r;
  return *static_cast<record*>(b.attach_hook(new record(b)));
}

void check(const buffer& b, range r) {
  if (r.begin > r.end || r.end > b.bytes())
    throw error("coherence: range " + std::to_string(r.begin) + ".." + std::to_string(r.end) +
                " is outside the buffer (" + std::to_string(b.bytes()) + " bytes)");
}

}  // namespace

struct space_access {
  static unsigned add(memory_space* s) {
    registry& reg = registry::get();
    auto* st = new space_state();  // immortal: a record may outlive a test's space
    st->space = s;
    std::lock_guard g(reg.m);
    reg.spaces.push_back(st);
    return unsigned(reg.spaces.size() - 1);
  }
};

range subview::write_range(const buffer& b) const {
  std::size_t es = b.type().size;
  std::size_t e = std::min(b.count(), offset + count);
  return {std::min(offset, e) * es, e * es};
}
range subview::read_range(const buffer& b) const {
  std::size_t es = b.type().size;
  std::size_t lo = offset > halo_before ? offset - halo_before : 0;
  std::size_t hi = std::min(b.count(), offset + count + halo_after);
  return {std::min(lo, hi) * es, hi * es};
}

memory_space::memory_space() : id_(space_access::add(this)) {}

memory_space::~memory_space() = default;

void memory_space::retire() {
  space_state& s = registry::get().state(id_);
  for (;;) {
    record* r;
    {
      std::lock_guard g(s.m);
      if (s.lru.empty()) break;
      r = s.lru.front();
    }
    std::lock_guard rg(r->m);
    if (copy* c = r->find(id_)) r->evict_locked(*c, s);
  }
  trim();
}

void memory_space::trim() noexcept { registry::get().state(id_).shed(0); }

memory_space::counters memory_space::stats() const {
  space_state& s = registry::get().state(id_);
  std::lock_guard g(s.m);
  return s.c;
}

void* read(buffer& b, memory_space& space, range r) {
  check(b, r);
  record& rec = record_for(b);
  std::lock_guard g(rec.m);
  return rec.read(registry::get().state(space.id()), r);
}

void write(buffer& b, memory_space& space, range r) {
  check(b, r);
  record& rec = record_for(b);
  std::lock_guard g(rec.m);
  rec.write(registry::get().state(space.id()), r);
}

void host_read(buffer& b, range r) {
  check(b, r);
  if (record* rec = record_of(b)) {
    std::lock_guard g(rec->m);
    rec->host_fill(r);
  }
}

void host_write(buffer& b, range r) {
  check(b, r);
  if (record* rec = record_of(b)) {
    std::lock_guard g(rec->m);
    rec->host_write(r);
  }
}

void copied(buffer& b, memory_space* to, range r, memory_space* from) {
  check(b, r);
  record& rec = record_for(b);
  std::lock_guard g(rec.m);
  memory_space* dev = to ? to : from;
  if (!to || to->shares_host()) add(rec.host_valid, r);
  else {
    copy* c = rec.find(to->id());
    if (!c || !c->handle) throw error("coherence: copied() into " + to->name() + ", which holds no copy of the buffer");
    add(c->valid, r);
  }
  if (dev && !dev->shares_host()) {
    space_state& s = registry::get().state(dev->id());
    std::lock_guard sg(s.m);
    if (to) s.c.uploads++, s.c.upload_bytes += r.end - r.begin;
    else s.c.downloads++, s.c.download_bytes += r.end - r.begin;
  }
}

std::vector<range> valid_ranges(const buffer& b, unsigned space_id) {
  record* rec = record_of(b);
  if (!rec) return space_id == 0 && b.bytes() ? ranges{{0, b.bytes()}} : ranges{};
  std::lock_guard g(rec->m);
  if (space_id == 0) return rec->host_valid;
  copy* c = rec->find(space_id);
  if (!c || !c->handle) return {};
  return rec->shares_host(*c) ? rec->host_valid : c->valid;
}

bool host_stale(const buffer& b) {
  record* rec = record_of(b);
  if (!rec) return false;
  std::lock_guard g(rec->m);
  return !missing(rec->host_valid, {0, b.bytes()}).empty();
}

bool evict(buffer& b, memory_space& space) {
  record* rec = record_of(b);
  if (!rec) return true;
  std::lock_guard g(rec->m);
  copy* c = rec->find(space.id());
  if (!c || !c->handle) return true;
  if (c->pins) return false;
  rec->evict_locked(*c, registry::get().state(space.id()));
  return true;
}

access::access(buffer& b, memory_space& space, range read, range write) : b_(&b), space_(&space) {
  check(b, read);
  check(b, write);
  record& rec = record_for(b);
  std::lock_guard g(rec.m);
  space_state& s = registry::get().state(space.id());
  handle_ = rec.read(s, read);
  if (!write.empty()) rec.write(s, write);
  rec.find(space.id())->pins++;
  write_ = write;
}

access::~access() {
  record& rec = *record_of(*b_);
  std::lock_guard g(rec.m);
  copy* c = rec.find(space_->id());
  if (space_->shares_host() && !write_.empty()) {
    try {
      space_->sync_to_host(handle_, write_.begin, write_.end - write_.begin);
    } catch (...) {
      // A failed map leaves the host copy as the device wrote it (unified
      // memory); the kernel's own failure is reported by the caller.
    }
  }
  c->pins--;
}

}  // namespace sinew::coherence
