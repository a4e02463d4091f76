// Delivery notes (include/sinew/engine/delivery.hpp): joining two.
#include <sinew/engine/delivery.hpp>

namespace sinew {
namespace {

// Stands for two notes: written when the unit carrying it is; both released
// as lost otherwise (the note_refs' destructors).
class joined_note final : public delivery_note {
 public:
  joined_note(note_ref a, note_ref b) : a_(std::move(a)), b_(std::move(b)) {}

 protected:
  void complete(bool delivered) noexcept override {
    if (delivered) {
      a_.written();
      b_.written();
    }
    delete this;
  }

 private:
  note_ref a_, b_;
};

}  // namespace

void note_ref::join(note_ref other) {
  if (!other) return;
  if (!n_) {
    *this = std::move(other);
    return;
  }
  note_ref mine(std::exchange(n_, nullptr));
  n_ = new joined_note(std::move(mine), std::move(other));
}

}  // namespace sinew
