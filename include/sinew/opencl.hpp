#pragma once
/// \file opencl.hpp
/// Devices (CMake component `sinew::opencl`): OpenCL platforms and kernel
/// leaves, host/device coherence, and maps split over several devices by a
/// balancer. docs/opencl.md, docs/balancing.md.
///
/// \code
/// #include <sinew/opencl.hpp>
/// auto devs = sinew::opencl::kernel_executors(spec);   // one executor per device
/// sinew::graph g(sinew::multi_device_map(devs, sinew::balance::iterative()));
/// \endcode
#include <sinew/sinew.hpp>
#include <sinew/opencl/balancer.hpp>
#include <sinew/opencl/coherence.hpp>
#include <sinew/opencl/device_executor.hpp>
#include <sinew/opencl/host_executor.hpp>
#include <sinew/opencl/kernel.hpp>
#include <sinew/opencl/multi_device_map.hpp>
#include <sinew/opencl/platform.hpp>
#include <sinew/opencl/program_cache.hpp>
#include <sinew/opencl/simulated_device.hpp>
