"""Protobuf and gRPC C++ code generation with Debian's protoc, offline.

Bazel 4's proto_library needs @com_google_protobuf, which cannot be downloaded here, so a
genrule runs the system protoc and grpc_cpp_plugin and a cc_library compiles the output.
"""

load("@rules_cc//cc:defs.bzl", "cc_library")

def cc_grpc_proto_library(
        name,
        srcs,
        deps = [],
        grpc = True,
        visibility = None):
    """Generates <name>: a cc_library with the message (and, if grpc, service) code of srcs.

    Args:
      name: the cc_library's name.
      srcs: .proto files in this package; imports are resolved from the workspace root.
      deps: the cc_grpc_proto_library targets of the protos that srcs import. Their .proto
        files (and theirs, transitively: the <dep>_srcs filegroups) are inputs of the
        codegen, and their generated headers come with the cc_library deps.
      grpc: whether to generate gRPC service stubs too (and link gRPC); False for protos
        without services, which binaries that must not link gRPC (the CUDA probe) may use.
      visibility: visibility of the cc_library and of the <name>_srcs filegroup.
    """
    bases = [src[:-len(".proto")] for src in srcs]
    message_outs = [b + ".pb.h" for b in bases] + [b + ".pb.cc" for b in bases]
    grpc_outs = []
    if grpc:
        grpc_outs = [b + ".grpc.pb.h" for b in bases] + [b + ".grpc.pb.cc" for b in bases]
    plugin = " --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin --grpc_out=$(GENDIR)" if grpc else ""
    dep_protos = [d + "_srcs" for d in deps]
    native.filegroup(
        name = name + "_srcs",
        srcs = srcs + dep_protos,
        visibility = visibility,
    )
    native.genrule(
        name = name + "_codegen",
        srcs = srcs + dep_protos,
        outs = message_outs + grpc_outs,
        cmd = "/usr/bin/protoc -I. --cpp_out=$(GENDIR)" + plugin + " " +
              " ".join(["$(location %s)" % s for s in srcs]),
    )
    cc_library(
        name = name,
        srcs = [o for o in message_outs + grpc_outs if o.endswith(".cc")],
        hdrs = [o for o in message_outs + grpc_outs if o.endswith(".h")],
        deps = deps + ["//third_party/system:grpc" if grpc else "//third_party/system:protobuf"],
        visibility = visibility,
    )
