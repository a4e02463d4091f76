#pragma once
/// \file error.hpp
/// Exceptions thrown by Sinew. Every error raised while a graph runs names the
/// node path where it happened, e.g. `pipeline[1]/farm/map<Solarize>`.
#include <stdexcept>
#include <string>

namespace sinew {

/// Base of every exception Sinew throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A graph that cannot be built: mismatched buffer types, bad sizes, bad nesting.
/// The message starts with the node path of the offending node.
///
/// \code
/// try { sinew::graph g(sinew::pipeline(a, b)); } catch (const sinew::graph_error& e) { puts(e.what()); }
/// \endcode
class graph_error : public error {
 public:
  graph_error(std::string path, const std::string& what)
      : error(path + ": " + what), path_(std::move(path)) {}
  /// Node path of the offending node.
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

/// A leaf (or source/sink) failed while the graph ran. `what()` is
/// `"<node path>: <original message>"`; `nested()` rethrows the original.
///
/// \code
/// try { g.run(in, out).get(); }
/// catch (const sinew::node_error& e) { std::cerr << e.path() << " failed: " << e.what(); }
/// \endcode
class node_error : public error {
 public:
  node_error(std::string path, const std::string& original, std::exception_ptr cause)
      : error(path + ": " + original), path_(std::move(path)), cause_(std::move(cause)) {}
  const std::string& path() const noexcept { return path_; }
  /// The exception the leaf threw.
  std::exception_ptr cause() const noexcept { return cause_; }

 private:
  std::string path_;
  std::exception_ptr cause_;
};

/// Thrown by `run_future::get()` after `cancel()` or a cancelled stop token.
///
/// \code
/// auto f = g.run(sinew::generate(make_unit), sinew::discard());
/// f.cancel();
/// try { f.get(); } catch (const sinew::cancelled&) { /* every unit was released */ }
/// \endcode
class cancelled : public error {
 public:
  cancelled() : error("run cancelled") {}
};

}  // namespace sinew
