#pragma once
/// \file sinew.hpp
/// The core of Sinew (CMake component `sinew::core`): units and buffers,
/// graphs, sources and sinks, the skeletons, the schedulers.
///
/// \code
/// #include <sinew/sinew.hpp>
/// sinew::graph g(sinew::pipeline(sinew::map<A>(), sinew::farm(sinew::map<B>(), 4)));
/// g.run(sinew::from(items), sinew::into(results)).get();
/// \endcode
///
/// The other components have their own umbrella headers:
/// `<sinew/opencl.hpp>` (`sinew::opencl`: devices, OpenCL leaves, maps split
/// over devices), `<sinew/json.hpp>` (`sinew::json`: graph files and the
/// kernel registry), `<sinew/distributed/mpi_session.hpp>` (`sinew::mpi`), and
/// `<sinew/io.hpp>` for the stream sources and sinks of the core.
#include <sinew/engine/array.hpp>
#include <sinew/engine/bounded_queue.hpp>
#include <sinew/engine/buffer.hpp>
#include <sinew/engine/buffer_pool.hpp>
#include <sinew/engine/dag.hpp>
#include <sinew/engine/error.hpp>
#include <sinew/engine/graph.hpp>
#include <sinew/engine/node.hpp>
#include <sinew/engine/run_id.hpp>
#include <sinew/engine/shape.hpp>
#include <sinew/engine/sink.hpp>
#include <sinew/engine/source.hpp>
#include <sinew/engine/spsc_queue.hpp>
#include <sinew/engine/stream.hpp>
#include <sinew/engine/version.hpp>
#include <sinew/engine/view.hpp>
#include <sinew/engine/work_unit.hpp>
#include <sinew/distributed/distributed.hpp>
#include <sinew/schedulers/algorithms.hpp>
#include <sinew/schedulers/async.hpp>
#include <sinew/schedulers/deal_scheduler.hpp>
#include <sinew/schedulers/scheduler.hpp>
#include <sinew/schedulers/scheduler_registry.hpp>
#include <sinew/schedulers/steal_scheduler.hpp>
#include <sinew/schedulers/task_function.hpp>
#include <sinew/schedulers/task_graph.hpp>
#include <sinew/schedulers/tbb_scheduler.hpp>
#include <sinew/skeletons/farm.hpp>
#include <sinew/skeletons/leaf.hpp>
#include <sinew/skeletons/loop.hpp>
#include <sinew/skeletons/map.hpp>
#include <sinew/skeletons/map_reduce.hpp>
#include <sinew/skeletons/pipeline.hpp>
