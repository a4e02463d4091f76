#include <sinew/engine/buffer_pool.hpp>
#include <sinew/skeletons/loop.hpp>

#include <cstring>

namespace sinew {

namespace detail {

class loop_node final : public node_impl {
 public:
  loop_node(node_ptr body, loop_predicate until, std::size_t max, std::string label)
      : b_(std::move(body)), until_(std::move(until)), max_(max), label_(std::move(label)) {}
  std::string label() const override { return label_; }
  type_list input_types() const override { return b_->input_types(); }
  type_list output_types() const override { return b_->output_types(); }
  bool in_place() const override { return b_->in_place(); }
  shape output_shape(const shape& in) const override { return b_->output_shape(in); }
  std::string child_path(const std::string& path) const { return path + "/" + b_->segment(); }
  void check(const std::string& path) const override {
    b_->check(child_path(path));
    type_list in = b_->input_types(), out = b_->output_types();
    if (!in.matches(out))
      throw graph_error(path, "the body reads " + in.str() + " but writes " + out.str() +
                                  "; iteration k+1 reads what iteration k wrote, so they must match");
  }
  std::shared_ptr<executable> compile_inline(const std::string& path) const override {
    auto e = std::make_shared<exec>();
    e->body = b_->compile_inline(child_path(path));
    e->node = b_;
    e->until = until_;
    e->max = max_;
    e->in_place = b_->in_place();
    return e;
  }

 private:
  struct exec final : executable {
    std::shared_ptr<executable> body;
    node_ptr node;
    loop_predicate until;
    std::size_t max;
    bool in_place;
    bool done(const layer& l, std::size_t i) const { return i >= max || (until && until(l, i)); }
    void execute(exec_args& a) override {
      exec_args sub = a;
      std::size_t i = 0;
      if (in_place) {
        sub.out = sub.in;
        do {
          body->execute(sub);
        } while (!done(*a.in, ++i));
        return;
      }
      body->execute(sub);  // first iteration: input -> output
      if (done(*a.out, ++i)) return;
      // Ping-pong between the output layer and a scratch layer of the same
      // types; the caller's input is never overwritten.
      layer cur = *a.out, scratch(cur.shape());
      for (unsigned k = 0; k < cur.size(); ++k)
        scratch.add(buffer_pool::global().acquire(cur[k]->count(), cur[k]->type()));
      do {
        shape next = node->output_shape(cur.shape());
        if (!(next == cur.shape()))
          throw error("the loop body turns shape " + cur.shape().str() + " into " + next.str() +
                      "; after the first iteration it must keep the shape");
        sub.in = &cur;
        sub.out = &scratch;
        body->execute(sub);
        std::swap(cur, scratch);
      } while (!done(cur, ++i));
      for (unsigned k = 0; k < cur.size(); ++k)
        if (cur[k] != (*a.out)[k]) std::memcpy((*a.out)[k]->data(), cur[k]->data(), cur[k]->bytes());
    }
  };

  node_ptr b_;
  loop_predicate until_;
  std::size_t max_;
  std::string label_;
};

}  // namespace detail

node loop(node body, loop_predicate until, std::size_t max_iterations) {
  if (!body) throw graph_error("loop", "empty body node");
  if (!until) throw graph_error("loop", "needs a predicate (use for_loop for a fixed count)");
  if (max_iterations == 0) throw graph_error("loop", "max_iterations must be at least 1");
  return node(std::make_shared<detail::loop_node>(body.impl(), std::move(until), max_iterations, "loop"));
}

node for_loop(node body, std::size_t n) {
  if (!body) throw graph_error("for", "empty body node");
  if (n == 0) throw graph_error("for", "needs at least 1 iteration");
  return node(std::make_shared<detail::loop_node>(body.impl(), nullptr, n, "for(" + std::to_string(n) + ")"));
}

}  // namespace sinew
