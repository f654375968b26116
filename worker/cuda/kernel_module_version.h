// The NVIDIA kernel module's version, as /proc/driver/nvidia/version states it: the driver
// version the probe reports beside CUDA's, which only gives the CUDA version it supports.
#ifndef PARATUNE_WORKER_CUDA_KERNEL_MODULE_VERSION_H_
#define PARATUNE_WORKER_CUDA_KERNEL_MODULE_VERSION_H_

#include <string>

#include "absl/strings/string_view.h"

namespace paratune {

// The version in the first line of /proc/driver/nvidia/version: its first word of digits and
// at least one dot. The proprietary module writes "NVRM version: NVIDIA UNIX x86_64 Kernel
// Module  535.104.05  Sat Aug 19 ...", the open one "NVRM version: NVIDIA UNIX Open Kernel
// Module for x86_64  580.159.04  Release Build ..." (seen on an H200; taking the word after
// "Module" gave "for"). Empty when the line has no such word.
std::string KernelModuleVersionOf(absl::string_view first_line);

// KernelModuleVersionOf the machine's /proc/driver/nvidia/version; empty when the file is not
// there (a container without it).
std::string KernelModuleVersion();

}  // namespace paratune

#endif  // PARATUNE_WORKER_CUDA_KERNEL_MODULE_VERSION_H_
