// The device runtime: what PyTorch needs from a device besides kernels
// (allocator, device guard, streams, hooks, generator, copies, the CPU
// fallback). It talks to the device only through the driver
// (driver/RefDriver.h), so a vendor's runtime is this code over their
// driver. Messages name the device as the Python package renamed it
// (c10::get_privateuse1_backend()), so no file here carries the name.
#pragma once

#include "driver/RefDriver.h"
#include "kernels/RefKernels.h"

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Scalar.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace opgen_ref::runtime {

// The device's name ("mychip") and its upper-case form for environment
// variables (TORCH_MYCHIP_STRICT_FALLBACK).
std::string device_name();
std::string upper_device_name();

// Throws the driver's error text unless e == refSuccess.
void driver_check(refError e, const char* what);

// ---- devices (Guard.cpp) ----
c10::DeviceIndex device_count() noexcept;
c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex index);
// Throws a clear error for an index outside [0, device_count()).
void check_device_index(c10::DeviceIndex index);
void synchronize(c10::DeviceIndex index);
// The driver stream behind the current c10 stream of the current device.
// Every kernel launch asks for it, so it also refuses a bad fork.
refStream_t current_stream();
// Note [Fork safety]: the device was used in this process (memory, a stream);
// a child forked from now on is in a bad fork, where check_not_forked throws.
void mark_device_used();
bool in_bad_fork();
// Used in this process and not in a bad fork (torch.<device>.is_initialized()).
bool device_initialized();
void check_not_forked();

// ---- memory (Allocator.cpp) ----
c10::Allocator* device_allocator();
c10::Allocator* pinned_host_allocator();
// Device that owns a pointer returned by the device allocator (or any
// pointer inside such an allocation); nullopt for foreign pointers.
std::optional<c10::DeviceIndex> device_of_pointer(const void* ptr);
bool is_pinned_host_pointer(const void* ptr);
// Copies `nbytes` between any mix of host and device memory (driver memcpy).
void memcpy_any(void* dst, const void* src, size_t nbytes);
// The same, ordered on the current stream and asynchronous to the host where
// the driver can be (a pinned host side, or device to device): copy_ with
// non_blocking=True.
void memcpy_any_async(void* dst, const void* src, size_t nbytes);
// The kernel library's tag for a torch dtype; nullopt for dtypes the library
// lacks (complex, quantized, float8...). The one place the two meet.
std::optional<refkDtype> kernel_dtype_of(c10::ScalarType t);
// The value of a 1-element device tensor, read through the driver.
c10::Scalar local_scalar(const at::Tensor& t);

// ---- random numbers (Generator.cpp) ----
const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);

// ---- registrations that depend on the generated ones (Minimal.cpp) ----
// Note [fill_ yields to a listed fill]: called once from the module's init.
void register_deferred_kernels();

// ---- CPU fallback bookkeeping (Fallback.cpp) ----
std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();
void set_strict_fallback(bool on);
bool strict_fallback();

}  // namespace opgen_ref::runtime
