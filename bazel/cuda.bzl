"""CUDA C++ compilation with the toolkit's nvcc, offline (rules_cuda cannot be downloaded).

Each .cu file is compiled by a genrule running /usr/local/cuda/bin/nvcc into a position-
independent object, and a cc_library links the objects with the static CUDA runtime. The
objects carry machine code for Ampere (A100, sm_80) and Hopper (H100/H200, sm_90) and PTX for
newer GPUs, which the driver compiles at load time.
"""

load("@rules_cc//cc:defs.bzl", "cc_library")

NVCC = "/usr/local/cuda/bin/nvcc"

NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "-Xcompiler=-fPIC",
    "-Xcompiler=-Wall",
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
    # Every warning about the device code is an error: no GPU here to find the bug later.
    "-Werror=all-warnings",
]

def cuda_library(name, srcs, hdrs = [], device_hdrs = [], deps = [], visibility = None):
    """A cc_library whose .cu srcs are compiled by nvcc.

    Args:
      name: the cc_library's name.
      srcs: .cu files of this package.
      hdrs: the library's headers, plain C++ that host code includes (launch functions, no
        kernels); the .cu files include them too.
      device_hdrs: headers with device code (.cuh) that only the .cu files include.
      deps: cc_libraries the host code needs; nvcc itself sees only the headers above and the
        toolkit's.
      visibility: the cc_library's visibility.
    """
    objects = []
    for src in srcs:
        if not src.endswith(".cu"):
            fail("cuda_library srcs must be .cu files, got " + src)
        obj = src[:-len(".cu")] + ".pic.o"
        native.genrule(
            name = src[:-len(".cu")] + "_nvcc",
            srcs = [src] + hdrs + device_hdrs,
            outs = [obj],
            cmd = " ".join([NVCC] + NVCC_FLAGS + [
                "-I.",
                "-c",
                "$(location %s)" % src,
                "-o",
                "$@",
            ]),
        )
        objects.append(obj)
    cc_library(
        name = name,
        srcs = objects,
        hdrs = hdrs,
        deps = deps + ["@cuda//:cudart_static"],
        visibility = visibility,
    )
