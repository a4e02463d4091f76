#pragma once
/// \file json.hpp
/// Graph files (CMake component `sinew::json`): load, validate and run the
/// JSON graphs of docs/json.md, and the registry of the kernels they name.
///
/// \code
/// #include <sinew/json.hpp>
/// auto f = sinew::graph_file::load("graphs/saxpy.json", {"/source/count=4"});
/// auto sched = f.make_scheduler();
/// sinew::graph g(f.root(), f.options(sched.get()));
/// auto sum = std::make_shared<sinew::io::checksum_result>();
/// g.run(f.make_source(), f.make_sink(sum)).get();
/// \endcode
#include <sinew/sinew.hpp>
#include <sinew/json/graph_file.hpp>
#include <sinew/json/kernel_registry.hpp>
