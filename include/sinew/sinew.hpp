#pragma once
/// \file sinew.hpp
/// Everything: `#include <sinew/sinew.hpp>`.
#include <sinew/array.hpp>
#include <sinew/bounded_queue.hpp>
#include <sinew/buffer.hpp>
#include <sinew/buffer_pool.hpp>
#include <sinew/deal_scheduler.hpp>
#include <sinew/error.hpp>
#include <sinew/farm.hpp>
#include <sinew/graph.hpp>
#include <sinew/leaf.hpp>
#include <sinew/loop.hpp>
#include <sinew/map.hpp>
#include <sinew/map_reduce.hpp>
#include <sinew/node.hpp>
#include <sinew/pipeline.hpp>
#include <sinew/scheduler.hpp>
#include <sinew/shape.hpp>
#include <sinew/sink.hpp>
#include <sinew/source.hpp>
#include <sinew/spsc_queue.hpp>
#include <sinew/steal_scheduler.hpp>
#include <sinew/stream.hpp>
#include <sinew/tbb_scheduler.hpp>
#include <sinew/version.hpp>
#include <sinew/view.hpp>
#include <sinew/work_unit.hpp>
